#!/usr/bin/python3
"""keyshift import --mode sync: a live redis-server 7.0 read as a replica (PSYNC, the full
sync's RDB streamed into the target, then the command stream) into a live redis-server 7.0
or into the embedded engine's data file; while a writer keeps changing the source, after
kill -9 in each phase, with db-map and rename-prefix on streamed commands, and against a
source that refuses SYNC. Equality is judged by `keyshift verify data` and DEBUG DIGEST.
"""

import json
import os
import random
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import (HOST, BackgroundWriter, eq, keyshift_bin, ok, read_json_file,  # noqa: E402
                     run_tests, test, wait_for)
from redis_sources import (expect_field_ttl_differences, fill_newer, redis74_server,  # noqa: E402
                           redis8_server, verify_data)

import redis  # noqa: E402  (python3-redis, /usr/bin/python3)


LIBRARY = "#!lua name=keyshift_test\nredis.register_function('keyshift_answer', function() return 42 end)"


def url(srv, unix=False):
    if unix:
        return "unix://" + srv.unixsocket
    return "redis://%s:%d" % (HOST, srv.port)


def server(h, name, *directives):
    h.counter += 1
    sock = os.path.join(h.tmp, "%s-%d.sock" % (name, h.counter))
    srv = h.redis_server("--unixsocket", sock, "--repl-diskless-sync-delay", "0", *directives,
                         name="%s-%d" % (name, h.counter))
    srv.unixsocket = sock
    return srv


def client(srv, db=0):
    return redis.Redis(unix_socket_path=srv.unixsocket, db=db)


def digest(srv):
    return srv.cli("DEBUG", "DIGEST")


def fill(srv, n, seed=1):
    """A mixed dataset: strings, counters, lists, hashes, sets, zsets, a stream, TTLs, in
    databases 0 and 1."""
    rnd = random.Random(seed)
    for db in (0, 1):
        r = client(srv, db)
        p = r.pipeline(transaction=False)
        for i in range(n):
            k = i % 7
            if k == 0:
                p.set("str:%d" % i, "v" * rnd.randint(1, 300))
            elif k == 1:
                p.rpush("list:%d" % i, *["e%d" % j for j in range(rnd.randint(1, 40))])
            elif k == 2:
                p.hset("hash:%d" % i, mapping={"f%d" % j: j for j in range(rnd.randint(1, 30))})
            elif k == 3:
                p.sadd("set:%d" % i, *range(rnd.randint(1, 30)))
            elif k == 4:
                p.zadd("zset:%d" % i, {"m%d" % j: j * 1.5 for j in range(rnd.randint(1, 30))})
            elif k == 5:
                p.set("ttl:%d" % i, "x", px=3_600_000 + i)
            else:
                p.xadd("stream:%d" % (i % 50), {"n": i})
            if i % 1000 == 999:
                p.execute()
        p.execute()


class Writer(BackgroundWriter):
    """Keeps changing the source: SET, INCR, list pushes and pops, hash and zset writes, DEL,
    EXPIRE and MULTI/EXEC transactions."""

    def __init__(self, srv):
        self.srv = srv
        super().__init__()

    def connect(self):
        return client(self.srv), client(self.srv, 1)

    def step(self, clients, rnd):
        r, r1 = clients
        i = rnd.randint(0, 3000)
        op = rnd.randint(0, 8)
        if op == 0:
            r.set("str:%d" % (i * 7), "w%d" % self.count)
        elif op == 1:
            r.incr("counter:%d" % (i % 10))
        elif op == 2:
            r.lpush("list:%d" % (i * 7 + 1), "new")
            r.rpop("list:%d" % (i * 7 + 1))
        elif op == 3:
            r.hset("hash:%d" % (i * 7 + 2), "w", self.count)
        elif op == 4:
            r.delete("set:%d" % (i * 7 + 3))
        elif op == 5:
            r.zincrby("zset:%d" % (i * 7 + 4), 2, "m1")
        elif op == 6:
            r.expire("str:%d" % (i * 7), 3600)
        elif op == 7:
            p = r.pipeline(transaction=True)
            p.incr("tx:a")
            p.incr("tx:b")
            p.lpush("tx:log", self.count)
            p.execute()
        else:
            r1.set("db1:%d" % i, self.count)


def run_import(*args, check=0):
    p = subprocess.run([keyshift_bin(), "import"] + [str(a) for a in args] + ["--format", "json"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
    out, err = p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")
    if check is not None:
        eq(p.returncode, check, "keyshift import %s: %s%s" % (" ".join(map(str, args)), out, err))
    try:
        return json.loads(out)
    except ValueError:
        raise AssertionError("not JSON (%d): %r %r" % (p.returncode, out, err))


def start_import(*args):
    return subprocess.Popen([keyshift_bin(), "import"] + [str(a) for a in args] +
                            ["--format", "json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def verify_equal(src, dst):
    p = subprocess.run([keyshift_bin(), "verify", "data", url(src), url(dst), "--format",
                        "json", "--pause", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=300)
    out = p.stdout.decode("utf-8", "replace")
    eq(p.returncode, 0, "verify data: " + out + p.stderr.decode("utf-8", "replace"))
    eq(digest(dst), digest(src))


def sync_while_writing(h, diskless, unix):
    src = server(h, "source", "--repl-diskless-sync", "yes" if diskless else "no")
    dst = server(h, "target")
    fill(src, 3000)
    ckpt = h.path("ckpt-%d" % h.counter)
    writer = Writer(src)
    p = start_import(url(src, unix), "--to", url(dst, unix), "--checkpoint", ckpt,
                     "--until", "sigterm")
    wait_for(lambda: read_json_file(ckpt).get("synced") or p.poll() is not None, "the full sync")
    wait_for(lambda: writer.count > 2000 or p.poll() is not None, "the writer")
    writer.stop()
    if p.poll() is not None:
        raise AssertionError("the import ended early: %r" % (p.communicate(),))
    # WAIT has the primary send REPLCONF GETACK: keyshift's ACK answers it.
    eq(client(src).execute_command("WAIT", 1, 20000), 1)
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=60)
    eq(p.returncode, 0, err.decode())
    first = json.loads(out)
    eq(first["replication"]["sync"], "full")
    ok(first["replication"]["commands_applied"] > 0, first["replication"])
    # The rest of the stream, up to the offset the source has now.
    doc = run_import(url(src, unix), "--to", url(dst, unix), "--checkpoint", ckpt)
    eq(doc["replication"]["sync"], "partial")
    eq(doc["replication"]["lag_bytes"], 0)
    ok(doc["replication"]["offset"] >= first["replication"]["offset"], doc["replication"])
    verify_equal(src, dst)


@test
def a_disk_based_full_sync_and_the_stream_of_a_busy_source_end_equal_over_tcp(h):
    sync_while_writing(h, diskless=False, unix=False)


@test
def a_diskless_full_sync_and_the_stream_of_a_busy_source_end_equal_over_unix_sockets(h):
    sync_while_writing(h, diskless=True, unix=True)


@test
def killed_during_the_full_sync_a_rerun_resyncs_and_ends_equal(h):
    src = server(h, "big-source", "--repl-diskless-sync", "no")
    dst = server(h, "target")
    fill(src, 20000)
    ckpt = h.path("full.checkpoint")
    p = start_import(url(src, True), "--to", url(dst, True), "--checkpoint", ckpt, "--window",
                     "16", "--until", "sigterm")
    wait_for(lambda: int(dst.cli("DBSIZE")) >= 2000 or p.poll() is not None, "keys in the target")
    p.send_signal(signal.SIGKILL)
    p.wait()
    eq(p.returncode, -signal.SIGKILL)
    ok(not read_json_file(ckpt).get("synced"), "the full sync had already finished")
    # Keys the first attempt wrote that the source deletes meanwhile must not survive.
    written = [k.decode() for k in client(dst).scan_iter(count=1000)][:200]
    ok(len(written) > 0)
    client(src).delete(*written)
    client(src).set("after-kill", "1")
    doc = run_import(url(src, True), "--to", url(dst, True), "--checkpoint", ckpt)
    eq(doc["replication"]["sync"], "full")
    ok(doc["resumed"], doc)
    verify_equal(src, dst)


@test
def killed_during_the_command_stream_a_rerun_continues_by_psync_and_ends_equal(h):
    src = server(h, "source")
    dst = server(h, "target")
    fill(src, 2000)
    ckpt = h.path("stream.checkpoint")
    writer = Writer(src)
    p = start_import(url(src), "--to", url(dst), "--checkpoint", ckpt, "--until", "sigterm")
    wait_for(lambda: read_json_file(ckpt).get("synced") or p.poll() is not None, "the full sync")
    start = read_json_file(ckpt).get("repl_offset", 0)
    wait_for(lambda: read_json_file(ckpt).get("repl_offset", 0) > start + 5000 or
             p.poll() is not None, "streamed commands acknowledged")
    p.send_signal(signal.SIGKILL)
    p.wait()
    eq(p.returncode, -signal.SIGKILL)
    time.sleep(0.2)
    writer.stop()
    doc = run_import(url(src), "--to", url(dst), "--checkpoint", ckpt)
    eq(doc["replication"]["sync"], "partial")
    verify_equal(src, dst)


@test
def db_map_and_rename_prefix_apply_to_streamed_commands(h):
    src = server(h, "source")
    dst = server(h, "target")
    r0, r1 = client(src, 0), client(src, 1)
    r0.set("app:a", "1")
    r1.set("app:b", "2")
    r1.set("other:c", "3")
    ckpt = h.path("rules.checkpoint")
    rules = ["--db-map", "1:5", "--rename-prefix", "app:=new:", "--exclude", "other:*"]
    doc = run_import(url(src), "--to", url(dst), "--checkpoint", ckpt, *rules)
    eq(doc["replication"]["sync"], "full")
    # Written after the full sync: they reach the target through the command stream.
    r1.set("app:streamed", "s")
    r1.rpush("app:list", "x", "y")
    r1.rename("app:b", "app:b2")
    r1.set("other:streamed", "left out")
    r0.hset("app:h", "f", "v")
    r0.execute_command("FUNCTION", "LOAD", LIBRARY)
    p = r1.pipeline(transaction=True)
    p.incr("app:tx")
    p.incr("app:tx")
    p.execute()
    doc = run_import(url(src), "--to", url(dst), "--checkpoint", ckpt, *rules)
    eq(doc["replication"]["sync"], "partial")
    ok(doc["replication"]["commands_filtered"] >= 1, doc["replication"])
    d0, d5 = client(dst, 0), client(dst, 5)
    eq(d0.get("new:a"), b"1")
    eq(d0.hget("new:h", "f"), b"v")
    eq(d5.get("new:streamed"), b"s")
    eq(d5.lrange("new:list", 0, -1), [b"x", b"y"])
    eq(d5.get("new:b2"), b"2")
    eq(d5.exists("new:b"), 0)
    eq(d5.get("new:tx"), b"2")
    eq(d5.exists("other:streamed"), 0)
    eq(d5.exists("other:c"), 0)
    eq(client(dst, 1).dbsize(), 0)
    eq(d0.execute_command("FCALL", "keyshift_answer", 0), 42)


@test
def the_embedded_target_saves_an_rdb_redis_loads_with_the_source_digest(h):
    src = server(h, "source")
    fill(src, 1500)
    client(src).execute_command("FUNCTION", "LOAD", LIBRARY)
    out_dir = h.path("embedded")
    os.makedirs(out_dir)
    doc = run_import(url(src, True), "--dir", out_dir, "--target", "redis-7.0")
    eq(doc["replication"]["sync"], "full")
    ok(doc["keys"]["written"] > 0, doc["keys"])
    loaded = h.redis_server("--dir", out_dir, name="loads-embedded")
    eq(digest(loaded), digest(src))
    eq(loaded.cli("FCALL", "keyshift_answer", "0"), "42")


@test
def killed_during_the_stream_into_the_embedded_target_a_rerun_continues_from_its_data_file(h):
    src = server(h, "source")
    fill(src, 1500)
    out_dir = h.path("embedded-resume")
    os.makedirs(out_dir)
    ckpt = h.path("embedded.checkpoint")
    writer = Writer(src)
    p = start_import(url(src), "--dir", out_dir, "--target", "redis-7.0", "--checkpoint", ckpt,
                     "--until", "sigterm")
    # The first data file, with the stream's position in it, is written once the full sync
    # is in; the checkpoint follows it.
    wait_for(lambda: read_json_file(ckpt).get("synced") or p.poll() is not None,
             "the data file after the full sync")
    synced_at = read_json_file(ckpt)["repl_offset"]
    start = writer.count
    wait_for(lambda: writer.count > start + 3000 or p.poll() is not None, "the writer")
    p.send_signal(signal.SIGKILL)
    p.wait()
    eq(p.returncode, -signal.SIGKILL)
    writer.stop()
    ok(os.path.exists(os.path.join(out_dir, "dump.rdb")), "no data file after the full sync")
    doc = run_import(url(src), "--dir", out_dir, "--target", "redis-7.0", "--checkpoint", ckpt)
    ok(doc["resumed"], doc)
    # The rerun loaded the file and asked for the rest: no full sync, nothing applied twice
    # (the writer's list pushes and pops and its transactions would show it).
    eq(doc["replication"]["sync"], "partial")
    ok(doc["replication"]["offset"] > synced_at, doc["replication"])
    eq(doc["replication"]["lag_bytes"], 0)
    loaded = h.redis_server("--dir", out_dir, name="loads-resumed")
    eq(digest(loaded), digest(src))
    state = read_json_file(ckpt)
    eq(state["repl_offset"], doc["replication"]["offset"])


@test
def a_source_that_refuses_sync_gets_a_clear_error_naming_mode_scan(h):
    src = server(h, "refusing", "--rename-command", "SYNC", "", "--rename-command", "PSYNC", "")
    dst = server(h, "target")
    client(src).set("a", "1")
    p = subprocess.run([keyshift_bin(), "import", url(src), "--to", url(dst), "--no-checkpoint"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    err = p.stderr.decode()
    eq(p.returncode, 1, err)
    ok("refuses replication" in err and "--mode scan" in err, err)
    eq(int(dst.cli("DBSIZE")), 0)
    # And --mode scan does move it.
    run_import(url(src), "--mode", "scan", "--to", url(dst), "--no-checkpoint")
    eq(client(dst).get("a"), b"1")


def field_ttl_hashes(srv, n):
    r = client(srv)
    p = r.pipeline(transaction=False)
    for i in range(n):
        p.hset("fh:%d" % i, mapping={"keep": i, "ttl": "x%d" % i})
        p.execute_command("HEXPIRE", "fh:%d" % i, 100000 + i, "FIELDS", 1, "ttl")
    p.execute()


@test
def a_redis_7_4_source_with_field_ttls_replicates_into_redis_7_0_and_valkey_8_files(h):
    src = redis74_server(h, "redis74-source", "--repl-diskless-sync", "yes")
    fill(src, 2000)
    field_ttl_hashes(src, 200)
    # Valkey 8 and Redis 7.0 have no hash field TTLs: without a policy the move is refused.
    dst = server(h, "target70")
    refused = run_import(url(src, True), "--to", url(dst), "--no-checkpoint", check=None)
    ok(not refused["ok"] and "field" in refused["error"], refused)
    eq(dst.cli("DBSIZE"), "0", "a refused move writes nothing")

    writer = Writer(src)
    p = start_import(url(src, True), "--to", url(dst), "--no-checkpoint", "--field-ttl",
                     "drop-ttl", "--until", "sigterm")
    wait_for(lambda: int(dst.cli("DBSIZE")) >= 2000 or p.poll() is not None, "the full sync")
    # Streamed field-TTL commands are dropped by the policy; the fields themselves arrive.
    client(src).hset("fh:stream", mapping={"a": 1, "b": 2})
    client(src).execute_command("HEXPIRE", "fh:stream", 5000, "FIELDS", 1, "b")
    wait_for(lambda: writer.count > 1000 or p.poll() is not None, "the writer")
    writer.stop()
    time.sleep(0.3)
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=120)
    eq(p.returncode, 0, err.decode("utf-8", "replace"))
    doc = json.loads(out)
    eq(client(dst).hgetall("fh:7"), {b"keep": b"7", b"ttl": b"x7"})
    eq(client(dst).hgetall("fh:stream"), {b"a": b"1", b"b": b"2"})
    eq(int(dst.cli("DBSIZE")), int(src.cli("DBSIZE")))

    for target, version in (("redis-7.0", 10), ("valkey-8.0", 11)):
        out_dir = h.path("from-redis74-" + target)
        os.makedirs(out_dir)
        doc = run_import(url(src, True), "--dir", out_dir, "--target", target, "--field-ttl",
                         "drop-ttl")
        eq(doc["target_rdb_version"], version)
        rdb = os.path.join(out_dir, "dump.rdb")
        with open(rdb, "rb") as f:
            eq(f.read(9), b"REDIS%04d" % version)
        inspect = subprocess.run([keyshift_bin(), "rdb", "inspect", rdb, "--format", "json"],
                                 stdout=subprocess.PIPE, timeout=120)
        keys = int(src.cli("DBSIZE")) + int(src.cli("-n", "1", "DBSIZE"))
        eq(json.loads(inspect.stdout)["total_keys"], keys, target)
    loaded = server(h, "loads-74", "--dir", h.path("from-redis74-redis-7.0"))
    eq(int(loaded.cli("DBSIZE")), int(src.cli("DBSIZE")))
    eq(client(loaded).hgetall("fh:3"), {b"keep": b"3", b"ttl": b"x3"})


@test
def a_redis_8_source_replicates_into_redis_7_0_under_each_field_ttl_policy(h):
    src = redis8_server(h, "redis8-source", "--repl-diskless-sync", "yes")
    field_ttl = fill_newer(src)
    dst = server(h, "target70-r8")
    refused = run_import(url(src, True), "--to", url(dst), "--no-checkpoint", check=None)
    ok(not refused["ok"] and "field" in refused["error"], refused)
    eq(dst.cli("DBSIZE"), "0", "a refused move writes nothing")

    doc = run_import(url(src, True), "--to", url(dst), "--no-checkpoint", "--field-ttl",
                     "drop-ttl")
    eq(doc["replication"]["sync"], "full")
    ok(doc["keys"]["field_ttls_dropped"] > 0, doc["keys"])
    rc, report, err = verify_data(keyshift_bin(), url(src, True), url(dst, True), "--rounds", "1",
                                  "--max-differences", "1000")
    eq(rc, 1, "verify data after drop-ttl names the TTLs dropped: " + err)
    ok(*expect_field_ttl_differences(report, field_ttl, "field_ttl"))
    eq(client(dst).hgetall("fh:3"), {b"keep": b"3", b"ttl": b"x3"})
    eq(client(dst).hlen("fhbig:1"), 1050)
    eq(client(dst, 2).xinfo_groups("x:big")[0]["pending"], 23)
    eq(client(dst).execute_command("FCALL", "keyshift_r8_answer", 0), 8)

    dst.cli("FLUSHALL")
    dst.cli("FUNCTION", "FLUSH")
    doc = run_import(url(src), "--to", url(dst), "--no-checkpoint", "--field-ttl", "drop-field")
    ok(doc["keys"]["fields_dropped"] > 0, doc["keys"])
    eq(client(dst).hgetall("fh:3"), {b"keep": b"3"})
    eq(client(dst).hlen("fhbig:1"), 1000)
    rc, report, err = verify_data(keyshift_bin(), url(src, True), url(dst, True), "--rounds", "1",
                                  "--max-differences", "1000")
    eq(rc, 1, err)
    ok(*expect_field_ttl_differences(report, field_ttl))


@test
def a_redis_8_source_replicates_into_the_embedded_target_for_each_target_and_policy(h):
    src = redis8_server(h, "redis8-embedded-source")
    field_ttl = fill_newer(src)
    keys = sum(int(src.cli("-n", str(db), "DBSIZE")) for db in (0, 2))
    # Redis 7.4 has field TTLs: the file keeps them, and the Redis 8 binary loads it equal.
    out_dir = h.path("r8-to-redis-7.4")
    os.makedirs(out_dir)
    doc = run_import(url(src, True), "--dir", out_dir, "--target", "redis-7.4")
    eq(doc["target_rdb_version"], 12)
    eq(doc["keys"]["written"], keys)
    rdb = os.path.join(out_dir, "dump.rdb")
    rc, report, err = verify_data(keyshift_bin(), url(src, True), rdb)
    eq(rc, 0, "verify data: %r %s" % (report and report["differences"][:5], err))
    reloaded = redis8_server(h, "redis8-reloads", "--dir", out_dir)
    eq(digest(reloaded), digest(src))
    ttl = client(reloaded).execute_command("HTTL", "fh:5", "FIELDS", 2, "keep", "ttl")
    eq(ttl[0], -1)
    ok(86000 < ttl[1] <= 86405, ttl)

    for target, version in (("redis-7.0", 10), ("valkey-8.0", 11)):
        refused_dir = h.path("r8-refused-" + target)
        os.makedirs(refused_dir)
        refused = run_import(url(src, True), "--dir", refused_dir, "--target", target,
                             check=None)
        ok(not refused["ok"] and "field" in refused["error"], refused)
        ok("dump.rdb" not in os.listdir(refused_dir), "a refused move writes no data file")
        for policy in ("drop-ttl", "drop-field"):
            out_dir = h.path("r8-%s-%s" % (target, policy))
            os.makedirs(out_dir)
            doc = run_import(url(src, True), "--dir", out_dir, "--target", target,
                             "--field-ttl", policy)
            eq(doc["target_rdb_version"], version)
            rdb = os.path.join(out_dir, "dump.rdb")
            with open(rdb, "rb") as f:
                eq(f.read(9), b"REDIS%04d" % version)
            rc, report, err = verify_data(keyshift_bin(), url(src, True), rdb, "--rounds", "1",
                                          "--max-differences", "1000")
            eq(rc, 1, "%s %s: %s" % (target, policy, err))
            ok(*expect_field_ttl_differences(report, field_ttl,
                                             "field_ttl" if policy == "drop-ttl" else "value"))
    loaded = server(h, "loads-r8", "--dir", h.path("r8-redis-7.0-drop-ttl"))
    rc, report, err = verify_data(keyshift_bin(), url(src, True), url(loaded, True), "--rounds",
                                  "1", "--max-differences", "1000")
    eq(rc, 1, "redis-server 7.0 loading it: " + err)
    ok(*expect_field_ttl_differences(report, field_ttl, "field_ttl"))
    eq(client(loaded).execute_command("FCALL", "keyshift_r8_answer", 0), 8)


if __name__ == "__main__":
    sys.exit(run_tests())
