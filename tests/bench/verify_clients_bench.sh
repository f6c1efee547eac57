#!/usr/bin/env bash
# verify_clients_bench.sh - issue 14's `keyshift verify clients` throughput on a MONITOR log:
# MB/s on one core and peak RSS, over a generated log of SIZE_MB (default 1024) of mixed
# traffic from 200 clients (SET/GET/HSET/HGETALL/LPUSH/EXPIRE/EVALSHA/ZADD with binary
# values that need \xhh escapes, some HEXPIRE and SET ... GET). Goal: >= 150 MB/s, memory
# bounded (RSS does not grow with the log). Nothing asserts on timing.
#
# Usage: tests/bench/verify_clients_bench.sh   Env: KEYSHIFT_BIN, SIZE_MB, ROUNDS (default 3)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
bin=${KEYSHIFT_BIN:-$root/build/keyshift}
size_mb=${SIZE_MB:-1024}
rounds=${ROUNDS:-3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
[ -x "$bin" ] || { echo "no keyshift binary at $bin" >&2; exit 1; }

echo "writing a ${size_mb} MB MONITOR log ..."
python3 - "$work/monitor.log" "$size_mb" <<'PY'
import random, sys
path, size = sys.argv[1], int(sys.argv[2]) << 20
rnd = random.Random(7)
def q(b):
    out = ['"']
    for c in b:
        if c in (0x5c, 0x22): out.append('\\' + chr(c))
        elif 0x20 <= c <= 0x7e: out.append(chr(c))
        else: out.append('\\x%02x' % c)
    out.append('"')
    return ''.join(out)
peers = ["10.0.%d.%d:%d" % (i // 50, i % 250, 40000 + i) for i in range(200)]
shapes = [
    lambda k: ['SET', k, bytes(rnd.randrange(256) for _ in range(24))],
    lambda k: ['GET', k], lambda k: ['GET', k], lambda k: ['GET', k],
    lambda k: ['HSET', k, 'field', 'value-%d' % rnd.randrange(1000)],
    lambda k: ['HGETALL', k], lambda k: ['LPUSH', k, 'job-%d' % rnd.randrange(10**6)],
    lambda k: ['EXPIRE', k, '300'], lambda k: ['ZADD', k, '1.5', 'member'],
    lambda k: ['EVALSHA', 'a42059b356c875f0717db19a51f6aaca9ae659ea', '1', k],
    lambda k: ['SET', k, 'v', 'GET'], lambda k: ['HEXPIRE', k, '60', 'FIELDS', '1', 'f'],
]
block = []
written = 0
t = 1764640000000000
with open(path, 'w') as f:
    f.write('OK\n')
    while written < size:
        for _ in range(10000):
            t += rnd.randrange(40)
            k = 'key:%d' % rnd.randrange(10**6)
            args = shapes[rnd.randrange(len(shapes))](k)
            line = '%d.%06d [0 %s] %s\n' % (t // 10**6, t % 10**6, peers[rnd.randrange(200)],
                ' '.join(q(a if isinstance(a, bytes) else a.encode()) for a in args))
            block.append(line)
        s = ''.join(block)
        block = []
        f.write(s)
        written += len(s)
PY
bytes=$(stat -c %s "$work/monitor.log")
echo "log: $((bytes >> 20)) MB, $(wc -l <"$work/monitor.log") lines"
rates=()
for _ in $(seq 1 "$rounds"); do
  /usr/bin/time -f "%e %U %S %M" -o "$work/time" \
    "$bin" verify clients "$work/monitor.log" --target valkey-8.0 --format json \
    >"$work/out.json" || [ $? -eq 1 ]
  read -r wall user sys rss < <(tail -1 "$work/time")
  rates+=("$(python3 -c "import sys; b,w,u,s,r=map(float,sys.argv[1:]); print('%.0f %.0f %.2f %.0f' % (b/2**20/w, b/2**20/(u+s), w, r/1024))" "$bytes" "$wall" "$user" "$sys" "$rss")")
done
line=$(printf '%s\n' "${rates[@]}" | sort -n | awk '{a[NR]=$0} END {print a[int((NR+1)/2)]}')
set -- $line
echo "verify clients: $1 MB/s wall, $2 MB/s per CPU second, $3 s, peak RSS $4 MB (median of $rounds)"
python3 -c "import json; d=json.load(open('$work/out.json')); print('commands read:', d['commands'], ' clients:', len(d['clients']))"
echo "goal: >= 150 MB/s on one core, bounded memory"
