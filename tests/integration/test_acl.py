#!/usr/bin/python3
"""ACL users in `keyshift serve`: `user` lines and the aclfile enforced at the door and in
dispatch, and a differential script of ACL/AUTH/HELLO commands run against keyshift and
Debian's redis-server 7.0 with the replies compared. Driven by the real binary, redis-cli and
raw sockets.

Run: KEYSHIFT_BIN=build/keyshift /usr/bin/python3 tests/integration/test_acl.py [NAME...]
"""

import hashlib
import os
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import HOST, RespConn, eq, ok, run_tests, test  # noqa: E402

USERS_CONF = "user default off\nuser alice on >pw ~* +@all\n"


def cli(srv, *args, unix=False, user=None, password=None):
    where = ["-s", srv.unixsocket] if unix else ["-h", HOST, "-p", str(srv.port)]
    auth = ["--no-auth-warning", "--user", user, "--pass", password] if user else []
    p = subprocess.run(["redis-cli"] + where + auth + [str(a) for a in args],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
    return p.stdout.decode("utf-8", "replace").rstrip("\n")


def entries(log):
    """ACL LOG's entries (RESP2 maps: flat lists) as dicts."""
    return [dict(zip(e[::2], e[1::2])) for e in log]


@test
def user_lines_refuse_unauthenticated_clients_over_tcp_and_unix(h):
    srv = h.keyshift(config=USERS_CONF, name="ks-users")
    for unix in (False, True):
        eq(cli(srv, "ping", unix=unix), "NOAUTH Authentication required.", "unix=%s" % unix)
        eq(cli(srv, "get", "k", unix=unix), "NOAUTH Authentication required.")
        eq(cli(srv, "ping", unix=unix, user="alice", password="pw"), "PONG")
        eq(cli(srv, "acl", "whoami", unix=unix, user="alice", password="pw"), "alice")
        out = cli(srv, "ping", unix=unix, user="default", password="x")
        ok("WRONGPASS" in out or "NOAUTH" in out, out)
    with RespConn(port=srv.port) as c:
        eq(c.command("AUTH", "alice", "bad")[0],
           b"-WRONGPASS invalid username-password pair or user is disabled.\r\n")
        raw = c.command("HELLO", "3", "AUTH", "alice", "pw")[0]
        ok(raw.startswith(b"%7\r\n") and b"proto\r\n:3\r\n" in raw, raw)
    with RespConn(port=srv.port) as c:
        eq(c.command("AUTH", "alice", "pw")[0], b"+OK\r\n")
        log = entries(c.command("ACL", "LOG")[1])
        eq(log[0][b"reason"], b"auth", log)
        eq(log[0][b"username"], b"alice", log)


@test
def restricted_users_get_valkeys_noperm_replies_and_the_acl_log_records_them(h):
    srv = h.keyshift(config="user default on nopass ~* &* +@all\n"
                            "user bob on >pw ~app:* &news +@all -flushall\n", name="ks-noperm")
    with RespConn(port=srv.port) as c:
        eq(c.command("AUTH", "bob", "pw")[0], b"+OK\r\n")
        eq(c.command("SET", "app:1", "v")[0], b"+OK\r\n")
        eq(c.command("GET", "other")[0], b"-NOPERM No permissions to access a key\r\n")
        eq(c.command("FLUSHALL")[0],
           b"-NOPERM User bob has no permissions to run the 'flushall' command\r\n")
        eq(c.command("PUBLISH", "sports", "x")[0], b"-NOPERM No permissions to access a channel\r\n")
        eq(c.command("EVAL", "return redis.call('get', 'other')", "0")[0][:60],
           b"-ERR ACL failure in script: No permissions to access a key s"[:60])
    with RespConn(port=srv.port) as admin:
        log = entries(admin.command("ACL", "LOG")[1])
        reasons = [(e[b"reason"], e[b"object"], e[b"context"]) for e in log]
        ok((b"key", b"other", b"lua") in reasons, reasons)
        ok((b"command", b"flushall", b"toplevel") in reasons, reasons)
        ok((b"channel", b"sports", b"toplevel") in reasons, reasons)
        eq(sorted(log[0].keys()),
           sorted([b"count", b"reason", b"context", b"object", b"username", b"age-seconds",
                   b"client-info", b"entry-id", b"timestamp-created",
                   b"timestamp-last-updated"]))
        # deleting a user closes its connections
        victim = RespConn(port=srv.port)
        eq(victim.command("AUTH", "bob", "pw")[0], b"+OK\r\n")
        eq(admin.command("ACL", "DELUSER", "bob")[1], 1)
        try:
            raw = victim.command("PING")[0]
        except Exception as e:  # the connection is gone: what DELUSER promises
            raw = repr(e).encode()
        ok(b"PONG" not in raw, raw)
        victim.close()


@test
def an_aclfile_is_loaded_at_start_saved_and_loaded_again(h):
    def config(workdir):
        path = os.path.join(workdir, "users.acl")
        with open(path, "w") as f:
            f.write("user default off\nuser carol on >pw ~* &* +@all\n")
        return "aclfile %s\n" % path
    srv = h.keyshift(config=config, name="ks-aclfile")
    eq(cli(srv, "ping"), "NOAUTH Authentication required.")
    eq(cli(srv, "ping", user="carol", password="pw"), "PONG")
    eq(cli(srv, "acl", "setuser", "dave", "on", ">x", "+get", "~d*", user="carol",
           password="pw"), "OK")
    eq(cli(srv, "acl", "save", user="carol", password="pw"), "OK")
    with open(os.path.join(srv.workdir, "users.acl")) as f:
        saved = f.read()
    ok(saved.startswith("user carol on sanitize-payload #"), saved)
    ok("user dave on sanitize-payload #" in saved and "~d* resetchannels -@all +get" in saved,
       saved)
    with open(os.path.join(srv.workdir, "users.acl"), "a") as f:
        f.write("user erin +nosuchcommand\n")
    out = cli(srv, "acl", "load", user="carol", password="pw")
    ok("users.acl:4: Error in applying operation '+nosuchcommand'" in out, out)
    eq(cli(srv, "acl", "users", user="carol", password="pw"), "carol\ndave\ndefault")


@test
def config_rewrite_writes_the_live_users_as_user_lines(h):
    srv = h.keyshift(config="user default on nopass ~* &* +@all\nuser alice on >pw ~* +@all\n",
                     name="ks-rewrite")
    eq(cli(srv, "acl", "setuser", "bob", "on", ">b", "~b:*", "+get"), "OK")
    eq(cli(srv, "acl", "deluser", "alice"), "1")
    eq(cli(srv, "config", "rewrite"), "OK")
    with open(os.path.join(srv.workdir, "keyshift.conf")) as f:
        text = f.read()
    users = [line for line in text.splitlines() if line.startswith("user ")]
    eq(users[0], "user bob on sanitize-payload #%s ~b:* resetchannels -@all +get"
       % hashlib.sha256(b"b").hexdigest(), text)
    eq(users[1], "user default on nopass sanitize-payload ~* &* +@all", text)
    eq(len(users), 2, text)
    again = h.keyshift(config=text, name="ks-rewritten")
    eq(cli(again, "acl", "users"), "bob\ndefault")
    eq(cli(again, "get", "b:1", user="bob", password="b"), "")


# The differential script: each step runs on an admin connection (the open default user)
# or on one authenticated as a restricted user, against both servers. `why` names what
# differs by version between Redis 7.0 and Valkey 8.0.1; those replies are not compared.
SCRIPT = [
    ("admin", ["ACL", "WHOAMI"], None),
    ("admin", ["ACL", "SETUSER", "alice", "on", ">pw", "~app:*", "&chan", "+@all", "-flushall"],
     None),
    ("admin", ["ACL", "SETUSER", "bob", "on", "nopass", "%R~r:*", "%W~w:*", "+get",
               "(+del ~d:*)"], None),
    ("admin", ["ACL", "SETUSER", "bad", "bogus"], None),
    ("admin", ["ACL", "SETUSER", "bad", "+nosuchcommand"], None),
    ("admin", ["ACL", "SETUSER", "bad", "~*", "~x"], None),
    ("admin", ["ACL", "SETUSER", "bad", "#abc"], None),
    ("admin", ["ACL", "SETUSER", "bad", "(+get"], None),
    ("admin", ["ACL", "SETUSER", "bad user"], None),
    ("admin", ["ACL", "GETUSER", "alice"], None),
    ("admin", ["ACL", "GETUSER", "bob"], None),
    ("admin", ["ACL", "GETUSER", "nobody"], None),
    ("admin", ["ACL", "LIST"], None),
    ("admin", ["ACL", "USERS"], None),
    ("admin", ["ACL", "CAT"], None),
    ("admin", ["ACL", "CAT", "nosuch"], None),
    ("admin", ["ACL", "GENPASS", "0"], None),
    ("admin", ["ACL", "GENPASS", "x"], None),
    ("admin", ["ACL", "DELUSER", "default"], None),
    ("admin", ["ACL", "LOAD"], "Valkey's text no longer says 'Redis instance'"),
    ("admin", ["ACL", "SAVE"], "Valkey's text no longer says 'Redis instance'"),
    ("admin", ["ACL", "DRYRUN", "nobody", "get", "x"], None),
    ("admin", ["ACL", "DRYRUN", "alice", "nosuch"], None),
    ("admin", ["ACL", "DRYRUN", "alice", "get"], None),
    ("admin", ["ACL", "DRYRUN", "alice", "get", "app:1"], None),
    ("admin", ["ACL", "DRYRUN", "alice", "get", "x"],
     "Redis 7.0 words DRYRUN refusals 'This user has ...', Valkey 8 'User alice has ...'"),
    ("admin", ["AUTH", "x"], None),
    ("user", ["AUTH", "alice", "wrong"], None),
    ("user", ["AUTH", "alice", "pw"], None),
    ("user", ["ACL", "WHOAMI"], None),
    ("user", ["SET", "app:1", "v"], None),
    ("user", ["GET", "app:1"], None),
    ("user", ["GET", "other"],
     "Redis 7.0: 'this user has no permissions to access one of the keys used as arguments'"),
    ("user", ["FLUSHALL"], "Redis 7.0: 'this user has no permissions to run the ...' (7.2 "
     "changed it to name the user)"),
    ("user", ["PUBLISH", "chan", "m"], None),
    ("user", ["PUBLISH", "other", "m"], "Redis 7.0 words the channel refusal differently"),
    # Turning a user off refuses new logins only: its connections go on (Valkey 8.0.1 and
    # Redis 7.0 alike).
    ("admin", ["ACL", "SETUSER", "alice", "off"], None),
    ("user", ["PING"], None),
    ("user", ["AUTH", "alice", "pw"], None),
    ("user", ["HELLO", "3", "AUTH", "alice", "nope"], None),
    ("user", ["HELLO", "2", "AUTH", "bob", "anything"],
     "HELLO names the server and its version"),
    ("user", ["ACL", "WHOAMI"], "bob may not run it: command refusal wording, as above"),
    ("user", ["GET", "r:1"], None),
    ("user", ["GET", "w:1"], "key refusal text differs by version, as above"),
    ("user", ["DEL", "d:1"], None),
    ("admin", ["ACL", "DELUSER", "alice", "bob", "nobody"], None),
    ("admin", ["ACL", "USERS"], None),
]


# Valkey 8 (like Redis 7.2) creates users with the sanitize-payload flag, which GETUSER and
# ACL LIST show; Redis 7.0 does not. These replies are compared without that flag.
SANITIZE = (b"sanitize-payload", b" sanitize-payload")
FLAGGED = {("ACL", "GETUSER"), ("ACL", "LIST")}


def without_sanitize(value):
    if isinstance(value, list):
        return [without_sanitize(v) for v in value if v != SANITIZE[0]]
    if isinstance(value, bytes):
        return value.replace(SANITIZE[1], b"")
    return value


def run_script(srv):
    replies = []
    admin = RespConn(port=srv.port)
    user = RespConn(port=srv.port)
    try:
        for who, args, _ in SCRIPT:
            conn = admin if who == "admin" else user
            raw, value = conn.command(*args)
            replies.append(without_sanitize(value) if tuple(args[:2]) in FLAGGED else raw)
    finally:
        admin.close()
        user.close()
    return replies


@test
def acl_auth_and_hello_answer_as_redis_7_0_does_where_versions_agree(h):
    ks = h.keyshift(name="ks-diff")
    ref = h.redis_server(name="redis-diff")
    got = run_script(ks)
    want = run_script(ref)
    compared = 0
    for (who, args, why), g, w in zip(SCRIPT, got, want):
        if why is not None:
            # Both refuse (or both answer) even where the words differ.
            eq(g[:1], w[:1], "%s %s: %r vs %r (%s)" % (who, args, g, w, why))
            continue
        eq(g, w, "%s %s" % (who, args))
        compared += 1
    ok(compared >= 30, compared)
    # GENPASS: 256 bits by default, as hex, and the bits asked for.
    with RespConn(port=ks.port) as c:
        eq(len(c.command("ACL", "GENPASS")[1]), 64)
        eq(len(c.command("ACL", "GENPASS", "5")[1]), 2)


if __name__ == "__main__":
    run_tests()
