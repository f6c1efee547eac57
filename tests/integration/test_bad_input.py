#!/usr/bin/python3
"""Bad input, counted: every subcommand that reads a file is fed truncated and corrupt files
of every format keyshift reads (RDB, AOF, RESP command files, JSON Lines, capture files,
MONITOR logs, TOML plans and target tables, config files, saved bench runs), wrong flags,
unreadable paths, non-UTF-8 names and hostile sizes. Each must exit non-zero without a
signal or a sanitizer report, name the file (and the line or byte offset where the format
has them) on stderr, and write nothing: every case runs in an empty directory that holds its
outputs, which must still be empty after. The count tried per subcommand is printed.

The good files the bad ones are made from are real: an RDB and an AOF directory written by
Debian's redis-server 7.0, `rdb dump`'s JSON Lines of that RDB, a capture made from the
MONITOR log fixture, a migration plan fixture and the repository's config fixture.

Run: KEYSHIFT_BIN=build/keyshift /usr/bin/python3 tests/integration/test_bad_input.py
"""

import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import REPO, Skip, eq, free_port, keyshift_bin, ok, run_tests, test  # noqa: E402

FUZZ_CORPUS = os.path.join(REPO, "tests", "fuzz", "corpus")
# A place named in the message: "file: byte N", "line N", "offset N", "file:N:M".
LOCATION = re.compile(rb"(byte \d+|offset \d+|line \d+|:\d+:\d+|:\d+\b|at \d+)")
SANITIZER = re.compile(rb"(AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|"
                       rb"runtime error:)")


def read(path):
    with open(path, "rb") as f:
        return f.read()


class Inputs:
    """The good files, made once, and a directory for the bad ones."""

    def __init__(self, root):
        self.root = root
        self.bad = os.path.join(root, "bad")
        os.makedirs(self.bad)
        self.rdb = self._redis_files()
        self.jsonl = subprocess.run([keyshift_bin(), "rdb", "dump", "--format", "json",
                                     self.rdb_path], capture_output=True, check=True).stdout
        log = os.path.join(REPO, "tests", "data", "monitor", "apps.log")
        self.monitor = read(log)
        cap = os.path.join(root, "good.capture")
        subprocess.run([keyshift_bin(), "capture", "--from-monitor-log", log, "--out", cap],
                       capture_output=True, check=True)
        self.capture = read(cap)
        self.plan = read(os.path.join(FUZZ_CORPUS, "toml", "migrate-plan.toml"))
        self.table = read(os.path.join(FUZZ_CORPUS, "toml", "targets-head.toml"))
        self.conf = read(os.path.join(REPO, "tests", "data", "redis-7.0-debian.conf"))
        self.bench = read(os.path.join(REPO, "tests", "data", "bench", "before-redis.json"))

    def _redis_files(self):
        if shutil.which("redis-server") is None:
            raise Skip("redis-server (Debian package redis-server) is not installed")
        work = os.path.join(self.root, "redis")
        os.makedirs(work)
        port = free_port()
        proc = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1",
                                 "--dir", work, "--save", "", "--appendonly", "yes"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            import redis
            r = redis.Redis(port=port)
            for _ in range(200):
                try:
                    r.ping()
                    break
                except redis.ConnectionError:
                    time.sleep(0.05)
            r.set("s", "v")
            r.rpush("l", *[str(i) for i in range(50)])
            r.hset("h", mapping={"a": "1", "b": "2"})
            r.zadd("z", {"m": 1})
            r.sadd("set", "x", "y")
            r.xadd("x", {"f": "v"})
            r.save()
            r.set("after", "save")
        finally:
            proc.terminate()
            proc.wait()
        self.rdb_path = os.path.join(work, "dump.rdb")
        adir = os.path.join(work, "appendonlydir")
        self.aof = b"".join(read(os.path.join(adir, n)) for n in sorted(os.listdir(adir))
                            if n.endswith(".incr.aof"))
        return read(self.rdb_path)

    def write(self, name, data):
        path = os.path.join(self.bad, name)
        with open(path, "wb") as f:
            f.write(data)
        return path


def damaged(good, name):
    """The usual damage of a file: (label, bytes)."""
    mid = len(good) // 2
    flipped = bytearray(good)
    flipped[mid] ^= 0x5A
    return [
        (name + "-empty", b""),
        (name + "-half", good[:mid]),
        (name + "-one-short", good[:-1]),
        (name + "-flipped", bytes(flipped)),
        (name + "-garbage", b"\x00\xff garbage \xfe\r\n" * 8),
    ]


class Runner:
    def __init__(self, root):
        self.root = root
        self.counts = collections.Counter()
        self.failures = []
        self.case = 0

    def expect_refused(self, group, argv, names=(), location=True, what="", refused=True):
        """Runs keyshift ARGV in an empty directory; `names` must appear on stderr, with a
        location when `location`. {out} in ARGV is a path inside that directory. Unless
        `refused` is False (a partial read that warns), the exit is non-zero and the
        directory stays empty."""
        self.case += 1
        self.counts[group] += 1
        out = os.path.join(self.root, "out%d" % self.case)
        os.makedirs(out)
        args = [a.replace("{out}", out) if isinstance(a, str) else a for a in argv]
        try:
            p = subprocess.run([keyshift_bin()] + args, cwd=out, stdin=subprocess.DEVNULL,
                               capture_output=True, timeout=60)
        except subprocess.TimeoutExpired:
            self.failures.append("%s %s: hung (60 s)" % (group, what))
            return
        label = "%s %s (%s)" % (group, what, " ".join(str(a) for a in argv[:4]))
        err = p.stderr
        if refused and p.returncode == 0:
            self.failures.append("%s: exit 0" % label)
        elif p.returncode < 0 or p.returncode >= 128:
            self.failures.append("%s: died of signal (status %d)" % (label, p.returncode))
        if SANITIZER.search(err) or SANITIZER.search(p.stdout):
            self.failures.append("%s: sanitizer report" % label)
        for n in names:
            nb = os.fsencode(os.path.basename(n))
            if nb not in err and repr(nb)[2:-1].encode() not in err:
                self.failures.append("%s: stderr does not name %r: %r" % (label, nb, err[-300:]))
        if location and names and not LOCATION.search(err):
            self.failures.append("%s: no line or offset in %r" % (label, err[-300:]))
        left = os.listdir(out)
        if refused and left:
            self.failures.append("%s: wrote %s" % (label, left))
        shutil.rmtree(out)

    def import_and_verify(self, path, good_rdb, what):
        """A bad source file for import (into a data file in the empty directory) and for
        verify data."""
        self.expect_refused("import", ["import", path, "--dir", "{out}", "--dbfilename",
                                       "new.rdb", "--target", "valkey-8.0"], [path], True, what)
        self.expect_refused("verify", ["verify", "data", path, good_rdb], [path], True, what)


@test
def every_subcommand_refuses_bad_input_cleanly_naming_where(h):
    root = tempfile.mkdtemp(prefix="ks-bad-input-")
    try:
        inputs = Inputs(root)
        run = Runner(root)
        rdb_cases = damaged(inputs.rdb, "dump.rdb")
        # Hostile sizes: a string of 4 GiB, a database count and a ziplist of 2^32-1 entries.
        rdb_cases += [
            ("huge-string.rdb", b"REDIS0011\xfe\x00\x00\x01k\x80\xff\xff\xff\xf0abc\xff"),
            ("huge-list.rdb", b"REDIS0011\xfe\x00\x0e\x01k\x80\xff\xff\xff\xff\x00\xff"),
            ("bad-version.rdb", b"REDIS9999\xff" + b"\x00" * 8),
        ]
        rdb_paths = [inputs.write(n, d) for n, d in rdb_cases if d != inputs.rdb]
        good_rdb = inputs.write("good.rdb", inputs.rdb)
        for path in rdb_paths:
            loc = os.path.getsize(path) > 0
            run.expect_refused("rdb check", ["rdb", "check", path], [path], loc, "corrupt")
            run.expect_refused("rdb inspect", ["rdb", "inspect", path], [path], loc, "corrupt")
            run.expect_refused("rdb dump", ["rdb", "dump", path], [path], loc, "corrupt")
            run.expect_refused("rdb convert", ["rdb", "convert", path, "{out}/new.rdb"], [path],
                               loc, "corrupt")
            if loc:  # import and verify read an empty file as an empty JSON Lines dump
                run.import_and_verify(path, good_rdb, "corrupt rdb")

        # AOF and RESP command files: damage past the first command, a hostile bulk length,
        # a negative count.
        aof_cases = [
            ("corrupt.aof", inputs.aof[:inputs.aof.index(b"$", 20)] + b"#"
             + inputs.aof[inputs.aof.index(b"$", 20) + 1:]),
            ("huge-bulk.aof", b"*2\r\n$3\r\nGET\r\n$99999999999\r\nk\r\n"),
            ("bad-count.aof", b"*-5\r\n$3\r\nGET\r\n"),
            ("not-resp.aof", b"*1\r\nhello\r\n"),
            ("mid-cut.resp", b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$9\r\nv\r\n*1\r\n$4\r\nPING\r\n"),
        ]
        for n, d in aof_cases:
            run.import_and_verify(inputs.write(n, d), good_rdb, "bad aof")

        # JSON Lines (import and verify read rdb dump's output).
        lines = inputs.jsonl.split(b"\n")
        jsonl_cases = [
            ("cut.jsonl", b"\n".join(lines[:2]) + b"\n" + lines[2][:len(lines[2]) // 2] + b"\n"),
            ("garbage-line.jsonl", lines[0] + b"\n{not json}\n"),
            ("not-utf8.jsonl", lines[0] + b"\n{\"key\":\"\xff\xfe\",\"type\":\"string\"}\n"),
            ("huge-ttl.jsonl", b"{\"db\":0,\"key\":\"k\",\"type\":\"string\",\"value\":\"v\","
                               b"\"expire_ms\":1e400}\n"),
            ("wrong-type.jsonl", b"{\"db\":0,\"key\":\"k\",\"type\":\"list\",\"value\":\"v\"}\n"),
        ]
        for n, d in jsonl_cases:
            run.import_and_verify(inputs.write(n, d), good_rdb, "bad jsonl")

        # Capture files: replay, capture info and verify clients.
        for n, d in damaged(inputs.capture, "traffic.capture"):
            path = inputs.write(n, d)
            loc = len(d) > 0
            # A capture whose header reads is replayed (and judged by verify clients) up to
            # the damage, as a proxy killed mid-write leaves one: exit 1, the place named.
            whole = n.endswith(("-empty", "-garbage"))
            run.expect_refused("replay", ["replay", path, "--format", "json", "--out",
                                          "{out}/r.json"], [path], loc, "damaged capture",
                               refused=whole)
            run.expect_refused("capture", ["capture", "info", path], [path], loc,
                               "damaged capture")
            if d:
                run.expect_refused("verify", ["verify", "clients", path, "--out", "{out}/v.txt"],
                                   [path], loc, "damaged capture", refused=False)

        # MONITOR logs: capture --from-monitor-log writes nothing for a bad log.
        monitor_cases = [
            ("bad-time.log", b"OK\nnot-a-time [0 1.2.3.4:5] \"GET\" \"k\"\n"),
            ("unterminated.log", inputs.monitor + b"1764640000.1 [0 1.2.3.4:5] \"GET \"k\n"),
            ("no-bracket.log", b"1764640000.1 0 1.2.3.4:5] \"GET\" \"k\"\n"),
            ("bad-db.log", b"1764640000.1 [x 1.2.3.4:5] \"GET\" \"k\"\n"),
        ]
        for n, d in monitor_cases:
            path = inputs.write(n, d)
            run.expect_refused("capture", ["capture", "--from-monitor-log", path, "--out",
                                           "{out}/c.capture"], [path], True, "bad monitor log")
            run.expect_refused("verify", ["verify", "clients", path, "--out", "{out}/v.txt"],
                               [path], True, "bad monitor log")

        # Migration plans (TOML).
        plan_cases = [
            ("cut-plan.toml", inputs.plan[:len(inputs.plan) // 2] + b"\n[[steps]\n", True),
            ("not-toml.toml", b"this is = = not toml\n", True),
            # No header, no line to name: the file is named.
            ("wrong-types.toml", b"version = \"x\"\n[[steps]]\nname = 5\n", False),
            ("not-utf8.toml", b"version = 1\nname = \"\xff\xfe\"\n", True),
        ]
        for n, d, loc in plan_cases:
            path = inputs.write(n, d)
            for sub in ("apply", "status", "rollback", "report"):
                argv = ["migrate", sub, path]
                if sub == "apply":
                    argv += ["--state-dir", "{out}/state"]
                run.expect_refused("migrate", argv, [path], loc, "bad plan")

        # Target tables (rewrite --table) and config files (rewrite, serve).
        conf = inputs.write("redis.conf", inputs.conf)
        for n, d in [("cut-table.toml", inputs.table[:len(inputs.table) // 3] + b"\n[x\n"),
                     ("table-not-toml.toml", b"[[[\n")]:
            path = inputs.write(n, d)
            run.expect_refused("rewrite", ["rewrite", "server", conf, "--target", "valkey-8.0",
                                           "--table", path, "--out", "{out}/v.conf", "--apply"],
                               [path], True, "bad table")
        conf_cases = [
            ("unknown.conf", inputs.conf + b"\nno-such-directive yes\n"),
            ("bad-value.conf", b"port 6379\nmaxmemory lots\n"),
            ("unterminated.conf", b"port 6379\nrequirepass \"abc\n"),
            ("huge.conf", b"databases 99999999999999\n"),
            ("missing-include.conf", b"include /nonexistent/keyshift/x.conf\n"),
            ("not-utf8.conf", b"port 6379\n\xff\xfe bad\n"),
        ]
        for n, d in conf_cases:
            path = inputs.write(n, d)
            run.expect_refused("serve", ["serve", path, "--test-config"], [path], True,
                               "bad config")
            # rewrite carries directives over as text (the target's --test-config judges
            # them): only what the reader itself refuses is bad input to it.
            if n in ("unterminated.conf", "missing-include.conf"):
                run.expect_refused("rewrite", ["rewrite", "server", path, "--target",
                                               "valkey-8.0", "--out", "{out}/v.conf", "--apply"],
                                   [path], True, "bad config")

        # Saved bench runs (bench compare): JSON errors carry the byte offset.
        good_bench = inputs.write("before.json", inputs.bench)
        for n, d in damaged(inputs.bench.rstrip(), "run.json") + [("huge.json", b"[" * 100000)]:
            path = inputs.write(n, d)
            run.expect_refused("bench", ["bench", "compare", path, good_bench, "--out",
                                         "{out}/c.html"], [path], len(d) > 0, "bad saved run")

        # Unreadable paths and non-UTF-8 names, for every subcommand that reads a file.
        missing = os.path.join(root, "no-such-file.rdb")
        a_dir = os.path.join(root, "a-directory.rdb")
        os.makedirs(a_dir)
        odd = os.fsdecode(os.path.join(os.fsencode(inputs.bad), b"caf\xe9-\xff.rdb"))
        with open(odd, "wb") as f:
            f.write(inputs.rdb[:len(inputs.rdb) // 2])
        for path, loc in ((missing, False), (odd, True)):
            run.expect_refused("rdb check", ["rdb", "check", path], [path], loc, "path")
            run.expect_refused("rdb inspect", ["rdb", "inspect", path], [path], loc, "path")
            run.expect_refused("rdb dump", ["rdb", "dump", path], [path], loc, "path")
            run.expect_refused("rdb convert", ["rdb", "convert", path, "{out}/n.rdb"], [path],
                               loc, "path")
            run.expect_refused("import", ["import", path, "--dir", "{out}", "--target",
                                          "valkey-8.0"], [path], loc, "path")
            run.expect_refused("verify", ["verify", "data", path, good_rdb], [path], loc, "path")
        for path in (missing, a_dir):
            run.expect_refused("rdb check", ["rdb", "check", path], [path], False, "unreadable")
            run.expect_refused("replay", ["replay", path], [path], False, "unreadable")
            run.expect_refused("capture", ["capture", "info", path], [path], False, "unreadable")
            run.expect_refused("capture", ["capture", "--from-monitor-log", path, "--out",
                                           "{out}/c.capture"], [path], False, "unreadable")
            run.expect_refused("migrate", ["migrate", "status", path], [path], False,
                               "unreadable")
            run.expect_refused("serve", ["serve", path, "--test-config"], [path], False,
                               "unreadable")
            run.expect_refused("rewrite", ["rewrite", "server", path, "--target", "valkey-8.0",
                                           "--out", "{out}/v.conf"], [path], False, "unreadable")
            run.expect_refused("bench", ["bench", "compare", path, good_bench], [path], False,
                               "unreadable")
            run.expect_refused("verify", ["verify", "clients", path], [path], False, "unreadable")

        # Wrong flags and hostile numbers on the command line.
        for argv in (["rdb", "check", good_rdb, "--no-such-flag"],
                     ["rdb", "inspect"], ["rdb", "dump", good_rdb, "--format", "xml"],
                     ["rdb", "convert", good_rdb], ["rewrite", "server"],
                     ["import", good_rdb, "--window", "0"],
                     ["import", good_rdb, "--big-key-bytes", "99999999999999999999999"],
                     ["verify", "data", good_rdb], ["capture", "--out"],
                     ["replay", "--to"], ["migrate", "apply"],
                     ["bench", "-n", "-5", "-p", "1"], ["bench", "-d", "99999999999999999999"],
                     ["serve", "--port", "99999", "--test-config"],
                     ["serve", "--maxmemory", "-1gb", "--test-config"]):
            group = argv[0] if argv[0] != "rdb" else "rdb " + argv[1]
            run.expect_refused(group, argv, [], False, "wrong flags")

        print("bad inputs tried per subcommand:")
        for group in sorted(run.counts):
            print("  %-12s %d" % (group, run.counts[group]))
        print("  %-12s %d" % ("total", sum(run.counts.values())))
        for f in run.failures:
            print("FAIL: " + f)
        eq(len(run.failures), 0, "bad inputs handled badly")
        ok(len(run.counts) >= 11, "every subcommand was fed bad input")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(run_tests())
