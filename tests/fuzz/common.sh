# shellcheck shell=bash
# Sourced by the tests/fuzz/run*.sh scripts: the shared setup (repository root, run length,
# a private work dir removed on exit, clang), the instrumented compile and the bounded run.
# Usage in a script: fuzz_setup "$@"; fuzz_build NAME SOURCES_AND_LIBS...;
#                    (seeds into $work/seeds); fuzz_run NAME MAX_LEN TAIL_LINES [ARGS...]
fuzz_setup() {
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
  seconds=${1:-60}
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  cxx=${FUZZ_CXX:-clang++}
  if ! command -v "$cxx" >/dev/null; then
    echo "fuzz: $cxx not found (Debian packages clang, libclang-rt-14-dev)" >&2
    exit 1
  fi
  mkdir -p "$work/seeds"
}

# Compiles and links the sources (paths from the repository root) and libraries with
# libFuzzer, ASan and UBSan into $work/NAME.
fuzz_build() {
  local name=$1
  shift
  (cd "$root" && "$cxx" -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined \
    -fno-sanitize-recover=undefined -I. -isystem /usr/include/lua5.1 "$@" -o "$work/$name")
}

# Runs $work/NAME for $seconds on a copy of the seeds in $work/seeds (libFuzzer adds what it
# finds there), printing the last TAIL_LINES lines (the final stats and any crash report)
# and the last coverage line. A crashing input is kept in FUZZ_ARTIFACTS (default
# build/fuzz-artifacts), since the work dir goes. The status is libFuzzer's: non-zero when an input crashed the
# target.
fuzz_run() {
  local name=$1 max_len=$2 tail_lines=$3 status=0
  shift 3
  echo "fuzz: $name, $(find "$work/seeds" -type f | wc -l) seed files, ${seconds}s"
  local artifacts=${FUZZ_ARTIFACTS:-$root/build/fuzz-artifacts}
  mkdir -p "$artifacts"
  cd "$work" || return 1
  "./$name" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -max_len="$max_len" \
    -print_final_stats=1 -artifact_prefix="$artifacts/" "$@" seeds >"$work/fuzz.log" 2>&1 || status=$?
  tail -n "$tail_lines" "$work/fuzz.log"
  grep -E '^#[0-9]+.*cov: ' "$work/fuzz.log" | tail -n 1 || true
  return "$status"
}
