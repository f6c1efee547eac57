#!/usr/bin/python3
"""AOF persistence of `keyshift serve` against Debian's redis-server 7.0: a multi-part
appendonlydir written by redis-server loads into keyshift with an equal DEBUG DIGEST and
the other way round; kill -9 under writers with appendfsync always loses no acknowledged
write; truncated tails, BGREWRITEAOF, CONFIG SET appendonly, WAITAOF and the effects written
(PEXPIREAT, SET PXAT, ...).

Run: KEYSHIFT_BIN=build/keyshift /usr/bin/python3 tests/integration/test_aof.py [NAME...]
"""

import os
import shutil
import signal
import subprocess
import sys
import threading
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import eq, keyshift_bin, ok, run_tests, test  # noqa: E402

DEBUG = ("--enable-debug-command", "yes")


def fill(r):
    """A dataset with every type, TTLs, several databases, and effects Valkey rewrites."""
    p = r.pipeline(transaction=False)
    for i in range(300):
        p.set("str:%d" % i, "v%d" % i)
    p.set("ttl:ex", "x", ex=100000)
    p.setex("ttl:setex", 100000, "y")
    p.set("ttl:exp", "z")
    p.expire("ttl:exp", 100000)
    p.incrbyfloat("float", "1.5")
    p.incrbyfloat("float", "2.25")
    p.rpush("list", *["e%d" % i for i in range(200)])
    p.lpush("smalllist", "a", "b", "c")
    p.hset("hash", mapping={"f%d" % i: "v%d" % i for i in range(100)})
    p.hincrbyfloat("hash", "fl", "0.5")
    p.sadd("set", *range(50))
    p.sadd("strset", *["m%d" % i for i in range(20)])
    p.spop("strset")
    p.zadd("zset", {"z%d" % i: i * 1.5 for i in range(150)})
    for i in range(20):
        p.xadd("stream", {"f": "v%d" % i})
    p.execute()
    r.xgroup_create("stream", "g1", id="0")
    r.xreadgroup("g1", "c1", {"stream": ">"}, count=5)
    with r.pipeline(transaction=True) as t:
        t.incr("counter")
        t.lpush("txlist", "1", "2")
        t.execute()
    r.execute_command("SELECT", 3)
    r.set("db3key", "in db 3")
    r.execute_command("SELECT", 0)


def digest(r):
    return r.execute_command("DEBUG", "DIGEST")


def poll(predicate, what, limit_s=30.0):
    """Re-checks a server-side condition until it holds; bounded."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if predicate():
            return
    raise AssertionError("timed out waiting for " + what)


def rewrite_done(r):
    return lambda: r.info("persistence")["aof_rewrite_in_progress"] == 0


def copy_aof(src_dir, dirname="appendonlydir"):
    def config(workdir):
        shutil.copytree(os.path.join(src_dir, dirname), os.path.join(workdir, dirname),
                        dirs_exist_ok=True)
        return "appendonly yes\n"
    return config


@test
def redis_appendonlydir_loads_into_keyshift_with_equal_digest(h):
    ref = h.redis_server("--appendonly", "yes", "--appendfsync", "always")
    r = ref.redis()
    fill(r)
    r.bgrewriteaof()
    poll(rewrite_done(r), "redis-server's rewrite")
    # After the rewrite: a base RDB and writes in the next incr file.
    r.set("after:rewrite", "1")
    r.expire("str:1", 5000)
    r.lpop("list")
    want = digest(r)
    files = sorted(os.listdir(os.path.join(ref.workdir, "appendonlydir")))
    ok(any(f.endswith(".base.rdb") for f in files), "redis wrote an RDB base: %r" % files)
    h.forget(ref)
    ref.stop()
    ks = h.keyshift(*DEBUG, config=copy_aof(ref.workdir))
    k = ks.redis()
    eq(digest(k), want, "DEBUG DIGEST after loading redis-server's AOF")
    eq(k.get("after:rewrite"), b"1")
    ok("DB loaded from append only file" in ks.log(), "load logged")


@test
def keyshift_aof_loads_into_redis_server_with_equal_digest(h):
    ks = h.keyshift(*DEBUG, "--appendonly", "yes", "--appendfsync", "always")
    k = ks.redis()
    fill(k)
    k.bgrewriteaof()
    poll(rewrite_done(k), "keyshift's rewrite")
    k.set("after:rewrite", "2")
    k.pexpire("str:2", 7000000)
    k.getex("str:3", ex=7000)
    want = digest(k)
    h.forget(ks)
    eq(ks.stop(), 0, "keyshift exits cleanly")
    ref = h.redis_server("--appendonly", "yes", "--dir", ks.workdir)
    eq(digest(ref.redis()), want, "DEBUG DIGEST after redis-server loaded keyshift's AOF")


@test
def a_resp_base_without_rdb_preamble_loads_into_keyshift_and_redis_server(h):
    ks = h.keyshift(*DEBUG, "--appendonly", "yes", "--aof-use-rdb-preamble", "no")
    k = ks.redis()
    fill(k)
    k.bgrewriteaof()
    poll(rewrite_done(k), "keyshift's rewrite")
    k.set("after:rewrite", "3")
    want = digest(k)
    aofdir = os.path.join(ks.workdir, "appendonlydir")
    base = [f for f in os.listdir(aofdir) if ".base." in f]
    eq(base, ["appendonly.aof.2.base.aof"], "a RESP base")
    with open(os.path.join(aofdir, base[0]), "rb") as f:
        ok(f.read(1) == b"*", "the base is RESP, not RDB")
    h.forget(ks)
    ks.stop()
    again = h.keyshift(*DEBUG, "--appendonly", "yes", "--dir", ks.workdir, name="again")
    eq(digest(again.redis()), want, "keyshift reloads its RESP base")
    h.forget(again)
    again.stop()
    ref = h.redis_server("--appendonly", "yes", "--dir", ks.workdir)
    eq(digest(ref.redis()), want, "redis-server loads keyshift's RESP base")


@test
def kill_9_under_writers_with_appendfsync_always_loses_no_acknowledged_write(h):
    ks = h.keyshift("--appendonly", "yes", "--appendfsync", "always")
    acked = {}
    lock = threading.Lock()
    stop = threading.Event()

    def writer(n):
        r = ks.redis(socket_timeout=5)
        i = 0
        try:
            while not stop.is_set():
                key = "w%d:%d" % (n, i)
                r.set(key, i)           # acknowledged once this returns
                r.incr("count:%d" % n)  # a counter whose acknowledged value only grows
                with lock:
                    acked[key] = i
                    acked["count:%d" % n] = i + 1
                i += 1
        except Exception:  # noqa: BLE001 - the server was killed under us
            pass

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    poll(lambda: len(acked) > 2000, "writers to get going")
    os.kill(ks.proc.pid, signal.SIGKILL)
    stop.set()
    for t in threads:
        t.join()
    ks.proc.wait()
    h.forget(ks)
    with lock:
        snapshot = dict(acked)
    ok(len(snapshot) > 2000, "writes were acknowledged before the kill")
    again = h.keyshift("--appendonly", "yes", "--dir", ks.workdir, name="restarted")
    r = again.redis()
    lost = []
    for key, value in snapshot.items():
        got = r.get(key)
        if key.startswith("count:"):
            if got is None or int(got) < value:
                lost.append((key, value, got))
        elif got != str(value).encode():
            lost.append((key, value, got))
    eq(lost[:5], [], "acknowledged writes missing after kill -9 (%d of %d)"
       % (len(lost), len(snapshot)))


@test
def a_truncated_tail_is_cut_off_or_refused_as_aof_load_truncated_says(h):
    ks = h.keyshift("--appendonly", "yes")
    r = ks.redis()
    r.set("a", "1")
    r.set("b", "2")
    h.forget(ks)
    ks.stop()
    aofdir = os.path.join(ks.workdir, "appendonlydir")
    incr = [f for f in os.listdir(aofdir) if f.endswith(".incr.aof")][-1]
    path = os.path.join(aofdir, incr)
    whole = os.path.getsize(path)
    partial = b"*3\r\n$3\r\nSET\r\n$1\r\nc\r\n$10\r\nonly"
    with open(path, "ab") as f:
        f.write(partial)
    # aof-load-truncated no: refused, naming the file and the offset of the partial command.
    p = subprocess.run([keyshift_bin(), "serve", "--port", "0", "--appendonly", "yes",
                        "--aof-load-truncated", "no", "--dir", ks.workdir],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
    out = p.stdout.decode("utf-8", "replace")
    ok(p.returncode != 0, "refused to start: " + out[-500:])
    ok(("%s: byte %d" % (path, whole)) in out, "error names file and offset: " + out[-500:])
    eq(os.path.getsize(path), whole + len(partial), "the file is left alone when refused")
    # aof-load-truncated yes (the default): loads the whole commands, cuts the tail.
    again = h.keyshift("--appendonly", "yes", "--dir", ks.workdir, name="tolerant")
    r = again.redis()
    eq(r.mget("a", "b", "c"), [b"1", b"2", None])
    eq(os.path.getsize(path), whole, "the partial command was cut off")
    ok("Truncating the AOF" in again.log(), "truncation logged")


@test
def writes_are_logged_as_their_effects(h):
    ks = h.keyshift("--appendonly", "yes", "--appendfsync", "always")
    r = ks.redis()
    r.set("k", "v", ex=1000)
    r.setex("k2", 1000, "v")
    r.set("k3", "v")
    r.expire("k3", 1000)
    r.incrbyfloat("f", "1.5")
    r.sadd("s", "only")
    r.spop("s")
    r.xadd("x", {"a": "b"})
    r.execute_command("SELECT", 2)
    r.set("in2", "x")
    aofdir = os.path.join(ks.workdir, "appendonlydir")
    incr = [f for f in os.listdir(aofdir) if f.endswith(".incr.aof")][-1]
    with open(os.path.join(aofdir, incr), "rb") as f:
        text = f.read()
    ok(b"PXAT" in text and b"PEXPIREAT" in text, "relative TTLs became absolute: %r" % text)
    ok(b"SETEX" not in text and b"\r\nEXPIRE\r\n" not in text, "no relative TTL left")
    ok(b"KEEPTTL" in text, "INCRBYFLOAT became SET ... KEEPTTL")
    ok(b"SREM" in text and b"SPOP" not in text, "SPOP became SREM")
    ok(b"$1\r\n*\r\n" not in text, "XADD's * became the ID")
    ok(b"*2\r\n$6\r\nSELECT\r\n$1\r\n2\r\n" in text, "a SELECT before the db 2 write")
    with open(os.path.join(aofdir, "appendonly.aof.manifest")) as f:
        manifest = f.read().splitlines()
    eq(manifest, ["file appendonly.aof.1.base.rdb seq 1 type b",
                  "file appendonly.aof.1.incr.aof seq 1 type i"], "manifest")


@test
def bgrewriteaof_replaces_base_and_incr_and_keeps_the_data(h):
    ks = h.keyshift(*DEBUG, "--appendonly", "yes")
    r = ks.redis()
    fill(r)
    with ks.conn() as c:
        eq(c.command("BGREWRITEAOF")[0], b"+Background append only file rewriting started\r\n")
    poll(rewrite_done(r), "the rewrite")
    r.set("late", "1")
    info = r.info("persistence")
    eq(info["aof_rewrites"], 1)
    eq(info["aof_last_bgrewrite_status"], "ok")
    ok(info["aof_base_size"] > 0 and info["aof_current_size"] >= info["aof_base_size"], info)
    aofdir = os.path.join(ks.workdir, "appendonlydir")
    eq(sorted(os.listdir(aofdir)), ["appendonly.aof.2.base.rdb", "appendonly.aof.2.incr.aof",
                                     "appendonly.aof.manifest"], "history files removed")
    want = digest(r)
    h.forget(ks)
    ks.stop()
    again = h.keyshift(*DEBUG, "--appendonly", "yes", "--dir", ks.workdir, name="again")
    eq(digest(again.redis()), want)


@test
def config_set_appendonly_yes_writes_the_dataset_and_wins_over_the_rdb(h):
    ks = h.keyshift(*DEBUG, "--save", "")
    r = ks.redis()
    fill(r)
    eq(r.config_set("appendonly", "yes"), True)
    poll(lambda: os.path.exists(os.path.join(ks.workdir, "appendonlydir",
                                             "appendonly.aof.manifest"))
         and r.info("persistence")["aof_rewrite_in_progress"] == 0, "the first rewrite")
    r.set("after", "on")
    want = digest(r)
    eq(r.execute_command("WAITAOF", 1, 0, 0), [1, 0])
    h.forget(ks)
    ks.stop()
    again = h.keyshift(*DEBUG, "--appendonly", "yes", "--dir", ks.workdir, name="again")
    eq(digest(again.redis()), want)
    eq(again.redis().config_set("appendonly", "no"), True)
    eq(again.redis().info("persistence")["aof_enabled"], 0)


@test
def debug_loadaof_reloads_the_dataset_from_the_aof_with_the_same_absolute_ttls(h):
    ks = h.keyshift(*DEBUG, "--appendonly", "yes")
    r = ks.redis()
    fill(r)
    r.set("keep", "x", ex=1000)
    r.set("keep", "y", keepttl=True)
    before = (digest(r), r.pexpiretime("keep"), r.pexpiretime("ttl:ex"))
    eq(r.execute_command("DEBUG", "LOADAOF"), b"OK")
    eq((digest(r), r.pexpiretime("keep"), r.pexpiretime("ttl:ex")), before)
    # Nothing was logged twice: a second reload still gives the same dataset.
    eq(r.execute_command("DEBUG", "LOADAOF"), b"OK")
    eq(digest(r), before[0])


@test
def waitaof_needs_appendonly(h):
    ks = h.keyshift()
    r = ks.conn()
    raw, _ = r.command("WAITAOF", "1", "0", "0")
    eq(raw, b"-ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled.\r\n")


if __name__ == "__main__":
    run_tests()
