#!/usr/bin/env bash
# Builds the Lua bridge fuzz target (reply conversion both ways) with clang's libFuzzer
# (+ASan/UBSan) against Debian's liblua5.1 C++ build and runs it for a bounded time, seeded
# with a few RESP2/RESP3 replies. Exit 0 when no input crashed the bridge.
#
# Usage: tests/fuzz/run_lua_bridge.sh [SECONDS]   (default 60)
set -euo pipefail
# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
fuzz_setup "$@"
fuzz_build fuzz_lua_bridge \
  tests/fuzz/fuzz_lua_bridge.cpp engine/scripting/lua_bridge.cpp engine/resp/reply_builder.cpp \
  engine/util/grisu2.cpp engine/util/double_format.cpp engine/util/strconv.cpp \
  /usr/lib/x86_64-linux-gnu/liblua5.1-c++.a -lm -ldl
i=0
for r in ':1\r\n' '$3\r\nabc\r\n' '*2\r\n+OK\r\n-ERR x\r\n' '%%1\r\n$1\r\nk\r\n#t\r\n' \
         '~2\r\n,1.5\r\n(123\r\n' '|1\r\n:1\r\n:2\r\n=7\r\ntxt:abc\r\n' '>2\r\n_\r\n$-1\r\n'; do
  printf "$r" >"$work/seeds/seed$i"
  i=$((i + 1))
done
fuzz_run fuzz_lua_bridge 4096 15
