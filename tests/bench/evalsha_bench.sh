#!/usr/bin/env bash
# EVALSHA side by side: Debian's redis-server (7.0) and `keyshift serve`, both given the same
# short script by SCRIPT LOAD, driven by the same redis-benchmark at -P 1 and -P 16. Prints
# requests/s per server and keyshift/redis ratios (the issue's goal: >= 1.0x). Information,
# not a test: the exit status is non-zero only when something failed to run.
#
# Knobs: KEYSHIFT_BIN, N (requests per run, default 200000), ROUNDS (median of, default 3),
# CLIENTS (default 50), SERVER_CPU / CLIENT_CPU (taskset pins, default 0 / 1),
# SCRIPT (default: an INCR of KEYS[1] plus a GET, as rate limiters do).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
KEYSHIFT_BIN=${KEYSHIFT_BIN:-$root/build/keyshift}
N=${N:-200000}
ROUNDS=${ROUNDS:-3}
CLIENTS=${CLIENTS:-50}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
SCRIPT=${SCRIPT:-"local n = redis.call('incr', KEYS[1]) return {n, redis.call('get', KEYS[1])}"}
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_ping() {
  for _ in $(seq 100); do
    redis-cli -p "$1" ping >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "server on port $1 did not answer PING" >&2
  return 1
}

rport=$(free_port)
taskset -c "$SERVER_CPU" redis-server --port "$rport" --bind 127.0.0.1 --save '' \
  --appendonly no --dir "$work" >"$work/redis.log" 2>&1 &
pids+=($!)
kport=$(free_port)
taskset -c "$SERVER_CPU" "$KEYSHIFT_BIN" serve --port "$kport" --bind 127.0.0.1 --save '' \
  --dir "$work" >"$work/keyshift.log" 2>&1 &
pids+=($!)
wait_ping "$rport"
wait_ping "$kport"

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
run() {  # port pipeline -> median requests/s
  local port=$1 pipe=$2 sha
  sha=$(redis-cli -p "$port" script load "$SCRIPT")
  for _ in $(seq "$ROUNDS"); do
    taskset -c "$CLIENT_CPU" redis-benchmark -p "$port" -c "$CLIENTS" -n "$N" -P "$pipe" -q \
      evalsha "$sha" 1 bench:counter | tr '\r' '\n' | awk '/requests per second/ {print $(NF-5)+0}' | tail -1
  done | median
}

printf '%-22s %14s %14s %8s\n' "EVALSHA (short script)" "redis-server" "keyshift" "ratio"
for p in 1 16; do
  r=$(run "$rport" "$p")
  k=$(run "$kport" "$p")
  ratio=$(awk -v k="$k" -v r="$r" 'BEGIN {printf "%.2fx", k / r}')
  printf '%-22s %14s %14s %8s\n' "-P $p" "$r" "$k" "$ratio"
done
