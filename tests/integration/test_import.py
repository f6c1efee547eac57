#!/usr/bin/python3
"""`keyshift import` against Debian's redis-server 7.0 as source and target (TCP and unix
socket, with and without a password), and into the embedded engine's data file.

Ground truth is ../shared/corpus/rdb: a file redis-server 7.0.15 loaded must give, imported
into a live redis-server 7.0, the DEBUG DIGEST the corpus recorded for it. Files it refused
(RDB 11 and 12) must give the digest of that server loading `keyshift rdb convert
--rdb-version 10` of the same file: import rebuilds values the target cannot read, and the
two ways must agree. Interrupted imports (kill -9) are rerun and must end with the digest of
an uninterrupted one.

Run: KEYSHIFT_BIN=build/keyshift /usr/bin/python3 tests/integration/test_import.py [NAME...]
"""

import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import HOST, Skip, eq, keyshift_bin, ok, run_tests, test  # noqa: E402
from redis_sources import (client, expect_field_ttl_differences, fill_newer,  # noqa: E402
                           redis8_server, verify_data)

CORPUS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "shared",
                      "corpus", "rdb")


def corpus(name):
    path = os.path.join(CORPUS, name)
    if not os.path.exists(path):
        raise Skip("no corpus at %s" % CORPUS)
    return path


def truth(name):
    with open(corpus(name) + ".json") as f:
        return json.load(f)


def import_(*args, check=None):
    """Runs keyshift import; returns (exit status, stdout, stderr)."""
    p = subprocess.run([keyshift_bin(), "import"] + [str(a) for a in args],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
    out, err = p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")
    if check is not None:
        eq(p.returncode, check, "keyshift import %s: %s%s" % (" ".join(map(str, args)), out, err))
    return p.returncode, out, err


def import_json(*args, check=0):
    rc, out, err = import_(*(list(args) + ["--format", "json"]), check=check)
    try:
        return json.loads(out)
    except ValueError:
        raise AssertionError("not JSON (%d): %r %r" % (rc, out, err))


def url(srv, unix=False):
    if unix:
        return "unix://" + srv.unixsocket
    return "redis://%s:%d" % (HOST, srv.port)


def target(h, name="target", *directives):
    if not hasattr(h, "targets"):
        h.targets = {}
    if name not in h.targets:
        h.counter += 1
        sock = os.path.join(h.tmp, "%s-%d.sock" % (name, h.counter))
        srv = h.redis_server("--unixsocket", sock, *directives, name=name)
        srv.unixsocket = sock
        h.targets[name] = srv
    srv = h.targets[name]
    srv.cli("FLUSHALL")
    return srv


def digest(srv):
    return srv.cli("DEBUG", "DIGEST")


def redis70_loaded(doc):
    srv = doc.get("servers", {}).get("redis-7.0.15")
    return srv is not None and srv.get("loaded") is True


@test
def every_corpus_file_redis_7_0_loads_imports_with_its_ground_truth_digest(h):
    dst = target(h)
    checked = 0
    for path in sorted(glob.glob(os.path.join(corpus(""), "*.rdb"))):
        doc = truth(os.path.basename(path))
        if not redis70_loaded(doc) or doc["servers"]["redis-7.0.15"].get("digest") is None:
            continue
        dst.cli("FLUSHALL")
        rc, out, err = import_(path, "--to", url(dst), "--no-checkpoint")
        if rc != 0 and "module keys cannot be moved" in out + err:
            continue  # no target reads module values without the module
        eq(rc, 0, "%s: %s%s" % (path, out, err))
        eq(digest(dst), doc["servers"]["redis-7.0.15"]["digest"], path)
        checked += 1
    ok(checked >= 10, "only %d corpus files checked" % checked)


@test
def newer_files_are_rebuilt_for_redis_7_0_as_rdb_convert_rebuilds_them(h):
    dst = target(h)
    checked = 0
    for name in ("valkey8-sets.rdb", "valkey8-streams.rdb", "valkey8-hashes.rdb",
                 "valkey8-lists.rdb", "redis74-zsets.rdb", "redis74-strings.rdb"):
        path = corpus(name)
        if not os.path.exists(path):
            continue
        dst.cli("FLUSHALL")
        doc = import_json(path, "--to", url(dst, unix=True), "--no-checkpoint")
        ok(doc["ok"], doc)
        eq(doc["target_rdb_version"], 10)
        converted = h.path("converted-" + name)
        subprocess.run([keyshift_bin(), "rdb", "convert", path, converted, "--rdb-version", "10"],
                       check=True, stdout=subprocess.DEVNULL)
        # The reference reads the converted file with its own RDB loader, at start-up.
        ref = h.redis_server("--dir", os.path.dirname(converted), "--dbfilename",
                             os.path.basename(converted), name="reference")
        eq(ref.cli("DBSIZE"), dst.cli("DBSIZE"), name)
        eq(digest(dst), digest(ref), name)
        ref.stop()
        h.forget(ref)
        checked += 1
    ok(checked >= 4, "only %d files checked" % checked)


@test
def keys_already_in_the_target_stop_the_import_before_anything_is_written(h):
    dst = target(h)
    dst.cli("SET", "str:empty", "mine")
    dst.cli("SET", "str:small", "mine too")
    path = corpus("redis70-strings.rdb")
    doc = import_json(path, "--to", url(dst), "--no-checkpoint", check=1)
    ok(not doc["ok"])
    ok("2 key(s) already exist" in doc["error"], doc["error"])
    eq(sorted(doc["blocked"]["keys"]), ['db0 "str:empty"', 'db0 "str:small"'])
    eq(dst.cli("DBSIZE"), "2")
    eq(dst.cli("GET", "str:empty"), "mine")

    skipped = import_json(path, "--to", url(dst), "--no-checkpoint", "--conflict", "skip")
    eq(skipped["keys"]["conflicts_skipped"], 2)
    eq(skipped["keys"]["written"], 48)
    eq(dst.cli("GET", "str:empty"), "mine")

    import_json(path, "--to", url(dst), "--no-checkpoint", "--conflict", "replace")
    eq(digest(dst), truth("redis70-strings.rdb")["servers"]["redis-7.0.15"]["digest"])


@test
def a_dry_run_reads_and_judges_everything_and_writes_nothing(h):
    dst = target(h)
    path = corpus("redis70-hashes.rdb")
    doc = import_json(path, "--to", url(dst), "--dry-run", "--match", "hash:int*",
                      "--match", "hash:incr")
    ok(doc["dry_run"] and doc["ok"], doc)
    eq(doc["keys"]["written"], 2)
    eq(doc["keys"]["filtered"], 6)
    eq(dst.cli("DBSIZE"), "0")
    ok(not os.path.exists(os.path.join(os.getcwd(), "keyshift-import.checkpoint")))

    out_dir = h.path("dry")
    os.makedirs(out_dir)
    doc = import_json(path, "--dir", out_dir, "--dry-run")
    eq(doc["keys"]["written"], 8)
    eq(os.listdir(out_dir), [])


@test
def rename_prefix_db_map_and_type_rules_shape_what_arrives(h):
    dst = target(h)
    path = corpus("redis70-strings.rdb")
    prefixed = sum(1 for k in truth("redis70-strings.rdb")["servers"]["redis-7.0.15"]["keys"]
                   if not k["key_is_hex"] and k["key"].startswith("str:"))
    doc = import_json(path, "--to", url(dst), "--no-checkpoint", "--rename-prefix",
                      "str:=s:", "--db-map", "0:4", "--type", "string")
    eq(doc["keys"]["renamed"], prefixed)
    eq(doc["keys"]["moved"], 50)
    eq(dst.cli("DBSIZE"), "0")
    eq(dst.cli("-n", "4", "DBSIZE"), "50")
    eq(dst.cli("-n", "4", "GET", "s:small"), "hello")
    eq(dst.cli("-n", "4", "EXISTS", "str:small"), "0")
    dst.cli("FLUSHALL")
    doc = import_json(corpus("redis70-lists.rdb"), "--to", url(dst), "--no-checkpoint",
                      "--type", "hash")
    eq(doc["keys"]["written"], 0)
    eq(doc["keys"]["filtered"], doc["keys"]["read"])


@test
def field_ttls_refuse_a_target_without_them_unless_a_policy_says_otherwise(h):
    path = corpus("redis74-hash-field-ttl.rdb")
    dst = target(h)
    doc = import_json(path, "--to", url(dst), "--no-checkpoint", check=1)
    ok("field TTLs" in doc["error"], doc["error"])
    eq(dst.cli("DBSIZE"), "0")
    dropped = import_json(path, "--to", url(dst), "--no-checkpoint", "--field-ttl", "drop-field")
    ok(dropped["keys"]["fields_dropped"] > 0, dropped)
    ok(int(dst.cli("DBSIZE")) > 0)


@test
def a_corrupt_file_is_refused_with_its_offset_and_the_target_is_untouched(h):
    dst = target(h)
    dst.cli("SET", "keep", "me")
    good = open(corpus("redis70-lists.rdb"), "rb").read()
    bad = bytearray(good)
    at = len(bad) // 2
    bad[at:at + 16] = b"\xff" * 16
    path = h.path("corrupt.rdb")
    with open(path, "wb") as f:
        f.write(bad)
    rc, out, err = import_(path, "--to", url(dst), "--no-checkpoint")
    eq(rc, 1, out + err)
    ok("at byte" in err or "offset" in err, err)
    eq(dst.cli("DBSIZE"), "1")
    rc, out, err = import_(h.path("missing.rdb"), "--to", url(dst))
    eq(rc, 1)
    ok("missing.rdb" in err, err)
    rc, out, err = import_(path, "--to", "redis://host:notaport")
    eq(rc, 2, err)


@test
def a_password_and_a_database_in_the_target_url_are_used(h):
    h.counter += 1
    dst = h.redis_server("--requirepass", "s3cret", name="auth-target")
    dst.password = "s3cret"
    import_json(corpus("redis70-sets.rdb"), "--to",
                "redis://:s3cret@%s:%d/2" % (HOST, dst.port), "--no-checkpoint")
    eq(dst.cli("-n", "2", "DBSIZE"), "11")
    rc, out, err = import_(corpus("redis70-sets.rdb"), "--to",
                           "redis://:wrong@%s:%d" % (HOST, dst.port), "--no-checkpoint")
    eq(rc, 1)
    ok("WRONGPASS" in err or "invalid" in err, err)


@test
def a_file_becomes_the_data_file_a_target_server_loads(h):
    out_dir = h.path("embedded")
    os.makedirs(out_dir)
    path = corpus("valkey8-sets.rdb")
    doc = import_json(path, "--dir", out_dir, "--target", "redis-7.0")
    eq(doc["target_rdb_version"], 10)
    eq(sorted(os.listdir(out_dir)), ["dump.rdb"])
    srv = h.redis_server("--dir", out_dir, name="loads-import")
    eq(srv.cli("DBSIZE"), str(doc["keys"]["written"]))
    rc, out, err = import_(path, "--dir", h.path("no-such-dir"))
    eq(rc, 1)
    ok("not a directory" in err, err)


@test
def a_live_server_scanned_moves_whole_into_another_and_into_a_data_file(h):
    src = target(h, "scan-source")
    for name in ("redis70-strings.rdb", "redis70-zsets.rdb", "redis70-streams.rdb"):
        import_json(corpus(name), "--to", url(src), "--no-checkpoint", "--db-map",
                    "0:%d" % (len(name) % 16))
    dst = target(h)
    doc = import_json(url(src, unix=True), "--mode", "scan", "--to", url(dst), "--no-checkpoint",
                      "--scan-count", "7")
    eq(doc["source_kind"], "scan")
    ok(any("not a snapshot" in w for w in doc["warnings"]), doc["warnings"])
    eq(digest(dst), digest(src))

    out_dir = h.path("from-scan")
    os.makedirs(out_dir)
    doc = import_json(url(src), "--mode", "scan", "--dir", out_dir, "--target", "redis-7.0")
    loaded = h.redis_server("--dir", out_dir, name="loads-scan")
    eq(digest(loaded), digest(src))


@test
def the_source_password_never_appears_in_the_report_or_checkpoint(h):
    h.counter += 1
    src = h.redis_server("--requirepass", "hunter2", name="secret-source")
    src.password = "hunter2"
    src.cli("SET", "a", "1")
    dst = target(h)
    ckpt = h.path("secret.checkpoint")
    rc, out, err = import_(("redis://:hunter2@%s:%d" % (HOST, src.port)), "--mode", "scan",
                           "--to", url(dst),
                           "--checkpoint", ckpt, "--format", "json")
    eq(rc, 0, out + err)
    ok("hunter2" not in out, out)
    ok("hunter2" not in open(ckpt).read())
    eq(dst.cli("GET", "a"), "1")


@test
def import_verify_compares_source_and_target_when_done(h):
    dst = target(h)
    doc = import_json(corpus("redis70-zsets.rdb"), "--to", url(dst, unix=True), "--no-checkpoint",
                      "--verify")
    ok(doc["verify"]["ran"] and doc["verify"]["equal"], doc["verify"])
    eq(doc["verify"]["keys_compared"], 9)
    dst.cli("FLUSHALL")
    dst.cli("SET", "stray", "x")
    doc = import_json(corpus("redis70-zsets.rdb"), "--to", url(dst), "--no-checkpoint",
                      "--verify", check=1)
    eq(doc["verify"]["differences"], 1)
    ok("verify found 1 difference" in doc["error"], doc["error"])
    skipped = import_json(corpus("redis70-zsets.rdb"), "--to", url(dst), "--no-checkpoint",
                          "--verify", "--conflict", "replace", "--match", "zset:*")
    ok(not skipped["verify"]["ran"] and skipped["verify"]["skipped"], skipped["verify"])


def large_file(h):
    """The corpus' ~200,000-key dataset, written by make-large.sh into a redis-server and
    saved; made once per run."""
    if getattr(h, "large", None):
        return h.large
    script = corpus("make-large.sh")
    srv = target(h, "large-maker")
    subprocess.run(["bash", script, "--port", str(srv.port), "--keys", "60000", "--flush",
                    "--save"], check=True, stdout=subprocess.DEVNULL, timeout=600)
    path = os.path.join(srv.workdir, "dump.rdb")
    h.large = h.path("large.rdb")
    shutil.copy(path, h.large)
    h.large_digest = digest(srv)
    return h.large


def kill_when(proc, srv, keys):
    """SIGKILLs `proc` once `srv` holds at least `keys` keys (or it ended)."""
    deadline = time.monotonic() + 120
    while proc.poll() is None and time.monotonic() < deadline:
        if int(srv.cli("DBSIZE")) + int(srv.cli("-n", "1", "DBSIZE")) >= keys:
            proc.send_signal(signal.SIGKILL)
            break
        time.sleep(0.01)
    proc.wait()
    return proc.returncode


@test
def a_file_import_killed_midway_and_rerun_ends_equal_to_an_uninterrupted_one(h):
    path = large_file(h)
    dst = target(h)
    ckpt = h.path("file.checkpoint")
    killed = 0
    for stop_at in (5000, 25000, 45000):
        p = subprocess.Popen([keyshift_bin(), "import", path, "--to", url(dst, unix=True),
                              "--checkpoint", ckpt, "--window", "64"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if kill_when(p, dst, stop_at) == -signal.SIGKILL:
            killed += 1
    ok(killed >= 1, "the import was never caught midway")
    doc = import_json(path, "--to", url(dst, unix=True), "--checkpoint", ckpt)
    ok(doc["resumed"] or doc["already_complete"], doc)
    eq(digest(dst), h.large_digest)
    again = import_json(path, "--to", url(dst, unix=True), "--checkpoint", ckpt)
    ok(again["already_complete"], again)


@test
def a_scan_import_killed_midway_and_rerun_ends_equal_to_the_source(h):
    path = large_file(h)
    src = target(h, "scan-large-source")
    import_json(path, "--to", url(src, unix=True), "--no-checkpoint")
    dst = target(h)
    ckpt = h.path("scan.checkpoint")
    p = subprocess.Popen([keyshift_bin(), "import", url(src, unix=True), "--mode", "scan", "--to",
                          url(dst, unix=True), "--checkpoint", ckpt, "--scan-count", "100"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    kill_when(p, dst, 20000)
    doc = import_json(url(src, unix=True), "--mode", "scan", "--to", url(dst, unix=True),
                      "--checkpoint", ckpt)
    ok(doc["ok"], doc)
    eq(digest(dst), digest(src))


class ChangingWriter:
    """Changes the source from its own thread until stopped: new values, deletes, new keys,
    short TTLs that expire on the way, in databases 0 and 3."""

    def __init__(self, srv):
        import threading
        self.srv = srv
        self.stop_flag = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.ops = 0

    def run(self):
        r0 = self.srv.redis(unix=True)
        r3 = self.srv.redis(unix=True, db=3)
        i = 0
        while not self.stop_flag.is_set():
            p = r0.pipeline(transaction=False)
            p.set("k:%d" % (i * 7 % 20000), "changed-%d" % i)
            p.delete("k:%d" % (i * 13 % 20000 + 1))
            p.set("new:%d" % i, i)
            p.set("short:%d" % i, "x", px=30)
            p.rpush("list:%d" % (i % 50), i)
            p.execute()
            r3.incr("counter")
            self.ops += 6
            i += 1

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop()

    def stop(self):
        self.stop_flag.set()
        self.thread.join()


def notify_flags(srv):
    return srv.redis(unix=True).config_get("notify-keyspace-events")["notify-keyspace-events"]


def lapse_short_ttls(*servers):
    """Lets the writer's 30 ms TTLs pass, then has each server drop them (SCAN expires what
    it visits), so DEBUG DIGEST sees the same keys on both sides."""
    time.sleep(0.1)
    for srv in servers:
        srv.cli("--scan", "--pattern", "short:*")


def follow_source(h, name):
    src = target(h, name)
    r = src.redis(unix=True)
    p = r.pipeline(transaction=False)
    for i in range(20000):
        p.set("k:%d" % i, "v" * (i % 50))
        if i % 1000 == 999:
            p.execute()
    p.execute()
    src.redis(unix=True, db=3).set("counter", 0)
    return src


@test
def a_scan_with_follow_catches_what_writers_changed_while_it_ran(h):
    src = follow_source(h, "follow-source")
    eq(notify_flags(src), "")
    dst = target(h, "follow-target")
    writer = ChangingWriter(src)
    with writer:
        proc = subprocess.Popen([keyshift_bin(), "import", url(src, unix=True), "--mode", "scan",
                                 "--follow", "--to", url(dst), "--no-checkpoint", "--scan-count",
                                 "20", "--format", "json"], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
        time.sleep(1.5)
        writer.stop()
        out, err = proc.communicate(timeout=120)
    eq(proc.returncode, 0, err.decode("utf-8", "replace"))
    doc = json.loads(out)
    ok(writer.ops > 100, "the writer ran: %d ops" % writer.ops)
    ok(doc["follow"]["events"] > 0 and doc["follow"]["keys_read_again"] > 0, doc["follow"])
    ok(doc["follow"]["deleted"] > 0, "deleted and expired keys left the target: %r" % doc["follow"])
    lapse_short_ttls(src, dst)
    eq(digest(dst), digest(src), "the target equals the source once the writers stopped")
    eq(notify_flags(src), "", "the source's notify-keyspace-events is restored")


@test
def a_scan_with_follow_until_a_stop_file_keeps_the_target_following(h):
    src = follow_source(h, "follow-source2")
    dst = h.path("follow-out")
    os.makedirs(dst)
    stop = h.path("follow.stop")
    writer = ChangingWriter(src)
    with writer:
        proc = subprocess.Popen([keyshift_bin(), "import", url(src), "--mode", "scan", "--follow",
                                 "--until", stop, "--dir", dst, "--target", "redis-7.0"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        time.sleep(2.0)
        writer.stop()
    time.sleep(0.5)
    ok(proc.poll() is None, "the import keeps following until the stop file appears")
    open(stop, "w").close()
    out, err = proc.communicate(timeout=120)
    eq(proc.returncode, 0, err.decode("utf-8", "replace"))
    ok(b"followed:" in out, out)
    loaded = h.redis_server("--dir", dst, name="loads-follow")
    lapse_short_ttls(src, loaded)
    eq(digest(loaded), digest(src))


@test
def follow_is_refused_where_it_cannot_work(h):
    rc, out, err = import_(h.path("nothing.rdb"), "--follow")
    ok(rc == 2 and "--follow goes with --mode scan" in err, err)
    src = target(h, "follow-refuses", "--rename-command", "CONFIG", "")
    rc, out, err = import_(url(src), "--mode", "scan", "--follow", "--dir", h.tmp)
    ok(rc != 0 and "notify-keyspace-events" in out + err, out + err)


def redis8_policies_into(h, source, dst, field_ttl, *flags):
    """SOURCE (a Redis 8 server's URL or RDB file) into redis-server 7.0 `dst` under each
    --field-ttl policy; the result is judged against the source by `verify data`."""
    doc = import_json(source, "--to", url(dst), "--no-checkpoint", *flags, check=1)
    ok("field TTLs" in doc["error"], doc["error"])
    eq(dst.cli("DBSIZE"), "0", "a refused move writes nothing")
    doc = import_json(source, "--to", url(dst), "--no-checkpoint", "--field-ttl", "drop-ttl",
                      *flags)
    ok(doc["keys"]["field_ttls_dropped"] > 0, doc["keys"])
    rc, report, err = verify_data(keyshift_bin(), source, url(dst, unix=True), "--rounds", "1",
                                  "--max-differences", "1000")
    eq(rc, 1, "drop-ttl: the field TTLs are gone and verify says so: " + err)
    ok(*expect_field_ttl_differences(report, field_ttl, "field_ttl"))
    eq(dst.cli("FCALL", "keyshift_r8_answer", "0"), "8")
    dst.cli("FUNCTION", "FLUSH")
    dst.cli("FLUSHALL")
    doc = import_json(source, "--to", url(dst, unix=True), "--no-checkpoint", "--field-ttl",
                      "drop-field", *flags)
    ok(doc["keys"]["fields_dropped"] > 0, doc["keys"])
    eq(dst.cli("HGETALL", "fh:4"), "keep\n4")
    rc, report, err = verify_data(keyshift_bin(), source, url(dst), "--rounds", "1",
                                  "--max-differences", "1000")
    eq(rc, 1, err)
    ok(*expect_field_ttl_differences(report, field_ttl))


def redis8_into_data_files(h, source, field_ttl, name, *flags):
    """SOURCE into the embedded target's data file: for Redis 7.4 field TTLs are kept and the
    Redis 8 binary loads it with the source's digest; for Valkey 8.0 a policy is needed."""
    out_dir = h.path(name + "-redis74")
    os.makedirs(out_dir)
    doc = import_json(source, "--dir", out_dir, "--target", "redis-7.4", *flags)
    eq(doc["target_rdb_version"], 12)
    loaded = redis8_server(h, name + "-loads", "--dir", out_dir)
    rc, report, err = verify_data(keyshift_bin(), source, url(loaded, unix=True))
    eq(rc, 0, "redis-7.4 file: %r %s" % (report and report["differences"][:5], err))
    ttl = client(loaded).execute_command("HPTTL", "fhbig:2", "FIELDS", 2, "keep3", "ttl3")
    eq(ttl[0], -1)
    ok(86_000_000 < ttl[1] <= 86_400_002, ttl)
    for policy in ("drop-ttl", "drop-field"):
        out_dir = h.path("%s-valkey80-%s" % (name, policy))
        os.makedirs(out_dir)
        doc = import_json(source, "--dir", out_dir, "--target", "valkey-8.0", "--field-ttl",
                          policy, *flags)
        eq(doc["target_rdb_version"], 11)
        rc, report, err = verify_data(keyshift_bin(), source, os.path.join(out_dir, "dump.rdb"),
                                      "--rounds", "1", "--max-differences", "1000")
        eq(rc, 1, err)
        ok(*expect_field_ttl_differences(report, field_ttl,
                                         "field_ttl" if policy == "drop-ttl" else "value"))
    return loaded


@test
def a_redis_8_source_scanned_moves_into_redis_7_0_and_data_files_under_each_policy(h):
    src = redis8_server(h, "redis8-scan-source")
    field_ttl = fill_newer(src)
    dst = target(h, "r8-scan-target")
    redis8_policies_into(h, "unix://" + src.unixsocket, dst, field_ttl, "--mode", "scan")
    loaded = redis8_into_data_files(h, "unix://" + src.unixsocket, field_ttl, "r8-scan",
                                    "--mode", "scan")
    eq(digest(loaded), digest(src))


@test
def a_redis_8_rdb_file_imports_into_redis_7_0_and_data_files_under_each_policy(h):
    src = redis8_server(h, "redis8-file-source")
    field_ttl = fill_newer(src)
    eq(src.cli("SAVE"), "OK")
    rdb = os.path.join(src.workdir, "dump.rdb")
    with open(rdb, "rb") as f:
        eq(f.read(9), b"REDIS0012")
    check = subprocess.run([keyshift_bin(), "rdb", "check", rdb], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=120)
    eq(check.returncode, 0, check.stdout.decode("utf-8", "replace"))
    dst = target(h, "r8-file-target")
    redis8_policies_into(h, rdb, dst, field_ttl)
    loaded = redis8_into_data_files(h, rdb, field_ttl, "r8-file")
    eq(digest(loaded), digest(src))
    # And the file against the live server it came from.
    rc, report, err = verify_data(keyshift_bin(), rdb, "unix://" + src.unixsocket, "--digest")
    eq(rc, 0, "the file against its server: %r %s" % (report and report["differences"][:5],
                                                       err))


if __name__ == "__main__":
    sys.exit(run_tests())
