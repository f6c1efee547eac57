#!/usr/bin/env bash
# Side-by-side benchmark: Debian's redis-server vs `keyshift serve`, driven by redis-benchmark.
# Prints requests/s and p50 per test with keyshift/redis ratios, the goals from the issue as
# PASS/MISS (information only), and memory comparisons (1,000,000 string keys; 100,000 small
# hashes, sets and sorted sets). Two benchmark groups: strings (ping,set,get,incr,mset) and
# collections (list/set/hash/zset commands and LRANGE). See README.md here.
#
# Exit status: 0 when everything ran (whatever the goals say); non-zero when something failed
# to run (missing binary, a server that did not start or died, a benchmark that failed).
set -euo pipefail

SCRIPT_DIR=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(git -C "$SCRIPT_DIR" rev-parse --show-toplevel 2>/dev/null || (cd "$SCRIPT_DIR/../.." && pwd))
HELPER="$SCRIPT_DIR/side_by_side.py"

# ---- knobs ---------------------------------------------------------------------------------
KEYSHIFT_BIN=${KEYSHIFT_BIN:-$REPO_ROOT/build/keyshift}
REDIS_SERVER_BIN=${REDIS_SERVER_BIN:-redis-server}
REDIS_BENCHMARK_BIN=${REDIS_BENCHMARK_BIN:-redis-benchmark}
REDIS_CLI_BIN=${REDIS_CLI_BIN:-redis-cli}
BENCH_SCALE=${BENCH_SCALE:-1}            # multiplies both -n values (0.1 = quick run)
ROUNDS=${ROUNDS:-3}                      # rounds per (server, transport, pipeline); median taken
BENCH_CLIENTS=${BENCH_CLIENTS:-50}       # redis-benchmark -c
BENCH_TRANSPORTS=${BENCH_TRANSPORTS:-"tcp unix"}
N_P1=${N_P1:-}                           # explicit -n for -P 1 (default 200000 * BENCH_SCALE)
N_P64=${N_P64:-}                         # explicit -n for -P 64 (default 2000000 * BENCH_SCALE)
MEMORY_KEYS=${MEMORY_KEYS:-1000000}      # keys loaded for the strings memory measurement
COLL_MEMORY_KEYS=${COLL_MEMORY_KEYS:-100000} # keys per small-collection memory measurement
MEMORY_TYPES=${MEMORY_TYPES:-"strings hash set zset"}
BENCH_GROUPS=${BENCH_GROUPS:-"strings collections"}
N_COLL_P1=${N_COLL_P1:-}                 # collections group, non-LRANGE tests (default 200000 * scale)
N_COLL_P64=${N_COLL_P64:-}               # (default 2000000 * scale)
N_LRANGE_P1=${N_LRANGE_P1:-}             # collections group, LRANGE_* tests (default 100000 * scale)
N_LRANGE_P64=${N_LRANGE_P64:-}           # (default 200000 * scale)
SKIP_BENCH=${SKIP_BENCH:-0}
SKIP_MEMORY=${SKIP_MEMORY:-0}
SERVER_CPU=${SERVER_CPU:-0}              # both servers are pinned here (taskset -c)
CLIENT_CPU=${CLIENT_CPU:-1}              # redis-benchmark / redis-cli are pinned here
PING_RETRIES=${PING_RETRIES:-100}        # readiness probes, 0.1 s apart
BENCH_TIMEOUT=${BENCH_TIMEOUT:-3600}     # hang guard per redis-benchmark run (not an assertion)
KEYSHIFT_ARGS=${KEYSHIFT_ARGS:-}         # extra `keyshift serve` flags, word-split
KEEP_TMP=${KEEP_TMP:-0}                  # 1 keeps the work dir (logs, CSVs) after exit

TESTS="ping,set,get,incr,mset"
# The collections group runs as two redis-benchmark invocations per (server, transport,
# pipeline), each on a FLUSHALLed server: the LRANGE tests answer 100..600 elements per call,
# so they get their own (smaller) -n. redis-benchmark fills the list for them itself: whenever
# any lrange_* test is selected it first runs "LPUSH (needed to benchmark LRANGE)" with the same
# -n (whether or not lpush is selected), 3-byte values from a fixed-seed generator, so both
# servers hold the same list; -n must therefore be at least 600 for LRANGE_600 to read 600.
COLL_TESTS="lpush,rpush,lpop,rpop,sadd,hset,spop,zadd,zpopmin"
LRANGE_TESTS="lrange_100,lrange_300,lrange_500,lrange_600"
PIPELINES=(1 64)
SERVERS=(redis keyshift)

# ---- helpers -------------------------------------------------------------------------------
log() { printf 'bench: %s\n' "$*" >&2; }
die() { printf 'bench: error: %s\n' "$*" >&2; exit 1; }

need_bin() { # name path
    local resolved
    resolved=$(command -v -- "$2" 2>/dev/null) || die "$1 not found: '$2' (install it or set the matching *_BIN variable)"
    [[ -x $resolved ]] || die "$1 is not executable: $resolved"
    printf '%s\n' "$resolved"
}

is_number() { [[ $1 =~ ^[0-9]+([.][0-9]+)?$|^[.][0-9]+$ ]]; }
positive_int() { # name value
    if [[ ! $2 =~ ^[0-9]+$ ]] || ((10#$2 < 1)); then
        die "$1 must be a positive integer, got '$2'"
    fi
}

scaled() { # base scale -> round(base*scale), at least 1
    awk -v b="$1" -v s="$2" 'BEGIN { n = int(b * s + 0.5); if (n < 1) n = 1; print n }'
}

# ---- validate inputs -----------------------------------------------------------------------
command -v python3 >/dev/null || die "python3 not found"
command -v taskset >/dev/null || die "taskset not found (util-linux)"
command -v timeout >/dev/null || die "timeout not found (coreutils)"
[[ -f $HELPER ]] || die "helper missing: $HELPER"
if [[ ! -e $KEYSHIFT_BIN ]]; then
    die "keyshift binary not found: $KEYSHIFT_BIN (build it: cmake -S $REPO_ROOT -B $REPO_ROOT/build -G Ninja -DCMAKE_BUILD_TYPE=Release && ninja -C $REPO_ROOT/build keyshift, or set KEYSHIFT_BIN)"
fi
[[ -x $KEYSHIFT_BIN ]] || die "keyshift binary is not executable: $KEYSHIFT_BIN"
KEYSHIFT_BIN=$(cd -- "$(dirname -- "$KEYSHIFT_BIN")" && pwd)/$(basename -- "$KEYSHIFT_BIN")
REDIS_SERVER_BIN=$(need_bin redis-server "$REDIS_SERVER_BIN")
REDIS_BENCHMARK_BIN=$(need_bin redis-benchmark "$REDIS_BENCHMARK_BIN")
REDIS_CLI_BIN=$(need_bin redis-cli "$REDIS_CLI_BIN")

is_number "$BENCH_SCALE" || die "BENCH_SCALE must be a positive number, got '$BENCH_SCALE'"
for knob in ROUNDS BENCH_CLIENTS MEMORY_KEYS COLL_MEMORY_KEYS PING_RETRIES BENCH_TIMEOUT; do
    positive_int "$knob" "${!knob}"
done
for t in $BENCH_TRANSPORTS; do [[ $t == tcp || $t == unix ]] || die "BENCH_TRANSPORTS: unknown transport '$t' (tcp, unix)"; done
[[ -n ${BENCH_TRANSPORTS// /} ]] || die "BENCH_TRANSPORTS is empty"
N_P1=${N_P1:-$(scaled 200000 "$BENCH_SCALE")}
N_P64=${N_P64:-$(scaled 2000000 "$BENCH_SCALE")}
positive_int N_P1 "$N_P1"
positive_int N_P64 "$N_P64"
declare -A N_FOR=([1]=$N_P1 [64]=$N_P64)
N_COLL_P1=${N_COLL_P1:-$(scaled 200000 "$BENCH_SCALE")}
N_COLL_P64=${N_COLL_P64:-$(scaled 2000000 "$BENCH_SCALE")}
N_LRANGE_P1=${N_LRANGE_P1:-$(scaled 100000 "$BENCH_SCALE")}
N_LRANGE_P64=${N_LRANGE_P64:-$(scaled 200000 "$BENCH_SCALE")}
for knob in N_COLL_P1 N_COLL_P64 N_LRANGE_P1 N_LRANGE_P64; do positive_int "$knob" "${!knob}"; done
((N_LRANGE_P1 >= 600 && N_LRANGE_P64 >= 600)) ||
    die "N_LRANGE_P1/N_LRANGE_P64 must be >= 600 (the list LRANGE_600 reads holds -n elements)"
declare -A N_COLL_FOR=([1]=$N_COLL_P1 [64]=$N_COLL_P64)
declare -A N_LRANGE_FOR=([1]=$N_LRANGE_P1 [64]=$N_LRANGE_P64)
for g in $BENCH_GROUPS; do [[ $g == strings || $g == collections ]] || die "BENCH_GROUPS: unknown group '$g' (strings, collections)"; done
[[ -n ${BENCH_GROUPS// /} ]] || die "BENCH_GROUPS is empty"
for k in $MEMORY_TYPES; do [[ $k =~ ^(strings|hash|set|zset)$ ]] || die "MEMORY_TYPES: unknown type '$k' (strings hash set zset)"; done

NCPU=$(nproc 2>/dev/null || echo 1)
((SERVER_CPU < NCPU && CLIENT_CPU < NCPU)) ||
    die "SERVER_CPU=$SERVER_CPU / CLIENT_CPU=$CLIENT_CPU out of range: this machine has $NCPU CPU(s)"
((SERVER_CPU != CLIENT_CPU)) || log "warning: servers and client share CPU $SERVER_CPU"

# ---- work dir, servers, cleanup ------------------------------------------------------------
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ks-bench.XXXXXX")
RESULTS="$WORK/results"
mkdir -p "$RESULTS" "$WORK/redis" "$WORK/keyshift"

# Run a private copy: another engineer rebuilding build/keyshift mid-run must not swap the
# binary between the memory phase and the benchmark phase.
cp -- "$KEYSHIFT_BIN" "$WORK/keyshift-under-test" || die "could not copy $KEYSHIFT_BIN"
KEYSHIFT_SRC=$KEYSHIFT_BIN
KEYSHIFT_BIN="$WORK/keyshift-under-test"

declare -A PID=() PORT=() SOCK=() SLOG=()
CLIENT_PID=""

stop_server() { # name
    local name=$1 pid=${PID[$1]:-} i
    [[ -n $pid ]] || return 0
    if kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid" 2>/dev/null || true
        for ((i = 0; i < 50; i++)); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        if kill -0 "$pid" 2>/dev/null; then
            log "$name (pid $pid) ignored SIGTERM; sending SIGKILL"
            kill -KILL "$pid" 2>/dev/null || true
        fi
    fi
    wait "$pid" 2>/dev/null || true
    PID[$name]=""
}

cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    local s
    if [[ -n $CLIENT_PID ]]; then
        kill -TERM "$CLIENT_PID" 2>/dev/null || true
        wait "$CLIENT_PID" 2>/dev/null || true
    fi
    for s in "${SERVERS[@]}"; do stop_server "$s"; done
    if [[ $KEEP_TMP == 1 || $rc -ne 0 ]]; then
        log "work dir kept: $WORK"
    else
        rm -rf -- "$WORK"
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'log "interrupted"; exit 130' INT TERM

cli() { # name args... : redis-cli over the unix socket, bounded so a wedged server cannot hang us
    timeout 10 "$REDIS_CLI_BIN" -s "${SOCK[$1]}" "${@:2}"
}

launch() { # name port sock log
    local name=$1 port=$2 sock=$3 logf=$4
    if [[ $name == redis ]]; then
        taskset -c "$SERVER_CPU" "$REDIS_SERVER_BIN" --port "$port" --bind 127.0.0.1 \
            --unixsocket "$sock" --unixsocketperm 700 --save '' --appendonly no \
            --daemonize no --dir "$WORK/redis" --logfile '' >"$logf" 2>&1 &
    else
        # shellcheck disable=SC2086  # KEYSHIFT_ARGS is deliberately word-split
        (cd "$WORK/keyshift" && exec taskset -c "$SERVER_CPU" "$KEYSHIFT_BIN" serve --port "$port" \
            --bind 127.0.0.1 --unixsocket "$sock" --save '' $KEYSHIFT_ARGS) >"$logf" 2>&1 &
    fi
    PID[$name]=$!
}

start_server() { # name: free port + socket, wait for PING on both transports (bounded)
    local name=$1 attempt i port sock logf tcp_ok unix_ok
    for attempt in 1 2 3; do
        port=$(python3 "$HELPER" free-port) || die "could not pick a free port"
        sock="$WORK/$name.sock"
        logf="$WORK/$name.$attempt.log"
        rm -f -- "$sock"
        PORT[$name]=$port SOCK[$name]=$sock SLOG[$name]=$logf
        launch "$name" "$port" "$sock" "$logf"
        for ((i = 0; i < PING_RETRIES; i++)); do
            if ! kill -0 "${PID[$name]}" 2>/dev/null; then
                wait "${PID[$name]}" 2>/dev/null || true
                PID[$name]=""
                log "$name exited during startup (attempt $attempt, port $port); log tail:"
                tail -n 5 "$logf" >&2 || true
                break
            fi
            tcp_ok=$(timeout 2 "$REDIS_CLI_BIN" -h 127.0.0.1 -p "$port" PING 2>/dev/null || true)
            unix_ok=$(timeout 2 "$REDIS_CLI_BIN" -s "$sock" PING 2>/dev/null || true)
            if [[ $tcp_ok == PONG && $unix_ok == PONG ]]; then
                [[ $(cat "/proc/${PID[$name]}/comm" 2>/dev/null) == taskset ]] &&
                    die "$name: pid ${PID[$name]} is still taskset (exec did not happen?)"
                log "$name up: pid ${PID[$name]}, 127.0.0.1:$port, $sock, cpu $SERVER_CPU"
                return 0
            fi
            sleep 0.1
        done
        if [[ -n ${PID[$name]} ]]; then
            log "$name did not answer PING on tcp and unix after $PING_RETRIES probes; log tail:"
            tail -n 5 "$logf" >&2 || true
            stop_server "$name"
        fi
    done
    die "could not start $name (logs under $WORK)"
}

alive_or_die() { # name context
    kill -0 "${PID[$1]:-0}" 2>/dev/null && return 0
    log "$1 log tail:"
    tail -n 20 "${SLOG[$1]}" >&2 || true
    die "$1 is no longer running ($2)"
}

# Run a client on CLIENT_CPU while watching the server: redis-benchmark spins forever when its
# server disappears, so a dead server stops the client instead of hanging the script.
# stdin is named explicitly: a background job in a script otherwise reads /dev/null.
run_watched() { # server stdin_file stdout_file stderr_file cmd args...
    local server=$1 in=$2 out=$3 err=$4 rc=0
    shift 4
    if [[ $out == "$err" ]]; then
        taskset -c "$CLIENT_CPU" timeout "$BENCH_TIMEOUT" "$@" <"$in" >"$out" 2>&1 &
    else
        taskset -c "$CLIENT_CPU" timeout "$BENCH_TIMEOUT" "$@" <"$in" >"$out" 2>"$err" &
    fi
    CLIENT_PID=$!
    while kill -0 "$CLIENT_PID" 2>/dev/null; do
        if ! kill -0 "${PID[$server]:-0}" 2>/dev/null; then
            kill -TERM "$CLIENT_PID" 2>/dev/null || true
            break
        fi
        sleep 0.5
    done
    wait "$CLIENT_PID" || rc=$?
    CLIENT_PID=""
    return "$rc"
}

rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }

# ---- header --------------------------------------------------------------------------------
echo "keyshift side-by-side benchmark ($(date -u '+%Y-%m-%d %H:%M:%S UTC'))"
echo "  keyshift:        $KEYSHIFT_SRC (sha256 $(sha256sum "$KEYSHIFT_BIN" | cut -c1-12), $("$KEYSHIFT_BIN" --version 2>/dev/null | head -n 1 || echo '?'))"
echo "  repo:            $REPO_ROOT @ $(git -C "$REPO_ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$REPO_ROOT" diff --quiet HEAD -- 2>/dev/null || echo ' (dirty tree)')"
echo "  redis-server:    $REDIS_SERVER_BIN ($("$REDIS_SERVER_BIN" --version | head -n 1))"
echo "  redis-benchmark: $REDIS_BENCHMARK_BIN ($("$REDIS_BENCHMARK_BIN" --version | head -n 1))"
echo "  cpus: $NCPU (servers on $SERVER_CPU, client on $CLIENT_CPU); load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "  -c $BENCH_CLIENTS; rounds $ROUNDS; transports: $BENCH_TRANSPORTS; groups: $BENCH_GROUPS"
echo "  strings:     -P 1 -n $N_P1; -P 64 -n $N_P64; tests: $TESTS"
echo "  collections: -P 1 -n $N_COLL_P1 (LRANGE -n $N_LRANGE_P1); -P 64 -n $N_COLL_P64 (LRANGE -n $N_LRANGE_P64); tests: $COLL_TESTS,$LRANGE_TESTS"
[[ $SKIP_MEMORY == 1 ]] || echo "  memory: $MEMORY_TYPES (strings $MEMORY_KEYS keys, collections $COLL_MEMORY_KEYS keys)"

{
    echo "pipelines=${PIPELINES[*]}"
    echo "rounds=$ROUNDS"
    echo "transports=$BENCH_TRANSPORTS"
    echo "clients=$BENCH_CLIENTS"
    echo "n_P1=$N_P1"
    echo "n_P64=$N_P64"
    echo "n_coll_P1=$N_COLL_P1"
    echo "n_coll_P64=$N_COLL_P64"
    echo "n_lrange_P1=$N_LRANGE_P1"
    echo "n_lrange_P64=$N_LRANGE_P64"
    echo "groups=$BENCH_GROUPS"
    echo "skip_bench=$SKIP_BENCH"
} >"$RESULTS/meta.txt"

# ---- memory: per type, freshly started servers, FLUSHALL, load exactly COUNT keys, VmRSS ----
memory_load() { # kind count
    local kind=$1 count=$2 s mem base out dbsize expected cmdline got rss info used enc
    log "generating $count $kind commands"
    python3 "$HELPER" gen-load "$kind" "$count" "$WORK/load.resp" || die "could not generate the $kind load"
    python3 "$HELPER" checks "$kind" "$count" >"$WORK/checks.txt" || die "could not generate the $kind checks"
    for s in "${SERVERS[@]}"; do start_server "$s"; done
    mem="$RESULTS/memory_$kind.txt.partial"
    echo "keys=$count" >"$mem"
    for s in "${SERVERS[@]}"; do
        [[ $(cli "$s" FLUSHALL) == OK ]] || die "$s: FLUSHALL failed"
        base=$(rss_kb "${PID[$s]}")
        log "$s: loading $count $kind keys via redis-cli --pipe"
        if ! run_watched "$s" "$WORK/load.resp" "$WORK/pipe.out" "$WORK/pipe.out" \
            "$REDIS_CLI_BIN" -s "${SOCK[$s]}" --pipe; then
            cat "$WORK/pipe.out" >&2
            alive_or_die "$s" "during the $kind memory load"
            die "$s: redis-cli --pipe failed"
        fi
        out=$(cat "$WORK/pipe.out")
        grep -q "errors: 0, replies: $count\$" <<<"$out" ||
            { printf '%s\n' "$out" >&2; die "$s: --pipe did not report 0 errors and $count replies ($kind)"; }
        dbsize=$(cli "$s" DBSIZE)
        [[ $dbsize == "$count" ]] || die "$s: DBSIZE is '$dbsize' after the $kind load, expected $count"
        while IFS=$'\t' read -r expected cmdline; do
            # shellcheck disable=SC2086  # cmdline is space-separated words without spaces
            got=$(cli "$s" $cmdline)
            [[ $got == "$expected" ]] || die "$s: '$cmdline' gave '$got', expected '$expected'"
        done <"$WORK/checks.txt"
        case $kind in
        strings) enc=$(cli "$s" OBJECT ENCODING key:0 2>&1 || true) ;;
        *) enc=$(cli "$s" OBJECT ENCODING "$kind:0" 2>&1 || true) ;;
        esac
        alive_or_die "$s" "after the $kind memory load"
        rss=$(rss_kb "${PID[$s]}")
        info=$(cli "$s" INFO memory 2>&1 || true)
        used=$(tr -d '\r' <<<"$info" | awk -F: '$1 == "used_memory" { print $2 }')
        if [[ -z $used ]]; then
            used="reply: $(tr -d '\r' <<<"$info" | head -n 1 | cut -c1-40)"
        fi
        {
            echo "${s}_rss_base_kb=$base"
            echo "${s}_rss_kb=$rss"
            echo "${s}_used_memory=$used"
            echo "${s}_dbsize=$dbsize"
            echo "${s}_encoding=${enc//[$'\r\n ']/}"
        } >>"$mem"
        log "$s: $kind: VmRSS ${rss} kB (before load ${base} kB), used_memory $used, encoding $enc"
    done
    mv "$mem" "$RESULTS/memory_$kind.txt"
    rm -f -- "$WORK/load.resp"
    # Stop both: the next type, and the benchmark, start from servers whose allocators never
    # held this load.
    for s in "${SERVERS[@]}"; do stop_server "$s"; done
}

if [[ $SKIP_MEMORY != 1 ]]; then
    for kind in $MEMORY_TYPES; do
        if [[ $kind == strings ]]; then
            memory_load strings "$MEMORY_KEYS"
        else
            memory_load "$kind" "$COLL_MEMORY_KEYS"
        fi
    done
fi

# ---- throughput/latency: interleaved redis, keyshift, redis, keyshift ... ------------------
bench_run() { # server transport pipeline n tests csv : one redis-benchmark run, checked
    local s=$1 transport=$2 pipeline=$3 n=$4 tests=$5 csv=$6 target
    if [[ $transport == tcp ]]; then
        target=(-h 127.0.0.1 -p "${PORT[$s]}")
    else
        target=(-s "${SOCK[$s]}")
    fi
    if ! run_watched "$s" /dev/null "$csv" "$csv.err" "$REDIS_BENCHMARK_BIN" "${target[@]}" \
        -c "$BENCH_CLIENTS" -n "$n" -P "$pipeline" -t "$tests" --csv; then
        cat "$csv.err" >&2
        alive_or_die "$s" "during redis-benchmark"
        die "redis-benchmark failed against $s ($transport -P $pipeline -t $tests)"
    fi
    alive_or_die "$s" "after redis-benchmark"
}

expect_rows() { # csv expected_count regex context
    local rows
    rows=$(grep -cE "$3" "$1" || true)
    if ((rows != $2)); then
        cat "$1" "$1.err" >&2
        die "redis-benchmark $4 gave $rows of $2 CSV rows"
    fi
}

if [[ $SKIP_BENCH != 1 ]]; then
    for s in "${SERVERS[@]}"; do start_server "$s"; done
    for ((round = 1; round <= ROUNDS; round++)); do
        for group in $BENCH_GROUPS; do
            for transport in $BENCH_TRANSPORTS; do
                for pipeline in "${PIPELINES[@]}"; do
                    for s in "${SERVERS[@]}"; do
                        if [[ $group == strings ]]; then
                            n=${N_FOR[$pipeline]}
                            csv="$RESULTS/${transport}_P${pipeline}_${s}_r${round}.csv"
                            log "round $round/$ROUNDS: strings: $s $transport -P $pipeline -n $n"
                            bench_run "$s" "$transport" "$pipeline" "$n" "$TESTS" "$csv"
                            expect_rows "$csv" 6 '^"(PING_INLINE|PING_MBULK|SET|GET|INCR|MSET \(10 keys\))",' \
                                "against $s ($transport -P $pipeline)"
                        else
                            # Each part starts from an empty keyspace, so every run (and both
                            # servers) see the same data: mylist/myset/myhash/myzset from scratch.
                            csv="$RESULTS/coll_${transport}_P${pipeline}_${s}_r${round}.csv"
                            n=${N_COLL_FOR[$pipeline]}
                            [[ $(cli "$s" FLUSHALL) == OK ]] || die "$s: FLUSHALL failed"
                            log "round $round/$ROUNDS: collections: $s $transport -P $pipeline -n $n"
                            bench_run "$s" "$transport" "$pipeline" "$n" "$COLL_TESTS" "$csv.part1"
                            expect_rows "$csv.part1" 9 '^"(LPUSH|RPUSH|LPOP|RPOP|SADD|HSET|SPOP|ZADD|ZPOPMIN)",' \
                                "against $s ($transport -P $pipeline, collections)"
                            n=${N_LRANGE_FOR[$pipeline]}
                            [[ $(cli "$s" FLUSHALL) == OK ]] || die "$s: FLUSHALL failed"
                            log "round $round/$ROUNDS: collections: $s $transport -P $pipeline -n $n (LRANGE)"
                            bench_run "$s" "$transport" "$pipeline" "$n" "$LRANGE_TESTS" "$csv.part2"
                            expect_rows "$csv.part2" 5 '^"(LPUSH \(needed to benchmark LRANGE\)|LRANGE_[0-9]+ \(first [0-9]+ elements\))",' \
                                "against $s ($transport -P $pipeline, LRANGE)"
                            cat "$csv.part1" "$csv.part2" >"$csv"
                        fi
                    done
                done
            done
        done
    done
fi

python3 "$HELPER" report "$RESULTS" || die "report failed"
