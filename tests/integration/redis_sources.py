"""Sources newer than Debian's redis-server 7.0, for the import, verify and replica tests: a
Redis 7.4 server from KEYSHIFT_REDIS74_SERVER, a Redis 8 server from KEYSHIFT_REDIS8_SERVER
and a valkey-server 8 from KEYSHIFT_VALKEY_SERVER. Debian ships none of them, so a test machine builds them from Redis's public sources; when the variable
names no executable, or names a binary of another version, the test skips (a wrong binary is
a failure: it would test the wrong thing)."""

import os
import random

from harness import HOST, Server, Skip, ok

import redis  # noqa: E402  (python3-redis, /usr/bin/python3)


def _built_server(h, env, label, accepts, name, directives, version_field="redis_version"):
    binary = os.environ.get(env, "")
    if not binary or not os.access(binary, os.X_OK):
        raise Skip("%s names no %s redis-server binary" % (env, label))
    workdir = h._dir(name)
    sock = os.path.join(workdir, "redis.sock")

    def make(port):
        argv = [binary, "--port", str(port), "--bind", HOST, "--save", "", "--appendonly", "no",
                "--enable-debug-command", "yes", "--dir", workdir, "--daemonize", "no",
                "--logfile", "", "--unixsocket", sock, "--repl-diskless-sync-delay", "0"]
        argv += [str(d) for d in directives]
        return Server(name, argv, port, workdir, unixsocket=sock)

    srv = h._launch(make)
    info = srv.cli("INFO", "server")
    version = next((line.split(":", 1)[1].strip() for line in info.splitlines()
                    if line.startswith(version_field + ":")), "")
    ok(accepts(version), "%s is redis_version %r, not %s" % (env, version, label))
    srv.version = version
    return srv


def redis74_server(h, name, *directives):
    """A Redis 7.4 server (RDB 12, hash field TTLs)."""
    return _built_server(h, "KEYSHIFT_REDIS74_SERVER", "Redis 7.4",
                         lambda v: v.startswith("7.4."), name, directives)


def redis8_server(h, name, *directives):
    """A Redis 8 server: 8.x, or an 8.0 milestone or release candidate, which call
    themselves 7.9.x (8.0-m01 is 7.9.224)."""
    return _built_server(h, "KEYSHIFT_REDIS8_SERVER", "Redis 8",
                         lambda v: v.startswith("8.") or v.startswith("7.9."), name,
                         directives)


def valkey8_server(h, name, *directives):
    """A valkey-server 8.x from KEYSHIFT_VALKEY_SERVER (its redis_version is frozen at 7.2.4:
    valkey_version tells)."""
    return _built_server(h, "KEYSHIFT_VALKEY_SERVER", "Valkey 8", lambda v: v.startswith("8."),
                         name, directives, version_field="valkey_version")


def client(srv, db=0):
    return redis.Redis(unix_socket_path=srv.unixsocket, db=db)


def has_command(srv, name):
    # Through redis-cli: python3-redis parses COMMAND INFO's nil for an unknown name badly.
    return name.lower() in srv.cli("COMMAND", "INFO", name).split("\n")


LIBRARY = ("#!lua name=keyshift_r8\n"
           "redis.register_function('keyshift_r8_answer', function() return 8 end)")

# Hashes whose fields carry TTLs: "ttl" fields expire in a day, "keep" fields never.
FIELD_TTL_SMALL = 60   # listpack hashes with TTLs (RDB_TYPE_HASH_LISTPACK_EX)
FIELD_TTL_BIG = 3      # hashtable hashes with TTLs (RDB_TYPE_HASH_METADATA)


def fill_newer(srv, seed=8):
    """Small and big values of every type on a Redis 7.4 or 8 source, in dbs 0 and 2: strings
    (int, short, 300 KB), lists (listpack, quicklist), sets (intset, listpack, hashtable),
    zsets (listpack, skiplist), hashes (listpack, hashtable, and both with field TTLs set
    by HEXPIRE and, where the server has it, HSETEX), streams with consumer groups, a PEL
    and deleted entries, key TTLs and a function library. Returns the keys that hold field
    TTLs, by db."""
    rnd = random.Random(seed)
    big = "".join(chr(97 + rnd.randint(0, 25)) for _ in range(300_000))
    field_ttl = {0: [], 2: []}
    hsetex = has_command(srv, "HSETEX")
    for db in (0, 2):
        r = client(srv, db)
        p = r.pipeline(transaction=False)
        p.set("s:int", 12345)
        p.set("s:small", "hello")
        p.set("s:big", big)
        p.set("s:ttl", "x", px=7_200_000)
        p.rpush("l:small", *["e%d" % i for i in range(10)])
        p.rpush("l:big", *[("e%d-" % i) + "y" * rnd.randint(1, 200) for i in range(5000)])
        p.sadd("set:int", *range(100))
        p.sadd("set:small", *["m%d" % i for i in range(20)])
        p.sadd("set:big", *["m%d" % i for i in range(3000)])
        p.zadd("z:small", {"m%d" % i: i * 0.5 for i in range(20)})
        p.zadd("z:big", {"m%d" % i: rnd.random() * 1e6 for i in range(3000)})
        p.hset("h:small", mapping={"f%d" % i: i for i in range(20)})
        p.hset("h:big", mapping={"f%d" % i: "v" * rnd.randint(1, 100) for i in range(3000)})
        p.pexpire("h:big", 9_000_000)
        for i in range(FIELD_TTL_SMALL):
            key = "fh:%d" % i
            p.hset(key, mapping={"keep": i, "ttl": "x%d" % i})
            p.execute_command("HEXPIRE", key, 86400 + i, "FIELDS", 1, "ttl")
            field_ttl[db].append(key)
        for i in range(FIELD_TTL_BIG):
            key = "fhbig:%d" % i
            p.hset(key, mapping={"keep%d" % j: "v" * j for j in range(1000)})
            p.hset(key, mapping={"ttl%d" % j: j for j in range(50)})
            p.execute_command("HPEXPIRE", key, 86_400_000 + i, "FIELDS", 50,
                              *["ttl%d" % j for j in range(50)])
            field_ttl[db].append(key)
        if hsetex:
            p.execute_command("HSETEX", "fh:hsetex", "EX", 86400, "FIELDS", 2, "ttl", "1",
                              "ttl2", "2")
            p.hset("fh:hsetex", "keep", "k")
            field_ttl[db].append("fh:hsetex")
        for i in range(300):
            p.xadd("x:big", {"n": i, "pad": "p" * rnd.randint(1, 50)}, id="%d-1" % (i + 1))
        p.xadd("x:small", {"a": 1}, id="5-5")
        p.execute()
        r.xgroup_create("x:big", "g1", id="0")
        r.xgroup_create("x:big", "g2", id="100-1")
        r.xreadgroup("g1", "alice", {"x:big": ">"}, count=20)
        r.xreadgroup("g1", "bob", {"x:big": ">"}, count=5)
        r.xack("x:big", "g1", "3-1", "4-1")
        r.xdel("x:big", "10-1", "11-1", "250-1")
    client(srv).execute_command("FUNCTION", "LOAD", LIBRARY)
    return field_ttl


def verify_data(keyshift, source, target, *flags):
    """`keyshift verify data SOURCE TARGET --format json`: (exit status, report, stderr)."""
    import json
    import subprocess
    p = subprocess.run([keyshift, "verify", "data", source, target, "--format", "json",
                        "--no-progress", "--pause", "0"] + [str(f) for f in flags],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
    out = p.stdout.decode("utf-8", "replace")
    err = p.stderr.decode("utf-8", "replace")
    try:
        report = json.loads(out) if out.strip() else None
    except ValueError:
        report = None
    return p.returncode, report, err


def differing_keys(report):
    return {(d["db"], d["key"]): d["reasons"] for d in report["differences"]}


def expect_field_ttl_differences(report, field_ttl, reason="value"):
    """After --field-ttl drop-field, the hashes that held field TTLs lost those fields
    ("value"); after drop-ttl they kept the fields without their TTLs ("field_ttl"); nothing
    else differs."""
    want = {(db, k): [reason] for db, keys in field_ttl.items() for k in keys}
    return differing_keys(report) == want, (sorted(differing_keys(report).items())[:10],
                                            len(report["differences"]), len(want))
