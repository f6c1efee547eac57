#!/usr/bin/env bash
# Live replication from one redis-server to another until caught up, on the corpus'
# ~200,000-key mixed dataset (make-large.sh, as import_bench.sh builds it): keyshift import
# --mode sync into a live redis-server (over its unix socket) against that redis-server doing
# REPLICAOF itself, both from the same source over TCP, both with the source's default
# diskless sync (REPL_DISKLESS=no for disk-based). Ratios are reported, never asserted.
#
#   bash tests/bench/import_sync_bench.sh        # KEYS=200000, ROUNDS=3 by default
set -euo pipefail
SCRIPT_DIR=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$SCRIPT_DIR/../.." && pwd)
KEYSHIFT_BIN=${KEYSHIFT_BIN:-$REPO_ROOT/build/keyshift}
KEYS=${KEYS:-200000}
ROUNDS=${ROUNDS:-3}
REPL_DISKLESS=${REPL_DISKLESS:-yes}
MAKE_LARGE=${MAKE_LARGE:-$REPO_ROOT/../shared/corpus/rdb/make-large.sh}
work=$(mktemp -d /tmp/keyshift-sync-bench-XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

start_redis() {  # NAME DIR PORT [directives...]: persistence off, a unix socket and PORT
  local name=$1 dir=$2 port=$3
  shift 3
  mkdir -p "$dir"
  redis-server --port "$port" --bind 127.0.0.1 --unixsocket "$work/$name.sock" --dir "$dir" \
    --save "" --appendonly no --enable-debug-command yes --logfile "$work/$name.log" \
    --daemonize no "$@" &
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
info_field() { redis-cli -s "$1" info replication | tr -d '\r' | grep "^$2:" | cut -d: -f2; }

src_port=$(free_port)
start_redis source "$work/source" "$src_port" --repl-diskless-sync "$REPL_DISKLESS" \
  --repl-diskless-sync-delay 0
bash "$MAKE_LARGE" --port "$src_port" --keys "$KEYS" --flush >/dev/null
digest=$(redis-cli -s "$work/source.sock" debug digest)
redis-cli -s "$work/source.sock" save >/dev/null
size=$(stat -c %s "$work/source/dump.rdb")
rm -f "$work/source/dump.rdb"
echo "dataset: $KEYS keys, RDB $size bytes, digest $digest, diskless sync: $REPL_DISKLESS"

best_replicaof=""
best_keyshift=""
for round in $(seq 1 "$ROUNDS"); do
  # The target doing REPLICAOF itself, until its offset is the source's.
  rport=$(free_port)
  start_redis "replica$round" "$work/replica$round" "$rport"
  sock="$work/replica$round.sock"
  t0=$(now)
  redis-cli -s "$sock" replicaof 127.0.0.1 "$src_port" >/dev/null
  # One INFO of each side per 20 ms: the polling itself must not eat the CPU it measures.
  for _ in $(seq 1 30000); do
    rinfo=$(redis-cli -s "$sock" info replication | tr -d '\r')
    if grep -q '^master_link_status:up' <<<"$rinfo" && grep -q '^master_sync_in_progress:0' <<<"$rinfo"; then
      roff=$(grep '^slave_repl_offset:' <<<"$rinfo" | cut -d: -f2)
      [ "$roff" = "$(info_field "$work/source.sock" master_repl_offset)" ] && break
    fi
    sleep 0.02
  done
  t1=$(now)
  r_s=$(elapsed "$t0" "$t1")
  r_digest=$(redis-cli -s "$sock" debug digest)
  redis-cli -s "$sock" replicaof no one >/dev/null
  redis-cli -s "$sock" shutdown nosave >/dev/null 2>&1 || true

  # keyshift import --mode sync into the same kind of target.
  tport=$(free_port)
  start_redis "target$round" "$work/target$round" "$tport"
  t0=$(now)
  "$KEYSHIFT_BIN" import "redis://127.0.0.1:$src_port" --to "unix://$work/target$round.sock" \
    --no-checkpoint --until caught-up >/dev/null
  t1=$(now)
  k_s=$(elapsed "$t0" "$t1")
  k_digest=$(redis-cli -s "$work/target$round.sock" debug digest)
  redis-cli -s "$work/target$round.sock" shutdown nosave >/dev/null 2>&1 || true
  echo "round $round: REPLICAOF ${r_s} s (digest $([ "$r_digest" = "$digest" ] && echo equal || echo DIFFERENT)), keyshift import --mode sync ${k_s} s (digest $([ "$k_digest" = "$digest" ] && echo equal || echo DIFFERENT))"
  if [ -z "$best_replicaof" ] || python3 -c "import sys; sys.exit(0 if $r_s < $best_replicaof else 1)"; then best_replicaof=$r_s; fi
  if [ -z "$best_keyshift" ] || python3 -c "import sys; sys.exit(0 if $k_s < $best_keyshift else 1)"; then best_keyshift=$k_s; fi
done

ratio=$(python3 -c "print(f'{$best_keyshift / $best_replicaof:.2f}')")
echo
echo "| run (best of $ROUNDS) | seconds | ratio |"
echo "|---|---|---|"
echo "| target doing REPLICAOF until caught up | $best_replicaof | 1.00 |"
echo "| keyshift import --mode sync --until caught-up | $best_keyshift | $ratio (goal <= 1.3) |"
