#!/usr/bin/python3
"""`keyshift migrate plan|apply|status|report|rollback` on a throw-away host tree: Debian's
redis-server 7.0 on a unix socket and TCP with data and a writer, an nginx upstream and a
wp-config.php pointing at its socket, moved to `keyshift serve` by the snapshot strategy
through `--service-manager command`. Checked: the data is equal on the target and no
acknowledged write is lost, the app files point at the new socket (php -l when php is
installed), the report has the verification and the bench table, `migrate apply` killed by
SIGKILL inside a service command, and at the start and after the run of every step, and
run again ends in the same state, `--format json` (changed, failed, msg, diff), and rollback puts every file
back byte for byte with the source serving the data and the writes made on the target.

Run: KEYSHIFT_BIN=build/keyshift /usr/bin/python3 tests/integration/test_migrate_plan.py
"""

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import (HOST, RespConn, SetupError, Skip, ensure_tools, eq,  # noqa: E402
                     keyshift_bin, ok, port_free, run_tests, test, wait_for)

# This test's own ports (23300-23399), so parallel runs of other suites never collide.
# KEYSHIFT_TEST_PORTS=FIRST-LAST moves the range (parallel runs on one machine).
_FIRST, _LAST = os.environ.get("KEYSHIFT_TEST_PORTS", "23340-23399").split("-")
PORTS = range(int(_FIRST), int(_LAST))

NGINX = """upstream php {
    server 127.0.0.1:9000;
}

upstream redis {
    server unix:%(sock)s;
    keepalive 10;
}
"""

WP_CONFIG = """<?php
/** Redis Object Cache */
define( 'WP_REDIS_SCHEME', 'unix' );
define( 'WP_REDIS_PATH', '%(sock)s' );
define( 'WP_REDIS_DATABASE', 0 );
define( 'WP_REDIS_PREFIX', 'example.com:' );
$table_prefix = 'wp_';
"""

REDIS_CONF = """# a Debian-like redis.conf inside the test's host tree
bind 127.0.0.1
port %(port)d
unixsocket %(root)s/run/redis/redis-server.sock
unixsocketperm 770
daemonize yes
pidfile %(root)s/run/redis/redis-server.pid
loglevel notice
logfile %(root)s/var/log/redis/redis-server.log
databases 16
save ""
dbfilename dump.rdb
dir %(root)s/var/lib/redis
appendonly no
maxmemory 64mb
maxmemory-policy allkeys-lru
"""


def pick_port():
    for p in PORTS:
        if port_free(p):
            return p
    raise SetupError("no free port in %s..%s" % (PORTS[0], PORTS[-1]))


def ks(*args, timeout=120):
    p = subprocess.run([keyshift_bin()] + [str(a) for a in args], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=timeout)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def sha(path):
    with open(path, "rb") as f:
        return hashlib.sha1(f.read()).hexdigest()


def conn_up(sock):
    try:
        with RespConn(path=sock, timeout=2) as c:
            raw, _ = c.command("PING")
            return raw == b"+PONG\r\n"
    except OSError:
        return False
    except Exception:  # noqa: BLE001 - a half-open socket during shutdown
        return False


class Host:
    """A host tree under the harness's temp dir: /etc, /run, /var of one machine."""

    def __init__(self, h, name):
        ensure_tools(("redis-server", "redis-cli"))
        self.root = h.path(name)
        self.port = pick_port()
        for d in ("etc/redis", "run/redis", "var/lib/redis", "var/log/redis", "etc/nginx/conf.d",
                  "var/www/example.com", "var/log/valkey", "state"):
            os.makedirs(os.path.join(self.root, d), exist_ok=True)
        self.src_sock = self.p("run/redis/redis-server.sock")
        self.dst_sock = self.p("run/valkey/valkey-server.sock")
        self.conf = self.p("etc/redis/redis.conf")
        self.dst_conf = self.p("etc/valkey/valkey.conf")
        with open(self.conf, "w") as f:
            f.write(REDIS_CONF % {"root": self.root, "port": self.port})
        self.apps = [self.p("etc/nginx/conf.d/upstream.conf"),
                     self.p("var/www/example.com/wp-config.php")]
        with open(self.apps[0], "w") as f:
            f.write(NGINX % {"sock": self.src_sock})
        with open(self.apps[1], "w") as f:
            f.write(WP_CONFIG % {"sock": self.src_sock})
        self.before = {path: sha(path) for path in self.apps + [self.conf]}
        self.source_start = "redis-server %s" % self.conf
        self.source_stop = "redis-cli -s %s shutdown" % self.src_sock
        self.target_start = ("setsid nohup %s serve %s > %s 2>&1 < /dev/null &"
                             % (keyshift_bin(), self.dst_conf, self.p("var/log/valkey/serve.out")))
        self.target_stop = "redis-cli -s %s shutdown nosave" % self.dst_sock

    def p(self, rel):
        return os.path.join(self.root, rel)

    def start_source(self):
        subprocess.run(self.source_start, shell=True, check=True)
        wait_for(lambda: conn_up(self.src_sock), "redis-server on its socket", 30)

    def fill(self):
        with RespConn(path=self.src_sock) as c:
            for i in range(300):
                c.command("SET", "str:%d" % i, "v%d" % i)
            for i in range(30):
                c.command("HSET", "hash:%d" % i, "a", str(i), "b", "x" * i)
                c.command("RPUSH", "list:%d" % i, *[str(j) for j in range(i + 1)])
                c.command("SADD", "set:%d" % i, *[str(j) for j in range(i + 1)])
                c.command("ZADD", "zset:%d" % i, "1.5", "a", str(i), "b")
                c.command("SET", "ttl:%d" % i, "t", "EX", "3600")

    def plan(self, out, to=("--to", "keyshift"), extra=(), strategy="snapshot", bench=500):
        rc, stdout, stderr = ks(
            "migrate", "plan", "--from", "unix://" + self.src_sock, *to,
            "--strategy", strategy, "--service-manager", "command",
            "--source-start", self.source_start, "--source-stop", self.source_stop,
            "--target-start", self.target_start, "--target-stop", self.target_stop,
            "--target-socket", self.dst_sock, "--target-dir", self.p("var/lib/valkey"),
            "--target-config", self.dst_conf, "--layout", "custom",
            "--map-path", "%s=%s" % (self.p("var/log/redis"), self.p("var/log/valkey")),
            "--map-path", "%s=%s" % (self.p("run/redis"), self.p("run/valkey")),
            "--apps", *self.apps, "--state-dir", self.p("state"), "--bench-requests", str(bench),
            *extra, "--out", out)
        eq(rc, 0, "migrate plan: %s%s" % (stdout, stderr))
        return out

    def stop_all(self):
        for sock in (self.src_sock, self.dst_sock):
            if conn_up(sock):
                subprocess.run(["redis-cli", "-s", sock, "shutdown", "nosave"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


class Writer:
    """An app writing w:N = N through the source's socket, one SET at a time; `acked` holds
    every N the server acknowledged. It stops writing once the source is gone."""

    def __init__(self, sock):
        self.sock = sock
        self.acked = []
        self.stop_flag = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        n = 0
        while not self.stop_flag.is_set():
            try:
                with RespConn(path=self.sock, timeout=30) as c:
                    while not self.stop_flag.is_set():
                        raw, _ = c.command("SET", "w:%d" % n, str(n))
                        if raw == b"+OK\r\n":
                            self.acked.append(n)
                        n += 1
                        time.sleep(0.002)
            except Exception:  # noqa: BLE001 - the source went away; try again later
                time.sleep(0.05)

    def stop(self):
        self.stop_flag.set()
        self.thread.join(timeout=40)


def dataset(sock):
    """Every key with its type and value, as one comparable dict."""
    out = {}
    with RespConn(path=sock) as c:
        cursor = b"0"
        while True:
            _, reply = c.command("SCAN", cursor, "COUNT", "1000")
            cursor, keys = reply[0], reply[1]
            for k in keys:
                _, t = c.command("TYPE", k)
                if t == b"string":
                    _, v = c.command("GET", k)
                elif t == b"hash":
                    _, v = c.command("HGETALL", k)
                    v = sorted(v)
                elif t == b"list":
                    _, v = c.command("LRANGE", k, "0", "-1")
                elif t == b"set":
                    _, v = c.command("SMEMBERS", k)
                    v = sorted(v)
                else:
                    _, v = c.command("ZRANGE", k, "0", "-1", "WITHSCORES")
                out[bytes(k)] = (bytes(t), repr(v))
            if cursor in (b"0", 0, "0"):
                break
    return out


def check_migrated(host, plan, writer_acked, source_data):
    ok(conn_up(host.dst_sock), "the target serves on " + host.dst_sock)
    ok(not conn_up(host.src_sock), "the source is stopped")
    target = dataset(host.dst_sock)
    for k, v in source_data.items():
        eq(target.get(k), v, "key %r on the target" % k)
    with RespConn(path=host.dst_sock) as c:
        for n in writer_acked:
            _, v = c.command("GET", "w:%d" % n)
            eq(v, str(n).encode(), "acknowledged write w:%d on the target" % n)
    for app in host.apps:
        text = open(app).read()
        ok(host.dst_sock in text and host.src_sock not in text,
           "%s points at the target's socket:\n%s" % (app, text))
    if shutil.which("php"):
        p = subprocess.run(["php", "-l", host.apps[1]], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT)
        eq(p.returncode, 0, "php -l: %s" % p.stdout)
    rc, out, err = ks("migrate", "status", plan, "--json")
    eq(rc, 0, err)
    status = json.loads(out)
    eq(status["steps_done"], status["steps_total"], "every step done: %s" % out)
    eq(status["next"], None)


@test
def snapshot_move_report_and_rollback(h):
    host = Host(h, "host-a")
    try:
        host.start_source()
        host.fill()
        writer = Writer(host.src_sock)
        wait_for(lambda: len(writer.acked) > 50, "the writer's first writes", 30)
        plan = host.plan(host.p("plan.toml"))
        text = open(plan).read()
        ok("[keyshift_migration_plan]" in text and "format = 1" in text, text[:400])
        for step in ("bench-before", "pause-source", "save-source", "stop-source", "import-data",
                     "write-target-config", "start-target", "verify-data", "rewrite-apps",
                     "bench-after"):
            ok('name = "%s"' % step in text, "step %s in the plan" % step)
        rc, out, err = ks("migrate", "apply", plan, "--check")
        eq(rc, 0, err)
        ok("would run stop-source" in out, out)
        rc, out, err = ks("migrate", "apply", plan, "--check", "--diff")
        eq(rc, 0, err)
        ok("+    server unix:%s;" % host.dst_sock in out, "the nginx diff in --diff: " + out)
        ok(conn_up(host.src_sock), "--check changed nothing")
        rc, out, err = ks("migrate", "apply", plan, "--check", "--diff", "--format", "json")
        eq(rc, 0, err)
        result = json.loads(out)
        eq((result["changed"], result["failed"], result["check"]), (True, False, True), out)
        ok("stop-source" in result["ran"], "the steps that would run: " + out)
        ok(any(d["step"] == "rewrite-apps" and "+    server unix:%s;" % host.dst_sock
               in d["prepared"] for d in result["diff"]), "the nginx diff in the JSON: " + out)
        ok(all(s["state"] == "pending" for s in result["steps"]), "nothing journaled: " + out)
        ok(conn_up(host.src_sock) and not conn_up(host.dst_sock), "check mode changed nothing")
        for path, digest in host.before.items():
            eq(sha(path), digest, "%s untouched by check mode" % path)

        rc, out, err = ks("migrate", "apply", plan, timeout=300)
        writer.stop()
        eq(rc, 0, "apply: %s%s" % (out, err))
        source_data = dataset_of_rdb(host)
        rc, verify_out, err = ks("verify", "data", host.p("var/lib/redis/dump.rdb"),
                                 "unix://" + host.dst_sock, "--format", "json", "--no-progress")
        eq(rc, 0, "verify data: %s%s" % (verify_out, err))
        check_migrated(host, plan, writer.acked, source_data)
        ok(len(writer.acked) > 50, "the writer wrote before the move")

        rc, out, err = ks("migrate", "apply", plan)
        eq(rc, 0, err)
        ok("ran 0 step(s)" in out, "a second apply does nothing: " + out)
        rc, out, err = ks("migrate", "apply", plan, "--format", "json")
        eq(rc, 0, err)
        result = json.loads(out)
        eq((result["changed"], result["failed"], result["ran"]), (False, False, []), out)
        ok(all(s["state"] == "done" and s["finished_ms"] >= s["started_ms"] > 0
               for s in result["steps"]), "every step done with its times: " + out)
        rc, out, err = ks("migrate", "status", plan, "--format", "json")
        eq(rc, 0, err)
        eq(json.loads(out)["changed"], False, out)
        rc, out, err = ks("migrate", "rollback", plan, "--check", "--format", "json")
        eq(rc, 0, err)
        result = json.loads(out)
        eq((result["changed"], result["failed"]), (True, False), out)
        eq(result["undone"][0], "bench-after", "newest first: " + out)
        ok(conn_up(host.dst_sock), "rollback --check changed nothing")

        for fmt in ("text", "markdown", "html"):
            rc, out, err = ks("migrate", "report", plan, "--format", fmt)
            eq(rc, 0, err)
            ok("EQUAL" in out, "verification in the %s report:\n%s" % (fmt, out))
            ok("PING_INLINE" in out or "ping" in out.lower(), "bench rows in the report")
            ok("valkey-server.sock" in out, "the app diffs in the report")
        ok(out.startswith("<!DOCTYPE html>") or out.lstrip().lower().startswith("<!doctype"),
           out[:100])
        page = host.p("report.html")
        rc, _, err = ks("migrate", "report", plan, "--format", "html", "--out", page)
        eq(rc, 0, err)
        html = open(page).read()
        ok("<script" not in html and "https://" not in html, "self-contained, no script")
        browser = shutil.which("chromium") or shutil.which("chromium-browser")
        if browser:  # the page as a browser builds it
            dom = subprocess.run(
                [browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                 "--user-data-dir=" + host.p("chromium-profile"), "--dump-dom", "file://" + page],
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=120).stdout.decode()
            ok(dom.count("<table>") >= 3 and "EQUAL" in dom and "GET" in dom,
               "chromium renders the steps, bench and preflight tables: " + dom[:300])

        # A write on the target after the cutover survives the rollback.
        with RespConn(path=host.dst_sock) as c:
            c.command("SET", "after:cutover", "kept")
        rc, out, err = ks("migrate", "rollback", plan, timeout=300)
        eq(rc, 0, "rollback: %s%s" % (out, err))
        for path, digest in host.before.items():
            eq(sha(path), digest, "%s restored byte for byte" % path)
        ok(not os.path.exists(host.dst_conf), "the target's config is gone")
        ok(conn_up(host.src_sock), "the source serves again")
        ok(not conn_up(host.dst_sock), "the target is stopped")
        with RespConn(path=host.src_sock) as c:
            eq(c.command("GET", "after:cutover")[1], b"kept", "the target's write synced back")
            eq(c.command("GET", "str:7")[1], b"v7", "the source's data")
            _, v = c.command("GET", "w:%d" % writer.acked[-1])
            eq(v, str(writer.acked[-1]).encode(), "the writer's last acknowledged write")
    finally:
        host.stop_all()


def rollback_and_check(host, plan):
    """migrate rollback: every file as before, byte for byte, and the source serving."""
    rc, out, err = ks("migrate", "rollback", plan, timeout=300)
    eq(rc, 0, "rollback: %s%s" % (out, err))
    for path, digest in host.before.items():
        eq(sha(path), digest, "%s restored byte for byte" % path)
    ok(conn_up(host.src_sock), "the source serves again")
    ok(not conn_up(host.dst_sock), "the target is stopped")


def kill_inside(h, name, step, command):
    """Runs apply, kills it (and the command it runs) with SIGKILL while it is inside `step`,
    whose service `command` ("source_stop" or "target_start") waits for a gate file until
    then, runs apply again and checks the end state and the rollback."""
    host = Host(h, name)
    try:
        host.start_source()
        host.fill()
        gate = host.p("gate")
        setattr(host, command,
                "while [ ! -e %s ]; do sleep 0.05; done; %s" % (gate, getattr(host, command)))
        plan = host.plan(host.p("plan.toml"))
        p = subprocess.Popen([keyshift_bin(), "migrate", "apply", plan],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True)
        journal = host.p("state/journal.toml")

        def inside():
            try:
                text = open(journal).read()
            except OSError:
                return False
            return ('name = "%s"\nstate = "running"' % step) in text or p.poll() is not None

        wait_for(inside, "apply to reach " + step, 120)
        os.killpg(p.pid, signal.SIGKILL)  # apply and the command it runs, as a crash would
        p.wait()
        # Killed inside stop-source the source still runs; inside start-target it is stopped.
        eq(conn_up(host.src_sock), step == "stop-source",
           "the source's state at the kill: " + open(journal).read())
        with open(gate, "w"):
            pass
        rc, out, err = ks("migrate", "status", plan, "--json")
        eq(rc, 0, err)
        status = json.loads(out)
        ok(status["steps_done"] < status["steps_total"], "killed before the end: " + out)
        rc, out, err = ks("migrate", "apply", plan, timeout=300)
        eq(rc, 0, "rerun: %s%s" % (out, err))
        ok("already done" in out, out)
        check_migrated(host, plan, [], dataset_of_rdb(host))
        with open(host.p("state/journal.toml")) as f:
            ok(f.read().count('state = "done"') >= 10, "every step journaled done")
        rollback_and_check(host, plan)
    finally:
        host.stop_all()


def valkey_serves_then_roll_back(host, plan):
    """The target is valkey-server (its INFO says so); then migrate rollback and its checks."""
    with RespConn(path=host.dst_sock) as c:
        _, info = c.command("INFO", "server")
        ok(b"valkey_version:" in info, "valkey-server serves the data")
    rollback_and_check(host, plan)


def valkey_binary():
    """valkey-server to move to: KEYSHIFT_VALKEY_SERVER or one on PATH; skips without."""
    binary = os.environ.get("KEYSHIFT_VALKEY_SERVER") or shutil.which("valkey-server")
    if not binary:
        raise Skip("no valkey-server (set KEYSHIFT_VALKEY_SERVER)")
    return binary


@test
def snapshot_move_to_valkey_server(h):
    binary = valkey_binary()
    host = Host(h, "host-v")
    try:
        host.start_source()
        host.fill()
        # valkey-server refuses a config whose dir is missing, the preflight's dry start too.
        os.makedirs(host.p("var/lib/valkey"))
        host.target_start = "%s %s" % (binary, host.dst_conf)  # daemonize yes, as the source
        plan = host.plan(host.p("plan.toml"),
                         to=("--to", "valkey-server", "--target-binary", binary))
        ok('kind = "valkey-server"' in open(plan).read(), "the plan's target")
        rc, out, err = ks("migrate", "apply", plan, timeout=300)
        eq(rc, 0, "apply: %s%s" % (out, err))
        check_migrated(host, plan, [], dataset_of_rdb(host))
        valkey_serves_then_roll_back(host, plan)
    finally:
        host.stop_all()


@test
def a_failed_step_undoes_its_stage(h):
    host = Host(h, "host-c")
    try:
        host.start_source()
        host.fill()
        host.target_start = "echo the target refuses to start >&2; exit 3"
        plan = host.plan(host.p("plan.toml"))
        rc, out, err = ks("migrate", "apply", plan, timeout=300)
        eq(rc, 1, "apply fails: %s%s" % (out, err))
        ok("step start-target failed" in err and "the target refuses to start" in err, err)
        ok("undoing stage cutover" in out, out)
        ok(conn_up(host.src_sock), "the source serves again")
        with RespConn(path=host.src_sock) as c:
            eq(c.command("GET", "str:7")[1], b"v7", "the source's data")
            eq(c.command("SET", "after:undo", "1")[1], b"OK", "the source takes writes")
        ok(not os.path.exists(host.dst_conf), "the target's config was rolled back")
        ok(not os.path.exists(host.p("var/lib/valkey/dump.rdb")), "the converted data removed")
        for path, digest in host.before.items():
            eq(sha(path), digest, "%s untouched" % path)
        rc, out, err = ks("migrate", "status", plan)
        eq(rc, 0, err)
        ok("undone" in out and "failed" not in out.split("start-target")[0], out)
        rc, out, err = ks("migrate", "apply", plan, "--format", "json", timeout=300)
        eq(rc, 1, "apply fails again: %s%s" % (out, err))
        result = json.loads(out)
        eq(result["failed"], True, out)
        ok("step start-target failed" in result["msg"], out)
        ok(conn_up(host.src_sock), "the source serves again after the JSON run")
    finally:
        host.stop_all()


@test
def apply_killed_inside_stop_source_resumes_to_the_same_end(h):
    kill_inside(h, "host-b", "stop-source", "source_stop")


@test
def apply_killed_inside_start_target_resumes_to_the_same_end(h):
    kill_inside(h, "host-d", "start-target", "target_start")


@test
def apply_killed_at_every_step_resumes_to_the_same_end(h):
    """For each step of the snapshot plan, apply SIGKILLs itself (KEYSHIFT_TEST_KILL_AT_STEP,
    a test-only hook) once right after the step is journaled running and once right after its
    run list did its work but before it is journaled done; the rerun ends migrated with the
    data verified, and the rollback puts every file back."""
    probe = Host(h, "host-probe")
    try:
        probe.start_source()
        rc, out, err = ks("migrate", "status", probe.plan(probe.p("plan.toml")), "--format", "json")
        eq(rc, 0, err)
        steps = [s["name"] for s in json.loads(out)["steps"]]
    finally:
        probe.stop_all()
    ok(len(steps) >= 10, "the snapshot plan's steps: %s" % steps)
    for step in steps:
        for at in (step, step + "/ran"):
            host = Host(h, "host-kill-" + at.replace("/", "-"))
            try:
                host.start_source()
                host.fill()
                plan = host.plan(host.p("plan.toml"))
                p = subprocess.run([keyshift_bin(), "migrate", "apply", plan],
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300,
                                   env=dict(os.environ, KEYSHIFT_TEST_KILL_AT_STEP=at))
                eq(p.returncode, -signal.SIGKILL, "apply killed at %s: %s" % (at, p.stdout))
                rc, out, err = ks("migrate", "status", plan, "--format", "json")
                eq(rc, 0, err)
                status = json.loads(out)
                states = {s["name"]: s["state"] for s in status["steps"]}
                eq(states[step], "running", "journaled running at the kill (%s): %s" % (at, out))
                rc, out, err = ks("migrate", "apply", plan, "--format", "json", timeout=300)
                eq(rc, 0, "rerun after the kill at %s: %s%s" % (at, out, err))
                result = json.loads(out)
                eq(result["ran"][0], step, "the rerun starts with the killed step: " + out)
                check_migrated(host, plan, [], dataset_of_rdb(host))
                rc, out, err = ks("verify", "data", host.p("var/lib/redis/dump.rdb"),
                                  "unix://" + host.dst_sock, "--no-progress")
                eq(rc, 0, "verify data after the kill at %s: %s%s" % (at, out, err))
                rollback_and_check(host, plan)
            finally:
                host.stop_all()


@test
def plan_preflight_checks_memory_and_the_socket_group(h):
    """The plan's preflight holds the dataset's used_memory against MemAvailable and the
    target socket directory's owner:group with whether the web user is in that group (a
    warning with the usermod -aG fix when not); migrate report shows both."""
    import grp
    import pwd
    if os.geteuid() != 0:
        raise Skip("chgrp of the socket directory needs root")
    try:
        pwd.getpwnam("www-data")
        outsider = grp.getgrgid(65534).gr_name  # nogroup: www-data is not a member
    except KeyError:
        raise Skip("no www-data user or gid 65534 on this host")
    host = Host(h, "host-pre")
    try:
        host.start_source()
        host.fill()
        sock_dir = os.path.dirname(host.dst_sock)
        os.makedirs(sock_dir)
        os.chown(sock_dir, 0, 65534)
        plan = host.plan(host.p("plan.toml"))
        text = open(plan).read()
        ok('name = "memory"' in text and "(used_memory)" in text and "(MemAvailable)" in text,
           "the memory check in the plan: " + text)
        ok("usermod -aG %s www-data" % outsider in text, "the group fix in the plan: " + text)
        ok('verdict = "warn"' in text.split('name = "socket-group"')[1][:40], text)
        rc, out, err = ks("migrate", "report", plan)
        eq(rc, 0, err)
        ok("socket-group" in out and "usermod -aG %s www-data" % outsider in out
           and "MemAvailable" in out, "the report's preflight: " + out)
        os.chown(sock_dir, 0, grp.getgrnam("www-data").gr_gid)
        text = open(host.plan(host.p("plan2.toml"))).read()
        ok('verdict = "ok"' in text.split('name = "socket-group"')[1][:40]
           and "www-data is in group www-data" in text, text)
        text = open(host.plan(host.p("plan3.toml"), extra=("--web-user", "nobody"))).read()
        ok("usermod -aG www-data nobody" in text, "--web-user names the user: " + text)
    finally:
        host.stop_all()


def dataset_of_rdb(host):
    """The source's saved data as the target must hold it: loaded by a throw-away
    redis-server from the RDB the SAVE step wrote (independent of keyshift)."""
    port = pick_port()
    d = host.p("rdb-check")
    os.makedirs(d, exist_ok=True)
    shutil.copy(host.p("var/lib/redis/dump.rdb"), os.path.join(d, "dump.rdb"))
    sock = os.path.join(d, "check.sock")
    p = subprocess.Popen(["redis-server", "--port", str(port), "--bind", HOST, "--dir", d,
                          "--unixsocket", sock, "--save", ""],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: conn_up(sock), "the checking redis-server", 30)
        data = dataset(sock)
    finally:
        p.terminate()
        p.wait()
    ok(len(data) >= 450, "the snapshot holds the data (%d keys)" % len(data))
    return data


if __name__ == "__main__":
    run_tests()
