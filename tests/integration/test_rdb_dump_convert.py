#!/usr/bin/python3
"""`keyshift rdb dump` and `rdb convert` against Debian's redis-server 7.0: converted files
load with the ground truth's DEBUG DIGEST, and `rdb dump --format resp | redis-cli --pipe`
rebuilds the same dataset; exit codes and reports of the CLI.

Run: KEYSHIFT_BIN=build/keyshift /usr/bin/python3 tests/integration/test_rdb_dump_convert.py
"""

import json
import os
import re
import shutil
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import REPO, eq, keyshift_bin, ok, run_tests, test  # noqa: E402

CORPUS = os.path.join(REPO, "..", "shared", "corpus", "rdb")


def corpus(name):
    return os.path.join(CORPUS, name)


def truth(name):
    with open(corpus(name) + ".json") as f:
        return json.load(f)


def run(*args):
    p = subprocess.run([keyshift_bin()] + list(args), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=60)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def total_keys(srv):
    info = srv.cli("INFO", "keyspace")
    return sum(int(line.split("keys=")[1].split(",")[0])
               for line in info.splitlines() if line.startswith("db"))


@test
def converted_files_load_in_redis_7_0_with_the_ground_truth_digest(h):
    for name in ("valkey8-hashes.rdb", "valkey8-lists.rdb", "valkey8-sets.rdb",
                 "valkey8-strings.rdb"):
        d = h.path(name + "-dir")
        os.makedirs(d)
        rc, out, err = run("rdb", "convert", corpus(name), os.path.join(d, "dump.rdb"),
                           "--rdb-version", "10")
        eq(rc, 0, name + ": " + err)
        ok("RDB 10" in out, out)
        srv = h.redis_server("--dir", d, "--dbfilename", "dump.rdb", name="redis-" + name)
        want = truth(name)["servers"]["valkey-8.0.1"]
        eq(total_keys(srv), want["total_keys"], name + " keys")
        eq(srv.cli("DEBUG", "DIGEST"), want["digest"], name + " digest")
        srv.stop()
        h.forget(srv)


@test
def converted_functions_load_in_redis_7_0(h):
    d = h.path("convert-functions")
    os.makedirs(d, exist_ok=True)
    out = os.path.join(d, "dump.rdb")
    rc, _, err = run("rdb", "convert", corpus("redis70-functions.rdb"), out, "--rdb-version", "10")
    eq(rc, 0, err)
    srv = h.redis_server("--dir", d, "--dbfilename", "dump.rdb", name="redis-functions")
    libs = srv.cli("FUNCTION", "LIST")
    ok("corpuslib" in libs and "second_lib" in libs, "FUNCTION LIST after loading:\n" + libs)
    srv.stop()
    h.forget(srv)


@test
def resp_dump_piped_into_redis_cli_rebuilds_the_digest(h):
    cases = (("valkey8-expire-multidb.rdb", "valkey-8.0.1"),
             ("valkey8-hashes.rdb", "valkey-8.0.1"),
             ("redis70-streams.rdb", "redis-7.0.15"),
             ("redis70-zsets.rdb", "redis-7.0.15"))
    for name, server in cases:
        srv = h.redis_server(name="pipe-" + name)
        dump = subprocess.run([keyshift_bin(), "rdb", "dump", corpus(name), "--format", "resp"],
                              stdout=subprocess.PIPE, check=True, timeout=60).stdout
        p = subprocess.run(["redis-cli", "-h", "127.0.0.1", "-p", str(srv.port), "--pipe"],
                           input=dump, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=60)
        text = p.stdout.decode("utf-8", "replace")
        eq(p.returncode, 0, name + ": " + text)
        ok("errors: 0" in text, name + ": " + text)
        want = truth(name)["servers"][server]
        eq(total_keys(srv), want["total_keys"], name + " keys")
        eq(srv.cli("DEBUG", "DIGEST"), want["digest"], name + " digest")
        srv.stop()
        h.forget(srv)


@test
def json_dump_is_one_object_per_key(h):
    rc, out, err = run("rdb", "dump", corpus("valkey8-expire-multidb.rdb"))
    eq(rc, 0, err)
    rows = [json.loads(line) for line in out.splitlines()]
    eq(len(rows), 28)
    ok(all(set(r) >= {"db", "key", "type", "expire_ms", "value"} for r in rows), rows[0])
    rc, out, _ = run("rdb", "dump", corpus("valkey8-expire-multidb.rdb"), "--format", "keys",
                     "--db", "15")
    eq(rc, 0)
    eq(len(out.splitlines()), 5)


@test
def convert_failures_exit_1_and_leave_the_output_alone(h):
    out = h.path("kept.rdb")
    with open(out, "w") as f:
        f.write("previous")
    rc, _, err = run("rdb", "convert", corpus("redis74-hash-field-ttl.rdb"), out)
    eq(rc, 1)
    ok("hfe:hashtable-600" in err and "--field-ttl" in err, err)
    with open(out) as f:
        eq(f.read(), "previous")
    rc, stdout, _ = run("rdb", "convert", corpus("redis74-hash-field-ttl.rdb"), out, "--format",
                        "json")
    eq(rc, 1)
    ok(json.loads(stdout)["blocked"]["field_ttls"]["count"] > 0, stdout)


@test
def converted_streams_load_in_redis_7_0_and_keyshift_with_the_ground_truth_digest(h):
    for name in ("valkey8-streams.rdb", "redis74-streams.rdb", "redis70-streams.rdb",
                 "rdbtools--redis_50_with_streams.rdb"):
        servers = truth(name)["servers"]
        for version in ("10", "11"):
            # The digest each server computed; Redis 7.0 formats zset scores its own way, and
            # a file no server of the pair loads is judged by Redis 7.4's (stream digests
            # are the same in all three).
            order = (("redis-7.0.15", "valkey-8.0.1", "redis-7.4.1") if version == "10" else
                     ("valkey-8.0.1", "redis-7.4.1"))
            want = next(servers[s] for s in order if servers[s]["loaded"])
            d = h.path("%s-%s-dir" % (name, version))
            os.makedirs(d)
            rc, out, err = run("rdb", "convert", corpus(name), os.path.join(d, "dump.rdb"),
                               "--rdb-version", version)
            eq(rc, 0, name + ": " + err)
            if version == "10":
                srv = h.redis_server("--dir", d, "--dbfilename", "dump.rdb",
                                     name="redis-" + name)
            else:
                srv = h.keyshift("--dir", d, "--enable-debug-command", "yes",
                                 name="ks-" + name)
            eq(total_keys(srv), want["total_keys"], "%s v%s keys" % (name, version))
            eq(srv.cli("DEBUG", "DIGEST"), want["digest"], "%s v%s digest" % (name, version))
            for k in want["keys"]:
                if k["type"] == "stream":
                    eq(srv.cli("-n", str(k["db"]), "XLEN", k["key"]), str(k["value"]["length"]),
                       "%s v%s XLEN %s" % (name, version, k["key"]))
            srv.stop()
            h.forget(srv)


@test
def convert_in_place_and_reports(h):
    same = h.path("same.rdb")
    shutil.copy(corpus("redis74-hash-field-ttl.rdb"), same)
    rc, out, err = run("rdb", "convert", same, same, "--field-ttl", "drop-field", "--verbose")
    eq(rc, 0, err)
    ok("hfe:listpack-all-ttl" in out and "no field was left" in out, out)
    rc, out, err = run("rdb", "check", same, "--format", "json")
    eq(rc, 0, err)
    eq(json.loads(out)["rdb_version"], 11)
    eq(json.loads(out)["total_keys"], 8)


@test
def progress_shows_on_stderr_when_asked_and_never_otherwise(h):
    name = corpus("valkey8-lists.rdb")
    for args in (("rdb", "dump", name), ("rdb", "convert", name, h.path("p.rdb")),
                 ("rdb", "check", name)):
        # stderr is a pipe here, not a terminal: silent unless --progress.
        rc, out, err = run(*args)
        eq(rc, 0, err)
        eq(err, "", " ".join(args[:2]))
        rc, out2, err = run(*args, "--progress")
        eq(rc, 0, err)
        ok(re.search(r"\rkeyshift: .*valkey8-lists.rdb: [0-9.]+/[0-9.]+ MB [0-9]+%", err), err)
        ok("100%" in err and " MB/s " in err and err.endswith("\r\x1b[K"), repr(err[-80:]))
        if args[1] == "dump":
            eq(out2, out)  # stdout is the same with or without progress


def big_rdb(path, megabytes):
    """An RDB 11 file of string keys (checksum disabled) of about `megabytes` MB."""
    value = b"v" * 1000
    with open(path, "wb") as f:
        f.write(b"REDIS0011\xfe\x00")
        for i in range(megabytes * 1000):
            key = b"key:%d" % i
            # type 0, the key (6-bit length), the value (14-bit length 1000)
            f.write(b"\x00" + bytes([len(key)]) + key + b"\x43\xe8" + value)
        f.write(b"\xff" + b"\x00" * 8)


@test
def progress_shows_on_a_terminal_for_a_large_file(h):
    big = h.path("big.rdb")
    big_rdb(big, 10)
    # script(1) gives the command a terminal; its output is what the terminal received.
    p = subprocess.run(["script", "-qec", "%s rdb check %s" % (keyshift_bin(), big),
                        "/dev/null"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=60)
    out = p.stdout.decode("utf-8", "replace")
    eq(p.returncode, 0, out)
    ok("keys         10000" in out, out[-400:])
    ok(re.search(r"\rkeyshift: .*big.rdb: [0-9.]+/10\.[0-9] MB [0-9]+%", out), out[:300])
    ok("\r\x1b[K" in out, out[:300])
    # Without a terminal the same check is silent on stderr.
    rc, _, err = run("rdb", "check", big)
    eq(rc, 0, err)
    eq(err, "")


@test
def usage_errors_exit_2(h):
    for args in (("rdb", "convert", corpus("valkey8-hashes.rdb"), h.path("x.rdb"), "--db-map",
                  "1-2"),
                 ("rdb", "convert", corpus("valkey8-hashes.rdb"), h.path("x.rdb"),
                  "--rdb-version", "9"),
                 ("rdb", "dump", corpus("valkey8-hashes.rdb"), "--format", "xml"),
                 ("rdb", "convert", corpus("valkey8-hashes.rdb"))):
        rc, _, err = run(*args)
        eq(rc, 2, " ".join(args[:2]) + ": " + err)


if __name__ == "__main__":
    run_tests()
