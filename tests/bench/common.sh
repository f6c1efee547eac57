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
free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_ping() {  # PORT
  for _ in $(seq 1 400); do
    [ "$(redis-cli -p "$1" ping 2>/dev/null)" = "PONG" ] && return 0
    sleep 0.05
  done
  echo "nothing answers on port $1" >&2
  return 1
}
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
