#!/usr/bin/python3
"""`keyshift bench` against Debian's redis-server 7.0 and `keyshift serve`, over TCP and the
unix socket: the commands the servers actually executed (INFO commandstats) match the
requests made, -q and --csv parse like redis-benchmark's own, the --json file validates
against the schema printed in man/keyshift-bench.1, workload mixes and key patterns create
the keys they should, and --prefill reaches its share of maxmemory.

Run: KEYSHIFT_BIN=build/keyshift /usr/bin/python3 tests/integration/test_bench.py [NAME...]
"""

import json
import os
import pty
import re
import signal
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import REPO, HOST, ensure_tools, eq, keyshift_bin, ok, run_tests, test  # noqa: E402

QUIET_LINE = re.compile(r"^(?P<title>.+): (?P<rps>\d+\.\d{2}) requests per second, "
                        r"p50=(?P<p50>\d+\.\d{3}) msec$")
MAN_PAGE = os.path.join(REPO, "man", "keyshift-bench.1")


def bench(*args, check=True, timeout=60):
    p = subprocess.run([keyshift_bin(), "bench"] + [str(a) for a in args],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
    out = p.stdout.decode("utf-8", "replace")
    err = p.stderr.decode("utf-8", "replace")
    if check and p.returncode != 0:
        raise AssertionError("keyshift bench %s failed (%d): %s %s" % (args, p.returncode, out,
                                                                      err))
    return p.returncode, out, err


def commandstats(r):
    """{command: calls} from INFO commandstats (a python3-redis client)."""
    stats = r.info("commandstats")
    return {k[len("cmdstat_"):]: v["calls"] for k, v in stats.items()}


def where(srv, unix):
    if unix:
        return ["-s", srv.unixsocket]
    return ["-h", HOST, "-p", srv.port]


def start_redis(h, *directives):
    """redis-server with a unix socket in its work dir as well as TCP."""
    srv = h.redis_server("--unixsocket", "redis.sock", "--unixsocketperm", "700", *directives)
    srv.unixsocket = os.path.join(srv.workdir, "redis.sock")
    return srv


def quiet_lines(text):
    """The -q result lines; redis-benchmark draws progress with \\r on the same lines."""
    return [line.split("\r")[-1].strip() for line in text.split("\n")
            if line.split("\r")[-1].strip()]


# ---- schema validation (the schema lives in the man page) -----------------------------

def man_schema():
    with open(MAN_PAGE, encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"\.\\\" schema-begin\n(.*?)\.\\\" schema-end", text, re.S)
    ok(m is not None, "man/keyshift-bench.1 has no schema-begin/schema-end block")
    body = "\n".join(line for line in m.group(1).splitlines() if not line.startswith("."))
    return json.loads(body.replace("\\e", "\\").replace("\\-", "-"))


def validate(value, schema, path="$", root=None):
    """A JSON Schema subset: type (string or list), properties, required,
    additionalProperties: false, items, enum, minimum, and {"$ref": name} for the root's
    "definitions". Returns a list of problems."""
    root = schema if root is None else root
    if "$ref" in schema:
        return validate(value, root["definitions"][schema["$ref"]], path, root)
    problems = []
    types = schema.get("type")
    if types is not None:
        types = types if isinstance(types, list) else [types]
        pytype = {dict: "object", list: "array", str: "string", bool: "boolean",
                  type(None): "null"}.get(type(value))
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            pytype = "integer" if float(value).is_integer() else "number"
        if pytype not in types and not (pytype == "integer" and "number" in types):
            return ["%s: %r is %s, not %s" % (path, value, pytype, types)]
    if "enum" in schema and value not in schema["enum"]:
        problems.append("%s: %r not in %r" % (path, value, schema["enum"]))
    if "minimum" in schema and isinstance(value, (int, float)) and value < schema["minimum"]:
        problems.append("%s: %r below %r" % (path, value, schema["minimum"]))
    if isinstance(value, dict):
        props = schema.get("properties", {})
        for k in schema.get("required", []):
            if k not in value:
                problems.append("%s: missing %s" % (path, k))
        for k, v in value.items():
            if k in props:
                problems += validate(v, props[k], path + "." + k, root)
            elif schema.get("additionalProperties") is False:
                problems.append("%s: unexpected member %s" % (path, k))
    if isinstance(value, list) and "items" in schema:
        for i, v in enumerate(value):
            problems += validate(v, schema["items"], "%s[%d]" % (path, i), root)
    return problems


# ---- tests ------------------------------------------------------------------------------

TESTS = ["set", "get", "incr", "lpush", "lrange_100", "mset", "sadd", "hset", "zadd", "rpop",
         "xadd"]


def expected_calls(n, tests):
    # LRANGE needs its list: redis-benchmark runs "LPUSH (needed to benchmark LRANGE)" too.
    calls = {t.split("_")[0]: n for t in tests}
    calls["lpush"] = 2 * n
    return calls


def check_counts(h, srv, unix, extra=(), tests=TESTS):
    r = srv.redis()
    r.flushall()
    r.config_resetstat()
    n = 1500
    bench(*where(srv, unix), "-t", ",".join(tests), "-n", n, "-c", 7, "-P", 4, "-r", 1000, "-q",
          *extra)
    got = commandstats(r)
    for cmd, calls in expected_calls(n, tests).items():
        eq(got.get(cmd), calls, "%s calls on %s (unix=%s)" % (cmd, srv.name, unix))
    names = [k.decode() for k in r.scan_iter(count=1000)]
    fixed = {"mylist", "myset", "myhash", "myzset", "mystream"}
    ok(all(k in fixed or re.fullmatch(r"(key|counter):\d{12}", k) for k in names), names[:20])
    for prefix in ("key:", "counter:"):
        numbers = [int(k[len(prefix):]) for k in names if k.startswith(prefix)]
        ok(100 < len(numbers) <= 1000 and max(numbers) < 1000,
           "%s keys drawn from -r 1000: %d" % (prefix, len(numbers)))


@test
def redis_server_tcp_and_unix_execute_exactly_the_requests_made(h):
    srv = start_redis(h)
    check_counts(h, srv, unix=False)
    check_counts(h, srv, unix=True)


@test
def keyshift_serve_tcp_and_unix_execute_exactly_the_requests_made(h):
    srv = h.keyshift()
    check_counts(h, srv, unix=False)
    check_counts(h, srv, unix=True, extra=("--threads", 2))


@test
def quiet_and_csv_output_parse_like_redis_benchmarks(h):
    ensure_tools(("redis-benchmark",))
    srv = start_redis(h)
    tests = "ping,set,get,lpush,lrange_100,mset"  # redis-benchmark 7.0 has no xadd test
    rb = subprocess.run(["redis-benchmark", "-h", HOST, "-p", str(srv.port), "-t", tests,
                         "-n", "2000", "-q"], stdout=subprocess.PIPE, timeout=60, check=True)
    _, ks, _ = bench("-h", HOST, "-p", srv.port, "-t", tests, "-n", 2000, "-q")
    rb_lines = quiet_lines(rb.stdout.decode())
    ks_lines = quiet_lines(ks)
    eq(len(ks_lines), len(rb_lines), "same number of -q lines:\n%s\n---\n%s" % (ks, rb_lines))
    for mine, theirs in zip(ks_lines, rb_lines):
        a, b = QUIET_LINE.match(mine), QUIET_LINE.match(theirs)
        ok(a is not None, "keyshift -q line does not parse: %r" % mine)
        ok(b is not None, "redis-benchmark -q line does not parse: %r" % theirs)
        eq(a.group("title"), b.group("title"))
        ok(float(a.group("rps")) > 0 and float(a.group("p50")) > 0, mine)
    rb = subprocess.run(["redis-benchmark", "-h", HOST, "-p", str(srv.port), "-t", "set,get",
                         "-n", "1000", "--csv"], stdout=subprocess.PIPE, timeout=60, check=True)
    _, ks, _ = bench("-h", HOST, "-p", srv.port, "-t", "set,get", "-n", 1000, "--csv")
    rb_rows = [line.split("\r")[-1] for line in rb.stdout.decode().splitlines() if line.strip()]
    ks_rows = ks.splitlines()
    eq(ks_rows[0], rb_rows[0], "CSV header")
    eq([row.split(",")[0] for row in ks_rows], [row.split(",")[0] for row in rb_rows])
    for row in ks_rows[1:]:
        eq(len(row.split(",")), 8, row)


@test
def json_file_validates_against_the_man_page_schema(h):
    schema = man_schema()
    srv = h.keyshift("--maxmemory", "64mb")
    path = h.path("tests.json")
    bench("-s", srv.unixsocket, "-t", "set,get,mset", "-n", 1000, "--runs", 2, "-q",
          "--json", path)
    with open(path) as f:
        doc = json.load(f)
    eq(validate(doc, schema), [], "tests.json against the schema")
    eq(doc["options"]["transport"], "unix")
    eq(doc["target"]["server_name"], "keyshift")
    eq(doc["target"]["maxmemory"], 64 << 20)
    eq(doc["client"]["cpus"], os.cpu_count())
    eq(len(doc["runs"]), 2)
    eq([t["name"] for t in doc["tests"]], ["SET", "GET", "MSET (10 keys)"])
    for t in doc["tests"]:
        eq(t["requests"], 2000, "averaged test counts both runs")
        eq(sum(c for _, c in t["histogram_ns"]), t["requests"], "histogram counts")
        ok("histogram_ns" not in t["commands"][0], "one command: its histogram is the test's")
        lat = t["latency_ms"]
        ok(lat["min"] <= lat["p50"] <= lat["p90"] <= lat["p99"] <= lat["p99_9"] <= lat["max"],
           "percentiles in order: %r" % lat)
    path2 = h.path("workload.json")
    redis = start_redis(h, "--maxmemory", "32mb")
    bench("-h", HOST, "-p", redis.port, "--ratio", "1:1", "--prefill", 2000, "-n", 2000,
          "--key-maximum", 4999, "-q", "--json", path2)
    with open(path2) as f:
        doc2 = json.load(f)
    eq(validate(doc2, schema), [], "workload.json against the schema")
    eq(doc2["target"]["server_name"], "redis")
    eq(doc2["target"]["server_version"], redis.redis().info("server")["redis_version"])
    eq(doc2["prefill"]["keys"], 2000)
    eq([c["name"] for c in doc2["tests"][0]["commands"]], ["SET", "GET"])
    for c in doc2["tests"][0]["commands"]:
        eq(sum(n for _, n in c["histogram_ns"]), c["requests"], c["name"] + " histogram")


@test
def workload_ratio_and_sequential_keys_give_the_exact_mix(h):
    for srv, unix in ((start_redis(h), False), (h.keyshift(), True)):
        r = srv.redis()
        r.flushall()
        r.config_resetstat()
        path = h.path("mix-%s.json" % srv.name)
        bench(*where(srv, unix), "--ratio", "1:3", "--key-pattern", "S:S", "--key-minimum",
              100, "--key-maximum", 1099, "-n", 4000, "-d", 16, "-q", "--json", path)
        got = commandstats(r)
        eq(got.get("set"), 1000, srv.name)
        eq(got.get("get"), 3000, srv.name)
        eq(r.dbsize(), 1000, "sequential SETs cover the key range once")
        keys = {int(k.decode().split("-")[1]) for k in r.scan_iter(count=1000)}
        eq(keys, set(range(100, 1100)), "keys memtier-100..memtier-1099")
        eq(r.get("memtier-100"), b"x" * 16)
        with open(path) as f:
            cmds = {c["name"]: c for c in json.load(f)["tests"][0]["commands"]}
        eq(cmds["GET"]["hits"] + cmds["GET"]["misses"], 3000)
        r.flushall()
        r.config_resetstat()
        _, out, _ = bench(*where(srv, unix), "--ratio", "0:1", "-n", 500, "-q", "--json", path)
        eq(commandstats(r).get("set"), None, "read-only workload sends no SET")
        eq(commandstats(r).get("get"), 500)
        with open(path) as f:
            get = json.load(f)["tests"][0]["commands"][0]
        eq((get["hits"], get["misses"]), (0, 500), "every GET misses on an empty server")


@test
def random_and_gaussian_patterns_stay_in_range_and_gaussian_clusters(h):
    srv = h.keyshift()
    r = srv.redis()
    bench("-s", srv.unixsocket, "--ratio", "1:0", "--key-pattern", "R:R", "--key-maximum", 99,
          "-n", 3000, "-q")
    keys = {int(k.decode().split("-")[1]) for k in r.scan_iter(count=1000)}
    ok(keys <= set(range(100)), "random keys within 0..99")
    ok(len(keys) > 90, "3000 random SETs over 100 keys hit nearly all: %d" % len(keys))
    r.flushall()
    r.config_resetstat()
    bench("-s", srv.unixsocket, "--ratio", "1:0", "--key-pattern", "G:G", "--key-maximum",
          9999, "-n", 3000, "-q")
    eq(commandstats(r).get("set"), 3000)
    keys = [int(k.decode().split("-")[1]) for k in r.scan_iter(count=1000)]
    middle = sum(1 for k in keys if 3333 <= k <= 6666)
    edges = sum(1 for k in keys if k < 1000 or k > 8999)
    # A normal distribution with sigma = range/6 puts 68 % within one sigma of the middle
    # and about 1.6 % beyond 2.4 sigma; a uniform one would give 33 % and 20 %.
    ok(middle > 0.55 * len(keys), "gaussian keys cluster in the middle: %d/%d" %
       (middle, len(keys)))
    ok(edges < 0.05 * len(keys), "gaussian keys are rare at the edges: %d/%d" %
       (edges, len(keys)))


@test
def prefill_reaches_the_requested_share_of_maxmemory(h):
    for srv, unix in ((start_redis(h, "--maxmemory", "48mb"), False),
                      (h.keyshift("--maxmemory", "48mb"), True)):
        r = srv.redis()
        path = h.path("prefill-%s.json" % srv.name)
        bench(*where(srv, unix), "--ratio", "0:1", "--prefill", "35%", "-d", 64, "-n", 1000,
              "-q", "--json", path)
        used = r.info("memory")["used_memory"]
        share = used / (48 << 20)
        ok(0.35 * 0.998 <= share <= 0.40, "%s used_memory share %.3f" % (srv.name, share))
        with open(path) as f:
            pre = json.load(f)["prefill"]
        eq(pre["keys"], r.dbsize(), "prefill keys = keys in the db")
        ok(abs(pre["share"] - share) < 0.02, "reported share %.3f vs %.3f" %
           (pre["share"], share))
    srv = start_redis(h)
    rc, _, err = bench("-h", HOST, "-p", srv.port, "--prefill", "30%", "-n", 10, check=False)
    eq(rc, 1)
    ok("maxmemory" in err, err)


@test
def embedded_engine_is_used_without_a_target(h):
    path = h.path("embedded.json")
    _, out, _ = bench("-t", "set,get", "-n", 2000, "-q", "--json", path)
    eq([QUIET_LINE.match(line).group("title") for line in out.splitlines()], ["SET", "GET"])
    with open(path) as f:
        doc = json.load(f)
    eq(doc["options"]["embedded"], True)
    eq(doc["options"]["transport"], "unix")
    eq(doc["target"]["server_name"], "keyshift")
    ok(not os.path.exists(doc["options"]["target"]), "the private socket is removed afterwards")
    bench("--engine-maxmemory", "16mb", "--ratio", "0:1", "--prefill", "25%", "-n", 100, "-q",
          "--json", path)
    with open(path) as f:
        doc = json.load(f)
    eq(doc["target"]["maxmemory"], 16 << 20)
    ok(0.25 * 0.998 <= doc["prefill"]["share"] <= 0.30, doc["prefill"])


@test
def custom_command_substitutes_rand_int_and_errors_stop_the_run(h):
    srv = start_redis(h)
    r = srv.redis()
    _, out, _ = bench("-h", HOST, "-p", srv.port, "-r", 50, "-n", 1000, "-q", "--",
                      "HSET", "h:__rand_int__", "f", "__rand_int__")
    ok(out.startswith("HSET h:__rand_int__ f __rand_int__: "), out)
    keys = sorted(k.decode() for k in r.keys("h:*"))
    ok(0 < len(keys) <= 50, keys)
    ok(all(re.fullmatch(r"h:\d{12}", k) for k in keys), keys)
    r.set("str", "x")
    rc, _, err = bench("-h", HOST, "-p", srv.port, "-n", 100, "-q", "--", "LPUSH", "str", "y",
                       check=False)
    eq(rc, 1)
    ok("Error from server: WRONGTYPE" in err, err)


@test
def test_time_runs_for_a_while_and_counts_what_it_sent(h):
    srv = h.keyshift()
    r = srv.redis()
    r.config_resetstat()
    path = h.path("timed.json")
    bench("-s", srv.unixsocket, "-t", "incr", "--test-time", "0.5", "-c", 4, "-P", 8, "-q",
          "--json", path)
    with open(path) as f:
        t = json.load(f)["tests"][0]
    ok(0.5 <= t["seconds"] < 30, "ran for --test-time, then stopped: %r" % t["seconds"])
    eq(commandstats(r).get("incr"), t["requests"])


@test
def bad_input_gets_a_clear_error_and_exit_status(h):
    cases = [(["-t", "set,gett"], 2, "unknown test 'gett'"),
             (["--ratio", "1"], 2, "--ratio"),
             (["--key-pattern", "X:R"], 2, "unknown key pattern"),
             (["--prefill", "12k"], 2, "--prefill"),
             (["-u", "http://x"], 2, "invalid URL"),
             (["--test-time", "1", "-n", "10"], 2, "not both"),
             (["--prefill", "100", "-t", "get"], 2, "-t and -r belong to"),
             (["--ratio", "1:1", "-r", "10"], 2, "-t and -r belong to"),
             (["--ratio", "1:1", "--", "GET", "x"], 2, "cannot be combined"),
             (["-h", HOST, "-p", 6379, "--engine-maxmemory", "1mb"], 2, "embedded engine")]
    for args, code, text in cases:
        rc, _, err = bench(*args, check=False)
        eq(rc, code, "%s: %s" % (args, err))
        ok(text in err, "%s: %s" % (args, err))
    rc, _, err = bench("-h", HOST, "-p", 1, "-n", 10, check=False)
    eq(rc, 1)
    ok("connect to 127.0.0.1:1" in err, err)


@test
def a_server_that_goes_away_mid_run_is_an_error_not_a_crash(h):
    srv = start_redis(h)
    p = subprocess.Popen([keyshift_bin(), "bench", "-h", HOST, "-p", str(srv.port), "-t", "set",
                          "--test-time", "20", "-c", "4", "-q"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    try:
        srv.redis().ping()
        deadline = time.monotonic() + 10
        while srv.redis().info("commandstats").get("cmdstat_set", {}).get("calls", 0) == 0:
            ok(time.monotonic() < deadline, "keyshift bench sent nothing within 10 s")
            time.sleep(0.05)
        srv.stop(signal.SIGKILL)
        _, err = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    eq(p.returncode, 1, err.decode())
    ok(re.search(rb"closed the connection|read failed|write failed", err) is not None, err)


ALLOC_COUNTER = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>
static atomic_long calls;
static void* (*real_malloc)(size_t);
static void* (*real_new)(size_t);
void* malloc(size_t n) {
  if (!real_malloc) real_malloc = dlsym(RTLD_NEXT, "malloc");
  atomic_fetch_add(&calls, 1);
  return real_malloc(n);
}
void* _Znwm(size_t n) {
  if (!real_new) real_new = dlsym(RTLD_NEXT, "_Znwm");
  atomic_fetch_add(&calls, 1);
  return real_new(n);
}
__attribute__((destructor)) static void report(void) {
  char buf[64];
  int len = snprintf(buf, sizeof buf, "\nallocations=%ld\n", atomic_load(&calls));
  write(2, buf, len);
}
"""


@test
def the_load_generator_does_not_allocate_per_request(h):
    # malloc and operator new counted by an LD_PRELOAD shim: 20x the requests must not
    # mean more allocations (setup, threads and reports allocate a fixed amount).
    src, lib = h.path("count.c"), h.path("count.so")
    with open(src, "w") as f:
        f.write(ALLOC_COUNTER)
    subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-o", lib, src, "-ldl"], check=True)
    srv = h.keyshift()

    def allocations(*args):
        p = subprocess.run([keyshift_bin(), "bench", "-s", srv.unixsocket] + list(args),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120,
                           env=dict(os.environ, LD_PRELOAD=lib))
        eq(p.returncode, 0, p.stderr.decode())
        return int(re.search(rb"allocations=(\d+)", p.stderr).group(1))

    for shape in (["-t", "set,get,lrange_100,mset", "-r", "1000", "-P", "8"],
                  ["--ratio", "1:3", "--key-pattern", "G:R", "-P", "2"]):
        small = allocations(*shape, "-n", "5000", "-q")
        large = allocations(*shape, "-n", "100000", "-q")
        ok(large - small < 50, "%s: %d allocations for 5000 requests, %d for 100000" %
           (shape, small, large))


@test
def progress_shows_on_a_terminal_only(h):
    srv = h.keyshift()
    _, _, err = bench("-s", srv.unixsocket, "-t", "get", "--test-time", "0.6", "-q")
    eq(err, "", "no progress when stderr is not a terminal")
    pid, fd = pty.fork()
    if pid == 0:
        os.execv(keyshift_bin(), [keyshift_bin(), "bench", "-s", srv.unixsocket, "-t", "get",
                                  "--test-time", "0.6", "-q"])
    data = b""
    while True:
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            break
        if not chunk:
            break
        data += chunk
    os.waitpid(pid, 0)
    text = data.decode("utf-8", "replace")
    ok(re.search(r"GET: \d+ ops/s, \d+ requests, \d+\.\d s", text) is not None, repr(text))


if __name__ == "__main__":
    run_tests()
