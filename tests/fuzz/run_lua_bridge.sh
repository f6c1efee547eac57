#!/usr/bin/env bash
# Builds the Lua bridge fuzz target (reply conversion both ways) with clang's libFuzzer
# (+ASan/UBSan) against Debian's liblua5.1 C++ build and runs it for a bounded time, seeded
# with a few RESP2/RESP3 replies. Exit 0 when no input crashed the bridge.
#
# Usage: tests/fuzz/run_lua_bridge.sh [SECONDS]   (default 60)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
seconds=${1:-60}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cxx=${FUZZ_CXX:-clang++}
if ! command -v "$cxx" >/dev/null; then
  echo "fuzz: $cxx not found (Debian packages clang, libclang-rt-14-dev)" >&2
  exit 1
fi
(cd "$root" && "$cxx" -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined \
  -fno-sanitize-recover=undefined -I. -isystem /usr/include/lua5.1 \
  tests/fuzz/fuzz_lua_bridge.cpp engine/scripting/lua_bridge.cpp engine/resp/reply_builder.cpp \
  engine/util/grisu2.cpp engine/util/double_format.cpp engine/util/strconv.cpp \
  /usr/lib/x86_64-linux-gnu/liblua5.1-c++.a -lm -ldl -o "$work/fuzz_lua_bridge")
mkdir -p "$work/seeds"
i=0
for r in ':1\r\n' '$3\r\nabc\r\n' '*2\r\n+OK\r\n-ERR x\r\n' '%%1\r\n$1\r\nk\r\n#t\r\n' \
         '~2\r\n,1.5\r\n(123\r\n' '|1\r\n:1\r\n:2\r\n=7\r\ntxt:abc\r\n' '>2\r\n_\r\n$-1\r\n'; do
  printf "$r" >"$work/seeds/seed$i"
  i=$((i + 1))
done
cd "$work"
./fuzz_lua_bridge -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -max_len=4096 \
  -print_final_stats=1 seeds 2>&1 | tail -n 15
