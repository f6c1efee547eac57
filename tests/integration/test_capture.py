#!/usr/bin/python3
"""`keyshift capture` as a transparent proxy in front of Debian's redis-server 7.0: replies
through it are byte-identical to direct ones (RESP2 and RESP3, pipelines, inline commands),
redis-cli and python3-redis work through it (pipelines, MULTI/EXEC, SUBSCRIBE, BLPOP), the
capture file holds what was sent (read back here by an independent reader of
keyshift-capture(5) and by `capture info`), secrets are redacted, and a proxy killed with
kill -9 leaves a file readable up to its tail.

Run: KEYSHIFT_BIN=build/keyshift /usr/bin/python3 tests/integration/test_capture.py [NAME...]
"""

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import (HOST, CaptureProxy, eq, free_port, keyshift_bin, ok, read_capture,  # noqa: E402
                     run_tests, test)

def info(path, *flags):
    p = subprocess.run([keyshift_bin(), "capture", "info", path] + list(flags),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def info_json(path):
    rc, out, err = info(path, "--format", "json")
    return rc, json.loads(out), err


def upstream_of(srv):
    return "%s:%d" % (HOST, srv.port)


# Raw requests whose replies are deterministic on an empty server: sent one at a time and
# then all in one write (a pipeline), through the proxy and directly.
SCRIPT = [
    b"*1\r\n$4\r\nPING\r\n",
    b"PING\r\n",
    b"SET inline value\r\n",
    b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nhello\r\n",
    b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n",
    b"*2\r\n$4\r\nINCR\r\n$1\r\nk\r\n",
    b"*4\r\n$5\r\nRPUSH\r\n$1\r\nl\r\n$1\r\na\r\n$1\r\nb\r\n",
    b"*4\r\n$6\r\nLRANGE\r\n$1\r\nl\r\n$1\r\n0\r\n$2\r\n-1\r\n",
    b"*4\r\n$4\r\nHSET\r\n$1\r\nh\r\n$1\r\nf\r\n$3\r\n1.5\r\n",
    b"*2\r\n$7\r\nHGETALL\r\n$1\r\nh\r\n",
    b"*2\r\n$5\r\nHELLO\r\n$1\r\n3\r\n",
    b"*2\r\n$7\r\nHGETALL\r\n$1\r\nh\r\n",
    b"*4\r\n$12\r\nHINCRBYFLOAT\r\n$1\r\nh\r\n$1\r\nf\r\n$1\r\n1\r\n",
    b"*2\r\n$6\r\nSELECT\r\n$1\r\n2\r\n",
    b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n",
    b"*1\r\n$7\r\nNOSUCHX\r\n",
]


def run_script(conn_factory, pipelined):
    c = conn_factory()
    replies = []
    if pipelined:
        c.send(b"".join(SCRIPT))
        for _ in SCRIPT:
            replies.append(c.read_reply()[0])
    else:
        for req in SCRIPT:
            c.send(req)
            replies.append(c.read_reply()[0])
    c.close()
    return replies


@test
def replies_through_the_proxy_are_byte_identical_to_direct_ones(h):
    srv = h.redis_server()
    out = h.path("identical.ksc")
    proxy = CaptureProxy(h, upstream_of(srv), out)
    got = {}
    for pipelined in (False, True):
        srv.redis().flushall()
        got[("proxy", pipelined)] = run_script(proxy.conn, pipelined)
        srv.redis().flushall()
        got[("direct", pipelined)] = run_script(srv.conn, pipelined)
    eq(proxy.stop(), 0, "capture exits 0 on SIGTERM")
    hello = SCRIPT.index(b"*2\r\n$5\r\nHELLO\r\n$1\r\n3\r\n")
    for pipelined in (False, True):
        proxied, direct = got[("proxy", pipelined)], got[("direct", pipelined)]
        # HELLO's reply names the connection's id, which differs between any two connections.
        ok(proxied[hello].startswith(b"%7\r\n") and direct[hello].startswith(b"%7\r\n"),
           "HELLO 3 replies")
        eq(proxied[:hello] + proxied[hello + 1:], direct[:hello] + direct[hello + 1:],
           "replies (pipelined=%s)" % pipelined)
    ok(got[("proxy", False)][11].startswith(b"%1\r\n"), "RESP3 map after HELLO 3")
    header, events, complete = read_capture(out)
    ok(complete, "the file has its end record")
    eq(header.get("capture.method"), "proxy", "header: method")
    eq(header.get("source.redis_version", "").split(".")[0], "7", "header: INFO server")
    requests = [e for e in events if e["kind"] == "request"]
    eq([e["bytes"] for e in requests], SCRIPT * 2, "every request recorded byte for byte")
    replies = [e["bytes"] for e in events if e["kind"] == "reply"]
    eq(replies, got[("proxy", False)] + got[("proxy", True)], "every reply byte for byte")
    # The state each request was sent under: HELLO 3 and SELECT 2 carry the state before them.
    first = requests[:len(SCRIPT)]
    eq([e["resp"] for e in first], [2] * 11 + [3] * 5, "RESP version per request")
    eq([e["db"] for e in first], [0] * 14 + [2] * 2, "db per request")
    piped = requests[len(SCRIPT):]
    eq(len({e["batch"] for e in piped}), 1, "one pipelined write is one batch")
    eq(len({e["conn"] for e in events}), 2, "two connections")
    eq(sorted(e["kind"] for e in events if e["kind"] in ("open", "close")),
       ["close"] * 2 + ["open"] * 2, "opens and closes")
    ok(all(e["peer"].startswith("127.0.0.1:") for e in events if e["kind"] == "open"), "peer")
    ok(all(e["start"] <= e["end"] for e in events), "start <= end")


@test
def python_redis_pipelines_transactions_pubsub_and_blpop_work_through_the_proxy(h):
    srv = h.redis_server()
    out = h.path("py.ksc")
    proxy = CaptureProxy(h, upstream_of(srv), out)
    r = proxy.redis()
    r.client_setname("py-app")
    pipe = r.pipeline(transaction=False)
    for i in range(200):
        pipe.set("key:%d" % i, "v%d" % i)
    eq(len(pipe.execute()), 200, "pipeline replies")
    tx = r.pipeline(transaction=True)
    tx.incr("counter")
    tx.incr("counter")
    tx.get("key:7")
    eq(tx.execute(), [1, 2, b"v7"], "MULTI/EXEC")
    # SUBSCRIBE through the proxy, PUBLISH directly.
    ps = proxy.redis().pubsub()
    ps.subscribe("news")
    eq(ps.get_message(timeout=5)["type"], "subscribe", "subscribe confirmation")
    srv.redis().publish("news", "hello")
    msg = ps.get_message(timeout=5)
    eq((msg["type"], msg["data"]), ("message", b"hello"), "published message arrives")
    ps.close()
    # BLPOP blocks through the proxy until a direct client pushes.
    threading.Timer(0.3, lambda: srv.redis().rpush("queue", "job")).start()
    eq(proxy.redis().blpop("queue", timeout=5), (b"queue", b"job"), "BLPOP")
    # redis-cli through the proxy.
    cli = subprocess.run(["redis-cli", "-p", str(proxy.port), "GET", "key:3"],
                         stdout=subprocess.PIPE, timeout=10)
    eq(cli.stdout.strip(), b"v3", "redis-cli through the proxy")
    eq(proxy.stop(), 0, "capture exits 0")
    rc, summary, err = info_json(out)
    eq(rc, 0, "capture info exit status: " + err)
    counts = {c["name"]: c["count"] for c in summary["commands"]}
    eq(counts.get("SET"), 200, "SET count")
    eq(counts.get("MULTI"), 1, "MULTI count")
    eq(counts.get("EXEC"), 1, "EXEC count")
    eq(counts.get("INCRBY"), 2, "INCRBY count (redis-py's incr)")
    eq(counts.get("BLPOP"), 1, "BLPOP count")
    eq(counts.get("SUBSCRIBE"), 1, "SUBSCRIBE count")
    eq(counts.get("CLIENT SETNAME"), 1, "CLIENT SETNAME count")
    ok(summary["connections"] >= 4, "connections: %d" % summary["connections"])
    eq(summary["connections"], summary["closes"], "every connection closed")
    ok(any(c["name"] == "py-app" for c in summary["clients"]), "client name recorded")
    ok(summary["complete"], "complete")
    _, events, _ = read_capture(out)
    replies = [e["bytes"] for e in events if e["kind"] == "reply"]
    ok(any(b"hello" in r and r.startswith(b"*3") for r in replies), "pub/sub message recorded")


@test
def capture_info_counts_commands_errors_bytes_and_clients(h):
    srv = h.redis_server()
    out = h.path("counts.ksc")
    proxy = CaptureProxy(h, upstream_of(srv), out)
    c = proxy.conn()
    sent = [b"*3\r\n$6\r\nCLIENT\r\n$7\r\nSETNAME\r\n$6\r\nworker\r\n",
            b"*4\r\n$6\r\nCLIENT\r\n$7\r\nSETINFO\r\n$8\r\nLIB-NAME\r\n$5\r\nmylib\r\n",
            b"*4\r\n$6\r\nCLIENT\r\n$7\r\nSETINFO\r\n$7\r\nLIB-VER\r\n$3\r\n1.2\r\n"]
    sent += [b"*3\r\n$3\r\nSET\r\n$1\r\na\r\n$1\r\n1\r\n"] * 10
    sent += [b"*2\r\n$3\r\nGET\r\n$1\r\na\r\n"] * 5
    sent += [b"*2\r\n$5\r\nLPUSH\r\n$1\r\na\r\n"]  # wrong arity: an error
    sent += [b"*3\r\n$5\r\nLPUSH\r\n$1\r\na\r\n$1\r\nx\r\n"]  # WRONGTYPE
    got = b""
    for req in sent:
        c.send(req)
        got += c.read_reply()[0]
    c.close()
    eq(proxy.stop(), 0, "capture exits 0")
    rc, summary, err = info_json(out)
    eq(rc, 0, "exit status: " + err)
    counts = {x["name"]: x["count"] for x in summary["commands"]}
    eq(counts, {"SET": 10, "GET": 5, "LPUSH": 2, "CLIENT SETNAME": 1, "CLIENT SETINFO": 2},
       "commands by count")
    eq(summary["commands"][0]["name"], "SET", "most frequent first")
    eq(summary["requests"], len(sent), "requests")
    eq(summary["replies"], len(sent), "replies")
    # redis-server 7.0 has no CLIENT SETINFO (7.2 has): two errors, the lib recorded anyway.
    eq(summary["error_replies"], 4, "error replies")
    eq(summary["bytes_to_server"], sum(len(s) for s in sent), "bytes to the server")
    eq(summary["bytes_to_client"], len(got), "bytes to the client")
    eq(summary["connections"], 1, "connections")
    eq(summary["clients"], [{"name": "worker", "lib": "mylib 1.2", "connections": 1}], "clients")
    ok(summary["duration_ns"] > 0, "duration")
    rc, text, _ = info(out)
    eq(rc, 0, "text exit status")
    ok("SET" in text and "errors" in text and "worker" in text, text)


@test
def secrets_are_redacted_in_the_file_and_the_requests_stay_valid(h):
    srv = h.redis_server("--requirepass", "s3cretPW")
    out = h.path("auth.ksc")
    proxy = CaptureProxy(h, upstream_of(srv), out)
    c = proxy.conn()
    for args in (["AUTH", "s3cretPW"], ["AUTH", "default", "s3cretPW"],
                 ["HELLO", "3", "AUTH", "default", "s3cretPW", "SETNAME", "n1"],
                 ["CONFIG", "SET", "masterauth", "upstreamPW9"],
                 ["MIGRATE", "127.0.0.1", "1", "", "0", "10", "AUTH2", "u", "migratePW7",
                  "KEYS", "nokey"],
                 ["SET", "plain", "value"]):
        eq(c.command(*args) is not None, True, "reply")
    c.send(b"AUTH s3cretPW\r\n")  # inline
    eq(c.read_reply()[0], b"+OK\r\n", "inline AUTH through the proxy")
    c.close()
    eq(proxy.stop(), 0, "capture exits 0")
    data = open(out, "rb").read()
    for secret in (b"s3cretPW", b"upstreamPW9", b"migratePW7"):
        ok(secret not in data, "%r is in the capture file" % secret)
    _, events, _ = read_capture(out)
    reqs = [e for e in events if e["kind"] == "request"]
    redacted = [e for e in reqs if e["flags"] & 2]
    eq(len(redacted), 6, "redacted requests flagged")
    eq(reqs[-1]["flags"] & 2, 2, "inline AUTH redacted")
    eq(reqs[-1]["bytes"], b"*2\r\n$4\r\nAUTH\r\n$10\r\n(redacted)\r\n", "re-encoded as RESP")
    ok(b"$10\r\n(redacted)\r\n" in reqs[2]["bytes"] and b"SETNAME" in reqs[2]["bytes"],
       "HELLO keeps its other arguments")
    eq(reqs[5]["bytes"], b"*3\r\n$3\r\nSET\r\n$5\r\nplain\r\n$5\r\nvalue\r\n", "others untouched")
    rc, summary, _ = info_json(out)
    eq(summary["redacted"], 6, "capture info counts redacted requests")
    ok(all(x["name"] for x in summary["commands"]), "redacted requests still parse")


def replay_json(path, target_url):
    p = subprocess.run([keyshift_bin(), "replay", path, "--to", target_url, "--format", "json"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    return p.returncode, json.loads(p.stdout), p.stderr.decode("utf-8", "replace")


@test
def secrets_in_replies_are_redacted_and_replay_redacts_the_target_alike(h):
    import hashlib
    srv = h.redis_server("--requirepass", "s3cretPW", "--masterauth", "upstreamPW9")
    direct = srv.redis(password="s3cretPW")
    direct.execute_command("ACL", "SETUSER", "alice", "on", ">alicePW42", "~*", "+@all")
    out = h.path("reply-secrets.ksc")
    proxy = CaptureProxy(h, upstream_of(srv), out)
    c = proxy.redis(password="s3cretPW")
    eq(c.config_get("requirepass"), {"requirepass": "s3cretPW"}, "the client sees the secret")
    c.config_get("*auth*")
    ok("passwords" in c.acl_getuser("alice"), "ACL GETUSER")
    ok(any("alice" in line for line in c.acl_list()), "ACL LIST")
    p = c.pipeline(transaction=True)
    p.config_get("requirepass")
    p.set("k", "v")
    eq(p.execute()[0], {"requirepass": "s3cretPW"}, "inside EXEC")
    c.close()
    eq(proxy.stop(), 0, "capture exits 0")
    data = open(out, "rb").read()
    sha = hashlib.sha256(b"alicePW42").hexdigest().encode()
    for secret in (b"s3cretPW", b"upstreamPW9", sha):
        ok(secret not in data, "%r is in the capture file" % secret)
    _, events, _ = read_capture(out)
    flagged = [e for e in events if e["kind"] == "reply" and e["flags"] & 2]
    eq(len(flagged), 5, "CONFIG GET twice, ACL GETUSER, ACL LIST and EXEC flagged redacted")
    # Replayed against the same server, whose replies hold the same secrets: redacted alike.
    rc, doc, err = replay_json(out, "redis://:s3cretPW@%s:%d" % (HOST, srv.port))
    eq(doc["verdicts"].get("differs", 0), 0, doc["examples"])
    ok(doc["verdicts"].get("same", 0) >= 6, doc["verdicts"])


@test
def anonymized_captures_hide_keys_and_values_and_replay_alike(h):
    srv = h.redis_server()
    out = h.path("anon.ksc")
    proxy = CaptureProxy(h, upstream_of(srv), out, extra=["--anonymize"])
    r = proxy.redis()
    r.set("user:{42}:name", "Alice Wonderland", ex=600)
    eq(r.get("user:{42}:name"), b"Alice Wonderland", "the client sees its data")
    r.mset({"user:{42}:mail": "alice@example.org", "user:{42}:city": "Paris"})
    r.hset("profile:alice", mapping={"firstname": "Alice", "age": "37"})
    r.hgetall("profile:alice")
    r.incrby("visits:alice", 5)
    r.rpush("queue:emails", "welcome-alice", "invoice-alice")
    r.lrange("queue:emails", 0, -1)
    r.zadd("board", {"alice": 12.5, "bob": 3})
    r.zrange("board", 0, -1, withscores=True)
    r.execute_command("SET", "greeting", "hello-alice", "NX", "PX", "60000")
    r.close()
    eq(proxy.stop(), 0, "capture exits 0")
    data = open(out, "rb").read()
    for word in (b"alice", b"Alice", b"Wonderland", b"Paris", b"user:", b"profile",
                 b"example.org", b"queue:", b"emails"):
        ok(word not in data, "%r is in the capture file" % word)
    header, events, _ = read_capture(out)
    eq(header.get("capture.anonymize"), "on", header)
    reqs = [e["bytes"] for e in events if e["kind"] == "request"]
    mset = [b for b in reqs if b"MSET" in b][0]
    parts = mset.split(b"\r\n")
    keys = [parts[4], parts[8]]
    eq(len(keys[0]), len(b"user:{42}:mail"), "same length")
    tags = [k[k.index(b"{"):k.index(b"}") + 1] for k in keys]
    eq(tags[0], tags[1], "keys that shared a hash tag still share one")
    ok(tags[0] != b"{42}", "the tag itself is hashed: %r" % tags)
    ok(b"$2\r\nNX\r\n$2\r\nPX\r\n$5\r\n60000\r\n" in reqs[-1], "option words kept")
    # The hashed dataset is consistent: replayed into an empty server, every reply agrees.
    fresh = h.redis_server(name="fresh")
    rc, doc, err = replay_json(out, "redis://%s:%d" % (HOST, fresh.port))
    eq(doc["verdicts"].get("differs", 0), 0, doc["examples"])
    eq(doc["verdicts"].get("no-reply", 0), 0, doc["examples"])
    eq(fresh.cli("DBSIZE"), "8")


@test
def a_live_server_sampled_by_monitor_for_a_while_becomes_a_capture(h):
    srv = h.redis_server(name="monitored")
    out = h.path("live-monitor.ksc")
    p = subprocess.Popen([keyshift_bin(), "capture", "--from-monitor",
                          "redis://%s:%d" % (HOST, srv.port), "--duration", "1.5", "--out", out,
                          "--anonymize"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 10
    while b"MONITOR" not in subprocess.run(["redis-cli", "-p", str(srv.port), "CLIENT", "LIST"],
                                           stdout=subprocess.PIPE).stdout.upper():
        ok(time.monotonic() < deadline and p.poll() is None, "MONITOR never started")
        time.sleep(0.02)
    r = srv.redis()
    r.set("secret-key-name", "payload-one")
    r.eval("return redis.call('INCR', KEYS[1])", 1, "counter")
    r.lpush("jobs", "job-a")
    _, err = p.communicate(timeout=20)
    eq(p.returncode, 0, err)
    ok(b"MONITOR shows no replies" in err, err)
    header, events, complete = read_capture(out)
    ok(complete, "closed cleanly")
    eq(header.get("capture.method"), "monitor", header)
    eq(header.get("source.redis_version", "")[:2], "7.", header)
    reqs = [e for e in events if e["kind"] == "request"]
    ok(len(reqs) >= 4, reqs)
    ok(all(e["flags"] & 4 for e in reqs), "every MONITOR request is flagged no-reply")
    nested = [e for e in reqs if e["flags"] & 16]
    eq(len(nested), 1, "the INCR the script ran is nested")
    data = open(out, "rb").read()
    for word in (b"secret-key-name", b"payload-one", b"job-a"):
        ok(word not in data, "%r is in an anonymized capture" % word)
    rc, doc, _ = replay_json(out, "redis://%s:%d" % (HOST, h.redis_server(name="t").port))
    eq(doc["verdicts"].get("refused", 0), 0, doc["examples"])
    ok(doc["verdicts"].get("accepted", 0) >= 3, doc["verdicts"])
    # Bad uses are refused before anything runs.
    for args, words in ((["--from-monitor", "redis://%s:%d" % (HOST, srv.port), "--out", out],
                         "needs --duration"),
                        (["--from-monitor", "nope://x", "--duration", "1", "--out", out],
                         "--from-monitor nope://x")):
        q = subprocess.run([keyshift_bin(), "capture"] + args, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=20)
        eq(q.returncode, 2, q.stderr)
        ok(words.encode() in q.stderr, q.stderr)


@test
def unix_sockets_on_both_sides_and_replies_off(h):
    sock = h.path("redis-unix.sock")
    h.redis_server("--unixsocket", sock, "--unixsocketperm", "700")
    out = h.path("unix.ksc")
    listen = "unix:" + h.path("proxy.sock")
    proxy = CaptureProxy(h, "unix:" + sock, out, listen=listen)
    c = proxy.conn()
    c.send(b"*3\r\n$6\r\nCLIENT\r\n$5\r\nREPLY\r\n$3\r\nOFF\r\n"
           b"*3\r\n$3\r\nSET\r\n$1\r\nq\r\n$1\r\n1\r\n"
           b"*3\r\n$6\r\nCLIENT\r\n$5\r\nREPLY\r\n$2\r\nON\r\n")
    eq(c.read_reply()[0], b"+OK\r\n", "only CLIENT REPLY ON answers")
    eq(c.call("GET", "q"), b"1", "the SET ran")
    c.close()
    eq(proxy.stop(), 0, "capture exits 0")
    ok(not os.path.exists(listen[5:]), "the listening socket is removed")
    _, events, _ = read_capture(out)
    reqs = [e for e in events if e["kind"] == "request"]
    eq([bool(e["flags"] & 4) for e in reqs], [True, True, False, False], "no-reply flags")
    ok(events[0]["peer"].startswith("unix:"), "unix peer")


@test
def monitor_and_resp3_pushes_pass_through_and_are_recorded_as_replies(h):
    srv = h.redis_server()
    out = h.path("monitor.ksc")
    proxy = CaptureProxy(h, upstream_of(srv), out)
    mon = proxy.conn()
    eq(mon.command("MONITOR")[0], b"+OK\r\n", "MONITOR through the proxy")
    sub = proxy.conn()
    sub.command("HELLO", "3")
    raw, _ = sub.command("SUBSCRIBE", "ch")
    ok(raw.startswith(b">3\r\n"), "RESP3 subscribe push: %r" % raw)
    srv.redis().publish("ch", "pushed")
    raw, _ = sub.read_reply()
    eq(raw, b">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$6\r\npushed\r\n", "RESP3 push")
    line, _ = mon.read_reply()
    ok(line.startswith(b"+") and b"HELLO" in line, "MONITOR line: %r" % line)
    mon.close()
    sub.close()
    eq(proxy.stop(), 0, "capture exits 0")
    _, events, _ = read_capture(out)
    replies = [e for e in events if e["kind"] == "reply"]
    ok(any(e["bytes"].startswith(b">3") and b"pushed" in e["bytes"] and e["resp"] == 3
           for e in replies), "the push is a reply event under RESP3")
    ok(any(e["bytes"].startswith(b"+") and b"SUBSCRIBE" in e["bytes"] for e in replies),
       "MONITOR lines are reply events")


@test
def a_killed_proxy_leaves_a_file_readable_up_to_its_tail(h):
    srv = h.redis_server()
    out = h.path("killed.ksc")
    proxy = CaptureProxy(h, upstream_of(srv), out)
    r = proxy.redis()
    for i in range(50):
        r.set("k%d" % i, "v")
    time.sleep(0.5)  # the writer thread writes what it has when idle
    pid = proxy.proc.pid
    eq(proxy.stop(signal.SIGKILL), -signal.SIGKILL, "killed")
    ok(not os.path.exists(out), "nothing renamed into place")
    temp = os.path.join(os.path.dirname(out), ".%s.tmp-%d" % (os.path.basename(out), pid))
    ok(os.path.exists(temp), "the temporary file is there")
    rc, text, err = info(temp)
    eq(rc, 1, "a damaged capture exits 1")
    size = os.path.getsize(temp)
    ok(("damaged at byte %d" % size) in err, err)
    ok("no end record" in err, err)
    rc, summary, _ = info_json(temp)
    eq({x["name"]: x["count"] for x in summary["commands"]}.get("SET"), 50, "the 50 SETs")
    eq(summary["damage"]["offset"], size, "damage offset in JSON")
    # Cut in the middle of a record: everything before it is still read.
    with open(temp, "rb") as f:
        data = f.read()
    cut = h.path("cut.ksc")
    with open(cut, "wb") as f:
        f.write(data[:size - 7])
    rc, summary, err = info_json(cut)
    eq(rc, 1, "a cut capture exits 1")
    ok(summary["damage"]["reason"].startswith("truncated"), summary["damage"]["reason"])
    ok(summary["requests"] >= 49, "records before the cut: %d" % summary["requests"])


@test
def a_full_recording_queue_drops_records_not_traffic_and_says_how_many_bytes(h):
    srv = h.redis_server()
    out = h.path("drops.ksc")
    # A backlog of 4 KiB: no 20 KB request fits, so they are dropped; the traffic is not.
    proxy = CaptureProxy(h, upstream_of(srv), out, extra=["--max-queued", "4096"])
    c = proxy.conn()
    big = b"x" * 20000
    for i in range(10):
        eq(c.command("SET", "big%d" % i, big)[0], b"+OK\r\n", "SET through the proxy")
    eq(c.call("STRLEN", "big9"), 20000, "the value arrived whole")
    time.sleep(0.2)
    eq(c.command("PING")[0], b"+PONG\r\n", "PING")
    c.close()
    eq(proxy.stop(), 0, "capture exits 0")
    ok("were not recorded" in proxy.output(), proxy.output())
    _, events, complete = read_capture(out)
    ok(complete, "complete")
    drops = [e for e in events if e["kind"] == "drop"]
    ok(drops, "a drop event")
    lost = sum(int(e["bytes"]) for e in drops)
    ok(lost >= 10 * 20000, "drop events count the lost bytes: %d" % lost)
    reqs = [e["bytes"] for e in events if e["kind"] == "request"]
    ok(b"*1\r\n$4\r\nPING\r\n" in reqs, "later small requests are recorded again")
    rc, summary, _ = info_json(out)
    eq(summary["dropped_bytes"], lost, "capture info sums the drops")


@test
def bad_files_and_bad_flags_are_refused(h):
    junk = h.path("junk.ksc")
    with open(junk, "wb") as f:
        f.write(b"REDIS0011 not a capture")
    rc, _, err = info(junk)
    eq(rc, 2, "not a capture: exit 2")
    ok("bad magic" in err, err)
    p = subprocess.run([keyshift_bin(), "capture", "--listen", "127.0.0.1:1"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=10)
    eq(p.returncode, 2, "missing --upstream/--out")
    p = subprocess.run([keyshift_bin(), "capture", "--listen", "nonsense", "--upstream",
                        "127.0.0.1:1", "--out", h.path("x.ksc")],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=10)
    eq(p.returncode, 2, "bad --listen")
    ok(not os.path.exists(h.path("x.ksc")), "no file written")


@test
def duration_stops_the_capture_and_closes_open_connections(h):
    srv = h.redis_server()
    out = h.path("duration.ksc")
    port = free_port()
    t0 = time.monotonic()
    p = subprocess.Popen([keyshift_bin(), "capture", "--listen", "%s:%d" % (HOST, port),
                          "--upstream", upstream_of(srv), "--out", out, "--duration", "1.5"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 5
    s = None
    while time.monotonic() < deadline:
        try:
            s = socket.create_connection((HOST, port), timeout=1)
            break
        except OSError:
            time.sleep(0.05)
    ok(s is not None, "proxy listening")
    s.sendall(b"PING\r\n")
    eq(s.recv(100), b"+PONG\r\n", "PONG")
    eq(p.wait(timeout=10), 0, "exit 0 after --duration")
    ok(time.monotonic() - t0 >= 1.4, "ran for the duration")
    s.close()
    _, events, complete = read_capture(out)
    ok(complete, "complete")
    eq([e["kind"] for e in events], ["open", "request", "reply", "close"], "events")


if __name__ == "__main__":
    run_tests()
