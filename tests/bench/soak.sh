#!/usr/bin/env bash
# Soak test: keyshift serve under maxmemory (allkeys-lru, then volatile-ttl) with a mixed
# workload of every type and expiring keys; prints per-interval throughput, p99, RSS and
# used_memory and checks the memory bounds (see soak.py). SOAK_SECONDS (default 600),
# SOAK_INTERVAL (default 60), SOAK_MAXMEMORY_MB, SOAK_CLIENTS; KEYSHIFT_BIN.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
exec /usr/bin/python3 "$here/soak.py"
