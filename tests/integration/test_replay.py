#!/usr/bin/python3
"""`keyshift replay`: traffic recorded by `keyshift capture` in front of Debian's
redis-server 7.0 (redis-cli and python3-redis: strings, sets, hashes, a pipeline, MULTI/EXEC,
a BLPOP another connection unblocks, pub/sub, RESP3, AUTH) is replayed against a fresh
redis-server 7.0, where every reply must match, and against keyshift's own engine and a
server holding other data, where the differences must be found and shown; a damaged
capture replays up to its damage and says so; a file that is not a capture is refused.

Run: KEYSHIFT_BIN=build/keyshift /usr/bin/python3 tests/integration/test_replay.py [NAME...]
"""

import json
import socket
import os
import subprocess
import sys
import threading
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import (HOST, CaptureProxy, chromium, cluster, eq, keyshift_bin, ok,  # noqa: E402
                     redis_module, run_tests, test)


def capture_traffic(h, upstream, out):
    """Runs a mixed workload through `keyshift capture` in front of `upstream`."""
    proxy = CaptureProxy(None, "%s:%d" % (HOST, upstream.port), out)
    port = proxy.port
    redis = redis_module()
    r = redis.Redis(host=HOST, port=port, socket_timeout=10)
    r.set("greeting", "hello")
    r.get("greeting")
    r.incr("counter")  # redis-py sends INCRBY
    r.sadd("colours", "red", "green", "blue", "cyan")
    r.smembers("colours")
    r.hset("user:1", mapping={"name": "ada", "lang": "en"})
    r.hgetall("user:1")
    r.rpush("list", *range(20))
    r.lrange("list", 0, -1)
    r.zadd("board", {"a": 1, "b": 2.5})
    r.zrange("board", 0, -1, withscores=True)
    r.get("missing")
    try:
        r.incr("greeting")  # an error reply is recorded and compared too
    except redis.ResponseError:
        pass
    p = r.pipeline(transaction=False)
    for i in range(50):
        p.set("k:%d" % i, i)
        p.get("k:%d" % i)
    p.execute()
    t = r.pipeline(transaction=True)
    t.incr("tx")
    t.rpush("tx:log", "one")
    t.execute()
    r.object("encoding", "colours")
    # A BLPOP that another connection's RPUSH unblocks: replay must send the push first.
    got = {}
    blocker = redis.Redis(host=HOST, port=port, socket_timeout=10)
    th = threading.Thread(target=lambda: got.update(v=blocker.blpop("queue", 10)))
    th.start()
    time.sleep(0.3)
    r.rpush("queue", "job")
    th.join()
    eq(got.get("v"), (b"queue", b"job"))
    # Pub/sub: a subscriber's confirmation and the message pushed to it.
    sub = redis.Redis(host=HOST, port=port, socket_timeout=10).pubsub()
    sub.subscribe("news")
    eq(sub.get_message(timeout=5)["type"], "subscribe")
    time.sleep(0.1)
    r.publish("news", "extra")
    eq(sub.get_message(timeout=5)["data"], b"extra")
    sub.close()
    r3 = redis.Redis(host=HOST, port=port, protocol=3, socket_timeout=10) \
        if "protocol" in redis.Redis.__init__.__code__.co_varnames else None
    if r3 is not None:
        r3.hgetall("user:1")
    subprocess.run(["redis-cli", "-p", str(port), "HELLO", "3"], check=True,
                   stdout=subprocess.DEVNULL)
    subprocess.run(["redis-cli", "-p", str(port), "DBSIZE"], check=True,
                   stdout=subprocess.DEVNULL)
    eq(proxy.stop(), 0)
    return out


def replay(*args):
    p = subprocess.run([keyshift_bin(), "replay"] + [str(a) for a in args] +
                       ["--format", "json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=120)
    out = p.stdout.decode("utf-8", "replace")
    try:
        doc = json.loads(out) if out.strip() else None
    except ValueError:
        raise AssertionError("not JSON (%d): %r %r" % (p.returncode, out, p.stderr))
    return p.returncode, doc, p.stderr.decode("utf-8", "replace")


def recorded_replies(path):
    rc = subprocess.run([keyshift_bin(), "capture", "info", path, "--format", "json"],
                        stdout=subprocess.PIPE, timeout=60)
    return json.loads(rc.stdout)


@test
def a_capture_replayed_against_the_same_server_kind_answers_alike(h):
    src = h.redis_server(name="captured")
    path = capture_traffic(h, src, h.path("same.ksc"))
    fresh = h.redis_server(name="fresh")
    rc, doc, err = replay(path, "--to", "redis://%s:%d" % (HOST, fresh.port))
    eq(rc, 0, "%r %s" % (doc, err))
    ok(doc["same"], doc["examples"])
    ok(doc["connections"] >= 4, doc)
    ok(doc["replies"] > 100, doc)
    eq(doc["verdicts"].get("differs", 0), 0, doc["examples"])
    eq(doc["verdicts"].get("no-reply", 0), 0, doc["examples"])
    # the BLPOP came back, after the push another connection made
    eq(doc["commands"]["blpop"]["same"], 1, doc["commands"].get("blpop"))
    eq(doc["commands"]["publish"]["same"], 1, doc["commands"].get("publish"))
    # SMEMBERS has no order: compared as a set where the bytes differ
    ok(doc["commands"]["smembers"]["same"] == 1, doc["commands"]["smembers"])
    ok(doc["latency"]["replayed"]["samples"] == doc["replies"] - doc["verdicts"].get("no-reply", 0),
       doc["latency"])
    # the fresh server now holds what the traffic wrote
    eq(fresh.cli("GET", "greeting"), "hello")
    eq(fresh.cli("LLEN", "tx:log"), "1")


@test
def replayed_against_other_data_the_differences_are_shown(h):
    src = h.redis_server(name="captured2")
    path = capture_traffic(h, src, h.path("other.ksc"))
    other = h.redis_server(name="other")
    other.cli("SET", "missing", "now here")
    other.cli("SET", "counter", "41")
    rc, doc, err = replay(path, "--to", "redis://%s:%d" % (HOST, other.port))
    eq(rc, 1, err)
    ok(not doc["same"], doc)
    eq(doc["commands"]["get"]["differs"], 1, doc["commands"]["get"])
    eq(doc["commands"]["incrby"]["differs"], 1, doc["commands"]["incrby"])
    shown = [(x["command"], x["recorded"], x["replayed"]) for x in doc["examples"]]
    ok(("get", "(nil)", '"now here"') in shown, shown)
    ok(("incrby", "(integer) 1", "(integer) 42") in shown, shown)
    # the text report names them too
    p = subprocess.run([keyshift_bin(), "replay", path, "--to",
                        "redis://%s:%d" % (HOST, other.port)], stdout=subprocess.PIPE,
                       timeout=120)
    text = p.stdout.decode()
    eq(p.returncode, 1)
    ok("verdict: the target answered differently" in text, text)
    ok("now here" in text, text)


@test
def the_default_target_is_keyshifts_own_engine(h):
    src = h.redis_server(name="captured3")
    path = capture_traffic(h, src, h.path("embedded.ksc"))
    rc, doc, err = replay(path)
    eq(doc["target"], "keyshift (embedded)")
    ok(doc["replies"] > 100, doc)
    # OBJECT ENCODING varies by nature (Valkey 8 keeps small sets as listpacks); HELLO's
    # reply names the server: neither counts as a difference.
    eq(doc["verdicts"].get("no-reply", 0), 0, doc["examples"])
    ok(doc["commands"]["object|encoding"]["varies"] == 1, doc["commands"]["object|encoding"])
    eq(rc, 0 if doc["same"] else 1)
    eq(doc["verdicts"].get("differs", 0), 0, doc["examples"])


@test
def a_damaged_capture_replays_up_to_the_damage_and_a_foreign_file_is_refused(h):
    src = h.redis_server(name="captured4")
    path = capture_traffic(h, src, h.path("damaged.ksc"))
    data = open(path, "rb").read()
    cut = h.path("cut.ksc")
    with open(cut, "wb") as f:
        f.write(data[:len(data) * 2 // 3])
    fresh = h.redis_server(name="fresh4")
    rc, doc, err = replay(cut, "--to", "redis://%s:%d" % (HOST, fresh.port))
    eq(rc, 1, err)
    ok(doc["damage"] is not None and doc["damage"]["offset"] > 0, doc["damage"])
    ok(doc["replies"] > 0, doc)
    eq(doc["verdicts"].get("differs", 0), 0, doc["examples"])
    bogus = h.path("bogus.ksc")
    with open(bogus, "wb") as f:
        f.write(b"not a capture at all\n")
    p = subprocess.run([keyshift_bin(), "replay", bogus], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=60)
    eq(p.returncode, 2)
    ok(bogus in p.stderr.decode() and "byte" in p.stderr.decode(), p.stderr)


@test
def read_only_windows_and_pacing_choose_what_is_replayed(h):
    src = h.redis_server(name="captured5")
    path = capture_traffic(h, src, h.path("options.ksc"))
    fresh = h.redis_server(name="fresh5")
    url = "redis://%s:%d" % (HOST, fresh.port)
    # --read-only sends no write: the target stays empty, and reads of what the capture
    # wrote now differ (the report shows it; nothing was changed)
    rc, doc, err = replay(path, "--to", url, "--read-only")
    ok(doc["skipped_writes"] > 50, doc)
    eq(fresh.cli("DBSIZE"), "0")
    eq(rc, 1, err)
    ok(doc["commands"]["get"]["differs"] > 0, doc["commands"]["get"])
    ok("set" not in doc["commands"], doc["commands"].get("set"))
    # a window after the last request replays nothing
    rc, doc, err = replay(path, "--to", url, "--from", "3600")
    eq(doc["requests"], 0, doc)
    ok(doc["outside_window"] > 100, doc)
    eq(rc, 0, err)
    # at the recorded pace the same replies come back, and the report says how it kept up
    fresh.cli("FLUSHALL")
    rc, doc, err = replay(path, "--to", url, "--speed", "4x")
    eq(rc, 0, "%r %s" % (doc, err))
    eq(doc["speed"], 4)
    ok(doc["behind_max_ms"] >= 0, doc)
    for bad in ("fast", "0x", "-1"):
        p = subprocess.run([keyshift_bin(), "replay", path, "--speed", bad],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
        eq(p.returncode, 2, bad)
        ok("--speed" in p.stderr.decode(), p.stderr)


@test
def a_monitor_log_becomes_a_capture_whose_replay_finds_what_the_target_refuses(h):
    src = h.redis_server(name="monitored")
    log = h.path("monitor.log")
    with open(log, "wb") as out:
        mon = subprocess.Popen(["redis-cli", "-p", str(src.port), "monitor"], stdout=out,
                               stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 10
            while os.path.getsize(log) < 3 and time.monotonic() < deadline:
                time.sleep(0.02)
            r = src.redis()
            r.set("a", "1")
            r.rpush("l", "x", b"\x00\xff bytes")
            r.eval("redis.call('incr', KEYS[1]); return redis.call('get', KEYS[1])", 1, "n")
            r.get("a")
            time.sleep(0.5)  # redis-cli writes what it got when it is stopped
        finally:
            mon.terminate()
            mon.wait()
    # One line as redis-server prints it for a client on another connection: HSCAN with a
    # negative cursor, which Redis 7.0 takes and Valkey 8 (so keyshift) refuses as an invalid
    # cursor.
    with open(log, "a") as f:
        f.write('%.6f [0 127.0.0.1:40001] "HSCAN" "h" "-1"\n' % time.time())
    cap = h.path("monitor.ksc")
    p = subprocess.run([keyshift_bin(), "capture", "--from-monitor-log", log, "--out", cap],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    eq(p.returncode, 0, p.stderr.decode())
    ok("MONITOR shows no replies" in p.stderr.decode(), p.stderr)
    info = json.loads(subprocess.run([keyshift_bin(), "capture", "info", cap, "--format",
                                      "json"], stdout=subprocess.PIPE, timeout=60).stdout)
    ok(info, info)
    # against redis-server 7.0 every command is accepted; the script's own INCR/GET (MONITOR's
    # "lua" lines) are left to the script
    fresh = h.redis_server(name="fresh-mon")
    rc, doc, err = replay(cap, "--to", "redis://%s:%d" % (HOST, fresh.port))
    eq(rc, 0, "%r %s" % (doc, err))
    eq(doc["replies_recorded"], False)
    eq(doc["skipped_nested"], 2)
    ok(doc["verdicts"].get("accepted", 0) >= 4, doc["verdicts"])
    eq(fresh.cli("GET", "n"), "1")
    eq(fresh.redis().lindex("l", 1), b"\x00\xff bytes")
    # against keyshift's own engine the negative cursor is refused: that is what MONITOR
    # traffic can tell about a target
    rc, doc, err = replay(cap)
    eq(rc, 1, "%r %s" % (doc, err))
    eq(doc["verdicts"].get("refused"), 1, doc["verdicts"])
    eq(doc["commands"]["hscan"]["differs"], 1, doc["commands"])
    # a bad log names its line
    bad = h.path("bad.log")
    with open(bad, "w") as f:
        f.write("1700000000.000001 [0 127.0.0.1:5000] \"SET\" \"a\"\nthis is not monitor output\n")
    p = subprocess.run([keyshift_bin(), "capture", "--from-monitor-log", bad, "--out",
                        h.path("bad.ksc")], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=60)
    eq(p.returncode, 2)
    ok(bad + ":2:" in p.stderr.decode(), p.stderr)
    ok(not os.path.exists(h.path("bad.ksc")), "a capture was left behind")


@test
def compared_with_a_second_server_the_target_is_judged_against_its_replies(h):
    src = h.redis_server(name="captured6")
    path = capture_traffic(h, src, h.path("compare.ksc"))
    reference = h.redis_server(name="reference")
    target = h.redis_server(name="target")
    target.cli("SET", "missing", "now here")
    # Both start empty but for the planted key: only that GET differs, whatever was recorded.
    rc, doc, err = replay(path, "--to", "redis://%s:%d" % (HOST, target.port), "--compare",
                          "redis://%s:%d" % (HOST, reference.port))
    eq(rc, 1, err)
    eq(doc["compared_with"], "%s:%d" % (HOST, reference.port))
    eq(doc["commands"]["get"]["differs"], 1, doc["commands"]["get"])
    shown = [(x["command"], x["recorded"], x["replayed"]) for x in doc["examples"]]
    ok(("get", "(nil)", '"now here"') in shown, shown)
    eq(doc["verdicts"].get("differs"), 1, doc["verdicts"])
    # the reference received the traffic too
    eq(reference.cli("GET", "greeting"), "hello")
    # against an equal reference, everything is the same
    again = h.redis_server(name="reference2")
    clean = h.redis_server(name="target2")
    rc, doc, err = replay(path, "--to", "redis://%s:%d" % (HOST, clean.port), "--compare",
                          "redis://%s:%d" % (HOST, again.port))
    eq(rc, 0, "%r %s" % (doc, err))
    ok(doc["same"], doc["examples"])


@test
def the_html_report_renders_in_headless_chromium(h):
    browser = chromium()
    src = h.redis_server(name="captured7")
    path = capture_traffic(h, src, h.path("html.ksc"))
    other = h.redis_server(name="other-html")
    other.cli("SET", "missing", "<b>now here</b>")
    page = h.path("replay.html")
    p = subprocess.run([keyshift_bin(), "replay", path, "--to",
                        "redis://%s:%d" % (HOST, other.port), "--format", "html", "--out", page],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    eq(p.returncode, 1, p.stderr)
    eq(p.stdout, b"", "the report went to the file")
    html = open(page, encoding="utf-8").read()
    ok("<script" not in html and "https://" not in html, "self-contained")
    ok("<b>now here</b>" not in html, "reply bytes are escaped")
    dom = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu",
                          "--no-first-run", "--user-data-dir=" + h.path("chromium-profile"),
                          "--dump-dom", "file://" + page], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, timeout=120).stdout.decode()
    eq(dom.count("<table>"), 3, "latency, commands, examples")
    ok(dom.count("<rect ") >= 2, "a bar per verdict that occurs")
    ok('class="v-differs"' in dom and "now here" in dom, "the differing GET is shown")


@test
def a_capture_of_one_server_replayed_into_a_cluster_goes_slot_by_slot(h):
    src = h.redis_server(name="captured8")
    path = capture_traffic(h, src, h.path("tocluster.ksc"))
    c = cluster(h)
    rc, doc, err = replay(path, "--to", c.url(1))
    ok(doc is not None, err)
    ok(doc["cluster"], doc)
    ok(doc["connections"] > 4, "a connection per node a recorded connection used: %r" % doc)
    # every key went to its slot's primary: the cluster holds what the traffic wrote
    rcl = c.client()
    eq(rcl.get("greeting"), b"hello")
    eq([rcl.get("k:%d" % i) for i in range(50)], [str(i).encode() for i in range(50)])
    eq(rcl.llen("queue"), 0, "the BLPOP took the pushed job")
    eq(doc["commands"]["blpop"]["same"], 1, doc["commands"]["blpop"])
    # the subscriber got the message another connection published, whichever nodes they used
    eq(doc["commands"]["subscribe"], {"replies": 2, "same": 2, "varies": 0, "error_text": 0,
                                      "differs": 0})
    eq(doc["commands"]["get"]["differs"], 0, doc["examples"])
    # The recorded MULTI spans the slots of "tx" and "tx:log": a cluster refuses that
    # transaction (CROSSSLOT), and the report says so.
    eq(rcl.keyslot("tx") == rcl.keyslot("tx:log"), False)
    eq(doc["commands"]["exec"]["differs"], 1, doc["commands"]["exec"])
    shown = [(x["command"], x["replayed"]) for x in doc["examples"]]
    ok(any(c == "exec" and "CROSSSLOT" in r for c, r in shown), shown)
    eq(rc, 1, err)

@test
def many_recorded_connections_share_n_and_those_with_state_keep_their_own(h):
    src = h.redis_server(name="captured9")
    proxy = CaptureProxy(None, "%s:%d" % (HOST, src.port), h.path("many.ksc"))
    redis = redis_module()
    for i in range(12):
        r = redis.Redis(host=HOST, port=proxy.port, socket_timeout=10)
        r.set("user:%d" % i, "v%d" % i)
        r.incr("visits")
        r.get("user:%d" % i)
        r.close()
    tx = redis.Redis(host=HOST, port=proxy.port, socket_timeout=10)
    p = tx.pipeline(transaction=True)
    p.incr("tx:a")
    p.get("visits")
    p.execute()
    eq(proxy.stop(), 0)
    fresh = h.redis_server(name="fresh-many")
    rc, doc, err = replay(h.path("many.ksc"), "--to", "redis://%s:%d" % (HOST, fresh.port),
                          "--connections", "2")
    eq(rc, 0, "%r %s" % (doc, err))
    ok(doc["same"], doc["examples"])
    eq(doc["shared_connections"], 2)
    eq(doc["dedicated"], 1, "the MULTI connection keeps its own")
    eq(doc["connections"], 3)
    eq(fresh.cli("GET", "visits"), "12")
    eq(fresh.cli("GET", "user:11"), "v11")
    rc, _, err = replay(h.path("many.ksc"), "--connections", "0")
    eq(rc, 2, err)


@test
def requests_that_await_no_reply_all_reach_the_target(h):
    # Replay writes requests in batches, when a reply is next awaited: under CLIENT REPLY
    # OFF none is, so more requests than one batch holds must still all go out, and those
    # at the connection's end before it closes.
    src = h.redis_server(name="captured-off")
    proxy = CaptureProxy(None, "%s:%d" % (HOST, src.port), h.path("off.ksc"))
    body = b"".join(b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$1\r\nv\r\n" % (len(k), k)
                    for k in (b"off:%d" % i for i in range(700)))
    s = socket.create_connection((HOST, proxy.port), timeout=10)
    s.sendall(b"*3\r\n$6\r\nCLIENT\r\n$5\r\nREPLY\r\n$3\r\nOFF\r\n" + body)
    time.sleep(0.5)
    s.close()
    eq(src.cli("DBSIZE"), "700")
    eq(proxy.stop(), 0)
    fresh = h.redis_server(name="fresh-off")
    rc, doc, err = replay(h.path("off.ksc"), "--to", "redis://%s:%d" % (HOST, fresh.port))
    eq(rc, 0, "%r %s" % (doc, err))
    eq(doc["requests"], 701, doc)
    eq(fresh.cli("DBSIZE"), "700")
    eq(fresh.cli("GET", "off:699"), "v")


if __name__ == "__main__":
    redis_module()
    sys.exit(run_tests())
