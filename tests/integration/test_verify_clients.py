#!/usr/bin/python3
"""`keyshift verify clients` on MONITOR logs: a fixture log (tests/data/monitor/apps.log) of
three clients and a script that use HEXPIRE, HSETEX, JSON.SET, CLIENT SETINFO, SET GET, SET
IFEQ, EVAL, INFO, HELLO and DEBUG, judged against Valkey 8.0 and 9.0 with every verdict
appearing; a log recorded from a real redis-server 7.0 with redis-cli monitor while
python3-redis sends commands (every escape form round-trips through the server's own
quoting); the HTML page rendered in headless chromium; the JUnit XML read by junitparser.

Run: KEYSHIFT_BIN=build/keyshift /usr/bin/python3 tests/integration/test_verify_clients.py
"""

import json
import os
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import (CaptureProxy, _apt_install, chromium, eq, keyshift_bin, ok,  # noqa: E402
                     redis_module, run_tests, test)

FIXTURE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "monitor",
                       "apps.log")


def clients(*args, stdin=None):
    p = subprocess.run([keyshift_bin(), "verify", "clients"] + list(args), input=stdin,
                       capture_output=True, timeout=120)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def report(*args):
    rc, out, err = clients(*args, "--format", "json")
    ok(rc in (0, 1), "exit %d: %s" % (rc, err))
    return rc, json.loads(out)


def usage_of(doc, client_name):
    for c in doc["clients"]:
        if c["name"] == client_name:
            return {u["item"]: u for u in c["usage"]}
    raise AssertionError("no client %r in %s" % (client_name, [c["name"] for c in doc["clients"]]))


@test
def the_fixture_gets_every_verdict_against_valkey_8_0(h):
    rc, doc = report(FIXTURE, "--source", "redis-7.4", "--target", "valkey-8.0")
    eq(rc, 1, "something is missing: exit 1")
    eq(doc["commands"], 19)
    eq({c["name"] for c in doc["clients"]},
       {"phpredis 6.0.2", "redis-py 5.0.1", "unidentified client", "scripts"})
    php = usage_of(doc, "phpredis 6.0.2")
    eq(php["hexpire"]["count"], 2)
    eq((php["hexpire"]["verdict"], php["hexpire"]["detail"]), ("missing", "valkey-9.0 has it"))
    eq(php["hsetex"]["verdict"], "missing")
    eq(php["info"]["verdict"], "differs")
    ok("7.2.4" in php["info"]["detail"], php["info"]["detail"])
    eq(php["client|setinfo"]["verdict"], "ok")
    py = usage_of(doc, "redis-py 5.0.1")
    eq(py["json.set"]["verdict"], "module")
    eq(py["set GET"]["verdict"], "ok")
    eq((py["set IFEQ"]["verdict"], py["set IFEQ"]["detail"]), ("missing", "valkey-8.1 has it"))
    eq(py["eval"]["verdict"], "ok")
    unix = usage_of(doc, "unidentified client")
    eq(unix["debug"]["verdict"], "config")
    eq(unix["hello"]["verdict"], "differs")
    eq(unix["hello"]["example"], '"HELLO" "3" "AUTH" "(redacted)" "(redacted)"')
    eq(usage_of(doc, "scripts")["incr"]["verdict"], "ok")
    eq(doc["verdicts"], {"ok": 9, "missing": 3, "differs": 2, "config": 1, "module": 1})


@test
def valkey_9_1_has_what_valkey_8_0_lacked(h):
    rc, doc = report(FIXTURE, "--source", "redis-7.4", "--target", "valkey-9.1")
    php = usage_of(doc, "phpredis 6.0.2")
    eq(php["hexpire"]["verdict"], "ok")
    eq(php["hsetex"]["verdict"], "ok")
    eq(usage_of(doc, "redis-py 5.0.1")["set IFEQ"]["verdict"], "ok")
    eq(rc, 1, "JSON.SET still needs a module")


@test
def a_log_of_plain_commands_is_all_ok_and_exits_0(h):
    log = h.path("plain.log")
    with open(log, "w") as f:
        f.write('1.000000 [0 127.0.0.1:1] "SET" "a" "1"\n1.000001 [0 127.0.0.1:1] "GET" "a"\n')
    rc, out, err = clients(log, "--target", "valkey-8.0")
    eq(rc, 0, out + err)
    ok("works on the target" in out, out)


@test
def a_damaged_log_is_refused_with_its_line_and_column(h):
    log = h.path("bad.log")
    with open(log, "w") as f:
        f.write('1.000000 [0 127.0.0.1:1] "SET" "a" "1"\n1.000001 [0 127.0.0.1:1] "GET" "a\n')
    rc, out, err = clients(log)
    eq(rc, 2, err)
    eq(out, "", "no partial report")
    ok("bad.log:2:32: unterminated quoted argument" in err, err)
    rc, _, err = clients(h.path("absent.log"))
    eq(rc, 2)
    ok("absent.log" in err, err)
    rc, _, err = clients(log, "--target", "valkey-5.0")
    eq(rc, 2)
    ok("unknown server line" in err, err)


@test
def standard_input_is_read_too(h):
    with open(FIXTURE, "rb") as f:
        data = f.read()
    rc, out, err = clients("-", "--format", "json", "--target", "valkey-8.0", stdin=data)
    eq(rc, 1, err)
    eq(json.loads(out)["commands"], 19)


@test
def a_real_redis_cli_monitor_log_round_trips_every_byte(h):
    """redis-server's own quoting, read back and quoted again by keyshift, is the same text:
    so every byte came through the parser as the client sent it."""
    srv = h.redis_server()
    log = h.path("monitor.log")
    sent = {
        "rpush": [b"l", bytes(range(0, 40))],
        "sadd": [b"s", bytes(range(100, 140))],
        "hset": [b"h", bytes(range(216, 256)), b"12345"],
        "append": [b"q", b'say "hi" \\ \n\r\t\x07\x08 done'],
    }
    with open(log, "wb") as out:
        mon = subprocess.Popen(["redis-cli", "-p", str(srv.port), "monitor"], stdout=out,
                               stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 10
            while os.path.getsize(log) < 3 and time.monotonic() < deadline:
                time.sleep(0.02)
            r = srv.redis()
            r.client_setname("app1")
            for cmd, args in sent.items():
                r.execute_command(cmd.upper(), *args)
            r.incr("n")
            time.sleep(0.5)  # redis-cli writes what it got when it is stopped
        finally:
            mon.terminate()
            mon.wait()
    raw = open(log, "rb").read().decode("ascii")
    rc, doc = report(log, "--target", "valkey-8.0")
    eq(rc, 0, "plain commands only")
    app = usage_of(doc, "client named app1")
    for cmd in sent:
        line = next(l for l in raw.splitlines() if '"%s"' % cmd.upper() in l)
        eq(app[cmd]["example"], line[line.index('] "') + 2:], "%s quoted as the server did" % cmd)
        ok("\\x" in line or cmd == "append" or cmd == "hset", line)
    ok("\\n" in app["append"]["example"] and '\\"' in app["append"]["example"],
       app["append"]["example"])


def traffic(srv, seconds):
    """A thread that sends commands to `srv` for `seconds`; returns it, started."""
    import threading

    def run():
        r = srv.redis()
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            # Named again and again: the sample may start after the first SETNAME.
            r.client_setname("worker")
            r.set("a", "1", get=True)
            r.hset("h", "f", "v")
            time.sleep(0.01)

    t = threading.Thread(target=run)
    t.start()
    return t


@test
def a_live_server_is_sampled_by_monitor_for_the_duration(h):
    srv = h.redis_server()
    t = traffic(srv, 2.5)
    t0 = time.monotonic()
    rc, doc = report("redis://127.0.0.1:%d" % srv.port, "--duration", "1", "--target",
                     "valkey-8.0")
    took = time.monotonic() - t0
    t.join()
    eq(rc, 0, "SET ... GET and HSET work on Valkey 8.0")
    ok("MONITOR sample" in doc["method"], doc["method"])
    worker = usage_of(doc, "client named worker")
    ok(worker["set"]["count"] > 5 and worker["hset"]["count"] > 5, worker)
    eq(worker["set GET"]["count"], worker["set"]["count"])
    ok(took < 30, "the sample ended (%.1f s)" % took)
    # An idle server ends the sample on time too: the end is marked in the stream.
    idle = h.redis_server(name="idle")
    rc, doc = report("redis://127.0.0.1:%d" % idle.port, "--duration", "0.5")
    eq((rc, doc["commands"]), (0, 0))


@test
def a_live_server_is_sampled_by_commandstats_without_monitor(h):
    srv = h.redis_server()
    t = traffic(srv, 2.5)
    rc, doc = report("redis://127.0.0.1:%d" % srv.port, "--duration", "1", "--sample",
                     "commandstats")
    t.join()
    ok("INFO commandstats" in doc["method"], doc["method"])
    everyone = usage_of(doc, "every client (INFO commandstats)")
    ok(everyone["set"]["count"] > 5 and everyone["hset"]["count"] > 5, everyone)
    ok("monitor" not in everyone, "no MONITOR was run")
    rc, _, err = clients("redis://127.0.0.1:%d" % srv.port)
    eq(rc, 2)
    ok("--duration" in err, err)


@test
def the_html_report_renders_in_headless_chromium(h):
    browser = chromium()
    page = h.path("clients.html")
    rc, out, err = clients(FIXTURE, "--source", "redis-7.4", "--format", "html", "--out", page)
    eq(rc, 1, err)
    eq(out, "", "the report went to the file")
    with open(page, encoding="utf-8") as f:
        html = f.read()
    ok("<script" not in html and "https://" not in html, "self-contained")
    dom = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu",
                          "--no-first-run", "--user-data-dir=" + h.path("chromium-profile"),
                          "--dump-dom", "file://" + page], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, timeout=120).stdout.decode()
    eq(dom.count("<table>"), 4, "one table per client")
    eq(dom.count("<rect "), 5, "a bar per verdict that occurs")
    ok('class="v-missing"' in dom and "valkey-9.0 has it" in dom, "verdicts shown")


@test
def the_junit_xml_is_read_by_junitparser(h):
    try:
        import junitparser
    except ImportError:
        _apt_install(["python3-junitparser"])
        import junitparser
    path = h.path("clients.xml")
    rc, _, err = clients(FIXTURE, "--source", "redis-7.4", "--format", "junit", "--out", path)
    eq(rc, 1, err)
    xml = junitparser.JUnitXml.fromfile(path)
    suites = {s.name: s for s in xml}
    eq(len(suites), 4)
    php = suites["phpredis 6.0.2 on 10.0.0.5"]
    eq(php.tests, 6)
    eq(php.failures, 3)
    failed = {c.name for c in php if c.result}
    eq(failed, {"hexpire", "hsetex", "info"})
    total_failures = sum(s.failures for s in xml)
    eq(total_failures, 7, "3 missing + 2 differs + 1 config + 1 module")


def capture_apps(h, srv, out):
    """Two named clients talk to `srv` through `keyshift capture`; returns the capture."""
    proxy = CaptureProxy(h, "127.0.0.1:%d" % srv.port, out)
    redis = redis_module()
    php = proxy.redis(socket_timeout=10)
    php.client_setname("php-fpm")
    php.hset("sess:1", "user", "7")
    for _ in range(3):
        try:
            php.execute_command("HEXPIRE", "sess:1", "60", "FIELDS", "1", "user")
        except redis.ResponseError:
            pass  # Redis 7.0 has no HEXPIRE: what the app sent counts, not the answer
    php.info("server")
    worker = proxy.redis(socket_timeout=10)
    worker.client_setname("worker")
    worker.set("job:1", "queued", get=True)
    worker.set("job:1", "queued", get=True)
    worker.eval("return redis.call('INCR', KEYS[1])", 1, "hits")
    eq(proxy.stop(), 0)
    return out


@test
def a_capture_file_names_each_connection_and_judges_what_it_sent(h):
    srv = h.redis_server()
    cap = capture_apps(h, srv, h.path("apps.ksc"))
    rc, doc = report(cap, "--source", "redis-7.0", "--target", "valkey-8.0")
    eq(rc, 1, "HEXPIRE is missing on Valkey 8.0")
    ok("capture file" in doc["method"], doc["method"])
    php = usage_of(doc, "client named php-fpm")
    eq(php["hexpire"]["count"], 3)
    eq((php["hexpire"]["verdict"], php["hexpire"]["detail"]), ("missing", "valkey-9.0 has it"))
    eq(php["hexpire"]["example"], '"HEXPIRE" "sess:1" "60" "FIELDS" "1" "user"')
    eq(php["info"]["verdict"], "differs")
    worker = usage_of(doc, "client named worker")
    eq(worker["set GET"]["count"], 2)
    eq(worker["set GET"]["verdict"], "ok", worker["set GET"])
    eq(worker["eval"]["verdict"], "ok", worker["eval"])
    ok("hexpire" not in worker, "each connection keeps its own commands")
    # The same traffic judged from Redis 7.4 for Valkey 9.0: both have HEXPIRE.
    rc, doc = report(cap, "--source", "redis-7.4", "--target", "valkey-9.0")
    eq(usage_of(doc, "client named php-fpm")["hexpire"]["verdict"], "ok")


@test
def a_capture_cut_short_is_read_up_to_its_damage_and_a_foreign_file_is_refused(h):
    srv = h.redis_server()
    cap = capture_apps(h, srv, h.path("whole.ksc"))
    data = open(cap, "rb").read()
    cut = h.path("cut.ksc")
    with open(cut, "wb") as f:
        f.write(data[:len(data) - 40])  # the end record and part of the last record
    rc, out, err = clients(cut, "--source", "redis-7.0", "--format", "json")
    eq(rc, 1, err)
    ok("records read up to byte" in err, err)
    doc = json.loads(out)
    ok(any("cut.ksc (" in i for i in doc["inputs"]), doc["inputs"])
    eq(usage_of(doc, "client named php-fpm")["hexpire"]["count"], 3)
    foreign = h.path("foreign.ksc")
    with open(foreign, "wb") as f:
        f.write(b"KSCAPTR\x00" + b"\xff" * 12)
    rc, _, err = clients(foreign)
    eq(rc, 2, err)
    ok("foreign.ksc: byte" in err, err)


@test
def a_replay_report_adds_what_the_target_really_answered(h):
    srv = h.redis_server()
    cap = capture_apps(h, srv, h.path("replayed.ksc"))
    # The target holds other data: the replayed SET ... GET answers differ from the recorded.
    other = h.redis_server(name="other")
    other.cli("SET", "job:1", "running")
    rep = h.path("replay.json")
    with open(rep, "wb") as f:
        p = subprocess.run([keyshift_bin(), "replay", cap, "--to",
                            "redis://127.0.0.1:%d" % other.port, "--format", "json"],
                           stdout=f, stderr=subprocess.PIPE, timeout=120)
    eq(p.returncode, 1, p.stderr)
    rc, doc = report(rep, "--source", "redis-7.0", "--target", "redis-7.0")
    eq(rc, 1, "a replayed command answered differently")
    ok("replay report" in doc["method"], doc["method"])
    everyone = {u["item"]: u for u in doc["overall"]}
    eq(everyone["set"]["verdict"], "differs")
    ok("1 of 2 replies differed" in everyone["set"]["detail"], everyone["set"]["detail"])
    eq(everyone["hset"]["verdict"], "ok", "HSET answered alike")
    eq(everyone["hexpire"]["verdict"], "missing", "the tables still judge what was used")
    bad = h.path("bad.json")
    with open(bad, "w") as f:
        f.write('{"commands": {"get": {"replies": 1}}, ')
    rc, _, err = clients(bad)
    eq(rc, 2, err)
    ok("bad.json: byte" in err, err)


if __name__ == "__main__":
    run_tests()
