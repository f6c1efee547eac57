#!/usr/bin/env bash
# pcap_bench.sh - issue 15's pcap import speed: Debian's tcpdump records the loopback while
# redis-benchmark drives Debian's redis-server 7.0 (SET and GET, pipelined, many connections),
# then `keyshift capture --from-pcap` turns that file into a capture ROUNDS times. Prints MB/s
# of pcap read (goal: >= 200 MB/s), CPU seconds per MB (user+sys; independent of the machine's
# load) and peak RSS, each the median of the rounds. Nothing asserts on timing.
#
# Needs root (or CAP_NET_RAW) for tcpdump on lo; PCAP=FILE (with PCAP_PORT) benchmarks an
# existing file instead.
#
# Usage: tests/bench/pcap_bench.sh [REQUESTS]   (default 2000000, half SET half GET)
# Env:   KEYSHIFT_BIN (default build/keyshift), ROUNDS (default 3), CLIENTS (default 50),
#        PIPELINE (default 16), DATA_SIZE (default 100), BENCH_PORT_BASE, PCAP, PCAP_PORT,
#        KEEP_PCAP (a path: the recorded pcap is copied there)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
bin=${KEYSHIFT_BIN:-$root/build/keyshift}
requests=${1:-2000000}
rounds=${ROUNDS:-3}
clients=${CLIENTS:-50}
pipeline=${PIPELINE:-16}
data_size=${DATA_SIZE:-100}
# shellcheck source=tests/bench/common.sh
. "$root/tests/bench/common.sh"
[ -x "$bin" ] || { echo "no keyshift binary at $bin" >&2; exit 1; }

if [ -n "${PCAP:-}" ]; then
  pcap=$PCAP
  port=${PCAP_PORT:-6379}
else
  need_tools redis-server redis-cli redis-benchmark tcpdump
  start_redis
  port=$redis_port
  pcap=$work/bench.pcap
  # A big kernel buffer so that a busy machine drops as little as it can.
  tcpdump -i lo -B 65536 -s 0 -U -w "$pcap" "tcp port $port" 2>"$work/tcpdump.log" &
  tcpdump_pid=$!
  pids+=("$tcpdump_pid")
  for _ in $(seq 1 100); do grep -q listening "$work/tcpdump.log" && break; sleep 0.05; done
  redis-benchmark -p "$port" -t set,get -n $((requests / 2)) -c "$clients" -P "$pipeline" \
    -d "$data_size" -q >/dev/null
  sleep 0.5
  kill -INT "$tcpdump_pid"
  wait "$tcpdump_pid" || true
  grep -E 'captured|dropped' "$work/tcpdump.log" || true
  [ -n "${KEEP_PCAP:-}" ] && cp "$pcap" "$KEEP_PCAP"
fi

bytes=$(stat -c %s "$pcap")
for _ in $(seq 1 "$rounds"); do
  rm -f "$work/out.ksc"
  /usr/bin/time -f '%e %U %S %M' -o "$work/time" \
    "$bin" capture --from-pcap "$pcap" --port "$port" --out "$work/out.ksc" >"$work/import.log" 2>&1 || {
    cat "$work/import.log" >&2
    exit 1
  }
  awk -v b="$bytes" '{mb = b / 1e6; print mb / $1, ($2 + $3) / mb, $4 / 1024}' "$work/time" >>"$work/rounds"
done

echo
echo "pcap: $(awk -v b="$bytes" 'BEGIN {printf "%.1f MB", b / 1e6}'), median of $rounds import(s)"
"$bin" capture info "$work/out.ksc" | grep -E '^(requests|replies|bytes|dropped):' || true
printf '%-14s %12s %16s %12s\n' import MB/s cpu_s_per_MB peak_rss_MB
printf '%-14s %12.1f %16.4f %12.1f\n' "--from-pcap" "$(awk '{print $1}' "$work/rounds" | median)" \
  "$(awk '{print $2}' "$work/rounds" | median)" "$(awk '{print $3}' "$work/rounds" | median)"
echo "goal: >= 200 MB/s"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
