#!/usr/bin/env bash
# run_tcl_compat.sh - run upstream Valkey's Tcl unit tests against a fresh `keyshift serve`
# through /work/shared/tools/tcl-compat.sh (external-server mode), and print its per-unit
# table followed by the failing test names of each unit.
#
# Usage: tests/integration/run_tcl_compat.sh [--lenient-setup] [UNIT ...] [-- EXTRA_RUNTEST_ARGS ...]
#   default units: unit/type/string unit/type/incr unit/expire unit/keyspace
#                  unit/info-command unit/protocol
#   --lenient-setup  diagnostic only: the upstream harness sends FUNCTION FLUSH before every
#                  unit in external mode, and a server without FUNCTION fails each unit
#                  there before any test runs. This runs a private copy of the tests whose
#                  setup ignores that one error (nothing else changes). Its numbers are
#                  NOT comparable with the runner's baselines and are labelled so.
#
# Environment:
#   KEYSHIFT_BIN   keyshift binary (default: <repo>/build/keyshift)
#   VALKEY_SRC     a Valkey 8.0.1 source tree; default /work/valkey-src if it exists.
#                  Without one this script prints SKIP and exits 0 (nothing is fetched:
#                  CI has no network for git, so this is a developer tool, not a ctest).
#   TCL_COMPAT     the runner (default /work/shared/tools/tcl-compat.sh)
#   TCL_COMPAT_*   passed through to the runner (see its header), e.g.
#                  TCL_COMPAT_BASEPORT, TCL_COMPAT_UNIT_TIMEOUT
#   KEEP_LOGS=1    keep the work dir (server log, per-unit logs) and print where it is
#
# Exit status: the runner's (0 = every unit ran with no [err] and no exception), 0 on SKIP,
# 2 on a setup problem (binary missing, server does not start).

set -u

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
KEYSHIFT_BIN=${KEYSHIFT_BIN:-$REPO/build/keyshift}
TCL_COMPAT=${TCL_COMPAT:-/work/shared/tools/tcl-compat.sh}
DEFAULT_UNITS=(unit/type/string unit/type/incr unit/expire unit/keyspace unit/info-command
               unit/protocol)

if [ -z "${VALKEY_SRC:-}" ]; then
  if [ -f /work/valkey-src/tests/test_helper.tcl ]; then
    VALKEY_SRC=/work/valkey-src
  else
    echo "SKIP: no Valkey source tree (set VALKEY_SRC to a Valkey 8.0.1 checkout with" \
         "tests/test_helper.tcl; /work/valkey-src does not exist)"
    exit 0
  fi
fi
if [ ! -f "$VALKEY_SRC/tests/test_helper.tcl" ]; then
  echo "SKIP: VALKEY_SRC=$VALKEY_SRC has no tests/test_helper.tcl"
  exit 0
fi
export VALKEY_SRC
[ -x "$TCL_COMPAT" ] || [ -f "$TCL_COMPAT" ] || { echo "runner not found: $TCL_COMPAT" >&2; exit 2; }
[ -x "$KEYSHIFT_BIN" ] || { echo "keyshift binary not found: $KEYSHIFT_BIN (set KEYSHIFT_BIN)" >&2; exit 2; }
KEYSHIFT_BIN=$(readlink -f "$KEYSHIFT_BIN")
command -v tclsh >/dev/null 2>&1 || command -v tclsh8.6 >/dev/null 2>&1 || {
  echo "need tclsh (apt-get install tcl)" >&2; exit 2; }

UNITS=(); EXTRA=(); LENIENT=0
while [ $# -gt 0 ]; do
  if [ "$1" = "--" ]; then EXTRA=("$@"); break; fi
  if [ "$1" = "--lenient-setup" ]; then LENIENT=1; shift; continue; fi
  UNITS+=("$1"); shift
done
[ ${#UNITS[@]} -gt 0 ] || UNITS=("${DEFAULT_UNITS[@]}")

WORK=$(mktemp -d "${TMPDIR:-/tmp}/ks-tcl-compat.XXXXXX")
SERVER_PID=""
cleanup() {
  if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
    kill -TERM "$SERVER_PID" 2>/dev/null
    wait "$SERVER_PID" 2>/dev/null
  fi
  if [ "${KEEP_LOGS:-0}" = 1 ]; then echo "logs kept in $WORK" >&2; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# A free loopback port below the runner's control-socket range (BASEPORT-32..BASEPORT-1).
BASEPORT=${TCL_COMPAT_BASEPORT:-19932}
PORT=$(/usr/bin/python3 - "$BASEPORT" <<'EOF'
import socket, sys
base = int(sys.argv[1])
for _ in range(100):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    if not (base - 40 <= p <= base + 8):
        print(p)
        break
EOF
)
[ -n "$PORT" ] || { echo "no free port" >&2; exit 2; }

( cd "$WORK" && exec "$KEYSHIFT_BIN" serve --port "$PORT" --bind 127.0.0.1 \
      --unixsocket "$WORK/keyshift.sock" --enable-debug-command yes --save "" \
      --appendonly no ) > "$WORK/keyshift.log" 2>&1 &
SERVER_PID=$!

# Wait for PING (bounded: 150 tries, each waiting at most 0.1 s on the server process).
ready=0
for _ in $(seq 1 150); do
  if ! kill -0 "$SERVER_PID" 2>/dev/null; then break; fi
  if reply=$(timeout 2 redis-cli -h 127.0.0.1 -p "$PORT" ping 2>/dev/null) && [ "$reply" = PONG ]; then
    ready=1; break
  fi
  timeout 0.1 tail --pid="$SERVER_PID" -f /dev/null 2>/dev/null
done
if [ "$ready" != 1 ]; then
  echo "keyshift serve did not answer PING on port $PORT; its log:" >&2
  tail -n 30 "$WORK/keyshift.log" >&2
  exit 2
fi
echo "keyshift $("$KEYSHIFT_BIN" --version 2>/dev/null | head -n1) on 127.0.0.1:$PORT" \
     "(pid $SERVER_PID); Valkey tests from $VALKEY_SRC" >&2

if [ "$LENIENT" = 1 ]; then
  mkdir -p "$WORK/valkey"
  cp -R "$VALKEY_SRC/tests" "$WORK/valkey/tests"
  [ -d "$VALKEY_SRC/src" ] && ln -s "$VALKEY_SRC/src" "$WORK/valkey/src"
  sed -i 's/^\(\s*\)r function flush$/\1catch {r function flush}/' "$WORK/valkey/tests/support/server.tcl"
  grep -q 'catch {r function flush}' "$WORK/valkey/tests/support/server.tcl" || {
    echo "--lenient-setup: could not find 'r function flush' in support/server.tcl" >&2; exit 2; }
  export VALKEY_SRC="$WORK/valkey"
  echo "LENIENT SETUP: FUNCTION FLUSH errors ignored; numbers not comparable with baselines" >&2
fi

export TCL_COMPAT_LOGDIR="$WORK/tcl-logs"
bash "$TCL_COMPAT" 127.0.0.1 "$PORT" "${UNITS[@]}" ${EXTRA[@]+"${EXTRA[@]}"}
rc=$?

echo
echo "Failing tests per unit:"
if [ -s "$TCL_COMPAT_LOGDIR/failed-tests.txt" ]; then
  for unit in "${UNITS[@]}"; do
    n=$(awk -F'\t' -v u="$unit" '$1 == u' "$TCL_COMPAT_LOGDIR/failed-tests.txt" | wc -l)
    [ "$n" -gt 0 ] || continue
    echo "== $unit ($n)"
    awk -F'\t' -v u="$unit" '$1 == u { sub(/^[^\t]*\t/, ""); print "   " $0 }' \
        "$TCL_COMPAT_LOGDIR/failed-tests.txt"
  done
else
  echo "   (none)"
fi

if kill -0 "$SERVER_PID" 2>/dev/null; then
  kill -TERM "$SERVER_PID"
  wait "$SERVER_PID"; src=$?
  SERVER_PID=""
  echo "keyshift serve exited with $src after SIGTERM" >&2
else
  echo "keyshift serve is no longer running (crashed?); log tail:" >&2
  tail -n 30 "$WORK/keyshift.log" >&2
  SERVER_PID=""
  [ "$rc" -ne 0 ] || rc=1
fi
exit "$rc"
