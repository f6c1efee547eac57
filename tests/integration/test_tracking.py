#!/usr/bin/python3
"""Client-side caching and CLIENT PAUSE of `keyshift serve`, driven by real clients.

Tracking: a RESP3 connection (raw RESP, as Debian's python3-redis 4.3 speaks RESP2 only)
with CLIENT TRACKING ON reads a key, another client writes it and the invalidation push
arrives; RESP2 REDIRECT mode with a python3-redis subscriber of `__redis__:invalidate`;
BCAST with PREFIX; OPTIN with CLIENT CACHING YES; FLUSHALL's null invalidation. Each
scenario is also a script of commands over several connections run against Debian's
redis-server 7.0: every reply and every push, in the order each connection received them,
must be the same bytes.

Pause: CLIENT PAUSE WRITE holds a SET but not a GET, and CLIENT UNPAUSE releases it.

No sleeping for timing: waits poll the server for a state under a generous bound.

Run: KEYSHIFT_BIN=build/keyshift /usr/bin/python3 tests/integration/test_tracking.py
"""

import os
import sys
import threading

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import Push, encode_command, eq, ok, run_tests, test, wait_for  # noqa: E402

BOUND = 10.0  # upper bound for "this eventually happens"; never a timing check


def server(h):
    if not hasattr(h, "ks_tracking"):
        h.ks_tracking = h.keyshift(name="ks-tracking")
    return h.ks_tracking


def reference(h):
    if not hasattr(h, "redis_ref"):
        h.redis_ref = h.redis_server()
    return h.redis_ref


def wait_until(what, predicate):
    wait_for(predicate, what, BOUND)


def is_push(value):
    """A push (RESP3) or a pub/sub message (RESP2 subscribed connection)."""
    if isinstance(value, Push):
        return True
    return isinstance(value, list) and len(value) > 0 and value[0] in (b"message", b"pmessage")


def run_script(srv, setup, script):
    """Runs `script` on a fresh set of connections and returns what each one received.

    `setup` lists, per connection, commands whose replies are not compared (HELLO 3 names
    the server). `script` is a list of (connection, command); a command may name another
    connection's id as ("ID", n). Each command's reply is read with the pushes that came
    before it; at the end every connection is sent PING so late pushes are collected too.
    Returns [(connection, "reply"|"push", raw bytes)] in the order they were read."""
    conns = [srv.conn() for _ in setup]
    ids = []
    try:
        for c, cmds in zip(conns, setup):
            for cmd in cmds:
                c.send(encode_command(cmd))
                c.read_reply()
            c.send(encode_command(["CLIENT", "ID"]))
            ids.append(c.read_reply()[1])
        log = []

        def read_one(i):
            while True:
                raw, value = conns[i].read_reply()
                if is_push(value):
                    log.append((i, "push", raw))
                    continue
                log.append((i, "reply", raw))
                return

        for i, cmd in script:
            argv = [str(ids[a[1]]) if isinstance(a, tuple) else a for a in cmd]
            conns[i].send(encode_command(argv))
            read_one(i)
        for i in range(len(conns)):
            conns[i].send(encode_command(["PING"]))
            read_one(i)
        return log
    finally:
        for c in conns:
            c.close()


def same_as_redis(h, setup, script, what):
    srv = server(h)
    srv.redis().flushall()
    got = run_script(srv, setup, script)
    ref = reference(h)
    ref.redis().flushall()
    want = run_script(ref, setup, script)
    eq(got, want, what + ": replies and pushes against redis-server 7.0")
    return got


RESP3 = [["HELLO", "3"]]
RESP2 = []


# ---------------------------------------------------------------------------------------
# Tracking.
# ---------------------------------------------------------------------------------------

@test
def resp3_tracking_client_gets_an_invalidation_push_when_another_client_writes(h):
    log = same_as_redis(h, [RESP3, RESP2], [
        (1, ["SET", "k1", "v1"]),
        (0, ["CLIENT", "TRACKING", "ON"]),
        (0, ["GET", "k1"]),
        (0, ["MGET", "k2", "k3"]),
        (1, ["SET", "k1", "v2"]),
        (1, ["DEL", "k2", "k3"]),
        (0, ["GET", "k1"]),
        (1, ["APPEND", "k1", "x"]),
        (0, ["CLIENT", "TRACKINGINFO"]),
        (0, ["CLIENT", "GETREDIR"]),
    ], "default mode")
    pushes = [raw for c, kind, raw in log if kind == "push"]
    ok(b">2\r\n$10\r\ninvalidate\r\n*1\r\n$2\r\nk1\r\n" in pushes, "k1 invalidated: %r" % pushes)


@test
def own_writes_are_invalidated_after_the_reply_unless_noloop(h):
    same_as_redis(h, [RESP3, RESP3], [
        (0, ["CLIENT", "TRACKING", "ON"]),
        (0, ["GET", "a"]),
        (0, ["SET", "a", "1"]),
        (1, ["CLIENT", "TRACKING", "ON", "NOLOOP"]),
        (1, ["GET", "b"]),
        (1, ["SET", "b", "1"]),
        (0, ["GET", "b"]),
        (1, ["GET", "b"]),
        (0, ["INCR", "b"]),
        (0, ["MULTI"]),
        (0, ["GET", "c"]),
        (0, ["SET", "c", "1"]),
        (0, ["EXEC"]),
    ], "own writes and NOLOOP")


@test
def resp2_redirect_to_a_subscriber_of_the_invalidate_channel(h):
    same_as_redis(h, [RESP2, RESP2, RESP3], [
        (1, ["SUBSCRIBE", "__redis__:invalidate"]),
        (0, ["CLIENT", "TRACKING", "ON", "REDIRECT", ("ID", 1)]),
        (0, ["GET", "r1"]),
        (0, ["HGET", "r2", "f"]),
        (2, ["SET", "r1", "x"]),
        (2, ["HSET", "r2", "f", "v"]),
        (0, ["CLIENT", "TRACKING", "ON", "REDIRECT", ("ID", 1), "REDIRECT", ("ID", 2)]),
        (0, ["CLIENT", "TRACKING", "ON", "REDIRECT", "987654321"]),
    ], "RESP2 redirect")
    # The same with python3-redis as the subscriber, in its own thread.
    srv = server(h)
    r = srv.redis()
    p = r.pubsub()
    p.subscribe("__redis__:invalidate")
    eq(p.get_message(timeout=BOUND)["type"], "subscribe", "subscribe confirmation")
    sub_id = int(r.execute_command("CLIENT", "LIST", "TYPE", "pubsub").split()[0][3:])
    eq(r.execute_command("CLIENT", "GETREDIR"), -1, "GETREDIR without tracking")
    tracker = srv.redis(single_connection_client=True)
    tracker.execute_command("CLIENT", "TRACKING", "ON", "REDIRECT", sub_id)
    eq(tracker.execute_command("CLIENT", "GETREDIR"), sub_id, "GETREDIR")
    tracker.get("py:key")
    got = []
    t = threading.Thread(target=lambda: got.append(p.get_message(timeout=BOUND)))
    t.start()
    r.set("py:key", "v")
    t.join()
    eq(got[0]["channel"], b"__redis__:invalidate", "channel")
    eq(got[0]["data"], [b"py:key"], "invalidated keys")
    info = tracker.execute_command("CLIENT", "INFO")
    info = info.decode() if isinstance(info, bytes) else info
    eq(info.split(" flags=")[1].split()[0], "t", "CLIENT INFO flags of a tracking client")
    eq(info.split(" redir=")[1].split()[0], str(sub_id), "CLIENT INFO redir")
    p.close()
    tracker.close()


@test
def broken_redirect_is_pushed_to_a_resp3_tracker(h):
    srv = server(h)
    with srv.conn() as a, srv.conn() as w:
        a.send(encode_command(["HELLO", "3"]))
        a.read_reply()
        b = srv.conn()
        b.send(encode_command(["CLIENT", "ID"]))
        bid = b.read_reply()[1]
        a.send(encode_command(["CLIENT", "TRACKING", "ON", "REDIRECT", str(bid)]))
        a.read_reply()
        a.send(encode_command(["GET", "broken:k"]))
        a.read_reply()
        b.close()
        wait_until("the redirect client gone", lambda: (
            w.send(encode_command(["CLIENT", "LIST", "ID", str(bid)])) or
            w.read_reply()[1] in (b"", "")))
        w.send(encode_command(["SET", "broken:k", "2"]))
        w.read_reply()
        a.send(encode_command(["CLIENT", "INFO"]))
        raw, value = a.read_reply()
        eq(raw, b">2\r\n$21\r\ntracking-redir-broken\r\n:%d\r\n" % bid, "broken redirect push")
        raw, value = a.read_reply()
        ok(b" flags=tR " in raw, "CLIENT INFO flags: %r" % raw)


@test
def bcast_with_prefixes_sends_the_changed_keys_under_each_prefix(h):
    same_as_redis(h, [RESP3, RESP2, RESP3], [
        (0, ["CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "user:", "PREFIX", "item:"]),
        (2, ["CLIENT", "TRACKING", "ON", "BCAST", "NOLOOP"]),
        (1, ["SET", "user:1", "a"]),
        (1, ["MSET", "item:2", "b", "other", "c", "user:3", "d"]),
        (2, ["SET", "user:9", "e"]),
        (0, ["CLIENT", "TRACKINGINFO"]),
        (0, ["CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "us"]),
        (0, ["CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "a", "PREFIX", "ab"]),
        (0, ["CLIENT", "TRACKING", "ON", "PREFIX", "x"]),
        (0, ["CLIENT", "TRACKING", "ON"]),
        (0, ["CLIENT", "TRACKING", "ON", "BCAST", "OPTIN"]),
        (1, ["CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "z"]),
        (1, ["SET", "z1", "1"]),
    ], "BCAST")


@test
def optin_tracks_only_after_caching_yes_and_optout_skips_after_caching_no(h):
    same_as_redis(h, [RESP3, RESP2, RESP3], [
        (0, ["CLIENT", "TRACKING", "ON", "OPTIN"]),
        (0, ["GET", "o1"]),
        (0, ["CLIENT", "CACHING", "YES"]),
        (0, ["GET", "o2"]),
        (0, ["GET", "o3"]),
        (0, ["CLIENT", "CACHING", "NO"]),
        (0, ["CLIENT", "TRACKINGINFO"]),
        (1, ["MSET", "o1", "1", "o2", "2", "o3", "3"]),
        (2, ["CLIENT", "CACHING", "YES"]),
        (2, ["CLIENT", "TRACKING", "ON", "OPTOUT"]),
        (2, ["CLIENT", "CACHING", "NO"]),
        (2, ["GET", "p1"]),
        (2, ["GET", "p2"]),
        (2, ["CLIENT", "TRACKING", "ON", "OPTIN"]),
        (1, ["MSET", "p1", "1", "p2", "2"]),
        (0, ["CLIENT", "TRACKING", "OFF"]),
        (0, ["CLIENT", "TRACKINGINFO"]),
        (0, ["CLIENT", "CACHING", "YES"]),
        (0, ["CLIENT", "CACHING", "MAYBE"]),
    ], "OPTIN/OPTOUT")


@test
def flushall_and_flushdb_send_a_null_invalidation_to_every_tracking_client(h):
    same_as_redis(h, [RESP3, RESP2, RESP2, RESP3], [
        (2, ["SUBSCRIBE", "__redis__:invalidate"]),
        (0, ["CLIENT", "TRACKING", "ON"]),
        (1, ["CLIENT", "TRACKING", "ON", "REDIRECT", ("ID", 2)]),
        (3, ["CLIENT", "TRACKING", "ON", "BCAST"]),
        (0, ["GET", "f1"]),
        (1, ["GET", "f1"]),
        (3, ["FLUSHALL"]),
        (3, ["SET", "f1", "x"]),
        (0, ["FLUSHDB"]),
        (0, ["GET", "f1"]),
    ], "FLUSHALL/FLUSHDB")


@test
def tracking_table_max_keys_evicts_tracked_keys_with_invalidations(h):
    srv = server(h)
    r = srv.redis()
    r.flushall()
    r.config_set("tracking-table-max-keys", "2")
    try:
        with srv.conn() as c:
            c.send(encode_command(["HELLO", "3"]))
            c.read_reply()
            c.send(encode_command(["CLIENT", "TRACKING", "ON"]))
            c.read_reply()
            pushes = 0
            for i in range(10):
                c.send(encode_command(["GET", "max:%d" % i]))
                while True:
                    raw, value = c.read_reply()
                    if not is_push(value):
                        break
                    pushes += 1
            info = r.info("stats")
            ok(info["tracking_total_keys"] <= 3, "table kept near its limit: %r" % info)
            ok(pushes >= 6, "evicted keys were invalidated (%d pushes)" % pushes)
    finally:
        r.config_set("tracking-table-max-keys", "1000000")


@test
def reset_turns_tracking_off(h):
    same_as_redis(h, [RESP3, RESP2], [
        (0, ["CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "q"]),
        (0, ["RESET"]),
        (0, ["CLIENT", "TRACKINGINFO"]),
        (0, ["CLIENT", "GETREDIR"]),
        (1, ["SET", "q1", "1"]),
    ], "RESET")


# ---------------------------------------------------------------------------------------
# CLIENT PAUSE.
# ---------------------------------------------------------------------------------------

@test
def client_pause_write_holds_a_set_but_not_a_get_until_unpause(h):
    srv = server(h)
    r = srv.redis()
    r.set("pause:k", "old")
    eq(r.execute_command("CLIENT", "PAUSE", "100000", "WRITE"), b"OK", "PAUSE WRITE")
    try:
        reader = srv.redis()
        eq(reader.get("pause:k"), b"old", "a GET is answered during the pause")
        done = []
        writer = srv.redis(single_connection_client=True)
        t = threading.Thread(target=lambda: done.append(writer.set("pause:k", "new")))
        t.start()
        wait_until("the SET held", lambda: r.info("clients")["blocked_clients"] == 1)
        eq(done, [], "the SET has no reply yet")
        eq(reader.get("pause:k"), b"old", "the held SET did not run")
        listing = r.execute_command("CLIENT", "LIST")
        listing = listing.decode() if isinstance(listing, bytes) else listing
        ok(" flags=b " in listing, "the held client shows flag b")
        eq(r.execute_command("CLIENT", "UNPAUSE"), b"OK", "UNPAUSE")
        t.join(BOUND)
        eq(done, [True], "the SET answered after UNPAUSE")
        eq(reader.get("pause:k"), b"new", "the SET ran")
        writer.close()
    finally:
        r.execute_command("CLIENT", "UNPAUSE")


@test
def client_pause_write_holds_publish_and_write_transactions_and_ends_by_itself(h):
    srv = server(h)
    r = srv.redis()
    with srv.conn() as c:
        c.send(encode_command(["MULTI"]))
        c.read_reply()
        c.send(encode_command(["INCR", "pause:n"]))
        c.read_reply()
        r.execute_command("CLIENT", "PAUSE", "300", "WRITE")
        c.send(encode_command(["EXEC"]) + encode_command(["PUBLISH", "ch", "m"]))
        # Held until the pause ends by itself (300 ms on the server's clock).
        eq(c.read_reply()[0], b"*1\r\n:1\r\n", "EXEC answered after the pause")
        eq(c.read_reply()[0], b":0\r\n", "PUBLISH after it")


@test
def client_pause_errors_match_redis_server(h):
    def script(srv):
        with srv.conn() as c:
            out = []
            for cmd in (["CLIENT", "PAUSE", "x"], ["CLIENT", "PAUSE", "-1"],
                        ["CLIENT", "PAUSE", "10", "READ"], ["CLIENT", "PAUSE", "0", "WRITE"],
                        ["CLIENT", "UNPAUSE", "x"], ["CLIENT", "UNPAUSE"]):
                c.send(encode_command(cmd))
                out.append(c.read_reply()[0])
            return out
    eq(script(server(h)), script(reference(h)), "CLIENT PAUSE replies against redis-server")


if __name__ == "__main__":
    run_tests()
