#!/usr/bin/env bash
# Builds the ACL rule fuzz target with clang's libFuzzer (+ASan/UBSan) and runs it for a
# bounded time, seeded with tests/fuzz/corpus/acl_rules and the rule tokens of
# acl_rules.dict. The rules are judged against the real command table, so the target links
# the normal build's engine library (KEYSHIFT_BUILD_DIR, default build/); only the ACL code
# (and the allocator shim, without mimalloc, which would fight ASan's) is rebuilt
# instrumented. Exit 0 when no input crashed the parser or broke its checks.
#
# Usage: tests/fuzz/run_acl_rules.sh [SECONDS]   (default 60)
set -euo pipefail
# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
fuzz_setup "$@"
engine_lib=${KEYSHIFT_BUILD_DIR:-$root/build}/engine/libkeyshift_engine.a
if [ ! -f "$engine_lib" ]; then
  echo "fuzz: $engine_lib not found (build keyshift first, or set KEYSHIFT_BUILD_DIR)" >&2
  exit 1
fi
# The instrumented objects come before the library, so its own copies of them stay out.
fuzz_build fuzz_acl_rules \
  tests/fuzz/fuzz_acl_rules.cpp engine/acl/acl.cpp engine/util/memory.cpp "$engine_lib" \
  /usr/lib/x86_64-linux-gnu/liblua5.1-cjson.a /usr/lib/x86_64-linux-gnu/liblua5.1-c++.a \
  -lfmt -lssl -lcrypto -lm -ldl -lpthread
cp "$root"/tests/fuzz/corpus/acl_rules/* "$work/seeds/"
fuzz_run fuzz_acl_rules 4096 20 -dict="$root/tests/fuzz/acl_rules.dict"
