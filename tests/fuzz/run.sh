#!/usr/bin/env bash
# Builds the RDB reader fuzz target with clang's libFuzzer (+ASan/UBSan) and runs it for a
# bounded time, seeded with the real RDB files of ../shared/corpus/rdb (copied to a temp
# dir; the corpus never enters the repo). Exit 0 when no input crashed the reader.
#
# Usage: tests/fuzz/run.sh [SECONDS]   (default 60)
set -euo pipefail
# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
fuzz_setup "$@"
fuzz_build fuzz_rdb_reader \
  tests/fuzz/fuzz_rdb_reader.cpp \
  engine/persistence/rdb_reader.cpp engine/persistence/crc64.cpp \
  engine/ds/listpack.cpp engine/ds/intset.cpp engine/ds/lzf.cpp engine/util/memory.cpp \
  engine/util/strconv.cpp engine/util/split_args.cpp
corpus="$root/../shared/corpus/rdb"
if [ -d "$corpus" ]; then
  for f in "$corpus"/*.rdb; do
    # Small files only: libFuzzer mutates better from small seeds.
    [ "$(stat -c %s "$f")" -le 65536 ] && cp "$f" "$work/seeds/"
  done
fi
# No real Valkey 9.2 file exists in the corpus: a small VALKEY081 seed with a Path Hash (type
# 23: one path, one field) and a HASH_2 (type 22), checksum off.
printf 'VALKEY081\x17\x02ph\x01\x02/a\x01\x01f\x01v\x16\x01h\x01\x01f\x01v%b\xff%b' \
  '\xff\xff\xff\xff\xff\xff\xff\xff' '\x00\x00\x00\x00\x00\x00\x00\x00' \
  >"$work/seeds/valkey92-path-hash.rdb"
fuzz_run fuzz_rdb_reader 131072 25
