#!/usr/bin/python3
"""keyshift import from command files: Debian's redis-server 7.0 multi-part AOF directory
(an RDB base, then incr files with MULTI/EXEC, SELECT and expiries), the same as one
single-file AOF with an RDB preamble, and RESP command files written by `keyshift rdb dump
--format resp`; into the embedded engine's data file and into a live redis-server; rules
applied to commands, conflicts refused, damaged files refused with their byte offset and
the target untouched, and kill -9 during the command phase followed by a rerun that applies
every command exactly once. Equality is judged by `keyshift verify data`.
"""

import json
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import HOST, eq, keyshift_bin, ok, run_tests, test  # noqa: E402

CORPUS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "shared",
                      "corpus", "rdb")


def url(srv, db=None):
    base = "redis://%s:%d" % (HOST, srv.port)
    return base if db is None else "%s/%d" % (base, db)


def ks(*args, timeout=300):
    return subprocess.run([keyshift_bin()] + [str(a) for a in args], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=timeout)


def ks_ok(*args):
    p = ks(*args)
    ok(p.returncode == 0, "keyshift %s failed (%d):\n%s%s" % (
        " ".join(str(a) for a in args), p.returncode, p.stdout.decode("utf-8", "replace")[-2000:], p.stderr.decode("utf-8", "replace")))
    return p


def equal(a, b):
    p = ks("verify", "data", a, b)
    ok(p.returncode == 0, "verify data %s %s:\n%s%s" % (a, b, p.stdout.decode(), p.stderr.decode()))


def aof_source(h, name="aof-src"):
    """A redis-server with appendonly on whose AOF has an RDB base (after BGREWRITEAOF) and
    an incr file holding transactions, several databases, TTLs and deletes."""
    src = h.redis_server("--appendonly", "yes", "--appendfsync", "always",
                         "--aof-use-rdb-preamble", "yes", name=name)
    r = src.redis()
    p = r.pipeline(transaction=False)
    for i in range(300):
        p.set("base:%d" % i, "v%d" % i)
        p.rpush("list", i)
    p.hset("h", mapping={"a": 1, "b": 2})
    p.zadd("z", {"x": 1.5, "y": 2})
    p.set("ttl", "t", px=3_600_000)
    p.execute()
    src.cli("BGREWRITEAOF")
    wait_rewrite(src)
    p = r.pipeline(transaction=False)
    for i in range(200):
        p.incr("counter")
        p.rpush("list", "after%d" % i)
        p.set("incr:%d" % i, i, ex=7200)
    p.delete("base:0")
    p.expire("base:1", 9000)
    p.execute()
    with r.pipeline(transaction=True) as t:
        t.set("tx:a", 1)
        t.incrby("tx:a", 41)
        t.sadd("tx:set", "m1", "m2")
        t.execute()
    r2 = src.redis(db=2)
    r2.set("db2:key", "two")
    r2.lpush("db2:list", "a", "b")
    r.eval("redis.call('SET', 'lua:key', 'from-lua')", 0)
    return src


def wait_rewrite(src):
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        info = src.cli("INFO", "persistence")
        if "aof_rewrite_in_progress:0" in info and "aof_rewrite_scheduled:0" in info:
            return
        time.sleep(0.05)
    raise AssertionError("BGREWRITEAOF did not finish")


def aof_dir(src):
    return os.path.join(src.workdir, "appendonlydir")


def single_file_aof(h, src, name="appendonly.aof"):
    """The multi-part AOF of `src` as one Redis 6 style file: the RDB base, then the incr
    commands (Valkey reads such a file as an RDB preamble followed by RESP)."""
    d = aof_dir(src)
    manifest = open(os.path.join(d, "appendonly.aof.manifest")).read().split("\n")
    files = [line.split()[1] for line in manifest if line.strip()]
    out = h.path(name)
    with open(out, "wb") as f:
        for name_ in files:
            with open(os.path.join(d, name_), "rb") as part:
                f.write(part.read())
    return out


@test
def a_multi_part_aof_directory_goes_into_the_embedded_data_file_equal_to_its_server(h):
    src = aof_source(h)
    out = os.path.join(h.tmp, "embedded")
    os.makedirs(out)
    p = ks_ok("import", aof_dir(src), "--dir", out, "--format", "json")
    report = json.loads(p.stdout)
    eq(report["source_kind"], "aof")
    ok(report["commands"]["applied"] >= 600, "commands applied: %r" % report["commands"])
    ok(report["commands"]["transactions"] >= 1, "the MULTI/EXEC unit is counted")
    equal(os.path.join(out, "dump.rdb"), url(src))
    # verify reads the AOF directory itself too.
    equal(aof_dir(src), url(src))


@test
def a_multi_part_aof_goes_into_a_live_server_and_a_rerun_says_it_is_complete(h):
    src = aof_source(h)
    dst = h.redis_server(name="aof-dst")
    cp = h.path("aof-live.checkpoint")
    ks_ok("import", aof_dir(src), "--to", url(dst), "--checkpoint", cp)
    equal(url(src), url(dst))
    eq(dst.cli("GET", "tx:a"), "42")
    eq(dst.cli("-n", "2", "GET", "db2:key"), "two")
    ok(int(dst.cli("PTTL", "incr:5")) > 7_000_000, "a TTL set in the incr file arrives")
    eq(dst.cli("EXISTS", "__keyshift_import_offset__"), "0")
    again = ks_ok("import", aof_dir(src), "--to", url(dst), "--checkpoint", cp)
    ok(b"already complete" in again.stdout + again.stderr, again.stdout + again.stderr)
    eq(json.load(open(cp))["complete"], True)


@test
def a_single_file_aof_with_an_rdb_preamble_and_its_manifest_path_are_read_alike(h):
    src = aof_source(h)
    single = single_file_aof(h, src)
    with open(single, "rb") as f:
        ok(f.read(5) == b"REDIS", "the single file starts with its RDB preamble")
    out = os.path.join(h.tmp, "single")
    os.makedirs(out)
    ks_ok("import", single, "--dir", out)
    equal(os.path.join(out, "dump.rdb"), url(src))
    dst = h.redis_server(name="manifest-dst")
    manifest = os.path.join(aof_dir(src), "appendonly.aof.manifest")
    ks_ok("import", manifest, "--to", url(dst), "--checkpoint", h.path("manifest.cp"))
    equal(url(src), url(dst))


@test
def resp_command_files_of_corpus_rdbs_give_their_keyspaces(h):
    names = ["redis70-strings", "redis70-lists", "redis70-hashes", "redis70-sets",
             "redis70-zsets", "redis70-streams", "redis70-expire-multidb", "valkey8-strings"]
    present = [n for n in names if os.path.exists(os.path.join(CORPUS, n + ".rdb"))]
    if not present:
        from harness import Skip
        raise Skip("the shared corpus is absent")
    dst = h.redis_server(name="resp-dst")
    for n in present:
        rdb = os.path.join(CORPUS, n + ".rdb")
        resp = h.path(n + ".resp")
        with open(resp, "wb") as f:
            f.write(ks_ok("rdb", "dump", rdb, "--format", "resp").stdout)
        dst.cli("FLUSHALL")
        p = ks_ok("import", resp, "--to", url(dst), "--checkpoint", h.path(n + ".cp"),
                  "--format", "json")
        eq(json.loads(p.stdout)["source_kind"], "resp", n)
        equal(rdb, url(dst))
        out = os.path.join(h.tmp, "resp-" + n)
        os.makedirs(out)
        ks_ok("import", resp, "--dir", out)
        equal(rdb, os.path.join(out, "dump.rdb"))


@test
def rules_apply_to_the_commands_of_an_aof(h):
    src = aof_source(h)
    dst = h.redis_server(name="rules-dst")
    ks_ok("import", aof_dir(src), "--to", url(dst), "--checkpoint", h.path("rules.cp"),
          "--match", "tx:*", "--match", "db2:*", "--db-map", "2:5", "--rename-prefix", "tx:=new:")
    eq(dst.cli("GET", "new:a"), "42")
    eq(dst.cli("EXISTS", "tx:a"), "0")
    eq(dst.cli("EXISTS", "counter"), "0", "keys outside --match are left out")
    eq(dst.cli("-n", "5", "GET", "db2:key"), "two")
    eq(dst.cli("-n", "2", "DBSIZE"), "0")


@test
def keys_already_in_the_target_stop_the_import_before_anything_is_written(h):
    src = aof_source(h)
    dst = h.redis_server(name="conflict-dst")
    dst.cli("SET", "counter", "mine")
    p = ks("import", aof_dir(src), "--to", url(dst), "--checkpoint", h.path("conflict.cp"))
    ok(p.returncode != 0, "a conflict fails the import")
    ok(b"already exist" in p.stderr + p.stdout, p.stderr + p.stdout)
    eq(dst.cli("DBSIZE"), "1", "nothing was written")
    eq(dst.cli("GET", "counter"), "mine")
    dry = ks_ok("import", aof_dir(src), "--dry-run", "--format", "json")
    report = json.loads(dry.stdout)
    ok(report["commands"]["applied"] >= 600, "a dry run counts the commands")


@test
def a_damaged_command_file_is_refused_with_its_offset_and_the_target_is_untouched(h):
    dst = h.redis_server(name="damaged-dst")
    good = b"*3\r\n$3\r\nSET\r\n$1\r\na\r\n$1\r\n1\r\n" * 10
    cases = {
        "cut.resp": good + b"*3\r\n$3\r\nSET\r\n$1\r\nb",          # truncated at the end
        "bad.resp": good + b"*2\r\n$3\r\nGET\r\n#1\r\nb\r\n" + good,  # not a bulk header
        "inmulti.resp": good + b"*1\r\n$5\r\nMULTI\r\n",            # MULTI without EXEC
    }
    for name, data in cases.items():
        path = h.path(name)
        with open(path, "wb") as f:
            f.write(data)
        p = ks("import", path, "--to", url(dst), "--checkpoint", h.path(name + ".cp"))
        ok(p.returncode != 0, "%s is refused" % name)
        err = p.stderr.decode() + p.stdout.decode()
        ok(name in err, "the error names the file: %s" % err)
        if name != "inmulti.resp":
            ok("byte" in err, "the error names the byte offset: %s" % err)
        eq(dst.cli("DBSIZE"), "0", "%s: nothing was written" % name)


@test
def killed_during_the_command_phase_a_rerun_applies_every_command_exactly_once(h):
    n = 150_000
    path = h.path("counter.resp")
    with open(path, "wb") as f:
        for i in range(n):
            f.write(b"*2\r\n$4\r\nINCR\r\n$7\r\ncounter\r\n")
            f.write(b"*3\r\n$5\r\nRPUSH\r\n$4\r\nlist\r\n$%d\r\n%d\r\n" % (len(str(i)), i))
    dst = h.redis_server(name="kill-dst")
    cp = h.path("kill.cp")
    kills = 0
    for delay in (0.3, 0.6, 0.9):
        proc = subprocess.Popen([keyshift_bin(), "import", path, "--to", url(dst), "--checkpoint",
                                 cp], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(delay)
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            kills += 1
        proc.wait()
    ok(kills > 0, "at least one run was killed mid-way")
    ks_ok("import", path, "--to", url(dst), "--checkpoint", cp)
    eq(dst.cli("GET", "counter"), str(n), "no INCR applied twice or lost")
    eq(dst.cli("LLEN", "list"), str(n), "no element pushed twice or lost")
    eq(dst.cli("LINDEX", "list", "-1"), str(n - 1))
    eq(dst.cli("EXISTS", "__keyshift_import_offset__"), "0")


if __name__ == "__main__":
    sys.exit(run_tests())
