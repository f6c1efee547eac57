#!/usr/bin/python3
"""`keyshift verify data SOURCE TARGET` against two real redis-server 7.0 over unix sockets,
keyshift serve, RDB files of the corpus and JSON Lines from `keyshift rdb dump`: equal
datasets exit 0; a missing key, an extra key, a wrong type, a wrong field in a big hash (read
in chunks) and a TTL beyond the tolerance exit 1 with their reasons; a key that changes
between rounds is reported apart; errors exit 2.

Run: KEYSHIFT_BIN=build/keyshift /usr/bin/python3 tests/integration/test_verify.py [NAME...]
"""

import json
import os
import shutil
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import REPO, eq, keyshift_bin, ok, run_tests, test  # noqa: E402
from redis_sources import client, fill_newer, redis8_server  # noqa: E402

CORPUS = os.path.join(REPO, "..", "shared", "corpus", "rdb")


def start_redis(h, *directives, debug="yes", name="redis-server"):
    """redis-server 7.0 with a unix socket of its own."""
    sock = h.path("%s-%d.sock" % (name, h.counter + 1))
    srv = h.redis_server("--unixsocket", sock, "--unixsocketperm", "700",
                         "--enable-debug-command", debug, *directives, name=name)
    srv.unixsocket = sock
    return srv


def url(srv):
    return "unix://" + srv.unixsocket


def verify(source, target, *flags, timeout=120):
    """Runs verify with --format json; returns (exit status, report or None, stderr)."""
    p = subprocess.run([keyshift_bin(), "verify", "data", source, target, "--format", "json",
                        "--no-progress"] + [str(f) for f in flags],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
    out = p.stdout.decode("utf-8", "replace")
    report = json.loads(out) if out.strip() else None
    return p.returncode, report, p.stderr.decode("utf-8", "replace")


def fill(r, big_fields=12000):
    """A mixed dataset through python3-redis `r`, the same every time."""
    pipe = r.pipeline(transaction=False)
    for i in range(300):
        pipe.set("str:%d" % i, "value-%d" % i)
    pipe.set(b"bin:\xff\x00", b"\x00\x01\xfe")
    pipe.rpush("list", *["e%d" % i for i in range(2500)])
    pipe.sadd("set", *["m%d" % i for i in range(700)])
    pipe.zadd("zset", {"a": 1.5, "b": 2.37, "c": -0.1, "d": 1e300})
    pipe.zadd("bigzset", {"m%d" % i: i / 7 for i in range(1500)})
    pipe.hset("hash", mapping={"f": "1", "g": "2"})
    pipe.hset("bighash", mapping={"field:%d" % i: "v%d" % i for i in range(big_fields)})
    pipe.xadd("stream", {"f": "v"}, id="1-1")
    pipe.xadd("stream", {"f": "w", "g": "x"}, id="2-5")
    pipe.set("ttl", "v", px=4102444800000 - 1700000000000)
    pipe.execute()
    r.execute_command("SELECT", 2)
    r.set("in-db-2", "v")
    r.execute_command("SELECT", 0)


def reasons(report):
    return {(d["db"], d["key"] if isinstance(d["key"], str) else bytes.fromhex(d["key"]["hex"])):
            d["reasons"] for d in report["differences"]}


def two_equal(h, debug="yes"):
    a = start_redis(h, debug=debug, name="redis-a")
    b = start_redis(h, debug=debug, name="redis-b")
    fill(a.redis(unix=True))
    fill(b.redis(unix=True))
    return a, b


@test
def equal_datasets_exit_0(h):
    a, b = two_equal(h)
    for flags in ([], ["--digest"], ["--dump"], ["--dump", "--digest"], ["--sample", "30%"]):
        rc, report, err = verify(url(a), url(b), *flags)
        eq(rc, 0, "exit status with %s: %s" % (flags, err))
        eq(report["equal"], True)
        eq(report["differences"], [])
        dbs = {d["db"]: d for d in report["databases"]}
        eq(sorted(dbs), [0, 2])
        if "--sample" not in flags:
            eq(report["keys_compared"], 300 + 1 + 8 + 1)
            eq(dbs[0]["types"], {"string": 302, "list": 1, "set": 1, "zset": 2, "hash": 2,
                                 "stream": 1})
        want = ("dump+" if "--dump" in flags else "") + \
            ("digest+" if "--digest" in flags else "") + "read"
        eq(report["value_check"], want)
        ok(report["rounds"] == 1, "no later round when nothing differs")


@test
def digests_go_many_keys_per_command_and_ignore_encodings(h):
    # B keeps every hash, sorted set and set in its big encoding, A in listpack/intset: a
    # server digest hashes the elements, not the encoding, so they still agree.
    a = start_redis(h, name="redis-a")
    b = start_redis(h, "--hash-max-listpack-entries", "0", "--zset-max-listpack-entries", "0",
                    "--set-max-intset-entries", "0", name="redis-b")
    keys = 0
    for r in (a.redis(unix=True), b.redis(unix=True)):
        pipe = r.pipeline(transaction=False)
        for i in range(1000):
            pipe.hset("h:%d" % i, mapping={"f": i, "g": "x"})
            pipe.zadd("z:%d" % i, {"m": i / 3, "n": 2})
            pipe.sadd("s:%d" % i, 1, 2, i + 3)
        pipe.execute()
        keys = r.dbsize()
    ra, rb = a.redis(unix=True), b.redis(unix=True)
    eq((ra.object("encoding", "h:5"), rb.object("encoding", "h:5")), (b"listpack", b"hashtable"))
    eq((ra.object("encoding", "s:5"), rb.object("encoding", "s:5")), (b"intset", b"hashtable"))
    eq(ra.execute_command("DEBUG", "DIGEST-VALUE", "h:5", "z:5", "s:5"),
       rb.execute_command("DEBUG", "DIGEST-VALUE", "h:5", "z:5", "s:5"))
    for srv in (a, b):
        srv.cli("CONFIG", "RESETSTAT", unix=True)
    rc, report, err = verify(url(a), url(b), "--digest", "--batch", "500")
    eq(rc, 0, err)
    eq((report["keys_compared"], report["values_by_digest"], report["values_read"]),
       (keys, keys, 0))
    pages = ra.info("commandstats")["cmdstat_scan"]["calls"]  # only the source is scanned
    for srv in (a, b):
        stats = srv.redis(unix=True).info("commandstats")
        # One DEBUG DIGEST-VALUE per SCAN page (and the probe), not one per key.
        debug = stats["cmdstat_debug"]["calls"]
        ok(debug <= pages + 1 and debug * 100 < keys,
           "%d DEBUG calls for %d keys in %d pages" % (debug, keys, pages))
        eq(stats["cmdstat_type"]["calls"], keys)
        ok("cmdstat_hscan" not in stats and "cmdstat_dump" not in stats, "no value read")
    # A changed element still differs, whatever the encodings.
    rb.hset("h:7", "g", "y")
    rc, report, err = verify(url(a), url(b), "--digest", "--pause", "0")
    eq(rc, 1, err)
    eq(reasons(report), {(0, "h:7"): ["value"]})


@test
def differences_exit_1_with_their_reasons(h):
    a, b = two_equal(h)
    rb = b.redis(unix=True)
    rb.delete("str:7")                        # missing on the target
    rb.set("only-here", "x")                   # extra on the target
    rb.delete("hash")
    rb.rpush("hash", "now-a-list")             # wrong type
    rb.hset("bighash", "field:11999", "other")  # one field of 12000
    rb.pexpire("str:9", 50000)                 # a TTL only on the target
    ra = a.redis(unix=True)
    ra.pexpire("str:10", 100000)
    rb.pexpire("str:10", 100300)               # within the default 1000 ms tolerance
    for flags in ([], ["--dump"], ["--digest"], ["--chunk", "1000"]):
        b.cli("CONFIG", "RESETSTAT", unix=True)
        rc, report, err = verify(url(a), url(b), "--pause", "0", *flags)
        eq(rc, 1, "exit status with %s: %s" % (flags, err))
        eq(report["equal"], False)
        got = reasons(report)
        eq(got, {(0, "str:7"): ["missing_on_target"],
                 (0, "only-here"): ["missing_on_source"],
                 (0, "hash"): ["type"],
                 (0, "bighash"): ["value"],
                 (0, "str:9"): ["ttl"]}, "differences with %s" % flags)
        d = [x for x in report["differences"] if x["key"] == "str:9"][0]
        eq(d["source"], {"type": "string", "ttl_ms": -1})
        eq(d["target"]["type"], "string")
        ok(0 < d["target"]["ttl_ms"] <= 50000, "target TTL %r" % d["target"])
        eq(report["differences_total"], 5)
        eq(report["rounds"], 3)
        eq(report["changed"], [])
        # The big hash was read in pieces, never in one reply.
        hscan = b.redis(unix=True).info("commandstats").get("cmdstat_hscan", {}).get("calls", 0)
        ok(hscan >= 3 * 12, "bighash read in chunks: %d HSCAN calls" % hscan)
        # The tolerance decides about TTLs.
        rc, report, _ = verify(url(a), url(b), "--pause", "0", "--rounds", "1",
                               "--ttl-tolerance", "100", *flags)
        eq(reasons(report)[(0, "str:10")], ["ttl"])
    # The text report names them too.
    p = subprocess.run([keyshift_bin(), "verify", "data", url(a), url(b), "--pause", "0",
                        "--rounds", "1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    text = p.stdout.decode()
    eq(p.returncode, 1)
    for line in ('db 0 "str:7": missing on the target', 'db 0 "only-here": only on the target',
                 'db 0 "hash": type differs', 'db 0 "bighash": value differs',
                 "result: 5 key(s) differ"):
        ok(line in text, "%r in:\n%s" % (line, text))


@test
def a_key_that_changes_during_the_run_is_rechecked(h):
    a, b = two_equal(h)
    rb = b.redis(unix=True)
    rb.set("str:1", "stale")
    rb.set("str:2", "really different")
    p = subprocess.Popen([keyshift_bin(), "verify", "data", url(a), url(b), "--format", "json",
                          "--no-progress", "--rounds", "2", "--pause", "3000"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    line = p.stderr.readline().decode()
    ok("round 2 in 3000 ms" in line, "announces round 2: %r" % line)
    rb.set("str:1", "value-1")  # caught up while verify waits
    out, err = p.communicate(timeout=60)
    eq(p.returncode, 1, err.decode())
    report = json.loads(out)
    eq([d["key"] for d in report["differences"]], ["str:2"])
    eq([(d["key"], d["reasons"]) for d in report["changed"]], [("str:1", ["value"])])
    eq(report["changed_total"], 1)


@test
def snapshot_small_values_kept_as_blocks_compare_by_member(h):
    # A full sync's listpacks and intsets are adopted as blocks, not rebuilt member by
    # member: each one that differs by one member (or one score, or one field's value) is
    # still found, in-process and again live, and equal ones in other orders are equal.
    a = start_redis(h, "--repl-diskless-sync-delay", "0", name="redis-a")
    b = start_redis(h, "--repl-diskless-sync-delay", "0", name="redis-b")
    ra, rb = a.redis(unix=True), b.redis(unix=True)
    for r, tail in ((ra, "z"), (rb, "y")):
        for name in ("same", "diff"):
            last = tail if name == "diff" else "z"
            r.hset("h:" + name, mapping={"f1": "v1", "f2": "v2", "f3": last})
            r.sadd("s:" + name, "m1", "m2", "m-" + last)
            r.sadd("i:" + name, 1, 2, 3 if last == "z" else 4)
            r.zadd("z:" + name, {"a": 1, "b": 2.5, "c": 3 if last == "z" else 3.25})
            r.rpush("l:" + name, "x", "y", last)
    # Equal sets, hashes and sorted sets written in other orders.
    ra.sadd("s:order", "p", "q", "r")
    rb.sadd("s:order", "r", "q", "p")
    ra.hset("h:order", mapping={"a": "1", "b": "2"})
    rb.hset("h:order", mapping={"b": "2", "a": "1"})
    ra.zadd("z:order", {"m": 1, "n": 1})
    rb.zadd("z:order", {"n": 1, "m": 1})
    eq(ra.object("encoding", "h:diff"), b"listpack")
    eq(ra.object("encoding", "i:diff"), b"intset")
    rc, report, err = verify(url(a), url(b), "--snapshot", "--pause", "0")
    eq(rc, 1, err)
    eq(report["in_process"], True)
    eq(report["keys_compared"], 13)
    eq(reasons(report), {(0, k + ":diff"): ["value"] for k in ("h", "s", "i", "z", "l")})


@test
def snapshots_are_compared_in_process_and_differences_rechecked_live(h):
    # --snapshot reads each server once as a replica does (a full sync, no delay asked of a
    # diskless primary here) and compares the two datasets in-process: round 1 sends no
    # command per key; the later rounds ask the live servers about the keys that differed.
    a = start_redis(h, "--repl-diskless-sync-delay", "0", name="redis-a")
    b = start_redis(h, "--repl-diskless-sync-delay", "0", name="redis-b")
    fill(a.redis(unix=True))
    fill(b.redis(unix=True))
    rc, report, err = verify(url(a), url(b), "--snapshot")
    eq(rc, 0, err)
    eq(report["in_process"], True)
    eq(report["value_check"], "in-process+read")
    eq(report["keys_compared"], 300 + 1 + 8 + 1)
    eq(report["values_in_process"], 300 + 1 + 8 + 1)
    eq(sorted(d["db"] for d in report["databases"]), [0, 2])
    ok(report["setup_seconds"] > 0, "the snapshots' time is reported: %r" % report)

    ra, rb = a.redis(unix=True), b.redis(unix=True)
    rb.delete("str:7")
    rb.set("only-here", "x")
    rb.delete("hash")
    rb.rpush("hash", "now-a-list")
    rb.hset("bighash", "field:11999", "other")
    rb.pexpire("str:9", 50000)
    ra.pexpire("str:10", 100000)
    rb.pexpire("str:10", 100300)
    b.cli("CONFIG", "RESETSTAT", unix=True)
    rc, report, err = verify(url(a), url(b), "--snapshot", "--pause", "0")
    eq(rc, 1, err)
    eq(reasons(report), {(0, "str:7"): ["missing_on_target"],
                         (0, "only-here"): ["missing_on_source"],
                         (0, "hash"): ["type"],
                         (0, "bighash"): ["value"],
                         (0, "str:9"): ["ttl"]})
    eq(report["rounds"], 3)
    # Round 1 cost the server one full sync; TYPE went out only for the 5 keys re-checked
    # in rounds 2 and 3.
    stats = rb.info("commandstats")
    eq(stats.get("cmdstat_type", {}).get("calls", 0), 2 * 5)
    eq(stats.get("cmdstat_psync", {}).get("calls", 0), 1)

    # A key that differs in the snapshots but agrees by round 2 changed during the run.
    rb.set("str:7", "value-7")
    rb.set("str:1", "stale")
    p = subprocess.Popen([keyshift_bin(), "verify", "data", url(a), url(b), "--format", "json",
                          "--no-progress", "--snapshot", "--rounds", "2", "--pause", "3000"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    line = p.stderr.readline().decode()
    ok("round 2 in 3000 ms" in line, "announces round 2: %r" % line)
    rb.set("str:1", "value-1")
    out, err = p.communicate(timeout=60)
    eq(p.returncode, 1, err.decode())
    report = json.loads(out)
    eq([(d["key"], d["reasons"]) for d in report["changed"]], [("str:1", ["value"])])
    ok(("str:1" not in [d["key"] for d in report["differences"]]), "str:1 agreed by round 2")

    # A file against a server's snapshot is compared in-process too.
    ra.save()
    rdb = os.path.join(a.workdir, "dump.rdb")
    rc, report, err = verify(rdb, url(a), "--snapshot")
    eq(rc, 0, err)
    eq(report["in_process"], True)


@test
def digest_falls_back_when_debug_is_not_allowed(h):
    a, b = two_equal(h, debug="no")
    rc, report, err = verify(url(a), url(b), "--digest")
    eq(rc, 0, err)
    eq(report["value_check"], "read")
    b.redis(unix=True).rpush("list", "one more")
    rc, report, err = verify(url(a), url(b), "--pause", "0", "--digest")
    eq(rc, 1, err)
    eq(reasons(report), {(0, "list"): ["value"]})


def load_corpus(h, name):
    """redis-server 7.0 started on a copy of corpus file `name`."""
    d = h.path("corpus-" + name)
    os.makedirs(d)
    shutil.copy(os.path.join(CORPUS, name), os.path.join(d, name))
    return start_redis(h, "--dir", d, "--dbfilename", name, name="redis-corpus")


@test
def rdb_file_against_the_server_that_loaded_it(h):
    names = ["redis70-strings.rdb", "redis70-hashes.rdb", "redis70-lists.rdb",
             "redis70-sets.rdb", "redis70-zsets.rdb", "redis70-streams.rdb",
             "redis70-expire-multidb.rdb", "redis-assets--encodings.rdb"]
    for name in names:
        srv = load_corpus(h, name)
        path = os.path.join(CORPUS, name)
        with open(path + ".json") as f:
            truth = json.load(f)["servers"]["redis-7.0.15"]
        rc, report, err = verify(path, url(srv))
        eq(rc, 0, "%s: %s %s" % (name, err, report and report["differences"][:3]))
        eq(report["keys_compared"], truth["total_keys"], name)
        # The other way round too, and a changed server is caught.
        rc, report, err = verify(url(srv), path, "--dump", "--digest")
        eq(rc, 0, "%s reversed: %s" % (name, err))
        r = srv.redis(unix=True)
        victim = truth["keys"][0]
        key = bytes.fromhex(victim["key"]) if victim["key_is_hex"] else victim["key"]
        r.execute_command("SELECT", victim["db"])
        r.delete(key)
        rc, report, err = verify(path, url(srv), "--pause", "0", "--rounds", "1")
        eq(rc, 1, name)
        eq(list(reasons(report).values()), [["missing_on_target"]], name)
        srv.stop()
        h.forget(srv)


@test
def json_lines_dump_against_a_server(h):
    a = start_redis(h, name="redis-a")
    fill(a.redis(unix=True), big_fields=3000)
    a.cli("SAVE", unix=True)
    rdb = os.path.join(a.workdir, "dump.rdb")
    jsonl = h.path("dump.jsonl")
    with open(jsonl, "wb") as f:
        subprocess.run([keyshift_bin(), "rdb", "dump", rdb], stdout=f, check=True)
    rc, report, err = verify(jsonl, url(a))
    eq(rc, 0, err)
    eq(report["keys_compared"], 300 + 1 + 8 + 1)
    a.redis(unix=True).zadd("zset", {"a": 1.25})
    rc, report, err = verify(jsonl, url(a), "--pause", "0", "--rounds", "1")
    eq(rc, 1, err)
    eq(reasons(report), {(0, "zset"): ["value"]})
    with open(h.path("bad.jsonl"), "w") as f:
        f.write('{"db":0,"key":"k","type":"string","expire_ms":null,"value":"v"}\nnot json\n')
    rc, report, err = verify(h.path("bad.jsonl"), url(a))
    eq(rc, 2)
    ok("bad.jsonl:line 2: byte 0" in err, err)


@test
def keyshift_serve_as_one_side(h):
    a = start_redis(h, name="redis-a")
    k = h.keyshift("--enable-debug-command", "local")
    fill(a.redis(unix=True))
    fill(k.redis(unix=True))
    rc, report, err = verify(url(a), url(k))
    eq(rc, 0, "%s %s" % (err, report and report["differences"][:3]))
    rc, report, err = verify(url(a), url(k), "--digest")
    eq(rc, 0, "%s %s" % (err, report and report["differences"][:3]))
    # Redis 7.0 and keyshift format digest scores differently: sorted sets are read here.
    eq(report["value_check"], "digest+read")
    eq(report["zset_digest"], False)
    ok(report["values_read"] >= 2, "both sorted sets read: %d" % report["values_read"])
    rc, report, err = verify(url(k), url(a))
    eq(rc, 0, err)
    eq(report["values_read"], report["keys_compared"])
    k.redis(unix=True).hset("bighash", "field:5", "x")
    k.redis(unix=True).zadd("bigzset", {"m3": 99})
    rc, report, err = verify(url(a), url(k), "--pause", "0", "--rounds", "1")
    eq(rc, 1, err)
    eq(reasons(report), {(0, "bighash"): ["value"], (0, "bigzset"): ["value"]})


@test
def hash_field_ttls_are_compared_where_a_side_has_them(h):
    # Two keyshift servers (HPEXPIRETIME answers) and Debian's redis-server 7.0 (it does not).
    k1 = h.keyshift()
    k2 = h.keyshift()
    a = start_redis(h, name="redis-no-field-ttls")
    for srv in (k1, k2, a):
        r = srv.redis(unix=True)
        p = r.pipeline(transaction=False)
        p.hset("big", mapping={"f%d" % i: i for i in range(3000)})
        p.hset("small", mapping={"a": 1, "b": 2})
        p.set("plain", "v")
        p.execute()
    for srv in (k1, k2):
        srv.redis(unix=True).execute_command("HPEXPIRE", "big", 600000, "FIELDS", 2, "f10",
                                             "f2999")
        srv.redis(unix=True).execute_command("HPEXPIRE", "small", 600000, "FIELDS", 1, "b")
    rc, report, err = verify(url(k1), url(k2), "--chunk", "100")
    eq(rc, 0, "%s %s" % (err, report and report["differences"][:3]))
    eq(report["field_ttls"], True)
    # One field's TTL moved by a minute, another field's TTL gone: both hashes differ.
    k2.redis(unix=True).execute_command("HPEXPIRE", "big", 660000, "FIELDS", 1, "f2999")
    k2.redis(unix=True).execute_command("HPERSIST", "small", "FIELDS", 1, "b")
    rc, report, err = verify(url(k1), url(k2), "--pause", "0", "--rounds", "1", "--chunk", "100")
    eq(rc, 1, err)
    eq(reasons(report), {(0, "big"): ["field_ttl"], (0, "small"): ["field_ttl"]})
    big = [d for d in report["differences"] if d["key"] == "big"][0]
    ok("1 field TTL(s) differ" in big["detail"], big)
    # Within the tolerance the moved TTL agrees.
    rc, report, err = verify(url(k1), url(k2), "--pause", "0", "--rounds", "1",
                             "--ttl-tolerance", "120000")
    eq(reasons(report), {(0, "small"): ["field_ttl"]})
    # Redis 7.0 holds no field TTLs: the hashes that have them differ, in both directions.
    rc, report, err = verify(url(k1), url(a), "--pause", "0", "--rounds", "1")
    eq(rc, 1, err)
    eq(reasons(report), {(0, "big"): ["field_ttl"], (0, "small"): ["field_ttl"]})
    rc, report, err = verify(url(a), url(k2), "--pause", "0", "--rounds", "1")
    eq(reasons(report), {(0, "big"): ["field_ttl"]})
    text = subprocess.run([keyshift_bin(), "verify", "data", url(a), url(k2), "--no-progress",
                           "--pause", "0", "--rounds", "1"], stdout=subprocess.PIPE,
                          timeout=60).stdout.decode()
    ok("hash field TTLs compared (HPEXPIRETIME: source no, so none, target yes)" in text, text)
    ok("field TTLs differ" in text, text)


@test
def a_database_in_the_url_pins_that_side(h):
    a, b = two_equal(h)
    rb = b.redis(unix=True)
    rb.execute_command("SELECT", 2)
    rb.execute_command("MOVE", "in-db-2", 5)
    rc, report, err = verify(url(a), url(b), "--pause", "0", "--rounds", "1")
    eq(rc, 1, err)
    eq(reasons(report), {(2, "in-db-2"): ["missing_on_target"],
                         (5, "in-db-2"): ["missing_on_source"]})
    rc, report, err = verify(url(a) + "?db=2", url(b) + "?db=5")
    eq(rc, 0, err)
    eq([d["db"] for d in report["databases"]], [2])
    eq(report["keys_compared"], 1)


@test
def errors_exit_2(h):
    a = start_redis(h, name="redis-a")
    rc, report, err = verify(url(a), "unix://" + h.path("nobody.sock"))
    eq(rc, 2)
    ok("nobody.sock" in err, err)
    rc, report, err = verify(url(a), h.path("missing.rdb"))
    eq(rc, 2)
    ok("missing.rdb: cannot read the file" in err, err)
    rc, report, err = verify(url(a), url(a), "--sample", "0")
    eq(rc, 2)
    ok("--sample 0" in err, err)


@test
def a_redis_8_server_against_its_rdb_file_and_keyshift_serve_loading_it(h):
    src = redis8_server(h, "redis8-verify")
    field_ttl = fill_newer(src)
    eq(src.cli("SAVE"), "OK")
    rdb = os.path.join(src.workdir, "dump.rdb")
    keys = sum(int(src.cli("-n", str(db), "DBSIZE")) for db in (0, 2))
    k = h.keyshift("--enable-debug-command", "local", "--dir", src.workdir)
    eq(int(k.cli("DBSIZE")) + int(k.cli("-n", "2", "DBSIZE")), keys)
    for other in (rdb, url(k)):
        for flags in ([], ["--dump"], ["--digest"]):
            rc, report, err = verify(url(src), other, *flags)
            eq(rc, 0, "%s %s: %s %s" % (other, flags, err, report and report["differences"][:3]))
            eq(report["keys_compared"], keys)
            rc, report, err = verify(other, url(src), *flags)
            eq(rc, 0, "%s reversed %s: %s" % (other, flags, err))
    # A field with a TTL that changed and a hash with field TTLs gone from the server are
    # caught.
    client(src).hset("fh:9", "ttl", "changed")
    client(src, 2).delete(field_ttl[2][-1])
    rc, report, err = verify(url(src), rdb, "--pause", "0", "--rounds", "1")
    eq(rc, 1, err)
    eq(reasons(report), {(0, "fh:9"): ["value"], (2, field_ttl[2][-1]): ["missing_on_source"]})


if __name__ == "__main__":
    sys.exit(run_tests())
