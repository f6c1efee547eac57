#!/usr/bin/env bash
# keyshift import of big keys in bounded memory: one list of 2M elements of ~100 bytes, one
# sorted set of 2M members of ~100 bytes (each ~200 MB) and one stream of 1M entries of
# ~100 bytes with a consumer group and 10,000 pending entries, saved by redis-server into an
# RDB file, imported into another redis-server over its unix socket; keyshift's peak RSS
# (GNU time's maximum resident set) against its idle size (the same import of an empty
# file), and the keys' DEBUG DIGEST-VALUE against the source's. Reported, never asserted.
#
#   bash tests/bench/import_bigkey_bench.sh     # ELEMENTS=2000000 by default, a few minutes
set -euo pipefail
SCRIPT_DIR=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$SCRIPT_DIR/../.." && pwd)
KEYSHIFT_BIN=${KEYSHIFT_BIN:-$REPO_ROOT/build/keyshift}
ELEMENTS=${ELEMENTS:-2000000}
work=$(mktemp -d /tmp/keyshift-bigkey-bench-XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

start_redis() {  # NAME DIR: a redis-server on a unix socket only, persistence off
  local name=$1 dir=$2
  mkdir -p "$dir"
  redis-server --port 0 --unixsocket "$work/$name.sock" --dir "$dir" --save "" \
    --appendonly no --enable-debug-command yes --logfile "$work/$name.log" --daemonize no &
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

start_redis maker "$work/maker"
# RESP for redis-cli --pipe: 1000 elements per command, each ~100 bytes.
python3 - "$ELEMENTS" <<'PY' | redis-cli -s "$work/maker.sock" --pipe >/dev/null
import hashlib, sys
n = int(sys.argv[1])
out = sys.stdout.buffer
def cmd(args):
    parts = [b"*%d\r\n" % len(args)]
    for a in args:
        parts.append(b"$%d\r\n%s\r\n" % (len(a), a))
    out.write(b"".join(parts))
def pad(i):  # 88 bytes that LZF cannot shrink much, so the file is about as big as the data
    h = hashlib.sha256(b"%d" % i).hexdigest()
    return (h + h[::-1]).encode()[:88]
for start in range(0, n, 1000):
    cmd([b"RPUSH", b"biglist"] + [b"%010d:%s" % (i, pad(i)) for i in range(start, min(n, start + 1000))])
for start in range(0, n, 1000):
    args = [b"ZADD", b"bigzset"]
    for i in range(start, min(n, start + 1000)):
        args += [b"%d.25" % (i * 7 % 1000003), b"m%010d:%s" % (i, pad(i))]
    cmd(args)
for i in range(1, n // 2 + 1):
    cmd([b"XADD", b"bigstream", b"%d-0" % i, b"payload", pad(i)])
cmd([b"XGROUP", b"CREATE", b"bigstream", b"readers", b"0"])
cmd([b"XREADGROUP", b"GROUP", b"readers", b"alice", b"COUNT", b"10000", b"STREAMS",
     b"bigstream", b">"])
PY
redis-cli -s "$work/maker.sock" save >/dev/null
file="$work/maker/dump.rdb"
size=$(stat -c %s "$file")
want_list=$(redis-cli -s "$work/maker.sock" debug digest-value biglist)
want_zset=$(redis-cli -s "$work/maker.sock" debug digest-value bigzset)
want_stream=$(redis-cli -s "$work/maker.sock" debug digest-value bigstream)
echo "dataset: a list and a zset of $ELEMENTS elements each, a stream of $((ELEMENTS / 2)) entries, $size bytes"

start_redis target "$work/target"
/usr/bin/time -f "%M" -o "$work/rss0" "$KEYSHIFT_BIN" import \
  "$REPO_ROOT/../shared/corpus/rdb/redis70-empty.rdb" --to "unix://$work/target.sock" \
  --no-checkpoint >/dev/null
idle_kb=$(cat "$work/rss0")

run() {  # LABEL ARGS...: one import, its time and peak RSS
  local label=$1
  shift
  redis-cli -s "$work/target.sock" flushall >/dev/null
  local t0 t1
  t0=$(now)
  /usr/bin/time -f "%M" -o "$work/rss" "$KEYSHIFT_BIN" import "$file" \
    --to "unix://$work/target.sock" --no-checkpoint --format json "$@" >"$work/report.json"
  t1=$(now)
  local got_list got_zset got_stream
  got_list=$(redis-cli -s "$work/target.sock" debug digest-value biglist)
  got_zset=$(redis-cli -s "$work/target.sock" debug digest-value bigzset)
  got_stream=$(redis-cli -s "$work/target.sock" debug digest-value bigstream)
  python3 - "$label" "$(elapsed "$t0" "$t1")" "$(cat "$work/rss")" "$idle_kb" \
    "$want_list $want_zset $want_stream" "$got_list $got_zset $got_stream" "$work/report.json" <<'PY'
import json, sys
label, seconds, peak, idle = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
same = sys.argv[5] == sys.argv[6]
keys = json.load(open(sys.argv[7]))["keys"]
above = (peak - idle) / 1024
print(f"| {label} | {seconds:.2f} | {peak/1024:.1f} | {above:.1f} | "
      f"{'PASS' if above <= 64 else 'MISS'} | {keys['as_commands']} / {keys['chunked']} / "
      f"{keys['commands']} | {'equal' if same else 'DIFFERENT'} |")
PY
}

echo "idle RSS (import of an empty file): $((idle_kb / 1024)) MB"
echo "| import | seconds | peak RSS MB | above idle MB | goal <= 64 MB | as commands / chunked / commands | digests |"
echo "|---|---:|---:|---:|---|---|---|"
run "default (RESTORE; big keys as commands)"
run "--method commands" --method commands
