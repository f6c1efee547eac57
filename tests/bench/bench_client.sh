#!/usr/bin/env bash
# redis-benchmark vs `keyshift bench` against the same redis-server, in one run: requests/s
# per client (goal: keyshift >= 0.95x) and CPU seconds per million requests (goal: keyshift's
# <= redis-benchmark's) for set, get, incr, lpush, lrange_100, mset at -P 1 and -P 16, then
# keyshift bench --threads 1 vs 2. The server is pinned to SERVER_CPU, the clients to
# CLIENT_CPU. Goals are reported, never asserted. See README.md here.
#
#   bash tests/bench/bench_client.sh                       # ~10-15 min on 2 busy cores
#   ROUNDS=1 N_P1=50000 N_PN=300000 bash tests/bench/bench_client.sh   # quick look
set -euo pipefail
SCRIPT_DIR=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$SCRIPT_DIR/../.." && pwd)
export KEYSHIFT_BIN=${KEYSHIFT_BIN:-$REPO_ROOT/build/keyshift}
export TESTS=${TESTS:-set,get,incr,lpush,lrange_100,mset}
export PIPELINES=${PIPELINES:-"1 16"}
export N_P1=${N_P1:-200000}     # -n at -P 1
export N_PN=${N_PN:-1000000}    # -n at the other depths and for the --threads comparison
export CLIENTS=${CLIENTS:-50}
export ROUNDS=${ROUNDS:-3}
export SERVER_CPU=${SERVER_CPU:-0}
export CLIENT_CPU=${CLIENT_CPU:-1}
exec python3 "$SCRIPT_DIR/bench_client.py"
