# Sourced by the side-by-side benchmark scripts: a temp work dir and the servers' PIDs, both
# cleaned up on exit; free loopback ports; waiting for PING; the median of numbers on stdin.
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT INT TERM
# BENCH_PORT_BASE set: ports from there upwards (a range agreed with others on the machine),
# the next one free each call; unset: one the kernel picks.
free_port() {
  if [ -z "${BENCH_PORT_BASE:-}" ]; then
    /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
    return
  fi
  local next
  next=$(cat "$work/.next_port" 2>/dev/null || echo "$BENCH_PORT_BASE")
  next=$(/usr/bin/python3 -c '
import socket, sys
p = int(sys.argv[1])
while True:
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", p)); break
    except OSError:
        p += 1
    finally:
        s.close()
print(p)' "$next")
  echo $((next + 1)) >"$work/.next_port"
  echo "$next"
}
wait_ping() {  # PORT
  for _ in $(seq 1 400); do
    [ "$(redis-cli -p "$1" ping 2>/dev/null)" = "PONG" ] && return 0
    sleep 0.05
  done
  echo "nothing answers on port $1" >&2
  return 1
}
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
need_tools() {  # TOOL...
  for tool in "$@"; do
    command -v "$tool" >/dev/null || { echo "missing $tool" >&2; exit 1; }
  done
}
# A throw-away redis-server 7.0 without persistence on a free port, stopped on exit; sets
# redis_port.
start_redis() {
  redis_port=$(free_port)
  redis-server --port "$redis_port" --bind 127.0.0.1 --save "" --appendonly no \
    --daemonize no --logfile "$work/redis.log" --dir "$work" &
  pids+=($!)
  wait_ping "$redis_port"
}
# `keyshift capture` ($bin) as a proxy in front of redis_port, recording to $work/bench.ksc;
# sets proxy_port and proxy_pid.
start_capture_proxy() {
  proxy_port=$(free_port)
  "$bin" capture --listen "127.0.0.1:$proxy_port" --upstream "127.0.0.1:$redis_port" \
    --out "$work/bench.ksc" 2>"$work/capture.log" &
  proxy_pid=$!
  pids+=("$proxy_pid")
  wait_ping "$proxy_port"
}
