"""What the replication tests share (test_serve_replica: keyshift as a replica; and
test_repl_primary: keyshift as a primary): clients, INFO replication, a background writer of
every type, a fill, and the wait for the replica's offset followed by a DEBUG DIGEST
comparison."""

from harness import HOST, BackgroundWriter, eq, wait_for

import redis  # python3-redis, /usr/bin/python3


def client(srv, db=0):
    return redis.Redis(host=HOST, port=srv.port, db=db, socket_timeout=30)


def info(srv, section="replication"):
    return client(srv).info(section)


class Writer(BackgroundWriter):
    """Keeps changing the primary: strings, counters, lists, hashes, sets, sorted sets,
    EXPIRE, DEL, a second database (3) and MULTI/EXEC; `extra(r, i)` may add more."""

    def __init__(self, srv):
        self.srv = srv
        super().__init__()

    def connect(self):
        return client(self.srv), client(self.srv, 3)

    def extra(self, r, i, rnd):
        return False

    def step(self, clients, rnd):
        r, r3 = clients
        i = rnd.randint(0, 2000)
        if self.extra(r, i, rnd):
            return
        op = rnd.randint(0, 8)
        if op == 0:
            r.set("str:%d" % i, "w%d" % self.count)
        elif op == 1:
            r.incr("counter:%d" % (i % 10))
        elif op == 2:
            r.rpush("list:%d" % (i % 50), self.count)
        elif op == 3:
            r.hset("hash:%d" % (i % 100), "f%d" % (i % 7), self.count)
        elif op == 4:
            r.sadd("set:%d" % (i % 100), i)
        elif op == 5:
            r.zincrby("zset:%d" % (i % 30), 1.5, "m%d" % (i % 9))
        elif op == 6:
            r.expire("str:%d" % i, 3600)
            r.delete("str:%d" % (i + 1))
        elif op == 7:
            p = r.pipeline(transaction=True)
            p.incr("tx:a")
            p.lpush("tx:log", self.count)
            p.execute()
        else:
            r3.set("db3:%d" % i, self.count)


def fill(primary, keys=5000):
    r = client(primary)
    r.execute_command("DEBUG", "POPULATE", str(keys), "pre", "32")
    for i in range(200):
        r.hset("phash:%d" % i, mapping={"a": i, "b": "x" * (i % 70)})
        r.zadd("pzset:%d" % (i % 20), {"m%d" % i: i})
        r.rpush("plist:%d" % (i % 20), *range(i % 40 + 1))
        r.sadd("pset:%d" % (i % 20), *("s%d" % j for j in range(i % 30 + 1)))
    r.set("ttl-key", "v", ex=5000)
    r.xadd("stream", {"f": "v"})
    client(primary, 5).set("in-db-5", "yes")


def link_up(replica):
    return info(replica).get("master_link_status") == "up"


def caught_up(primary, replica):
    want = info(primary)["master_repl_offset"]
    got = info(replica)
    return got.get("master_link_status") == "up" and got["slave_repl_offset"] == want


def same_data(primary, replica, what):
    wait_for(lambda: caught_up(primary, replica), "%s: the replica's offset reaches the primary's"
             % what, timeout=60)
    eq(client(replica).execute_command("DEBUG", "DIGEST"),
       client(primary).execute_command("DEBUG", "DIGEST"), "%s: DEBUG DIGEST" % what)
    eq(client(replica).dbsize(), client(primary).dbsize(), "%s: DBSIZE" % what)
    eq(client(replica, 3).dbsize(), client(primary, 3).dbsize(), "%s: DBSIZE of db 3" % what)


def sync_under_writes(primary, replica, what, writer_class=Writer):
    writer = writer_class(primary)
    try:
        wait_for(lambda: link_up(replica), "%s: master_link_status:up" % what, timeout=60)
        wait_for(lambda: writer.count > 300, "%s: the writer gets going" % what)
    finally:
        writer.stop()
    same_data(primary, replica, what)
