#!/usr/bin/python3
"""kill -9 at many exact points of every file keyshift replaces, and full disks.

Each operation runs once clean (the reference), then again with one of keyshift's test-only
crash points set (engine/util/crash_point.hpp): KEYSHIFT_TEST_KILL_AFTER_BYTES=N makes the
process SIGKILL itself once N bytes went to the files it is replacing, and
KEYSHIFT_TEST_KILL_AT_SYNC=N right before its Nth fsync/rename/directory fsync. After each
kill the target must hold the old content or the complete new one (checked by loading it:
DEBUG DIGEST of a server started on it, `rdb dump` of an RDB, the bytes of a config), the
next run must leave no temporary file, and a rerun must reach the reference's end state.
Full disks are RLIMIT_FSIZE (SIGXFSZ ignored, so writes fail with EFBIG as on ENOSPC).

Run: KEYSHIFT_BIN=build/keyshift /usr/bin/python3 tests/integration/test_crash_safety.py [NAME...]
"""

import hashlib
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import (HOST, REPO, ConnectionClosed, Err, RespConn, Server,  # noqa: E402
                     SetupError, encode_command, eq, free_port, keyshift_bin, ok, run_tests, test)

POINTS = 50        # byte points per operation, on top of every sync point
POLL_BOUND = 60.0  # upper bound for polls on server state; a bound, never an assertion
SERVERS = []       # every server started, so a failed check leaves none running
CLEAN_ENV = {k: v for k, v in os.environ.items() if not k.startswith("KEYSHIFT_TEST_")}


def crash_env(kind, n):
    env = dict(CLEAN_ENV)
    env["KEYSHIFT_TEST_KILL_AFTER_BYTES" if kind == "bytes" else "KEYSHIFT_TEST_KILL_AT_SYNC"] = \
        str(n)
    return env


def byte_points(size):
    """POINTS offsets spread over [0, size), so each cut lands inside the write."""
    step = max(1, size // POINTS)
    return [i * step for i in range(POINTS) if i * step < size]


def temp_files(root):
    """Every temporary file keyshift's writers name (AtomicFile's and the AOF child's)."""
    found = []
    for dirpath, _, files in os.walk(root):
        found += [os.path.join(dirpath, f) for f in files
                  if ".tmp-" in f or f.startswith("temp-")]
    return found


def serve(workdir, port, extra="", env=None, limit=None):
    """`keyshift serve` on a config in `workdir`; returns the Server (its process may have
    died at start when a crash point fired there)."""
    conf = os.path.join(workdir, "keyshift.conf")
    if not os.path.exists(conf):
        with open(conf, "w") as f:
            f.write("port %d\nbind %s\ndir %s\nsave \"\"\nenable-debug-command yes\n%s"
                    % (port, HOST, workdir, extra))
    srv = Server("ks", [keyshift_bin(), "serve", conf], port, workdir, env=env or CLEAN_ENV)
    srv.logfile = open(srv.logpath, "ab")
    srv.proc = subprocess.Popen(srv.argv, cwd=workdir, stdin=subprocess.DEVNULL,
                                stdout=srv.logfile, stderr=subprocess.STDOUT,
                                start_new_session=True, env=srv.env, preexec_fn=limit)
    try:
        srv.wait_ready()
    except SetupError:
        if srv.proc.poll() is None:
            raise
    return srv


def call(srv, *args):
    """One command; None when the server closed the connection (it was killed)."""
    try:
        with RespConn(port=srv.port, timeout=POLL_BOUND) as c:
            return c.call(*args)
    except (ConnectionClosed, OSError):
        return None


def fill(srv, gen, n=120):
    """Every type, `n` keys each, values marked with `gen` (hex, so LZF cannot shrink them
    away); fixed TTLs and stream IDs, so a fill is the same dataset every time."""
    def v(*parts):
        return hashlib.sha1(repr((gen,) + parts).encode()).hexdigest()
    cmds = [["FLUSHALL"]]
    for i in range(n):
        cmds += [["SET", "s:%d" % i, v(i) * 4],
                 ["RPUSH", "l:%d" % i] + [v(i, j) for j in range(20)],
                 ["HSET", "h:%d" % i] + [x for j in range(10) for x in ("f%d" % j, v(i, j))],
                 ["SADD", "t:%d" % i] + [v(i, j) for j in range(15)],
                 ["ZADD", "z:%d" % i] + [x for j in range(10) for x in (str(j), v(i, j))],
                 ["XADD", "x:%d" % i, "1-%d" % (i + 1), "g", v(i)],
                 ["PEXPIREAT", "s:%d" % i, "4102444800000"]]
    out = []
    with RespConn(port=srv.port, timeout=POLL_BOUND) as c:
        c.send(b"".join(encode_command(cmd) for cmd in cmds))
        for _ in cmds:
            out.append(c.read_reply())
    ok(all(not raw.startswith(b"-") for raw, _ in out), "fill %s: no error reply" % gen)


def digest(srv):
    return call(srv, "DEBUG", "DIGEST")


def wait_dead(srv):
    try:
        srv.proc.wait(timeout=POLL_BOUND)
    except subprocess.TimeoutExpired:
        srv.proc.kill()
        srv.proc.wait()
    srv.logfile.close()
    return srv.proc.returncode


def kill(srv):
    if srv.proc.poll() is None:
        srv.proc.kill()
    return wait_dead(srv)


def info_field(srv, section, name):
    text = call(srv, "INFO", section).decode()
    m = re.search(r"^%s:(.*)\r?$" % re.escape(name), text, re.M)
    return m.group(1).strip() if m else None


def wait_info(srv, section, name, value):
    deadline = time.monotonic() + POLL_BOUND
    while time.monotonic() < deadline and srv.proc.poll() is None:
        if info_field(srv, section, name) == value:
            return True
        time.sleep(0.02)
    return False


# ---------------------------------------------------------------------------------------
# The server's snapshots and config.
# ---------------------------------------------------------------------------------------

def snapshot_reference(h, port):
    """dump.rdb holding dataset A, and the digests of A and B and B's RDB size."""
    d = h.path("ref-rdb-%d" % port)
    os.makedirs(d)
    srv = serve(d, port)
    fill(srv, "A")
    dig_a = digest(srv)
    eq(call(srv, "SAVE"), b"OK", "reference SAVE of A")
    shutil.copy(os.path.join(d, "dump.rdb"), h.path("a.rdb"))
    fill(srv, "B")
    dig_b = digest(srv)
    eq(call(srv, "SAVE"), b"OK", "reference SAVE of B")
    size_b = os.path.getsize(os.path.join(d, "dump.rdb"))
    kill(srv)
    ok(dig_a != dig_b, "the two datasets differ")
    return dig_a, dig_b, size_b


def fresh_rdb_dir(h, name):
    d = h.path(name)
    os.makedirs(d)
    shutil.copy(h.path("a.rdb"), os.path.join(d, "dump.rdb"))
    return d


def check_rerun(d, port, dig_b, what):
    """The next run: a clean server on the directory saves B again."""
    srv = serve(d, port)
    fill(srv, "B")
    eq(call(srv, "SAVE"), b"OK", "%s: the rerun's SAVE" % what)
    kill(srv)
    eq(temp_files(d), [], "%s: no temporary file after the next run" % what)
    srv = serve(d, port)
    eq(digest(srv), dig_b, "%s: the rerun's file holds B" % what)
    kill(srv)


def points_for(size):
    return [("bytes", n) for n in byte_points(size)] + [("sync", n) for n in (1, 2, 3)]


@test
def save_killed_at_any_point_leaves_the_old_snapshot_or_the_new_one(h):
    port = free_port()
    dig_a, dig_b, size_b = snapshot_reference(h, port)
    kills = 0
    for i, (kind, n) in enumerate(points_for(size_b)):
        what = "SAVE killed at %s %d" % (kind, n)
        d = fresh_rdb_dir(h, "save-%d" % i)
        srv = serve(d, port, env=crash_env(kind, n))
        fill(srv, "B")
        eq(call(srv, "SAVE"), None, "%s: the connection ends with the process" % what)
        kills += wait_dead(srv) == -signal.SIGKILL
        srv = serve(d, port)
        # Killed before the rename (sync point 2) the old file stands; after it the new one.
        want = dig_b if kind == "sync" and n == 3 else dig_a
        eq(digest(srv), want, "%s: the file loads as %s" % (what, "B" if want == dig_b else "A"))
        kill(srv)
        check_rerun(d, port, dig_b, what)
    eq(kills, len(points_for(size_b)), "every point killed the server")
    ok(kills >= POINTS, "at least %d kill points (%d)" % (POINTS, kills))


@test
def bgsave_child_killed_at_any_point_leaves_the_old_snapshot_and_the_server_serving(h):
    port = free_port()
    dig_a, dig_b, size_b = snapshot_reference(h, port)
    points = points_for(size_b)
    for i, (kind, n) in enumerate(points):
        what = "BGSAVE's child killed at %s %d" % (kind, n)
        d = fresh_rdb_dir(h, "bgsave-%d" % i)
        srv = serve(d, port, env=crash_env(kind, n))
        fill(srv, "B")
        eq(call(srv, "BGSAVE"), b"Background saving started", what)
        ok(wait_info(srv, "persistence", "rdb_bgsave_in_progress", "0"), what + ": ends")
        eq(info_field(srv, "persistence", "rdb_last_bgsave_status"), "err", what + ": status")
        eq(call(srv, "PING"), b"PONG", what + ": the server still serves")
        eq(temp_files(d), [], what + ": the child's temporary file is removed")
        kill(srv)
        srv = serve(d, port)
        want = dig_b if kind == "sync" and n == 3 else dig_a
        eq(digest(srv), want, "%s: the file loads as %s" % (what, "B" if want == dig_b else "A"))
        kill(srv)
        check_rerun(d, port, dig_b, what)
    ok(len(points) >= POINTS, "at least %d kill points (%d)" % (POINTS, len(points)))


@test
def config_rewrite_killed_at_any_point_leaves_the_old_file_or_the_new_one(h):
    port = free_port()
    sets = ["maxmemory", "12345678", "maxmemory-policy", "allkeys-lru", "hz", "25",
            "notify-keyspace-events", "KEA", "timeout", "77"]

    def run(d, env):
        srv = serve(d, port, extra="# a comment kept\nmaxclients 500\n", env=env)
        eq(call(srv, "CONFIG", "SET", *sets), b"OK", "CONFIG SET")
        return srv, call(srv, "CONFIG", "REWRITE")

    def text(d):
        with open(os.path.join(d, "keyshift.conf")) as f:
            return f.read().replace(d, "<dir>")

    ref = h.path("rewrite-ref")
    os.makedirs(ref)
    srv, reply = run(ref, None)
    eq(reply, b"OK", "the reference CONFIG REWRITE")
    kill(srv)
    new_text = text(ref)
    first = h.path("rewrite-first")
    os.makedirs(first)
    kill(serve(first, port, extra="# a comment kept\nmaxclients 500\n"))
    old_text = text(first)
    ok(old_text != new_text and "12345678" in new_text, "the rewrite changes the file")
    points = points_for(len(new_text))
    for i, (kind, n) in enumerate(points):
        what = "CONFIG REWRITE killed at %s %d" % (kind, n)
        d = h.path("rewrite-%d" % i)
        os.makedirs(d)
        srv, reply = run(d, crash_env(kind, n))
        eq(reply, None, what + ": the connection ends with the process")
        eq(wait_dead(srv), -signal.SIGKILL, what + ": killed")
        want = new_text if kind == "sync" and n == 3 else old_text
        eq(text(d), want, what + ": the config is the old or the new one, whole")
        srv, reply = run(d, None)
        eq(reply, b"OK", what + ": the rerun")
        kill(srv)
        eq(text(d), new_text, what + ": the rerun's file is the reference's")
        eq(temp_files(d), [], what + ": no temporary file after the next run")
    ok(len(points) >= POINTS, "at least %d kill points (%d)" % (POINTS, len(points)))


def aof_files_listed(d):
    """The AOF directory's files that its manifest does not list (besides itself)."""
    aofdir = os.path.join(d, "appendonlydir")
    names = set(os.listdir(aofdir))
    manifests = [n for n in names if n.endswith(".manifest")]
    listed = set(manifests)
    for m in manifests:
        with open(os.path.join(aofdir, m)) as f:
            listed |= set(re.findall(r"^file (\S+)", f.read(), re.M))
    return sorted(names - listed)


@test
def aof_rewrite_killed_at_any_point_keeps_every_acknowledged_write(h):
    port = free_port()
    aof = "appendonly yes\nappendfsync always\nauto-aof-rewrite-percentage 0\n"
    tmpl = h.path("aof-template")
    os.makedirs(tmpl)

    def copy_of(name):
        """The template's AOF directory under a fresh work dir (its config is written anew,
        naming the new dir)."""
        d = h.path(name)
        os.makedirs(d)
        shutil.copytree(os.path.join(tmpl, "appendonlydir"), os.path.join(d, "appendonlydir"))
        return d

    srv = serve(tmpl, port, extra=aof)
    fill(srv, "A")
    dig_a = digest(srv)
    kill(srv)
    ref = copy_of("aof-ref")
    srv = serve(ref, port, extra=aof)
    fill(srv, "B")
    dig_b = digest(srv)
    eq(call(srv, "BGREWRITEAOF"), b"Background append only file rewriting started", "ref")
    ok(wait_info(srv, "persistence", "aof_rewrite_in_progress", "0"), "reference rewrite ends")
    base = [f for f in os.listdir(os.path.join(ref, "appendonlydir")) if ".base." in f]
    size = sum(os.path.getsize(os.path.join(ref, "appendonlydir", f)) for f in base)
    kill(srv)
    points = [("bytes", n) for n in byte_points(size)] + [("sync", n) for n in range(1, 10)]
    for i, (kind, n) in enumerate(points):
        what = "AOF rewrite killed at %s %d" % (kind, n)
        d = copy_of("aof-%d" % i)
        srv = serve(d, port, extra=aof, env=crash_env(kind, n))
        want = dig_a
        if srv.proc.poll() is None:
            fill(srv, "B")
            want = dig_b
            if call(srv, "BGREWRITEAOF") is not None:
                wait_info(srv, "persistence", "aof_rewrite_in_progress", "0")
        kill(srv)  # the point fired in the server, in its child, or this is a kill after it
        srv = serve(d, port)
        eq(digest(srv), want, what + ": every acknowledged write is loaded")
        eq(temp_files(d), [], what + ": no temporary file after the next start")
        eq(aof_files_listed(d), [], what + ": no file the manifest does not list")
        eq(call(srv, "BGREWRITEAOF"), b"Background append only file rewriting started",
           what + ": the rerun")
        ok(wait_info(srv, "persistence", "aof_rewrite_in_progress", "0"), what + ": rerun ends")
        eq(info_field(srv, "persistence", "aof_last_bgrewrite_status"), "ok", what + ": ok")
        kill(srv)
        srv = serve(d, port)
        eq(digest(srv), want, what + ": the rerun's files load the same dataset")
        kill(srv)
    ok(len(points) >= POINTS, "at least %d kill points (%d)" % (POINTS, len(points)))


# ---------------------------------------------------------------------------------------
# The subcommands that write files.
# ---------------------------------------------------------------------------------------

def run_ks(args, env=None, limit=None, cwd=None):
    p = subprocess.run([keyshift_bin()] + [str(a) for a in args], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, env=env or CLEAN_ENV, preexec_fn=limit,
                       cwd=cwd, timeout=120)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def rdb_keys(path):
    """The keys of an RDB file as `rdb dump` prints them; None when it does not load."""
    rc, out, _ = run_ks(["rdb", "dump", path, "--format", "json"])
    return hashlib.sha1("".join(sorted(out.splitlines(True))).encode()).hexdigest() \
        if rc == 0 else None


def cli_crash_points(h, name, setup, args, state, size):
    """Runs `args` (a function of the work dir) once clean, then killed at every point:
    `state(d)` must be the old one or the reference's after a kill, the reference's after
    a clean rerun, with no temporary file left."""
    ref = h.path(name + "-ref")
    os.makedirs(ref)
    setup(ref)
    old = state(ref)
    rc, _, err = run_ks(args(ref))
    eq(rc, 0, "%s reference run: %s" % (name, err))
    new = state(ref)
    ok(new is not None and new != old, "%s: the run changes its target" % name)
    points = points_for(size(ref))
    kills = 0
    for i, (kind, n) in enumerate(points):
        what = "%s killed at %s %d" % (name, kind, n)
        d = h.path("%s-%d" % (name, i))
        os.makedirs(d)
        setup(d)
        rc, _, err = run_ks(args(d), env=crash_env(kind, n))
        kills += rc == -signal.SIGKILL
        ok(rc == -signal.SIGKILL or (kind == "sync" and rc == 0), "%s: rc %d %s" % (what, rc, err))
        got = state(d)
        ok(got in (old, new), "%s: the target is the old or the new one, whole" % what)
        rc, _, err = run_ks(args(d))
        eq(rc, 0, "%s: the rerun: %s" % (what, err))
        eq(state(d), new, what + ": the rerun reaches the reference's end state")
        eq(temp_files(d), [], what + ": no temporary file after the rerun")
    ok(kills >= POINTS, "%s: at least %d kill points (%d)" % (name, POINTS, kills))


def saved_rdb(h, name, write):
    """An RDB file `name` saved by a server that `write(srv)` filled (made once per run)."""
    path = h.path(name)
    if not os.path.exists(path):
        d = h.path(name + "-dir")
        os.makedirs(d)
        srv = serve(d, free_port())
        write(srv)
        eq(call(srv, "SAVE"), b"OK", "SAVE of %s" % name)
        kill(srv)
        shutil.copy(os.path.join(d, "dump.rdb"), path)
    return path


def source_rdb(h):
    return saved_rdb(h, "source.rdb", lambda srv: fill(srv, "S"))


def old_target(h):
    """An RDB the target already holds: one key, so old and new are told apart."""
    return saved_rdb(h, "old-target.rdb",
                     lambda srv: eq(call(srv, "SET", "old", "1"), b"OK", "old target"))


def rdb_output_crash_points(h, name, filename, args):
    """cli_crash_points for a command writing the RDB `filename` of its work dir over an
    old one; `args(d, out)` is its command line."""
    src = source_rdb(h)
    old = old_target(h)
    cli_crash_points(
        h, name,
        lambda d: shutil.copy(old, os.path.join(d, filename)),
        lambda d: args(d, src, os.path.join(d, filename)),
        lambda d: rdb_keys(os.path.join(d, filename)),
        lambda d: os.path.getsize(os.path.join(d, filename)))


@test
def rdb_convert_killed_at_any_point_leaves_the_old_output_or_the_new_one(h):
    rdb_output_crash_points(h, "rdb-convert", "out.rdb",
                            lambda d, src, out: ["rdb", "convert", src, out, "--rdb-version",
                                                 "10"])


@test
def import_to_a_file_killed_at_any_point_leaves_the_old_file_or_the_new_one(h):
    rdb_output_crash_points(h, "import-file", "dump.rdb",
                            lambda d, src, out: ["import", src, "--dir", d, "--dbfilename",
                                                 "dump.rdb", "--conflict", "replace"])


@test
def rewrite_apply_killed_at_any_point_leaves_the_old_config_or_the_new_one(h):
    src = os.path.join(REPO, "tests", "data", "redis-7.0-debian.conf")

    def state(d):
        try:
            with open(os.path.join(d, "out.conf")) as f:
                return f.read()
        except FileNotFoundError:
            return None

    def setup(d):
        with open(os.path.join(d, "out.conf"), "w") as f:
            f.write("# the old file\nport 6379\n")

    cli_crash_points(
        h, "rewrite-apply", setup,
        lambda d: ["rewrite", "server", src, "--target", "keyshift", "--out",
                   os.path.join(d, "out.conf"), "--apply", "--backup-dir",
                   os.path.join(d, "backups")],
        state,
        lambda d: len(state(d)))


# ---------------------------------------------------------------------------------------
# Full disks.
# ---------------------------------------------------------------------------------------

def fsize_limit(limit):
    def apply():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG instead of a signal
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return apply


@test
def a_full_disk_fails_save_and_bgsave_naming_the_file_and_the_server_keeps_serving(h):
    port = free_port()
    d = h.path("full-serve")
    os.makedirs(d)
    srv = serve(d, port, extra="save 3600 1\nstop-writes-on-bgsave-error yes\n",
                limit=fsize_limit(64 * 1024))
    eq(call(srv, "SET", "small", "1"), b"OK", "a small write")
    eq(call(srv, "SAVE"), b"OK", "a small SAVE fits")
    small = os.path.getsize(os.path.join(d, "dump.rdb"))
    fill(srv, "F")
    reply = call(srv, "SAVE")
    ok(isinstance(reply, Err) and b"dump.rdb" in reply, "SAVE fails naming the file: %r" % reply)
    ok("dump.rdb" in srv.log(), "the log names the file:\n%s" % srv.log()[-1500:])
    eq(os.path.getsize(os.path.join(d, "dump.rdb")), small, "the old snapshot is untouched")
    eq(temp_files(d), [], "no temporary file after the failed SAVE")
    eq(call(srv, "BGSAVE"), b"Background saving started", "BGSAVE starts")
    ok(wait_info(srv, "persistence", "rdb_bgsave_in_progress", "0"), "BGSAVE ends")
    eq(info_field(srv, "persistence", "rdb_last_bgsave_status"), "err", "the status says so")
    eq(temp_files(d), [], "no temporary file after the failed BGSAVE")
    reply = call(srv, "SET", "k", "v")
    ok(isinstance(reply, Err) and reply.startswith(b"MISCONF"),
       "writes are refused with MISCONF: %r" % reply)
    ok(call(srv, "GET", "s:0") is not None, "reads are served")
    eq(call(srv, "CONFIG", "SET", "stop-writes-on-bgsave-error", "no"), b"OK", "writes again")
    eq(call(srv, "SET", "k", "v"), b"OK", "a write once stop-writes-on-bgsave-error is off")
    kill(srv)


@test
def a_full_disk_fails_rdb_convert_naming_the_file_and_keeps_the_old_output(h):
    src = source_rdb(h)
    d = h.path("full-convert")
    os.makedirs(d)
    out = os.path.join(d, "out.rdb")
    shutil.copy(old_target(h), out)
    before = open(out, "rb").read()
    rc, stdout, err = run_ks(["rdb", "convert", src, out], limit=fsize_limit(16 * 1024))
    ok(rc not in (0, -signal.SIGXFSZ) and rc > 0, "a clear failure, exit %d" % rc)
    ok("out.rdb" in err, "the message names the file: %s" % err)
    eq(open(out, "rb").read(), before, "the old output is untouched")
    eq(temp_files(d), [], "no temporary file")


if __name__ == "__main__":
    run_tests()
