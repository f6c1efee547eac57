#!/usr/bin/python3
"""Connection features of `keyshift serve` driven by real clients: pub/sub with a python3-redis
subscriber in a thread, keyspace notifications, MULTI/EXEC with a WATCH conflict, blocking list
pops served by another connection, pipelining behind a blocked command, CLIENT UNBLOCK and
timeouts. Where Valkey 8 and Debian's redis-server 7.0 agree, raw replies are compared with it.

No sleeping for timing: waits poll the server for a state (a client shown blocked, a message
arrived) under a generous bound, which is never a timing assertion.

Run: KEYSHIFT_BIN=build/keyshift /usr/bin/python3 tests/integration/test_connection_features.py
"""

import os
import sys
import threading
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import (RespConn, Server, Skip, encode_command, eq, ok,  # noqa: E402
                     redis_module, run_tests, test, wait_for)

BOUND = 10.0  # upper bound for "this eventually happens"; never a timing check


def server(h):
    if not hasattr(h, "ks_conn"):
        h.ks_conn = h.keyshift(name="ks-conn")
    return h.ks_conn


def reference(h):
    if not hasattr(h, "redis_ref"):
        h.redis_ref = h.redis_server()
    return h.redis_ref


def wait_until(what, predicate):
    wait_for(predicate, what, BOUND)


def wait_blocked(r, n=1):
    """Waits until INFO shows `n` blocked clients."""
    wait_until("%d blocked client(s)" % n,
               lambda: r.info("clients").get("blocked_clients") == n)


def need_lists(r):
    try:
        r.execute_command("LLEN", "probe:list")
    except redis_module().ResponseError as e:
        if "unknown command" in str(e):
            raise Skip("the list family is not in this build")
        raise


def transcript(srv, commands):
    """Sends every command in one write and returns the raw replies, one per command."""
    with srv.conn() as c:
        c.send(b"".join(encode_command(a) for a in commands))
        return [c.read_reply()[0] for _ in commands]


# ---------------------------------------------------------------------------------------
# Pub/sub.
# ---------------------------------------------------------------------------------------

@test
def pubsub_subscriber_thread_receives_channel_and_pattern_messages(h):
    srv = server(h)
    r = srv.redis()
    p = r.pubsub()
    p.subscribe("it:news")
    p.psubscribe("it:n*")
    got = []
    done = threading.Event()

    def listen():
        for m in p.listen():
            if m["type"] in ("message", "pmessage"):
                got.append((m["type"], m["channel"], m["data"]))
                if len(got) == 4:
                    done.set()
                    return

    t = threading.Thread(target=listen, daemon=True)
    t.start()
    wait_until("two subscriptions", lambda: r.pubsub_numsub("it:news") == [(b"it:news", 1)]
               and r.pubsub_numpat() == 1)
    eq(r.publish("it:news", "one"), 2, "receivers of a channel and a matching pattern")
    eq(r.publish("it:nope", "two"), 1, "receivers of a pattern only")
    eq(r.publish("other", "x"), 0, "no receivers")
    eq(r.publish("it:news", "three"), 2, "receivers again")
    ok(done.wait(BOUND), "messages did not arrive: %r" % got)
    eq(sorted(got[:2]), [("message", b"it:news", b"one"), ("pmessage", b"it:news", b"one")],
       "a message through the channel and through the pattern")
    eq(got[2], ("pmessage", b"it:nope", b"two"), "pattern message")
    eq(r.pubsub_channels("it:*"), [b"it:news"], "PUBSUB CHANNELS it:*")
    p.close()
    wait_until("subscriptions dropped on close", lambda: r.pubsub_numpat() == 0)
    eq(r.pubsub_channels("it:*"), [], "no active channel after the subscriber left")
    r.close()


@test
def subscribed_resp2_client_may_only_run_subscription_commands(h):
    srv = server(h)
    with srv.conn() as c:
        c.send(encode_command(["SUBSCRIBE", "it:a", "it:b"]))
        eq(c.read_reply()[1], [b"subscribe", b"it:a", 1], "first confirmation")
        eq(c.read_reply()[1], [b"subscribe", b"it:b", 2], "second confirmation")
        raw, _ = c.command("GET", "x")
        eq(raw, b"-ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / "
           b"QUIT / RESET are allowed in this context\r\n", "GET while subscribed")
        eq(c.command("PING")[1], [b"pong", b""], "PING while subscribed")
        eq(c.command("RESET")[0], b"+RESET\r\n", "RESET")
        eq(c.command("GET", "x")[0], b"$-1\r\n", "GET after RESET")
    with srv.conn() as c:
        raw, _ = c.command("UNSUBSCRIBE")
        eq(raw, b"-NOSUB 'unsubscribe' command executed not in subscribed mode\r\n",
           "UNSUBSCRIBE outside subscribed mode (Valkey 8)")


@test
def resp3_subscriber_gets_push_messages(h):
    srv = server(h)
    with srv.conn() as sub, srv.conn() as pub:
        sub.command("HELLO", "3")
        sub.send(encode_command(["SUBSCRIBE", "it:r3"]))
        raw, value = sub.read_reply()
        ok(raw.startswith(b">3\r\n"), "confirmation is a push: %r" % raw)
        eq(sub.command("PING")[0], b"+PONG\r\n", "ordinary commands run while subscribed")
        eq(pub.command("PUBLISH", "it:r3", "hi")[0], b":1\r\n", "one receiver")
        raw, value = sub.read_reply()
        eq(raw, b">3\r\n$7\r\nmessage\r\n$5\r\nit:r3\r\n$2\r\nhi\r\n", "pushed message bytes")


@test
def subscribe_replies_match_redis_server(h):
    commands = [["SUBSCRIBE", "d:a", "d:b", "d:a"], ["PSUBSCRIBE", "d:*"], ["PING", "x"],
                ["UNSUBSCRIBE", "d:a", "d:zz"], ["PUNSUBSCRIBE"], ["UNSUBSCRIBE"]]
    flat = []
    for cmd in commands:
        flat.append(cmd)

    def run(srv):
        with srv.conn() as c:
            c.send(b"".join(encode_command(a) for a in flat))
            # 3 + 1 + 1 + 2 + 1 + 1 replies
            return [c.read_reply()[0] for _ in range(9)]

    eq(run(server(h)), run(reference(h)), "raw subscription replies")


@test
def keyspace_notifications_reach_a_subscriber(h):
    srv = h.keyshift("--notify-keyspace-events", "KEA", name="ks-notify")
    r = srv.redis()
    eq(r.config_get("notify-keyspace-events"), {"notify-keyspace-events": "AKE"},
       "CONFIG GET of the flag set")
    p = r.pubsub()
    p.psubscribe("__key*@0__:*")
    wait_until("pattern subscribed", lambda: r.pubsub_numpat() == 1)
    r.set("nk", "1", px=50)
    r.incr("nk")
    events = []
    deadline = time.monotonic() + BOUND
    while len(events) < 8 and time.monotonic() < deadline:
        m = p.get_message(timeout=0.1)
        if m and m["type"] == "pmessage":
            events.append((m["channel"], m["data"]))
    eq(events[:6], [(b"__keyspace@0__:nk", b"set"), (b"__keyevent@0__:set", b"nk"),
                    (b"__keyspace@0__:nk", b"expire"), (b"__keyevent@0__:expire", b"nk"),
                    (b"__keyspace@0__:nk", b"incrby"), (b"__keyevent@0__:incrby", b"nk")],
       "set, expire and incrby events")
    eq(events[6:], [(b"__keyspace@0__:nk", b"expired"), (b"__keyevent@0__:expired", b"nk")],
       "the expired event from active expiry")
    p.close()
    r.close()


# ---------------------------------------------------------------------------------------
# Transactions.
# ---------------------------------------------------------------------------------------

@test
def multi_exec_with_a_watch_conflict_from_another_connection(h):
    srv = server(h)
    redis = redis_module()
    a = srv.redis()
    b = srv.redis()
    a.set("it:w", 1)
    with a.pipeline() as p:
        p.watch("it:w")
        eq(p.get("it:w"), b"1", "read inside WATCH")
        b.set("it:w", 2)  # another client writes the watched key
        p.multi()
        p.set("it:w", 3)
        try:
            p.execute()
            ok(False, "EXEC succeeded although the watched key changed")
        except redis.WatchError:
            ok(True)
    eq(a.get("it:w"), b"2", "the transaction did not run")
    with a.pipeline() as p:
        p.watch("it:w")
        p.multi()
        p.incr("it:w")
        p.get("it:w")
        eq(p.execute(), [3, b"3"], "an undisturbed transaction runs")
    a.close()
    b.close()


@test
def transaction_replies_match_redis_server(h):
    commands = [["DEL", "t:k"], ["MULTI"], ["SET", "t:k", "1"], ["INCR", "t:k"], ["LPOP", "t:k"],
                ["EXEC"], ["MULTI"], ["NOSUCH"], ["EXEC"], ["EXEC"], ["DISCARD"],
                ["MULTI"], ["GET", "t:k"], ["DISCARD"], ["UNWATCH"]]
    eq(transcript(server(h), commands), transcript(reference(h), commands),
       "raw transaction replies")


# ---------------------------------------------------------------------------------------
# Blocking commands.
# ---------------------------------------------------------------------------------------

@test
def blpop_in_a_thread_is_served_by_a_push_from_another_connection(h):
    srv = server(h)
    r = srv.redis()
    need_lists(r)
    r.delete("it:q")
    result = {}

    def pop():
        c = srv.redis()
        result["v"] = c.blpop(["it:none", "it:q"], timeout=0)
        c.close()

    t = threading.Thread(target=pop, daemon=True)
    t.start()
    wait_blocked(r)
    eq(r.rpush("it:q", "a", "b"), 2, "RPUSH")
    t.join(BOUND)
    ok(not t.is_alive(), "BLPOP still blocked")
    eq(result.get("v"), (b"it:q", b"a"), "BLPOP result")
    eq(r.lrange("it:q", 0, -1), [b"b"], "the rest of the list")
    r.close()


@test
def blocked_clients_are_served_first_come_first_served(h):
    srv = server(h)
    r = srv.redis()
    need_lists(r)
    r.delete("it:fifo")
    results = {}
    threads = []
    for i in range(3):
        def pop(i=i):
            c = srv.redis()
            results[i] = c.brpop("it:fifo", timeout=0)
            c.close()
        t = threading.Thread(target=pop, daemon=True)
        t.start()
        threads.append(t)
        wait_blocked(r, i + 1)
    r.rpush("it:fifo", "x", "y", "z")
    for t in threads:
        t.join(BOUND)
    eq(results, {0: (b"it:fifo", b"z"), 1: (b"it:fifo", b"y"), 2: (b"it:fifo", b"x")},
       "each client in the order it blocked")
    r.close()


@test
def pipelined_commands_wait_behind_a_blocked_command(h):
    srv = server(h)
    r = srv.redis()
    need_lists(r)
    r.delete("it:pipe")
    with srv.conn() as c:
        c.send(encode_command(["BLPOP", "it:pipe", "0"]) + encode_command(["PING"]) +
               encode_command(["LLEN", "it:pipe"]))
        wait_blocked(r)
        eq(r.lpush("it:pipe", "v1", "v2"), 2, "LPUSH")
        eq(c.read_reply()[1], [b"it:pipe", b"v2"], "BLPOP reply")
        eq(c.read_reply()[0], b"+PONG\r\n", "the pipelined PING after it")
        eq(c.read_reply()[0], b":1\r\n", "LLEN sees the pop")
    r.close()


@test
def blocking_pop_times_out_and_client_unblock_ends_a_wait(h):
    srv = server(h)
    r = srv.redis()
    need_lists(r)
    r.delete("it:t")
    eq(r.blpop("it:t", timeout=0.1), None, "BLPOP with a fractional timeout")
    with srv.conn() as c:
        my_id = c.command("CLIENT", "ID")[1]
        c.send(encode_command(["BRPOP", "it:t", "0"]))
        wait_blocked(r)
        eq(r.client_unblock(my_id, error=True), True, "CLIENT UNBLOCK ERROR")
        eq(c.read_reply()[0], b"-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n",
           "the blocked client's error")
        c.send(encode_command(["BLMOVE", "it:t", "it:t2", "LEFT", "RIGHT", "0"]))
        wait_blocked(r)
        eq(r.client_unblock(my_id), True, "CLIENT UNBLOCK (timeout)")
        eq(c.read_reply()[0], b"*-1\r\n", "a timed-out reply")
    eq(r.client_unblock(999999), False, "no such client")
    raw = transcript(server(h), [["BLPOP", "it:t", "-1"], ["BLPOP", "it:t", "abc"],
                                 ["BLPOP", "it:t", "0.01"], ["MULTI"], ["BLPOP", "it:t", "0"],
                                 ["EXEC"]])
    eq(raw, [b"-ERR timeout is negative\r\n",
             b"-ERR timeout is not a float or out of range\r\n", b"*-1\r\n", b"+OK\r\n",
             b"+QUEUED\r\n", b"*1\r\n*-1\r\n"], "timeout errors and BLPOP inside MULTI")
    r.close()


@test
def push_inside_multi_serves_a_blocked_client_after_exec(h):
    srv = server(h)
    r = srv.redis()
    need_lists(r)
    r.delete("it:m")
    result = {}

    def pop():
        c = srv.redis()
        result["v"] = c.blpop("it:m", timeout=0)
        c.close()

    t = threading.Thread(target=pop, daemon=True)
    t.start()
    wait_blocked(r)
    with r.pipeline() as p:
        p.rpush("it:m", "a")
        p.rpush("it:m", "b")
        eq(p.execute(), [1, 2], "EXEC")
    t.join(BOUND)
    eq(result.get("v"), (b"it:m", b"a"), "served after the transaction")
    eq(r.lrange("it:m", 0, -1), [b"b"], "the rest")
    r.close()


# The peers of the `local` test: how to reach the server and what Valkey 8 calls them
# (socket.c connSocketIsLocal: any 127.x or ::1; unix.c: a unix socket is always local).
LOCAL_PEERS = [("127.0.0.1", dict(host="127.0.0.1", source="127.0.0.1")),
               ("127.0.0.2", dict(host="127.0.0.1", source="127.0.0.2")),
               ("::1", dict(host="::1", source="::1")),
               ("unix socket", dict(unix=True))]
LOCAL_MODE = ["--bind", "127.0.0.1", "::1", "--enable-debug-command", "local",
              "--enable-protected-configs", "local"]


def local_mode_replies(srv):
    """For each peer of LOCAL_PEERS: the raw replies to a protected command and a protected
    config, and CLIENT INFO's addr with its port written as P."""
    out = []
    for name, how in LOCAL_PEERS:
        if how.get("unix"):
            c = RespConn(path=srv.unixsocket)
        else:
            c = RespConn(port=srv.port, host=how["host"], source=how["source"])
        with c:
            debug = c.command("DEBUG", "SLEEP", "0")[0]
            config = c.command("CONFIG", "SET", "dir", srv.workdir)[0]
            info = c.call("CLIENT", "INFO").decode()
            addr = [f for f in info.split() if f.startswith("addr=")][0]
            out.append((name, debug, config, addr.rsplit(":", 1)[0] + ":P"))
    return out


def valkey_server(h):
    """valkey-server from KEYSHIFT_VALKEY_SERVER, started with LOCAL_MODE, or None."""
    binary = os.environ.get("KEYSHIFT_VALKEY_SERVER")
    if not binary:
        return None
    workdir = h._dir("valkey-local")
    sock = os.path.join(workdir, "valkey.sock")

    def make(port):
        argv = [binary, "--port", str(port), "--unixsocket", sock, "--save", "",
                "--appendonly", "no", "--dir", workdir, "--daemonize", "no",
                "--logfile", ""] + LOCAL_MODE
        return Server("valkey-local", argv, port, workdir, unixsocket=sock)

    return h._launch(make)


@test
def local_mode_accepts_every_loopback_peer_and_the_unix_socket_as_valkey_does(h):
    srv = h.keyshift(*LOCAL_MODE, name="ks-local")
    got = local_mode_replies(srv)
    addrs = {"127.0.0.1": "addr=127.0.0.1:P", "127.0.0.2": "addr=127.0.0.2:P",
             "::1": "addr=[::1]:P", "unix socket": "addr=%s:P" % srv.unixsocket}
    for name, debug, config, addr in got:
        eq(debug, b"+OK\r\n", "DEBUG from %s in local mode" % name)
        eq(config, b"+OK\r\n", "a protected config from %s in local mode" % name)
        eq(addr, addrs[name], "CLIENT INFO addr of %s" % name)
    valkey = valkey_server(h)
    if valkey is not None:
        want = local_mode_replies(valkey)
        eq([g[:3] for g in got], [w[:3] for w in want], "replies against valkey-server")
        eq([g[3] for g in got[:3]], [w[3] for w in want[:3]], "TCP addresses in CLIENT INFO")


if __name__ == "__main__":
    run_tests()
