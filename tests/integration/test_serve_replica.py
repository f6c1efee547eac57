#!/usr/bin/python3
"""keyshift serve as a replica of Debian's redis-server 7.0: `replicaof` in the config and the
REPLICAOF command, full sync (diskless and disk-based payloads) while a writer keeps changing
the primary, the command stream applied until the offsets match and DEBUG DIGEST agrees,
PSYNC continuation after the link is killed from either side, READONLY writes, ROLE, INFO
replication, and REPLICAOF NO ONE keeping the data under a new replication ID.
"""

import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import HOST, eq, keyshift_bin, ok, run_tests, test, wait_for  # noqa: E402
from redis_sources import redis74_server, valkey8_server  # noqa: E402
from repl_helpers import (Writer, caught_up, client, fill, info, link_up, same_data,  # noqa: E402
                          sync_under_writes)

import redis  # noqa: E402  (python3-redis, /usr/bin/python3)


def primary_server(h, diskless):
    return h.redis_server("--repl-diskless-sync", "yes" if diskless else "no",
                          "--repl-diskless-sync-delay", "0", name="primary")


def replica_server(h, primary=None, name="replica"):
    config = "enable-debug-command yes\n"
    if primary is not None:
        config += "replicaof %s %d\n" % (HOST, primary.port)
    return h.keyshift(config=config, name=name)


@test
def replica_from_config_syncs_diskless_and_follows_the_stream(h):
    primary = primary_server(h, diskless=True)
    fill(primary)
    replica = replica_server(h, primary)
    sync_under_writes(primary, replica, "diskless")
    i = info(replica)
    eq(i["role"], "slave", "INFO role")
    eq(i["master_host"], HOST, "master_host")
    eq(i["master_port"], primary.port, "master_port")
    eq(i["master_sync_in_progress"], 0, "master_sync_in_progress")
    eq(i["slave_read_only"], 1, "slave_read_only")
    eq(i["slave_priority"], 100, "slave_priority")
    eq(i["replica_announced"], 1, "replica_announced")
    eq(i["connected_slaves"], 0, "connected_slaves")
    eq(i["master_replid"], info(primary)["master_replid"], "master_replid follows the primary")
    eq(i["slave_read_repl_offset"], i["slave_repl_offset"], "read and applied offsets")
    ok("master_link_down_since_seconds" not in i, "no link-down field while up")
    role = client(replica).execute_command("ROLE")
    eq([role[0], role[1], role[2], role[3]], [b"slave", HOST.encode(), primary.port,
                                              b"connected"], "ROLE")
    eq(role[4], i["slave_repl_offset"], "ROLE offset")
    # The primary sees it as an online replica on keyshift's listening port.
    pinfo = info(primary)
    eq(pinfo["connected_slaves"], 1, "the primary's connected_slaves")
    # REPLCONF ACK (sent every second) tells the primary how far the replica got.
    wait_for(lambda: info(primary)["slave0"]["offset"] == info(primary)["master_repl_offset"],
             "the primary sees the replica's ACK reach its offset", timeout=30)
    eq(pinfo["slave0"]["port"], replica.port, "REPLCONF listening-port")
    eq(client(replica, 5).get("in-db-5"), b"yes", "a key of another database")
    ok(client(replica).ttl("ttl-key") > 4000, "a TTL loaded with the payload")


@test
def a_valkey_8_primary_is_followed_under_writes_with_an_equal_digest(h):
    primary = valkey8_server(h, "valkey-primary")
    fill(primary)
    replica = replica_server(h, primary)
    sync_under_writes(h, primary, replica, "valkey 8.0")
    eq(info(replica)["master_replid"], info(primary)["master_replid"], "master_replid")


@test
def a_redis_7_4_primary_with_field_ttls_is_followed_and_its_rdb_12_loaded(h):
    primary = redis74_server(h, "redis74-primary")
    fill(primary)
    r = client(primary)
    far = 4102444800000
    for i in range(300):
        r.hset("fhash:%d" % i, mapping={"a": i, "b": "x" * (i % 90), "c": "keep"})
        r.execute_command("HPEXPIREAT", "fhash:%d" % i, far + i, "FIELDS", "2", "a", "b")
    replica = replica_server(h, primary)
    wait_for(lambda: caught_up(primary, replica), "the full sync (RDB 12) is loaded",
             timeout=60)
    # The stream carries the field-TTL commands as Redis 7.4 propagates them.
    for i in range(0, 300, 3):
        r.execute_command("HPERSIST", "fhash:%d" % i, "FIELDS", "1", "a")
        r.execute_command("HPEXPIRE", "fhash:%d" % (i + 1), "3600000", "FIELDS", "1", "c")
    r.hset("fhash:new", "z", "1")
    r.execute_command("HPEXPIREAT", "fhash:new", far, "FIELDS", "1", "z")
    wait_for(lambda: caught_up(primary, replica), "the stream is applied", timeout=60)
    eq(client(replica).dbsize(), r.dbsize(), "DBSIZE")
    rr = client(replica)
    for key in ("fhash:0", "fhash:1", "fhash:2", "fhash:new"):
        fields = sorted(r.hkeys(key))
        eq(rr.hgetall(key), r.hgetall(key), "%s: fields and values" % key)
        eq(rr.execute_command("HPEXPIRETIME", key, "FIELDS", len(fields), *fields),
           r.execute_command("HPEXPIRETIME", key, "FIELDS", len(fields), *fields),
           "%s: field expiry times" % key)
    # verify data compares every key both ways, field TTLs included.
    p = subprocess.run([keyshift_bin(), "verify", "data", "redis://%s:%d" % (HOST, primary.port),
                        "redis://%s:%d" % (HOST, replica.port), "--no-progress"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    eq(p.returncode, 0, "verify data: %s%s" % (p.stdout.decode(), p.stderr.decode()))
    ok("hash field TTLs compared" in p.stdout.decode(), p.stdout.decode())


@test
def writes_are_refused_on_a_read_only_replica(h):
    primary = primary_server(h, diskless=True)
    replica = replica_server(h, primary)
    wait_for(lambda: link_up(replica), "master_link_status:up", timeout=60)
    r = client(replica)
    for args in (("SET", "k", "v"), ("DEL", "k"), ("LPUSH", "l", "x")):
        try:
            r.execute_command(*args)
            ok(False, "%s was accepted" % (args,))
        except redis.exceptions.ReadOnlyError as e:
            eq(str(e), "You can't write against a read only replica.", "READONLY text")
    p = r.pipeline(transaction=True)
    p.set("k", "v")
    try:
        p.execute()
        ok(False, "MULTI SET EXEC was accepted")
    except redis.exceptions.ResponseError as e:
        ok("read only replica" in str(e), "a queued write is refused: %s" % e)
    eq(r.get("k"), None, "reads are served")
    client(primary).set("k", "from-primary")
    wait_for(lambda: r.get("k") == b"from-primary", "the primary's write arrives")


@test
def replicaof_command_disk_sync_then_psync_continuation_after_kills(h):
    primary = primary_server(h, diskless=False)
    fill(primary)
    replica = replica_server(h)
    eq(info(replica)["role"], "master", "a primary before REPLICAOF")
    eq(client(replica).execute_command("REPLICAOF", HOST, str(primary.port)), b"OK", "REPLICAOF")
    eq(client(replica).execute_command("REPLICAOF", HOST, str(primary.port)),
       b"OK Already connected to specified master", "REPLICAOF again")
    eq(client(replica).config_get("replicaof"), {"replicaof": "%s %d" % (HOST, primary.port)},
       "CONFIG GET replicaof")
    sync_under_writes(primary, replica, "disk-based")
    stats = info(primary, "stats")
    full, partial = stats["sync_full"], stats["sync_partial_ok"]
    eq(full, 1, "one full sync")
    replid = info(replica)["master_replid"]

    # The link killed on the replica's side, then on the primary's, while writes go on.
    for n, kill in enumerate((
            lambda: client(replica).execute_command("CLIENT", "KILL", "TYPE", "master"),
            lambda: client(primary).execute_command("CLIENT", "KILL", "TYPE", "replica"))):
        writer = Writer(primary)
        try:
            wait_for(lambda: writer.count > 50, "the writer gets going")
            eq(kill(), 1, "one link killed (%d)" % n)
            wait_for(lambda: info(primary, "stats")["sync_partial_ok"] == partial + n + 1,
                     "a PSYNC continuation (%d)" % n, timeout=30)
            wait_for(lambda: link_up(replica), "the link up again (%d)" % n, timeout=30)
            wait_for(lambda: writer.count > 200, "writes after the resync")
        finally:
            writer.stop()
        same_data(primary, replica, "after kill %d" % n)
    eq(info(primary, "stats")["sync_full"], full, "no further full sync")
    eq(info(replica)["master_replid"], replid, "the replication ID is kept")


@test
def replicaof_no_one_promotes_keeping_the_data(h):
    primary = primary_server(h, diskless=True)
    fill(primary)
    replica = replica_server(h, primary)
    wait_for(lambda: caught_up(primary, replica), "caught up", timeout=60)
    digest = client(primary).execute_command("DEBUG", "DIGEST")
    before = info(replica)
    r = client(replica)
    eq(r.execute_command("REPLICAOF", "NO", "ONE"), b"OK", "REPLICAOF NO ONE")
    after = info(replica)
    eq(after["role"], "master", "role after promotion")
    eq(r.config_get("replicaof"), {"replicaof": ""}, "CONFIG GET replicaof after NO ONE")
    eq(after["master_replid2"], before["master_replid"], "replid2 is the old history")
    ok(after["master_replid"] != before["master_replid"], "a new replication ID")
    eq(after["second_repl_offset"], before["slave_repl_offset"] + 1, "second_repl_offset")
    eq(r.execute_command("DEBUG", "DIGEST"), digest, "the data is kept")
    eq(r.execute_command("ROLE")[0], b"master", "ROLE")
    ok(r.set("now-writable", "yes"), "writes accepted")
    # The primary no longer feeds it.
    client(primary).set("after-promotion", "x")
    wait_for(lambda: info(primary)["connected_slaves"] == 0, "the link is closed", timeout=30)
    eq(r.get("after-promotion"), None, "nothing more from the old primary")


@test
def the_stream_fires_keyspace_notifications_on_the_replica(h):
    primary = primary_server(h, diskless=True)
    replica = replica_server(h, primary)
    wait_for(lambda: link_up(replica), "master_link_status:up", timeout=60)
    client(replica).config_set("notify-keyspace-events", "KEA")
    sub = client(replica).pubsub()
    sub.psubscribe("__keyspace@0__:*")
    wait_for(lambda: sub.get_message(timeout=0.1) is not None, "psubscribe confirmed")
    client(primary).set("watched", "1")
    client(primary).lpush("watched-list", "x")
    seen = []

    def got_both():
        m = sub.get_message(timeout=0.1)
        if m is not None and m["type"] == "pmessage":
            seen.append((m["channel"], m["data"]))
        return len(seen) >= 2

    wait_for(got_both, "two keyspace events", timeout=30)
    eq(seen, [(b"__keyspace@0__:watched", b"set"), (b"__keyspace@0__:watched-list", b"lpush")],
       "events of the primary's writes")
    sub.close()


@test
def an_unreachable_primary_leaves_the_link_down_and_retrying(h):
    primary = primary_server(h, diskless=True)
    port = primary.port
    primary.stop()
    h.forget(primary)
    replica = replica_server(h)
    r = client(replica)
    eq(r.execute_command("REPLICAOF", HOST, str(port)), b"OK", "REPLICAOF")
    role = r.execute_command("ROLE")
    eq(role[:3], [b"slave", HOST.encode(), port], "ROLE")
    ok(role[3] in (b"connect", b"connecting"), "ROLE state while down: %r" % role[3])
    eq(role[4], -1, "no offset without a link")
    i = info(replica)
    eq(i["master_link_status"], "down", "master_link_status")
    eq(i["master_last_io_seconds_ago"], -1, "master_last_io_seconds_ago")
    ok("master_link_down_since_seconds" in i, "master_link_down_since_seconds while down")
    wait_for(lambda: "Error condition on socket for SYNC" in replica.log(), "a failed dial logged",
             timeout=30)
    eq(r.execute_command("REPLICAOF", "NO", "ONE"), b"OK", "REPLICAOF NO ONE")
    eq(info(replica)["role"], "master", "a primary again")


@test
def primaryauth_and_primaryuser_log_the_link_in(h):
    primary = h.redis_server("--requirepass", "secret", "--repl-diskless-sync-delay", "0",
                             name="primary-auth")
    r = redis.Redis(host=HOST, port=primary.port, password="secret", socket_timeout=30)
    r.execute_command("ACL", "SETUSER", "repl", "on", ">replpw", "+psync", "+replconf",
                      "+ping", "+sync")
    r.set("guarded", "1")
    for name, config in (("by-password", "primaryauth secret\n"),
                         ("by-user", "primaryuser repl\nmasterauth replpw\n")):
        replica = h.keyshift(config="replicaof %s %d\n%s" % (HOST, primary.port, config),
                             name="replica-" + name)
        wait_for(lambda: link_up(replica), "%s: master_link_status:up" % name, timeout=60)
        wait_for(lambda: client(replica).get("guarded") == b"1", "%s: the data arrives" % name)
    wrong = h.keyshift(config="replicaof %s %d\nprimaryauth nope\n" % (HOST, primary.port),
                       name="replica-wrong")
    wait_for(lambda: "Error condition on socket for SYNC" in wrong.log(),
             "a refused login logged", timeout=30)
    eq(info(wrong)["master_link_status"], "down", "a wrong password keeps the link down")


if __name__ == "__main__":
    sys.exit(run_tests())
