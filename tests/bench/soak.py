#!/usr/bin/python3
"""Soak: `keyshift serve` under maxmemory with a mixed workload of every type, first with
allkeys-lru, then volatile-ttl, keys expiring all along. Prints one line per interval
(throughput, p99 latency, RSS, used_memory) and checks two memory bounds, never a time:

  * used_memory never exceeds maxmemory by more than one command's growth. Valkey evicts
    before a command runs, so a single write may overshoot by its own size. The biggest
    write here is VALUE_MAX bytes plus its overhead, so the bound is maxmemory + 1 MiB.
  * RSS stays under maxmemory * 1.5 + RSS_OVERHEAD. The 1.5 allows for allocator
    fragmentation under churn. RSS_OVERHEAD covers the binary's resident pages, Lua, the
    client buffers and the heap's arenas.

Environment: KEYSHIFT_BIN (default build/keyshift), SOAK_SECONDS (default 600),
SOAK_INTERVAL (seconds per printed line, default 60), SOAK_MAXMEMORY_MB (default 64),
SOAK_CLIENTS (default 4). Exit status 0 when both bounds held, 1 otherwise.
"""

import os
import random
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SECONDS = int(os.environ.get("SOAK_SECONDS", "600"))
INTERVAL = int(os.environ.get("SOAK_INTERVAL", "60"))
MAXMEMORY = int(os.environ.get("SOAK_MAXMEMORY_MB", "64")) << 20
CLIENTS = int(os.environ.get("SOAK_CLIENTS", "4"))
VALUE_MAX = 16 << 10
USED_ALLOWANCE = 1 << 20
RSS_OVERHEAD = 96 << 20
KEYS = 200000  # the key space: far more than fits, so eviction runs all the time


def encode(args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


class Client:
    """A blocking RESP client that reads exactly one reply per request."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.buf = b""

    def _line(self):
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("closed")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _reply(self):
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind in (b"+", b"-", b":"):
            return line
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            while len(self.buf) < n + 2:
                chunk = self.sock.recv(65536)
                if not chunk:
                    raise ConnectionError("closed")
                self.buf += chunk
            data, self.buf = self.buf[:n], self.buf[n + 2:]
            return data
        if kind == b"*":
            return [self._reply() for _ in range(max(0, int(rest)))]
        raise ValueError("bad reply %r" % line)

    def call(self, *args):
        self.sock.sendall(encode(args))
        return self._reply()


def step(c, rnd):
    """One request of the mix: every type, reads and writes, a third of the keys with TTLs."""
    k = rnd.randrange(KEYS)
    op = rnd.randrange(12)
    ttl = rnd.random() < 0.33
    size = rnd.choice((16, 64, 256, 1024, 4096, VALUE_MAX))
    if op == 0:
        c.call("SET", "s:%d" % k, b"x" * size, *(["PX", rnd.randrange(100, 20000)] if ttl else []))
    elif op == 1:
        c.call("GET", "s:%d" % k)
    elif op == 2:
        c.call("RPUSH", "l:%d" % k, b"y" * min(size, 512))
        c.call("LTRIM", "l:%d" % k, -50, -1)
    elif op == 3:
        c.call("LRANGE", "l:%d" % k, 0, 10)
    elif op == 4:
        c.call("HSET", "h:%d" % k, "f%d" % rnd.randrange(64), b"z" * min(size, 512))
    elif op == 5:
        c.call("HGETALL", "h:%d" % k)
    elif op == 6:
        c.call("SADD", "t:%d" % k, rnd.randrange(1000))
    elif op == 7:
        c.call("ZADD", "z:%d" % k, rnd.random(), "m%d" % rnd.randrange(200))
    elif op == 8:
        c.call("ZRANGE", "z:%d" % k, 0, 5)
    elif op == 9:
        c.call("XADD", "x:%d" % k, "MAXLEN", "~", 100, "*", "f", b"v" * min(size, 256))
    elif op == 10:
        c.call("PFADD", "p:%d" % k, rnd.randrange(10 ** 6))
    else:
        c.call("EXPIRE", "%s:%d" % (rnd.choice("slhtzxp"), k), rnd.randrange(1, 30))
    if ttl and op in (2, 4, 6, 7, 9, 10):
        c.call("PEXPIRE", "%s:%d" % ("llhhttzzzxxpp"[op], k), rnd.randrange(100, 20000))


class Worker(threading.Thread):
    def __init__(self, port, seed, stop):
        super().__init__(daemon=True)
        self.port, self.rnd, self.stop = port, random.Random(seed), stop
        self.lock = threading.Lock()
        self.latencies = []
        self.error = None

    def take(self):
        with self.lock:
            out, self.latencies = self.latencies, []
        return out

    def run(self):
        try:
            c = Client(self.port)
            while not self.stop.is_set():
                t0 = time.perf_counter()
                step(c, self.rnd)
                dt = time.perf_counter() - t0
                with self.lock:
                    self.latencies.append(dt)
        except Exception as e:  # reported by main
            self.error = e


def rss_bytes(pid):
    with open("/proc/%d/status" % pid) as f:
        m = re.search(r"^VmRSS:\s+(\d+) kB", f.read(), re.M)
    return int(m.group(1)) << 10


def info(c, field):
    text = c.call("INFO", "all").decode()
    m = re.search(r"^%s:(\S+)" % field, text, re.M)
    return m.group(1) if m else None


def main():
    binary = os.environ.get("KEYSHIFT_BIN", os.path.join(REPO, "build", "keyshift"))
    work = tempfile.mkdtemp(prefix="ks-soak-")
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    log = open(os.path.join(work, "keyshift.log"), "wb")
    proc = subprocess.Popen([binary, "serve", "--port", str(port), "--bind", "127.0.0.1",
                             "--save", "", "--dir", work, "--maxmemory", str(MAXMEMORY),
                             "--maxmemory-policy", "allkeys-lru"],
                            stdout=log, stderr=subprocess.STDOUT)
    admin = None
    for _ in range(400):
        try:
            admin = Client(port)
            if admin.call("PING") == b"+PONG":
                break
        except OSError:
            time.sleep(0.05)
    if admin is None:
        print("keyshift serve did not start")
        return 1
    stop = threading.Event()
    workers = [Worker(port, i, stop) for i in range(CLIENTS)]
    for w in workers:
        w.start()
    print("soak: %d s, %d clients, maxmemory %d MiB; bounds: used_memory <= maxmemory + %d KiB,"
          " RSS <= maxmemory * 1.5 + %d MiB" % (SECONDS, CLIENTS, MAXMEMORY >> 20,
                                                USED_ALLOWANCE >> 10, RSS_OVERHEAD >> 20))
    print("%6s %-13s %10s %9s %9s %12s %12s %9s" % ("t(s)", "policy", "ops/s", "p99(ms)",
                                                   "RSS(MiB)", "used(MiB)", "peak(MiB)",
                                                   "evicted"))
    failures = []
    max_used = 0
    max_rss = 0
    start = time.monotonic()
    policy = "allkeys-lru"
    next_line = start + INTERVAL
    while time.monotonic() - start < SECONDS and not failures:
        time.sleep(0.2)
        used = int(info(admin, "used_memory"))
        rss = rss_bytes(proc.pid)
        max_used, max_rss = max(max_used, used), max(max_rss, rss)
        if used > MAXMEMORY + USED_ALLOWANCE:
            failures.append("used_memory %d > maxmemory %d + %d" % (used, MAXMEMORY,
                                                                    USED_ALLOWANCE))
        if rss > MAXMEMORY * 3 // 2 + RSS_OVERHEAD:
            failures.append("RSS %d > maxmemory * 1.5 + %d" % (rss, RSS_OVERHEAD))
        dead = [w.error for w in workers if w.error is not None]
        if dead:
            failures.append("a client failed: %r" % dead[0])
        now = time.monotonic()
        if now >= next_line:
            lat = sorted(x for w in workers for x in w.take())
            p99 = lat[int(len(lat) * 0.99)] * 1000 if lat else float("nan")
            print("%6d %-13s %10.0f %9.2f %9.1f %12.1f %12.1f %9s" % (
                now - start, policy, len(lat) / (now - next_line + INTERVAL), p99, rss / 2 ** 20,
                used / 2 ** 20, max_used / 2 ** 20, info(admin, "evicted_keys")), flush=True)
            next_line += INTERVAL
            if policy == "allkeys-lru" and now - start >= SECONDS / 2:
                policy = "volatile-ttl"
                admin.call("CONFIG", "SET", "maxmemory-policy", policy)
    stop.set()
    for w in workers:
        w.join(30)
    print("max used_memory %.1f MiB, max RSS %.1f MiB, expired_keys %s, evicted_keys %s"
          % (max_used / 2 ** 20, max_rss / 2 ** 20, info(admin, "expired_keys"),
             info(admin, "evicted_keys")))
    proc.terminate()
    proc.wait(30)
    if failures:
        print("FAIL: " + failures[0])
        return 1
    print("PASS: both memory bounds held")
    return 0


if __name__ == "__main__":
    sys.exit(main())
