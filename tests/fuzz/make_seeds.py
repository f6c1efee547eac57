#!/usr/bin/python3
"""Regenerates the seed corpora of tests/fuzz/corpus from real inputs: a Debian
redis-server 7.0 (its AOF directory, MONITOR lines, a replication stream as a replica gets
it) and keyshift itself (DUMP payloads of every type, `rdb dump` JSON Lines, a capture file
from a MONITOR log). The seeds are committed; run this only to refresh them:

    /usr/bin/python3 tests/fuzz/make_seeds.py build/keyshift [PORT]
"""
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import redis

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORPUS = os.path.join(ROOT, "tests", "fuzz", "corpus")


def put(target, name, data):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def fill(r):
    """A few keys of every type, small enough for good seeds."""
    r.set("s", "hello")
    r.set("n", 12345)
    r.rpush("l", "a", "b", "1", "2")
    r.hset("h", mapping={"f1": "v1", "f2": "2"})
    r.sadd("si", 1, 2, 3)
    r.sadd("ss", "x", "y")
    r.zadd("z", {"m1": 1.5, "m2": -2})
    r.xadd("x", {"f": "v"}, id="1-1")
    r.xgroup_create("x", "g", id="0")
    r.pfadd("hll", "a", "b", "c")
    r.setex("ttl", 100, "v")


def start_redis(port, workdir, *extra):
    proc = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--dir", workdir,
         "--save", "", *extra], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(100):
        try:
            redis.Redis(port=port).ping()
            return proc
        except redis.ConnectionError:
            time.sleep(0.05)
    raise RuntimeError("redis-server did not start")


def from_redis(keyshift, port, workdir):
    proc = start_redis(port, workdir, "--appendonly", "yes", "--aof-use-rdb-preamble", "yes")
    try:
        r = redis.Redis(port=port)
        mon = subprocess.Popen(["redis-cli", "-p", str(port), "monitor"],
                               stdout=subprocess.PIPE)
        time.sleep(0.3)
        fill(r)
        r.execute_command("EVAL", "return redis.call('GET', KEYS[1])", 1, "s")
        r.execute_command("SET", "bin", b"\x00\xff\r\n\"q")
        time.sleep(0.3)
        mon.terminate()
        put("monitor_log", "redis-cli-monitor.log", mon.communicate()[0])
        # The replication stream: a full sync (payload), then the commands that follow.
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(b"PSYNC ? -1\r\n")
        time.sleep(0.5)
        r.set("after", "sync")
        r.incr("n")
        time.sleep(0.5)
        s.settimeout(0.5)
        data = b""
        try:
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
        except socket.timeout:
            pass
        s.close()
        line_end = data.index(b"\r\n")  # +FULLRESYNC: the parser starts after it
        put("repl_stream", "full-sync", b"\x01" + data[line_end + 2:])
        r.execute_command("BGREWRITEAOF")
        time.sleep(1)
        r.set("incr", "1")
        r.lpush("l", "new")
        time.sleep(0.3)
        adir = os.path.join(workdir, "appendonlydir")
        for name in os.listdir(adir):
            with open(os.path.join(adir, name), "rb") as f:
                data = f.read()
            if name.endswith(".manifest"):
                put("aof", "manifest", data)
            elif name.endswith(".incr.aof"):
                put("aof", "incr.aof", data)
            elif name.endswith(".base.rdb"):
                put("aof", "preamble.aof", data + b"*1\r\n$4\r\nPING\r\n")
                put("repl_stream", "partial", b"\x20" + b"*1\r\n$4\r\nPING\r\n"
                    b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n")
                with open(os.path.join(workdir, "fixture.rdb"), "wb") as f:
                    f.write(data)
    finally:
        proc.terminate()
        proc.wait()
    rdb = os.path.join(workdir, "fixture.rdb")
    dump = subprocess.run([keyshift, "rdb", "dump", "--format", "json", rdb],
                          capture_output=True, check=True).stdout
    put("jsonl", "rdb-dump.jsonl", dump)


def from_keyshift(keyshift, port, workdir):
    workdir = os.path.join(workdir, "keyshift")
    os.makedirs(workdir)
    proc = subprocess.Popen([keyshift, "serve", "--port", str(port), "--bind", "127.0.0.1",
                             "--dir", workdir, "--save", ""],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                redis.Redis(port=port).ping()
                break
            except redis.ConnectionError:
                time.sleep(0.05)
        r = redis.Redis(port=port)
        fill(r)
        r.rpush("lbig", *[str(i) * 20 for i in range(200)])  # quicklist, compressible
        r.zadd("zbig", {f"m{i}": i for i in range(200)})  # skiplist
        for key in r.keys("*"):
            payload = r.dump(key)
            # 0x01: the target makes the trailer right (it already is here).
            put("restore", "dump-" + key.decode(), b"\x01" + payload)
    finally:
        proc.terminate()
        proc.wait()
    log = os.path.join(ROOT, "tests", "data", "monitor", "apps.log")
    cap = os.path.join(workdir, "apps.capture")
    subprocess.run([keyshift, "capture", "--from-monitor-log", log, "--out", cap], check=True,
                   capture_output=True)
    with open(cap, "rb") as f:
        put("capture_file", "from-monitor-log", b"\x01" + f.read())


def main():
    keyshift = os.path.abspath(sys.argv[1])
    port = int(sys.argv[2]) if len(sys.argv) > 2 else 26001
    workdir = tempfile.mkdtemp()
    try:
        from_redis(keyshift, port, workdir)
        from_keyshift(keyshift, port + 1, workdir)
    finally:
        shutil.rmtree(workdir)


if __name__ == "__main__":
    main()
