#!/usr/bin/python3
"""`keyshift rdb check` and `rdb inspect` on the real RDB corpus (../shared/corpus/rdb):
exit codes, the JSON's counts against each file's ground truth, error messages naming the
file and the byte offset, and the --target verdicts.

Run: KEYSHIFT_BIN=build/keyshift /usr/bin/python3 tests/integration/test_rdb.py [NAME...]
"""

import json
import os
import pty
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


@test
def check_ok_file_exits_0_with_the_ground_truth_counts(h):
    for name in ("redis74-hash-field-ttl.rdb", "valkey8-expire-multidb.rdb",
                 "redis70-strings.rdb", "redis-assets--encodings.rdb"):
        rc, out, err = run("rdb", "check", corpus(name), "--format", "json")
        eq(rc, 0, name + " exit status; stderr: " + err)
        got = json.loads(out)
        s = truth(name)["structure"]
        eq(got["ok"], True, name)
        eq(got["total_keys"], s["total_keys"], name + " total_keys")
        eq(got["rdb_version"], s["version"], name + " version")
        eq({str(d["db"]): d["keys"] for d in got["dbs"]}, s["dbs"], name + " dbs")
        eq({t["name"]: t["keys"] for t in got["types"]}, s["types"], name + " types")
        want = "verified" if s.get("checksum_valid") else ("absent" if s["version"] < 5 else "disabled")
        eq(got["checksum"]["status"], want, name + " checksum")


@test
def check_text_names_version_creator_and_checksum(h):
    rc, out, _ = run("rdb", "check", corpus("valkey8-strings-nolzf-nocrc.rdb"))
    eq(rc, 0)
    ok("valkey-ver 8.0.1" in out, out)
    ok("disabled (0)" in out, out)
    ok("STRING (0)" in out and "50" in out, out)
    rc, out, _ = run("rdb", "check", corpus("redis74-empty.rdb"))
    eq(rc, 0)
    ok("redis-ver 7.4.1" in out and "verified" in out and "rdb version  12" in out, out)


@test
def corrupt_file_exits_1_with_the_offset(h):
    path = corpus("redis-assets--corrupt_ziplist.rdb")
    rc, out, err = run("rdb", "check", path)
    eq(rc, 1, "exit status")
    ok(err.startswith("keyshift: %s: error at byte " % path), err)
    rc, out, err = run("rdb", "check", path, "--format", "json")
    eq(rc, 1)
    got = json.loads(out)
    eq(got["ok"], False)
    ok(isinstance(got["error"]["offset"], int) and got["error"]["offset"] > 0, out)
    ok("error at byte %d:" % got["error"]["offset"] in err, err)


@test
def truncated_copy_exits_1(h):
    with open(corpus("valkey8-lists.rdb"), "rb") as f:
        data = f.read()
    cut = h.path("truncated.rdb")
    with open(cut, "wb") as f:
        f.write(data[: len(data) // 3])
    for sub in ("check", "inspect"):
        rc, _, err = run("rdb", sub, cut)
        eq(rc, 1, sub)
        ok("truncated.rdb: error at byte " in err, err)


@test
def missing_file_exits_1_naming_it(h):
    missing = h.path("no-such-dump.rdb")
    rc, out, err = run("rdb", "check", missing)
    eq(rc, 1)
    ok(missing in err and "No such file" in err, err)
    rc, out, err = run("rdb", "inspect", h.tmp)
    eq(rc, 1)
    ok("directory" in err, err)


@test
def bad_flag_exits_2_with_did_you_mean(h):
    rc, _, err = run("rdb", "check", corpus("redis70-empty.rdb"), "--fromat", "json")
    eq(rc, 2)
    ok("did you mean '--format'" in err, err)
    rc, _, err = run("rdb", "inspect", corpus("redis70-empty.rdb"), "--tagret", "valkey-8.0")
    eq(rc, 2)
    ok("did you mean '--target'" in err, err)
    rc, _, err = run("rdb", "inspect", corpus("redis70-empty.rdb"), "--target", "valkey-9")
    eq(rc, 2, "unknown target")
    rc, _, err = run("rdb", "chek", corpus("redis70-empty.rdb"))
    eq(rc, 2)
    ok("did you mean 'check'" in err, err)
    rc, _, err = run("rdb")
    eq(rc, 2, "rdb without check/inspect")
    ok("inspect" in err, err)


@test
def inspect_field_ttl_file_for_valkey_8_needs_conversion(h):
    path = corpus("redis74-hash-field-ttl.rdb")
    rc, out, err = run("rdb", "inspect", path, "--target", "valkey-8.0")
    eq(rc, 0, err)
    ok("target valkey-8.0: needs conversion" in out, out)
    ok("RDB version 12 -> 11" in out, out)
    ok("field TTLs" in out, out)
    rc, out, err = run("rdb", "inspect", path, "--target", "valkey-8.0", "--format", "json")
    eq(rc, 0, err)
    got = json.loads(out)
    eq(got["target"]["verdict"], "needs conversion")
    ok(any("12 -> 11" in c for c in got["target"]["changes"]), got["target"])
    ok(any("field TTLs" in c for c in got["target"]["changes"]), got["target"])
    eq(got["field_ttl"]["hashes"], 8)
    eq(got["total_keys"], truth("redis74-hash-field-ttl.rdb")["structure"]["total_keys"])


@test
def inspect_valkey8_file_loads_as_is(h):
    rc, out, err = run("rdb", "inspect", corpus("valkey8-sets.rdb"), "--target", "valkey-8.0")
    eq(rc, 0, err)
    ok("target valkey-8.0: loads as is" in out, out)
    rc, out, _ = run("rdb", "inspect", corpus("valkey8-functions.rdb"), "--target", "redis-7.4",
                     "--format", "json")
    got = json.loads(out)
    eq(got["target"]["verdict"], "cannot move")
    eq([lib["name"] for lib in got["functions"]["libraries"]],
       ["valkey_only", "second_lib", "corpuslib"])


@test
def inspect_json_has_the_documented_sections(h):
    rc, out, err = run("rdb", "inspect", corpus("redis74-cluster-slotinfo.rdb"), "--format",
                       "json", "--top", "3", "--delimiter", ":")
    eq(rc, 0, err)
    got = json.loads(out)
    for field in ("ok", "file", "size_bytes", "rdb_version", "creator", "ctime", "aux",
                  "checksum", "total_keys", "dbs", "types", "logical_types", "functions",
                  "modules", "biggest_keys", "prefixes", "ttl", "field_ttl", "target"):
        ok(field in got, "missing " + field)
    eq(len(got["biggest_keys"]), 3)
    eq(got["slot_info_records"], truth("redis74-cluster-slotinfo.rdb")["structure"]
       ["slot_info_records"])
    eq(got["target"], None)
    ok(len(got["prefixes"]["top"]) <= 20, "top 20 prefixes at most")


def rdb_length(n):
    if n < 64:
        return bytes([n])
    if n < 16384:
        return bytes([0x40 | (n >> 8), n & 0xFF])
    return b"\x80" + n.to_bytes(4, "big")


def rdb_string(b):
    return rdb_length(len(b)) + b


@test
def big_file_shows_progress_on_a_terminal_only(h):
    # A 9 MB RDB 11 file of 9000 strings, checksum 0 (disabled), built here.
    body = bytearray(b"REDIS0011\xfe\x00")
    value = b"v" * 1000
    for i in range(9000):
        body += b"\x00" + rdb_string(b"big:%d" % i) + rdb_string(value)
    body += b"\xff" + b"\x00" * 8
    path = h.path("big.rdb")
    with open(path, "wb") as f:
        f.write(body)
    rc, out, err = run("rdb", "check", path, "--format", "json")
    eq(rc, 0, err)
    eq(json.loads(out)["total_keys"], 9000)
    eq(err, "", "no progress when stderr is not a terminal")
    master, slave = pty.openpty()
    p = subprocess.run([keyshift_bin(), "rdb", "inspect", path], stdout=subprocess.PIPE,
                       stderr=slave, timeout=60)
    os.close(slave)
    seen = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    os.close(master)
    eq(p.returncode, 0)
    ok(b"\r" in seen and b"%" in seen and b"big.rdb" in seen, seen[:200])
    ok(b"big:" in p.stdout, "the report")


def valkey92_file(path):
    """VALKEY081 (Valkey 9.2) with a string and a Path Hash (type 23: a path count, then each
    path, its field count and fields), checksum 0 (disabled)."""
    body = b"VALKEY081" + b"\xfa" + rdb_string(b"valkey-ver") + rdb_string(b"9.2.0")
    body += b"\xfe\x00" + b"\x00" + rdb_string(b"s") + rdb_string(b"v")
    body += b"\x17" + rdb_string(b"ph") + rdb_length(2)
    body += rdb_string(b"/a") + rdb_length(1) + rdb_string(b"f") + rdb_string(b"1")
    body += rdb_string(b"/a/b") + rdb_length(1) + rdb_string(b"g") + rdb_string(b"\xff\x00")
    body += b"\xff" + b"\x00" * 8
    with open(path, "wb") as f:
        f.write(body)
    return path


@test
def valkey_9_2_files_are_read_and_judged_and_their_path_hashes_named(h):
    path = valkey92_file(h.path("v92.rdb"))
    rc, out, err = run("rdb", "check", path, "--format", "json")
    eq(rc, 0, err)
    got = json.loads(out)
    eq(got["rdb_version"], 81)
    eq(got["total_keys"], 2)
    ok(any(t["name"] == "PATH_HASH" and t["keys"] == 1 for t in got["types"]), got["types"])
    rc, out, err = run("rdb", "inspect", path, "--target", "valkey-9.2")
    eq(rc, 0, err)
    ok("target valkey-9.2: loads as is" in out, out)
    rc, out, err = run("rdb", "inspect", path, "--target", "valkey-9.0", "--format", "json")
    eq(rc, 0, err)
    t = json.loads(out)["target"]
    eq(t["verdict"], "cannot move")
    ok(any("Path Hash" in b for b in t["blockers"]), t)
    ok(any("81 -> 80" in c for c in t["changes"]), t)
    rc, out, err = run("rdb", "dump", path, "--format", "json")
    eq(rc, 0, err)
    keys = {k["key"]: k for k in map(json.loads, out.splitlines())}
    eq(keys["ph"]["type"], "pathhash")
    eq(keys["ph"]["value"], [["/a", [["f", "1"]]], ["/a/b", [["g", {"hex": "ff00"}]]]])
    rc, out, err = run("rdb", "dump", path, "--format", "resp")
    eq(rc, 0, err)
    ok("1 Path Hash key(s) (Valkey 9.2) left out" in err, err)
    ok("ph" not in out, out)
    out_path = h.path("v92-out.rdb")
    rc, out, err = run("rdb", "convert", path, out_path, "--rdb-version", "81")
    eq(rc, 1, "a Path Hash blocks the conversion")
    ok("Path Hash key(s)" in err and '"ph"' in err, err)
    ok(not os.path.exists(out_path), "nothing written")
    rc, out, err = run("rdb", "convert", path, out_path, "--rdb-version", "81", "--exclude", "ph")
    eq(rc, 0, err)
    with open(out_path, "rb") as f:
        eq(f.read(9), b"VALKEY081")


@test
def help_answers(h):
    rc, out, _ = run("help", "rdb")
    eq(rc, 0)
    ok("check" in out and "inspect" in out, out)
    rc, out, _ = run("rdb", "--help")
    eq(rc, 0)
    ok("keyshift rdb inspect FILE" in out, out)
    rc, out, _ = run("rdb", "inspect", "--help")
    eq(rc, 0)
    ok("--target" in out and "--delimiter" in out, out)


if __name__ == "__main__":
    run_tests()
