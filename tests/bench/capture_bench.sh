#!/usr/bin/env bash
# capture_bench.sh - issue 15's proxy overhead: redis-benchmark against Debian's
# redis-server 7.0 directly and through `keyshift capture` (recording everything to a file),
# in one run, at -P 16 (throughput; goal: proxy >= 0.8x direct requests/s) and -P 1
# (latency; goal: p50 no more than 50 us above direct). Also prints whether the recording
# had to drop anything (`capture info`). Nothing asserts on timing; each figure is the
# median of ROUNDS runs, direct and proxied runs alternating.
#
# Usage: tests/bench/capture_bench.sh [REQUESTS]   (default 200000 per test and run)
# Env:   KEYSHIFT_BIN (default build/keyshift), ROUNDS (default 3), TESTS (default set,get),
#        CLIENTS (default 50)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
bin=${KEYSHIFT_BIN:-$root/build/keyshift}
requests=${1:-200000}
rounds=${ROUNDS:-3}
tests=${TESTS:-set,get}
clients=${CLIENTS:-50}
# shellcheck source=tests/bench/common.sh
. "$root/tests/bench/common.sh"
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

need_tools redis-server redis-cli redis-benchmark
[ -x "$bin" ] || { echo "no keyshift binary at $bin" >&2; exit 1; }

start_redis

start_capture_proxy

# One redis-benchmark run; prints "test rps p50_ms" lines from its CSV.
run() {  # PORT PIPELINE
  redis-benchmark -p "$1" -t "$tests" -n "$requests" -c "$clients" -P "$2" --csv 2>/dev/null |
    tr -d '"' | awk -F, 'NR > 1 {print $1, $2, $5}'
}

for pipeline in 16 1; do
  for round in $(seq 1 "$rounds"); do
    run "$redis_port" "$pipeline" | sed "s/^/direct $pipeline /" >>"$work/results"
    run "$proxy_port" "$pipeline" | sed "s/^/proxy $pipeline /" >>"$work/results"
  done
done

# The proxy's CPU time (all its threads, user + sys), before it stops.
proxy_cpu=$(awk -v hz="$(getconf CLK_TCK)" '{print ($14 + $15) / hz}' "/proc/$proxy_pid/stat")
kill -TERM "$proxy_pid"
wait "$proxy_pid" || true
pids=("${pids[@]/$proxy_pid/}")

echo
echo "redis-benchmark -c $clients -n $requests, median of $rounds; direct = redis-server 7.0,"
echo "proxy = through keyshift capture recording to a file"
printf '%-6s %3s %14s %14s %7s %11s %11s %9s\n' test P direct_rps proxy_rps ratio \
  direct_p50 proxy_p50 p50_delta
for pipeline in 16 1; do
  for t in $(awk -v p="$pipeline" '$2 == p {print $3}' "$work/results" | sort -u); do
    d_rps=$(awk -v p="$pipeline" -v t="$t" '$1 == "direct" && $2 == p && $3 == t {print $4}' "$work/results" | median)
    x_rps=$(awk -v p="$pipeline" -v t="$t" '$1 == "proxy" && $2 == p && $3 == t {print $4}' "$work/results" | median)
    d_p50=$(awk -v p="$pipeline" -v t="$t" '$1 == "direct" && $2 == p && $3 == t {print $5}' "$work/results" | median)
    x_p50=$(awk -v p="$pipeline" -v t="$t" '$1 == "proxy" && $2 == p && $3 == t {print $5}' "$work/results" | median)
    awk -v t="$t" -v p="$pipeline" -v dr="$d_rps" -v xr="$x_rps" -v dp="$d_p50" -v xp="$x_p50" \
      'BEGIN {printf "%-6s %3s %14.0f %14.0f %6.2fx %9.3fms %9.3fms %+7.0fus\n",
              t, p, dr, xr, xr / dr, dp, xp, (xp - dp) * 1000}'
  done
done
echo "goals: ratio >= 0.80 at -P 16; p50_delta <= +50us at -P 1"
echo
"$bin" capture info "$work/bench.ksc" | tee "$work/info" |
  grep -E '^(requests|replies|bytes|dropped|file):' || true
awk -v cpu="$proxy_cpu" '$1 == "requests:" {printf "proxy CPU: %.2f s, %.2f us per request\n", cpu, cpu / $2 * 1e6}' "$work/info"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
