#!/usr/bin/python3
"""`keyshift capture --from-pcap`: traffic to Debian's redis-server 7.0 recorded by tcpdump
(-i lo: Ethernet; -i any: Linux cooked SLL2; IPv4 and IPv6) while redis-cli,
redis-benchmark and python3-redis send it (pipelines, MULTI/EXEC, a value spanning many
segments), turned into a capture file that `capture info` reads and `keyshift replay`
replays against a fresh server with every reply as recorded. A pcap cut mid-way converts
up to the cut and says so. Small pcaps written here with struct (out-of-order segments,
retransmits and overlaps, a missing SYN, a lost segment, a cut packet; NULL, SLL and raw
IPv6 link layers) check the reassembly byte for byte.

Needs root for tcpdump. Run:
  KEYSHIFT_BIN=build/keyshift /usr/bin/python3 tests/integration/test_capture_pcap.py [NAME...]
"""

import json
import os
import re
import signal
import socket
import struct
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import (HOST, RespConn, encode_command, eq, keyshift_bin, ok, read_capture,  # noqa: E402
                     run_tests, test)


class Tcpdump:
    """tcpdump writing packets of one port to a file, from start until stop()."""

    def __init__(self, path, port, iface="lo", extra=()):
        self.path = path
        self.errpath = path + ".log"
        self.err = open(self.errpath, "wb")
        self.proc = subprocess.Popen(
            ["tcpdump", "-i", iface, "-n", "--immediate-mode", "-U", "-B", "65536", "-w", path] + list(extra) +
            ["tcp", "port", str(port)], stdout=subprocess.DEVNULL, stderr=self.err)
        deadline = time.monotonic() + 10
        while b"listening on" not in open(self.errpath, "rb").read():
            ok(self.proc.poll() is None, "tcpdump failed: %r" % open(self.errpath).read())
            ok(time.monotonic() < deadline, "tcpdump did not start")
            time.sleep(0.05)
        time.sleep(0.2)

    def stop(self):
        """Stops tcpdump; the packets the kernel dropped (0 when the capture is whole)."""
        time.sleep(0.5)  # the last packets reach tcpdump
        self.proc.send_signal(signal.SIGINT)
        self.proc.wait(timeout=20)
        self.err.close()
        text = open(self.errpath).read()
        m = re.search(r"(\d+) packets? dropped by kernel", text)
        return int(m.group(1)) if m else 0


def ks(*args, timeout=120):
    p = subprocess.run([keyshift_bin()] + [str(a) for a in args], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=timeout)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def from_pcap(pcap, out, *flags):
    return ks("capture", "--from-pcap", pcap, "--out", out, *flags)


def info_json(path):
    rc, out, err = ks("capture", "info", path, "--format", "json")
    return rc, json.loads(out), err


def replay(path, port):
    rc, out, err = ks("replay", path, "--to", "redis://%s:%d" % (HOST, port), "--format", "json",
                      "--timeout-ms", "1500")
    return rc, json.loads(out), err


BIG = b"v" * (3 << 20)  # 3 MiB: dozens of 64 KiB loopback segments each way


def send_traffic(srv, host=HOST):
    """The traffic every live test records: redis-cli, python3-redis, redis-benchmark."""
    port = str(srv.port)
    cli = ["redis-cli", "-h", host, "-p", port]
    subprocess.run(cli + ["SET", "greeting", "hello"], check=True, stdout=subprocess.DEVNULL)
    subprocess.run(cli + ["GET", "greeting"], check=True, stdout=subprocess.DEVNULL)
    subprocess.run(cli, input=b"MULTI\nINCR counter\nRPUSH tx:log a\nEXEC\n", check=True,
                   stdout=subprocess.DEVNULL)
    import redis
    r = redis.Redis(host=host, port=srv.port)
    p = r.pipeline(transaction=False)
    for i in range(200):
        p.set("k:%d" % i, "v%d" % i)
        p.get("k:%d" % i)
    p.execute()
    t = r.pipeline(transaction=True)
    t.incr("counter")
    t.hset("h", "f", "1")
    t.hgetall("h")
    t.execute()
    r.set("big", BIG)
    eq(r.get("big"), BIG, "big value read back")
    # pub/sub: a subscriber's confirmation and pushed message are replies of its connection
    sub = r.pubsub()
    sub.subscribe("news")
    eq(sub.get_message(timeout=5)["type"], "subscribe")
    eq(r.publish("news", "hi"), 1)
    eq(sub.get_message(timeout=5)["data"], b"hi")
    sub.close()
    r.close()
    # CLIENT REPLY OFF: two requests without replies, in one pipeline with the ON after them
    c = RespConn(port=srv.port, host=host)
    c.send(encode_command(["CLIENT", "REPLY", "OFF"]) + encode_command(["SET", "quiet", "1"]) +
           encode_command(["CLIENT", "REPLY", "ON"]))
    eq(c.read_reply()[1], b"OK")
    eq(c.call("GET", "quiet"), b"1")
    c.close()
    subprocess.run(["redis-benchmark", "-h", host, "-p", port, "-n", "400", "-c", "1", "-P",
                    "8", "-q", "-t", "set,get,lpush", "-r", "100"], check=True,
                   stdout=subprocess.DEVNULL)


def record(h, srv, name, iface="lo", host=HOST):
    """Traffic to `srv` recorded by tcpdump, retried once if the kernel dropped packets."""
    for attempt in range(2):
        pcap = h.path("%s-%d.pcap" % (name, attempt))
        dump = Tcpdump(pcap, srv.port, iface)
        send_traffic(srv, host)
        dropped = dump.stop()
        if dropped == 0:
            return pcap
        srv.cli("FLUSHALL")
    raise AssertionError("tcpdump dropped packets twice; the machine is too busy")


def check_converted(h, pcap, port, name, link):
    out = h.path(name + ".ksc")
    rc, _, err = from_pcap(pcap, out, "--port", port)
    eq(rc, 0, err)
    header, events, complete = read_capture(out)
    ok(complete, "end record")
    eq(header["capture.method"], "pcap")
    eq(header["capture.pcap.link_type"], link)
    eq(header["capture.pcap.gaps"], "0", header)
    eq(header["capture.pcap.partial_connections"], "0", header)
    eq(header["capture.pcap.truncated_packets"], "0", header)
    rc, doc, err = info_json(out)
    eq(rc, 0, err)
    ok(doc["requests"] > 1000, doc)
    # one reply per request, but for the two sent with replies off, and the pushed message
    eq(doc["no_reply"], 2, doc)
    eq(doc["replies"], doc["requests"] - 2 + 1, "replies")
    names = {c["name"].lower(): c["count"] for c in doc["commands"]}
    for cmd in ("multi", "exec", "set", "get", "incr", "hgetall", "lpush", "subscribe",
                "publish", "client reply"):
        ok(cmd in names, (cmd, names))
    # the big value is one request, byte for byte, and its reply one reply
    bigs = [e for e in events if e["kind"] == "request" and BIG in e["bytes"]]
    eq(len(bigs), 1, "one SET big")
    ok(bigs[0]["bytes"].startswith(b"*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n$3145728\r\n"), "SET big")
    got = [e for e in events if e["kind"] == "reply" and e["bytes"] == b"$3145728\r\n" + BIG + b"\r\n"]
    eq(len(got), 1, "GET big's reply")
    ok(all(e["end"] >= e["start"] > 1.6e18 for e in events if e["kind"] != "close"), "ns times")
    return out


def check_replay(h, out):
    fresh = h.redis_server(name="fresh")
    rc, doc, err = replay(out, fresh.port)
    ok(rc in (0, 1), "%r %s" % (doc, err))
    eq(doc["verdicts"].get("differs", 0), 0, doc["examples"])
    # The requests recorded without replies (CLIENT REPLY OFF) are sent expecting none, so
    # the CLIENT REPLY ON after them gets its own reply in time.
    eq(doc["verdicts"].get("no-reply", 0), 0, doc["examples"])
    ok(doc["verdicts"].get("same", 0) > 1000, doc["verdicts"])
    eq(fresh.cli("GET", "counter"), "2")
    eq(fresh.cli("STRLEN", "big"), str(len(BIG)))


@test
def loopback_traffic_recorded_by_tcpdump_replays_as_recorded(h):
    srv = h.redis_server(name="captured")
    pcap = record(h, srv, "lo")
    out = check_converted(h, pcap, srv.port, "lo", "EN10MB")
    check_replay(h, out)
    h.lo_pcap = (pcap, srv.port)


@test
def tcpdump_on_any_interface_writes_sll2_which_is_read_too(h):
    srv = h.redis_server(name="captured-any")
    pcap = record(h, srv, "any", iface="any")
    out = check_converted(h, pcap, srv.port, "any", "LINUX_SLL2")
    check_replay(h, out)


@test
def ipv6_loopback_traffic_is_read(h):
    try:
        s = socket.socket(socket.AF_INET6)
        s.bind(("::1", 0))
        s.close()
    except OSError:
        print("  (skipped: no ::1 on this machine)")
        return
    srv = h.redis_server("--bind", "127.0.0.1", "::1", name="captured-v6")
    pcap = record(h, srv, "v6", host="::1")
    out = check_converted(h, pcap, srv.port, "v6", "EN10MB")
    _, events, _ = read_capture(out)
    ok(any(e["kind"] == "open" and e["peer"].startswith("[::1]:") for e in events), "v6 peers")
    check_replay(h, out)


@test
def a_connection_open_before_tcpdump_started_is_partial_and_its_later_traffic_replays(h):
    import redis
    srv = h.redis_server(name="captured-late")
    r = redis.Redis(host=HOST, port=srv.port)
    r.set("before", "x" * 100000)  # the connection is up and has spoken
    pcap = h.path("late.pcap")
    dump = Tcpdump(pcap, srv.port)
    p = r.pipeline(transaction=False)
    for i in range(50):
        p.incr("n")
        p.get("before")
    p.execute()
    r.set("after", "1")
    r.close()
    eq(dump.stop(), 0, "tcpdump dropped packets")
    out = h.path("late.ksc")
    rc, _, err = from_pcap(pcap, out, "--port", srv.port)
    eq(rc, 0, err)
    ok("1 partial" in err, err)
    header, events, _ = read_capture(out)
    eq(header["capture.pcap.partial_connections"], "1")
    eq(len(of(events, "request")), 101)
    eq(len(of(events, "reply")), 101)
    ok(all(e["flags"] & 1 for e in events if e["kind"] != "close"), "flagged partial")
    fresh = h.redis_server(name="fresh-late")
    fresh.cli("SET", "before", "x" * 100000)
    rc, doc, err = replay(out, fresh.port)
    eq(rc, 0, "%r %s" % (doc, err))
    eq(doc["verdicts"], {"same": 101}, doc["examples"])


@test
def a_pcap_cut_mid_way_converts_up_to_the_cut_and_says_so(h):
    src, port = getattr(h, "lo_pcap", (None, None))
    if src is None:
        srv = h.redis_server(name="captured-cut")
        port = srv.port
        src = record(h, srv, "cut-src")
    data = open(src, "rb").read()
    cut = h.path("cut.pcap")
    with open(cut, "wb") as f:
        f.write(data[:len(data) // 2 + 7])
    out = h.path("cut.ksc")
    rc, _, err = from_pcap(cut, out, "--port", port)
    eq(rc, 1, err)
    ok("ends early" in err and "truncated" in err, err)
    header, events, complete = read_capture(out)
    ok(complete, "the capture itself is whole")
    ok("truncated" in header["capture.pcap.file_error"], header)
    rc, text, _ = ks("capture", "info", out)
    ok("pcap ends early: truncated" in text, text)
    ok(sum(1 for e in events if e["kind"] == "request") > 100, "requests up to the cut")
    for e in events:
        if e["kind"] == "request":
            ok(e["bytes"][:1] == b"*", e["bytes"][:40])
    fresh = h.redis_server(name="fresh-cut")
    rc, doc, err = replay(out, fresh.port)
    eq(doc["verdicts"].get("differs", 0), 0, doc["examples"])
    # a file cut inside its own header is no packet capture at all
    with open(cut, "wb") as f:
        f.write(data[:10])
    rc, _, err = from_pcap(cut, h.path("none.ksc"), "--port", port)
    eq(rc, 2, err)
    ok(not os.path.exists(h.path("none.ksc")), "no capture left behind")


# --------------------------------------------------------------------------------------
# Hand-made packet captures.
# --------------------------------------------------------------------------------------

CLIENT4, SERVER4 = bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2])
CLIENT6 = bytes(15) + b"\x01"
SERVER6 = bytes(15) + b"\x02"
SYN, ACK, PSH, FIN, RST = 0x02, 0x10, 0x08, 0x01, 0x04
LINK_NULL, LINK_EN10MB, LINK_RAW, LINK_LOOP, LINK_SLL = 0, 1, 101, 108, 113


class Pcap:
    """A classic pcap file of TCP segments between one client and server port 6379."""

    def __init__(self, path, link=LINK_EN10MB, v6=False, ng=False, vlan=False, step_ns=1_000_000):
        self.f = open(path, "wb")
        self.link, self.v6, self.ng, self.vlan, self.step = link, v6, ng, vlan, step_ns
        self.sport = 40000
        self.t = 1_700_000_000 * 10**9
        if ng:
            # pcapng: a section header, then one interface with nanosecond times (if_tsresol 9)
            self.f.write(struct.pack("<IIIHHqI", 0x0A0D0D0A, 28, 0x1A2B3C4D, 1, 0, -1, 28))
            opts = struct.pack("<HHB3x", 9, 1, 9) + struct.pack("<HH", 0, 0)
            self.f.write(struct.pack("<IIHHI", 1, 20 + len(opts), link, 0, 262144) + opts +
                         struct.pack("<I", 20 + len(opts)))
        else:
            self.f.write(struct.pack("<IHHiIII", 0xa1b2c3d4, 2, 4, 0, 0, 65535, link))

    def segment(self, to_server, seq, ack, flags, payload=b"", cut=0):
        src, dst = (CLIENT6, SERVER6) if self.v6 else (CLIENT4, SERVER4)
        sport, dport = self.sport, 6379
        if not to_server:
            src, dst, sport, dport = dst, src, dport, sport
        tcp = struct.pack("!HHIIBBHHH", sport, dport, seq & 0xffffffff, ack & 0xffffffff,
                          5 << 4, flags, 65535, 0, 0) + payload
        if self.v6:
            # one hop-by-hop options header (8 bytes: PadN) before TCP
            hbh = bytes([6, 0, 1, 4, 0, 0, 0, 0])
            ip = struct.pack("!IHBB", 6 << 28, len(hbh) + len(tcp), 0, 64) + src + dst + hbh
        else:
            ip = struct.pack("!BBHHHBBH", 0x45, 0, 20 + len(tcp), 0, 0x4000, 64, 6, 0) + src + dst
        pkt = ip + tcp
        ethertype = b"\x86\xdd" if self.v6 else b"\x08\x00"
        if self.link == LINK_EN10MB:
            tag = b"\x81\x00\x00\x07" if self.vlan else b""
            pkt = b"\x00" * 12 + tag + ethertype + pkt
        elif self.link == LINK_NULL:
            pkt = struct.pack("<I", 10 if self.v6 else 2) + pkt
        elif self.link == LINK_LOOP:
            pkt = struct.pack("!I", 10 if self.v6 else 2) + pkt
        elif self.link == LINK_SLL:
            pkt = struct.pack("!HHH8s", 0, 772, 6, b"") + ethertype + pkt
        self.t += self.step
        captured = pkt[:len(pkt) - cut]
        if self.ng:
            pad = b"\x00" * (-len(captured) % 4)
            total = 32 + len(captured) + len(pad)
            self.f.write(struct.pack("<IIIIIII", 6, total, 0, self.t >> 32, self.t & 0xffffffff,
                                     len(captured), len(pkt)) + captured + pad +
                         struct.pack("<I", total))
        else:
            sec, usec = self.t // 10**9, self.t % 10**9 // 1000
            self.f.write(struct.pack("<IIII", sec, usec, len(captured), len(pkt)) + captured)

    def handshake(self, cisn=1000, sisn=5000):
        self.segment(True, cisn, 0, SYN)
        self.segment(False, sisn, cisn + 1, SYN | ACK)
        self.segment(True, cisn + 1, sisn + 1, ACK)
        return cisn + 1, sisn + 1

    def close(self):
        self.f.close()


def convert(h, name, pcap):
    out = h.path(name + ".ksc")
    rc, _, err = from_pcap(pcap, out)
    eq(rc, 0, err)
    header, events, complete = read_capture(out)
    ok(complete, "end record")
    return header, events


def of(events, kind):
    return [e["bytes"] for e in events if e["kind"] == kind]


SET_REQ = b"*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$10\r\n0123456789\r\n"
GET_REQ = b"*2\r\n$3\r\nGET\r\n$3\r\nkey\r\n"
GET_REP = b"$10\r\n0123456789\r\n"


@test
def out_of_order_segments_are_put_back_in_order(h):
    path = h.path("ooo.pcap")
    p = Pcap(path, LINK_EN10MB)
    c, s = p.handshake()
    a, b, d = SET_REQ[:10], SET_REQ[10:25], SET_REQ[25:]
    p.segment(True, c, s, ACK | PSH, a)
    p.segment(True, c + 25, s, ACK | PSH, d)  # the third before the second
    p.segment(True, c + 10, s, ACK | PSH, b)
    c += len(SET_REQ)
    p.segment(False, s, c, ACK | PSH, b"+OK\r\n")
    s += 5
    p.segment(True, c, s, ACK | PSH, GET_REQ)
    c += len(GET_REQ)
    p.segment(False, s + 8, c, ACK | PSH, GET_REP[8:])
    p.segment(False, s, c, ACK | PSH, GET_REP[:8])
    s += len(GET_REP)
    p.segment(True, c, s, ACK | FIN)
    p.segment(False, s, c + 1, ACK | FIN)
    p.close()
    header, events = convert(h, "ooo", path)
    eq(of(events, "request"), [SET_REQ, GET_REQ])
    eq(of(events, "reply"), [b"+OK\r\n", GET_REP])
    eq([e["kind"] for e in events], ["open", "request", "reply", "request", "reply", "close"])
    eq(header["capture.pcap.gaps"], "0")
    eq(events[0]["peer"], "10.0.0.1:40000")
    eq(events[1]["start"], 1_700_000_000_004_000_000, "the first segment's time, in ns")
    eq(events[1]["end"], 1_700_000_000_006_000_000, "the segment that completed it")


@test
def pcapng_with_nanosecond_times_and_vlan_tags_is_read(h):
    path = h.path("ng.pcapng")
    p = Pcap(path, LINK_EN10MB, ng=True, vlan=True, step_ns=1_000_123)
    c, s = p.handshake()
    p.segment(True, c, s, ACK | PSH, GET_REQ[:9])
    p.segment(True, c + 9, s, ACK | PSH, GET_REQ[9:])
    p.segment(False, s, c + len(GET_REQ), ACK | PSH, GET_REP)
    p.close()
    header, events = convert(h, "ng", path)
    eq(of(events, "request"), [GET_REQ])
    eq(of(events, "reply"), [GET_REP])
    t0 = 1_700_000_000 * 10**9
    eq(events[1]["start"], t0 + 4 * 1_000_123, "the first segment's time, to the ns")
    eq(events[1]["end"], t0 + 5 * 1_000_123)


@test
def retransmits_and_overlaps_are_trimmed_over_raw_ipv6_with_an_extension_header(h):
    path = h.path("rtx.pcap")
    p = Pcap(path, LINK_RAW, v6=True)
    c, s = p.handshake()
    p.segment(True, c, s, ACK | PSH, SET_REQ[:20])
    p.segment(True, c, s, ACK | PSH, SET_REQ[:20])  # retransmit
    p.segment(True, c + 12, s, ACK | PSH, SET_REQ[12:30])  # overlaps
    p.segment(True, c + 30, s, ACK | PSH, SET_REQ[30:])
    p.segment(True, c + 30, s, ACK | PSH, SET_REQ[30:])  # again, after the end
    c += len(SET_REQ)
    p.segment(False, s, c, ACK | PSH, b"+OK\r\n")
    p.segment(False, s, c, ACK | PSH, b"+OK\r\n")
    p.close()
    header, events = convert(h, "rtx", path)
    eq(of(events, "request"), [SET_REQ])
    eq(of(events, "reply"), [b"+OK\r\n"])
    eq(events[0]["peer"], "[::1]:40000")
    ok(int(header["capture.pcap.retransmitted_bytes"]) == 20 + 8 + len(SET_REQ[30:]) + 5, header)
    eq(header["capture.pcap.gaps"], "0")


@test
def a_connection_without_its_syn_is_partial_and_synced_at_its_first_request(h):
    path = h.path("nosyn.pcap")
    p = Pcap(path, LINK_NULL)
    c, s = 77777, 99999
    # the tail of an earlier request, its reply, then a whole pipeline
    p.segment(True, c, s, ACK | PSH, b"56789\r\n")
    c += 7
    p.segment(False, s, c, ACK | PSH, b"+OK\r\n")
    s += 5
    p.segment(True, c, s, ACK | PSH, GET_REQ + SET_REQ)
    c += len(GET_REQ + SET_REQ)
    p.segment(False, s, c, ACK | PSH, GET_REP + b"+OK\r\n")
    p.segment(True, c, s + len(GET_REP) + 5, ACK | RST)
    p.segment(False, s + len(GET_REP) + 5, c, ACK | PSH, b"+late\r\n")  # after the RST
    p.close()
    header, events = convert(h, "nosyn", path)
    eq(header["capture.pcap.partial_connections"], "1")
    eq(header["capture.pcap.link_type"], "NULL")
    eq(of(events, "request"), [GET_REQ, SET_REQ])
    eq(of(events, "reply"), [GET_REP, b"+OK\r\n"])
    ok(all(e["flags"] & 1 for e in events if e["kind"] != "close"), "flagged partial")
    eq(events[-1]["kind"], "close")
    eq(header["capture.pcap.connections"], "1", "bytes after the RST open no connection")
    # the same over DLT_LOOP (OpenBSD's loopback: the family in network order), IPv6
    path = h.path("nosyn-loop.pcap")
    p = Pcap(path, LINK_LOOP, v6=True)
    p.segment(True, 10, 20, ACK | PSH, b"*2\r\n$3\r\nGET\r\n$3\r\nkey")  # ends mid-request
    p.segment(True, 10 + 20, 20, ACK | PSH, b"\r\n" + GET_REQ)
    p.segment(False, 20, 10 + 22 + len(GET_REQ), ACK | PSH, GET_REP + GET_REP)
    p.close()
    header, events = convert(h, "nosyn-loop", path)
    eq(header["capture.pcap.link_type"], "LOOP")
    eq(of(events, "request"), [b"*2\r\n$3\r\nGET\r\n$3\r\nkey\r\n", GET_REQ])
    eq(of(events, "reply"), [GET_REP, GET_REP])


@test
def a_lost_segment_is_a_gap_and_nothing_after_it_is_parsed(h):
    path = h.path("gap.pcap")
    p = Pcap(path, LINK_SLL)
    c, s = p.handshake()
    p.segment(True, c, s, ACK | PSH, GET_REQ)
    c += len(GET_REQ)
    p.segment(False, s, c, ACK | PSH, GET_REP)
    s += len(GET_REP)
    # SET_REQ's first 20 bytes never reach the file; the server acknowledges them all
    p.segment(True, c + 20, s, ACK | PSH, SET_REQ[20:])
    c += len(SET_REQ)
    p.segment(False, s, c, ACK | PSH, b"+OK\r\n")
    p.segment(True, c, s + 5, ACK | PSH, GET_REQ)
    p.close()
    header, events = convert(h, "gap", path)
    eq(header["capture.pcap.gaps"], "1")
    eq(header["capture.pcap.damaged_connections"], "1")
    eq(header["capture.pcap.gap_bytes"], "20")
    eq(header["capture.pcap.link_type"], "LINUX_SLL")
    eq(of(events, "request"), [GET_REQ])
    eq(of(events, "reply"), [GET_REP])
    eq(of(events, "drop"), [b"20"])
    rc, doc, _ = info_json(h.path("gap.ksc"))
    eq(doc["drops"], 1, doc)
    rc, text, _ = ks("capture", "info", h.path("gap.ksc"))
    eq(rc, 0)
    ok("1 damaged by 1 gap(s) (20 bytes lost)" in text, text)


@test
def a_packet_cut_by_the_snap_length_is_counted_and_ends_the_connection(h):
    path = h.path("snap.pcap")
    p = Pcap(path, LINK_EN10MB)
    c, s = p.handshake()
    p.segment(True, c, s, ACK | PSH, GET_REQ)
    c += len(GET_REQ)
    p.segment(False, s, c, ACK | PSH, GET_REP, cut=6)
    s += len(GET_REP)
    p.segment(True, c, s, ACK | PSH, GET_REQ)
    p.close()
    header, events = convert(h, "snap", path)
    eq(header["capture.pcap.truncated_packets"], "1")
    eq(header["capture.pcap.damaged_connections"], "1")
    eq(of(events, "request"), [GET_REQ])
    eq(of(events, "reply"), [])
    eq(of(events, "drop"), [str(len(GET_REP)).encode()])


@test
def random_segments_never_crash_the_reader_and_what_it_records_is_resp(h):
    import random
    rng = random.Random(15)
    pieces = [SET_REQ, GET_REQ, GET_REP, b"+OK\r\n", b"*1\r\n", b"$3\r\n", b"\r\n", b"PING\r\n"]
    for link, v6 in ((LINK_EN10MB, False), (LINK_RAW, True), (LINK_SLL, False)):
        path = h.path("fuzz-%d.pcap" % link)
        p = Pcap(path, link, v6=v6)
        for i in range(400):
            if i % 20 == 0:  # a new connection now and then: damage ends one, not the test
                p.sport += 1
                c, s = p.handshake()
            data = b"".join(rng.choice(pieces) for _ in range(rng.randint(0, 4)))
            if rng.random() < 0.2:
                data = bytes(rng.randrange(256) for _ in range(rng.randint(1, 40)))
            to_server = rng.random() < 0.6
            jitter = rng.choice([0, 0, 0, -5, 7, -2000, 1 << 31])
            flags = ACK | (rng.choice([FIN, RST, SYN]) if rng.random() < 0.01 else PSH)
            base = c if to_server else s
            p.segment(to_server, base + jitter, s if to_server else c, flags, data,
                      cut=rng.choice([0] * 9 + [3]))
            if jitter == 0:
                if to_server:
                    c += len(data)
                else:
                    s += len(data)
        p.close()
        out = h.path("fuzz-%d.ksc" % link)
        rc, _, err = from_pcap(path, out)
        eq(rc, 0, err)
        header, events, complete = read_capture(out)
        ok(complete, "end record")
        for e in events:
            if e["kind"] == "request":  # multibulk, or an inline line (as the server reads it)
                ok(e["bytes"][:1] == b"*" or e["bytes"].endswith(b"\n"), e["bytes"])
            if e["kind"] == "reply":
                ok(e["bytes"][:1] in b"+-:$*_,#!=(%~>|", e["bytes"])
        rc, _, err = ks("capture", "info", out)
        eq(rc, 0, err)
        ok(sum(1 for e in events if e["kind"] in ("request", "reply")) > 10, len(events))


@test
def secrets_are_redacted_as_the_proxy_redacts_them_unless_asked_not_to(h):
    path = h.path("auth.pcap")
    p = Pcap(path, LINK_EN10MB)
    c, s = p.handshake()
    auth = b"*3\r\n$4\r\nAUTH\r\n$5\r\nalice\r\n$6\r\ns3cret\r\n"
    p.segment(True, c, s, ACK | PSH, auth[:12])
    p.segment(True, c + 12, s, ACK | PSH, auth[12:])
    p.segment(False, s, c + len(auth), ACK | PSH, b"+OK\r\n")
    p.close()
    header, events = convert(h, "auth", path)
    eq(of(events, "request"), [b"*3\r\n$4\r\nAUTH\r\n$5\r\nalice\r\n$10\r\n(redacted)\r\n"])
    ok([e for e in events if e["kind"] == "request"][0]["flags"] & 2, "flagged redacted")
    eq(header["capture.redact"], "on")
    out = h.path("auth-kept.ksc")
    rc, _, err = from_pcap(path, out, "--no-redact")
    eq(rc, 0, err)
    header, events, _ = read_capture(out)
    eq(of(events, "request"), [auth])
    eq(header["capture.redact"], "off")


@test
def other_ports_are_ignored_and_several_ports_can_be_given(h):
    path = h.path("ports.pcap")
    p = Pcap(path, LINK_EN10MB)
    p.handshake()
    p.segment(True, 1001, 5001, ACK | PSH, GET_REQ)
    p.close()
    out = h.path("ports.ksc")
    rc, _, err = from_pcap(path, out, "--port", "7000")
    eq(rc, 0, err)
    header, events, _ = read_capture(out)
    eq(events, [])
    eq(header["capture.ports"], "7000")
    rc, _, err = from_pcap(path, out, "--port", "7000", "--port", "6379")
    eq(rc, 0, err)
    header, events, _ = read_capture(out)
    eq(header["capture.ports"], "7000,6379")
    eq(of(events, "request"), [GET_REQ])
    rc, _, err = from_pcap(h.path("missing.pcap"), out)
    eq(rc, 2, err)
    ok("missing.pcap" in err, err)


if __name__ == "__main__":
    run_tests()
