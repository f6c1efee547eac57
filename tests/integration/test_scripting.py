"""Scripting of `keyshift serve` driven by python3-redis with Lua in the style of the popular
job queues and rate limiters (written here, not copied): a reliable queue that moves a job
to an in-flight list with a lease, a sliding-window rate limiter over a sorted set, a token
bucket with server.setresp(3); each run on keyshift and on Debian's redis-server 7.0 with
the replies compared. Also: a busy script answered BUSY to another client and stopped by
SCRIPT KILL, FUNCTION STATS showing a running function until FUNCTION KILL, FUNCTION
RESTORE/FLUSH/LOAD errors compared with redis-server, and function libraries surviving a
restart through the RDB file.

Run: KEYSHIFT_BIN=build/keyshift /usr/bin/python3 tests/integration/test_scripting.py
"""

import os
import sys
import threading
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import eq, ok, redis_module, run_tests, test  # noqa: E402

BOUND = 10.0  # upper bound for "this eventually happens"; never a timing check

ENQUEUE = """
local id = redis.call('INCR', KEYS[1] .. ':seq')
redis.call('HSET', KEYS[1] .. ':job:' .. id, 'payload', ARGV[1], 'tries', 0)
redis.call('LPUSH', KEYS[1] .. ':wait', id)
return id
"""

# Moves the oldest job to the active list and leases it until ARGV[1] (a score).
FETCH = """
local id = redis.call('RPOPLPUSH', KEYS[1] .. ':wait', KEYS[1] .. ':active')
if not id then return false end
redis.call('ZADD', KEYS[1] .. ':lease', ARGV[1], id)
local tries = redis.call('HINCRBY', KEYS[1] .. ':job:' .. id, 'tries', 1)
return {id, redis.call('HGET', KEYS[1] .. ':job:' .. id, 'payload'), tries}
"""

ACK = """
local removed = redis.call('LREM', KEYS[1] .. ':active', 1, ARGV[1])
if removed == 0 then return redis.error_reply('NOJOB job ' .. ARGV[1] .. ' is not active') end
redis.call('ZREM', KEYS[1] .. ':lease', ARGV[1])
redis.call('DEL', KEYS[1] .. ':job:' .. ARGV[1])
return redis.status_reply('ACKED')
"""

# Jobs whose lease ended before ARGV[1] go back to the waiting list.
REQUEUE_EXPIRED = """
local ids = redis.call('ZRANGEBYSCORE', KEYS[1] .. ':lease', '-inf', ARGV[1])
for _, id in ipairs(ids) do
  redis.call('LREM', KEYS[1] .. ':active', 1, id)
  redis.call('ZREM', KEYS[1] .. ':lease', id)
  redis.call('RPUSH', KEYS[1] .. ':wait', id)
end
return #ids
"""

# Sliding window: at most ARGV[2] events within ARGV[3] ms before now (ARGV[1]).
SLIDING_WINDOW = """
local now, limit, window = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], 0, now - window)
local count = redis.call('ZCARD', KEYS[1])
if count >= limit then
  local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  return {0, count, tonumber(oldest[2]) + window - now}
end
redis.call('ZADD', KEYS[1], now, ARGV[4])
redis.call('PEXPIRE', KEYS[1], window)
return {1, count + 1, 0}
"""

# Token bucket over a hash, read in RESP3 (HGETALL is a map there).
TOKEN_BUCKET = """
redis.setresp(3)
local rate, burst, now = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local state = redis.call('HGETALL', KEYS[1])['map']
local tokens = tonumber(state['tokens'] or burst)
local last = tonumber(state['ts'] or now)
tokens = math.min(burst, tokens + (now - last) * rate / 1000)
local allowed = 0
if tokens >= 1 then tokens = tokens - 1; allowed = 1 end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'ts', now)
return {allowed, math.floor(tokens)}
"""


def servers(h):
    if not hasattr(h, "script_servers"):
        h.script_servers = (h.keyshift(name="ks-scripting"), h.redis_server())
    return h.script_servers


def both(h, fn):
    """Runs fn(client) on keyshift and on redis-server; returns both results."""
    out = []
    for srv in servers(h):
        r = srv.redis()
        r.flushall()
        try:
            out.append(fn(r))
        finally:
            r.close()
    return out


@test
def a_reliable_job_queue_moves_leases_acks_and_requeues_as_on_redis(h):
    redis = redis_module()

    def run(r):
        enqueue, fetch, ack = (r.register_script(s) for s in (ENQUEUE, FETCH, ACK))
        requeue = r.register_script(REQUEUE_EXPIRED)
        log = [enqueue(keys=["q"], args=["job-%d" % i]) for i in range(5)]
        log.append(fetch(keys=["q"], args=[100]))
        log.append(fetch(keys=["q"], args=[200]))
        log.append(ack(keys=["q"], args=[1]))
        try:
            ack(keys=["q"], args=[1])
        except redis.ResponseError as e:
            log.append(str(e).split(" script:")[0])
        log.append(requeue(keys=["q"], args=[250]))
        log.append(r.lrange("q:wait", 0, -1))
        log.append(fetch(keys=["q"], args=[300]))
        log.append(sorted(r.keys("q:*")))
        return log

    got, want = both(h, run)
    eq(got, want, "queue operations against redis-server")
    ok(want[-2][2] == 2, "the requeued job was fetched a second time")


@test
def a_sliding_window_limiter_and_a_token_bucket_agree_with_redis(h):
    def run(r):
        window = r.register_script(SLIDING_WINDOW)
        bucket = r.register_script(TOKEN_BUCKET)
        log = [window(keys=["rl:u1"], args=[1000 + 10 * i, 3, 100, "e%d" % i]) for i in range(6)]
        log.append(window(keys=["rl:u1"], args=[1200, 3, 100, "late"]))
        log += [bucket(keys=["tb:u1"], args=[1, 3, 5000 + 100 * i]) for i in range(6)]
        log.append(r.evalsha(bucket.sha, 1, "tb:u1", 1, 3, 9000))
        return log

    got, want = both(h, run)
    eq(got, want, "limiter decisions against redis-server")
    ok([x[0] for x in want[:6]] == [1, 1, 1, 0, 0, 0], "the window admits three")


@test
def script_errors_and_conversions_read_as_on_redis(h):
    redis = redis_module()
    scripts = [
        "return {1, 2.7, 'x', false, {ok='fine'}, {err='ERR bad'}}",
        "return redis.pcall('incr', KEYS[1])",
        "return {redis.call('hset', KEYS[1], 'f', 'v'), redis.pcall('lpush', KEYS[1], 'x')['err']}",
        "return redis.sha1hex('abc')",
        "return cjson.decode(ARGV[1])['a'][2]",
        "return bit.band(0xff, 0x0f)",
        "return tostring(redis.call('ping')['ok'])",
    ]

    def run(r):
        out = []
        r.set("s", "text")
        for s in scripts:
            try:
                # An error inside a reply array arrives as an exception object, which compares
                # by identity: compare its class and text instead.
                reply = r.eval(s, 1, "s", '{"a":[1,2,3]}')
                if isinstance(reply, list):
                    reply = [("error", str(x)) if isinstance(x, Exception) else x for x in reply]
                out.append(reply)
            except redis.ResponseError as e:
                out.append("error: " + str(e).split(" script:")[0])
        return out

    got, want = both(h, run)
    eq(got, want, "replies against redis-server")


@test
def the_sandbox_lists_its_libraries_refuses_bytecode_and_times_out_a_library_load(h):
    redis = redis_module()
    r = servers(h)[0].redis()
    # pairs sees through the read-only views: os holds clock alone, string its functions
    eq(r.eval("local n = {} for k in pairs(os) do n[#n + 1] = k end return n", 0), [b"clock"])
    ok(r.eval("local n = 0 for k, v in pairs(string) do n = n + 1 end return n", 0) > 10,
       "string's functions")
    eq(r.eval("return type(next(math))", 0), b"string")
    eq(r.eval("return loadstring('return 7')()", 0), 7)
    try:
        r.eval("return loadstring(string.dump(function() return 1 end))()", 0)
        ok(False, "precompiled chunk ran")
    except redis.ResponseError as e:
        ok("attempt to call a nil value" in str(e), str(e))
    try:
        r.execute_command("FUNCTION", "LOAD",
                          "#!lua name=spin\nlocal a = 1\nwhile 1 do a = a + 1 end")
        ok(False, "an endless library loaded")
    except redis.ResponseError as e:
        ok("FUNCTION LOAD timeout" in str(e), str(e))
    eq(r.ping(), True, "the server answers after the timeout")
    eq(r.execute_command("FUNCTION", "LIST"), [], "nothing was registered")
    r.close()


def replies(r, commands):
    """The reply to each command, an error as "error: <text>"."""
    redis = redis_module()
    out = []
    for cmd in commands:
        try:
            out.append(r.execute_command(*cmd))
        except redis.ResponseError as e:
            out.append("error: " + str(e))
    return out


@test
def function_names_ignore_case_and_restore_arity_errors_read_as_on_redis(h):
    def run(r):
        r.function_flush()
        out = [r.execute_command("FUNCTION", "LOAD", "#!lua name=lib\n"
                                 "redis.register_function('hello', function() return 'hi' end)")]
        out.append(r.fcall("HELLO", 0))
        out += replies(r, (["FCALL", "nosuch", "0"], ["FUNCTION", "RESTORE", "a", "b", "c"]))
        r.function_flush()
        return out

    got, want = both(h, run)
    eq(got, want, "replies against redis-server")


@test
def function_restore_flush_and_name_errors_read_as_on_redis(h):
    def run(r):
        r.function_flush()
        lib = "#!lua name=%s\nredis.register_function('%s', function() return 1 end)"
        r.function_load(lib % ("test", "test"))
        dump = r.function_dump()
        out = replies(r, (["FUNCTION", "RESTORE", dump, "APPEND"], ["FUNCTION", "RESTORE", dump],
                          ["FUNCTION", "FLUSH", "bad_arg"], ["FUNCTION", "flush", "sync", "extra"],
                          ["FUNCTION", "LOAD", lib % ("a-b", "f")],
                          ["FUNCTION", "LOAD", lib % ("lib2", "test\\0test")],
                          ["FUNCTION", "RESTORE", dump, "REPLACE"], ["FUNCTION", "STATS"]))
        r.function_flush()
        return out

    got, want = both(h, run)
    eq(got, want, "replies against redis-server")


def start_busy(runner, other, *command):
    """Sends `command` (a script that never ends) on `runner` from a thread and waits until
    `other` gets BUSY; returns the thread, a dict that gets the command's error, and the BUSY
    reply (None if it never came)."""
    redis = redis_module()
    result = {}

    def run():
        try:
            runner.execute_command(*command)
        except redis.ResponseError as e:
            result["error"] = str(e)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    deadline = time.monotonic() + BOUND
    while time.monotonic() < deadline:
        try:
            other.ping()
        except (redis.exceptions.BusyLoadingError, redis.ResponseError) as e:
            return t, result, str(e)
    return t, result, None


@test
def function_stats_shows_the_running_function_until_function_kill(h):
    srv = h.keyshift("--busy-reply-threshold", "50", name="ks-busy-fn")
    r, other = srv.redis(), srv.redis()
    r.function_load("#!lua name=spin\n"
                    "redis.register_function('spin', function() while true do end end)")
    t, result, busy = start_busy(r, other, "FCALL", "spin", "0")
    ok(busy is not None and "FUNCTION KILL" in busy, "BUSY reply: %r" % busy)
    stats = other.execute_command("FUNCTION", "STATS")
    eq(stats[0], b"running_script", "the first field")
    running = stats[1]
    ok(isinstance(running, list) and len(running) == 6, "running_script is a map: %r" % running)
    eq(running[:4], [b"name", b"spin", b"command", [b"FCALL", b"spin", b"0"]], "name and command")
    eq(running[4], b"duration_ms", "the duration field")
    ok(isinstance(running[5], int) and running[5] >= 0, "duration_ms: %r" % running[5])
    eq(other.execute_command("FUNCTION", "KILL"), b"OK", "FUNCTION KILL")
    t.join(BOUND)
    ok("killed" in result.get("error", ""), "the caller is told: %r" % result)
    eq(other.execute_command("FUNCTION", "STATS")[1], None, "no running script afterwards")


@test
def a_busy_script_gets_busy_replies_and_stops_on_script_kill(h):
    redis = redis_module()
    srv = h.keyshift("--busy-reply-threshold", "50", name="ks-busy")
    r, other = srv.redis(), srv.redis()
    t, result, busy = start_busy(r, other, "EVAL", "local i = 0 while true do i = i + 1 end", "0")
    ok(busy is not None and "busy running a script" in busy, "BUSY reply: %r" % busy)
    try:
        other.execute_command("FUNCTION", "STATS")
        ok(False, "FUNCTION STATS while an EVAL script runs must fail")
    except redis.ResponseError as e:
        ok("SCRIPT KILL" in str(e), "FUNCTION STATS names SCRIPT KILL: %s" % e)
    try:
        other.execute_command("FUNCTION", "KILL")
        ok(False, "FUNCTION KILL of an EVAL script must fail")
    except redis.ResponseError as e:
        ok("SCRIPT KILL" in str(e), "FUNCTION KILL names SCRIPT KILL: %s" % e)
    eq(other.script_kill(), True, "SCRIPT KILL")
    t.join(BOUND)
    ok("Script killed by user with SCRIPT KILL" in result.get("error", ""),
       "the script's caller is told: %r" % result)
    eq(other.ping(), True, "the server serves again")
    ok("Slow script detected" in srv.log(), "the slow script was logged")


@test
def function_libraries_survive_a_restart_through_the_rdb_file(h):
    srv = h.keyshift(config=lambda wd: "dir %s\n" % wd, name="ks-functions")
    r = srv.redis()
    code = ("#!lua name=counters\n"
            "redis.register_function('bump', function(keys, args)\n"
            "  return redis.call('incrby', keys[1], args[1]) end)\n")
    eq(r.function_load(code), b"counters", "FUNCTION LOAD")
    eq(r.fcall("bump", 1, "c", 5), 5, "FCALL")
    ok(r.save(), "SAVE")
    r.close()
    srv.stop()
    srv.start()
    srv.wait_ready()
    r = srv.redis()
    eq(r.fcall("bump", 1, "c", 2), 7, "FCALL after the restart")
    libs = r.function_list(withcode=True)
    # RESP2: each library is a flat [name, value, ...] list.
    libs = [lib if isinstance(lib, dict) else dict(zip(lib[::2], lib[1::2])) for lib in libs]
    eq([lib[b"library_code"] for lib in libs], [code.encode()], "the library's code")


if __name__ == "__main__":
    sys.exit(run_tests())
