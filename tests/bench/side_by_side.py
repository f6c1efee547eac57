#!/usr/bin/env python3
"""Helper for side_by_side.sh: free ports, the memory load stream, and the report.

Plain python3, standard library only. Subcommands:
  free-port                      print a TCP port on 127.0.0.1 that was free a moment ago
  gen-load COUNT OUT             write COUNT `SET key:N <16-byte value>` commands as RESP to OUT
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
SERVERS = ("redis", "keyshift")
TRANSPORTS = ("tcp", "unix")

# Goals from the issue: keyshift/redis requests-per-second geomean per pipeline depth,
# no single line below FLOOR, p50 no worse than redis, RSS ratio at most MEMORY_GOAL.
RPS_GOAL = {1: 1.0, 64: 1.25}
RPS_FLOOR = 0.9
P50_GOAL = 1.0
MEMORY_GOAL = 0.6

VALUE_LEN = 16


def free_port():
    """Ask the kernel for an unused port; the caller retries if it is taken before use."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        print(s.getsockname()[1])


def gen_load(count, out_path):
    """Exactly `count` distinct keys key:0..key:count-1, each with a 16-byte non-numeric value
    (a leading letter so neither server can store it as an integer)."""
    chunk = []
    with open(out_path, "wb") as out:
        for n in range(count):
            key = b"key:%d" % n
            value = b"v%015d" % n
            assert len(value) == VALUE_LEN
            chunk.append(b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$16\r\n%s\r\n" % (len(key), key, value))
            if len(chunk) >= 65536:
                out.write(b"".join(chunk))
                chunk.clear()
        out.write(b"".join(chunk))


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


def report(results_dir):
    """Medians over rounds per (server, transport, pipeline, test); exits 1 if data is missing."""
    meta = read_kv(os.path.join(results_dir, "meta.txt"))
    pipelines = [int(p) for p in meta.get("pipelines", "1 64").split()]
    rounds = int(meta.get("rounds", "3"))
    transports = meta.get("transports", " ".join(TRANSPORTS)).split()
    missing = []
    summary = []

    if meta.get("skip_bench") != "1":
        for transport in transports:
            for pipeline in pipelines:
                samples = {s: {t: [] for t in TEST_ORDER} for s in SERVERS}
                for server in SERVERS:
                    for r in range(1, rounds + 1):
                        path = os.path.join(
                            results_dir, "%s_P%d_%s_r%d.csv" % (transport, pipeline, server, r)
                        )
                        if not os.path.exists(path):
                            missing.append(path)
                            continue
                        rows = parse_csv(path)
                        for t in TEST_ORDER:
                            if t in rows:
                                samples[server][t].append(rows[t])
                            else:
                                missing.append("%s (test %s)" % (path, t))

                n = meta.get("n_P%d" % pipeline, "?")
                print()
                print(
                    "== %s, -P %d (-c %s -n %s, median of %d round%s) =="
                    % (transport, pipeline, meta.get("clients", "50"), n, rounds,
                       "" if rounds == 1 else "s")
                )
                table = []
                rps_ratios = []
                p50_ratios = []
                for t in TEST_ORDER:
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
                where = "%-4s -P %-2d" % (transport, pipeline)
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

    mem = read_kv(os.path.join(results_dir, "memory.txt"))
    if mem:
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
            table.append([s, "%.1f MiB" % (rss / 1024.0), "%.1f MiB" % (base / 1024.0),
                          "%.1f MiB" % ((rss - base) / 1024.0), used_txt,
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
        summary.append("%-10s  %s" % ("memory", text))

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
        gen_load(int(argv[2]), argv[3])
        return 0
    if len(argv) == 3 and argv[1] == "report":
        return report(argv[2])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
