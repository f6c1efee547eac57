#!/usr/bin/env bash
# Full-sync time on the same dataset (DEBUG POPULATE, ~50 MB of values by default), both
# primaries with diskless sync and no delay (REPL_DISKLESS=no for disk-based), in two parts:
#   replica: a redis-server 7.0 primary followed by a fresh keyshift serve replica against a
#            fresh redis-server replica (issue 16's goal: keyshift <= 0.8x);
#   primary: keyshift serve as the primary against redis-server as the primary, each followed
#            by a fresh redis-server replica.
# Timed from REPLICAOF to master_link_status:up; the replica's DEBUG DIGEST must equal its
# primary's. The ratios are reported, never asserted.
#
#   bash tests/bench/full_sync_bench.sh        # KEYS=500000 VALUE=100 ROUNDS=3 by default
#   SIDES=replica bash tests/bench/full_sync_bench.sh   # one part only (replica or primary)
set -euo pipefail
SCRIPT_DIR=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$SCRIPT_DIR/../.." && pwd)
KEYSHIFT_BIN=${KEYSHIFT_BIN:-$REPO_ROOT/build/keyshift}
KEYS=${KEYS:-500000}
VALUE=${VALUE:-100}
ROUNDS=${ROUNDS:-3}
REPL_DISKLESS=${REPL_DISKLESS:-yes}
SIDES=${SIDES:-replica primary}
# shellcheck source=common.sh
source "$SCRIPT_DIR/common.sh"

now() { date +%s.%N; }
link_status() { redis-cli -p "$1" info replication | tr -d '\r' | grep '^master_link_status:' | cut -d: -f2; }

start_primary() {  # KIND PORT DIR
  mkdir -p "$3"
  local common=(--port "$2" --bind 127.0.0.1 --dir "$3" --save "" --appendonly no
    --enable-debug-command yes --repl-diskless-sync "$REPL_DISKLESS" --repl-diskless-sync-delay 0)
  if [ "$1" = keyshift ]; then
    "$KEYSHIFT_BIN" serve "${common[@]}" >"$3/log" 2>&1 &
  else
    redis-server "${common[@]}" --daemonize no --logfile "$3/log" &
  fi
  pids+=($!)
  wait_ping "$2"
  redis-cli -p "$2" debug populate "$KEYS" key "$VALUE" >/dev/null
}

sync_once() {  # PRIMARY_PORT [REPLICA_KIND]: prints the seconds a fresh replica takes to come up
  local port dir start
  port=$(free_port)
  dir=$(mktemp -d "$work/replica-XXXX")
  local common=(--port "$port" --bind 127.0.0.1 --dir "$dir" --save "" --appendonly no
    --enable-debug-command yes)
  if [ "${2:-redis}" = keyshift ]; then
    "$KEYSHIFT_BIN" serve "${common[@]}" >"$dir/log" 2>&1 &
  else
    redis-server "${common[@]}" --daemonize no --logfile "$dir/log" &
  fi
  local pid=$!
  wait_ping "$port"
  start=$(now)
  redis-cli -p "$port" replicaof 127.0.0.1 "$1" >/dev/null
  until [ "$(link_status "$port")" = up ]; do sleep 0.01; done
  local end
  end=$(now)
  local want got
  want=$(redis-cli -p "$1" debug digest)
  got=$(redis-cli -p "$port" debug digest)
  if [ "$want" != "$got" ]; then
    echo "replica of port $1: digest $got, primary $want" >&2
    exit 1
  fi
  kill "$pid"
  wait "$pid" 2>/dev/null || true
  rm -rf "$dir"
  /usr/bin/python3 -c "print(f'{$end - $start:.3f}')"
}

ratio() { /usr/bin/python3 -c "print(f'{$1 / $2:.2f}')"; }
rs_port=$(free_port)
start_primary redis "$rs_port" "$work/redis"
echo "dataset: $KEYS keys of $VALUE bytes (DEBUG POPULATE), diskless sync: $REPL_DISKLESS"
for side in $SIDES; do
  ks_times=()
  rs_times=()
  if [ "$side" = primary ] && [ -z "${ks_port:-}" ]; then
    ks_port=$(free_port)
    start_primary keyshift "$ks_port" "$work/keyshift"
  fi
  for round in $(seq 1 "$ROUNDS"); do
    if [ "$side" = replica ]; then
      ks_times+=("$(sync_once "$rs_port" keyshift)")
      rs_times+=("$(sync_once "$rs_port" redis)")
    else
      ks_times+=("$(sync_once "$ks_port")")
      rs_times+=("$(sync_once "$rs_port")")
    fi
    echo "$side round $round: keyshift ${ks_times[-1]} s, redis-server ${rs_times[-1]} s"
  done
  ks=$(printf '%s\n' "${ks_times[@]}" | median)
  rs=$(printf '%s\n' "${rs_times[@]}" | median)
  echo "median full sync, keyshift as the $side: $ks s, redis-server as the $side: $rs s," \
    "ratio (keyshift / redis) $(ratio "$ks" "$rs")"
done
