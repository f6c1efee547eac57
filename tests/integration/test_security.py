#!/usr/bin/python3
"""SECURITY.md's promises that no other test checks: protected mode and the `local` modes
against a peer that is not loopback, the modes of the files that hold data or secrets, and
the test password never appearing in any output of a run of the commands that see it.

A non-loopback peer is one of this machine's own non-127 addresses (the server listens on
it and the client binds to it, so the server sees a non-loopback source); without one the
tests that need it skip, saying so.

Run: KEYSHIFT_BIN=build/keyshift /usr/bin/python3 tests/integration/test_security.py [NAME...]
"""

import glob
import os
import re
import stat
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import (REPO, RespConn, Skip, eq, keyshift_bin, ok, run_tests,  # noqa: E402
                     test)
from redis_sources import valkey8_server  # noqa: E402

PASSWORD = "Pw-7f3c9e1b-not-in-any-output"
DENIED = (b"-DENIED Running in protected mode because protected mode is enabled and no "
          b"password is set for the default user.")


def non_loopback_ipv4():
    """One of this machine's IPv4 addresses outside 127/8, or None."""
    try:
        out = subprocess.run(["ip", "-o", "-4", "addr", "show"], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, timeout=10).stdout.decode()
    except (OSError, subprocess.TimeoutExpired):
        return None
    for addr in re.findall(r"inet (\d+\.\d+\.\d+\.\d+)/", out):
        if not addr.startswith("127."):
            return addr
    return None


def outside_peer():
    addr = non_loopback_ipv4()
    if addr is None:
        raise Skip("this machine has no non-loopback IPv4 address to connect from")
    return addr


@test
def protected_mode_denies_a_non_loopback_peer_and_serves_loopback(h):
    addr = outside_peer()
    srv = h.keyshift("--bind", "127.0.0.1", addr, name="ks-protected")
    with RespConn(port=srv.port, host=addr, source=addr) as c:
        data, closed = c.read_until_closed(30)
        ok(data.startswith(DENIED) and data.endswith(b"\r\n"), "Valkey's DENIED text: %r" % data)
        ok(closed, "and the connection is closed")
    eq(srv.cli("ping"), "PONG", "loopback is served")
    eq(srv.cli("ping", unix=True), "PONG", "the unix socket is served")
    eq(srv.cli("config", "set", "protected-mode", "no"), "OK", "protected-mode no")
    with RespConn(port=srv.port, host=addr, source=addr) as c:
        eq(c.command("PING")[0], b"+PONG\r\n", "then the outside peer is served")


@test
def a_password_lifts_protected_mode_and_is_then_required(h):
    addr = outside_peer()
    srv = h.keyshift("--bind", "127.0.0.1", addr, "--requirepass", PASSWORD,
                     name="ks-protected-pw", password=PASSWORD)
    with RespConn(port=srv.port, host=addr, source=addr) as c:
        eq(c.command("PING")[0], b"-NOAUTH Authentication required.\r\n", "NOAUTH, not DENIED")
        eq(c.command("AUTH", "wrong")[0],
           b"-WRONGPASS invalid username-password pair or user is disabled.\r\n", "WRONGPASS")
        eq(c.command("AUTH", PASSWORD)[0], b"+OK\r\n", "AUTH")
        eq(c.command("PING")[0], b"+PONG\r\n", "served after AUTH")


@test
def local_modes_refuse_debug_and_protected_configs_from_a_non_loopback_peer(h):
    addr = outside_peer()
    srv = h.keyshift("--bind", "127.0.0.1", addr, "--protected-mode", "no",
                     "--enable-debug-command", "local", "--enable-protected-configs", "local",
                     name="ks-local-outside")
    with RespConn(port=srv.port, host=addr, source=addr) as c:
        debug = c.command("DEBUG", "SLEEP", "0")[0]
        ok(debug.startswith(b"-ERR DEBUG command not allowed. If the enable-debug-command "
                            b"option is set to \"local\", you can run it from a local "
                            b"connection"), "DEBUG refused: %r" % debug)
        config = c.command("CONFIG", "SET", "dir", srv.workdir)[0]
        ok(config.startswith(b"-ERR CONFIG SET failed (possibly related to argument 'dir') - "
                             b"can't set protected config"), "dir refused: %r" % config)
    with RespConn(port=srv.port) as c:
        eq(c.command("DEBUG", "SLEEP", "0")[0], b"+OK\r\n", "DEBUG from loopback")


def world_readable(path):
    return bool(os.stat(path).st_mode & stat.S_IROTH)


@test
def files_holding_data_or_secrets_are_not_world_readable(h):
    old = os.umask(0o022)  # the usual umask: what is not 0644 is keyshift's choice
    try:
        srv = h.keyshift("--appendonly", "yes", "--dir", h.path("."), "--requirepass",
                         PASSWORD, config="# a config CONFIG REWRITE writes\n",
                         name="ks-modes", password=PASSWORD)
        r = srv.redis()
        r.set("k", "v")
        eq(r.save(), True, "SAVE")
        r.bgrewriteaof()
        for _ in range(3000):  # a bound on the poll, never a timing check
            if r.info("persistence")["aof_rewrite_in_progress"] == 0:
                break
            time.sleep(0.01)
        conf = os.path.join(srv.workdir, "keyshift.conf")
        os.chmod(conf, 0o640)
        eq(r.config_rewrite(), b"OK", "CONFIG REWRITE (the file holds requirepass)")
        eq(stat.S_IMODE(os.stat(conf).st_mode), 0o640, "CONFIG REWRITE keeps the file's mode")
        r.close()
        files = [os.path.join(h.path("."), "dump.rdb"), conf]
        files += glob.glob(os.path.join(h.path("."), "appendonlydir", "*.aof")) + \
            glob.glob(os.path.join(h.path("."), "appendonlydir", "*.rdb"))
        conf = os.path.join(h.path("."), "redis.conf")
        with open(conf, "w") as f:
            f.write("port 6379\nrequirepass %s\n" % PASSWORD)
        out = h.path("rewritten.conf")
        p = subprocess.run([keyshift_bin(), "rewrite", "server", conf, "--target", "keyshift",
                            "--out", out, "--apply", "--backup-dir", h.path("backups")],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
        eq(p.returncode, 0, p.stdout.decode())
        files += [f for f in glob.glob(h.path("backups") + "/**", recursive=True)
                  if os.path.isfile(f)]
        converted = h.path("converted.rdb")
        p = subprocess.run([keyshift_bin(), "rdb", "convert", files[0], converted],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
        eq(p.returncode, 0, p.stdout.decode())
        files.append(converted)
    finally:
        os.umask(old)
    ok(len(files) >= 6, "the files checked: %s" % files)
    for f in files:
        ok(not world_readable(f), "%s is not world-readable (%o)" % (f, os.stat(f).st_mode))


@test
def the_password_appears_in_no_output_of_the_commands_that_see_it(h):
    conf = h.path("secret.conf")
    with open(conf, "w") as f:
        f.write("port 6379\nrequirepass %s\nmasterauth %s\n" % (PASSWORD, PASSWORD))
    srv = h.keyshift("--requirepass", PASSWORD, "--loglevel", "debug", name="ks-secret",
                     password=PASSWORD)
    url = "redis://:%s@127.0.0.1:%d" % (PASSWORD, srv.port)
    bad_url = "redis://:%s@127.0.0.1:1" % PASSWORD
    # (arguments, whether the run succeeds): the failures are there for their messages.
    runs = [
        (["rewrite", "server", conf, "--target", "keyshift"], True),
        (["rewrite", "server", conf, "--target", "keyshift", "--format", "json"], True),
        (["rewrite", "server", conf, "--target", "keyshift", "--out", h.path("s.conf"),
          "--apply", "--backup-dir", h.path("sb"), "--format", "json"], True),
        (["verify", "data", url, url], True),
        (["verify", "data", url, url, "--format", "json"], True),
        (["verify", "data", url, bad_url], False),
        (["import", os.path.join(REPO, "tests", "data", "missing.rdb"), "--to", url], False),
        (["import", url, "--mode", "scan", "--to", bad_url], False),
        (["import", url, "--mode", "scan", "--dir", h.path("."), "--dbfilename", "s.rdb",
          "--format", "json"], True),
        (["bench", "--url", url, "--requests", "200", "--tests", "set,get", "--json", h.path("b.json")],
         True),
        (["bench", "--url", bad_url, "--requests", "200", "--tests", "set"], False),
    ]
    for args, succeeds in runs:
        p = subprocess.run([keyshift_bin()] + args, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=120)
        out = p.stdout.decode("utf-8", "replace")
        shown = " ".join(a.replace(PASSWORD, "<pw>") for a in args)
        eq(p.returncode == 0, succeeds, "keyshift %s exit %d:\n%s"
           % (shown, p.returncode, out.replace(PASSWORD, "<PW>")[-1500:]))
        ok(PASSWORD not in out, "keyshift %s prints the password:\n%s"
           % (shown, out.replace(PASSWORD, "<PW>")))
    srv.cli("client", "list")
    srv.cli("info", "all")
    srv.stop()
    h.forget(srv)
    ok(PASSWORD not in srv.log(), "the server log holds the password")
    for path in glob.glob(h.path("sb") + "/**/*.toml", recursive=True) + [h.path("b.json")]:
        ok(PASSWORD not in open(path).read(), "%s holds the password" % path)


# rename-command as the config file gives it: FLUSHALL disabled, CONFIG reached under a new
# name only, GET renamed to its own name in capitals (Valkey deletes before it adds).
RENAMES = ("--rename-command", "FLUSHALL", "", "--rename-command", "CONFIG", "ks-admin-7c1",
           "--rename-command", "get", "GET")
# (command, exact): `exact` cases must answer byte for byte as redis-server 7.0 does; the
# others differ only in wording that Valkey 8 changed (checked against valkey-server 8 when
# KEYSHIFT_VALKEY_SERVER names one) and are compared by error class there.
RENAME_CASES = [
    (("FLUSHALL",), True),
    (("flushall", "sync"), True),
    (("CONFIG", "GET", "maxmemory"), True),
    (("ks-admin-7c1", "GET", "maxmemory"), True),
    (("KS-ADMIN-7C1", "SET", "maxmemory-policy", "allkeys-lru"), True),
    (("set", "k", "v"), True),
    (("get", "k"), True),
    (("COMMAND", "INFO", "config"), True),
    (("ACL", "SETUSER", "ops", "+flushall", "+config|get"), True),
    (("ACL", "SETUSER", "ops", "+ks-admin-7c1"), True),
    (("ACL", "DRYRUN", "ops", "ks-admin-7c1", "get", "maxmemory"), False),
    (("MULTI",), True),
    (("ks-admin-7c1", "GET", "port"), True),
    (("FLUSHALL",), True),
    (("EXEC",), True),
    (("EVAL", "return redis.call('flushall')", "0"), False),
    (("EVAL", "return redis.call('get', 'k')", "0"), True),
]


def rename_replies(srv):
    c = srv.conn()
    replies = [(args, exact, c.command(*args)[0]) for args, exact in RENAME_CASES]
    name = c.command("COMMAND", "INFO", "ks-admin-7c1")[1][0][0]
    stats = c.call("INFO", "commandstats").decode()
    return replies, name, stats, c.call("COMMAND", "COUNT")


@test
def rename_command_hides_and_renames_commands_as_redis_does(h):
    ks = h.keyshift(*RENAMES, name="ks-renamed")
    ref = h.redis_server(*RENAMES, name="redis-renamed")
    got, name, stats, count = rename_replies(ks)
    want, ref_name, ref_stats, _ = rename_replies(ref)
    for (args, exact, a), (_, _, b) in zip(got, want):
        if exact:
            eq(a, b, "reply to %r" % (args,))
        else:
            eq(a[:1], b[:1], "reply type of %r: %r vs %r" % (args, a, b))
    ok(got[0][2].startswith(b"-ERR unknown command 'FLUSHALL'"), got[0][2])
    eq(got[6][2], b"$1\r\nv\r\n", "GET still answers under its capitalised name")
    # COMMAND INFO under the new name describes the command by its own name, and INFO
    # commandstats counts it under that name too.
    eq((name, ref_name), (b"config", b"config"))
    for text in (stats, ref_stats):
        ok("cmdstat_config|get:calls=1," in text, text)
        ok("cmdstat_flushall" not in text, text)
    plain = h.keyshift(name="ks-plain").conn().call("COMMAND", "COUNT")
    eq(count, plain - 1, "COMMAND COUNT loses the disabled command only")
    try:
        valkey = valkey8_server(h, "valkey-renamed", *RENAMES)
    except Skip:
        return
    vk, vk_name, _, _ = rename_replies(valkey)
    for (args, _, a), (_, _, b) in zip(got, vk):
        eq(a, b, "reply to %r, keyshift vs valkey-server 8" % (args,))
    eq(vk_name, name)


@test
def rename_command_of_no_command_or_onto_a_taken_name_stops_the_start(h):
    for text, line, needle in (
            ('port 0\nrename-command no-such-cmd x\n', 2, "No such command in rename-command"),
            ('rename-command CONFIG c1\nrename-command CONFIG c2\n', 2,
             "No such command in rename-command"),
            ('rename-command GET SET\n', 1, "Target command name already exists")):
        path = h.path("rename-%d.conf" % line)
        with open(path, "w") as f:
            f.write(text)
        p = subprocess.run([keyshift_bin(), "serve", path, "--port", "0"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=30)
        out = p.stdout.decode("utf-8", "replace")
        ok(p.returncode != 0 and path in out and ("at line %d" % line) in out and needle in out,
           "%r: exit %d\n%s" % (text, p.returncode, out))
        # redis-server 7.0 stops on the same file with the same reason.
        r = subprocess.run(["redis-server", path], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=30)
        ok(r.returncode != 0 and needle in r.stdout.decode("utf-8", "replace"),
           "redis-server on %r: %r" % (text, r.stdout[-400:]))


if __name__ == "__main__":
    run_tests()
