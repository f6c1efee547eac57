#!/usr/bin/python3
"""`keyshift import` writing keys as plain commands, into Debian's redis-server 7.0: every
corpus file with `--method commands` must give the DEBUG DIGEST the corpus recorded for
redis-server 7.0.15 loading it (as RESTORE does in test_import.py), and big keys (a list
and a sorted set of 2 million elements, a stream of 200,000 entries with a consumer group
and pending entries) go in chunks through a temporary key, ending with
the DEBUG DIGEST-VALUE a redis-server loading the same file gives them, also when the
import is killed in the middle of a big key and run again.

Run: KEYSHIFT_BIN=build/keyshift /usr/bin/python3 tests/integration/test_import_commands.py [NAME...]
"""

import glob
import json
import os
import signal
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import Skip, eq, keyshift_bin, ok, run_tests, test  # noqa: E402

CORPUS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "shared",
                      "corpus", "rdb")
BIG = 2_000_000
STREAM = 200_000


def corpus(name):
    path = os.path.join(CORPUS, name)
    if not os.path.exists(path):
        raise Skip("no corpus at %s" % CORPUS)
    return path


def import_json(*args, check=0):
    p = subprocess.run([keyshift_bin(), "import"] + [str(a) for a in args] + ["--format", "json"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
    out, err = p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")
    if check is not None:
        eq(p.returncode, check, "keyshift import %s: %s%s" % (" ".join(map(str, args)), out, err))
    try:
        return json.loads(out)
    except ValueError:
        raise AssertionError("not JSON (%d): %r %r" % (p.returncode, out, err))


def target(h, name="target"):
    if not hasattr(h, "targets"):
        h.targets = {}
    if name not in h.targets:
        h.counter += 1
        sock = os.path.join(h.tmp, "%s-%d.sock" % (name, h.counter))
        srv = h.redis_server("--unixsocket", sock, name=name)
        srv.unixsocket = sock
        h.targets[name] = srv
    srv = h.targets[name]
    srv.cli("FLUSHALL")
    return srv


def url(srv):
    return "unix://" + srv.unixsocket


def resp(*args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


def big_file(h):
    """An RDB saved by redis-server with one list and one sorted set of BIG elements, and a
    redis-server that loaded it at start-up (the reference); made once per run."""
    if getattr(h, "big", None):
        return h.big
    maker = target(h, "big-maker")
    chunks = []
    for start in range(0, BIG, 1000):
        chunks.append(resp(b"RPUSH", b"biglist",
                           *[b"e%07d" % i for i in range(start, min(BIG, start + 1000))]))
    for start in range(0, BIG, 1000):
        args = [b"ZADD", b"bigzset"]
        for i in range(start, min(BIG, start + 1000)):
            args += [b"%d.5" % (i % 99991), b"m%07d" % i]
        chunks.append(resp(*args))
    for i in range(1, STREAM + 1):
        chunks.append(resp(b"XADD", b"bigstream", b"%d-1" % i, b"f", b"v%06d" % i, b"g", b"w"))
    chunks.append(resp(b"XGROUP", b"CREATE", b"bigstream", b"readers", b"0"))
    chunks.append(resp(b"XREADGROUP", b"GROUP", b"readers", b"alice", b"COUNT", b"700",
                       b"STREAMS", b"bigstream", b">"))
    # A deleted entry that is still pending (XCLAIM keeps it only while the entry exists, so
    # it is added, claimed and deleted again), one that is not, and the last.
    chunks.append(resp(b"XDEL", b"bigstream", b"3-1", b"1000-1", b"%d-1" % STREAM))
    chunks.append(resp(b"SET", b"small", b"value"))
    chunks.append(resp(b"PEXPIREAT", b"biglist", int(time.time() * 1000) + 3_600_000))
    subprocess.run(["redis-cli", "-s", maker.unixsocket, "--pipe"], input=b"".join(chunks),
                   check=True, stdout=subprocess.DEVNULL, timeout=300)
    maker.cli("SAVE")
    path = os.path.join(maker.workdir, "dump.rdb")
    ref = h.redis_server("--dir", maker.workdir, name="big-reference")
    eq(ref.cli("LLEN", "biglist"), str(BIG))
    h.big = path
    h.big_digests = {k: ref.cli("DEBUG", "DIGEST-VALUE", k)
                     for k in ("biglist", "bigzset", "bigstream")}
    h.big_stream = stream_state(ref)
    ref.stop()
    h.forget(ref)
    maker.cli("FLUSHALL")
    return path


def stream_state(srv):
    info = srv.cli("XINFO", "STREAM", "bigstream").split("\n")
    drop = ("radix-tree-keys", "radix-tree-nodes")
    info = [x for i, x in enumerate(info) if x not in drop and (i == 0 or info[i - 1] not in drop)]
    return (info, srv.cli("XINFO", "GROUPS", "bigstream"),
            srv.cli("XPENDING", "bigstream", "readers"))


def check_big(dst, h):
    for key, want in h.big_digests.items():
        eq(dst.cli("DEBUG", "DIGEST-VALUE", key), want, key)
    eq(dst.cli("LLEN", "biglist"), str(BIG))
    eq(dst.cli("ZCARD", "bigzset"), str(BIG))
    eq(dst.cli("DBSIZE"), "4")  # no temporary key left behind
    ok(int(dst.cli("PTTL", "biglist")) > 3_000_000)
    eq(stream_state(dst), h.big_stream)
    eq(dst.cli("GET", "small"), "value")


@test
def every_corpus_file_redis_7_0_loads_imports_as_commands_with_its_ground_truth_digest(h):
    dst = target(h)
    checked = 0
    for path in sorted(glob.glob(os.path.join(corpus(""), "*.rdb"))):
        with open(path + ".json") as f:
            doc = json.load(f)
        srv = doc.get("servers", {}).get("redis-7.0.15")
        if srv is None or srv.get("loaded") is not True or srv.get("digest") is None:
            continue
        dst.cli("FLUSHALL")
        rep = import_json(path, "--to", url(dst), "--no-checkpoint", "--method", "commands",
                          check=None)
        if not rep["ok"] and "module keys cannot be moved" in rep["error"]:
            continue  # no target reads module values without the module
        ok(rep["ok"], "%s: %s" % (path, rep["error"]))
        eq(rep["method"], "commands")
        eq(rep["keys"]["as_commands"], rep["keys"]["written"], path)
        eq(dst.cli("DEBUG", "DIGEST"), srv["digest"], path)
        checked += 1
    ok(checked >= 25, "only %d corpus files checked" % checked)


@test
def stream_groups_consumers_and_pending_entries_arrive_as_commands(h):
    path = corpus("redis70-streams.rdb")
    seen = {}
    for method in ("restore", "commands"):
        dst = target(h)
        import_json(path, "--to", url(dst), "--no-checkpoint", "--method", method)
        state = {}
        for key in sorted(dst.cli("KEYS", "*").split("\n")):
            lines = dst.cli("XINFO", "STREAM", key, "FULL").split("\n")
            # Consumers' seen and active times are when the commands ran (XCLAIM sets
            # them, as in Valkey's own AOF rewrite); the radix tree's shape may differ.
            kept = [line for i, line in enumerate(lines)
                    if line not in ("seen-time", "active-time", "radix-tree-keys",
                                    "radix-tree-nodes")
                    and (i == 0 or lines[i - 1] not in ("seen-time", "active-time",
                                                         "radix-tree-keys",
                                                         "radix-tree-nodes"))]
            state[key] = kept
        seen[method] = state
    ok(any("pel-count" in s for s in seen["restore"].values()), "the corpus file has no groups")
    eq(seen["commands"], seen["restore"])


@test
def a_big_list_and_zset_go_in_chunks_and_arrive_whole(h):
    path = big_file(h)
    dst = target(h)
    rep = import_json(path, "--to", url(dst), "--no-checkpoint", "--big-key-bytes", "1000000")
    ok(rep["ok"], rep)
    eq(rep["keys"]["as_commands"], 3)
    eq(rep["keys"]["chunked"], 3)
    ok(rep["keys"]["commands"] > 2 * BIG // 4096, rep["keys"])
    eq(rep["big_key_bytes"], 1000000)
    check_big(dst, h)


@test
def a_big_key_already_in_the_target_is_skipped_and_its_temporary_key_removed(h):
    path = big_file(h)
    dst = target(h)
    dst.cli("SET", "bigzset", "mine")
    rep = import_json(path, "--to", url(dst), "--no-checkpoint", "--big-key-bytes", "1000000",
                      "--conflict", "skip")
    eq(rep["keys"]["conflicts_skipped"], 1)
    eq(dst.cli("GET", "bigzset"), "mine")
    eq(dst.cli("DBSIZE"), "4")
    eq(dst.cli("DEBUG", "DIGEST-VALUE", "biglist"), h.big_digests["biglist"])


@test
def an_import_killed_inside_a_big_key_and_rerun_doubles_no_element(h):
    path = big_file(h)
    dst = target(h)
    ckpt = h.path("big.checkpoint")
    caught = 0
    for _ in range(3):
        p = subprocess.Popen([keyshift_bin(), "import", path, "--to", url(dst), "--checkpoint",
                              ckpt, "--big-key-bytes", "1000000", "--window", "8"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while p.poll() is None and time.monotonic() < deadline:
            # Killed once a temporary key holds part of a big key.
            tmp = [k for k in dst.cli("KEYS", "*keyshift-import-tmp*").split("\n") if k]
            if tmp and int(dst.cli("DBSIZE")) >= 1:
                p.send_signal(signal.SIGKILL)
                caught += 1
                break
            time.sleep(0.005)
        p.wait()
        if p.returncode == 0:
            break
    ok(caught >= 1, "never caught inside a big key")
    rep = import_json(path, "--to", url(dst), "--checkpoint", ckpt, "--big-key-bytes", "1000000")
    ok(rep["resumed"] or rep["already_complete"], rep)
    check_big(dst, h)


@test
def a_scanned_server_moves_as_commands_too(h):
    src = target(h, "scan-source")
    for name in ("redis70-zsets.rdb", "redis70-streams.rdb", "redis70-hashes.rdb",
                 "redis70-expire-multidb.rdb"):
        import_json(corpus(name), "--to", url(src), "--no-checkpoint", "--conflict", "replace")
    dst = target(h)
    rep = import_json(url(src), "--to", url(dst), "--no-checkpoint", "--method", "commands",
                      "--mode", "scan")
    eq(rep["source_kind"], "scan")
    eq(rep["keys"]["as_commands"], rep["keys"]["written"])
    ok(rep["keys"]["written"] > 30, rep["keys"])
    eq(dst.cli("DEBUG", "DIGEST"), src.cli("DEBUG", "DIGEST"))


def dump_jsonl(h, path, name):
    out = h.path(name)
    with open(out, "wb") as f:
        subprocess.run([keyshift_bin(), "rdb", "dump", path, "--format", "json"], stdout=f,
                       check=True, timeout=120)
    return out


@test
def corpus_files_dumped_to_json_lines_import_with_the_digest_of_the_rdb_import(h):
    dst = target(h)
    checked = 0
    for path in sorted(glob.glob(os.path.join(corpus(""), "*.rdb"))):
        with open(path + ".json") as f:
            doc = json.load(f)
        srv = doc.get("servers", {}).get("redis-7.0.15")
        if srv is None or srv.get("loaded") is not True or srv.get("digest") is None:
            continue
        if any(k.get("type") == "module" for k in srv.get("keys", [])):
            continue
        # Named .txt: the source is known by its content, not its name.
        try:
            jsonl = dump_jsonl(h, path, os.path.basename(path) + ".txt")
        except subprocess.CalledProcessError:
            continue  # module values, which rdb dump cannot write
        for method in ("restore", "commands"):
            dst.cli("FLUSHALL")
            rep = import_json(jsonl, "--to", url(dst), "--no-checkpoint", "--method", method,
                              check=None)
            ok(rep["ok"], "%s (%s): %s" % (path, method, rep["error"]))
            eq(rep["source_kind"], "jsonl")
            eq(dst.cli("DEBUG", "DIGEST"), srv["digest"], "%s (%s)" % (path, method))
        checked += 1
    ok(checked >= 25, "only %d corpus files checked" % checked)
    # And into the embedded engine's data file, which a redis-server then loads.
    out_dir = h.path("jsonl-embedded")
    os.makedirs(out_dir)
    path = corpus("redis70-streams.rdb")
    rep = import_json(dump_jsonl(h, path, "streams.jsonl"), "--dir", out_dir, "--target",
                      "redis-7.0")
    ok(rep["ok"], rep)
    loaded = h.redis_server("--dir", out_dir, name="loads-jsonl")
    with open(path + ".json") as f:
        eq(loaded.cli("DEBUG", "DIGEST"), json.load(f)["servers"]["redis-7.0.15"]["digest"])


@test
def a_damaged_json_line_is_refused_with_its_number_before_anything_is_written(h):
    dst = target(h)
    dst.cli("SET", "keep", "me")
    jsonl = dump_jsonl(h, corpus("redis70-hashes.rdb"), "hashes.jsonl")
    with open(jsonl) as f:
        lines = f.read().split("\n")
    lines[5] = lines[5][:-3] + "]]"  # cut inside the value
    bad = h.path("hashes-bad.jsonl")
    with open(bad, "w") as f:
        f.write("\n".join(lines))
    rep = import_json(bad, "--to", url(dst), "--no-checkpoint", "--conflict", "replace", check=1)
    ok("line 6:" in rep["error"], rep["error"])
    eq(dst.cli("DBSIZE"), "1")
    eq(dst.cli("GET", "keep"), "me")


@test
def a_json_lines_import_killed_midway_and_rerun_ends_equal_to_the_source(h):
    maker = target(h, "jsonl-maker")
    cmds = [resp(b"SET", b"s:%06d" % i, b"v" * (i % 50)) for i in range(60000)]
    cmds += [resp(b"RPUSH", b"l:%05d" % i, *[b"e%d" % j for j in range(20)]) for i in range(5000)]
    subprocess.run(["redis-cli", "-s", maker.unixsocket, "--pipe"], input=b"".join(cmds),
                   check=True, stdout=subprocess.DEVNULL, timeout=120)
    maker.cli("SAVE")
    want = maker.cli("DEBUG", "DIGEST")
    jsonl = dump_jsonl(h, os.path.join(maker.workdir, "dump.rdb"), "large.jsonl")
    dst = target(h)
    ckpt = h.path("jsonl.checkpoint")
    caught = 0
    for stop_at in (10000, 40000):
        p = subprocess.Popen([keyshift_bin(), "import", jsonl, "--to", url(dst), "--checkpoint",
                              ckpt, "--window", "16", "--method", "commands"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while p.poll() is None and time.monotonic() < deadline:
            if int(dst.cli("DBSIZE")) >= stop_at:
                p.send_signal(signal.SIGKILL)
                caught += 1
                break
            time.sleep(0.005)
        p.wait()
    ok(caught >= 1, "never caught midway")
    rep = import_json(jsonl, "--to", url(dst), "--checkpoint", ckpt, "--method", "commands")
    ok(rep["resumed"] or rep["already_complete"], rep)
    ok(rep["already_complete"] or rep["keys"]["resumed_past"] > 0, rep)
    eq(dst.cli("DEBUG", "DIGEST"), want)


@test
def a_target_still_loading_its_dataset_is_waited_for(h):
    maker = target(h, "loading-maker")
    cmds = [resp(b"SET", b"k:%05d" % i, b"x") for i in range(8000)]
    subprocess.run(["redis-cli", "-s", maker.unixsocket, "--pipe"], input=b"".join(cmds),
                   check=True, stdout=subprocess.DEVNULL, timeout=60)
    maker.cli("SAVE")
    work = h.path("loading")
    os.makedirs(work)
    os.rename(os.path.join(maker.workdir, "dump.rdb"), os.path.join(work, "dump.rdb"))
    sock = os.path.join(work, "loading.sock")
    # 500 us per key: about 4 s of loading, answering -LOADING in between.
    srv = subprocess.Popen(["redis-server", "--port", "0", "--unixsocket", sock, "--dir", work,
                            "--save", "", "--key-load-delay", "500",
                            "--loading-process-events-interval-bytes", "1024",
                            "--enable-debug-command", "yes"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while not os.path.exists(sock) and time.monotonic() < deadline:
            time.sleep(0.01)
        probe = subprocess.run(["redis-cli", "-s", sock, "PING"], stdout=subprocess.PIPE)
        loading = b"LOADING" in probe.stdout
        p = subprocess.run([keyshift_bin(), "import", corpus("redis70-sets.rdb"), "--to",
                            "unix://" + sock, "--no-checkpoint", "--format", "json"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
        rep = json.loads(p.stdout)
        ok(rep["ok"], (rep, p.stderr))
        if not loading:
            raise Skip("the server finished loading before the probe")
        ok(b"is loading its dataset; waiting" in p.stderr, p.stderr)
        out = subprocess.run(["redis-cli", "-s", sock, "DBSIZE"], stdout=subprocess.PIPE)
        eq(out.stdout.strip(), b"8011")
    finally:
        srv.terminate()
        srv.wait()


if __name__ == "__main__":
    sys.exit(run_tests())
