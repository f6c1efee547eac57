#include "tests/unit/engine/commands/conn_test_util.hpp"

#include "engine/engine.hpp"
#include "engine/tracking.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace keyshift::engine::conn_test;
using keyshift::engine::EngineConfig;
using keyshift::engine::k_session_postponed;
using keyshift::engine::RespValue;
using keyshift::engine::Session;

namespace {

/// True when `v` is the push `>2 invalidate [keys...]`.
bool is_invalidation(const RespValue& v, std::initializer_list<std::string_view> keys) {
  return v.type == RespValue::Type::push && v.elements.size() == 2 &&
         is_bulk(v.elements[0], "invalidate") && is_strings(v.elements[1], keys);
}

/// A RESP3 session with CLIENT TRACKING given `options` (after ON), its output drained.
Session& tracker(Fixture& f, std::initializer_list<std::string_view> options = {}) {
  Session& s = f.client();
  f.send(s, {"HELLO", "3"});
  std::vector<std::string> argv{"CLIENT", "TRACKING", "ON"};
  argv.insert(argv.end(), options.begin(), options.end());
  f.send(s, argv);
  f.drain(s);
  return s;
}

}  // namespace

TEST_SUITE("engine::tracking") {
  TEST_CASE("a key read by a tracking client is invalidated once when another client writes it") {
    Fixture f;
    Session& t = tracker(f);
    Session& w = f.client();
    f.send(t, {"GET", "k"});
    f.drain(t);
    CHECK(f.engine.tracking().total_keys() == 1);
    f.run(w, {"SET", "k", "1"});
    auto got = f.drain(t);
    REQUIRE(got.size() == 1);
    CHECK(is_invalidation(got[0], {"k"}));
    CHECK(f.engine.tracking().total_keys() == 0);
    f.run(w, {"SET", "k", "2"});
    CHECK(f.drain(t).empty());
  }

  TEST_CASE("the tracking client's own write is invalidated after its reply, but not with NOLOOP") {
    Fixture f;
    Session& t = tracker(f);
    f.send(t, {"GET", "k"});
    f.send(t, {"SET", "k", "1"});
    auto got = f.drain(t);
    REQUIRE(got.size() == 3);
    CHECK(is_ok(got[1]));
    CHECK(is_invalidation(got[2], {"k"}));
    Session& n = tracker(f, {"NOLOOP"});
    f.send(n, {"GET", "k"});
    f.send(n, {"SET", "k", "2"});
    CHECK(f.drain(n).size() == 2);
  }

  TEST_CASE("a key evicted before the tracking client's command is invalidated before its reply") {
    Fixture f;
    Session& t = tracker(f);
    Session& w = f.client();
    f.send(t, {"SETEX", "vk", "1000", "x"});
    f.send(t, {"GET", "vk"});
    f.drain(t);
    f.run(w, {"CONFIG", "SET", "maxmemory-policy", "volatile-random"});
    // Set directly: CONFIG SET maxmemory would evict at once, inside w's command.
    f.engine.config().maxmemory = 1;
    CHECK(f.drain(t).empty());
    // The eviction runs ahead of the GET (Valkey's processCommand), so its push comes first.
    f.send(t, {"GET", "other"});
    auto got = f.drain(t);
    REQUIRE(got.size() == 2);
    CHECK(is_invalidation(got[0], {"vk"}));
    CHECK(is_null(got[1]));
  }

  TEST_CASE("expiry on the injected clock and FLUSHALL invalidate tracked keys") {
    Fixture f;
    Session& t = tracker(f);
    Session& w = f.client();
    f.run(w, {"SET", "k", "1", "PX", "100"});
    f.send(t, {"GET", "k"});
    f.drain(t);
    f.clock.advance_ms(200);
    f.engine.cron();
    auto got = f.drain(t);
    REQUIRE(got.size() == 1);
    CHECK(is_invalidation(got[0], {"k"}));
    f.send(t, {"GET", "x"});
    f.drain(t);
    f.run(w, {"FLUSHALL"});
    got = f.drain(t);
    REQUIRE(got.size() == 1);
    CHECK(got[0].type == RespValue::Type::push);
    REQUIRE(got[0].elements.size() == 2);
    CHECK(is_null(got[0].elements[1]));
    CHECK(f.engine.tracking().total_keys() == 0);
  }

  TEST_CASE("BCAST clients get the keys changed under their prefixes at the next broadcast") {
    Fixture f;
    Session& t = tracker(f, {"BCAST", "PREFIX", "a:", "PREFIX", "b:"});
    Session& w = f.client();
    f.run(w, {"MSET", "a:1", "x", "c:1", "y", "b:2", "z"});
    CHECK(f.drain(t).empty());
    f.engine.before_replies();
    auto got = f.drain(t);
    REQUIRE(got.size() == 2);
    CHECK(is_invalidation(got[0], {"a:1"}));
    CHECK(is_invalidation(got[1], {"b:2"}));
    CHECK(is_err(f.run(t, {"CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "a"}),
                 "ERR Prefix 'a' overlaps with an existing prefix 'a:'. Prefixes for a single "
                 "client must not overlap."));
  }

  TEST_CASE("OPTIN tracks only the command after CLIENT CACHING YES") {
    Fixture f;
    Session& t = tracker(f, {"OPTIN"});
    f.send(t, {"GET", "a"});
    f.send(t, {"CLIENT", "CACHING", "YES"});
    f.send(t, {"GET", "b"});
    f.send(t, {"GET", "c"});
    f.drain(t);
    CHECK(f.engine.tracking().total_keys() == 1);
    CHECK(is_err(f.run(t, {"CLIENT", "CACHING", "NO"}),
                 "ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode."));
  }

  TEST_CASE("tracking-table-max-keys invalidates tracked keys until the table fits") {
    Fixture f;
    Session& t = tracker(f);
    f.run(t, {"CONFIG", "SET", "tracking-table-max-keys", "2"});
    for (std::string_view k : {"k1", "k2", "k3", "k4"}) {
      f.send(t, {"GET", k});
    }
    f.engine.cron();
    CHECK(f.engine.tracking().total_keys() <= 2);
    size_t pushes = 0;
    for (const RespValue& v : f.drain(t)) {
      pushes += v.type == RespValue::Type::push ? 1 : 0;
    }
    CHECK(pushes >= 2);
  }
}

TEST_SUITE("engine::client_pause") {
  TEST_CASE("PAUSE WRITE holds a SET but not a GET until UNPAUSE, then the SET runs") {
    Fixture f;
    Session& admin = f.client();
    Session& c = f.client();
    f.run(c, {"SET", "k", "old"});
    CHECK(is_ok(f.run(admin, {"CLIENT", "PAUSE", "10000", "WRITE"})));
    CHECK(is_bulk(f.run(c, {"GET", "k"}), "old"));
    f.send(c, {"SET", "k", "new"});
    CHECK(c.out.empty());
    CHECK(c.has(k_session_postponed));
    CHECK(f.run(admin, {"INFO", "clients"}).str.find("blocked_clients:1\r\n") != std::string::npos);
    CHECK(is_ok(f.run(admin, {"CLIENT", "UNPAUSE"})));
    f.engine.handle_blocked_timeouts();
    CHECK(!c.has(k_session_postponed));
    auto got = f.drain(c);
    REQUIRE(got.size() == 1);
    CHECK(is_ok(got[0]));
    CHECK(is_bulk(f.run(c, {"GET", "k"}), "new"));
  }

  TEST_CASE("a pause ends by itself on the clock, and ALL holds reads too") {
    Fixture f;
    Session& admin = f.client();
    Session& c = f.client();
    f.run(admin, {"CLIENT", "PAUSE", "500", "ALL"});
    f.send(c, {"GET", "k"});
    CHECK(c.has(k_session_postponed));
    CHECK(f.engine.next_block_deadline_ms() == f.clock.now_ms() + 500);
    f.clock.advance_ms(400);
    f.engine.handle_blocked_timeouts();
    CHECK(c.has(k_session_postponed));
    f.clock.advance_ms(200);
    f.engine.handle_blocked_timeouts();
    CHECK(!c.has(k_session_postponed));
    auto got = f.drain(c);
    REQUIRE(got.size() == 1);
    CHECK(is_null(got[0]));
  }

  TEST_CASE("no key expires while clients are paused, though reads no longer see it") {
    Fixture f;
    Session& c = f.client();
    f.run(c, {"SET", "k", "v", "PX", "100"});
    f.run(c, {"CLIENT", "PAUSE", "10000", "WRITE"});
    f.clock.advance_ms(200);
    f.engine.cron();
    CHECK(is_null(f.run(c, {"GET", "k"})));
    CHECK(is_int(f.run(c, {"DBSIZE"}), 1));
    f.run(c, {"CLIENT", "UNPAUSE"});
    f.engine.cron();
    CHECK(is_int(f.run(c, {"DBSIZE"}), 0));
  }

  TEST_CASE("PAUSE WRITE holds scripts that may write, not those declared no-writes") {
    Fixture f;
    Session& admin = f.client();
    Session& c = f.client();
    f.run(admin, {"CLIENT", "PAUSE", "10000", "WRITE"});
    CHECK(is_int(f.run(c, {"EVAL", "#!lua flags=no-writes\nreturn 1", "0"}), 1));
    CHECK(is_int(f.run(c, {"EVAL_RO", "return 2", "0"}), 2));
    CHECK(is_simple(f.run(c, {"PING"}), "PONG"));
    f.send(c, {"EVAL", "#!lua\nreturn 3", "0"});
    CHECK(c.has(k_session_postponed));
    f.run(admin, {"CLIENT", "UNPAUSE"});
    f.engine.handle_blocked_timeouts();
    auto got = f.drain(c);
    REQUIRE(got.size() == 1);
    CHECK(is_int(got[0], 3));
    f.run(admin, {"CLIENT", "PAUSE", "10000", "WRITE"});
    f.send(c, {"EVAL", "return 4", "0"});
    CHECK(c.has(k_session_postponed));
    f.run(admin, {"CLIENT", "UNPAUSE"});
    f.engine.handle_blocked_timeouts();
    CHECK(is_int(f.drain(c).at(0), 4));
  }

  TEST_CASE("PAUSE WRITE holds FCALL of a function that may write, not of a no-writes one") {
    Fixture f;
    Session& admin = f.client();
    Session& c = f.client();
    REQUIRE(is_bulk(f.run(c, {"FUNCTION", "LOAD",
                              "#!lua name=plib\n"
                              "redis.register_function{function_name='f_ro', callback="
                              "function() return 1 end, flags={'no-writes'}}\n"
                              "redis.register_function('f_rw', function() return 2 end)"}),
                    "plib"));
    f.run(admin, {"CLIENT", "PAUSE", "10000", "WRITE"});
    CHECK(is_int(f.run(c, {"FCALL", "F_RO", "0"}), 1));
    CHECK(is_int(f.run(c, {"FCALL_RO", "f_ro", "0"}), 1));
    f.send(c, {"FCALL", "f_rw", "0"});
    CHECK(c.has(k_session_postponed));
    f.run(admin, {"CLIENT", "UNPAUSE"});
    f.engine.handle_blocked_timeouts();
    CHECK(is_int(f.drain(c).at(0), 2));
  }

  TEST_CASE("CLIENT PAUSE checks its arguments as Valkey does") {
    Fixture f;
    Session& c = f.client();
    CHECK(is_err(f.run(c, {"CLIENT", "PAUSE", "10", "READ"}),
                 "ERR CLIENT PAUSE mode must be WRITE or ALL"));
    CHECK(is_err(f.run(c, {"CLIENT", "PAUSE", "x"}),
                 "ERR timeout is not an integer or out of range"));
    CHECK(is_err(f.run(c, {"CLIENT", "PAUSE", "-1"}), "ERR timeout is negative"));
  }
}
