#!/usr/bin/env bash
# verify_bench.sh - issue 13's `keyshift verify data` throughput: keys compared per second
# between two Debian redis-server 7.0 over unix sockets, holding the same ~200,000-key mixed
# dataset (../shared/corpus/rdb/make-large.sh: strings, hashes, lists, sets, sorted sets,
# streams, TTLs, two databases). Goal: >= 200,000 keys/s. Ways of comparing values:
#   default  every value read in chunks (GETRANGE/LRANGE/ZRANGE/HSCAN/SSCAN/XRANGE) and
#            fingerprinted by verify
#   dump     --dump: small aggregates by DUMP payload, the rest read
#   digest   --digest: DEBUG DIGEST-VALUE of every value (enable-debug-command local), one
#            command per page; SHA-1 over every element makes it the servers' dearest way
#   file     the RDB file as the source (loaded in-process) against a live server
#   snapshot --snapshot: each server's dataset taken by one full sync and the two compared
#            in-process (the servers run with repl-diskless-sync-delay 0, so a diskless
#            primary starts at once instead of waiting 5 s for more replicas)
# Nothing asserts on timing; each figure is the median of ROUNDS runs.
#
# Usage: tests/bench/verify_bench.sh [KEYS]   (default 200000)
# Env:   KEYSHIFT_BIN (default build/keyshift), ROUNDS (default 3)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
bin=${KEYSHIFT_BIN:-$root/build/keyshift}
keys=${1:-200000}
rounds=${ROUNDS:-3}
make_large=$root/../shared/corpus/rdb/make-large.sh
# shellcheck source=tests/bench/common.sh
. "$root/tests/bench/common.sh"
wait_ping() {  # SOCKET
  for _ in $(seq 1 1200); do
    [ "$(redis-cli -s "$1" ping 2>/dev/null)" = "PONG" ] && return 0
    sleep 0.05
  done
  echo "server on $1 did not answer" >&2
  return 1
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

for tool in redis-server redis-cli python3 /usr/bin/time; do
  command -v "$tool" >/dev/null || { echo "missing $tool" >&2; exit 1; }
done
[ -x "$bin" ] || { echo "no keyshift binary at $bin" >&2; exit 1; }

start_redis() {  # NAME [directives...]
  local name=$1
  shift
  mkdir -p "$work/$name"
  redis-server --port "$(free_port)" --bind 127.0.0.1 --unixsocket "$work/$name/sock" \
    --save "" --appendonly no --enable-debug-command local --dir "$work/$name" \
    --repl-diskless-sync-delay 0 \
    --daemonize no --logfile "$work/$name/log" "$@" &
  pids+=($!)
  wait_ping "$work/$name/sock"
}

start_redis a
port_a=$(redis-cli -s "$work/a/sock" config get port | tail -1)
echo "writing $keys keys into redis-server A ..."
bash "$make_large" --port "$port_a" --keys "$keys" --flush --save >/dev/null
cp "$work/a/dump.rdb" "$work/source.rdb"
mkdir -p "$work/b"
cp "$work/source.rdb" "$work/b/dump.rdb"
start_redis b --dbfilename dump.rdb
echo "A: $(redis-cli -s "$work/a/sock" dbsize) keys in db 0, B: $(redis-cli -s "$work/b/sock" dbsize)"

cpu_ticks() {  # PID: user+system clock ticks so far
  awk '{print $14 + $15}' "/proc/$1/stat"
}
pid_a=${pids[0]}
pid_b=${pids[1]}
hz=$(getconf CLK_TCK)

# On a shared machine wall time mostly measures the other users; CPU time does not. Each run
# also reports the CPU seconds verify and both servers spent, and the rate they would allow
# on two idle cores (three processes: the slowest one, or the total over two cores).
run() {  # LABEL SOURCE TARGET [flags...]: prints the median keys/s
  local label=$1 src=$2 dst=$3
  shift 3
  local rates=()
  for _ in $(seq 1 "$rounds"); do
    local a0 b0 a1 b1
    a0=$(cpu_ticks "$pid_a")
    b0=$(cpu_ticks "$pid_b")
    /usr/bin/time -f "%U %S" -o "$work/time" \
      "$bin" verify data "$src" "$dst" --format json --no-progress "$@" >"$work/out.json" ||
      { echo "verify failed ($label):"; cat "$work/out.json"; exit 1; }
    a1=$(cpu_ticks "$pid_a")
    b1=$(cpu_ticks "$pid_b")
    rates+=("$(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
u, s = map(float, open(sys.argv[2]).read().split()[-2:])
hz = float(sys.argv[3])
a = (int(sys.argv[5]) - int(sys.argv[4])) / hz
b = (int(sys.argv[7]) - int(sys.argv[6])) / hz
client = u + s
bound = max(a, b, client, (a + b + client) / 2)
n = d["keys_compared"]
# The time to load a file or take the snapshots counts: it is part of the comparison.
wall = d["seconds"] + d.get("setup_seconds", 0)
print("%.0f %d %.2f %.2f %.2f %.0f" % (n / wall, n, client, a, b, n / bound))
' "$work/out.json" "$work/time" "$hz" "$a0" "$a1" "$b0" "$b1")")
  done
  local line
  line=$(printf '%s\n' "${rates[@]}" | sort -n | awk '{a[NR]=$0} END {print a[int((NR+1)/2)]}')
  # shellcheck disable=SC2086
  set -- $line
  printf '%-8s %8s keys/s wall (median of %d, %s keys); CPU s: verify %s, A %s, B %s; ' \
    "$label" "$1" "$rounds" "$2" "$3" "$4" "$5"
  printf '%s keys/s on 2 idle cores\n' "$6"
}

echo "keyshift verify data, redis-server 7.0 <-> redis-server 7.0 over unix sockets:"
run default "unix://$work/a/sock" "unix://$work/b/sock"
run dump "unix://$work/a/sock" "unix://$work/b/sock" --dump
run digest "unix://$work/a/sock" "unix://$work/b/sock" --digest
run file "$work/source.rdb" "unix://$work/b/sock"
run snapshot "unix://$work/a/sock" "unix://$work/b/sock" --snapshot
echo "load average while measuring: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
echo "goal: >= 200000 keys/s"
