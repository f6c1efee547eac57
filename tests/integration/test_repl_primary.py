#!/usr/bin/python3
"""keyshift serve as a replication primary: Debian's redis-server 7.0 (and keyshift itself)
follow it through REPLCONF, PSYNC and a full sync (the diskless `$EOF:` framing and the
disk-based `$<len>` one) while a writer keeps changing it, then the command stream until
the replica's offset is keyshift's master_repl_offset and DEBUG DIGEST agrees; a killed
link comes back by a partial resync from the backlog; INFO replication, ROLE, CLIENT LIST
flags=S; WAIT counting real acknowledgements; min-replicas-to-write refusing writes. A
valkey-server 8 replica too when KEYSHIFT_VALKEY_SERVER names one (skipped otherwise).
"""

import os
import socket
import subprocess
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import HOST, Server, Skip, eq, ok, run_tests, test, wait_for  # noqa: E402
import repl_helpers  # noqa: E402
from repl_helpers import caught_up, client, info, link_up, fill, same_data  # noqa: E402

import redis  # noqa: E402  (python3-redis, /usr/bin/python3)


class Writer(repl_helpers.Writer):
    """The shared writer, plus SET EX, EVAL and a capped XADD."""

    def extra(self, r, i, rnd):
        op = rnd.randint(0, 10)
        if op == 0:
            r.set("ex:%d" % i, "w%d" % self.count, ex=3600)
        elif op == 1:
            r.eval("redis.call('set', KEYS[1], ARGV[1]); return redis.call('incr', KEYS[2])",
                   2, "lua:%d" % (i % 20), "lua:n", self.count)
        elif op == 2:
            r.xadd("stream:%d" % (i % 5), {"f": self.count}, maxlen=100)
        else:
            return False
        return True


def primary_server(h, *directives, name="primary"):
    """A keyshift primary; its diskless syncs start at once unless `directives` set
    repl-diskless-sync-delay (Valkey's default waits 5 seconds for more replicas)."""
    delay = () if "--repl-diskless-sync-delay" in directives else (
        "--repl-diskless-sync-delay", "0")
    return h.keyshift("--enable-debug-command", "yes", *delay, *directives, name=name)


def redis_replica(h, primary):
    return h.redis_server("--replicaof", HOST, str(primary.port), name="redis-replica")


def answers(srv):
    try:
        return redis.Redis(host=HOST, port=srv.port, socket_timeout=0.3).ping()
    except redis.exceptions.RedisError:
        return False


def big_values(srv):
    """About 12 MB that does not compress: a payload of several chunks."""
    p = client(srv).pipeline(transaction=False)
    for i in range(600):
        p.set("big-value:%d" % i, os.urandom(10000).hex())
    p.execute()


def sync_under_writes(primary, replica, what):
    repl_helpers.sync_under_writes(primary, replica, what, Writer)


def check_primary_view(primary, replica):
    i = info(primary)
    eq(i["role"], "master", "INFO role")
    eq(i["connected_slaves"], 1, "connected_slaves")
    wait_for(lambda: info(primary)["slave0"]["offset"] == info(primary)["master_repl_offset"],
             "the replica's ACK reaches master_repl_offset", timeout=30)
    i = info(primary)
    s0 = i["slave0"]
    eq((s0["ip"], s0["port"], s0["state"]), (HOST, replica.port, "online"), "slave0")
    eq(i["repl_backlog_active"], 1, "repl_backlog_active")
    ok(i["repl_backlog_histlen"] > 0, "repl_backlog_histlen %d" % i["repl_backlog_histlen"])
    eq(i["repl_backlog_first_byte_offset"] + i["repl_backlog_histlen"] - 1,
       i["master_repl_offset"], "the backlog ends at master_repl_offset")
    eq(i["master_replid"], info(replica)["master_replid"], "one replication ID")
    role = client(primary).execute_command("ROLE")
    eq(role[0], b"master", "ROLE")
    eq(role[2], [[HOST.encode(), str(replica.port).encode(), str(s0["offset"]).encode()]],
       "ROLE's replicas")
    clients = client(primary).client_list(_type="replica")
    eq(len(clients), 1, "CLIENT LIST TYPE replica")
    eq(clients[0]["flags"], "S", "flags=S")


@test
def redis_replica_syncs_diskless_follows_and_resumes_by_partial_resync(h):
    primary = primary_server(h)
    fill(primary, 3000)
    replica = redis_replica(h, primary)
    sync_under_writes(primary, replica, "diskless")
    ok("receiving streamed RDB from master with EOF" in replica.log(),
       "the EOF-marked payload:\n%s" % replica.log()[-2000:])
    check_primary_view(primary, replica)
    eq(client(replica, 5).get("in-db-5"), b"yes", "a key of another database")
    ok(client(replica).ttl("ttl-key") > 4000, "a TTL sent with the payload")
    stats = info(primary, "stats")
    eq((stats["sync_full"], stats["sync_partial_ok"]), (1, 0), "one full sync")

    writer = Writer(primary)
    try:
        wait_for(lambda: writer.count > 50, "the writer gets going")
        eq(client(primary).execute_command("CLIENT", "KILL", "TYPE", "replica"), 1,
           "the replica's link killed")
        wait_for(lambda: info(primary, "stats")["sync_partial_ok"] == 1,
                 "a partial resync", timeout=30)
        wait_for(lambda: writer.count > 300, "writes after the resync")
    finally:
        writer.stop()
    same_data(primary, replica, "after the kill")
    ok("Successful partial resynchronization" in replica.log(),
       "the replica's log:\n%s" % replica.log()[-2000:])
    eq(info(primary, "stats")["sync_full"], 1, "no second full sync")


@test
def redis_replica_syncs_from_a_disk_payload_and_a_lost_backlog_means_a_full_sync(h):
    primary = primary_server(h, "--repl-diskless-sync", "no", "--repl-backlog-size", "16kb")
    fill(primary, 3000)
    big_values(primary)
    replica = redis_replica(h, primary)
    sync_under_writes(primary, replica, "disk-based")
    ok("receiving streamed RDB from master with EOF" not in replica.log(),
       "a $<len> payload:\n%s" % replica.log()[-2000:])
    # The replica sleeps, its link is killed and more than the backlog is written meanwhile:
    # its PSYNC asks for bytes the backlog no longer holds.
    replid = info(primary)["master_replid"]
    sleeper = threading.Thread(
        target=lambda: client(replica).execute_command("DEBUG", "SLEEP", "3"), daemon=True)
    sleeper.start()
    wait_for(lambda: not answers(replica), "the replica is asleep", timeout=10)
    eq(client(primary).execute_command("CLIENT", "KILL", "TYPE", "replica"), 1, "link killed")
    r = client(primary)
    for i in range(400):
        r.set("big:%d" % i, "y" * 100)
    sleeper.join()
    wait_for(lambda: info(primary, "stats")["sync_full"] == 2, "a second full sync", timeout=30)
    same_data(primary, replica, "after the backlog was outrun")
    eq(info(primary, "stats")["sync_partial_err"], 1, "the refused PSYNC is counted")
    ok("for lack of backlog" in primary.log(), "keyshift's log:\n%s" % primary.log()[-2000:])
    eq(info(primary)["master_replid"], replid, "the replication ID is kept")


def without_dir(primary):
    """Points the primary's `dir` at a directory that is then removed: a snapshot written to
    a file there fails, so a sync that succeeds wrote none."""
    gone = os.path.join(primary.workdir, "gone")
    os.mkdir(gone)
    eq(client(primary).config_set("dir", gone), True, "CONFIG SET dir")
    os.rmdir(gone)


@test
def diskless_sync_writes_no_file_and_the_disk_path_still_needs_one(h):
    primary = primary_server(h, "--enable-protected-configs", "yes")
    fill(primary, 3000)
    big_values(primary)
    without_dir(primary)
    replica = redis_replica(h, primary)
    sync_under_writes(primary, replica, "diskless without a dir")
    log = primary.log()
    ok("Starting BGSAVE for SYNC with target: replicas sockets" in log and
       "to pipe through parent process" in log and
       "succeeded (socket). Waiting for REPLCONF ACK" in log,
       "keyshift's log:\n%s" % log[-2000:])
    ok("receiving streamed RDB from master with EOF" in replica.log(),
       "the EOF-marked payload:\n%s" % replica.log()[-2000:])
    # The same primary told to use the disk cannot serve a new replica: the control.
    client(primary).config_set("repl-diskless-sync", "no")
    other = h.redis_server("--replicaof", HOST, str(primary.port), name="disk-replica")
    wait_for(lambda: "Failed opening the temp RDB file" in primary.log() or
             "BGSAVE child returned an error" in primary.log(),
             "the disk-based sync fails without its dir", timeout=30)
    ok(not link_up(other), "the disk-based replica is not up")


@test
def diskless_delay_and_max_replicas_let_two_replicas_share_one_child(h):
    # The delay is long, so only the second replica (max-replicas 2) starts the child.
    primary = primary_server(h, "--repl-diskless-sync-delay", "60",
                             "--repl-diskless-sync-max-replicas", "2")
    fill(primary, 3000)
    first = redis_replica(h, primary)
    wait_for(lambda: "Delay next BGSAVE for diskless SYNC" in primary.log(),
             "the first replica's sync is delayed", timeout=30)
    eq(info(primary)["slave0"]["state"], "wait_bgsave", "slave0 waits for the child")
    ok("Starting BGSAVE" not in primary.log(), "no child yet:\n%s" % primary.log()[-2000:])
    client(primary).set("written-while-waiting", "1")
    second = redis_replica(h, primary)
    writer = Writer(primary)
    try:
        for replica in (first, second):
            wait_for(lambda: link_up(replica), "both replicas up", timeout=60)
        wait_for(lambda: writer.count > 200, "the writer gets going")
    finally:
        writer.stop()
    same_data(primary, first, "the first replica")
    same_data(primary, second, "the second replica")
    log = primary.log()
    eq(log.count("Starting BGSAVE for SYNC with target: replicas sockets"), 1,
       "one child for both:\n%s" % log[-3000:])
    eq(log.count("Streamed RDB transfer with replica"), 2, "both fed by it")
    eq(info(primary, "stats")["sync_full"], 2, "two full syncs")
    eq(info(primary)["connected_slaves"], 2, "two replicas")


@test
def keyshift_follows_keyshift_and_wait_counts_its_ack(h):
    primary = primary_server(h)
    fill(primary, 3000)
    big_values(primary)
    replica = h.keyshift(config="enable-debug-command yes\nreplicaof %s %d\n"
                         % (HOST, primary.port), name="ks-replica")
    sync_under_writes(primary, replica, "keyshift replica")
    r = client(primary)
    r.set("waited", "1")
    eq(r.execute_command("WAIT", "1", "5000"), 1, "WAIT 1 counts the replica")
    eq(r.execute_command("WAIT", "0", "0"), 1, "WAIT 0 answers the count at once")
    eq(r.execute_command("WAIT", "2", "300"), 1, "WAIT 2 times out with the one it has")
    eq(client(replica).get("waited"), b"1", "the write is on the replica")


def keyshift_replica(h, primary, name, extra=""):
    return h.keyshift(config="enable-debug-command yes\nrepl-diskless-sync-delay 0\n"
                      "replicaof %s %d\n%s" % (HOST, primary.port, extra), name=name)


@test
def a_keyshift_replica_serves_a_redis_replica_the_primary_stream_verbatim(h):
    top = primary_server(h)
    fill(top, 3000)
    mid = keyshift_replica(h, top, "ks-mid")
    wait_for(lambda: link_up(mid), "the middle replica is up", timeout=60)
    leaf = redis_replica(h, mid)
    sync_under_writes(top, leaf, "top -> keyshift -> redis-server")
    same_data(top, mid, "the middle replica")
    i = info(mid)
    eq((i["role"], i["connected_slaves"], i["slave0"]["port"], i["slave0"]["state"]),
       ("slave", 1, leaf.port, "online"), "the middle replica's INFO replication")
    eq(len({info(s)["master_replid"] for s in (top, mid, leaf)}), 1, "one replication ID")
    eq(info(top)["connected_slaves"], 1, "the top primary sees only its own replica")
    # The leaf's link drops: it continues from the middle replica's backlog.
    eq(client(mid).execute_command("CLIENT", "KILL", "TYPE", "replica"), 1, "leaf link killed")
    wait_for(lambda: info(mid, "stats")["sync_partial_ok"] == 1, "the leaf continues",
             timeout=30)
    sync_under_writes(top, leaf, "after the leaf's link was killed")
    eq(info(mid, "stats")["sync_full"], 1, "one full sync of the leaf")


@test
def a_chained_snapshot_carries_the_database_the_primary_stream_is_in(h):
    # redis-server 7.0 -> keyshift -> (redis-server 7.0, keyshift). The top's stream is in
    # db 3 and never SELECTs again, so a leaf that syncs from the middle replica learns the
    # db only from the snapshot's repl-stream-db field: without it, the writes relayed after
    # its snapshot land in db 0.
    top = h.redis_server("--repl-diskless-sync-delay", "0", name="redis-top")
    mid = keyshift_replica(h, top, "ks-mid-db3")
    wait_for(lambda: link_up(mid), "the middle replica is up", timeout=60)
    r3 = client(top, 3)
    r3.set("before", "x")
    wait_for(lambda: caught_up(top, mid), "the middle replica has db 3's first write")
    leaves = [redis_replica(h, mid), keyshift_replica(h, mid, "ks-leaf-db3")]
    for leaf in leaves:
        wait_for(lambda: link_up(leaf), "the leaf is up", timeout=60)
    for i in range(200):
        r3.set("after:%d" % i, i)
    for leaf, what in zip(leaves, ("redis-server leaf", "keyshift leaf")):
        same_data(top, leaf, what)
        eq((client(leaf, 0).dbsize(), client(leaf, 3).dbsize()), (0, 201),
           "%s: every relayed write in db 3" % what)


@test
def a_promoted_replica_continues_its_siblings_and_its_old_primary(h):
    # No PINGs between the writes: each replica is at the primary's offset when it stops.
    top = primary_server(h, "--repl-ping-replica-period", "3600")
    fill(top, 2000)
    a = keyshift_replica(h, top, "ks-a")
    b = redis_replica(h, top)
    sync_under_writes(top, a, "replica a")
    same_data(top, b, "replica b")
    old = info(top)["master_replid"]
    offset = info(top)["master_repl_offset"]
    eq(client(a).execute_command("REPLICAOF", "NO", "ONE"), b"OK", "a promoted")
    i = info(a)
    eq((i["role"], i["master_replid2"], i["second_repl_offset"]), ("master", old, offset + 1),
       "a keeps the old history as replid2")
    eq(client(b).execute_command("REPLICAOF", HOST, str(a.port)), b"OK", "b follows a")
    wait_for(lambda: link_up(b) and info(a, "stats")["sync_partial_ok"] >= 1,
             "b continues from a",
             timeout=30)
    ok("Successful partial resynchronization" in b.log(), "b's log:\n%s" % b.log()[-2000:])
    eq(info(a, "stats")["sync_full"], 0, "no full sync for b")
    # The old primary follows a too, continuing its own history from a's backlog.
    eq(client(top).execute_command("REPLICAOF", HOST, str(a.port)), b"OK", "top follows a")
    wait_for(lambda: link_up(top) and info(a)["connected_slaves"] == 2, "top continues from a",
             timeout=30)
    eq(info(a, "stats")["sync_partial_ok"], 2, "two partial resyncs")
    eq(info(a, "stats")["sync_full"], 0, "no full sync for the demoted primary")
    writer = Writer(a)
    try:
        wait_for(lambda: writer.count > 200, "writes to a")
    finally:
        writer.stop()
    same_data(a, b, "b after the promotion")
    same_data(a, top, "the old primary after the promotion")


@test
def waitaof_counts_the_replicas_whose_aof_has_the_write(h):
    primary = primary_server(h)
    fill(primary, 500)
    with_aof = keyshift_replica(h, primary, "ks-aof", "appendonly yes\nappendfsync always\n")
    without = keyshift_replica(h, primary, "ks-no-aof")
    for replica in (with_aof, without):
        wait_for(lambda: link_up(replica), "both replicas up", timeout=60)
    r = client(primary)
    r.set("durable", "1")
    eq(r.execute_command("WAIT", "2", "5000"), 2, "WAIT counts both replicas")
    eq(r.execute_command("WAITAOF", "0", "1", "5000"), [0, 1],
       "WAITAOF counts the replica with an AOF")
    eq(r.execute_command("WAITAOF", "0", "2", "300"), [0, 1],
       "the replica without an AOF is never counted")
    eq(client(with_aof).get("durable"), b"1", "the write is on the replica")


@test
def valkey_8_replica_syncs_and_resumes(h):
    binary = os.environ.get("KEYSHIFT_VALKEY_SERVER")
    if not binary or not os.access(binary, os.X_OK):
        raise Skip("set KEYSHIFT_VALKEY_SERVER to a valkey-server 8 binary")
    primary = primary_server(h)
    fill(primary, 3000)
    workdir = h._dir("valkey-replica")

    def make(port):
        argv = [binary, "--port", str(port), "--bind", HOST, "--save", "", "--appendonly", "no",
                "--enable-debug-command", "yes", "--dir", workdir, "--daemonize", "no",
                "--logfile", "", "--replicaof", HOST, str(primary.port)]
        return Server("valkey-replica", argv, port, workdir)

    replica = h._launch(make)
    sync_under_writes(primary, replica, "valkey replica")
    eq(client(primary).execute_command("CLIENT", "KILL", "TYPE", "replica"), 1, "link killed")
    wait_for(lambda: info(primary, "stats")["sync_partial_ok"] == 1, "a partial resync",
             timeout=30)
    client(primary).set("after", "resync")
    same_data(primary, replica, "valkey replica after the kill")


@test
def min_replicas_to_write_refuses_writes_without_enough_replicas(h):
    primary = primary_server(h, "--min-replicas-to-write", "1")
    r = client(primary)
    try:
        r.set("k", "v")
        ok(False, "a write without replicas was accepted")
    except redis.exceptions.ResponseError as e:
        eq(str(e), "NOREPLICAS Not enough good replicas to write.", "NOREPLICAS")
    eq(r.get("k"), None, "reads are served")
    replica = redis_replica(h, primary)
    wait_for(lambda: link_up(replica), "master_link_status:up", timeout=60)
    wait_for(lambda: info(primary).get("min_slaves_good_slaves") == 1, "one good replica",
             timeout=30)
    ok(r.set("k", "v"), "a write with one good replica")
    r.config_set("min-replicas-to-write", "2")
    try:
        r.set("k", "w")
        ok(False, "a write with one of two replicas was accepted")
    except redis.exceptions.ResponseError as e:
        eq(str(e), "NOREPLICAS Not enough good replicas to write.", "NOREPLICAS with too few")


@test
def redis_cli_rdb_fetches_the_snapshot_by_sync(h):
    primary = primary_server(h)
    fill(primary, 500)
    out = os.path.join(primary.workdir, "fetched.rdb")
    p = subprocess.run(["redis-cli", "-h", HOST, "-p", str(primary.port), "--rdb", out],
                       capture_output=True, text=True, timeout=60)
    eq(p.returncode, 0, "redis-cli --rdb: %s %s" % (p.stdout, p.stderr))
    with open(out, "rb") as f:
        eq(f.read(9), b"REDIS0010", "an RDB 10 payload")
    loaded = h.redis_server("--dir", primary.workdir, "--dbfilename", "fetched.rdb",
                            name="loaded")
    eq(client(loaded).execute_command("DEBUG", "DIGEST"),
       client(primary).execute_command("DEBUG", "DIGEST"), "the fetched snapshot's digest")


@test
def a_replica_that_stops_reading_is_dropped_at_its_output_limit(h):
    primary = primary_server(h, "--client-output-buffer-limit", "replica 1mb 0 0")
    stalled = socket.create_connection((HOST, primary.port))
    stalled.sendall(b"REPLCONF listening-port 1\r\n")
    eq(stalled.recv(5), b"+OK\r\n", "REPLCONF")
    stalled.sendall(b"PSYNC ? -1\r\n")
    wait_for(lambda: info(primary)["connected_slaves"] == 1, "the replica registered")
    wait_for(lambda: info(primary)["slave0"]["state"] == "online", "its payload queued")
    r = client(primary)
    value = "z" * 100000
    for i in range(400):  # 40 MB of stream, far beyond what the sockets hold
        r.set("big:%d" % (i % 50), value)
        if info(primary)["connected_slaves"] == 0:
            break
    wait_for(lambda: info(primary)["connected_slaves"] == 0, "the stalled replica dropped")
    eq(info(primary, "stats")["client_output_buffer_limit_disconnections"], 1,
       "counted as an output-limit disconnection")
    ok("overcoming of output buffer limits" in primary.log(), "logged")
    stalled.close()


@test
def replconf_and_psync_refusals_answer_as_redis_does(h):
    primary = primary_server(h)
    reference = h.redis_server(name="reference")
    for args in (("REPLCONF", "nosuch", "x"), ("REPLCONF", "listening-port"),
                 ("REPLCONF", "listening-port", "abc"), ("REPLCONF", "capa", "eof"),
                 ("REPLCONF", "capa", "unknown"), ("PSYNC", "?", "abc")):
        with primary.conn() as a, reference.conn() as b:
            eq(a.command(*args)[0], b.command(*args)[0], "%s" % (args,))


if __name__ == "__main__":
    sys.exit(run_tests())
