#!/usr/bin/python3
"""`keyshift import` and `keyshift verify data` with clusters: a real 3-primary cluster of
Debian's redis-server 7.0 on loopback (cluster-enabled yes, made with
`redis-cli --cluster create`), as the target of file and scan imports, as a scan source
into a single server and into the embedded engine, as a replication source (one replica
session per primary, while a writer keeps changing it), and on either side of verify data.

What must hold: every key reaches the primary owning its slot (an import with no slot
moving follows no redirect, so keyshift's CRC16 slots agree with the cluster's for every
key, hash tags and binary names included); values and TTLs equal the source's key by key;
a slot migrated while the import runs (SETSLOT IMPORTING/MIGRATING, MIGRATE, SETSLOT NODE)
makes ASK and MOVED really happen and the result is still equal; an import killed with -9
and rerun from its checkpoint ends equal; keys of a database other than 0 are refused before
anything is written; a replication import of a cluster killed with -9 during the command
stream continues per primary by PSYNC, with no list element pushed twice.

Run: KEYSHIFT_BIN=build/keyshift /usr/bin/python3 tests/integration/test_import_cluster.py
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import (HOST, BackgroundWriter, Skip, cluster, encode_command, eq,  # noqa: E402
                     keyshift_bin, ok, read_json_file, redis_module, run_tests, test, wait_for)

CORPUS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "shared",
                      "corpus", "rdb")


def single(h, name="single"):
    if not hasattr(h, "singles"):
        h.singles = {}
    if name not in h.singles:
        h.counter += 1
        sock = os.path.join(h.tmp, "%s-%d.sock" % (name, h.counter))
        srv = h.redis_server("--unixsocket", sock, name=name)
        srv.unixsocket = sock
        h.singles[name] = srv
    srv = h.singles[name]
    srv.cli("FLUSHALL")
    return srv


def surl(srv):
    return "redis://%s:%d" % (HOST, srv.port)


def run(*args, timeout=300):
    p = subprocess.run([keyshift_bin()] + [str(a) for a in args], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=timeout)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def import_json(*args, check=0):
    rc, out, err = run("import", *(list(args) + ["--format", "json"]))
    if check is not None:
        eq(rc, check, "keyshift import %s: %s%s" % (" ".join(map(str, args)), out, err))
    try:
        return json.loads(out)
    except ValueError:
        raise AssertionError("not JSON (%d): %r %r" % (rc, out, err))


def verify(a, b, check=0):
    rc, out, err = run("verify", "data", a, b, "--format", "json")
    if check is not None:
        eq(rc, check, "verify data %s %s: %s%s" % (a, b, out, err))
    return json.loads(out) if out.strip().startswith("{") else None


def keys_equal(src, dst_cluster):
    """Every key of the single server `src` has the same DEBUG DIGEST-VALUE (the server's own
    order-independent digest of the value) and, within a second, the same PTTL on the
    cluster node owning its slot, and the cluster holds nothing else."""
    redis = redis_module()
    r = src.redis()
    rc = dst_cluster.client()
    direct = {n.port: redis.Redis(host=HOST, port=n.port, socket_timeout=10)
              for n in dst_cluster.nodes}
    keys = list(r.scan_iter(count=1000))
    n = 0
    for at in range(0, len(keys), 1000):
        chunk = keys[at:at + 1000]
        a = r.pipeline(transaction=False)
        by_node = {}
        for key in chunk:
            a.execute_command("DEBUG", "DIGEST-VALUE", key)
            a.pttl(key)
            port = rc.nodes_manager.get_node_from_slot(rc.keyslot(key)).port
            by_node.setdefault(port, []).append(key)
        got_a = a.execute()
        got_b = {}
        for port, mine in by_node.items():
            b = direct[port].pipeline(transaction=False)
            for key in mine:
                b.execute_command("DEBUG", "DIGEST-VALUE", key)
                b.pttl(key)
            for key, (dv, pttl) in zip(mine, zip(*[iter(b.execute())] * 2)):
                got_b[key] = (dv, pttl)
        for i, key in enumerate(chunk):
            dv, tb = got_b[key]
            eq(dv, got_a[2 * i], "DEBUG DIGEST-VALUE of %r" % key)
            ta = got_a[2 * i + 1]
            ok((ta < 0 and ta == tb) or abs(ta - tb) <= 1000, "PTTL of %r: %r vs %r" % (key, ta, tb))
            n += 1
    eq(dst_cluster.dbsize(), n, "keys in the cluster")
    return n


def fill(srv, count, tag_share=0, tag="mig"):
    """`count` keys of every type into `srv` (db 0), a share of them under one hash tag,
    some with TTLs, some with binary names."""
    r = srv.redis()
    pipe = r.pipeline(transaction=False)
    far = 4102444800000
    for i in range(count):
        name = ("{%s}:%d" % (tag, i)) if tag_share and i % tag_share == 0 else "k:%d" % i
        kind = i % 6
        if kind == 0:
            pipe.set(name, "v%d" % i * (1 + i % 5))
        elif kind == 1:
            pipe.rpush(name, *["e%d" % j for j in range(1 + i % 7)])
        elif kind == 2:
            pipe.hset(name, mapping={"f%d" % j: j for j in range(1 + i % 5)})
        elif kind == 3:
            pipe.sadd(name, *range(1 + i % 9))
        elif kind == 4:
            pipe.zadd(name, {"m%d" % j: j * 1.5 for j in range(1 + i % 6)})
        else:
            pipe.xadd(name, {"a": i}, id="%d-1" % (i + 1))
        if i % 10 == 0:
            pipe.pexpireat(name, far + i)
        if i % 1000 == 0:
            pipe.set(b"bin\x00\xff{" + str(i).encode() + b"}", b"\x00\x01")
        if i % 2000 == 0:
            pipe.execute()
    pipe.execute()


def saved_rdb(h, srv, name):
    srv.cli("SAVE")
    path = h.path(name)
    shutil.copy(os.path.join(srv.workdir, "dump.rdb"), path)
    return path


def counts(doc):
    c = doc["cluster"]
    ok(c is not None, "the report has no cluster section: %r" % doc)
    return c


@test
def a_generated_file_goes_to_the_owning_primaries_without_one_redirect(h):
    src = single(h, "gen-source")
    fill(src, 12000, tag_share=7)
    path = saved_rdb(h, src, "gen.rdb")
    c = cluster(h)
    doc = import_json(path, "--to", c.url(), "--cluster", "--no-checkpoint")
    cc = counts(doc)
    ok(cc["target"], cc)
    eq(len(cc["target_nodes"]), 3, "primaries")
    eq(sum(n["keys"] for n in cc["target_nodes"]), doc["keys"]["written"])
    ok(all(n["keys"] > 0 for n in cc["target_nodes"]), cc)
    # keyshift's slot of every key is the cluster's: no MOVED for a stable cluster
    eq(cc["redirects"], {"moved": 0, "ask": 0}, "redirects")
    keys_equal(src, c)
    eq(verify(path, c.url())["keys_compared"], doc["keys"]["written"])
    # import --verify compares the file with the cluster it wrote
    again = import_json(path, "--to", c.url(), "--no-checkpoint", "--conflict", "replace",
                        "--verify")
    ok(again["verify"]["ran"] and again["verify"]["equal"], again["verify"])
    eq(again["verify"]["keys_compared"], doc["keys"]["written"])


@test
def big_keys_and_the_commands_method_go_to_the_cluster_in_chunks_by_slot(h):
    # Keys written as commands (big keys, --method commands) go in chunks into a temporary
    # key of the key's slot on the slot's owner, then one RENAME: the same as into one
    # server, routed, and acknowledged by the rename.
    src = single(h, "big-source")
    fill(src, 3000, tag_share=7)
    r = src.redis()
    far = 4102444800000
    r.rpush("big:list", *["element-%d" % i for i in range(40000)])
    r.zadd("{mig}:big:zset", {"m%d" % i: i / 3 for i in range(20000)})
    r.hset("big:hash", mapping={"field-%d" % i: "value-%d" % i for i in range(20000)})
    r.sadd("{mig}:big:set", *["s%d" % i for i in range(20000)])
    for i in range(5000):
        r.xadd("big:stream", {"n": i, "payload": "x" * 20}, id="%d-1" % (i + 1))
    r.set("big:string", b"\xab" * (2 << 20))
    r.pexpireat("big:list", far)
    path = saved_rdb(h, src, "big.rdb")
    c = cluster(h)
    doc = import_json(path, "--to", c.url(), "--cluster", "--no-checkpoint",
                      "--big-key-bytes", "65536")
    # The list, sorted set, hash and set are far above 64 KiB in the file.
    ok(doc["keys"]["chunked"] >= 4, "big keys in chunks: %r" % doc["keys"])
    ok(doc["keys"]["commands"] > 4 * 4, doc["keys"])
    keys_equal(src, c)
    # Every key as commands, over what the cluster holds.
    c.flush()
    doc = import_json(path, "--to", c.url(), "--no-checkpoint", "--method", "commands")
    eq(doc["keys"]["as_commands"], doc["keys"]["written"], "every key as commands")
    keys_equal(src, c)
    # The conflict rules hold: the keys exist now, so a second run without --conflict
    # replace is refused before anything is written.
    rc, out, err = run("import", path, "--to", c.url(), "--no-checkpoint", "--method", "commands")
    ok(rc != 0 and "already" in (out + err), "conflict refused: %s%s" % (out, err))
    eq(verify(path, c.url())["equal"], True)


@test
def the_cluster_is_found_from_info_without_the_flag_and_conflicts_are_refused(h):
    src = single(h, "gen-source2")
    fill(src, 3000)
    path = saved_rdb(h, src, "gen2.rdb")
    c = cluster(h)
    doc = import_json(path, "--to", c.url(1), "--no-checkpoint")
    ok(doc["cluster"]["target"], doc["cluster"])
    eq(c.dbsize(), doc["keys"]["written"])
    c.flush()
    c.client().set("k:5", "changed")
    doc = import_json(path, "--to", c.url(2), "--no-checkpoint", check=1)
    ok("already exist" in doc["error"], doc["error"])
    eq(doc["blocked"]["keys"], ['db0 "k:5"'])
    eq(c.dbsize(), 1, "nothing written")
    doc = import_json(path, "--to", c.url(), "--no-checkpoint", "--conflict", "skip")
    eq(doc["keys"]["conflicts_skipped"], 1)
    eq(doc["keys"]["written"], doc["keys"]["read"] - 1)
    eq(c.client().get("k:5"), b"changed")


@test
def corpus_files_import_into_the_cluster_equal_to_a_single_server(h):
    c = cluster(h)
    ref = single(h, "corpus-ref")
    checked = 0
    for name in ("redis70-strings.rdb", "redis70-lists.rdb", "redis70-hashes.rdb",
                 "redis70-sets.rdb", "redis70-zsets.rdb", "redis70-streams.rdb",
                 "redis70-lfu.rdb"):
        path = os.path.join(CORPUS, name)
        if not os.path.exists(path):
            continue
        c.flush()
        ref.cli("FLUSHALL")
        rc, out, err = run("import", path, "--to", surl(ref), "--no-checkpoint")
        eq(rc, 0, "%s into one server: %s%s" % (name, out, err))
        doc = import_json(path, "--to", c.url(), "--no-checkpoint")
        eq(doc["cluster"]["redirects"]["moved"], 0, name)
        keys_equal(ref, c)
        v = verify(path, c.url())
        ok(v["keys_compared"] > 0, v)
        checked += 1
    if checked == 0:
        raise Skip("no corpus at %s" % CORPUS)
    ok(checked >= 5, "only %d corpus files" % checked)


@test
def keys_of_a_database_other_than_0_are_refused_before_anything_is_written(h):
    path = os.path.join(CORPUS, "rdbtools--multiple_databases.rdb")
    if not os.path.exists(path):
        raise Skip("no corpus at %s" % CORPUS)
    c = cluster(h)
    doc = import_json(path, "--to", c.url(), "--no-checkpoint", check=1)
    ok("only database 0" in doc["error"] and "--db-map" in doc["error"], doc["error"])
    eq(c.dbsize(), 0, "nothing written")
    # a target URL naming a database is refused too
    rc, out, err = run("import", path, "--to", c.url() + "/2", "--cluster", "--no-checkpoint")
    eq(rc, 1, out + err)
    ok("database" in out + err, out + err)
    eq(c.dbsize(), 0, "nothing written")
    # a server source with keys in db 1 is refused the same way, by replication and by scan
    src = single(h, "multi-db-source")
    src.cli("-n", "1", "SET", "in-db-1", "x")
    src.cli("SET", "in-db-0", "x")
    for mode in ("sync", "scan"):
        doc = import_json(surl(src), "--to", c.url(), "--mode", mode, "--no-checkpoint", check=1)
        ok("only database 0" in doc["error"], doc["error"])
        eq(c.dbsize(), 0, "nothing written (%s)" % mode)
    doc = import_json(path, "--to", c.url(), "--no-checkpoint", "--db-map", "1:0",
                      "--db-map", "2:0", "--db-map", "3:0", "--db-map", "4:0",
                      "--db-map", "5:0", "--db-map", "6:0", "--db-map", "7:0", "--db-map",
                      "8:0", "--db-map", "9:0", "--db-map", "10:0", "--db-map", "11:0",
                      "--db-map", "12:0", "--db-map", "13:0", "--db-map", "14:0",
                      "--db-map", "15:0")
    ok(doc["ok"], doc)
    eq(c.dbsize(), doc["keys"]["written"])


def migrate_slot(c, slot, on_import_state):
    """Moves `slot` from its owner to another primary as redis-cli --cluster reshard does:
    IMPORTING on the new owner, MIGRATING on the old, MIGRATE of its keys, then NODE on all.
    `on_import_state()` runs between SETSLOT MIGRATING and the MIGRATEs."""
    src = c.owner(slot)
    dst = next(n for n in c.nodes if n is not src)
    dst.cli("CLUSTER", "SETSLOT", slot, "IMPORTING", c.ids[src.port])
    src.cli("CLUSTER", "SETSLOT", slot, "MIGRATING", c.ids[dst.port])
    on_import_state(src, dst)
    while True:
        keys = src.cli("CLUSTER", "GETKEYSINSLOT", slot, 100).split()
        if not keys:
            break
        src.cli("MIGRATE", HOST, dst.port, "", 0, 10000, "KEYS", *keys)
    for n in c.nodes:
        n.cli("CLUSTER", "SETSLOT", slot, "NODE", c.ids[dst.port])
    return src, dst


@test
def a_slot_moved_while_the_import_runs_makes_ask_and_moved_happen_and_the_data_arrives(h):
    src = single(h, "mig-source")
    # every 4th key under one tag: one slot that keeps getting keys all through the file
    fill(src, 40000, tag_share=4)
    path = saved_rdb(h, src, "mig.rdb")
    c = cluster(h)
    slot = int(c.nodes[0].cli("CLUSTER", "KEYSLOT", "{mig}"))
    ckpt = h.path("mig.checkpoint")
    p = subprocess.Popen([keyshift_bin(), "import", path, "--to", c.url(), "--cluster",
                          "--checkpoint", ckpt, "--window", "4", "--format", "json"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120

    def wait(cond, what):
        while not cond():
            if p.poll() is not None:
                raise AssertionError("the import ended before %s: %s" %
                                     (what, p.stdout.read().decode() + p.stderr.read().decode()))
            if time.monotonic() > deadline:
                raise AssertionError("timed out waiting for " + what)
            time.sleep(0.005)

    # The import is paused (SIGSTOP) while the test changes the cluster under it, so each
    # phase is met by keys still to send, whatever the machine's speed.
    wait(lambda: c.dbsize() >= 2000, "2000 keys")
    p.send_signal(signal.SIGSTOP)

    def while_migrating(old, new):
        # New keys of the slot are not on the old owner: it answers ASK, and they land on
        # the new one only through ASKING.
        p.send_signal(signal.SIGCONT)
        wait(lambda: int(new.cli("CLUSTER", "COUNTKEYSINSLOT", slot)) > 0, "an ASKed key")
        p.send_signal(signal.SIGSTOP)

    old, new = migrate_slot(c, slot, while_migrating)
    # The import still believes the old owner serves the slot (ASK changes no map): its next
    # key of the slot meets MOVED.
    p.send_signal(signal.SIGCONT)
    out, err = p.communicate(timeout=300)
    eq(p.returncode, 0, out.decode() + err.decode())
    doc = json.loads(out)
    cc = counts(doc)
    ok(cc["redirects"]["ask"] > 0, cc)
    ok(cc["redirects"]["moved"] > 0, "no MOVED: the import ended before SETSLOT NODE? %r" % cc)
    ok(cc["map_refreshes"] > 0, cc)
    keys_equal(src, c)
    v = verify(surl(src), c.url())
    eq(v["keys_compared"], int(src.cli("DBSIZE")))


def rejected_restores(c):
    """RESTOREs the cluster's nodes refused before running them (redirects, CLUSTERDOWN)."""
    total = 0
    for n in c.nodes:
        for line in n.cli("INFO", "commandstats").splitlines():
            if line.startswith("cmdstat_restore:"):
                for field in line.split(":", 1)[1].split(","):
                    name, _, value = field.partition("=")
                    if name == "rejected_calls":
                        total += int(value)
    return total


@test
def a_cluster_that_goes_down_during_the_import_is_waited_for_and_the_data_arrives(h):
    src = single(h, "down-source")
    fill(src, 20000, tag_share=4, tag="down")
    path = saved_rdb(h, src, "down.rdb")
    c = cluster(h)
    slot = int(c.nodes[0].cli("CLUSTER", "KEYSLOT", "{down}"))
    p = subprocess.Popen([keyshift_bin(), "import", path, "--to", c.url(), "--no-checkpoint",
                          "--window", "4", "--format", "json"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while p.poll() is None and c.dbsize() < 2000 and time.monotonic() < deadline:
        time.sleep(0.005)
    p.send_signal(signal.SIGSTOP)
    owner = c.owner(slot)
    rejected = rejected_restores(c)
    # The owner gives the slot up: the cluster no longer covers every slot and answers
    # CLUSTERDOWN until it is served again.
    owner.cli("CLUSTER", "DELSLOTS", slot)
    while "cluster_state:fail" not in owner.cli("CLUSTER", "INFO") and \
            time.monotonic() < deadline:
        time.sleep(0.01)
    p.send_signal(signal.SIGCONT)
    while rejected_restores(c) == rejected and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    owner.cli("CLUSTER", "ADDSLOTS", slot)
    c.wait_ok()
    out, err = p.communicate(timeout=300)
    eq(p.returncode, 0, out.decode() + err.decode())
    doc = json.loads(out)
    ok(doc["cluster"]["retries"] > 0, doc["cluster"])
    keys_equal(src, c)


@test
def an_import_into_the_cluster_killed_with_9_and_rerun_ends_equal(h):
    src = single(h, "kill-source")
    fill(src, 60000, tag_share=3)
    path = saved_rdb(h, src, "kill.rdb")
    c = cluster(h)
    ckpt = h.path("kill.checkpoint")
    killed = 0
    for stop_at in (4000, 20000):
        p = subprocess.Popen([keyshift_bin(), "import", path, "--to", c.url(),
                              "--checkpoint", ckpt, "--window", "16"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while p.poll() is None and time.monotonic() < deadline:
            if c.dbsize() >= stop_at:
                p.send_signal(signal.SIGKILL)
                break
            time.sleep(0.005)
        p.wait()
        killed += 1 if p.returncode == -signal.SIGKILL else 0
    ok(killed >= 1, "the import was never caught midway")
    doc = import_json(path, "--to", c.url(), "--checkpoint", ckpt)
    ok(doc["resumed"] or doc["already_complete"], doc)
    ok(doc["keys"]["resumed_past"] > 0 or doc["already_complete"], doc["keys"])
    keys_equal(src, c)
    eq(verify(path, c.url())["keys_compared"], int(src.cli("DBSIZE")))


@test
def a_cluster_scanned_into_one_server_and_into_the_embedded_engine_is_equal(h):
    gen = single(h, "scan-gen")
    fill(gen, 9000, tag_share=5)
    path = saved_rdb(h, gen, "scan.rdb")
    c = cluster(h)
    import_json(path, "--to", c.url(), "--no-checkpoint")
    dst = single(h, "scan-target")
    doc = import_json(c.url(1), "--to", surl(dst), "--no-checkpoint", "--scan-count", "200",
                      "--mode", "scan")
    ok(doc["cluster"]["source"], doc["cluster"])
    eq(len(doc["cluster"]["source_nodes"]), 3, doc)
    eq(sum(n["keys"] for n in doc["cluster"]["source_nodes"]), c.dbsize())
    eq(doc["keys"]["written"], c.dbsize())
    eq(dst.cli("DEBUG", "DIGEST"), gen.cli("DEBUG", "DIGEST"))
    eq(verify(c.url(), surl(dst))["keys_compared"], c.dbsize())
    # into the embedded engine: the data file verify data compares with the cluster
    out_dir = h.path("scan-embedded")
    os.makedirs(out_dir)
    doc = import_json(c.url(), "--dir", out_dir, "--target", "redis-7.0", "--mode", "scan")
    eq(doc["keys"]["written"], c.dbsize())
    rdb = os.path.join(out_dir, "dump.rdb")
    eq(verify(rdb, c.url())["keys_compared"], c.dbsize())
    eq(verify(c.url(), path)["keys_compared"], c.dbsize())


@test
def a_cluster_scanned_while_a_slot_moves_still_gives_every_key_once(h):
    gen = single(h, "scanmig-gen")
    fill(gen, 20000, tag_share=3, tag="scanmig")
    path = saved_rdb(h, gen, "scanmig.rdb")
    c = cluster(h)
    import_json(path, "--to", c.url(), "--no-checkpoint")
    slot = int(c.nodes[0].cli("CLUSTER", "KEYSLOT", "{scanmig}"))
    dst = single(h, "scanmig-target")

    def start():
        return subprocess.Popen([keyshift_bin(), "import", c.url(), "--to", surl(dst),
                                 "--no-checkpoint", "--scan-count", "50", "--format", "json",
                                 "--mode", "scan"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def paused_at(p, keys):
        deadline = time.monotonic() + 120
        while p.poll() is None and int(dst.cli("DBSIZE")) < keys and time.monotonic() < deadline:
            time.sleep(0.005)
        ok(p.poll() is None, "the scan ended before %d keys" % keys)
        p.send_signal(signal.SIGSTOP)

    def finished(p):
        p.send_signal(signal.SIGCONT)
        out, err = p.communicate(timeout=300)
        eq(p.returncode, 0, out.decode() + err.decode())
        return json.loads(out)

    # The slot moves whole while the scan is paused: keys moved onto a node its scan had
    # passed are seen by no scan, and the slot is read again from its new owner at the end.
    p = start()
    paused_at(p, 3000)
    migrate_slot(c, slot, lambda old, new: None)
    doc = finished(p)
    eq(int(dst.cli("DBSIZE")), int(gen.cli("DBSIZE")), "every key arrived: %r" % doc)
    eq(dst.cli("DEBUG", "DIGEST"), gen.cli("DEBUG", "DIGEST"))
    ok(doc["cluster"]["slots_reread"] >= 1, doc["cluster"])

    # A migration still under way when the scan ends is reported plainly.
    dst.cli("FLUSHALL")
    p = start()
    paused_at(p, 3000)
    doc = {}

    def scan_ends_meanwhile(old, new):
        keys = old.cli("CLUSTER", "GETKEYSINSLOT", slot, 10).split()
        old.cli("MIGRATE", HOST, new.port, "", 0, 10000, "KEYS", *keys)
        doc.update(finished(p))

    migrate_slot(c, slot, scan_ends_meanwhile)
    ok(any("migration was under way" in w for w in doc["warnings"]), doc["warnings"])


@test
def a_cluster_scan_killed_midway_resumes_per_node_and_cluster_to_cluster_verifies(h):
    gen = single(h, "scan2-gen")
    fill(gen, 30000)
    path = saved_rdb(h, gen, "scan2.rdb")
    a = cluster(h)
    import_json(path, "--to", a.url(), "--no-checkpoint")
    b = cluster(h, "cluster-b")
    ckpt = h.path("scan2.checkpoint")
    p = subprocess.Popen([keyshift_bin(), "import", a.url(), "--to", b.url(), "--mode", "scan",
                          "--checkpoint", ckpt, "--scan-count", "50"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while p.poll() is None and time.monotonic() < deadline and b.dbsize() < 12000:
        time.sleep(0.005)
    p.send_signal(signal.SIGKILL)
    p.wait()
    with open(ckpt) as f:
        state = json.load(f)
    nodes = {s.get("node") for s in state["scans"]}
    ok(len(nodes) >= 1 and None not in nodes, state["scans"])
    doc = import_json(a.url(), "--to", b.url(), "--mode", "scan", "--checkpoint", ckpt)
    ok(doc["ok"], doc)
    eq(b.dbsize(), a.dbsize())
    v = verify(a.url(), b.url(2))
    eq(v["keys_compared"], a.dbsize())
    # and a difference is found in a cluster too
    b.client().set("k:7", "other")
    v = verify(a.url(), b.url(), check=1)
    ok(v is not None and v["differences"], v)


class ClusterWriter(BackgroundWriter):
    """Keeps changing a cluster: SET, INCR, list pushes of unique elements (a doubled command
    shows as a doubled element), hash writes, DEL, EXPIRE, and MULTI/EXEC on one node (keys
    under one hash tag). `sure` counts the steps that always reach the replication stream
    (a DEL or EXPIRE of a missing key does not)."""

    seed = 11

    def __init__(self, c):
        self.c = c
        self.sure = 0
        super().__init__()

    def connect(self):
        rc = self.c.client()
        tx_port = rc.nodes_manager.get_node_from_slot(rc.keyslot("{tx}")).port
        return rc, redis_module().Redis(host=HOST, port=tx_port, socket_timeout=10)

    def step(self, clients, rnd):
        rc, tx = clients
        i = rnd.randint(0, 3000)
        op = rnd.randint(0, 6)
        if op not in (4, 5):
            self.sure += 1
        if op == 0:
            rc.set("k:%d" % (i * 6), "w%d" % self.count)
        elif op == 1:
            rc.incr("counter:%d" % (i % 10))
        elif op == 2:
            rc.rpush("log:%d" % (i % 50), self.count)
        elif op == 3:
            rc.hset("k:%d" % (i * 6 + 2), "w", self.count)
        elif op == 4:
            rc.delete("k:%d" % (i * 6 + 3))
        elif op == 5:
            rc.expire("k:%d" % (i * 6), 3600)
        else:
            p = tx.pipeline(transaction=True)
            p.incr("{tx}:a")
            p.rpush("{tx}:log", self.count)
            p.execute()


def all_synced(path):
    streams = read_json_file(path).get("streams") or []
    return len(streams) == 3 and all(s["synced"] for s in streams)


def replicated_cluster(h, name, keys):
    gen = single(h, name + "-gen")
    fill(gen, keys, tag_share=4, tag=name)
    path = saved_rdb(h, gen, name + ".rdb")
    c = cluster(h)
    c.flush()
    import_json(path, "--to", c.url(), "--no-checkpoint")
    return c


@test
def a_cluster_is_replicated_one_session_per_primary_while_a_writer_runs_and_ends_equal(h):
    c = replicated_cluster(h, "repl", 9000)
    dst = single(h, "repl-target")
    dst.cli("FLUSHALL")
    ckpt = h.path("repl.checkpoint")
    writer = ClusterWriter(c)
    p = subprocess.Popen([keyshift_bin(), "import", c.url(1), "--to", surl(dst), "--checkpoint",
                          ckpt, "--until", "sigterm", "--format", "json"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wait_for(lambda: all_synced(ckpt) or p.poll() is not None, "every primary's full sync")
    start, sure = writer.count, writer.sure
    wait_for(lambda: writer.count > start + 2000 or p.poll() is not None, "the writer")
    writer.stop()
    streamed = writer.sure - sure
    if p.poll() is not None:
        raise AssertionError("the import ended early: %r" % (p.communicate(),))
    # WAIT on each primary: the primary asks keyshift's session for an ACK (REPLCONF GETACK).
    for n in c.nodes:
        eq(n.cli("WAIT", "1", "20000"), "1", "WAIT on %d" % n.port)
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=60)
    eq(p.returncode, 0, err.decode())
    doc = json.loads(out)
    ok(doc["cluster"]["source"], doc["cluster"])
    eq(len(doc["cluster"]["source_nodes"]), 3)
    streams = doc["replication"]["streams"]
    eq(len(streams), 3)
    eq({s["sync"] for s in streams}, {"full"})
    eq(len({s["replid"] for s in streams}), 3, streams)
    # Every write made after the full syncs came through the streams (a MULTI counts once).
    ok(doc["replication"]["commands_applied"] >= streamed, (streamed, doc["replication"]))
    eq(dst.cli("EXISTS", "__keyshift_import_offset__"), "0")
    state = read_json_file(ckpt)
    eq(sorted(s["address"] for s in state["streams"]),
       sorted("%s:%d" % (HOST, n.port) for n in c.nodes))
    eq(int(dst.cli("DBSIZE")), c.dbsize())
    v = verify(c.url(), surl(dst))
    eq(v["keys_compared"], c.dbsize())
    # A second run continues every primary by PSYNC and has nothing left to do.
    doc = import_json(c.url(), "--to", surl(dst), "--checkpoint", ckpt)
    eq({s["sync"] for s in doc["replication"]["streams"]}, {"partial"})
    eq(doc["replication"]["lag_bytes"], 0)
    eq(verify(c.url(), surl(dst))["keys_compared"], c.dbsize())


@test
def a_cluster_replication_killed_during_the_stream_continues_per_primary_without_doubling(h):
    c = replicated_cluster(h, "replkill", 6000)
    dst = single(h, "replkill-target")
    dst.cli("FLUSHALL")
    ckpt = h.path("replkill.checkpoint")
    writer = ClusterWriter(c)
    p = subprocess.Popen([keyshift_bin(), "import", c.url(), "--to", surl(dst), "--checkpoint",
                          ckpt, "--until", "sigterm"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_for(lambda: all_synced(ckpt) or p.poll() is not None, "every primary's full sync")
    offsets = lambda: sum(s["repl_offset"] for s in read_json_file(ckpt).get("streams", []))
    start = offsets()
    wait_for(lambda: offsets() > start + 20000 or p.poll() is not None,
               "streamed commands acknowledged")
    p.send_signal(signal.SIGKILL)
    p.wait()
    eq(p.returncode, -signal.SIGKILL)
    time.sleep(0.2)
    writer.stop()
    # The markers the killed run left say how far each primary's stream got.
    markers = [k for k in dst.redis().scan_iter(match="__keyshift_import_offset__*")]
    ok(len(markers) >= 1, "no marker left by the killed run")
    doc = import_json(c.url(), "--to", surl(dst), "--checkpoint", ckpt)
    ok(doc["resumed"], doc)
    eq({s["sync"] for s in doc["replication"]["streams"]}, {"partial"})
    eq(dst.cli("DBSIZE"), str(c.dbsize()))
    eq(verify(c.url(), surl(dst))["keys_compared"], c.dbsize())


@test
def a_cluster_replication_killed_during_the_full_sync_resyncs_and_drops_what_the_source_lost(h):
    c = replicated_cluster(h, "replfull", 60000)
    dst = single(h, "replfull-target")
    dst.cli("FLUSHALL")
    ckpt = h.path("replfull.checkpoint")
    p = subprocess.Popen([keyshift_bin(), "import", c.url(), "--to", surl(dst), "--checkpoint",
                          ckpt, "--until", "sigterm"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_for(lambda: int(dst.cli("DBSIZE")) > 5000 or p.poll() is not None,
               "keys of the full syncs in the target")
    p.send_signal(signal.SIGKILL)
    p.wait()
    eq(p.returncode, -signal.SIGKILL)
    ok(not all_synced(ckpt), "the full syncs ended before the kill: %r" % read_json_file(ckpt))
    # Keys the killed run may have written go away at the source: the resync must not keep
    # them, and must not take away what another primary's session wrote.
    rc = c.client()
    written = [k for k in dst.redis().scan_iter(count=1000)][:300]
    ok(len(written) > 0, "nothing written before the kill")
    for k in written:
        rc.delete(k)
    doc = import_json(c.url(), "--to", surl(dst), "--checkpoint", ckpt)
    ok(doc["resumed"], doc)
    # Primaries whose full sync was not whole sync in full again (one whose end was saved
    # just before the kill may continue).
    ok("full" in {s["sync"] for s in doc["replication"]["streams"]}, doc["replication"])
    ok(any("removed from the target" in w for w in doc["warnings"]), doc["warnings"])
    eq(int(dst.cli("DBSIZE")), c.dbsize())
    eq(verify(c.url(), surl(dst))["keys_compared"], c.dbsize())


@test
def a_cluster_replicated_into_the_embedded_engine_saves_a_file_equal_to_it(h):
    c = replicated_cluster(h, "replemb", 5000)
    out_dir = h.path("replemb-out")
    os.makedirs(out_dir)
    doc = import_json(c.url(), "--dir", out_dir, "--target", "valkey-8.0")
    eq(doc["source_kind"], "sync")
    eq(len(doc["replication"]["streams"]), 3)
    eq(doc["keys"]["written"], c.dbsize())
    eq(verify(os.path.join(out_dir, "dump.rdb"), c.url())["keys_compared"], c.dbsize())


class SingleWriter(BackgroundWriter):
    """Keeps changing a single server with what a cluster must cut by slot: SET, INCR,
    pushes of unique elements, MSET and DEL over keys of several slots, and MULTI/EXEC over
    several slots."""

    seed = 5

    def __init__(self, srv):
        self.srv = srv
        super().__init__()

    def connect(self):
        return self.srv.redis()

    def step(self, r, rnd):
        i = rnd.randint(0, 3000)
        op = rnd.randint(0, 5)
        if op == 0:
            r.set("k:%d" % (i * 6), "w%d" % self.count)
        elif op == 1:
            r.incr("counter:%d" % (i % 10))
        elif op == 2:
            r.rpush("log:%d" % (i % 50), self.count)
        elif op == 3:
            r.mset({"m:%d" % i: self.count, "m:%d" % (i + 1): self.count})
        elif op == 4:
            r.delete("k:%d" % (i * 6 + 3), "m:%d" % i)
        else:
            p = r.pipeline(transaction=True)
            p.incr("tx:a")
            p.rpush("tx:log", self.count)
            p.execute()


def markers_in(c):
    return [k for n in c.nodes for k in n.redis().scan_iter(match="__keyshift_import_offset__*")]


@test
def a_server_replicated_into_a_cluster_is_cut_by_slot_and_a_kill_resumes_without_doubling(h):
    src = single(h, "tocluster-src")
    fill(src, 6000, tag_share=5, tag="tc")
    c = cluster(h)
    ckpt = h.path("tocluster.checkpoint")
    writer = SingleWriter(src)
    p = subprocess.Popen([keyshift_bin(), "import", surl(src), "--to", c.url(), "--checkpoint",
                          ckpt, "--until", "sigterm"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wait_for(lambda: read_json_file(ckpt).get("synced") or p.poll() is not None,
             "the full sync")
    offset = lambda: read_json_file(ckpt).get("repl_offset", 0)
    start = offset()
    wait_for(lambda: offset() > start + 30000 or p.poll() is not None,
             "streamed commands acknowledged")
    if p.poll() is not None:
        raise AssertionError("the import ended early: %r" % (p.communicate(),))
    p.send_signal(signal.SIGKILL)
    p.wait()
    writer.stop()
    # Each slot the stream wrote has its marker, set in the same transaction as the writes.
    marks = markers_in(c)
    ok(len(marks) > 10, "slot markers left by the killed run: %d" % len(marks))
    doc = import_json(surl(src), "--to", c.url(), "--checkpoint", ckpt)
    ok(doc["resumed"], doc)
    eq(doc["replication"]["sync"], "partial", doc["replication"])
    ok(any("split into one per slot" in w for w in doc["warnings"]), doc["warnings"])
    ok(any("spanned several slots" in w for w in doc["warnings"]), doc["warnings"])
    eq(markers_in(c), [], "a clean stop removes every slot marker")
    # Equal key by key: no list element pushed twice, no INCR counted twice.
    eq(c.dbsize(), int(src.cli("DBSIZE")))
    v = verify(surl(src), c.url(1))
    eq(v["keys_compared"], int(src.cli("DBSIZE")))
    # A command no cluster can run (RENAME across slots) stops the import and names it.
    src.cli("SET", "rename:a", "1")
    src.cli("RENAME", "rename:a", "rename:b")
    rc, out, err = run("import", surl(src), "--to", c.url(), "--checkpoint", ckpt,
                       "--format", "json")
    eq(rc, 1, out + err)
    doc = json.loads(out)
    ok("RENAME" in doc["error"] and "CROSSSLOT" in doc["error"], doc["error"])


@test
def a_cluster_replicated_into_another_cluster_while_a_writer_runs_ends_equal(h):
    a = replicated_cluster(h, "c2c", 6000)
    b = cluster(h, "cluster-b")
    writer = ClusterWriter(a)
    p = subprocess.Popen([keyshift_bin(), "import", a.url(), "--to", b.url(1), "--no-checkpoint",
                          "--until", "sigterm", "--format", "json"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wait_for(lambda: b.dbsize() >= 6000 or p.poll() is not None, "the full syncs")
    start, sure = writer.count, writer.sure
    wait_for(lambda: writer.count > start + 3000 or p.poll() is not None, "the writer")
    writer.stop()
    streamed = writer.sure - sure
    if p.poll() is not None:
        raise AssertionError("the import ended early: %r" % (p.communicate(),))
    for n in a.nodes:
        eq(n.cli("WAIT", "1", "20000"), "1", "WAIT on %d" % n.port)
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=60)
    eq(p.returncode, 0, err.decode())
    doc = json.loads(out)
    ok(doc["cluster"]["source"] and doc["cluster"]["target"], doc["cluster"])
    ok(doc["replication"]["commands_applied"] >= streamed, (streamed, doc["replication"]))
    eq(markers_in(b), [])
    eq(b.dbsize(), a.dbsize())
    eq(verify(a.url(), b.url())["keys_compared"], a.dbsize())


def command_file(path, count):
    """A RESP command file (as redis-cli --pipe takes) of `count` rounds: SET, INCR, pushes of
    unique elements, MSET and DEL over several slots, MULTI/EXEC over several slots."""
    with open(path, "wb") as f:
        for i in range(count):
            f.write(encode_command(["SET", "k:%d" % (i % 700), "v%d" % i]))
            f.write(encode_command(["INCR", "counter:%d" % (i % 13)]))
            f.write(encode_command(["RPUSH", "log:%d" % (i % 40), i]))
            if i % 7 == 0:
                f.write(encode_command(["MSET", "m:%d" % i, i, "m:%d" % (i + 1), i]))
                f.write(encode_command(["DEL", "k:%d" % ((i + 3) % 700), "m:%d" % (i - 6)]))
            if i % 11 == 0:
                f.write(encode_command(["MULTI"]))
                f.write(encode_command(["INCR", "tx:a"]))
                f.write(encode_command(["RPUSH", "tx:log", i]))
                f.write(encode_command(["EXEC"]))
    return path


@test
def a_command_file_goes_into_a_cluster_slot_by_slot_and_a_kill_reruns_exactly_once(h):
    path = command_file(h.path("commands.resp"), 40000)
    ref = single(h, "cmdfile-ref")
    import_json(path, "--to", surl(ref), "--no-checkpoint")
    c = cluster(h)
    ckpt = h.path("cmdfile.checkpoint")
    p = subprocess.Popen([keyshift_bin(), "import", path, "--to", c.url(), "--checkpoint", ckpt],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_for(lambda: len(markers_in(c)) > 20 or p.poll() is not None, "slot markers")
    p.send_signal(signal.SIGKILL)
    p.wait()
    if p.returncode != -signal.SIGKILL:
        raise Skip("the import ended before the kill (rc %d)" % p.returncode)
    doc = import_json(path, "--to", c.url(), "--checkpoint", ckpt)
    ok(doc["resumed"], doc)
    eq(markers_in(c), [], "a clean end removes every slot marker")
    # Equal to the same file imported into one server: nothing applied twice or lost.
    eq(c.dbsize(), int(ref.cli("DBSIZE")))
    eq(verify(surl(ref), c.url())["keys_compared"], int(ref.cli("DBSIZE")))


if __name__ == "__main__":
    redis_module()
    sys.exit(run_tests())
