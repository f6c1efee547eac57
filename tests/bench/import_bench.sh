#!/usr/bin/env bash
# keyshift import vs the target's own ingest, in one run, on the corpus' ~200,000-key
# dataset (make-large.sh): (1) file -> a live redis-server over its unix socket, against the
# same redis-server loading that file at start-up and against `rdb dump --format resp |
# redis-cli --pipe`; (2) a live scan of one redis-server into another; (3) peak RSS of
# keyshift during (1) against its idle size. Ratios are reported, never asserted.
#
#   bash tests/bench/import_bench.sh            # KEYS=200000 by default, ~2 min
set -euo pipefail
SCRIPT_DIR=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$SCRIPT_DIR/../.." && pwd)
KEYSHIFT_BIN=${KEYSHIFT_BIN:-$REPO_ROOT/build/keyshift}
KEYS=${KEYS:-200000}
MAKE_LARGE=${MAKE_LARGE:-$REPO_ROOT/../shared/corpus/rdb/make-large.sh}
work=$(mktemp -d /tmp/keyshift-import-bench-XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

start_redis() {  # NAME DIR [PORT]: a redis-server on a unix socket (and PORT), persistence off
  local name=$1 dir=$2 port=${3:-0}
  mkdir -p "$dir"
  redis-server --port "$port" --bind 127.0.0.1 --unixsocket "$work/$name.sock" --dir "$dir" \
    --save "" --appendonly no --enable-debug-command yes --logfile "$work/$name.log" \
    --daemonize no &
  pids+=($!)
  for _ in $(seq 1 1500); do
    redis-cli -s "$work/$name.sock" ping 2>/dev/null | grep -q PONG && return 0
    sleep 0.02
  done
  echo "redis-server $name did not start" >&2
  exit 1
}

now() { date +%s.%N; }
elapsed() { python3 -c "print(f'{$2 - $1:.2f}')"; }

maker_port=$(free_port)
start_redis maker "$work/maker" "$maker_port"
bash "$MAKE_LARGE" --port "$maker_port" --keys "$KEYS" --flush >/dev/null   # TCP only
redis-cli -s "$work/maker.sock" save >/dev/null
file="$work/maker/dump.rdb"
digest=$(redis-cli -s "$work/maker.sock" debug digest)
size=$(stat -c %s "$file")
echo "dataset: $KEYS keys, $size bytes, digest $digest"

# The target's own ingest: redis-server loading the file at start-up (its log's figure).
mkdir -p "$work/loader"
cp "$file" "$work/loader/dump.rdb"
start_redis loader "$work/loader"
load_s=$(grep -o 'DB loaded from disk: [0-9.]* seconds' "$work/loader.log" | grep -o '[0-9.]*' | head -1)

start_redis target "$work/target"
t0=$(now)
/usr/bin/time -f "%M" -o "$work/rss" "$KEYSHIFT_BIN" import "$file" --to "unix://$work/target.sock" \
  --no-checkpoint >/dev/null
t1=$(now)
import_s=$(elapsed "$t0" "$t1")
peak_kb=$(cat "$work/rss")
ok_digest=$(redis-cli -s "$work/target.sock" debug digest)
/usr/bin/time -f "%M" -o "$work/rss0" "$KEYSHIFT_BIN" import "$REPO_ROOT/../shared/corpus/rdb/redis70-empty.rdb" \
  --to "unix://$work/target.sock" --no-checkpoint --conflict replace >/dev/null
idle_kb=$(cat "$work/rss0")

redis-cli -s "$work/target.sock" flushall >/dev/null
t0=$(now)
"$KEYSHIFT_BIN" rdb dump "$file" --format resp | redis-cli -s "$work/target.sock" --pipe >/dev/null
t1=$(now)
pipe_s=$(elapsed "$t0" "$t1")

start_redis scan-target "$work/scan-target"
t0=$(now)
"$KEYSHIFT_BIN" import "unix://$work/maker.sock" --mode scan --to "unix://$work/scan-target.sock" --no-checkpoint >/dev/null
t1=$(now)
scan_s=$(elapsed "$t0" "$t1")
scan_digest=$(redis-cli -s "$work/scan-target.sock" debug digest)

python3 - "$load_s" "$import_s" "$pipe_s" "$scan_s" "$peak_kb" "$idle_kb" "$digest" "$ok_digest" "$scan_digest" <<'PY'
import sys
load, imp, pipe, scan = map(float, sys.argv[1:5])
peak, idle = int(sys.argv[5]), int(sys.argv[6])
want, got, got_scan = sys.argv[7:10]
print("| measure | seconds | ratio | goal |")
print("|---|---:|---:|---|")
print(f"| redis-server loads the file at start-up | {load:.2f} | 1.00 | |")
print(f"| keyshift import file -> redis-server (unix) | {imp:.2f} | {imp/load:.2f}x load | <= 1.5x {'PASS' if imp <= 1.5*load else 'MISS'} |")
print(f"| rdb dump --format resp \\| redis-cli --pipe | {pipe:.2f} | import {pipe/imp:.2f}x faster | >= 1.5x {'PASS' if pipe >= 1.5*imp else 'MISS'} |")
print(f"| keyshift import scan redis -> redis (unix) | {scan:.2f} | {scan/load:.2f}x load | |")
print(f"peak RSS during the file import: {peak/1024:.1f} MB, idle {idle/1024:.1f} MB: "
      f"{(peak-idle)/1024:.1f} MB above idle (goal <= 64 MB: {'PASS' if peak-idle <= 64*1024 else 'MISS'})")
print(f"digests: source {want}, file import {'equal' if got == want else 'DIFFERENT ' + got}, "
      f"scan import {'equal' if got_scan == want else 'DIFFERENT ' + got_scan}")
PY
