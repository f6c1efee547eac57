#!/usr/bin/env python3
"""Helper for side_by_side.sh: free ports, the memory load stream, and the report.

Plain python3, standard library only. Subcommands:
  free-port                      print a TCP port on 127.0.0.1 that was free a moment ago
  gen-load [KIND] COUNT OUT      write COUNT commands as RESP to OUT, one key each:
                                   strings (default): SET key:N <16-byte value>
                                   hash: HSET hash:N f0 v.. .. f9 v..  (10 short fields)
                                   set:  SADD set:N <20 integers>
                                   zset: ZADD zset:N <20 float scores and short members>
  checks KIND COUNT              print spot checks for a loaded KIND as lines
                                   EXPECTED<TAB>COMMAND ARGS (space-separated, no spaces inside)
  report RESULTS_DIR             print the side-by-side tables, ratios, goals and memory lines
"""

import csv
import math
import os
import socket
import statistics
import sys

# redis-benchmark's CSV test names, in the order the tables list them. `-t ping` yields
# both PING_INLINE and PING_MBULK; each counts as its own line in the geometric mean.
TEST_ORDER = ["PING_INLINE", "PING_MBULK", "SET", "GET", "INCR", "MSET (10 keys)"]
# The collections group (issue 3). redis-benchmark also prints "LPUSH (needed to benchmark
# LRANGE)" for its own list fill before the LRANGE tests; that line is not one of the tests
# asked for, so it is neither listed nor counted.
COLL_ORDER = ["LPUSH", "RPUSH", "LPOP", "RPOP", "SADD", "HSET", "SPOP", "ZADD", "ZPOPMIN",
              "LRANGE_100 (first 100 elements)", "LRANGE_300 (first 300 elements)",
              "LRANGE_500 (first 500 elements)", "LRANGE_600 (first 600 elements)"]
# group name -> (CSV file prefix, tests, title)
GROUPS = {
    "strings": ("", TEST_ORDER, "strings"),
    "collections": ("coll_", COLL_ORDER, "collections"),
}
SERVERS = ("redis", "keyshift")
TRANSPORTS = ("tcp", "unix")

# Goals from the issue: keyshift/redis requests-per-second geomean per pipeline depth,
# no single line below FLOOR, p50 no worse than redis, RSS ratio at most MEMORY_GOAL.
RPS_GOAL = {1: 1.0, 64: 1.25}
RPS_FLOOR = 0.9
P50_GOAL = 1.0
MEMORY_GOAL = 0.6
# Small collections (issue 3): keyshift's VmRSS growth over the empty server at most this
# fraction of redis-server's.
COLL_MEMORY_GOAL = 0.9

VALUE_LEN = 16
HASH_FIELDS = 10
SET_MEMBERS = 20
ZSET_MEMBERS = 20
# What each server's defaults must pick for these small values (hash/zset-max-listpack-*,
# set-max-intset-entries); the report flags any other encoding.
EXPECTED_ENCODING = {"strings": None, "hash": "listpack", "set": "intset", "zset": "listpack"}
MEMORY_KINDS = ("strings", "hash", "set", "zset")


def free_port():
    """Ask the kernel for an unused port; the caller retries if it is taken before use."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        print(s.getsockname()[1])


def resp(args):
    """One command as a RESP array of bulk strings."""
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


# Small collections as apps keep them. Deterministic, so both servers get the same bytes and
# `checks` can name values without reading the stream back.
def hash_fields(n):
    """10 fields f0..f9 with short non-numeric values (2..8 bytes, e.g. v123450)."""
    return [(b"f%d" % i, b"v%d" % (n * HASH_FIELDS + i)) for i in range(HASH_FIELDS)]


def set_members(n):
    """20 distinct integers in 0..999999 (ids; above 32767 so an intset uses 4-byte entries)."""
    return [b"%d" % ((n * 7919 + i * 104729) % 1000000) for i in range(SET_MEMBERS)]


ZSET_FRACTIONS = (b"25", b"5", b"75", b"125")


def zset_entries(n):
    """20 (score, member): non-integral float scores such as 1234.25, members short strings
    such as item:1234567. The fractions are exact in binary on purpose: redis 7.0 keeps a
    listpack score as d2string's "%.17g" text, so a score like 12.3 would cost it 17 bytes
    ("12.300000000000001") where 12.25 costs 5, an artefact of 7.0 rather than of the data."""
    return [(b"%d.%s" % ((n * 13 + i * 7) % 10000, ZSET_FRACTIONS[i % 4]),
             b"item:%d" % (n * ZSET_MEMBERS + i))
            for i in range(ZSET_MEMBERS)]


def command_for(kind, n):
    if kind == "strings":
        value = b"v%015d" % n
        assert len(value) == VALUE_LEN
        return [b"SET", b"key:%d" % n, value]
    if kind == "hash":
        args = [b"HSET", b"hash:%d" % n]
        for f, v in hash_fields(n):
            args += [f, v]
        return args
    if kind == "set":
        return [b"SADD", b"set:%d" % n] + set_members(n)
    if kind == "zset":
        args = [b"ZADD", b"zset:%d" % n]
        for score, member in zset_entries(n):
            args += [score, member]
        return args
    raise ValueError("unknown kind %r" % kind)


def gen_load(kind, count, out_path):
    """Exactly `count` distinct keys (key:N, hash:N, set:N or zset:N for N in 0..count-1), one
    command each, so `redis-cli --pipe` must report exactly `count` replies. strings: 16-byte
    non-numeric values (a leading letter so neither server can store them as integers)."""
    chunk = []
    with open(out_path, "wb") as out:
        for n in range(count):
            chunk.append(resp(command_for(kind, n)))
            if len(chunk) >= 65536:
                out.write(b"".join(chunk))
                chunk.clear()
        out.write(b"".join(chunk))


def checks(kind, count):
    """Spot checks on the first and last key: EXPECTED<TAB>command line."""
    lines = []
    for n in sorted({0, count // 2, count - 1}):
        if kind == "strings":
            lines.append(("v%015d" % n, "GET key:%d" % n))
        elif kind == "hash":
            lines.append(("%d" % HASH_FIELDS, "HLEN hash:%d" % n))
            f, v = hash_fields(n)[-1]
            lines.append((v.decode(), "HGET hash:%d %s" % (n, f.decode())))
        elif kind == "set":
            lines.append(("%d" % SET_MEMBERS, "SCARD set:%d" % n))
            lines.append(("1", "SISMEMBER set:%d %s" % (n, set_members(n)[-1].decode())))
        elif kind == "zset":
            lines.append(("%d" % ZSET_MEMBERS, "ZCARD zset:%d" % n))
            score, member = zset_entries(n)[3]
            lines.append((score.decode(), "ZSCORE zset:%d %s" % (n, member.decode())))
        else:
            raise ValueError("unknown kind %r" % kind)
    for expected, cmd in lines:
        print("%s\t%s" % (expected, cmd))


def parse_csv(path):
    """{test: (rps, p50_ms)} from one `redis-benchmark --csv` run; header and noise skipped."""
    rows = {}
    with open(path, newline="") as f:
        for fields in csv.reader(f):
            if len(fields) < 8 or fields[0] == "test":
                continue
            try:
                rps = float(fields[1])
                p50 = float(fields[4])
            except ValueError:
                continue
            rows[fields[0]] = (rps, p50)
    return rows


def fmt_rps(v):
    return "%.0f" % v


def fmt_ms(v):
    return "%.3f" % v


def fmt_ratio(v):
    return "n/a" if v is None else "%.2fx" % v


def ratio(num, den):
    return None if den <= 0 else num / den


def geomean(values):
    values = [v for v in values if v is not None and v > 0]
    if not values:
        return None
    return math.exp(sum(math.log(v) for v in values) / len(values))


def fmt_ratio3(v):
    """Goal lines use three decimals so a value just under a threshold never prints as on it."""
    return "n/a" if v is None else "%.3fx" % v


def verdict(ok):
    return "PASS" if ok else "MISS"


def print_table(headers, rows):
    widths = [max(len(str(r[i])) for r in [headers] + rows) for i in range(len(headers))]
    line = lambda r: "  ".join(
        (str(c).ljust(widths[i]) if i == 0 else str(c).rjust(widths[i])) for i, c in enumerate(r)
    )
    print(line(headers))
    print("  ".join("-" * w for w in widths))
    for r in rows:
        print(line(r))


def read_kv(path):
    """key=value lines written by the shell script."""
    kv = {}
    if os.path.exists(path):
        with open(path) as f:
            for raw in f:
                if "=" in raw:
                    k, v = raw.rstrip("\n").split("=", 1)
                    kv[k] = v
    return kv


def bench_group(results_dir, meta, group, summary, missing):
    """Tables and goal lines of one group: medians over rounds per (server, transport, pipeline,
    test)."""
    prefix, order, title = GROUPS[group]
    pipelines = [int(p) for p in meta.get("pipelines", "1 64").split()]
    rounds = int(meta.get("rounds", "3"))
    transports = meta.get("transports", " ".join(TRANSPORTS)).split()
    for transport in transports:
        for pipeline in pipelines:
            samples = {s: {t: [] for t in order} for s in SERVERS}
            for server in SERVERS:
                for r in range(1, rounds + 1):
                    path = os.path.join(
                        results_dir, "%s%s_P%d_%s_r%d.csv" % (prefix, transport, pipeline, server, r)
                    )
                    if not os.path.exists(path):
                        missing.append(path)
                        continue
                    rows = parse_csv(path)
                    for t in order:
                        if t in rows:
                            samples[server][t].append(rows[t])
                        else:
                            missing.append("%s (test %s)" % (path, t))

            if group == "strings":
                n = "-n %s" % meta.get("n_P%d" % pipeline, "?")
            else:
                n = "-n %s, LRANGE_* -n %s" % (meta.get("n_coll_P%d" % pipeline, "?"),
                                              meta.get("n_lrange_P%d" % pipeline, "?"))
            print()
            print(
                "== %s: %s, -P %d (-c %s %s, median of %d round%s) =="
                % (title, transport, pipeline, meta.get("clients", "50"), n, rounds,
                   "" if rounds == 1 else "s")
            )
            table = []
            rps_ratios = []
            p50_ratios = []
            for t in order:
                if not samples["redis"][t] or not samples["keyshift"][t]:
                    table.append([t, "n/a", "n/a", "n/a", "n/a", "n/a", "n/a"])
                    continue
                # Median of each metric on its own: rps and p50 may come from different rounds.
                r_rps = statistics.median(x[0] for x in samples["redis"][t])
                k_rps = statistics.median(x[0] for x in samples["keyshift"][t])
                r_p50 = statistics.median(x[1] for x in samples["redis"][t])
                k_p50 = statistics.median(x[1] for x in samples["keyshift"][t])
                rr = ratio(k_rps, r_rps)
                pr = ratio(k_p50, r_p50)
                rps_ratios.append(rr)
                p50_ratios.append(pr)
                table.append([t, fmt_rps(r_rps), fmt_rps(k_rps), fmt_ratio(rr),
                              fmt_ms(r_p50), fmt_ms(k_p50), fmt_ratio(pr)])
            print_table(
                ["test", "redis rps", "keyshift rps", "ratio", "redis p50 ms",
                 "keyshift p50 ms", "p50 ratio"],
                table,
            )
            gm = geomean(rps_ratios)
            known = [x for x in rps_ratios if x is not None]
            low = min(known) if known else None
            gm_p50 = geomean(p50_ratios)
            worst_p50 = max((x for x in p50_ratios if x is not None), default=None)
            print()
            print("rps ratio (keyshift/redis): geomean %s, lowest %s"
                  % (fmt_ratio(gm), fmt_ratio(low)))
            print("p50 ratio (keyshift/redis, lower is better): geomean %s, worst %s"
                  % (fmt_ratio(gm_p50), fmt_ratio(worst_p50)))
            where = "%-11s %-4s -P %-2d" % (title, transport, pipeline)
            goal = RPS_GOAL.get(pipeline)
            if goal is not None:
                ok = gm is not None and gm >= goal and low is not None and low >= RPS_FLOOR
                text = ("requests/s geomean %s (goal >= %.2fx), lowest %s (goal >= %.2fx): %s"
                        % (fmt_ratio3(gm), goal, fmt_ratio3(low), RPS_FLOOR, verdict(ok)))
                print("goal " + text)
                summary.append("%s  %s" % (where, text))
            ok = worst_p50 is not None and worst_p50 <= P50_GOAL
            text = ("p50 no worse than redis: worst line %s (goal <= %.2fx): %s"
                    % (fmt_ratio3(worst_p50), P50_GOAL, verdict(ok)))
            print("goal " + text)
            summary.append("%s  %s" % (where, text))


def mib(kb):
    return "%.1f MiB" % (kb / 1024.0)


def memory_strings(mem, summary):
    """The 1,000,000-key SET comparison; its goal uses total VmRSS."""
    print()
    print("== memory: %s x SET key:N <%d-byte value> after FLUSHALL =="
          % (mem.get("keys", "?"), VALUE_LEN))
    table = []
    notes = []
    for s in SERVERS:
        rss = int(mem.get("%s_rss_kb" % s, "0"))
        base = int(mem.get("%s_rss_base_kb" % s, "0"))
        used = mem.get("%s_used_memory" % s, "")
        used_txt = ("%.1f MiB" % (int(used) / 1048576.0)) if used.isdigit() else "n/a"
        if not used.isdigit():
            notes.append("%s: INFO memory gave no used_memory (%s)" % (s, used or "no reply"))
        table.append([s, mib(rss), mib(base), mib(rss - base), used_txt,
                      mem.get("%s_dbsize" % s, "?")])
    print_table(["server", "VmRSS", "VmRSS before load", "VmRSS growth",
                 "INFO used_memory", "DBSIZE"], table)
    for note in notes:
        print("note: " + note)
    r_rss = int(mem.get("redis_rss_kb", "0"))
    k_rss = int(mem.get("keyshift_rss_kb", "0"))
    rr = ratio(k_rss, r_rss)
    print()
    print("VmRSS ratio (keyshift/redis): %s" % fmt_ratio(rr))
    ru, ku = mem.get("redis_used_memory", ""), mem.get("keyshift_used_memory", "")
    if ru.isdigit() and ku.isdigit():
        print("used_memory ratio (keyshift/redis): %s" % fmt_ratio(ratio(int(ku), int(ru))))
    text = "VmRSS keyshift/redis %s (goal <= %.2fx): %s" % (
        fmt_ratio3(rr), MEMORY_GOAL, verdict(rr is not None and rr <= MEMORY_GOAL))
    print("goal " + text)
    summary.append("%-21s  %s" % ("memory strings", text))


MEMORY_TITLES = {
    "hash": "HSET hash:N with %d fields f0..f9, values v<number> (2-8 bytes)" % HASH_FIELDS,
    "set": "SADD set:N with %d integer members (0..999999)" % SET_MEMBERS,
    "zset": "ZADD zset:N with %d members item:<number>, scores like 1234.25" % ZSET_MEMBERS,
}


def memory_collections(mems, summary):
    """One table for the small-collection loads; the goal uses VmRSS growth over the empty
    server (an empty server's baseline would otherwise dominate 100,000 small keys)."""
    print()
    print("== memory: small collections, each type on freshly started servers ==")
    for kind, mem in mems:
        print("  %-5s %s x %s" % (kind, mem.get("keys", "?"), MEMORY_TITLES[kind]))
    print()
    table = []
    notes = []
    for kind, mem in mems:
        keys = int(mem.get("keys", "0") or 0)
        growth = {}
        used = {}
        for s in SERVERS:
            rss = int(mem.get("%s_rss_kb" % s, "0"))
            base = int(mem.get("%s_rss_base_kb" % s, "0"))
            growth[s] = rss - base
            u = mem.get("%s_used_memory" % s, "")
            used[s] = int(u) if u.isdigit() else None
            enc = mem.get("%s_encoding" % s, "?")
            want = EXPECTED_ENCODING.get(kind)
            if want is not None and enc != want:
                notes.append("%s: %s stores the sample key as '%s', not the default '%s': the "
                             "comparison is not like for like" % (kind, s, enc, want))
            table.append([
                kind, s, enc, mib(base), mib(rss), mib(rss - base),
                "%.0f" % ((rss - base) * 1024.0 / keys) if keys else "n/a",
                "%.1f MiB" % (used[s] / 1048576.0) if used[s] is not None else "n/a",
                mem.get("%s_dbsize" % s, "?"),
            ])
        gr = ratio(growth["keyshift"], growth["redis"])
        tr = ratio(int(mem.get("keyshift_rss_kb", "0")), int(mem.get("redis_rss_kb", "0")))
        ur = (ratio(used["keyshift"], used["redis"])
              if used["redis"] is not None and used["keyshift"] is not None else None)
        table.append([kind, "ratio", "", "", fmt_ratio(tr), fmt_ratio(gr), fmt_ratio(gr), fmt_ratio(ur), ""])
        text = ("%s: VmRSS growth keyshift/redis %s (goal <= %.2fx; total VmRSS %s, used_memory %s): %s"
                % (kind, fmt_ratio3(gr), COLL_MEMORY_GOAL, fmt_ratio(tr), fmt_ratio(ur),
                   verdict(gr is not None and gr <= COLL_MEMORY_GOAL)))
        summary.append("%-21s  %s" % ("memory " + kind, text))
    print_table(["type", "server", "encoding", "VmRSS empty", "VmRSS loaded", "VmRSS growth",
                 "bytes/key", "INFO used_memory", "DBSIZE"], table)
    print()
    print("bytes/key = VmRSS growth / keys. used_memory is each server's own count (redis: "
          "allocator bytes incl. its overhead; keyshift: its accounting), so compare VmRSS.")
    for note in notes:
        print("note: " + note)
    for kind, mem in mems:
        gr = ratio(int(mem.get("keyshift_rss_kb", "0")) - int(mem.get("keyshift_rss_base_kb", "0")),
                   int(mem.get("redis_rss_kb", "0")) - int(mem.get("redis_rss_base_kb", "0")))
        print("goal %s: VmRSS growth keyshift/redis %s (goal <= %.2fx): %s"
              % (kind, fmt_ratio3(gr), COLL_MEMORY_GOAL,
                 verdict(gr is not None and gr <= COLL_MEMORY_GOAL)))


def report(results_dir):
    """All groups and memory results found in RESULTS_DIR; exits 1 if benchmark data is missing."""
    meta = read_kv(os.path.join(results_dir, "meta.txt"))
    missing = []
    summary = []

    if meta.get("skip_bench") != "1":
        for group in meta.get("groups", "strings").split():
            bench_group(results_dir, meta, group, summary, missing)

    mem = read_kv(os.path.join(results_dir, "memory_strings.txt"))
    if mem:
        memory_strings(mem, summary)
    mems = []
    for kind in MEMORY_KINDS[1:]:
        m = read_kv(os.path.join(results_dir, "memory_%s.txt" % kind))
        if m:
            mems.append((kind, m))
    if mems:
        memory_collections(mems, summary)

    if summary:
        print()
        print("== goals (information only; they do not change the exit status) ==")
        for line in summary:
            print("  " + line)

    if missing:
        print()
        print("error: missing benchmark results:", file=sys.stderr)
        for m in missing[:20]:
            print("  " + m, file=sys.stderr)
        return 1
    return 0


def main(argv):
    if len(argv) >= 2 and argv[1] == "free-port":
        free_port()
        return 0
    if len(argv) == 4 and argv[1] == "gen-load":
        gen_load("strings", int(argv[2]), argv[3])
        return 0
    if len(argv) == 5 and argv[1] == "gen-load" and argv[2] in MEMORY_KINDS:
        gen_load(argv[2], int(argv[3]), argv[4])
        return 0
    if len(argv) == 4 and argv[1] == "checks" and argv[2] in MEMORY_KINDS:
        checks(argv[2], int(argv[3]))
        return 0
    if len(argv) == 3 and argv[1] == "report":
        return report(argv[2])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
