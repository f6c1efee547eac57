#!/usr/bin/python3
"""`keyshift migrate` with `--strategy replica`: Debian's redis-server 7.0 on a unix socket and
TCP, a writer (python3-redis) writing increasing counters through the address wp-config.php
names during the whole migration, the target (keyshift serve; valkey-server 8.0.1 when
KEYSHIFT_VALKEY_SERVER names one) started beside the source, following it by REPLICAOF, then cut
over under CLIENT PAUSE WRITE. Checked: every acknowledged counter is on the target afterwards
and the data is equal; the writes refused and the longest gap without a successful write are
printed (measured, not asserted); `migrate apply` SIGKILLed at points of the strategy and run
again ends in the same state; rollback returns every file and the writes made on the target.

Run: KEYSHIFT_BIN=build/keyshift /usr/bin/python3 tests/integration/test_migrate_replica.py
"""

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

# This test's own ports, apart from test_migrate_plan's (KEYSHIFT_TEST_PORTS moves both).
os.environ.setdefault("KEYSHIFT_TEST_PORTS", "23400-23459")

import harness  # noqa: E402
from harness import RespConn, Skip, eq, keyshift_bin, ok, run_tests, test  # noqa: E402

_OWN = len(harness._TESTS)
from test_migrate_plan import (Host, check_migrated, conn_up, dataset, ks,  # noqa: E402
                               rollback_and_check, sha, valkey_binary,
                               valkey_serves_then_roll_back)
del harness._TESTS[_OWN:]  # the shared fixtures only: test_migrate_plan's tests run there

try:
    import redis  # Debian's python3-redis
except ImportError:  # pragma: no cover - the test skips
    redis = None

REPLICA_STEPS = ("write-target-config", "start-target", "follow-source", "pause-source",
                 "wait-caught-up", "verify-data", "promote-target", "stop-source", "take-over-port",
                 "open-target", "rewrite-apps")
IMPORT_STEPS = tuple(s for s in REPLICA_STEPS if s != "promote-target")
NO_TCP_STEPS = tuple(s for s in IMPORT_STEPS if s != "take-over-port")


class AppWriter:
    """An app writing w:N = N with python3-redis through the socket wp-config.php names,
    reread on every reconnect as PHP rereads its config per request. Keeps every N the server
    acknowledged, the number of writes refused (errors, closed connections) and the longest
    time between two acknowledged writes."""

    def __init__(self, wp_config, port=None):
        if redis is None:
            raise Skip("no python3-redis")
        self.wp_config = wp_config
        self.port = port  # an app on 127.0.0.1:port (WP_REDIS_PORT), keys t:N
        self.key = "w:%d" if port is None else "t:%d"
        self.acked = []
        self.refused = 0
        self.max_gap = 0.0
        self.stop_flag = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def socket(self):
        with open(self.wp_config) as f:
            return re.search(r"'WP_REDIS_PATH', '([^']+)'", f.read()).group(1)

    def run(self):
        n = 0
        last = time.monotonic()
        client = None
        while not self.stop_flag.is_set():
            try:
                if client is None and self.port:
                    client = redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=60)
                elif client is None:
                    client = redis.Redis(unix_socket_path=self.socket(), socket_timeout=60)
                if client.set(self.key % n, n):
                    now = time.monotonic()
                    self.max_gap = max(self.max_gap, now - last)
                    last = now
                    self.acked.append(n)
            except (redis.RedisError, OSError):
                self.refused += 1
                if client is not None:
                    client.close()
                client = None
                time.sleep(0.005)
            n += 1
            time.sleep(0.001)

    def wait_acked(self, count):
        """Until `count` writes are acknowledged (30 s at most: the checks say what came)."""
        deadline = time.monotonic() + 30
        while len(self.acked) < count and time.monotonic() < deadline:
            time.sleep(0.01)

    def stop(self):
        self.stop_flag.set()
        self.thread.join(timeout=70)
        ok(not self.thread.is_alive(), "the writer stopped")


def without_tcp(host):
    """The source on its unix socket only (port 0), as some WordOps hosts run it."""
    with open(host.conf) as f:
        text = f.read()
    with open(host.conf, "w") as f:
        f.write(text.replace("port %d\n" % host.port, "port 0\n"))
    host.before[host.conf] = sha(host.conf)


def check_tcp_writer(host, tcp):
    """The app on 127.0.0.1:<source port> goes on writing, now to the target, with no file
    changed, and every write acknowledged on the port is on the target."""
    after = len(tcp.acked)
    tcp.wait_acked(after + 50)
    tcp.stop()
    print("    tcp app on port %d: %d acknowledged, %d refused, longest gap %.3f s"
          % (host.port, len(tcp.acked), tcp.refused, tcp.max_gap))
    ok(len(tcp.acked) > after, "the TCP app writes to the target on the source's port")
    with RespConn(path=host.dst_sock) as c:
        eq(c.command("CONFIG", "GET", "port")[1][1], str(host.port).encode(), "the target's port")
        missing = [n for n in tcp.acked if c.command("GET", "t:%d" % n)[1] != str(n).encode()]
    eq(missing, [], "every write acknowledged over TCP is on the target")
    with open(host.dst_conf) as f:
        ok(re.search(r"(?m)^port %d$" % host.port, f.read()), "the target restarts on the port")


def replica_plan(host, steps=REPLICA_STEPS, **kw):
    plan = host.plan(host.p("plan.toml"), strategy="replica", **kw)
    text = open(plan).read()
    ok('strategy = "replica"' in text, "the plan's strategy")
    for step in steps:
        ok('name = "%s"' % step in text, "step %s in the plan" % step)
    ok(('"REPLICAOF", "127.0.0.1"' in text) == (steps == REPLICA_STEPS),
       "followed by REPLICAOF or by import: " + text)
    ok("save-source" not in text and "import-data" not in text, "no snapshot steps")
    return plan


def move_with_writer(h, name, to=("--to", "keyshift"), target_binary=None, prepare=None,
                     steps=REPLICA_STEPS):
    host = Host(h, name)
    try:
        if prepare:
            prepare(host)
        host.start_source()
        host.fill()
        fixed = {k: v for k, v in dataset(host.src_sock).items()}
        if target_binary:  # daemonize yes, as the source; it refuses a missing dir
            os.makedirs(host.p("var/lib/valkey"))
            host.target_start = "%s %s" % (target_binary, host.dst_conf)
        plan = replica_plan(host, steps=steps, to=to, bench=200)
        writer = AppWriter(host.apps[1])
        tcp = AppWriter(host.apps[1], port=host.port) if "take-over-port" in steps else None
        writer.wait_acked(100)
        rc, out, err = ks("migrate", "apply", plan, timeout=300)
        eq(rc, 0, "apply: %s%s" % (out, err))
        after = len(writer.acked)
        writer.wait_acked(after + 100)
        writer.stop()
        print("    %s: %d writes acknowledged, %d refused, longest gap without a write %.3f s"
              % (name, len(writer.acked), writer.refused, writer.max_gap))
        ok(len(writer.acked) > after, "the writer writes to the target after the cutover")
        check_migrated(host, plan, writer.acked, fixed)
        if tcp:
            check_tcp_writer(host, tcp)
        verify = json.load(open(host.p("state/verify.json")))
        ok(json.dumps(verify).find("EQUAL") >= 0 or verify.get("equal") is True,
           "verify-data before the switch: %s" % verify)
        with RespConn(path=host.dst_sock) as c:
            _, role = c.command("ROLE")
            eq(role[0], b"master", "the target is a primary")
        return host, plan, writer
    except BaseException:
        host.stop_all()
        raise


def port_held_by_another_fails_clearly(host, plan):
    """While something else listens on the source's freed port, apply stops at
    take-over-port with an error that says so, the target keeps serving on its socket; the
    next apply (run by the caller once the port is free) continues there."""
    holder = socket.socket()
    holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    holder.bind(("127.0.0.1", host.port))
    holder.listen(1)
    try:
        rc, out, err = ks("migrate", "apply", plan, timeout=300)
        ok(rc != 0, "apply fails while the port is held: %s%s" % (out, err))
        ok("take-over-port" in out + err and "Unable to listen on this port" in out + err,
           "the error names the step and the port: %s%s" % (out, err))
        ok(conn_up(host.dst_sock), "the target still serves on its socket")
        ok("undo stop-source" not in out, "the source is not restarted: " + out)
    finally:
        holder.close()


@test
def replica_move_to_keyshift_loses_no_acknowledged_write(h):
    host, plan, writer = move_with_writer(h, "rhost-a")
    try:
        rc, out, err = ks("migrate", "report", plan)
        eq(rc, 0, err)
        ok("EQUAL" in out and "replica" in out, "the report: " + out)
        with RespConn(path=host.dst_sock) as c:
            c.command("SET", "after:cutover", "kept")
        rollback_and_check(host, plan)
        with RespConn(path=host.src_sock) as c:
            eq(c.command("GET", "after:cutover")[1], b"kept", "the target's write synced back")
            last = writer.acked[-1]
            eq(c.command("GET", "w:%d" % last)[1], str(last).encode(), "the last acked write")
        with RespConn(port=host.port) as c:
            eq(c.command("GET", "after:cutover")[1], b"kept", "the source has its port back")
    finally:
        host.stop_all()


@test
def replica_move_to_valkey_server_loses_no_acknowledged_write(h):
    binary = valkey_binary()
    host, plan, _ = move_with_writer(
        h, "rhost-v", to=("--to", "valkey-server", "--target-binary", binary),
        target_binary=binary)
    try:
        valkey_serves_then_roll_back(host, plan)
    finally:
        host.stop_all()


@test
def replica_apply_killed_at_its_steps_resumes_to_the_same_end(h):
    """apply SIGKILLs itself (KEYSHIFT_TEST_KILL_AT_STEP) inside the replica strategy's steps,
    followed by REPLICAOF and by import, while the writer writes; the rerun ends migrated with every acknowledged write on the
    target, and the rollback puts every file back."""
    points = [(None, REPLICA_STEPS, at) for at in (
        "follow-source/ran", "pause-source/ran", "wait-caught-up", "promote-target/ran",
        "stop-source/ran", "take-over-port", "take-over-port/ran")]
    points += [(without_tcp, NO_TCP_STEPS, at) for at in ("follow-source", "wait-caught-up/ran")]
    for prepare, steps, at in points:
        host = Host(h, "rhost-kill-%s%s" % ("import-" if prepare else "", at.replace("/", "-")))
        try:
            if prepare:
                prepare(host)
            host.start_source()
            host.fill()
            fixed = dataset(host.src_sock)
            plan = replica_plan(host, steps=steps, bench=0)
            writer = AppWriter(host.apps[1])
            p = subprocess.run([keyshift_bin(), "migrate", "apply", plan],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300,
                               env=dict(os.environ, KEYSHIFT_TEST_KILL_AT_STEP=at))
            eq(p.returncode, -signal.SIGKILL, "apply killed at %s: %s" % (at, p.stdout))
            rc, out, err = ks("migrate", "status", plan, "--format", "json")
            eq(rc, 0, err)
            following = prepare is None and at in ("pause-source/ran", "wait-caught-up")
            lag = json.loads(out)["lag_bytes"]
            ok(isinstance(lag, int) if following else lag is None, "status's lag: " + out)
            if at == "take-over-port":
                port_held_by_another_fails_clearly(host, plan)
            rc, out, err = ks("migrate", "apply", plan, "--format", "json", timeout=300)
            eq(rc, 0, "rerun after the kill at %s: %s%s" % (at, out, err))
            eq(json.loads(out)["ran"][0], at.split("/")[0], "the rerun starts at the killed step")
            after = len(writer.acked)
            writer.wait_acked(after + 20)
            writer.stop()
            print("    kill at %s: %d acknowledged, %d refused, longest gap %.3f s"
                  % (at, len(writer.acked), writer.refused, writer.max_gap))
            check_migrated(host, plan, writer.acked, fixed)
            rollback_and_check(host, plan)
        finally:
            host.stop_all()


@test
def replica_move_without_a_tcp_port_follows_by_import(h):
    """REPLICAOF needs a port: the plan follows by keyshift import --mode sync through the
    source's socket, and the cutover continues that import by PSYNC under the pause."""
    host, plan, _ = move_with_writer(h, "rhost-i", prepare=without_tcp, steps=NO_TCP_STEPS)
    try:
        ok("keyshift import --mode sync" in open(plan).read(), "the plan says why and how")
        ok(os.path.exists(host.p("state/follow.checkpoint")), "the import's checkpoint")
        rollback_and_check(host, plan)
        ok(not os.path.exists(host.p("state/follow.checkpoint")), "the checkpoint undone")
    finally:
        host.stop_all()


@test
def replica_move_from_redis_7_4_to_valkey_8_0_follows_by_import(h):
    """valkey-server 8.0 refuses Redis 7.4's RDB 12 full sync, so REPLICAOF cannot work:
    keyshift import follows and converts."""
    redis74 = os.environ.get("KEYSHIFT_REDIS74_SERVER")
    if not redis74 or not os.path.exists(redis74):
        raise Skip("no Redis 7.4 (set KEYSHIFT_REDIS74_SERVER)")
    binary = valkey_binary()

    def use_redis74(host):
        host.source_start = "%s %s" % (redis74, host.conf)

    host, plan, _ = move_with_writer(
        h, "rhost-74", to=("--to", "valkey-server", "--target-binary", binary),
        target_binary=binary, prepare=use_redis74, steps=IMPORT_STEPS)
    try:
        ok("RDB 12" in open(plan).read(), "the plan says why it imports")
        valkey_serves_then_roll_back(host, plan)
    finally:
        host.stop_all()


if __name__ == "__main__":
    run_tests()
