#!/usr/bin/env bash
# TLS benchmark: redis-benchmark --tls against `keyshift serve --tls-port` and Debian's
# redis-server 7.0 --tls-port (both with port 0, tls-auth-clients yes, certificates made
# here with openssl, both running at once, rounds alternating), SET and GET at -P 1 and
# -P 16. Prints the median requests/s of ROUNDS runs per server and the keyshift/redis
# ratio. Information, not a test.
#
#   KEYSHIFT_BIN=build/keyshift bash tests/bench/tls_bench.sh
#
# Knobs: ROUNDS (3), N_P1 (100000), N_P16 (1000000), CLIENTS (50), SERVER_CPU (0),
# CLIENT_CPU (1).
set -euo pipefail

SCRIPT_DIR=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$SCRIPT_DIR/../.." && pwd)
KEYSHIFT_BIN=${KEYSHIFT_BIN:-$REPO_ROOT/build/keyshift}
ROUNDS=${ROUNDS:-3}
N_P1=${N_P1:-100000}
N_P16=${N_P16:-1000000}
CLIENTS=${CLIENTS:-50}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}

work=$(mktemp -d /tmp/keyshift-tls-bench-XXXXXX)
pid=""
cleanup() {
  # shellcheck disable=SC2086
  [ -n "$pid" ] && kill $pid 2> /dev/null && wait $pid 2> /dev/null
  rm -rf "$work"
}
trap cleanup EXIT

cd "$work"
openssl req -x509 -new -nodes -newkey rsa:2048 -keyout ca.key -out ca.crt -days 1 \
  -subj "/CN=bench CA" 2>/dev/null
for n in server client; do
  openssl req -new -nodes -newkey rsa:2048 -keyout $n.key -out $n.csr -subj "/CN=$n" 2>/dev/null
  echo "subjectAltName=DNS:localhost,IP:127.0.0.1" > $n.ext
  openssl x509 -req -in $n.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out $n.crt -days 1 \
    -extfile $n.ext 2>/dev/null
done
tls=(--tls-cert-file server.crt --tls-key-file server.key --tls-ca-cert-file ca.crt)
client=(--tls --cacert ca.crt --cert client.crt --key client.key)

free_port() {
  /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
declare -A port
port[keyshift]=$(free_port)
port[redis]=$(free_port)

# Both servers run at once and the rounds alternate between them, so that load from other
# work on the machine falls on both alike.
taskset -c "$SERVER_CPU" "$KEYSHIFT_BIN" serve --port 0 --bind 127.0.0.1 \
  --tls-port "${port[keyshift]}" "${tls[@]}" --save "" > keyshift.log 2>&1 &
pids="$!"
taskset -c "$SERVER_CPU" redis-server --port 0 --bind 127.0.0.1 --tls-port "${port[redis]}" \
  "${tls[@]}" --save "" --appendonly no --logfile "" > redis.log 2>&1 &
pids="$pids $!"
pid=$pids
for server in keyshift redis; do
  up=0
  for _ in $(seq 100); do
    if redis-cli -p "${port[$server]}" "${client[@]}" ping > /dev/null 2>&1; then
      up=1
      break
    fi
    sleep 0.1
  done
  if [ $up = 0 ]; then
    echo "tls_bench: $server did not start:" >&2
    cat $server.log >&2
    exit 1
  fi
done

for p in 1 16; do
  n=$N_P1
  [ "$p" = 16 ] && n=$N_P16
  for r in $(seq "$ROUNDS"); do
    for server in keyshift redis; do
      taskset -c "$CLIENT_CPU" redis-benchmark -p "${port[$server]}" "${client[@]}" -t set,get \
        -n "$n" -P "$p" -c "$CLIENTS" -q 2>/dev/null | tr '\r' '\n' | grep -E '^(SET|GET):' |
        grep -v 'rps=' | while read -r name value _; do
          echo "$server $p ${name%:} $value"
        done >> results.txt
    done
  done
done

printf '%-4s %-4s %14s %14s %7s\n' test -P keyshift redis-7.0 ratio
for p in 1 16; do
  for t in SET GET; do
    median() {
      awk -v s="$1" -v p="$p" -v t="$t" '$1==s && $2==p && $3==t {print $4}' results.txt |
        sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'
    }
    k=$(median keyshift)
    r=$(median redis)
    printf '%-4s %-4s %14s %14s %7.2f\n' "$t" "$p" "$k" "$r" "$(echo "$k / $r" | bc -l)"
  done
done
