#!/usr/bin/env bash
# The one runner of keyshift's libFuzzer targets (clang from Debian, +ASan/UBSan).
#
#   tests/fuzz/fuzz.sh list                 the targets
#   tests/fuzz/fuzz.sh build [TARGET...]    build them (all by default) into $FUZZ_BUILD_DIR
#   tests/fuzz/fuzz.sh run TARGET SECONDS [LIBFUZZER_ARGS...]
#                                           build TARGET and fuzz it for SECONDS
#   tests/fuzz/fuzz.sh regress [TARGET...]  run each target once over its committed corpus
#                                           (seeds and regression inputs; no fuzzing)
#   tests/fuzz/fuzz.sh all TOTAL_SECONDS    build every target, run the committed inputs
#                                           through each, then fuzz each for an equal share
#                                           of what is left of TOTAL_SECONDS
#
# The parsers under test are compiled instrumented once into one static library
# ($FUZZ_BUILD_DIR/libks_fuzz.a), linked whole into every target ahead of the normal build's
# engine/compat/migrate libraries (KEYSHIFT_BUILD_DIR, default build/), which supply the
# rest uninstrumented (same sources, so nothing is defined twice). memory.cpp is rebuilt
# without mimalloc, which would fight ASan's allocator.
#
# Seeds: tests/fuzz/corpus/TARGET (committed; crashes found become files there, named
# regression-*), plus for rdb_reader the small RDB files of ../shared/corpus/rdb when
# present. Dictionaries: tests/fuzz/TARGET.dict when present. A crashing input is kept in
# FUZZ_ARTIFACTS (default build/fuzz-artifacts). Exit status non-zero when a target crashed.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
ks_build=${KEYSHIFT_BUILD_DIR:-$root/build}
out=${FUZZ_BUILD_DIR:-$root/build-fuzz}
cxx=${FUZZ_CXX:-clang++}
jobs=${FUZZ_JOBS:-2}

# name:max_len (max_len: the largest input libFuzzer makes; small keeps it fast)
targets=(
  rdb_reader:131072 acl_rules:4096 lua_bridge:4096 resp_request:8192 resp_reply:8192
  config:4096 toml:16384 monitor_log:4096 capture_file:8192 aof:16384 repl_stream:16384
  jsonl:8192 restore:8192
)

# The sources of what is fuzzed, instrumented; the rest comes from the normal build.
instrumented=(
  engine/persistence/rdb_reader.cpp engine/persistence/rdb_load.cpp
  engine/persistence/aof_reader.cpp engine/persistence/crc64.cpp
  engine/ds/listpack.cpp engine/ds/intset.cpp engine/ds/lzf.cpp engine/ds/quicklist.cpp
  engine/util/memory.cpp engine/util/strconv.cpp engine/util/split_args.cpp
  engine/acl/acl.cpp engine/scripting/lua_bridge.cpp engine/resp/reply_builder.cpp
  engine/resp/request_parser.cpp engine/resp/reply_scanner.cpp engine/resp/resp_value.cpp
  engine/server/config_file.cpp engine/server/config_table.cpp
  engine/repl/repl_stream.cpp engine/commands/persistence_family.cpp
  compat/monitor/monitor_log.cpp compat/capture/capture_file.cpp
  compat/dump/jsonl_reader.cpp compat/report/json_value.cpp
  migrate/plan/plan_model.cpp migrate/rewrite/target_table.cpp
)

# shellcheck disable=SC2054  # the commas are inside -fsanitize=
flags=(-std=c++20 -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined
  -fno-sanitize-recover=undefined -DFMT_SHARED '-DKEYSHIFT_VERSION="0.1.0"'
  -DTOML_HEADER_ONLY=0 -DTOML_SHARED_LIB=1 -I"$root" -isystem /usr/include/lua5.1)

need_clang() {
  if ! command -v "$cxx" >/dev/null; then
    echo "fuzz: $cxx not found (Debian packages clang, libclang-rt-14-dev)" >&2
    exit 1
  fi
}

target_names() {
  local t
  for t in "${targets[@]}"; do echo "${t%%:*}"; done
}

max_len_of() {
  local t
  for t in "${targets[@]}"; do
    if [ "${t%%:*}" = "$1" ]; then
      echo "${t#*:}"
      return 0
    fi
  done
  echo "fuzz: no target '$1' (tests/fuzz/fuzz.sh list)" >&2
  exit 2
}

compile_one() {  # compile_one SOURCE: into $out/obj, unless up to date
  local src=$1 obj
  obj="$out/obj/${src//\//_}.o"
  if [ ! -f "$obj" ] || [ "$root/$src" -nt "$obj" ]; then
    local launcher=()
    command -v ccache >/dev/null && launcher=(ccache)
    "${launcher[@]}" "$cxx" "${flags[@]}" -fsanitize=fuzzer-no-link -c "$root/$src" -o "$obj"
  fi
}

build_library() {
  need_clang
  local lib
  for lib in engine/libkeyshift_engine.a compat/libkeyshift_compat.a migrate/libkeyshift_migrate.a; do
    if [ ! -f "$ks_build/$lib" ]; then
      echo "fuzz: $ks_build/$lib not found (build keyshift first, or set KEYSHIFT_BUILD_DIR)" >&2
      exit 1
    fi
  done
  mkdir -p "$out/obj"
  # Objects only track their own source: a header changed since the last build makes them
  # all stale (ccache keeps recompiling cheap).
  if [ -f "$out/obj/.stamp" ] &&
    [ -n "$(find "$root/engine" "$root/compat" "$root/migrate" -name '*.hpp' -newer "$out/obj/.stamp" | head -n 1)" ]; then
    rm -f "$out"/obj/*.o
  fi
  touch "$out/obj/.stamp"
  export -f compile_one
  export out root cxx
  export FLAGS_SERIALIZED
  FLAGS_SERIALIZED=$(printf '%q ' "${flags[@]}")
  # shellcheck disable=SC2016  # expanded by the inner shell
  printf '%s\n' "${instrumented[@]}" |
    xargs -P "$jobs" -I{} bash -c 'eval "flags=($FLAGS_SERIALIZED)"; compile_one "$1"' _ {}
  rm -f "$out/libks_fuzz.a"
  ar rcs "$out/libks_fuzz.a" "$out"/obj/*.o
}

link_target() {  # link_target NAME
  local name=$1
  if [ ! -f "$out/$name" ] || [ "$root/tests/fuzz/fuzz_$name.cpp" -nt "$out/$name" ] ||
    [ "$out/libks_fuzz.a" -nt "$out/$name" ]; then
    "$cxx" "${flags[@]}" -fsanitize=fuzzer "$root/tests/fuzz/fuzz_$name.cpp" \
      -Wl,--whole-archive "$out/libks_fuzz.a" -Wl,--no-whole-archive \
      -Wl,--start-group "$ks_build/migrate/libkeyshift_migrate.a" \
      "$ks_build/compat/libkeyshift_compat.a" "$ks_build/engine/libkeyshift_engine.a" \
      -Wl,--end-group \
      /usr/lib/x86_64-linux-gnu/liblua5.1-cjson.a /usr/lib/x86_64-linux-gnu/liblua5.1-c++.a \
      -ltomlplusplus -lpcap -lfmt -lssl -lcrypto -lm -ldl -lpthread -o "$out/$name"
  fi
}

build() {  # build [NAME...]
  build_library
  local name
  for name in "$@"; do
    max_len_of "$name" >/dev/null
    link_target "$name"
  done
}

seed_dir() {  # seed_dir NAME DIR: the committed corpus (and extra seeds) copied into DIR
  local name=$1 dir=$2
  mkdir -p "$dir"
  if [ -d "$root/tests/fuzz/corpus/$name" ]; then
    cp "$root/tests/fuzz/corpus/$name"/* "$dir/" 2>/dev/null || true
  fi
  if [ "$name" = rdb_reader ] && [ -d "$root/../shared/corpus/rdb" ]; then
    local f
    for f in "$root/../shared/corpus/rdb"/*.rdb; do
      # Small files only: libFuzzer mutates better from small seeds.
      [ "$(stat -c %s "$f")" -le 65536 ] && cp "$f" "$dir/"
    done
  fi
  return 0
}

dict_args() {
  if [ -f "$root/tests/fuzz/$1.dict" ]; then
    echo "-dict=$root/tests/fuzz/$1.dict"
  fi
}

# Fuzzes NAME for SECONDS on a private copy of its seeds, printing the final stats, any
# crash report and the last coverage line.
run() {
  local name=$1 seconds=$2 status=0 work artifacts max_len dict
  shift 2
  max_len=$(max_len_of "$name")
  work=$(mktemp -d)
  seed_dir "$name" "$work/seeds"
  artifacts=${FUZZ_ARTIFACTS:-$ks_build/fuzz-artifacts}
  mkdir -p "$artifacts"
  dict=$(dict_args "$name")
  echo "fuzz: $name, $(find "$work/seeds" -type f | wc -l) seed files, ${seconds}s"
  (cd "$work" && "$out/$name" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 \
    -max_len="$max_len" -print_final_stats=1 -artifact_prefix="$artifacts/$name-" \
    ${dict:+"$dict"} "$@" seeds >"$work/fuzz.log" 2>&1) || status=$?
  if [ "$status" -ne 0 ]; then
    tail -n 60 "$work/fuzz.log"
  else
    grep -E '^stat::(number_of_executed_units|peak_rss_mb)' "$work/fuzz.log" || true
  fi
  grep -E '^#[0-9]+.*cov: ' "$work/fuzz.log" | tail -n 1 || true
  rm -rf "$work"
  return "$status"
}

# Runs NAME once over every committed input (no mutation): the regression check.
regress() {
  local name=$1 work status=0
  work=$(mktemp -d)
  seed_dir "$name" "$work/seeds"
  if ! "$out/$name" -runs=0 -rss_limit_mb=2048 -timeout=10 "$work/seeds" >"$work/log" 2>&1; then
    tail -n 40 "$work/log"
    status=1
  fi
  echo "fuzz: $name: $(find "$work/seeds" -type f | wc -l) committed inputs, status $status"
  rm -rf "$work"
  return "$status"
}

command=${1:-}
shift || true
case "$command" in
  list) target_names ;;
  build)
    if [ $# -eq 0 ]; then
      mapfile -t names < <(target_names)
      set -- "${names[@]}"
    fi
    build "$@"
    ;;
  run)
    [ $# -ge 2 ] || { echo "usage: fuzz.sh run TARGET SECONDS [ARGS...]" >&2; exit 2; }
    build "$1"
    run "$@"
    ;;
  regress)
    if [ $# -eq 0 ]; then
      mapfile -t names < <(target_names)
      set -- "${names[@]}"
    fi
    build "$@"
    failed=0
    for name in "$@"; do regress "$name" || failed=1; done
    exit "$failed"
    ;;
  all)
    total=${1:-240}
    start=$SECONDS
    mapfile -t names < <(target_names)
    build "${names[@]}"
    failed=()
    for name in "${names[@]}"; do
      regress "$name" || failed+=("$name")
    done
    left=$((total - (SECONDS - start)))
    share=$((left / ${#names[@]}))
    [ "$share" -ge 5 ] || share=5
    echo "fuzz: built and regression inputs run in $((SECONDS - start))s; ${share}s per target"
    for name in "${names[@]}"; do
      run "$name" "$share" || failed+=("$name")
    done
    if [ ${#failed[@]} -gt 0 ]; then
      echo "fuzz: crashed: ${failed[*]}"
      exit 1
    fi
    ;;
  *)
    sed -n '2,13p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
