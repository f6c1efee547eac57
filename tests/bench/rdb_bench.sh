#!/usr/bin/env bash
# rdb_bench.sh - issue 4's RDB figures, side by side with Debian's redis tools in one run:
#   1. `keyshift rdb check` versus `redis-check-rdb` on a ~50 MB mixed dataset (goal >= 3x)
#   2. `keyshift rdb convert` throughput in MB/s (to RDB 11 and to RDB 10)
#   3. start-up load time, keyshift versus redis-server, on the same file (the one
#      redis-server wrote, streams included)
# The dataset comes from ../shared/corpus/rdb/make-large.sh written into a private
# redis-server on a free loopback port. Nothing asserts on timing: ratios are printed.
#
# Usage: tests/bench/rdb_bench.sh [KEYS]   (default 200000, about 50 MB)
# Env:   KEYSHIFT_BIN (default build/keyshift), ROUNDS (default 3: medians are printed)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
bin=${KEYSHIFT_BIN:-$root/build/keyshift}
keys=${1:-200000}
rounds=${ROUNDS:-3}
make_large=$root/../shared/corpus/rdb/make-large.sh
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_ping() {  # PORT
  for _ in $(seq 1 600); do
    [ "$(redis-cli -p "$1" ping 2>/dev/null)" = "PONG" ] && return 0
    sleep 0.05
  done
  echo "server on port $1 did not answer" >&2
  return 1
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
seconds() { /usr/bin/time -f %e "$@" 2>&1 >/dev/null | tail -1; }

for tool in redis-server redis-cli redis-check-rdb python3 /usr/bin/time; do
  command -v "$tool" >/dev/null || { echo "missing $tool" >&2; exit 1; }
done
[ -x "$bin" ] || { echo "no keyshift binary at $bin" >&2; exit 1; }

echo "== dataset: $keys keys from make-large.sh"
port=$(free_port)
mkdir -p "$work/gen"
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$work/gen" \
  --daemonize no --logfile "$work/gen/redis.log" &
pids+=($!)
wait_ping "$port"
bash "$make_large" --port "$port" --keys "$keys" --flush --save | tail -1
redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
file=$work/gen/dump.rdb
mb=$(python3 -c "import os; print(round(os.path.getsize('$file')/1e6, 1))")
echo "file: $mb MB"

echo "== 1. check: keyshift rdb check vs redis-check-rdb (median of $rounds, wall seconds)"
ks=$(for _ in $(seq "$rounds"); do seconds "$bin" rdb check "$file"; done | median)
rc=$(for _ in $(seq "$rounds"); do seconds redis-check-rdb "$file"; done | median)
echo "redis-check-rdb $rc s, keyshift rdb check $ks s, speed-up $(python3 -c "print(f'{$rc/$ks:.2f}x')") (goal >= 3x)"

echo "== 2. convert throughput"
for v in 11 10; do
  t=$(for _ in $(seq "$rounds"); do seconds "$bin" rdb convert "$file" "$work/out$v.rdb" \
        --rdb-version "$v"; done | median)
  echo "convert to RDB $v: $t s, $(python3 -c "print(f'{$mb/$t:.0f}')") MB/s"
done

echo "== 3. load at start-up (the same file): DB loaded from disk"
echo "kernel THP mode: $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null || echo unknown)"
mkdir -p "$work/load"
cp "$file" "$work/load/dump.rdb"
load_time() {  # NAME: start the server on the file, print its own "loaded" seconds
  local p log
  p=$(free_port)
  log=$work/load/$1.log
  rm -f "$log"  # both servers append to their log file
  if [ "$1" = redis ]; then
    redis-server --port "$p" --bind 127.0.0.1 --save '' --appendonly no --dir "$work/load" \
      --daemonize no --logfile "$log" &
  else
    "$bin" serve --port "$p" --bind 127.0.0.1 --save '' --dir "$work/load" --logfile "$log" &
  fi
  local pid=$!
  wait_ping "$p"
  kill "$pid"
  wait "$pid" 2>/dev/null || true
  grep -o 'DB loaded from disk: [0-9.]* seconds' "$log" | awk '{print $5}'
}
# Interleaved rounds: a load's time depends on how fast the machine hands out fresh memory
# (on a VM, first touches fault in the host too), which drifts; both servers see the same.
: >"$work/load/times"
for r in $(seq "$rounds"); do
  rt=$(load_time redis)
  kt=$(load_time keyshift)
  echo "round $r: redis-server $rt s, keyshift $kt s"
  echo "$rt $kt" >>"$work/load/times"
done
rl=$(awk '{print $1}' "$work/load/times" | median)
kl=$(awk '{print $2}' "$work/load/times" | median)
rr=$(awk '{printf "%.4f\n", $2 / $1}' "$work/load/times" | median)
echo "redis-server $rl s, keyshift $kl s (medians), ratio of medians" \
  "$(python3 -c "print(f'{$kl/$rl:.2f}x')"), median per-round ratio ${rr}x (goal <= 0.5x)"
