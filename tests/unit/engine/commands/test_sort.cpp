#include "engine/engine.hpp"
#include "engine/util/clock.hpp"

#include <doctest/doctest.h>

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace {

using keyshift::engine::Engine;
using keyshift::engine::EngineConfig;
using keyshift::engine::ManualClock;
using keyshift::engine::RespValue;
using keyshift::engine::Session;

/// An engine with the fixture data the cases sort (the same data was run through
/// redis-server 7.0 to take the expected replies).
struct Harness {
  Harness() : engine(EngineConfig{}, clock), session(engine.open_session(nullptr)) {
    raw({"RPUSH", "l", "3", "1", "2", "10"});
    raw({"SADD", "s", "3", "1", "2", "10"});
    raw({"ZADD", "z", "3", "c", "1", "a", "2", "b", "10", "d"});
    raw({"MSET", "w_1", "30", "w_2", "20", "w_3", "10", "w_10", "5"});
    raw({"HSET", "h_1", "f", "b"});
    raw({"HSET", "h_2", "f", "a"});
    raw({"HSET", "h_3", "f", "c"});
    raw({"HSET", "h_10", "f", "d"});
    raw({"RPUSH", "al", "b", "a", "C", "10"});
  }

  RespValue raw(std::initializer_list<std::string_view> argv) {
    std::vector<std::string_view> v(argv);
    return engine.run(session, v);
  }
  /// The reply flattened to words: array elements joined by spaces (nil as "(nil)"),
  /// errors as "(error) text", integers as their number.
  std::string operator()(std::initializer_list<std::string_view> argv) {
    RespValue r = raw(argv);
    if (r.is_error()) {
      return "(error) " + r.str;
    }
    if (r.type == RespValue::Type::integer) {
      return std::to_string(r.integer);
    }
    std::string out;
    for (const RespValue& e : r.elements) {
      out += out.empty() ? "" : " ";
      out += e.type == RespValue::Type::null ? "(nil)" : e.str;
    }
    return out;
  }

  ManualClock clock;
  Engine engine;
  Session& session;
};

constexpr std::string_view k_not_double =
    "(error) ERR One or more scores can't be converted into double";

}  // namespace

TEST_SUITE("engine::sort") {
  TEST_CASE("numeric sorts of lists, sets and sorted sets") {
    Harness h;
    CHECK(h({"SORT", "l"}) == "1 2 3 10");
    CHECK(h({"SORT", "l", "DESC"}) == "10 3 2 1");
    CHECK(h({"SORT", "s", "desc"}) == "10 3 2 1");
    CHECK(h({"SORT", "z"}) == k_not_double);
    CHECK(h({"SORT", "al"}) == k_not_double);
    CHECK(h({"SORT", "missing"}) == "");
    h.raw({"RPUSH", "nums", "1.5", "-2", "1e2", " 3", "inf"});
    CHECK(h({"SORT", "nums"}) == "-2 1.5  3 1e2 inf");
    h.raw({"RPUSH", "bad", "1", "1e400"});
    CHECK(h({"SORT", "bad"}) == k_not_double);
  }

  TEST_CASE("ALPHA compares bytes and DESC reverses") {
    Harness h;
    CHECK(h({"SORT", "al", "ALPHA"}) == "10 C a b");
    CHECK(h({"SORT", "al", "alpha", "desc"}) == "b a C 10");
    CHECK(h({"SORT", "z", "ALPHA"}) == "a b c d");
    CHECK(h({"SORT", "l", "ALPHA"}) == "1 10 2 3");
  }

  TEST_CASE("LIMIT clamps its range as Valkey does") {
    Harness h;
    CHECK(h({"SORT", "l", "LIMIT", "1", "2"}) == "2 3");
    CHECK(h({"SORT", "l", "LIMIT", "1", "2", "DESC"}) == "3 2");
    CHECK(h({"SORT", "l", "LIMIT", "10", "2"}) == "");
    CHECK(h({"SORT", "l", "LIMIT", "-1", "2"}) == "1 2");
    CHECK(h({"SORT", "l", "LIMIT", "0", "0"}) == "");
    CHECK(h({"SORT", "l", "LIMIT", "2", "-1"}) == "3 10");
    CHECK(h({"SORT", "l", "LIMIT", "a", "2"}) ==
          "(error) ERR value is not an integer or out of range");
  }

  TEST_CASE("BY a constant keeps a list's or sorted set's own order") {
    Harness h;
    CHECK(h({"SORT", "l", "BY", "nosort"}) == "3 1 2 10");
    CHECK(h({"SORT", "l", "BY", "nosort", "DESC"}) == "10 2 1 3");
    CHECK(h({"SORT", "l", "BY", "nosort", "LIMIT", "1", "2"}) == "1 2");
    CHECK(h({"SORT", "l", "BY", "nosort", "DESC", "LIMIT", "1", "2"}) == "2 1");
    CHECK(h({"SORT", "z", "BY", "nosort"}) == "a b c d");
    CHECK(h({"SORT", "z", "BY", "nosort", "DESC", "LIMIT", "1", "2"}) == "c b");
    CHECK(h({"SORT", "z", "BY", "nosort", "LIMIT", "3", "5"}) == "d");
    CHECK(h({"SORT", "z", "BY", "nosort", "LIMIT", "9", "5"}) == "");
    CHECK(h({"SORT", "s", "BY", "nosort"}) == "1 2 3 10");  // intset order
  }

  TEST_CASE("BY a pattern sorts by the weights it names") {
    Harness h;
    CHECK(h({"SORT", "l", "BY", "w_*"}) == "10 3 2 1");
    CHECK(h({"SORT", "l", "BY", "w_*", "LIMIT", "0", "2"}) == "10 3");
    // Missing weights count as 0; ties fall back to the elements' bytes.
    CHECK(h({"SORT", "l", "BY", "nosuch_*"}) == "1 10 2 3");
    CHECK(h({"SORT", "l", "BY", "h_*->f", "ALPHA"}) == "2 1 3 10");
    CHECK(h({"SORT", "l", "BY", "h_*->f"}) == k_not_double);
    // "->" with nothing after it is part of the key name.
    h.raw({"SET", "h_1->", "5"});
    CHECK(h({"SORT", "l", "BY", "h_*->"}) == "10 2 3 1");
  }

  TEST_CASE("GET patterns fetch keys, hash fields or the element itself") {
    Harness h;
    CHECK(h({"SORT", "l", "BY", "w_*", "GET", "#"}) == "10 3 2 1");
    CHECK(h({"SORT", "l", "BY", "w_*", "GET", "#", "GET", "w_*"}) == "10 5 3 10 2 20 1 30");
    CHECK(h({"SORT", "l", "GET", "h_*->f"}) == "b a c d");
    CHECK(h({"SORT", "l", "GET", "nosuch"}) == "(nil) (nil) (nil) (nil)");
    CHECK(h({"SORT", "l", "GET", "#", "GET", "nosuch_*"}) == "1 (nil) 2 (nil) 3 (nil) 10 (nil)");
    // A GET key of the wrong type reads as missing.
    h.raw({"SADD", "g_1", "x"});
    CHECK(h({"SORT", "l", "LIMIT", "0", "1", "GET", "g_*"}) == "(nil)");
  }

  TEST_CASE("STORE writes a list, replaces the destination and deletes it when empty") {
    Harness h;
    h.raw({"SET", "dst", "x"});
    h.raw({"EXPIRE", "dst", "100"});
    CHECK(h({"SORT", "l", "STORE", "dst"}) == "4");
    CHECK(h({"TTL", "dst"}) == "-1");
    CHECK(h.raw({"TYPE", "dst"}).str == "list");
    CHECK(h.raw({"OBJECT", "ENCODING", "dst"}).str == "listpack");
    CHECK(h({"LRANGE", "dst", "0", "-1"}) == "1 2 3 10");
    CHECK(h({"SORT", "l", "BY", "nosort", "GET", "#", "GET", "w_*", "STORE", "dst"}) == "8");
    CHECK(h({"LRANGE", "dst", "0", "-1"}) == "3 10 1 30 2 20 10 5");
    // Missing GET values are stored as empty strings.
    CHECK(h({"SORT", "l", "GET", "nosuch_*", "STORE", "dst"}) == "4");
    CHECK(h({"LLEN", "dst"}) == "4");
    CHECK(h({"SORT", "missing", "STORE", "dst"}) == "0");
    CHECK(h({"EXISTS", "dst"}) == "0");
  }

  TEST_CASE("STORE emits sortstore, or del when it empties the destination") {
    Harness h;
    Session& sub = h.engine.open_session(nullptr);
    h.raw({"CONFIG", "SET", "notify-keyspace-events", "Egl"});
    std::vector<std::string_view> psub{"PSUBSCRIBE", "__keyevent@0__:*"};
    h.engine.execute(sub, psub);
    sub.out.clear();
    h.raw({"SORT", "l", "STORE", "out"});
    h.raw({"SORT", "missing", "STORE", "out"});
    h.raw({"SORT", "missing", "STORE", "out"});
    std::string_view data(sub.out);
    std::vector<std::string> events;
    while (!data.empty()) {
      RespValue v;
      size_t used = 0;
      REQUIRE(keyshift::engine::parse_resp(data, v, used) == keyshift::engine::RespParse::ok);
      data.remove_prefix(used);
      events.push_back(v.elements[2].str + " " + v.elements[3].str);
    }
    CHECK(events ==
          std::vector<std::string>{"__keyevent@0__:sortstore out", "__keyevent@0__:del out"});
  }

  TEST_CASE("a set stored without sorting is sorted ALPHA for a reproducible result") {
    Harness h;
    CHECK(h({"SORT", "s", "BY", "nosort", "STORE", "dst"}) == "4");
    CHECK(h({"LRANGE", "dst", "0", "-1"}) == "1 10 2 3");
    h.raw({"SADD", "ss", "b", "a", "c"});
    CHECK(h({"SORT", "ss", "BY", "nosort", "STORE", "dst"}) == "3");
    CHECK(h({"LRANGE", "dst", "0", "-1"}) == "a b c");
  }

  TEST_CASE("SORT_RO reads like SORT but refuses STORE") {
    Harness h;
    CHECK(h({"SORT_RO", "l", "DESC"}) == "10 3 2 1");
    CHECK(h({"SORT_RO", "l", "STORE", "x"}) == "(error) ERR syntax error");
    CHECK(h({"EXISTS", "x"}) == "0");
  }

  TEST_CASE("errors: syntax, wrong type, and options checked before the key") {
    Harness h;
    CHECK(h({"SORT", "l", "foo"}) == "(error) ERR syntax error");
    CHECK(h({"SORT", "l", "LIMIT", "1"}) == "(error) ERR syntax error");
    CHECK(h({"SORT", "l", "BY"}) == "(error) ERR syntax error");
    h.raw({"SET", "str", "x"});
    CHECK(h({"SORT", "str"}) ==
          "(error) WRONGTYPE Operation against a key holding the wrong kind of value");
    CHECK(h({"SORT", "str", "LIMIT", "a", "b"}) ==
          "(error) ERR value is not an integer or out of range");
    h.raw({"HSET", "hash", "a", "1"});
    CHECK(h({"SORT_RO", "hash"}) ==
          "(error) WRONGTYPE Operation against a key holding the wrong kind of value");
  }

  TEST_CASE("sorting a sorted set converts it to a skiplist, as Valkey does") {
    Harness h;
    h.raw({"ZADD", "small", "1", "a", "2", "b"});
    CHECK(h.raw({"OBJECT", "ENCODING", "small"}).str == "listpack");
    CHECK(h({"SORT_RO", "small", "ALPHA"}) == "a b");
    CHECK(h.raw({"OBJECT", "ENCODING", "small"}).str == "skiplist");
  }

  TEST_CASE("large inputs sort and store as a quicklist") {
    Harness h;
    std::vector<std::string> argv{"RPUSH", "big"};
    for (int i = 5000; i > 0; --i) {
      argv.push_back(std::to_string((i % 1000) * 100000));
    }
    std::vector<std::string_view> views(argv.begin(), argv.end());
    h.engine.run(h.session, views);
    CHECK(h({"SORT", "big", "LIMIT", "4", "2"}) == "0 100000");
    CHECK(h({"SORT", "big", "DESC", "LIMIT", "0", "1"}) == "99900000");
    CHECK(h({"SORT", "big", "STORE", "out"}) == "5000");
    CHECK(h.raw({"OBJECT", "ENCODING", "out"}).str == "quicklist");
    CHECK(h.raw({"LINDEX", "out", "-1"}).str == "99900000");
    CHECK(h.raw({"LINDEX", "out", "5"}).str == "100000");
  }

  TEST_CASE("a set sorted BY a constant comes back in ALPHA order to a script") {
    Harness h;
    h.raw({"SADD", "ms", "b", "aa", "c", "a", "azz"});
    CHECK(h({"EVAL", "return redis.call('sort', KEYS[1], 'by', '_')", "1", "ms"}) ==
          "a aa azz b c");
    CHECK(h({"EVAL", "return redis.call('sort', KEYS[1], 'by', '_', 'get', '#', 'get', '_:*')", "1",
             "ms"}) == "a (nil) aa (nil) azz (nil) b (nil) c (nil)");
  }
}
