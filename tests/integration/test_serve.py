#!/usr/bin/python3
"""`keyshift serve` as a drop-in server, driven by real clients: redis-cli, python3-redis,
redis-benchmark and raw sockets. Where a behaviour is the same on Debian's redis-server 7.0
(protocol errors, inline commands) the exact bytes are compared with it too.

Run: KEYSHIFT_BIN=build/keyshift /usr/bin/python3 tests/integration/test_serve.py [NAME...]
"""

import json
import os
import random
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import (HOST, REPO, ConnectionClosed, Err, Map, Skip, encode_command,  # noqa: E402
                     ensure_tools, eq, free_port, keyshift_bin, ok, redis_module, render,
                     run_tests, test)

OOM = b"-OOM command not allowed when used memory > 'maxmemory'.\r\n"
CLOSE_WAIT = 10.0  # upper bound for "the server closes this connection", never a timing check
POLL_BOUND = 10.0  # upper bound for polls waiting on expiry; a bound, never an assertion
SHARED = os.path.join(REPO, "..", "shared")


def default_server(h):
    """One shared keyshift for the tests that need no special configuration."""
    if not hasattr(h, "ks_default"):
        h.ks_default = h.keyshift("--unixsocketperm", "777", name="ks-default")
    return h.ks_default


def reference(h):
    if not hasattr(h, "redis_ref"):
        h.redis_ref = h.redis_server()
    return h.redis_ref


def crc64_jones(data, crc=0):
    """CRC-64/Jones as RDB and DUMP payloads use it (reflected, init 0, no final xor)."""
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x95AC9329AC4BC9B5 if crc & 1 else 0)
    return crc


def restamp(payload, version):
    """A DUMP payload with its 2-byte RDB version replaced and its CRC64 made right again."""
    body = payload[:-10] + bytes([version & 0xFF, (version >> 8) & 0xFF])
    return body + crc64_jones(body).to_bytes(8, "little")


def info_field(conn, section, field):
    raw, value = conn.command("INFO", section)
    ok(isinstance(value, bytes) and not isinstance(value, Err),
       "INFO %s did not return a bulk string: %s" % (section, render(value)))
    m = re.search(rb"^" + field.encode() + rb":(.*?)\r?$", value, re.M)
    ok(m is not None, "INFO %s has no %s field:\n%s" % (section, field, value[:800]))
    return m.group(1).decode()


def transcript(srv, payload, timeout=CLOSE_WAIT):
    """Sends `payload` in one write and returns (everything received, closed?)."""
    with srv.conn() as c:
        c.send(payload)
        return c.read_until_closed(timeout)


def replies(conn, n):
    return [conn.read_reply() for _ in range(n)]


# ---------------------------------------------------------------------------------------
# Clients.
# ---------------------------------------------------------------------------------------

@test
def redis_cli_pings_over_tcp_and_unix_socket(h):
    ensure_tools(("redis-cli",))
    srv = default_server(h)
    eq(srv.cli("ping"), "PONG", "redis-cli -p PORT ping")
    eq(srv.cli("ping", unix=True), "PONG", "redis-cli -s SOCK ping")
    eq(srv.cli("set", "cli:k", "hello world"), "OK", "redis-cli set")
    eq(srv.cli("get", "cli:k", unix=True), "hello world", "the value set over TCP, read over unix")


@test
def unixsocketperm_777_is_applied_to_the_socket_file(h):
    srv = default_server(h)
    st = os.stat(srv.unixsocket)
    ok(stat.S_ISSOCK(st.st_mode), "%s is not a socket" % srv.unixsocket)
    eq(oct(stat.S_IMODE(st.st_mode)), oct(0o777), "mode of the unix socket file")


@test
def unixsocketperm_700_is_applied_too(h):
    srv = h.keyshift("--unixsocketperm", "700", name="ks-perm700")
    eq(oct(stat.S_IMODE(os.stat(srv.unixsocket).st_mode)), oct(0o700), "mode of the socket")
    with srv.conn(unix=True) as c:
        eq(c.command("PING")[0], b"+PONG\r\n", "PING over the 0700 socket (as its owner)")


@test
def python_redis_sets_and_gets_over_tcp_and_unix(h):
    srv = default_server(h)
    r = srv.redis()
    eq(r.ping(), True, "PING")
    eq(r.set("py:k", "v1"), True, "SET")
    eq(r.get("py:k"), b"v1", "GET")
    eq(r.set("py:k", "v2", nx=True), None, "SET NX on an existing key")
    eq(r.set("py:k", b"\x00\xff bin\r\n", xx=True), True, "SET XX with binary value")
    u = srv.redis(unix=True)
    eq(u.get("py:k"), b"\x00\xff bin\r\n", "binary-safe GET over the unix socket")
    eq(u.get("py:missing"), None, "GET of a missing key")
    eq(r.incr("py:n", 5), 5, "INCRBY")
    eq(r.mget("py:k", "py:missing", "py:n"), [b"\x00\xff bin\r\n", None, b"5"], "MGET")
    r.close()
    u.close()


@test
def python_redis_pipeline_of_1000_commands(h):
    srv = default_server(h)
    r = srv.redis()
    p = r.pipeline(transaction=False)
    for i in range(400):
        p.set("pipe:%d" % i, "value-%d" % i)
    for i in range(400):
        p.get("pipe:%d" % i)
    for _ in range(200):
        p.incr("pipe:counter")
    res = p.execute()
    eq(len(res), 1000, "number of pipeline results")
    eq(res[:400], [True] * 400, "SET results")
    eq(res[400:800], [b"value-%d" % i for i in range(400)], "GET results in order")
    eq(res[800:], list(range(1, 201)), "INCR results in order")
    r.close()


@test
def resp3_hello_3_map_and_resp3_replies(h):
    srv = default_server(h)
    redis = redis_module()
    major = int(redis.__version__.split(".")[0])
    if major >= 5:
        # redis-py 5 speaks RESP3 itself.
        r = srv.redis(protocol=3)
        eq(r.set("r3:k", "v"), True, "SET over RESP3")
        eq(r.get("r3:k"), b"v", "GET over RESP3")
        eq(r.get("r3:missing"), None, "GET missing over RESP3")
        r.close()
    # Debian 12 ships redis-py 4.3.4 (no protocol=3): speak HELLO 3 over a raw socket; this
    # part runs with either version so the exact bytes are always checked.
    with srv.conn() as c:
        raw, hello = c.command("HELLO", "3")
        ok(raw.startswith(b"%7\r\n"), "HELLO 3 is a RESP3 map of 7 fields: %r" % raw)
        ok(isinstance(hello, Map), "HELLO 3 reply type: %s" % render(hello))
        fields = dict(hello)
        eq(fields.get(b"server"), b"valkey", "HELLO server")
        ok(fields.get(b"version", b"").startswith(b"8."), "HELLO version: %r" % fields)
        eq(fields.get(b"proto"), 3, "HELLO proto")
        eq(fields.get(b"mode"), b"standalone", "HELLO mode")
        eq(fields.get(b"role"), b"master", "HELLO role")
        eq(fields.get(b"modules"), [], "HELLO modules")
        ok(isinstance(fields.get(b"id"), int), "HELLO id is an integer")
        eq([k for k, _ in hello],
           [b"server", b"version", b"proto", b"id", b"mode", b"role", b"modules"],
           "HELLO field order")
        eq(c.command("GET", "r3:missing")[0], b"_\r\n", "RESP3 null for a missing key")
        eq(c.command("SET", "r3:k2", "x")[0], b"+OK\r\n", "SET under RESP3")
        eq(c.command("HELLO", "2")[0][:4], b"*14\r", "HELLO 2 switches back (flat array)")
        eq(c.command("GET", "r3:missing")[0], b"$-1\r\n", "RESP2 null bulk again")
        eq(c.command("HELLO", "4")[0], b"-NOPROTO unsupported protocol version\r\n",
           "HELLO 4")


# ---------------------------------------------------------------------------------------
# Raw protocol: inline commands, pipelining, protocol errors (same bytes as redis-server).
# ---------------------------------------------------------------------------------------

def same_as_reference(h, payload, expected, closes, what):
    """keyshift answers `payload` with exactly `expected` (and closes or not), and so does
    redis-server 7.0."""
    ks = default_server(h)
    ref = reference(h)
    timeout = CLOSE_WAIT if closes else 1.0  # 1 s: "nothing more arrives" for kept-open
    got, closed = transcript(ks, payload, timeout)
    want, ref_closed = transcript(ref, payload, timeout)
    eq(want, expected, "redis-server 7.0 reply to %s (reference sanity)" % what)
    eq(got, expected, "keyshift reply to %s" % what)
    eq(closed, closes, "keyshift closed the connection after %s" % what)
    eq(ref_closed, closes, "redis-server closed the connection after %s" % what)


@test
def inline_commands_over_a_raw_socket(h):
    srv = default_server(h)
    with srv.conn() as c:
        c.send(b"PING\r\n")
        eq(c.read_reply()[0], b"+PONG\r\n", "inline PING")
        c.send(b"PING\n")
        eq(c.read_reply()[0], b"+PONG\r\n", "inline PING terminated by a bare LF")
        c.send(b"SET \"in line\" 'quoted value'\r\n")
        eq(c.read_reply()[0], b"+OK\r\n", "inline SET with quoted args")
        c.send(b"GET \"in line\"\r\n")
        eq(c.read_reply()[0], b"$12\r\nquoted value\r\n", "inline GET with a quoted key")
        c.send(b"ECHO \"\\x41\\tB\\n\"\r\n")
        eq(c.read_reply()[0], b"$4\r\nA\tB\n\r\n", "escapes in a double-quoted inline arg")
        c.send(b"ECHO 'it\\'s'\r\n")
        eq(c.read_reply()[0], b"$4\r\nit's\r\n", "escaped quote in a single-quoted arg")
        c.send(b"\r\n   \r\nPING after-blank-lines\r\n")
        eq(c.read_reply()[0], b"$17\r\nafter-blank-lines\r\n",
           "blank inline lines produce no reply")


@test
def inline_and_multibulk_match_redis_server_byte_for_byte(h):
    payload = (b"PING\r\nECHO \"a b\" \r\n*2\r\n$4\r\nECHO\r\n$3\r\nx y\r\n"
               b"*0\r\n*-1\r\n  \r\nSET  'k 1'   \"v\\x00\"\r\nGET 'k 1'\r\nDEL 'k 1'\r\n")
    expected = (b"+PONG\r\n$3\r\na b\r\n$3\r\nx y\r\n+OK\r\n$2\r\nv\x00\r\n:1\r\n")
    same_as_reference(h, payload, expected, False, "a mixed inline/multibulk pipeline")


@test
def many_commands_pipelined_in_one_write(h):
    srv = default_server(h)
    n = 1000
    parts = []
    for i in range(n):
        parts.append(encode_command(["SET", "mp:%d" % i, "v%d" % i]))
        parts.append(encode_command(["GET", "mp:%d" % i]))
        parts.append(encode_command(["INCR", "mp:counter"]))
    parts.append(b"PING\r\n")  # an inline command at the end of the same write
    with srv.conn() as c:
        c.send(b"".join(parts))
        got = replies(c, 3 * n + 1)
    eq([r for r, _ in got[0:3 * n:3]], [b"+OK\r\n"] * n, "SET replies")
    eq([v for _, v in got[1:3 * n:3]], [b"v%d" % i for i in range(n)], "GET replies in order")
    eq([v for _, v in got[2:3 * n:3]], list(range(1, n + 1)), "INCR replies in order")
    eq(got[-1][0], b"+PONG\r\n", "trailing inline PING")


@test
def protocol_error_expected_dollar_closes_the_connection(h):
    same_as_reference(h, b"*1\r\nx\r\n", b"-ERR Protocol error: expected '$', got 'x'\r\n",
                      True, "*1 followed by a non-bulk line")


@test
def protocol_error_bad_bulk_length_closes_the_connection(h):
    # `*1\r\n$x\r\n`: the '$' is there, the length is not a number.
    same_as_reference(h, b"*1\r\n$x\r\n", b"-ERR Protocol error: invalid bulk length\r\n",
                      True, "a non-numeric bulk length")
    same_as_reference(h, b"*1\r\n$-5\r\n", b"-ERR Protocol error: invalid bulk length\r\n",
                      True, "a negative bulk length")


@test
def protocol_error_invalid_multibulk_length(h):
    for header in (b"*abc\r\n", b"*3000000000\r\n", b"*1x\r\n"):
        same_as_reference(h, header, b"-ERR Protocol error: invalid multibulk length\r\n",
                          True, repr(header))


@test
def protocol_error_replies_to_earlier_pipelined_commands_first(h):
    same_as_reference(h, b"PING\r\nECHO hi\r\n*1\r\nx\r\nPING\r\n",
                      b"+PONG\r\n$2\r\nhi\r\n-ERR Protocol error: expected '$', got 'x'\r\n",
                      True, "commands before a protocol error")


@test
def protocol_error_unbalanced_quotes_in_inline_request(h):
    err = b"-ERR Protocol error: unbalanced quotes in request\r\n"
    same_as_reference(h, b"SET \"abc 1\r\n", err, True, "an unterminated double quote")
    same_as_reference(h, b"SET 'a'b 1\r\n", err, True, "a closing quote followed by a letter")


@test
def protocol_error_too_big_inline_request(h):
    same_as_reference(h, b"A" * (70 * 1024),
                      b"-ERR Protocol error: too big inline request\r\n", True,
                      "70 KiB without a newline")


@test
def proto_max_bulk_len_rejects_a_bigger_bulk(h):
    srv = h.keyshift("--proto-max-bulk-len", "1mb", name="ks-bulklen")
    limit = 1024 * 1024
    with srv.conn() as c:
        # Exactly the limit is allowed.
        raw, _ = c.command("SET", "big", b"x" * limit)
        eq(raw, b"+OK\r\n", "SET of a value of exactly proto-max-bulk-len")
        eq(c.command("STRLEN", "big")[0], b":%d\r\n" % limit, "STRLEN of that value")
    with srv.conn() as c:
        c.send(b"*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n$%d\r\n" % (limit + 1))
        data, closed = c.read_until_closed(CLOSE_WAIT)
    eq(data, b"-ERR Protocol error: invalid bulk length\r\n", "reply to a bulk over the limit")
    eq(closed, True, "connection closed after the protocol error")
    with srv.conn() as c:
        eq(c.command("PING")[0], b"+PONG\r\n", "server still serves other clients")


@test
def client_query_buffer_limit_closes_the_client(h):
    srv = h.keyshift("--client-query-buffer-limit", "1mb", name="ks-qbuf")
    with srv.conn() as c:
        eq(c.command("PING")[0], b"+PONG\r\n", "PING before")
        # A 4 MiB bulk (allowed by proto-max-bulk-len) of which 2 MiB are sent: the query
        # buffer passes 1 MiB with the request still incomplete.
        c.send(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$%d\r\n" % (4 << 20))
        try:
            c.send(b"x" * (2 << 20))
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server may close while we are still writing
        data, closed = c.read_until_closed(CLOSE_WAIT)
    eq(closed, True, "connection closed once the query buffer exceeded 1mb")
    eq(data, b"", "nothing is replied before closing")
    with srv.conn() as c:
        eq(c.command("PING")[0], b"+PONG\r\n", "server still serves other clients")
        eq(c.command("EXISTS", "k")[0], b":0\r\n", "the incomplete SET did not happen")


# ---------------------------------------------------------------------------------------
# Server settings.
# ---------------------------------------------------------------------------------------

@test
def requirepass_and_auth(h):
    srv = h.keyshift("--requirepass", "s3cret pass", name="ks-auth")
    with srv.conn() as c:
        eq(c.command("GET", "k")[0], b"-NOAUTH Authentication required.\r\n", "before AUTH")
        eq(c.command("PING")[0], b"-NOAUTH Authentication required.\r\n", "PING before AUTH")
        eq(c.command("AUTH", "wrong")[0],
           b"-WRONGPASS invalid username-password pair or user is disabled.\r\n",
           "AUTH with a bad password")
        eq(c.command("AUTH", "default", "wrong")[0],
           b"-WRONGPASS invalid username-password pair or user is disabled.\r\n",
           "AUTH default with a bad password")
        eq(c.command("GET", "k")[0], b"-NOAUTH Authentication required.\r\n",
           "still refused after a failed AUTH")
        eq(c.command("AUTH", "s3cret pass")[0], b"+OK\r\n", "AUTH with the password")
        eq(c.command("SET", "k", "v")[0], b"+OK\r\n", "SET after AUTH")
        eq(c.command("GET", "k")[0], b"$1\r\nv\r\n", "GET after AUTH")
    with srv.conn() as c:
        eq(c.command("AUTH", "default", "s3cret pass")[0], b"+OK\r\n", "AUTH default <pass>")
        eq(c.command("GET", "k")[0], b"$1\r\nv\r\n", "GET after AUTH default")
    srv.password = "s3cret pass"
    eq(srv.cli("get", "k"), "v", "redis-cli -a")
    r = srv.redis()
    eq(r.get("k"), b"v", "python3-redis with password=")
    r.close()


@test
def unauthenticated_clients_cannot_send_big_requests(h):
    # Valkey's limits before AUTH: at most 10 arguments, bulks of at most 16 KiB; the
    # same bytes as redis-server 7.0 started with the same requirepass.
    ks = h.keyshift("--requirepass", "pw", name="ks-auth-limits")
    ref = h.redis_server("--requirepass", "pw", name="redis-auth-limits")
    cases = [
        (b"*20\r\n", b"-ERR Protocol error: unauthenticated multibulk length\r\n"),
        (b"*2\r\n$4\r\nECHO\r\n$20000\r\n",
         b"-ERR Protocol error: unauthenticated bulk length\r\n"),
    ]
    for payload, expected in cases:
        want, ref_closed = transcript(ref, payload)
        eq((want, ref_closed), (expected, True), "redis-server 7.0 to %r" % payload)
        got, closed = transcript(ks, payload)
        eq((got, closed), (expected, True), "keyshift to %r before AUTH" % payload)
    with ks.conn() as c:
        eq(c.command("AUTH", "pw")[0], b"+OK\r\n", "AUTH")
        args = ["ECHO", "x" * 20000]
        eq(c.command(*args)[0], b"$20000\r\n" + b"x" * 20000 + b"\r\n",
           "a 20000-byte bulk after AUTH")
        eq(c.command("MSET", *(["k"] * 20))[0], b"+OK\r\n", "21 arguments after AUTH")


@test
def idle_clients_are_disconnected_with_timeout_1(h):
    srv = h.keyshift("--timeout", "1", name="ks-timeout")
    with srv.conn() as c:
        eq(c.command("PING")[0], b"+PONG\r\n", "PING on the fresh connection")
        # Behaviour check, not a timing assertion: the bound is generous.
        data, closed = c.read_until_closed(CLOSE_WAIT)
    eq(closed, True, "an idle client is closed by the server with timeout 1")
    eq(data, b"", "nothing is sent before closing")
    with srv.conn() as c:
        eq(c.command("PING")[0], b"+PONG\r\n", "new clients are still accepted")


def accepted_client(srv, bound=CLOSE_WAIT):
    """A connection the server accepted (retries while an earlier client's close may still
    be on its way to the server; `bound` seconds is an upper bound, never a timing check)."""
    last = None
    attempts = 0
    deadline = time.monotonic() + bound
    while True:
        attempts += 1
        c = srv.conn()
        try:
            raw, _ = c.command("PING")
        except ConnectionClosed:
            raw = b"(closed)"
        if raw == b"+PONG\r\n":
            return c
        last = raw
        c.close()
        if time.monotonic() > deadline:
            raise AssertionError("no accepted connection after %d attempts: %r"
                                 % (attempts, last))
        time.sleep(0.01)  # let the server's event loop see the earlier close


@test
def maxclients_2_refuses_the_third_client(h):
    srv = h.keyshift("--maxclients", "2", name="ks-maxclients")
    c1 = accepted_client(srv)
    c2 = accepted_client(srv)
    try:
        with srv.conn() as c3:
            data, closed = c3.read_until_closed(CLOSE_WAIT)
        eq(data, b"-ERR max number of clients reached\r\n", "the third connection is told")
        eq(closed, True, "and closed")
        eq(c1.command("PING")[0], b"+PONG\r\n", "the first client still works")
        eq(c2.command("PING")[0], b"+PONG\r\n", "the second client still works")
    finally:
        c1.close()
        c2.close()
    c4 = accepted_client(srv)  # a slot is free again once a client left
    eq(c4.command("ECHO", "back")[0], b"$4\r\nback\r\n", "a client after others left")
    c4.close()


def wordops_config(workdir):
    return ("# The settings WordOps writes for its Redis/Valkey cache\n"
            "unixsocket %s/valkey.sock\n"
            "unixsocketperm 777\n"
            "maxmemory 2gb\n"
            "maxmemory-policy allkeys-lru\n") % workdir


@test
def wordops_config_file_starts_and_config_get_shows_it(h):
    srv = h.keyshift(config=wordops_config, unixsocket=False, name="ks-wordops")
    srv.unixsocket = os.path.join(srv.workdir, "valkey.sock")
    st = os.stat(srv.unixsocket)
    ok(stat.S_ISSOCK(st.st_mode), "the unix socket from the config file exists")
    eq(oct(stat.S_IMODE(st.st_mode)), oct(0o777), "its mode")
    eq(srv.cli("ping", unix=True), "PONG", "redis-cli -s on the configured socket")
    with srv.conn(unix=True) as c:
        for name, value in (("maxmemory", b"2147483648"),
                            ("maxmemory-policy", b"allkeys-lru"),
                            ("unixsocket", srv.unixsocket.encode()),
                            ("unixsocketperm", b"777")):
            raw, v = c.command("CONFIG", "GET", name)
            eq(render(v), render([name.encode(), value]), "CONFIG GET %s" % name)


def thp_mode():
    try:
        with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
            m = re.search(r"\[(\w+)\]", f.read())
            return m.group(1) if m else None
    except OSError:
        return None


@test
def the_keyspace_heap_follows_huge_page_heap_and_the_kernels_thp_mode(h):
    mode = thp_mode()
    srv = h.keyshift(name="ks-heap-default")
    log = srv.log()
    if "built without mimalloc" in log:
        raise Skip("this keyshift has no mimalloc heap (sanitizer builds leave it out)")
    with srv.conn() as c:
        eq(render(c.command("CONFIG", "GET", "huge-page-heap")[1]),
           render([b"huge-page-heap", b"yes"]), "CONFIG GET huge-page-heap")
    if mode == "madvise":
        ok("keyspace heap on transparent huge pages" in log,
           "THP in madvise mode: the heap takes huge pages; log:\n" + log[-2000:])
    elif mode == "always":
        ok("transparent huge pages disabled for this process (disable-thp)" in log,
           "THP always + disable-thp yes: turned off as Valkey does; log:\n" + log[-2000:])
    else:
        ok("the kernel offers no transparent huge pages" in log, "log:\n" + log[-2000:])
    off = h.keyshift("--huge-page-heap", "no", "--disable-thp", "no", name="ks-heap-off")
    ok("huge-page heap off (huge-page-heap no)" in off.log(), "log:\n" + off.log()[-2000:])
    eq(off.cli("ping"), "PONG", "the server without it serves")


@test
def unknown_directive_in_a_config_file_fails_naming_file_and_line(h):
    path = h.path("bad.conf")
    with open(path, "w") as f:
        f.write("# a comment\nmaxmemory 100mb\nno-such-directive yes\n")
    p = subprocess.run([keyshift_bin(), "serve", path, "--port", "0"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=30)
    out = p.stdout.decode("utf-8", "replace")
    ok(p.returncode != 0, "serve with an unknown directive exited %d:\n%s" % (p.returncode, out))
    ok(path in out, "the message names the file %s:\n%s" % (path, out))
    ok(re.search(r"\bline 3\b", out) is not None, "the message names line 3:\n%s" % out)
    ok("no-such-directive" in out, "the message quotes the line:\n%s" % out)
    ok("Bad directive or wrong number of arguments" in out, "Valkey's wording:\n%s" % out)


@test
def test_config_checks_a_file_without_serving(h):
    good = h.path("good.conf")
    port = free_port()
    with open(good, "w") as f:
        f.write("port %d\nbind 127.0.0.1\nmaxmemory 2gb\nmaxmemory-policy allkeys-lru\n" % port)
    p = subprocess.run([keyshift_bin(), "serve", "--test-config", good],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=30)
    out = p.stdout.decode("utf-8", "replace")
    eq(p.returncode, 0, "--test-config on a good file; output:\n%s" % out)
    with socket.socket() as s:
        refused = s.connect_ex((HOST, port)) != 0
    ok(refused, "--test-config must not listen on the configured port")
    bad = h.path("bad2.conf")
    with open(bad, "w") as f:
        f.write("maxmemory lots\n")
    p = subprocess.run([keyshift_bin(), "serve", "--test-config", bad],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=30)
    out = p.stdout.decode("utf-8", "replace")
    ok(p.returncode != 0, "--test-config on a bad value exited 0:\n%s" % out)
    ok(bad in out and re.search(r"\bline 1\b", out), "names file and line:\n%s" % out)


@test
def sigterm_stops_the_server_with_exit_code_0(h):
    srv = h.keyshift(name="ks-sigterm")
    c = srv.conn()
    eq(c.command("SET", "k", "v")[0], b"+OK\r\n", "server in use before SIGTERM")
    rc = srv.stop(signal.SIGTERM)
    h.forget(srv)
    eq(rc, 0, "exit status after SIGTERM; log:\n%s" % srv.log()[-2000:])
    ok(not os.path.exists(srv.unixsocket), "the unix socket file is removed on shutdown")
    data, closed = c.read_until_closed(CLOSE_WAIT)
    eq(closed, True, "clients are disconnected")
    c.close()


BENCH_TESTS = ("PING_INLINE", "PING_MBULK", "SET", "GET", "INCR")


def run_benchmark(srv, unix):
    ensure_tools(("redis-benchmark",))
    where = ["-s", srv.unixsocket] if unix else ["-h", HOST, "-p", str(srv.port)]
    p = subprocess.run(["redis-benchmark"] + where + ["-q", "-t", "set,get,incr,ping",
                                                      "-n", "20000"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
    out = p.stdout.decode("utf-8", "replace")
    eq(p.returncode, 0, "redis-benchmark exit status; output:\n%s" % out)
    rates = {}
    for line in re.split(r"[\r\n]+", out):
        m = re.match(r"^(\S+): ([0-9.]+) requests per second", line.strip())
        if m:
            rates[m.group(1)] = float(m.group(2))
    eq(sorted(rates), sorted(BENCH_TESTS), "benchmarks reported; output:\n%s" % out)
    for name in BENCH_TESTS:
        ok(rates.get(name, 0) > 0, "%s rate is not positive: %s" % (name, rates))
    return rates


@test
def redis_benchmark_over_tcp(h):
    srv = h.keyshift(name="ks-bench-tcp")
    run_benchmark(srv, unix=False)
    with srv.conn() as c:
        ok(c.command("GET", "key:__rand_int__")[0].startswith(b"$3\r\n"),
           "the benchmark's 3-byte SET value is stored")


@test
def redis_benchmark_over_the_unix_socket(h):
    srv = h.keyshift(name="ks-bench-unix")
    run_benchmark(srv, unix=True)
    with srv.conn(unix=True) as c:
        eq(c.command("GET", "counter:__rand_int__")[0], b"$5\r\n20000\r\n",
           "INCR ran 20000 times on one counter")


# ---------------------------------------------------------------------------------------
# Expiry and memory.
# ---------------------------------------------------------------------------------------

@test
def px_100_expires_and_is_never_returned_afterwards(h):
    srv = default_server(h)
    with srv.conn() as c:
        eq(c.command("SET", "exp:k", "v", "PX", "100")[0], b"+OK\r\n", "SET PX 100")
        pttl = c.call("PTTL", "exp:k")
        ok(isinstance(pttl, int) and (pttl == -2 or 0 <= pttl <= 100),
           "PTTL right after SET PX 100: %s" % render(pttl))
        gone = False
        deadline = time.monotonic() + POLL_BOUND  # a bound on the poll, not a timing check
        while not gone and time.monotonic() < deadline:
            v = c.call("GET", "exp:k")
            if v is None:
                gone = True
                break
            eq(v, b"v", "value while not yet expired")
            if c.call("PTTL", "exp:k") in (-1,):
                raise AssertionError("the key lost its TTL")
        ok(gone, "SET PX 100 key still readable after %ss of polling" % POLL_BOUND)
        for _ in range(200):
            eq(c.command("GET", "exp:k")[0], b"$-1\r\n", "GET after expiry")
        eq(c.command("EXISTS", "exp:k")[0], b":0\r\n", "EXISTS after expiry")
        eq(c.command("PTTL", "exp:k")[0], b":-2\r\n", "PTTL after expiry")
        eq(c.command("SET", "exp:k", "new", "NX")[0], b"+OK\r\n", "SET NX succeeds afterwards")
        eq(c.command("PTTL", "exp:k")[0], b":-1\r\n", "the new key has no TTL")


@test
def active_expiry_removes_keys_nobody_reads(h):
    srv = h.keyshift(name="ks-active-expire")
    with srv.conn() as c:
        c.send(b"".join(encode_command(["SET", "ae:%d" % i, "v", "PX", "50"])
                        for i in range(200)))
        eq({r for r, _ in replies(c, 200)}, {b"+OK\r\n"}, "200 SET PX 50")
        c.send(encode_command(["SET", "ae:keep", "v"]))
        eq(c.read_reply()[0], b"+OK\r\n", "one persistent key")
        # DBSIZE counts keys that expired but were not reclaimed yet, so reaching 1 without
        # touching them shows the active expire cycle ran. Bounded poll.
        size = None
        deadline = time.monotonic() + POLL_BOUND
        with srv.conn() as probe:
            while time.monotonic() < deadline:
                size = probe.call("DBSIZE")
                if size == 1:
                    break
                try:
                    srv.proc.wait(timeout=0.01)  # pace the polling; returns early if it dies
                except subprocess.TimeoutExpired:
                    pass
        eq(size, 1, "DBSIZE once the volatile keys expired")


def key_move_stream(rng, n):
    """n random string, key and expiry commands (valid and invalid) that move volatile keys
    between names and databases and replace their values, as the MONITOR log in
    ../shared/repro did when it crashed the active expire cycle."""
    def key():
        return "k:%d" % rng.randrange(40)

    def value():
        return "v" * rng.choice((1, 8, 40, 120, 400))

    makers = [
        lambda: ["SET", key(), value(), "PX", str(rng.randrange(1, 300))],
        lambda: ["SET", key(), value(), "KEEPTTL"],
        lambda: ["SET", key(), value(), rng.choice(["EX", "PXAT"]), str(rng.randrange(-5, 3))],
        lambda: ["GETEX", key(), rng.choice(["PX", "PERSIST", "EX"]), str(rng.randrange(1, 9))],
        lambda: ["PEXPIRE", key(), str(rng.randrange(1, 300)), rng.choice(["NX", "XX", "GT"])],
        lambda: ["PERSIST", key()],
        lambda: ["MOVE", key(), str(rng.randrange(3))],
        lambda: ["SWAPDB", str(rng.randrange(3)), str(rng.randrange(3))],
        lambda: ["RENAME", key(), key()],
        lambda: ["COPY", key(), key(), "DB", str(rng.randrange(3)), "REPLACE"],
        lambda: ["SELECT", str(rng.randrange(3))],
        lambda: ["SORT", key(), "ALPHA"],
        lambda: ["OBJECT", "ENCODING", key()],
        lambda: ["APPEND", key(), value()],
        lambda: ["FLUSHDB"] if rng.randrange(30) == 0 else ["DEL", key()],
    ]
    return [rng.choice(makers)() for _ in range(n)]


@test
def random_key_moves_against_active_expiry_leave_the_server_alive(h):
    # Regression: a value replaced by one that did not fit in place lost its TTL-index slot,
    # and the active expire cycle followed a dangling pointer (SIGSEGV). hz 100 runs the
    # cycle often; RESTORE REPLACE and DEBUG-free commands only, as a client would send.
    srv = h.keyshift("--hz", "100", "--save", "", name="ks-expire-moves")
    rng = random.Random(11)
    sent = 0
    with srv.conn() as c:
        for _ in range(20):
            batch = key_move_stream(rng, 400)
            dump_key = "k:%d" % rng.randrange(40)
            c.send(encode_command(["DUMP", dump_key]))
            payload = c.read_reply()[1]
            if isinstance(payload, bytes) and not isinstance(payload, Err):
                batch.append(["RESTORE", dump_key, "50", payload, "REPLACE"])
            c.send(b"".join(encode_command(a) for a in batch))
            replies(c, len(batch))
            sent += len(batch)
            # Let some of the short TTLs pass so the cycle finds expired keys to reclaim.
            try:
                srv.proc.wait(timeout=0.05)
            except subprocess.TimeoutExpired:
                pass
        eq(c.call("PING"), b"PONG", "PING after %d commands" % sent)
    repro = os.path.join(SHARED, "repro", "serve-crash-active-expire.monitor.log")
    if os.path.exists(repro):
        replay = os.path.join(SHARED, "repro", "replay_monitor.py")
        out = subprocess.run(["/usr/bin/python3", replay, repro, str(srv.port)],
                             capture_output=True, text=True, timeout=300)
        eq(out.returncode, 0, "the shared repro log: " + out.stdout + out.stderr)
    ok(srv.proc.poll() is None, "keyshift is still running")


def fill(c, prefix, n, value, batch=1000):
    """SETs n keys in pipelined batches; returns the raw replies."""
    out = []
    for start in range(0, n, batch):
        end = min(n, start + batch)
        c.send(b"".join(encode_command(["SET", "%s%d" % (prefix, i), value])
                        for i in range(start, end)))
        out += [r for r, _ in replies(c, end - start)]
    return out


@test
def maxmemory_allkeys_lru_evicts_and_keeps_dbsize_bounded(h):
    srv = h.keyshift(config="maxmemory 2mb\nmaxmemory-policy allkeys-lru\n", name="ks-lru")
    value = "v" * 100
    with srv.conn() as c:
        res = fill(c, "lru:", 50000, value)
        eq(set(res), {b"+OK\r\n"}, "every write succeeds under allkeys-lru")
        size = c.call("DBSIZE")
        ok(isinstance(size, int) and 0 < size < 50000, "DBSIZE after 50k writes: %r" % size)
        # Each key holds at least its 100-byte value, so 2mb cannot hold more than this.
        ok(size <= (2 << 20) // 100, "DBSIZE %d exceeds what 2mb can hold" % size)
        eq(c.command("GET", "lru:49999")[0], b"$100\r\n" + value.encode() + b"\r\n",
           "the most recent key survives")
        evicted = int(info_field(c, "stats", "evicted_keys"))
        ok(evicted > 0, "INFO stats evicted_keys = %d" % evicted)
        eq(evicted + size, 50000, "evicted_keys + DBSIZE accounts for every key written")
        used = int(info_field(c, "memory", "used_memory"))
        ok(used <= (2 << 20) * 1.1, "used_memory %d stays near maxmemory 2mb" % used)


@test
def maxmemory_noeviction_refuses_writes_and_serves_reads(h):
    srv = h.keyshift(config="maxmemory 2mb\nmaxmemory-policy noeviction\n", name="ks-noevict")
    value = "v" * 100
    with srv.conn() as c:
        res = fill(c, "ne:", 50000, value)
        errors = [r for r in res if r != b"+OK\r\n"]
        ok(errors, "50k writes of 100 bytes never hit maxmemory 2mb")
        eq(set(errors), {OOM}, "the only error is Valkey's OOM text")
        first_oom = res.index(OOM)
        ok(first_oom > 0, "some writes succeed before the limit")
        eq(c.command("SET", "ne:another", "x")[0], OOM, "SET while over the limit")
        eq(c.command("APPEND", "ne:0", "x")[0], OOM, "APPEND while over the limit")
        eq(c.command("GET", "ne:0")[0], b"$100\r\n" + value.encode() + b"\r\n",
           "GET still works")
        eq(c.command("EXISTS", "ne:0")[0], b":1\r\n", "EXISTS still works")
        eq(c.command("DBSIZE")[0], b":%d\r\n" % first_oom, "DBSIZE counts the stored keys")
        eq(c.command("PING")[0], b"+PONG\r\n", "PING still works")
        # Freeing memory makes writes possible again (DEL is not a deny-oom command).
        c.send(b"".join(encode_command(["DEL", "ne:%d" % i]) for i in range(first_oom)))
        eq({r for r, _ in replies(c, first_oom)}, {b":1\r\n"}, "DEL works over the limit")
        eq(c.command("SET", "ne:after", "x")[0], b"+OK\r\n", "SET works after freeing memory")


# ---------------------------------------------------------------------------------------
# Loading dir/dbfilename at start.
# ---------------------------------------------------------------------------------------

CORPUS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "shared",
                      "corpus", "rdb")


def corpus_file(name):
    path = os.path.join(CORPUS, name)
    if not os.path.exists(path):
        raise Skip("no RDB corpus at %s" % CORPUS)
    return path


@test
def serve_loads_dump_rdb_from_dir_with_valkeys_digest(h):
    src = corpus_file("valkey8-hashes.rdb")
    with open(src + ".json") as f:
        truth = json.load(f)["servers"]["valkey-8.0.1"]
    d = h.path("rdb-dir")
    os.makedirs(d, exist_ok=True)
    shutil.copy(src, os.path.join(d, "data.rdb"))
    srv = h.keyshift("--dir", d, "--dbfilename", "data.rdb", "--enable-debug-command", "yes",
                     name="ks-load")
    with srv.conn() as c:
        eq(c.command("DBSIZE")[1], truth["total_keys"], "DBSIZE after loading")
        eq(c.command("DEBUG", "DIGEST")[1].decode(), truth["digest"], "DEBUG DIGEST")


@test
def serve_refuses_to_start_on_a_corrupt_dump_naming_file_and_offset(h):
    d = h.path("bad-rdb-dir")
    os.makedirs(d, exist_ok=True)
    shutil.copy(corpus_file("redis-assets--corrupt_ziplist.rdb"), os.path.join(d, "dump.rdb"))
    p = subprocess.run([keyshift_bin(), "serve", "--port", str(free_port()), "--bind", HOST,
                        "--dir", d], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       timeout=30)
    out = p.stdout.decode("utf-8", "replace")
    eq(p.returncode, 1, "serve on a corrupt dump.rdb; output:\n%s" % out)
    ok(os.path.join(d, "dump.rdb") in out, "the message names the file:\n%s" % out)
    ok(re.search(r"error at byte \d+: .*ziplist", out) is not None,
       "the message gives the offset and what is wrong:\n%s" % out)


@test
def dump_payloads_from_redis_server_7_restore_into_keyshift_with_equal_digests(h):
    ref = reference(h)
    srv = h.keyshift("--enable-debug-command", "yes", name="ks-restore")
    setup = [
        ("SET", "s", "hello"), ("SET", "n", "12345"), ("SET", "big", "x" * 5000),
        ("RPUSH", "l", "a", "1", "b"), ("SADD", "si", "1", "2", "3"),
        ("SADD", "ss", "a", "b"), ("ZADD", "z", "1.5", "a", "-inf", "b"),
        ("HSET", "h", "f", "v", "g", "2"),
    ]
    big_hash = ["HSET", "hh"]
    for i in range(600):
        big_hash += ["f%d" % i, "v%d" % i]
    setup.append(tuple(big_hash))
    with ref.conn() as r, srv.conn() as k:
        for cmd in setup:
            r.command(*cmd)
        for key in ["s", "n", "big", "l", "si", "ss", "z", "h", "hh"]:
            payload = r.command("DUMP", key)[1]
            eq(payload[-10:-8], b"\x0a\x00", "redis-server 7.0 stamps RDB 10 on %s" % key)
            eq(k.command("RESTORE", key, "0", payload)[0], b"+OK\r\n", "RESTORE %s" % key)
            eq(k.command("DEBUG", "DIGEST-VALUE", key)[1],
               r.command("DEBUG", "DIGEST-VALUE", key)[1], "digest of %s" % key)
            # The same value bytes as Redis 7.4 (12), Valkey 9.0 (80) and 9.2 (81) would
            # stamp them: these types mean the same there, so the value is the same.
            for version in (12, 80, 81):
                copy = "%s:%d" % (key, version)
                eq(k.command("RESTORE", copy, "0", restamp(payload, version))[0], b"+OK\r\n",
                   "RESTORE %s as RDB %d" % (key, version))
                eq(k.command("DEBUG", "DIGEST-VALUE", copy)[1],
                   r.command("DEBUG", "DIGEST-VALUE", key)[1], "digest of %s" % copy)
                eq(k.command("DEL", copy)[1], 1, "DEL %s" % copy)
            # Versions keyshift does not read: Valkey's reply, as redis-server 7.0 gives it for
            # a version newer than its own.
            for version in (13, 79, 82):
                want = r.command("RESTORE", key + ":x", "0", restamp(payload, version))[0]
                eq(want, b"-ERR DUMP payload version or checksum are wrong\r\n",
                   "redis-server 7.0 on RDB %d" % version)
                eq(k.command("RESTORE", key + ":x", "0", restamp(payload, version))[0], want,
                   "RESTORE %s as RDB %d" % (key, version))
        eq(k.command("DEBUG", "DIGEST")[1], r.command("DEBUG", "DIGEST")[1], "dataset digest")


@test
def stream_dump_payloads_from_redis_server_7_restore_with_equal_digests_and_xinfo(h):
    ref = reference(h)
    srv = h.keyshift("--enable-debug-command", "yes", name="ks-restore-streams")
    with ref.conn() as r, srv.conn() as k:
        # A multi-node stream with deletions, and one with groups, pending entries, an idle
        # consumer, a NOACK read and XSETID metadata.
        r.command("CONFIG", "SET", "stream-node-max-entries", "10")
        for i in range(1, 96):
            r.command("XADD", "multi", "%d-1" % i, "f", "v%d" % i, "n", str(i))
        r.command("XADD", "multi", "96-0", "other", "fields")
        r.command("XDEL", "multi", "3-1", "11-1", "12-1", "13-1", "14-1", "15-1", "16-1",
                  "17-1", "18-1", "19-1", "20-1", "50-1")
        for i in range(1, 21):
            r.command("XADD", "grp", "%d" % i, "k", "v%d" % i)
        r.command("XGROUP", "CREATE", "grp", "workers", "0")
        r.command("XGROUP", "CREATE", "grp", "late", "$")
        r.command("XREADGROUP", "GROUP", "workers", "alice", "COUNT", "3", "STREAMS", "grp", ">")
        r.command("XREADGROUP", "GROUP", "workers", "bob", "COUNT", "4", "STREAMS", "grp", ">")
        r.command("XACK", "grp", "workers", "2")
        r.command("XCLAIM", "grp", "workers", "bob", "0", "1")
        r.command("XGROUP", "CREATECONSUMER", "grp", "workers", "idle")
        r.command("XREADGROUP", "GROUP", "late", "c", "NOACK", "STREAMS", "grp", ">")
        r.command("XADD", "setid", "5", "f", "v")
        r.command("XSETID", "setid", "9", "ENTRIESADDED", "40", "MAXDELETEDID", "7")
        r.command("XADD", "empty", "1", "f", "v")
        r.command("XDEL", "empty", "1")
        for key in ["multi", "grp", "setid", "empty"]:
            payload = r.command("DUMP", key)[1]
            eq(k.command("RESTORE", key, "0", payload)[0], b"+OK\r\n", "RESTORE %s" % key)
            want = r.command("DEBUG", "DIGEST-VALUE", key)[1]
            eq(k.command("DEBUG", "DIGEST-VALUE", key)[1], want, "digest of %s" % key)
            for sub in (("STREAM", key), ("GROUPS", key)):
                eq(k.command("XINFO", *sub)[0], r.command("XINFO", *sub)[0],
                   "XINFO %s %s" % sub)
            eq(k.command("XPENDING", key, "workers")[0], r.command("XPENDING", key, "workers")[0],
               "XPENDING %s" % key)
            # keyshift's own payload (RDB 11, which redis-server 7.0 refuses as Valkey 8's
            # would) restores the same stream, groups and times included.
            back = k.command("DUMP", key)[1]
            eq(k.command("RESTORE", key + ":back", "0", back)[0], b"+OK\r\n",
               "RESTORE of keyshift's own %s" % key)
            eq(k.command("XINFO", "STREAM", key + ":back", "FULL")[0],
               k.command("XINFO", "STREAM", key, "FULL")[0], "XINFO FULL of %s:back" % key)


@test
def stream_writes_count_changes_since_last_save_as_redis_server_7_does(h):
    # Both without save rules, so nothing resets the counter between commands.
    ref = h.redis_server(name="redis-dirty")
    srv = h.keyshift("--save", "", name="ks-dirty")
    steps = [
        ("XADD", "x", "1-1", "f", "v"), ("XADD", "x", "MAXLEN", "1", "2-1", "f", "v"),
        ("XADD", "x", "3-1", "f", "v"), ("XADD", "x", "4-1", "f", "v"),
        ("XDEL", "x", "3-1", "9-1"), ("XTRIM", "x", "MAXLEN", "0"), ("XADD", "x", "5-1", "f", "v"),
        ("XGROUP", "CREATE", "x", "g", "0"), ("XGROUP", "CREATE", "y", "g", "$", "MKSTREAM"),
        ("XGROUP", "SETID", "x", "g", "0"), ("XGROUP", "CREATECONSUMER", "x", "g", "c1"),
        ("XREADGROUP", "GROUP", "g", "c2", "STREAMS", "x", ">"),
        ("XREADGROUP", "GROUP", "g", "c2", "STREAMS", "x", "0"),
        ("XADD", "x", "6-1", "f", "v"), ("XREADGROUP", "GROUP", "g", "c2", "STREAMS", "x", ">"),
        ("XCLAIM", "x", "g", "c3", "0", "5-1"),
        ("XCLAIM", "x", "g", "c3", "0", "9-1", "LASTID", "50-0"),
        ("XDEL", "x", "6-1"), ("XAUTOCLAIM", "x", "g", "c3", "0", "0"), ("XACK", "x", "g", "5-1"),
        ("XGROUP", "DELCONSUMER", "x", "g", "c2"), ("XGROUP", "DESTROY", "x", "g"),
        ("XSETID", "x", "100-0"),
    ]
    with ref.conn() as r, srv.conn() as k:
        for step in steps:
            before = (int(info_field(r, "persistence", "rdb_changes_since_last_save")),
                      int(info_field(k, "persistence", "rdb_changes_since_last_save")))
            eq(k.command(*step)[0], r.command(*step)[0], "reply to %s" % " ".join(step))
            after = (int(info_field(r, "persistence", "rdb_changes_since_last_save")),
                     int(info_field(k, "persistence", "rdb_changes_since_last_save")))
            eq(after[1] - before[1], after[0] - before[0],
               "changes counted for %s" % " ".join(step))


@test
def save_then_restart_keeps_the_dataset_and_lastsave_moves(h):
    d = h.path("save-dir")
    os.makedirs(d, exist_ok=True)
    srv = h.keyshift("--dir", d, "--enable-debug-command", "yes", name="ks-save")
    with srv.conn() as c:
        c.command("RPUSH", "l", "a", "b")
        c.command("HSET", "h", "f", "v")
        c.command("SET", "ttl", "v", "EX", "1000")
        before = c.command("DEBUG", "DIGEST")[1]
        eq(c.command("SAVE")[0], b"+OK\r\n", "SAVE")
        eq(c.command("BGSAVE")[0], b"+Background saving started\r\n", "BGSAVE")
    srv.stop()
    h.forget(srv)
    again = h.keyshift("--dir", d, "--enable-debug-command", "yes", name="ks-save-again")
    with again.conn() as c:
        eq(c.command("DEBUG", "DIGEST")[1], before, "digest after restart")
        ok(0 < c.command("TTL", "ttl")[1] <= 1000, "the TTL survives")
        ok("rdb_last_load_keys_loaded:3" in info_field_block(c), "INFO counts the loaded keys")


def info_field_block(conn):
    return conn.command("INFO", "persistence")[1].decode()

if __name__ == "__main__":
    run_tests()
