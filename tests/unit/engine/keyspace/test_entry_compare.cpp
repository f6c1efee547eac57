#include "tests/unit/engine/commands/command_test_util.hpp"

#include "engine/engine.hpp"
#include "engine/keyspace/entry_compare.hpp"

#include <doctest/doctest.h>

#include <initializer_list>
#include <string_view>

namespace {

using keyshift::engine::compare_values;
using keyshift::engine::Entry;
using keyshift::engine::ValueMatch;
using keyshift::engine::command_test::ReplyFixture;
using keyshift::engine::command_test::show;

/// Two engines: `b` keeps every collection in its big encoding, so equal values are laid
/// out differently on the two sides.
struct TwoEngines {
  ReplyFixture a;
  ReplyFixture b;
  TwoEngines() {
    for (const char* name :
         {"set-max-intset-entries", "set-max-listpack-entries", "hash-max-listpack-entries",
          "zset-max-listpack-entries", "list-max-listpack-size"}) {
      REQUIRE(b.str({"CONFIG", "SET", name, "1"}) == "OK");
    }
  }
  /// Runs `args` on both engines.
  void both(std::initializer_list<std::string_view> args) {
    REQUIRE(!a.run(args).is_error());
    REQUIRE(!b.run(args).is_error());
  }
  ValueMatch match(std::string_view key, int64_t tolerance_ms = 0) {
    Entry* ea = a.engine.db(0).lookup(key, false);
    Entry* eb = b.engine.db(0).lookup(key, false);
    REQUIRE(ea != nullptr);
    REQUIRE(eb != nullptr);
    return compare_values(ea, eb, tolerance_ms);
  }
};

}  // namespace

TEST_SUITE("entry_compare") {
  TEST_CASE("equal values of every type match across encodings and insertion orders") {
    TwoEngines t;
    t.both({"SET", "s", "hello"});
    t.both({"SET", "n", "12345"});
    t.both({"RPUSH", "l", "a", "1", "b", "22"});
    REQUIRE(!t.a.run({"SADD", "set", "x", "y", "3"}).is_error());
    REQUIRE(!t.b.run({"SADD", "set", "3", "y", "x"}).is_error());
    REQUIRE(!t.a.run({"SADD", "ints", "1", "2", "3"}).is_error());
    REQUIRE(!t.b.run({"SADD", "ints", "3", "1", "2"}).is_error());
    REQUIRE(!t.a.run({"HSET", "h", "f1", "v1", "f2", "2"}).is_error());
    REQUIRE(!t.b.run({"HSET", "h", "f2", "2", "f1", "v1"}).is_error());
    t.both({"ZADD", "z", "1.5", "m1", "-2", "m2"});
    t.both({"XADD", "x", "1-1", "f", "v", "g", "w"});
    t.both({"XADD", "x", "2-0", "f", "7"});
    for (std::string_view key : {"s", "n", "l", "set", "ints", "h", "z", "x"}) {
      CAPTURE(key);
      CHECK(t.match(key) == ValueMatch::equal);
    }
  }

  TEST_CASE("a changed element, a missing element or another type is a value difference") {
    TwoEngines t;
    REQUIRE(!t.a.run({"RPUSH", "l", "a", "b"}).is_error());
    REQUIRE(!t.b.run({"RPUSH", "l", "b", "a"}).is_error());
    REQUIRE(!t.a.run({"SADD", "set", "x", "y"}).is_error());
    REQUIRE(!t.b.run({"SADD", "set", "x", "z"}).is_error());
    REQUIRE(!t.a.run({"HSET", "h", "f", "1"}).is_error());
    REQUIRE(!t.b.run({"HSET", "h", "f", "2"}).is_error());
    REQUIRE(!t.a.run({"ZADD", "z", "1", "m"}).is_error());
    REQUIRE(!t.b.run({"ZADD", "z", "1.000001", "m"}).is_error());
    REQUIRE(!t.a.run({"XADD", "x", "1-1", "f", "v"}).is_error());
    REQUIRE(!t.b.run({"XADD", "x", "1-2", "f", "v"}).is_error());
    REQUIRE(!t.a.run({"SET", "s", "abc"}).is_error());
    REQUIRE(!t.b.run({"SET", "s", "abd"}).is_error());
    REQUIRE(!t.a.run({"SET", "typed", "1"}).is_error());
    REQUIRE(!t.b.run({"RPUSH", "typed", "1"}).is_error());
    for (std::string_view key : {"l", "set", "h", "z", "x", "s", "typed"}) {
      CAPTURE(key);
      CHECK(t.match(key) == ValueMatch::value);
    }
  }

  TEST_CASE("hash field TTLs are compared within the tolerance") {
    TwoEngines t;
    t.both({"HSET", "h", "f", "v", "g", "w"});
    REQUIRE(show(t.a.run({"HPEXPIREAT", "h", "1800000000000", "FIELDS", "1", "f"})) == "[:1]");
    CHECK(t.match("h", 1000) == ValueMatch::field_ttl);  // set on one side only
    REQUIRE(show(t.b.run({"HPEXPIREAT", "h", "1800000000500", "FIELDS", "1", "f"})) == "[:1]");
    CHECK(t.match("h", 1000) == ValueMatch::equal);
    CHECK(t.match("h", 100) == ValueMatch::field_ttl);
  }
}
