#!/usr/bin/env bash
# AOF write throughput, side by side (issue 16's "AOF everysec write throughput", goal
# >= 1.0x): Debian's redis-server 7.0 and `keyshift serve`, both with appendonly yes and
# appendfsync everysec (APPENDFSYNC overrides), each in its own temp dir, server on CPU 0 and
# redis-benchmark on CPU 1. Runs SET at -P 1 and -P 16 (50 clients) ROUNDS times and prints
# the median requests/s of each server and keyshift/redis.
#
#   bash tests/bench/aof_bench.sh                 # 200k requests per run, 3 rounds
#   REQUESTS=50000 ROUNDS=1 bash tests/bench/aof_bench.sh
#   APPENDFSYNC=always bash tests/bench/aof_bench.sh
set -euo pipefail

REPO=$(cd "$(dirname "$0")/../.." && pwd)
KEYSHIFT=${KEYSHIFT_BIN:-$REPO/build/keyshift}
REQUESTS=${REQUESTS:-200000}
ROUNDS=${ROUNDS:-3}
APPENDFSYNC=${APPENDFSYNC:-everysec}
CLIENTS=${CLIENTS:-50}

for tool in redis-server redis-benchmark redis-cli taskset python3; do
  command -v "$tool" >/dev/null || { echo "missing $tool" >&2; exit 2; }
done
[ -x "$KEYSHIFT" ] || { echo "keyshift not built at $KEYSHIFT" >&2; exit 2; }

WORK=$(mktemp -d /tmp/ks-aof-bench.XXXXXX)
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

wait_ready() {
  local port=$1
  for _ in $(seq 1 300); do
    if [ "$(redis-cli -p "$port" ping 2>/dev/null)" = PONG ]; then return 0; fi
    sleep 0.05
  done
  echo "server on port $port did not start" >&2
  return 1
}

start() {  # name binary-and-args...; prints the port
  local name=$1
  shift
  local port dir
  port=$(free_port)
  dir=$WORK/$name
  mkdir -p "$dir"
  (cd "$dir" && exec taskset -c 0 "$@" --port "$port" --bind 127.0.0.1 --dir "$dir" \
    --save '' --appendonly yes --appendfsync "$APPENDFSYNC" >"$dir/log" 2>&1) &
  PIDS+=($!)
  wait_ready "$port"
  echo "$port"
}

rps() {  # port pipeline
  taskset -c 1 redis-benchmark -p "$1" -t set -n "$REQUESTS" -c "$CLIENTS" -P "$2" -r 100000 \
    -q --csv | awk -F'"' '/SET/ {print $4}'
}

median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

redis_port=$(start redis redis-server --daemonize no --logfile "")
ks_port=$(start keyshift "$KEYSHIFT" serve)

printf '%-8s %14s %14s %8s\n' pipeline redis-7.0 keyshift ratio
for p in 1 16; do
  r=() k=()
  for _ in $(seq 1 "$ROUNDS"); do
    r+=("$(rps "$redis_port" "$p")")
    k+=("$(rps "$ks_port" "$p")")
  done
  rm=$(printf '%s\n' "${r[@]}" | median)
  km=$(printf '%s\n' "${k[@]}" | median)
  printf '%-8s %14.0f %14.0f %7.2fx\n' "-P $p" "$rm" "$km" "$(awk -v a="$km" -v b="$rm" 'BEGIN {print a / b}')"
done
# Both logged every write: the AOF sizes show it.
for name in redis keyshift; do
  size=$(du -sb "$WORK/$name/appendonlydir" | cut -f1)
  echo "$name appendonlydir: $size bytes"
done
