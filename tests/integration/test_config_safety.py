#!/usr/bin/python3
"""Directives that restrict access or protect the server and its data: `keyshift serve`
either enforces them as Valkey 8 does or refuses to start naming the file and line. Driven
by the real binary, redis-cli, python3-redis and raw sockets.

Run: KEYSHIFT_BIN=build/keyshift /usr/bin/python3 tests/integration/test_config_safety.py [NAME...]
"""

import grp
import os
import re
import signal
import socket
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import (HOST, eq, free_port, keyshift_bin, ok,  # noqa: E402
                     run_tests, test)

CLOSE_WAIT = 30.0  # upper bound for "the server closes this connection", never a timing check
POLL_BOUND = 30.0  # upper bound for polls on server state; a bound, never an assertion


def serve_refuses(h, name, text, line, needle):
    """Writes `text` as a config file and checks that `keyshift serve` (and --test-config)
    refuse it naming the file, `line` and the reason, and that nothing listens."""
    path = h.path(name)
    port = free_port()
    with open(path, "w") as f:
        f.write(text)
    for extra in ([], ["--test-config"]):
        p = subprocess.run([keyshift_bin(), "serve"] + extra + [path, "--port", str(port)],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=30)
        out = p.stdout.decode("utf-8", "replace")
        ok(p.returncode != 0, "serve %s exited 0 on %r:\n%s" % (extra, text, out))
        ok(path in out, "the message names the file %s:\n%s" % (path, out))
        ok(re.search(r"\bline %d\b" % line, out) is not None,
           "the message names line %d:\n%s" % (line, out))
        ok(needle in out, "the message says why (%r):\n%s" % (needle, out))
    cli = subprocess.run(["redis-cli", "-h", HOST, "-p", str(port), "ping"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=30)
    ok(b"PONG" not in cli.stdout, "nothing answers on port %d: %r" % (port, cli.stdout))


def info_field(srv, section, field):
    text = srv.cli("info", section)
    m = re.search(r"^%s:(.*)$" % re.escape(field), text, re.M)
    ok(m is not None, "INFO %s has %s:\n%s" % (section, field, text))
    return m.group(1).strip()


# ---------------------------------------------------------------------------------------
# Directives that restrict who may do what.
# ---------------------------------------------------------------------------------------

@test
def a_user_line_valkey_cannot_read_is_refused_naming_file_and_line(h):
    # user lines are enforced (test_acl.py); one with a syntax error stops the start as in
    # Valkey, whose message quotes the word two places before the bad rule.
    serve_refuses(h, "acl.conf", "# users\nuser default off\nuser alice on %Q~x\n",
                  3, "Error in user declaration 'alice': Syntax error")


@test
def a_user_line_that_leaves_the_default_user_open_is_accepted(h):
    srv = h.keyshift(config="user default on nopass ~* &* +@all\n", name="ks-open-user")
    eq(srv.cli("ping"), "PONG", "redis-cli ping")
    eq(srv.cli("set", "k", "v"), "OK", "SET as the open default user")


@test
def requirepass_in_an_included_file_takes_effect(h):
    def config(workdir):
        inc = os.path.join(workdir, "secret.conf")
        with open(inc, "w") as f:
            f.write("requirepass inc-s3cret\n")
        return "maxmemory 10mb\ninclude %s\n" % inc

    srv = h.keyshift(config=config, name="ks-include-pass")
    with srv.conn() as c:
        eq(c.command("PING")[0], b"-NOAUTH Authentication required.\r\n", "PING before AUTH")
        eq(c.command("SET", "k", "v")[0], b"-NOAUTH Authentication required.\r\n",
           "SET before AUTH")
        eq(c.command("AUTH", "inc-s3cret")[0], b"+OK\r\n", "AUTH with the included password")
        eq(c.command("SET", "k", "v")[0], b"+OK\r\n", "SET after AUTH")
    srv.password = "inc-s3cret"
    eq(srv.cli("get", "k"), "v", "redis-cli -a with the included password")


@test
def unixsocketgroup_gives_the_socket_to_the_group(h):
    group = grp.getgrgid(os.getgid() if os.getgid() != 0 else 1)  # a group other than root's
    srv = h.keyshift("--unixsocketgroup", group.gr_name, name="ks-sockgroup")
    eq(os.stat(srv.unixsocket).st_gid, group.gr_gid, "group of the socket file")
    eq(srv.cli("ping", unix=True), "PONG", "the socket serves")
    # A group that does not exist stops the server, as in Valkey.
    sock = h.path("nogroup.sock")
    p = subprocess.run([keyshift_bin(), "serve", "--port", "0", "--unixsocket", sock,
                        "--unixsocketgroup", "no-such-group-ks"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=30)
    out = p.stdout.decode("utf-8", "replace")
    ok(p.returncode != 0, "serve with an unknown group exited 0:\n%s" % out)
    ok("getgrnam error for group 'no-such-group-ks'" in out, "Valkey's wording:\n%s" % out)


@test
def settings_keyshift_cannot_honour_are_refused(h):
    cases = [
        ("aof-timestamp-enabled yes", "AOF timestamp annotations are not written"),
        ("cluster-enabled yes", "cluster mode is not implemented"),
        ("maxmemory-clients 10%", "client eviction is not implemented"),
    ]
    for i, (line, why) in enumerate(cases):
        serve_refuses(h, "refused-%d.conf" % i, "port 0\n%s\n" % line, 2, why)
    srv = h.keyshift(name="ks-refuse-set")
    out = srv.cli("config", "set", "aof-timestamp-enabled", "yes")
    eq(out, "ERR CONFIG SET failed (possibly related to argument 'aof-timestamp-enabled') - "
       "AOF timestamp annotations are not written by keyshift: the point-in-time recovery the "
       "setting promises would have nothing to go by", "CONFIG SET aof-timestamp-enabled yes")
    eq(srv.cli("config", "get", "aof-timestamp-enabled"), "aof-timestamp-enabled\nno",
       "aof-timestamp-enabled stays no")


# ---------------------------------------------------------------------------------------
# client-output-buffer-limit.
# ---------------------------------------------------------------------------------------

def stalled_subscriber(srv, channel):
    """A raw-socket subscriber with a tiny receive buffer that reads nothing after the
    SUBSCRIBE confirmation."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.settimeout(10)
    s.connect((HOST, srv.port))
    s.sendall(b"*2\r\n$9\r\nSUBSCRIBE\r\n$%d\r\n%s\r\n" % (len(channel), channel))
    want = b"*3\r\n$9\r\nsubscribe\r\n$%d\r\n%s\r\n:1\r\n" % (len(channel), channel)
    got = b""
    while len(got) < len(want):
        chunk = s.recv(len(want) - len(got))
        ok(chunk, "the subscriber got its confirmation")
        got += chunk
    eq(got, want, "SUBSCRIBE confirmation")
    return s


def closed_by_server(s, bound):
    """Drains `s` until the server closes it; True when it did within `bound` seconds (an
    upper bound, never a timing check)."""
    deadline = time.monotonic() + bound
    while time.monotonic() < deadline:
        s.settimeout(max(0.1, deadline - time.monotonic()))
        try:
            if not s.recv(1 << 20):
                return True
        except (ConnectionResetError, BrokenPipeError):
            return True
        except socket.timeout:
            return False
    return False


def subscribers_listed(srv):
    return [line for line in srv.cli("client", "list").splitlines() if " sub=1 " in line]


@test
def a_stalled_subscriber_is_cut_off_at_its_pubsub_limit(h):
    srv = h.keyshift("--client-output-buffer-limit", "pubsub 1mb 0 0", name="ks-cob-pubsub")
    eq(info_field(srv, "stats", "client_output_buffer_limit_disconnections"), "0",
       "no disconnection yet")
    sub = stalled_subscriber(srv, b"news")
    r = srv.redis()
    payload = b"x" * (20 * 1024)
    published = 0
    receivers = []
    for _ in range(1024):  # 20 MB, as in the issue
        receivers.append(r.publish("news", payload))
        published += len(payload)
    ok(published >= 20 * 1024 * 1024, "published %d bytes" % published)
    ok(receivers[0] == 1, "the subscriber received the first message")
    eq(receivers[-1], 0, "once cut off, the subscriber no longer receives")
    eq(info_field(srv, "stats", "client_output_buffer_limit_disconnections"), "1",
       "INFO stats counts the disconnection")
    eq(subscribers_listed(srv), [], "the subscriber is gone from CLIENT LIST")
    ok(closed_by_server(sub, CLOSE_WAIT), "the subscriber's connection is closed")
    sub.close()
    log = srv.log()
    ok(re.search(r"Client id=\d+ addr=127\.0\.0\.1:\d+ .*flags=P .*sub=1 .* scheduled to be "
                 r"closed ASAP for overcoming of output buffer limits\.", log),
       "the log names the client:\n%s" % log[-2000:])
    eq(srv.cli("ping"), "PONG", "the server goes on serving")
    r.close()


@test
def the_default_pubsub_limit_also_cuts_off_a_stalled_subscriber(h):
    # Valkey's default is pubsub 32mb 8mb 60: 48 MB to a subscriber that reads nothing
    # passes the hard limit whatever the kernel buffers hold.
    srv = h.keyshift(name="ks-cob-default")
    eq(srv.cli("config", "get", "client-output-buffer-limit"),
       "client-output-buffer-limit\nnormal 0 0 0 slave 268435456 67108864 60 "
       "pubsub 33554432 8388608 60", "Valkey's default")
    sub = stalled_subscriber(srv, b"c")
    r = srv.redis()
    payload = b"y" * (64 * 1024)
    last = None
    for _ in range(768):
        last = r.publish("c", payload)
    eq(last, 0, "the subscriber was cut off")
    eq(info_field(srv, "stats", "client_output_buffer_limit_disconnections"), "1",
       "INFO counter")
    ok(closed_by_server(sub, CLOSE_WAIT), "connection closed")
    sub.close()
    r.close()


@test
def a_subscriber_that_reads_keeps_its_connection(h):
    srv = h.keyshift("--client-output-buffer-limit", "pubsub 1mb 0 0", name="ks-cob-reader")
    r = srv.redis()
    p = r.pubsub()
    p.subscribe("n")
    eq(p.get_message(timeout=10)["type"], "subscribe", "confirmation")
    payload = b"z" * (16 * 1024)
    got = 0
    for _ in range(640):  # 10 MB in total, read as it comes
        eq(r.publish("n", payload), 1, "delivered")
        m = p.get_message(timeout=10)
        ok(m is not None and m["data"] == payload, "message read back")
        got += 1
    eq(got, 640, "every message read")
    eq(info_field(srv, "stats", "client_output_buffer_limit_disconnections"), "0",
       "no disconnection")
    p.close()
    r.close()


@test
def a_normal_client_with_a_limit_is_cut_off_by_its_big_pipeline(h):
    srv = h.keyshift("--client-output-buffer-limit", "normal 1mb 0 0", name="ks-cob-normal")
    r = srv.redis()
    r.set("big", b"v" * (256 * 1024))
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.settimeout(10)
    s.connect((HOST, srv.port))
    # 200 GETs of 256 KiB = 50 MB of replies that nobody reads.
    try:
        s.sendall(b"*2\r\n$3\r\nGET\r\n$3\r\nbig\r\n" * 200)
    except (BrokenPipeError, ConnectionResetError):
        pass  # the server may close while we are still writing
    deadline = time.monotonic() + POLL_BOUND
    while (info_field(srv, "stats", "client_output_buffer_limit_disconnections") != "1"
           and time.monotonic() < deadline):
        time.sleep(0.05)
    eq(info_field(srv, "stats", "client_output_buffer_limit_disconnections"), "1",
       "INFO counter")
    ok(closed_by_server(s, CLOSE_WAIT), "the pipelining client was closed")
    s.close()
    eq(r.get("big"), b"v" * (256 * 1024), "other clients are still served")
    r.close()


@test
def config_set_client_output_buffer_limit_prints_as_valkey(h):
    srv = h.keyshift(name="ks-cob-config")
    eq(srv.cli("config", "set", "client-output-buffer-limit", "pubsub 1mb 512kb 10"), "OK",
       "CONFIG SET")
    eq(srv.cli("config", "get", "client-output-buffer-limit"),
       "client-output-buffer-limit\nnormal 0 0 0 slave 268435456 67108864 60 "
       "pubsub 1048576 524288 10", "CONFIG GET after CONFIG SET")
    eq(srv.cli("config", "set", "client-output-buffer-limit", "replica 1gb 0 0 normal 1 2 3"),
       "OK", "CONFIG SET of two classes")
    eq(srv.cli("config", "get", "client-output-buffer-limit"),
       "client-output-buffer-limit\nnormal 1 2 3 slave 1073741824 0 0 "
       "pubsub 1048576 524288 10", "CONFIG GET after the second CONFIG SET")
    eq(srv.cli("config", "set", "client-output-buffer-limit", "master 1 1 1"),
       "ERR CONFIG SET failed (possibly related to argument 'client-output-buffer-limit') - "
       "Invalid client class specified in buffer limit configuration.", "a bad class")


# ---------------------------------------------------------------------------------------
# stop-writes-on-bgsave-error.
# ---------------------------------------------------------------------------------------

MISCONF = ("MISCONF Valkey is configured to save RDB snapshots, but it's currently unable to "
           "persist to disk. Commands that may modify the data set are disabled, because this "
           "instance is configured to report errors during writes if RDB snapshotting fails "
           "(stop-writes-on-bgsave-error option). Please check the Valkey logs for details "
           "about the RDB error.")


@test
def a_failed_bgsave_stops_writes_until_a_save_succeeds(h):
    srv = h.keyshift(config="save 3600 1\n", name="ks-stop-writes")
    # The server runs in its work dir; with dump.rdb taken by a directory every save's
    # rename fails (even for root).
    os.makedirs(os.path.join(srv.workdir, "dump.rdb"))
    with srv.conn() as c:
        eq(c.command("SET", "k", "v")[0], b"+OK\r\n", "SET before")
        eq(c.command("BGSAVE")[0], b"+Background saving started\r\n", "BGSAVE")
    deadline = time.monotonic() + POLL_BOUND
    while (info_field(srv, "persistence", "rdb_last_bgsave_status") != "err"
           and time.monotonic() < deadline):
        time.sleep(0.05)
    eq(info_field(srv, "persistence", "rdb_last_bgsave_status"), "err", "the BGSAVE failed")
    with srv.conn() as c:
        eq(c.command("SET", "k", "w")[0], b"-" + MISCONF.encode() + b"\r\n", "SET refused")
        eq(c.command("GET", "k")[0], b"$1\r\nv\r\n", "reads still served")
        eq(c.command("CONFIG", "SET", "stop-writes-on-bgsave-error", "no")[0], b"+OK\r\n",
           "the operator may turn it off")
        eq(c.command("SET", "k", "w")[0], b"+OK\r\n", "SET accepted once off")


# ---------------------------------------------------------------------------------------
# shutdown-on-sigterm / shutdown-on-sigint.
# ---------------------------------------------------------------------------------------

def stop_after_a_write(srv, sig):
    eq(srv.cli("set", "k", "v"), "OK", "a write before the signal")
    rc = srv.stop(sig)
    return rc, os.path.join(srv.workdir, "dump.rdb")  # the server runs in its work dir


@test
def shutdown_on_sigterm_save_saves_without_save_rules(h):
    srv = h.keyshift("--save", "", "--shutdown-on-sigterm", "save", name="ks-sigterm-save")
    rc, dump = stop_after_a_write(srv, signal.SIGTERM)
    eq(rc, 0, "exit status")
    ok(os.path.isfile(dump), "SIGTERM saved %s; log:\n%s" % (dump, srv.log()[-2000:]))


@test
def shutdown_on_sigint_nosave_skips_the_save_rules(h):
    srv = h.keyshift("--shutdown-on-sigint", "nosave", name="ks-sigint-nosave")
    rc, dump = stop_after_a_write(srv, signal.SIGINT)
    eq(rc, 0, "exit status")
    ok(not os.path.exists(dump), "SIGINT with nosave wrote no snapshot")


@test
def shutdown_on_sigterm_force_exits_although_the_save_fails(h):
    srv = h.keyshift("--shutdown-on-sigterm", "force", name="ks-sigterm-force")
    os.makedirs(os.path.join(srv.workdir, "dump.rdb"))  # every save's rename fails
    rc, _ = stop_after_a_write(srv, signal.SIGTERM)
    eq(rc, 0, "exit status with force")
    ok("Exit anyway" in srv.log(), "the log says the save failed:\n%s" % srv.log()[-2000:])


@test
def config_set_port_moves_the_listener_or_rolls_every_value_back(h):
    srv = h.keyshift(name="ks-port")
    before = srv.cli("config", "get", "maxmemory")
    with socket.socket() as busy:
        busy.bind((HOST, 0))
        busy.listen(1)
        taken = busy.getsockname()[1]
        out = srv.cli("config", "set", "maxmemory", "10000001", "port", str(taken),
                      "client-query-buffer-limit", "10m", check=False)
        ok(out.startswith("ERR CONFIG SET failed (possibly related to argument 'port') - "
                          "Unable to listen on this port"), out)
    eq(srv.cli("config", "get", "maxmemory"), before, "maxmemory rolled back")
    eq(srv.cli("config", "get", "port"), "port\n%d" % srv.port, "port rolled back")
    eq(srv.cli("ping"), "PONG", "still served on the old port")
    new_port = free_port()
    eq(srv.cli("config", "set", "port", str(new_port)), "OK", "move the listener")
    out = subprocess.run(["redis-cli", "-h", HOST, "-p", str(new_port), "ping"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=30)
    eq(out.stdout.strip(), b"PONG", "served on the new port")
    srv.port = new_port


if __name__ == "__main__":
    run_tests()
