#include "tests/unit/engine/commands/command_test_util.hpp"

#include "engine/engine.hpp"
#include "engine/memory_usage.hpp"

#include <doctest/doctest.h>

#include <string>

using keyshift::engine::Engine;
using keyshift::engine::EngineConfig;
using keyshift::engine::ManualClock;
using keyshift::engine::RespValue;

namespace {

using Fixture = keyshift::engine::command_test::ReplyFixture;

bool is_ok(const RespValue& v) {
  return v.type == RespValue::Type::simple && v.str == "OK";
}
bool is_nil(const RespValue& v) {
  return v.type == RespValue::Type::null;
}
bool is_int(const RespValue& v, int64_t n) {
  return v.type == RespValue::Type::integer && v.integer == n;
}
bool is_bulk(const RespValue& v, std::string_view s) {
  return v.type == RespValue::Type::bulk && v.str == s;
}
bool is_err(const RespValue& v, std::string_view s) {
  return v.is_error() && v.str == s;
}

}  // namespace

TEST_SUITE("engine::string_family") {
  TEST_CASE("SET then GET returns the value and GET of a missing key is nil") {
    Fixture f;
    CHECK(is_ok(f.run({"SET", "k", "v"})));
    CHECK(is_bulk(f.run({"GET", "k"}), "v"));
    CHECK(is_nil(f.run({"GET", "missing"})));
  }

  TEST_CASE("SET NX and XX only write under their condition") {
    Fixture f;
    CHECK(is_nil(f.run({"SET", "k", "v", "XX"})));
    CHECK(is_ok(f.run({"SET", "k", "v", "NX"})));
    CHECK(is_nil(f.run({"SET", "k", "w", "NX"})));
    CHECK(is_ok(f.run({"SET", "k", "w", "XX"})));
    CHECK(is_bulk(f.run({"GET", "k"}), "w"));
    CHECK(is_err(f.run({"SET", "k", "v", "NX", "XX"}), "ERR syntax error"));
  }

  TEST_CASE("SET GET returns the old value") {
    Fixture f;
    CHECK(is_nil(f.run({"SET", "k", "1", "GET"})));
    CHECK(is_bulk(f.run({"SET", "k", "2", "GET"}), "1"));
  }

  TEST_CASE("SET PX expires the key after its deadline and never returns it") {
    Fixture f;
    CHECK(is_ok(f.run({"SET", "k", "v", "PX", "100"})));
    f.clock.advance_ms(99);
    CHECK(is_bulk(f.run({"GET", "k"}), "v"));
    f.clock.advance_ms(1);
    CHECK(is_nil(f.run({"GET", "k"})));
  }

  TEST_CASE("SET KEEPTTL keeps the TTL and a plain SET drops it") {
    Fixture f;
    f.run({"SET", "k", "v", "EX", "100"});
    f.run({"SET", "k", "w", "KEEPTTL"});
    f.clock.advance_ms(100 * 1000);
    CHECK(is_nil(f.run({"GET", "k"})));
    f.run({"SET", "k", "v", "EX", "100"});
    f.run({"SET", "k", "w"});
    f.clock.advance_ms(200 * 1000);
    CHECK(is_bulk(f.run({"GET", "k"}), "w"));
  }

  TEST_CASE("invalid expire times are refused with the command's name") {
    Fixture f;
    CHECK(is_err(f.run({"SET", "k", "v", "EX", "0"}), "ERR invalid expire time in 'set' command"));
    CHECK(is_err(f.run({"SETEX", "k", "-1", "v"}), "ERR invalid expire time in 'setex' command"));
    CHECK(
        is_err(f.run({"SET", "k", "v", "EX", "x"}), "ERR value is not an integer or out of range"));
    CHECK(is_err(f.run({"SET", "k", "v", "EX", "9223372036854775807"}),
                 "ERR invalid expire time in 'set' command"));
  }

  TEST_CASE("INCR family counts and rejects non-integers and overflow") {
    Fixture f;
    CHECK(is_int(f.run({"INCR", "n"}), 1));
    CHECK(is_int(f.run({"INCRBY", "n", "41"}), 42));
    CHECK(is_int(f.run({"DECRBY", "n", "2"}), 40));
    CHECK(is_int(f.run({"DECR", "n"}), 39));
    f.run({"SET", "s", "abc"});
    CHECK(is_err(f.run({"INCR", "s"}), "ERR value is not an integer or out of range"));
    f.run({"SET", "big", "9223372036854775807"});
    CHECK(is_err(f.run({"INCR", "big"}), "ERR increment or decrement would overflow"));
    CHECK(is_err(f.run({"DECRBY", "n", "-9223372036854775808"}), "ERR decrement would overflow"));
    f.run({"SET", "sp", " 1"});
    CHECK(is_err(f.run({"INCR", "sp"}), "ERR value is not an integer or out of range"));
  }

  TEST_CASE("INCRBYFLOAT prints results as Valkey does") {
    Fixture f;
    f.run({"SET", "f", "10.50"});
    CHECK(is_bulk(f.run({"INCRBYFLOAT", "f", "0.1"}), "10.6"));
    CHECK(is_bulk(f.run({"INCRBYFLOAT", "g", "5.0e3"}), "5000"));
    CHECK(is_err(f.run({"INCRBYFLOAT", "f", "abc"}), "ERR value is not a valid float"));
  }

  TEST_CASE("APPEND, STRLEN, GETRANGE and SETRANGE edit strings") {
    Fixture f;
    CHECK(is_int(f.run({"APPEND", "s", "Hello"}), 5));
    CHECK(is_int(f.run({"APPEND", "s", " World"}), 11));
    CHECK(is_int(f.run({"STRLEN", "s"}), 11));
    CHECK(is_bulk(f.run({"GETRANGE", "s", "0", "4"}), "Hello"));
    CHECK(is_bulk(f.run({"GETRANGE", "s", "-5", "-1"}), "World"));
    CHECK(is_bulk(f.run({"GETRANGE", "s", "5", "3"}), ""));
    CHECK(is_int(f.run({"SETRANGE", "s", "6", "Redis"}), 11));
    CHECK(is_bulk(f.run({"GET", "s"}), "Hello Redis"));
    CHECK(is_int(f.run({"SETRANGE", "p", "3", "x"}), 4));
    CHECK(is_bulk(f.run({"GET", "p"}), std::string("\0\0\0x", 4)));
    CHECK(is_err(f.run({"SETRANGE", "p", "-1", "x"}), "ERR offset is out of range"));
  }

  TEST_CASE("long strings grow in place through APPEND") {
    Fixture f;
    std::string chunk(1000, 'x');
    for (int i = 0; i < 50; ++i) {
      f.run({"APPEND", "big", chunk});
    }
    CHECK(is_int(f.run({"STRLEN", "big"}), 50000));
  }

  TEST_CASE("MSET, MGET and MSETNX work on several keys") {
    Fixture f;
    CHECK(is_ok(f.run({"MSET", "a", "1", "b", "2"})));
    RespValue v = f.run({"MGET", "a", "b", "c"});
    REQUIRE(v.elements.size() == 3);
    CHECK(is_bulk(v.elements[0], "1"));
    CHECK(is_nil(v.elements[2]));
    CHECK(is_int(f.run({"MSETNX", "c", "3", "a", "9"}), 0));
    CHECK(is_int(f.run({"MSETNX", "c", "3", "d", "4"}), 1));
    CHECK(
        is_err(f.run({"MSET", "a", "1", "b"}), "ERR wrong number of arguments for 'mset' command"));
  }

  TEST_CASE("GETEX sets or removes the TTL and GETDEL removes the key") {
    Fixture f;
    f.run({"SET", "k", "v"});
    CHECK(is_bulk(f.run({"GETEX", "k", "PX", "50"}), "v"));
    f.clock.advance_ms(50);
    CHECK(is_nil(f.run({"GET", "k"})));
    f.run({"SET", "k", "v", "EX", "1"});
    CHECK(is_bulk(f.run({"GETEX", "k", "PERSIST"}), "v"));
    f.clock.advance_ms(5000);
    CHECK(is_bulk(f.run({"GETDEL", "k"}), "v"));
    CHECK(is_nil(f.run({"GET", "k"})));
  }

  TEST_CASE("unknown commands and wrong arity get Valkey's errors") {
    Fixture f;
    CHECK(is_err(f.run({"FOO", "a", "b"}),
                 "ERR unknown command 'FOO', with args beginning with: 'a' 'b' "));
    CHECK(is_err(f.run({"GET"}), "ERR wrong number of arguments for 'get' command"));
  }

  TEST_CASE("two engines in one process do not see each other's keys") {
    Fixture a;
    Fixture b;
    a.run({"SET", "k", "a"});
    CHECK(is_nil(b.run({"GET", "k"})));
  }

  TEST_CASE("maxmemory with noeviction refuses writes with the OOM error") {
    ManualClock clock;
    EngineConfig cfg;
    cfg.maxmemory = 1;
    Engine e(cfg, clock);
    e.config().maxmemory = 0;
    e.run({"SET", "a", "b"});
    e.config().maxmemory = 1;
    CHECK(is_err(e.run({"SET", "k", "v"}),
                 "OOM command not allowed when used memory > 'maxmemory'."));
    CHECK(is_bulk(e.run({"GET", "a"}), "b"));
  }

  TEST_CASE("an empty engine with maxmemory 1 refuses SET with the OOM error and allows GET") {
    ManualClock clock;
    EngineConfig cfg;
    cfg.maxmemory = 1;
    Engine e(cfg, clock);
    CHECK(e.db(0).size() == 0);
    CHECK(e.used_memory() >= keyshift::engine::startup_memory(e));
    CHECK(is_err(e.run({"SET", "k", "v"}),
                 "OOM command not allowed when used memory > 'maxmemory'."));
    CHECK(is_nil(e.run({"GET", "k"})));
  }

  TEST_CASE("eviction with an empty keyspace still over maxmemory ends and refuses writes") {
    ManualClock clock;
    EngineConfig cfg;
    cfg.maxmemory_policy = keyshift::engine::EvictionPolicy::allkeys_lru;
    Engine e(cfg, clock);
    e.run({"SET", "a", "b"});
    e.config().maxmemory = 1;
    CHECK_FALSE(e.perform_evictions());
    CHECK(e.db(0).size() == 0);
    CHECK(e.stats().evicted_keys == 1);
    CHECK(is_err(e.run({"SET", "k", "v"}),
                 "OOM command not allowed when used memory > 'maxmemory'."));
  }

  TEST_CASE("allkeys-lru eviction keeps memory under maxmemory") {
    ManualClock clock;
    EngineConfig cfg;
    cfg.maxmemory_policy = keyshift::engine::EvictionPolicy::allkeys_lru;
    Engine e(cfg, clock);
    for (int i = 0; i < 1000; ++i) {
      e.run({"SET", "key:" + std::to_string(i), std::string(100, 'x')});
    }
    // Half the dataset, above the fixed startup and client part eviction cannot free.
    uint64_t floor = e.used_memory() - e.memory().used();
    uint64_t limit = floor + e.memory().used() / 2;
    e.config().maxmemory = limit;
    // Eviction runs before each command, so the write itself may go over until the next.
    e.run({"SET", "x", "y"});
    CHECK(e.perform_evictions());
    CHECK(e.used_memory() <= limit);
    CHECK(e.stats().evicted_keys > 0);
  }

  TEST_CASE("the active expire cycle removes expired keys nobody reads") {
    Fixture f;
    for (int i = 0; i < 200; ++i) {
      f.run({"SET", "k" + std::to_string(i), "v", "PX", "10"});
    }
    f.clock.advance_ms(20);
    for (int i = 0; i < 50 && f.engine.db(0).size() > 0; ++i) {
      f.engine.cron();
    }
    CHECK(f.engine.db(0).size() == 0);
    CHECK(f.engine.keyspace().expired_keys == 200);
  }
}
