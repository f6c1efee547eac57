#!/usr/bin/env python3
"""Client-side benchmark: redis-benchmark vs `keyshift bench` against the same Debian
redis-server in one run. For each test and pipeline depth both clients run with the same
-c/-n/-P (alternating, FLUSHALL in between, median of ROUNDS); it prints each client's
requests/s, the keyshift/redis-benchmark ratio (goal >= 0.95) and the CPU seconds each client
process used per million requests (user+sys from wait4; goal: keyshift's <= redis-benchmark's),
then keyshift bench --threads 1 vs --threads 2. Goals are printed as PASS/MISS, information
only: the exit status says whether everything ran, not whether goals were met.

Environment (see bench_client.sh): KEYSHIFT_BIN, TESTS, PIPELINES, N_P1, N_PN, CLIENTS,
ROUNDS, SERVER_CPU, CLIENT_CPU.
"""

import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

QUIET = re.compile(r"^(?P<title>.+): (?P<rps>\d+\.\d+) requests per second")


def env(name, default):
    return os.environ.get(name, default)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_measured(argv):
    """Runs argv; returns (stdout, cpu seconds of the child: user + sys)."""
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out = p.stdout.read()
    err = p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        raise RuntimeError("%s failed (%d): %s" % (argv, p.returncode, err.decode()[-500:]))
    return out.decode(), ru.ru_utime + ru.ru_stime


def result_rps(text, test):
    """requests/s of the test's own line (the LPUSH that LRANGE needs comes first)."""
    want = {"lrange_100": "LRANGE_100", "mset": "MSET"}.get(test, test.upper())
    for line in text.replace("\r", "\n").splitlines():
        m = QUIET.match(line.strip())
        if m and m.group("title").startswith(want) and "rps=" not in line:
            return float(m.group("rps"))
    raise RuntimeError("no result line for %s in %r" % (test, text[-300:]))


def main():
    keyshift = os.path.abspath(env("KEYSHIFT_BIN", "build/keyshift"))
    tests = env("TESTS", "set,get,incr,lpush,lrange_100,mset").split(",")
    pipelines = [int(p) for p in env("PIPELINES", "1 16").split()]
    n_for = {1: int(env("N_P1", "200000"))}
    clients = env("CLIENTS", "50")
    rounds = int(env("ROUNDS", "3"))
    server_cpu, client_cpu = env("SERVER_CPU", "0"), env("CLIENT_CPU", "1")
    for tool in ("redis-server", "redis-benchmark", "redis-cli", "taskset"):
        if shutil.which(tool) is None:
            sys.exit("bench_client: %s not found" % tool)
    if not os.access(keyshift, os.X_OK):
        sys.exit("bench_client: keyshift binary not found at %s" % keyshift)
    work = tempfile.mkdtemp(prefix="ks-bench-client-")
    # A private copy: a rebuild of build/keyshift during the run must not change the client.
    client = os.path.join(work, "keyshift")
    shutil.copy(keyshift, client)
    port = free_port()
    server = subprocess.Popen(["taskset", "-c", server_cpu, "redis-server", "--port", str(port),
                               "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                               "--dir", work, "--logfile", os.path.join(work, "redis.log")],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    cli = ["redis-cli", "-p", str(port)]
    for _ in range(100):
        if subprocess.run(cli + ["ping"], stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL).stdout.strip() == b"PONG":
            break
        time.sleep(0.1)
    else:
        server.kill()
        sys.exit("bench_client: redis-server did not start")
    rows = []
    try:
        version = subprocess.run(cli + ["info", "server"], stdout=subprocess.PIPE).stdout
        version = re.search(rb"redis_version:(\S+)", version).group(1).decode()
        print("bench_client: redis-server %s on CPU %s, clients on CPU %s, -c %s, %d round(s), "
              "median" % (version, server_cpu, client_cpu, clients, rounds), flush=True)
        for p in pipelines:
            n = n_for.get(p, int(env("N_PN", "1000000")))
            for test in tests:
                common = ["-h", "127.0.0.1", "-p", str(port), "-c", clients, "-n", str(n),
                          "-P", str(p), "-r", "100000", "-t", test, "-q"]
                # LRANGE runs its LPUSH first: both clients send 2n requests for it.
                sent = 2 * n if test.startswith("lrange") else n
                res = {"redis-benchmark": ([], []), "keyshift": ([], [])}
                for _ in range(rounds):
                    for name, argv in (("redis-benchmark", ["redis-benchmark"] + common),
                                       ("keyshift", [client, "bench"] + common)):
                        subprocess.run(cli + ["flushall"], stdout=subprocess.DEVNULL)
                        out, cpu = run_measured(["taskset", "-c", client_cpu] + argv)
                        res[name][0].append(result_rps(out, test))
                        res[name][1].append(cpu / sent * 1e6)
                rb_rps = statistics.median(res["redis-benchmark"][0])
                ks_rps = statistics.median(res["keyshift"][0])
                rb_cpu = statistics.median(res["redis-benchmark"][1])
                ks_cpu = statistics.median(res["keyshift"][1])
                rows.append((test, p, rb_rps, ks_rps, rb_cpu, ks_cpu))
                print("  %-10s -P %-3d done" % (test, p), file=sys.stderr, flush=True)
        print()
        print("| test | -P | redis-benchmark rps | keyshift bench rps | ratio (goal >= 0.95) "
              "| CPU s / 1M req redis-benchmark | CPU s / 1M req keyshift | CPU goal |")
        print("|---|---:|---:|---:|---:|---:|---:|---|")
        for test, p, rb, ks, rbc, ksc in rows:
            ratio = ks / rb
            print("| %s | %d | %.0f | %.0f | %.3f %s | %.2f | %.2f | %s |" %
                  (test, p, rb, ks, ratio, "PASS" if ratio >= 0.95 else "MISS", rbc, ksc,
                   "PASS" if ksc <= rbc else "MISS"))
        # --threads: the same GET load from one and from two event loops.
        n = int(env("N_PN", "1000000"))
        print()
        for threads in (1, 2):
            vals = []
            for _ in range(rounds):
                out, _ = run_measured([client, "bench", "-h", "127.0.0.1", "-p", str(port),
                                       "-c", clients, "-n", str(n), "-P", "16", "-t", "get",
                                       "--threads", str(threads), "-q"])
                vals.append(result_rps(out, "get"))
            print("keyshift bench --threads %d (unpinned, get -P 16): %.0f requests/s" %
                  (threads, statistics.median(vals)))
    finally:
        server.terminate()
        server.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
