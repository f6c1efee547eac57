#!/usr/bin/env bash
# Runs every test: the format, layering and brace checks, the unit and integration tests
# (ctest) on the normal build, the unit tests again under AddressSanitizer + UBSan, the serve
# integration suites against an ASan/UBSan keyshift, and bounded libFuzzer runs of every
# target (tests/fuzz/fuzz.sh all: the committed inputs, then FUZZ_TOTAL_SECONDS in all,
# default 120). Expects build/ to exist (packaging/setup.sh --test makes it). Prints one
# closing line: "N passed, M failed".
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
jobs=$(nproc)
passed=0
failed=0
step() {  # step NAME COMMAND...
  local name=$1
  shift
  echo "=== $name"
  if "$@"; then
    passed=$((passed + 1))
  else
    echo "=== FAILED: $name"
    failed=$((failed + 1))
  fi
}

format_check() {
  local files bad=0
  files=$(git ls-files '*.cpp' '*.hpp' 2>/dev/null)
  [ -n "$files" ] || files=$(find engine migrate compat cli tests -name '*.cpp' -o -name '*.hpp')
  for f in $files; do
    if ! clang-format --style=file "$f" | cmp -s - "$f"; then
      echo "not formatted: $f (run clang-format -i $f)"
      bad=1
    fi
  done
  return $bad
}

sanitized_unit_tests() {
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DKEYSHIFT_SANITIZE=ON \
    -DKEYSHIFT_WARNINGS_AS_ERRORS=ON >/dev/null &&
    cmake --build build-asan -j"$jobs" --target unit_engine unit_compat unit_migrate &&
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
      build-asan/tests/unit_engine &&
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
      build-asan/tests/unit_compat &&
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
      build-asan/tests/unit_migrate
}

# The integration suites that drive `keyshift serve` hardest, once against the ASan/UBSan
# build. The server is the child of the harness and its exit status is not checked, so
# every sanitizer report goes to a file under $reports. A report fails the step.
sanitized_integration_tests() {
  local reports
  reports=$(mktemp -d)
  cmake --build build-asan -j"$jobs" --target keyshift || return 1
  local ok=0
  for t in test_differential test_serve test_connection_features; do
    KEYSHIFT_BIN="$root/build-asan/keyshift" \
      ASAN_OPTIONS="detect_leaks=1:log_path=$reports/asan:handle_segv=1" \
      UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:log_path=$reports/ubsan" \
      /usr/bin/python3 "tests/integration/$t.py" | tail -3 || ok=1
  done
  if compgen -G "$reports/*" >/dev/null; then
    echo "sanitizer reports:"
    head -n 60 "$reports"/*
    ok=1
  fi
  rm -rf "$reports"
  return $ok
}

step "clang-format" format_check
step "layering (includes go down only: cli -> migrate -> compat -> engine)" bash tests/check_layers.sh
step "layering check catches crossing includes" bash tests/test_check_layers.sh
step "braces (tools/apply_braces.sh adds missing ones)" /usr/bin/python3 tests/check_braces.py
step "brace check self-test" /usr/bin/python3 tests/check_braces.py --self-test
step "unit + integration tests (ctest)" ctest --test-dir build --output-on-failure -j1
step "unit tests under ASan/UBSan" sanitized_unit_tests
step "integration tests (differential, serve, connection features) on ASan/UBSan keyshift serve" \
  sanitized_integration_tests
step "fuzzing (libFuzzer, every target, ${FUZZ_TOTAL_SECONDS:-120} s in all)" \
  bash tests/fuzz/fuzz.sh all "${FUZZ_TOTAL_SECONDS:-120}"

echo
echo "${passed} passed, ${failed} failed"
[ "$failed" -eq 0 ]
