#!/usr/bin/env bash
# replay_bench.sh - issue 15's replay throughput: a capture of REQUESTS commands (redis-benchmark
# SET and GET, half each, recorded through `keyshift capture` in front of Debian's
# redis-server 7.0) replayed with `keyshift replay --speed max` against a fresh redis-server,
# next to `keyshift bench` with the same connections, pipeline depth and tests against the
# same server. Goal: replay >= 0.9x bench's requests/s. Replay and bench runs alternate; each
# figure is the median of ROUNDS runs. CPU seconds per million requests (user+sys of the
# client process) are printed too: they do not depend on what else the machine runs.
# Nothing asserts on timing.
#
# Usage: tests/bench/replay_bench.sh [REQUESTS]   (default 1000000)
# Env:   KEYSHIFT_BIN (default build/keyshift), ROUNDS (default 3), CLIENTS (default 50),
#        PIPELINE (default 16), BENCH_PORT_BASE (ports from there; default: any free one),
#        KEEP_CAPTURE (a path: the capture is copied there)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
bin=${KEYSHIFT_BIN:-$root/build/keyshift}
requests=${1:-1000000}
rounds=${ROUNDS:-3}
clients=${CLIENTS:-50}
pipeline=${PIPELINE:-16}
per_test=$((requests / 2))
# shellcheck source=tests/bench/common.sh
. "$root/tests/bench/common.sh"

need_tools redis-server redis-cli redis-benchmark
[ -x "$bin" ] || { echo "no keyshift binary at $bin" >&2; exit 1; }

start_redis

# The capture: redis-benchmark through the proxy.
start_capture_proxy
redis-benchmark -p "$proxy_port" -t set,get -n "$per_test" -c "$clients" -P "$pipeline" \
  -q >/dev/null
kill -TERM "$proxy_pid"
wait "$proxy_pid" || true
pids=("${pids[@]/$proxy_pid/}")
"$bin" capture info "$work/bench.ksc" | grep -E '^(requests|replies|bytes|dropped|file):' || true
[ -n "${KEEP_CAPTURE:-}" ] && cp "$work/bench.ksc" "$KEEP_CAPTURE"

# CPU seconds (user + sys) of a command, from /usr/bin/time's output file.
cpu_of() { awk '{print $1 + $2}' "$1"; }

for _ in $(seq 1 "$rounds"); do
  redis-cli -p "$redis_port" flushall >/dev/null
  /usr/bin/time -f '%U %S' -o "$work/time" \
    "$bin" replay "$work/bench.ksc" --to "redis://127.0.0.1:$redis_port" --speed max \
    --format json --out "$work/replay.json" || true
  /usr/bin/python3 - "$work/replay.json" "$(cpu_of "$work/time")" >>"$work/replay" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
bad = sum(v for k, v in r["verdicts"].items() if k in ("differs", "no-reply", "refused"))
print(r["requests"] / r["seconds"], float(sys.argv[2]) / r["requests"] * 1e6, r["requests"], bad)
EOF
  redis-cli -p "$redis_port" flushall >/dev/null
  /usr/bin/time -f '%U %S' -o "$work/time" \
    "$bin" bench -p "$redis_port" -t set,get -n "$per_test" -c "$clients" -P "$pipeline" \
    --csv >"$work/bench.csv"
  # Requests of both tests over the time both took (each test's time from its rate).
  tr -d '"' <"$work/bench.csv" | awk -F, -v n="$per_test" -v cpu="$(cpu_of "$work/time")" \
    'NR > 1 {t += n / $2; total += n} END {print total / t, cpu / total * 1e6}' >>"$work/bench"
done

replay_rps=$(awk '{print $1}' "$work/replay" | median)
replay_cpu=$(awk '{print $2}' "$work/replay" | median)
bench_rps=$(awk '{print $1}' "$work/bench" | median)
bench_cpu=$(awk '{print $2}' "$work/bench" | median)
read -r _ _ sent mismatches < <(tail -1 "$work/replay")
echo
echo "$sent requests replayed (SET/GET, -c $clients -P $pipeline), median of $rounds;"
echo "target = redis-server 7.0; mismatches in the last replay: $mismatches"
printf '%-28s %12s %18s\n' side requests/s cpu_s_per_Mreq
printf '%-28s %12.0f %18.2f\n' "keyshift replay --speed max" "$replay_rps" "$replay_cpu"
printf '%-28s %12.0f %18.2f\n' "keyshift bench" "$bench_rps" "$bench_cpu"
awk -v a="$replay_rps" -v b="$bench_rps" 'BEGIN {printf "ratio replay/bench: %.2fx (goal >= 0.90x)\n", a / b}'
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
