#!/usr/bin/env bash
# Issue 16's command benchmarks side by side: EVALSHA of a short script, PFADD, PFCOUNT,
# GEOADD and GEOSEARCH at -P 1 and -P 16, on Debian's redis-server (7.0), `keyshift serve`
# and, when VALKEY_BIN names one, a valkey-server (8.0.1 built from source). Every server is
# pinned to SERVER_CPU and redis-benchmark to CLIENT_CPU; rounds are interleaved (each round
# runs every server once) and the median requests/s is printed with keyshift/redis and
# keyshift/valkey ratios (the goal: >= 1.0x). Information, not a test: the exit status is
# non-zero only when something failed to run.
#
#   bash tests/bench/commands_bench.sh
#   VALKEY_BIN=/path/to/valkey-server N=100000 ROUNDS=1 TESTS="evalsha pfadd" bash tests/bench/commands_bench.sh
#
# Knobs: KEYSHIFT_BIN, VALKEY_BIN, N (requests per run, default 200000), ROUNDS (default 3),
# CLIENTS (default 50), PIPELINES (default "1 16"), TESTS (default all five),
# SERVER_CPU / CLIENT_CPU (default 0 / 1).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
KEYSHIFT_BIN=${KEYSHIFT_BIN:-$root/build/keyshift}
VALKEY_BIN=${VALKEY_BIN:-}
N=${N:-200000}
ROUNDS=${ROUNDS:-3}
CLIENTS=${CLIENTS:-50}
PIPELINES=${PIPELINES:-"1 16"}
TESTS=${TESTS:-"evalsha pfadd pfcount geoadd geosearch"}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
SCRIPT="local n = redis.call('incr', KEYS[1]) return {n, redis.call('get', KEYS[1])}"

for tool in redis-server redis-benchmark redis-cli taskset; do
  command -v "$tool" >/dev/null || { echo "missing $tool" >&2; exit 2; }
done
[ -x "$KEYSHIFT_BIN" ] || { echo "keyshift not built at $KEYSHIFT_BIN" >&2; exit 2; }
if [ -n "$VALKEY_BIN" ] && [ ! -x "$VALKEY_BIN" ]; then
  echo "VALKEY_BIN=$VALKEY_BIN is not executable" >&2
  exit 2
fi

# shellcheck source=tests/bench/common.sh
. "$root/tests/bench/common.sh"

names=() ports=()
start() {  # name binary-and-args...
  local name=$1 port
  shift
  port=$(free_port)
  mkdir -p "$work/$name"
  taskset -c "$SERVER_CPU" "$@" --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
    --dir "$work/$name" >"$work/$name/log" 2>&1 &
  pids+=($!)
  wait_ping "$port"
  names+=("$name")
  ports+=("$port")
}
start redis redis-server
start keyshift "$KEYSHIFT_BIN" serve
[ -n "$VALKEY_BIN" ] && start valkey "$VALKEY_BIN"

# Each server gets the same fixtures: the script, a dense HyperLogLog and a geo set of
# 10,000 members around one point, so PFCOUNT and GEOSEARCH read real data.
fill() {
  local port=$1
  redis-cli -p "$port" script load "$SCRIPT" >/dev/null
  /usr/bin/python3 - "$port" <<'EOF' | redis-cli -p "$1" --pipe >/dev/null
import sys
out = sys.stdout
for i in range(0, 20000, 100):
    out.write("PFADD bench:hll " + " ".join(f"e{j}" for j in range(i, i + 100)) + "\n")
for i in range(10000):
    lon = 13.0 + (i % 100) * 0.01
    lat = 38.0 + (i // 100) * 0.01
    out.write(f"GEOADD bench:geo {lon:.5f} {lat:.5f} m{i}\n")
EOF
}
for port in "${ports[@]}"; do fill "$port"; done
sha=$(redis-cli -p "${ports[0]}" script load "$SCRIPT")

command_of() {  # test -> redis-benchmark command words
  case $1 in
    evalsha) echo "evalsha $sha 1 bench:counter" ;;
    pfadd) echo "pfadd bench:hll:w __rand_int__" ;;
    pfcount) echo "pfcount bench:hll" ;;
    geoadd) echo "geoadd bench:geo:w 13.361389 38.115556 m:__rand_int__" ;;
    geosearch) echo "geosearch bench:geo fromlonlat 13.5 38.5 byradius 5 km asc count 10" ;;
    *) echo "unknown test $1" >&2; return 1 ;;
  esac
}
rps() {  # port pipeline words...
  local port=$1 pipe=$2
  shift 2
  # shellcheck disable=SC2068
  taskset -c "$CLIENT_CPU" redis-benchmark -p "$port" -c "$CLIENTS" -n "$N" -P "$pipe" \
    -r 100000 -q --csv $@ | awk -F'"' 'NF > 3 {v = $4} END {print v + 0}'
}

header=$(printf '%-10s %4s' test pipe)
for name in "${names[@]}"; do header+=$(printf ' %12s' "$name"); done
header+=$(printf ' %9s' ks/redis)
[ -n "$VALKEY_BIN" ] && header+=$(printf ' %9s' ks/valkey)
echo "$header"
for t in $TESTS; do
  words=$(command_of "$t")
  for p in $PIPELINES; do
    declare -A samples=()
    for _ in $(seq "$ROUNDS"); do
      for i in "${!names[@]}"; do
        samples[$i]+="$(rps "${ports[$i]}" "$p" "$words") "
      done
    done
    line=$(printf '%-10s %4s' "$t" "-P$p")
    declare -A med=()
    for i in "${!names[@]}"; do
      med[$i]=$(printf '%s\n' ${samples[$i]} | median)
      line+=$(printf ' %12.0f' "${med[$i]}")
    done
    line+=$(awk -v k="${med[1]}" -v r="${med[0]}" 'BEGIN {printf " %8.2fx", k / r}')
    [ -n "$VALKEY_BIN" ] && line+=$(awk -v k="${med[1]}" -v v="${med[2]}" 'BEGIN {printf " %8.2fx", k / v}')
    echo "$line"
    unset samples med
  done
done
