#!/usr/bin/python3
"""MIGRATE from `keyshift serve` to Debian's redis-server 7.0 and to another keyshift, and
DUMP payloads compared byte for byte with redis-server 7.0's (the LZF compressor).

Redis 7.0's migrateCommand is Valkey 8.0.1's (src/cluster.c) for everything a client sees,
so every MIGRATE is also run from a redis-server 7.0 source holding the same keys against
the same target, and the raw replies must be identical, with one difference: the payloads
keyshift sends carry RDB version 11 as Valkey 8's do, which a redis-server 7.0 target
refuses (its RESTORE reads up to version 10), so where the Redis 7.0 source gets +OK from
that target, keyshift, as Valkey 8.0.1, gets the target's error passed on.

Run: KEYSHIFT_BIN=build/keyshift /usr/bin/python3 tests/integration/test_migrate.py [NAME...]
"""

import os
import random
import socket
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import HOST, eq, ok, run_tests, test  # noqa: E402

SETUP = [
    ("SET", "s", "hello"),
    ("SET", "big", "abcdefgh" * 500),
    ("SET", "ttl", "v", "PX", "100000000"),
    ("RPUSH", "l", "a", "1", "b"),
    ("HSET", "h", "f", "v", "g", "2"),
    ("ZADD", "z", "1.5", "a", "2", "b"),
    ("SADD", "st", "x", "y"),
]
KEYS = ["s", "big", "ttl", "l", "h", "z", "st"]


def closed_port():
    """A loopback port nothing listens on (bound then released)."""
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def fill(srv):
    with srv.conn() as c:
        c.command("FLUSHALL")
        for cmd in SETUP:
            c.command(*cmd)


def sources(h):
    if not hasattr(h, "sources"):
        h.sources = (h.redis_server(name="redis-src"),
                     h.keyshift("--enable-debug-command", "yes", name="ks-src"))
    return h.sources


def targets(h):
    if not hasattr(h, "targets"):
        h.targets = (("redis-server 7.0", h.redis_server(name="redis-dst")),
                     ("keyshift", h.keyshift("--enable-debug-command", "yes", name="ks-dst")))
    return h.targets


# What a redis-server 7.0 target answers RESTORE with an RDB 11 payload, as MIGRATE passes it
# on (src/cluster.c: "Target instance replied with error: %s").
VERSION_REFUSED = (b"-ERR Target instance replied with error: ERR DUMP payload version or "
                   b"checksum are wrong\r\n")


def expected_from(name, redis_source_reply):
    if name == "redis-server 7.0" and redis_source_reply == b"+OK\r\n":
        return VERSION_REFUSED
    return redis_source_reply


def both(h, name, target, *args):
    """Runs MIGRATE `args` (host and port of `target` filled in) from the redis-server source
    and from the keyshift source, each after loading SETUP and emptying the target; returns
    keyshift's raw reply, checked against redis-server's."""
    replies = []
    for src in sources(h):
        fill(src)
        with target.conn() as t:
            t.command("FLUSHALL")
        with src.conn() as c:
            replies.append(c.command("MIGRATE", HOST, str(target.port), *args)[0])
    eq(replies[1], expected_from(name, replies[0]),
       "MIGRATE %s to %s: keyshift's reply is redis-server's" % (" ".join(args), name))
    return replies[1]


@test
def migrate_to_redis_server_7_0_passes_its_refusal_of_rdb_11_on(h):
    src = sources(h)[1]
    target = targets(h)[0][1]
    fill(src)
    with src.conn() as c:
        for key in KEYS:
            eq(c.command("MIGRATE", HOST, str(target.port), key, "0", "5000")[0],
               VERSION_REFUSED, "MIGRATE %s" % key)
            eq(c.command("EXISTS", key)[1], 1, "%s stays on the source" % key)


@test
def migrate_moves_every_type_with_its_ttl_and_digest(h):
    src = sources(h)[1]
    for name, target in targets(h)[1:]:
        fill(src)
        with target.conn() as t, src.conn() as c:
            t.command("FLUSHALL")
            for key in KEYS:
                digest = c.command("DEBUG", "DIGEST-VALUE", key)[1]
                eq(c.command("MIGRATE", HOST, str(target.port), key, "0", "5000")[0],
                   b"+OK\r\n", "MIGRATE %s to %s" % (key, name))
                eq(c.command("EXISTS", key)[1], 0, "%s is gone from the source" % key)
                eq(t.command("DEBUG", "DIGEST-VALUE", key)[1], digest,
                   "%s on %s has the source's digest" % (key, name))
            ttl = t.command("PTTL", "ttl")[1]
            ok(0 < ttl <= 100000000, "the TTL moved with the key to %s: %r" % (name, ttl))
            eq(t.command("PTTL", "s")[1], -1, "no TTL where there was none on %s" % name)


@test
def migrate_replies_and_errors_match_redis_server(h):
    for name, target in targets(h):
        eq(both(h, name, target, "s", "0", "5000"), expected_from(name, b"+OK\r\n"), name)
        eq(both(h, name, target, "missing", "0", "5000"), b"+NOKEY\r\n", name)
        eq(both(h, name, target, "", "0", "5000", "KEYS", "missing", "other"), b"+NOKEY\r\n", name)
        eq(both(h, name, target, "", "3", "5000", "KEYS", "s", "missing", "l", "h"),
           expected_from(name, b"+OK\r\n"), name)
        eq(both(h, name, target, "s", "0", "5000", "COPY", "REPLACE"),
           expected_from(name, b"+OK\r\n"), name)
        eq(both(h, name, target, "s", "0", "5000", "KEYS", "l"),
           b"-ERR When using MIGRATE KEYS option, the key argument must be set to the empty "
           b"string\r\n", name)
        eq(both(h, name, target, "s", "0", "5000", "BOGUS"), b"-ERR syntax error\r\n", name)
        eq(both(h, name, target, "s", "0", "5000", "AUTH"), b"-ERR syntax error\r\n", name)
        eq(both(h, name, target, "s", "0", "5000", "AUTH2", "u"), b"-ERR syntax error\r\n", name)
        eq(both(h, name, target, "s", "x", "5000"),
           b"-ERR value is not an integer or out of range\r\n", name)
        eq(both(h, name, target, "s", "0", "x"),
           b"-ERR value is not an integer or out of range\r\n", name)
        # A database the target does not have: its SELECT error is passed on.
        both(h, name, target, "s", "99999", "5000")
        # AUTH against a server without a password: the target's error is passed on.
        both(h, name, target, "s", "0", "5000", "AUTH", "pw")
        both(h, name, target, "s", "0", "5000", "AUTH2", "someone", "pw")
        # The timeout <= 0 means one second.
        eq(both(h, name, target, "s", "0", "0"), expected_from(name, b"+OK\r\n"), name)


@test
def migrate_without_replace_passes_busykey_on_and_keeps_the_source_key(h):
    for name, target in targets(h)[1:]:
        replies = []
        for src in sources(h):
            fill(src)
            with target.conn() as t, src.conn() as c:
                t.command("FLUSHALL")
                t.command("SET", "s", "already")
                t.command("SET", "l", "already")
                replies.append(c.command("MIGRATE", HOST, str(target.port), "", "0", "5000",
                                         "KEYS", "big", "s", "l")[0])
                # The key acknowledged before the error moved; the refused ones stayed.
                eq(c.command("EXISTS", "big")[1], 0, "big moved to %s" % name)
                eq(c.command("EXISTS", "s", "l")[1], 2, "s and l stayed")
                eq(t.command("GET", "s")[1], b"already", "the target's s is untouched")
                eq(c.command("MIGRATE", HOST, str(target.port), "s", "0", "5000",
                             "REPLACE")[0], b"+OK\r\n", "REPLACE")
                eq(t.command("GET", "s")[1], b"hello", "REPLACE overwrote s")
        eq(replies[1], replies[0], "the BUSYKEY reply is redis-server's")
        eq(replies[1], b"-ERR Target instance replied with error: BUSYKEY Target key name "
                       b"already exists.\r\n", name)


@test
def migrate_authenticates_with_auth_and_auth2(h):
    secured = (("redis-server 7.0", h.redis_server("--requirepass", "s3cret",
                                                    name="redis-auth")),
               ("keyshift", h.keyshift("--requirepass", "s3cret", name="ks-auth",
                                       password="s3cret")))
    for name, target in secured:
        for src in sources(h):
            fill(src)
            with src.conn() as c:
                no_auth = c.command("MIGRATE", HOST, str(target.port), "s", "0", "5000")[0]
                ok(no_auth.startswith(b"-ERR Target instance replied with error: NOAUTH"),
                   "%s without AUTH: %r" % (name, no_auth))
                wrong = c.command("MIGRATE", HOST, str(target.port), "s", "0", "5000",
                                  "AUTH", "nope")[0]
                eq(wrong, b"-ERR Target instance replied with error: WRONGPASS invalid "
                          b"username-password pair or user is disabled.\r\n", name)
                # The Redis 7.0 source gets +OK from both targets.
                want = b"+OK\r\n" if src is sources(h)[0] else expected_from(name, b"+OK\r\n")
                eq(c.command("MIGRATE", HOST, str(target.port), "s", "0", "5000", "COPY",
                             "REPLACE", "AUTH", "s3cret")[0], want, "%s AUTH" % name)
                eq(c.command("MIGRATE", HOST, str(target.port), "s", "0", "5000", "REPLACE",
                             "AUTH2", "default", "s3cret")[0], want, "%s AUTH2" % name)


@test
def migrate_to_nothing_listening_is_an_ioerr(h):
    port = str(closed_port())
    replies = []
    for src in sources(h):
        fill(src)
        with src.conn() as c:
            replies.append(c.command("MIGRATE", HOST, port, "s", "0", "1000")[0])
            eq(c.command("EXISTS", "s")[1], 1, "the key stays")
    eq(replies[1], replies[0], "keyshift's reply is redis-server's")
    # The refused connection still turns writable, which Valkey's connSocketBlockingConnect
    # takes as connected: the write fails, once more after the retry.
    eq(replies[1], b"-IOERR error or timeout writing to target instance\r\n")
    with sources(h)[1].conn() as c:
        eq(c.command("MIGRATE", "no-such-host.invalid", "6379", "s", "0", "1000")[0],
           b"-IOERR error or timeout connecting to the client\r\n", "an unknown host")


@test
def command_getkeys_finds_migrates_keys_as_redis_server_does(h):
    ref, ks = sources(h)
    forms = [
        ("h", "1", "key", "0", "5000"),
        ("h", "1", "", "0", "5000", "AUTH", "keys", "KEYS", "a", "b"),
        ("h", "1", "", "0", "5000", "COPY", "AUTH2", "u", "p", "KEYS", "a"),
        ("h", "1", "k", "0", "5000", "KEYS", "a"),
        ("h", "1", "", "0", "5000", "KEYS"),
    ]
    with ref.conn() as r, ks.conn() as k:
        for form in forms:
            for sub in ("GETKEYS", "GETKEYSANDFLAGS"):
                eq(k.command("COMMAND", sub, "MIGRATE", *form)[0],
                   r.command("COMMAND", sub, "MIGRATE", *form)[0],
                   "COMMAND %s MIGRATE %s" % (sub, " ".join(form)))


def compressible(rng, size):
    """Runs, repeats at every distance and random bytes: streams with every kind of LZF
    instruction, some of which do not shrink at all."""
    alphabet = rng.choice([2, 4, 16, 64, 256])
    s = bytearray()
    while len(s) < size:
        kind = rng.randrange(4)
        if kind == 0:
            s += bytes([rng.randrange(alphabet)]) * rng.randint(1, 300)
        elif kind == 1 and s:
            back = rng.randint(1, min(len(s), 9000))
            for _ in range(rng.randint(3, 300)):
                s.append(s[-back])
        else:
            s += bytes(rng.randrange(alphabet) for _ in range(rng.randint(1, 40)))
    return bytes(s[:size])


@test
def dump_payloads_of_strings_are_byte_identical_with_redis_server(h):
    # redis-server 7.0 compresses with the lzf_c.c Valkey 8.0.1 has; the value bytes of a
    # DUMP payload (before the RDB version and CRC, which differ: 10 against 11) must match.
    rng = random.Random(20261201)
    sizes = ([rng.randint(21, 64) for _ in range(300)]
             + [rng.randint(64, 2000) for _ in range(300)]
             + [rng.randint(2000, 70000) for _ in range(120)])
    values = [compressible(rng, n) for n in sizes]
    ref = sources(h)[0]
    ks = sources(h)[1]
    compressed = 0
    with ref.conn() as r, ks.conn() as k:
        for i, v in enumerate(values):
            key = "v%d" % i
            r.command("SET", key, v)
            k.command("SET", key, v)
            want = r.command("DUMP", key)[1]
            got = k.command("DUMP", key)[1]
            eq(got[:-10], want[:-10], "DUMP of a %d-byte value" % len(v))
            compressed += 1 if want[1] == 0xC3 else 0
    ok(compressed > 500, "%d of %d values compressed" % (compressed, len(values)))


if __name__ == "__main__":
    run_tests()
