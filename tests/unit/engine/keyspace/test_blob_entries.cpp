#include "engine/engine.hpp"
#include "engine/keyspace/hash_value.hpp"
#include "engine/keyspace/zset_value.hpp"
#include "engine/util/clock.hpp"

#include <doctest/doctest.h>

#include <string>
#include <string_view>
#include <vector>

namespace {

namespace ks = keyshift::engine;

/// An engine with DEBUG allowed; `h({...})` runs a command and returns the reply's text
/// (integers in decimal, errors prefixed, arrays of bulks joined by spaces).
struct Harness {
  Harness() : engine(with_debug(), clock), session(engine.open_session(nullptr)) {}
  static ks::EngineConfig with_debug() {
    ks::EngineConfig c;
    c.enable_debug_command = ks::EnableMode::yes;
    return c;
  }
  std::string operator()(const std::vector<std::string>& argv) {
    std::vector<std::string_view> v(argv.begin(), argv.end());
    ks::RespValue r = engine.run(session, v);
    switch (r.type) {
      case ks::RespValue::Type::integer:
        return std::to_string(r.integer);
      case ks::RespValue::Type::null:
        return "nil";
      case ks::RespValue::Type::error:
        return "(error) " + r.str;
      case ks::RespValue::Type::array: {
        std::string out;
        for (const ks::RespValue& e : r.elements) {
          out += (out.empty() ? "" : " ") +
                 (e.type == ks::RespValue::Type::integer ? std::to_string(e.integer) : e.str);
        }
        return out;
      }
      default:
        return r.str;
    }
  }
  /// HSET `key` with `fields` fields f0.. and values v0.. .
  void fill(const std::string& key, int fields, const std::string& value_prefix = "v") {
    std::vector<std::string> argv{"HSET", key};
    for (int i = 0; i < fields; ++i) {
      argv.push_back("f" + std::to_string(i));
      argv.push_back(value_prefix + std::to_string(i));
    }
    (*this)(argv);
  }
  ks::Entry* entry(std::string_view key, int db = 0) { return engine.db(db).lookup(key, false); }
  uint64_t used() { return engine.memory().used(); }

  ks::ManualClock clock;
  ks::Engine engine;
  ks::Session& session;
};

}  // namespace

TEST_SUITE("engine::blob_entries") {
  TEST_CASE("a small hash lives as a bare listpack block in its entry") {
    Harness h;
    h.fill("h", 10);
    ks::Entry* e = h.entry("h");
    REQUIRE(e != nullptr);
    CHECK(e->kind() == ks::Entry::Kind::blob);
    CHECK(e->blob() != nullptr);
    CHECK(h({"OBJECT", "ENCODING", "h"}) == "listpack");
    CHECK(h({"HGET", "h", "f7"}) == "v7");
    CHECK(h({"HLEN", "h"}) == "10");
    CHECK(ks::HashRef(static_cast<const ks::Entry*>(e)).bytes() ==
          ks::MemoryCounter::usable_size(e->blob()));
  }

  TEST_CASE("memory returns to its start after creating, growing, converting and deleting") {
    Harness h;
    h.fill("h", 1);  // the table has room for "h" before the measurement starts
    h({"DEL", "h"});
    uint64_t start = h.used();
    h.fill("h", 10);
    uint64_t small = h.used();
    CHECK(small > start);
    h({"HSET", "h", "long", std::string(100, 'x')});  // past hash-max-listpack-value
    CHECK(h({"OBJECT", "ENCODING", "h"}) == "hashtable");
    CHECK(h.entry("h")->kind() == ks::Entry::Kind::object);
    CHECK(h({"HGET", "h", "f3"}) == "v3");
    CHECK(h({"HLEN", "h"}) == "11");
    h({"DEL", "h"});
    CHECK(h.used() == start);

    h.fill("g", 5);
    for (int i = 0; i < 5; ++i) {
      h({"HDEL", "g", "f" + std::to_string(i)});
    }
    CHECK(h({"EXISTS", "g"}) == "0");
    CHECK(h.used() == start);
  }

  TEST_CASE("entry bytes_used counts the block, as MEMORY USAGE does") {
    Harness h;
    h.fill("h", 10);
    ks::Entry* e = h.entry("h");
    CHECK(e->bytes_used() ==
          ks::MemoryCounter::usable_size(e) + ks::MemoryCounter::usable_size(e->blob()));
  }

  TEST_CASE("COPY, RENAME and MOVE keep a blob hash's contents, digest and memory count") {
    Harness h;
    // One round creates and deletes every key; the second must end where it started (the
    // first may leave the databases' tables grown).
    auto round = [&] {
      h.fill("h", 10);
      std::string digest = h({"DEBUG", "DIGEST-VALUE", "h"});
      CHECK(h({"COPY", "h", "c"}) == "1");
      CHECK(h.entry("c")->kind() == ks::Entry::Kind::blob);
      CHECK(h.entry("c")->blob() != h.entry("h")->blob());
      CHECK(h({"DEBUG", "DIGEST-VALUE", "c"}) == digest);
      CHECK(h({"RENAME", "c", "r"}) == "OK");
      CHECK(h({"DEBUG", "DIGEST-VALUE", "r"}) == digest);
      CHECK(h({"MOVE", "r", "1"}) == "1");
      REQUIRE(h.entry("r", 1) != nullptr);
      CHECK(h.entry("r", 1)->kind() == ks::Entry::Kind::blob);
      h({"HSET", "h", "f0", "changed"});  // the copy shares nothing with its source
      CHECK(h({"SELECT", "1"}) == "OK");
      CHECK(h({"HGET", "r", "f0"}) == "v0");
      CHECK(h({"DEBUG", "DIGEST-VALUE", "r"}) == digest);
      h({"DEL", "r"});
      h({"SELECT", "0"});
      h({"DEL", "h"});
    };
    round();
    uint64_t start = h.used();
    round();
    CHECK(h.used() == start);
  }

  TEST_CASE("the digest of a blob hash equals the digest of the same hash as an object") {
    Harness h;
    h.fill("h", 10);
    ks::HashValue object(1);
    for (int i = 0; i < 10; ++i) {
      object.set("f" + std::to_string(i), "v" + std::to_string(i), ks::HashLimits{});
    }
    CHECK(h({"DEBUG", "DIGEST-VALUE", "h"}) == ks::digest_hash(object, false).hex());
    ks::Digest before =
        ks::digest_hash(*ks::HashRef(static_cast<const ks::Entry*>(h.entry("h"))), false);
    h({"HSET", "h", "long", std::string(100, 'x')});
    h({"HDEL", "h", "long"});  // now a hashtable holding the same fields
    CHECK(ks::digest_hash(*ks::HashRef(static_cast<const ks::Entry*>(h.entry("h"))), false).hex() ==
          before.hex());
  }

  TEST_CASE("DUMP and RESTORE bring a small hash back as a blob") {
    Harness h;
    h.fill("h", 10);
    std::string digest = h({"DEBUG", "DIGEST-VALUE", "h"});
    ks::RespValue dump = [&] {
      std::vector<std::string_view> v{"DUMP", "h"};
      return h.engine.run(h.session, v);
    }();
    CHECK(h({"RESTORE", "h2", "0", dump.str}) == "OK");
    CHECK(h.entry("h2")->kind() == ks::Entry::Kind::blob);
    CHECK(h({"OBJECT", "ENCODING", "h2"}) == "listpack");
    CHECK(h({"DEBUG", "DIGEST-VALUE", "h2"}) == digest);
  }

  TEST_CASE("a hash given field TTLs leaves the blob for an object in place") {
    Harness h;
    h.fill("h", 3);
    CHECK(h({"HEXPIRE", "h", "100", "FIELDS", "1", "f1"}) == "1");
    CHECK(h.entry("h")->kind() == ks::Entry::Kind::object);
    CHECK(h({"OBJECT", "ENCODING", "h"}) == "listpackex");
    CHECK(h({"HGET", "h", "f2"}) == "v2");
  }

  TEST_CASE("FLUSHALL frees every block") {
    Harness h;
    h({"SET", "anchor", "x"});
    uint64_t start = h.used();
    for (int i = 0; i < 50; ++i) {
      h.fill("h" + std::to_string(i), 5);
    }
    h({"FLUSHALL"});
    h({"SET", "anchor", "x"});
    CHECK(h.used() <= start);
  }

  TEST_CASE("a small set moves intset -> listpack -> hashtable, blob until the hashtable") {
    Harness h;
    h({"SADD", "warm", "1"});
    h({"DEL", "warm"});
    uint64_t start = h.used();
    h({"SADD", "s", "1", "2", "3"});
    CHECK(h.entry("s")->kind() == ks::Entry::Kind::blob);
    CHECK(h({"OBJECT", "ENCODING", "s"}) == "intset");
    h({"SADD", "s", "a"});
    CHECK(h.entry("s")->kind() == ks::Entry::Kind::blob);
    CHECK(h({"OBJECT", "ENCODING", "s"}) == "listpack");
    CHECK(h({"SISMEMBER", "s", "2"}) == "1");
    std::vector<std::string> argv{"SADD", "s"};
    for (int i = 0; i < 200; ++i) {
      argv.push_back("m" + std::to_string(i));
    }
    h(argv);
    CHECK(h.entry("s")->kind() == ks::Entry::Kind::object);
    CHECK(h({"OBJECT", "ENCODING", "s"}) == "hashtable");
    CHECK(h({"SCARD", "s"}) == "204");
    h({"DEL", "s"});
    CHECK(h.used() == start);
  }

  TEST_CASE("set blobs survive COPY, RENAME, SPOP with a count, SINTERSTORE and RESTORE") {
    Harness h;
    auto round = [&] {
      h({"SADD", "s", "1", "2", "3", "4", "5", "6", "7", "8"});
      std::string digest = h({"DEBUG", "DIGEST-VALUE", "s"});
      CHECK(h({"COPY", "s", "c"}) == "1");
      CHECK(h({"RENAME", "c", "r"}) == "OK");
      CHECK(h({"DEBUG", "DIGEST-VALUE", "r"}) == digest);
      CHECK(h.entry("r")->kind() == ks::Entry::Kind::blob);
      CHECK(h({"SINTERSTORE", "i", "s", "r"}) == "8");
      CHECK(h.entry("i")->kind() == ks::Entry::Kind::blob);
      CHECK(h({"DEBUG", "DIGEST-VALUE", "i"}) == digest);
      h({"SPOP", "r", "7"});  // most members go: the survivors replace the block
      CHECK(h({"SCARD", "r"}) == "1");
      CHECK(h.entry("r")->kind() == ks::Entry::Kind::blob);
      h({"SPOP", "i", "2"});  // few members go: popped one by one
      CHECK(h({"SCARD", "i"}) == "6");
      ks::RespValue dump = [&] {
        std::vector<std::string_view> v{"DUMP", "s"};
        return h.engine.run(h.session, v);
      }();
      CHECK(h({"RESTORE", "s2", "0", dump.str}) == "OK");
      CHECK(h.entry("s2")->kind() == ks::Entry::Kind::blob);
      CHECK(h({"DEBUG", "DIGEST-VALUE", "s2"}) == digest);
      h({"DEL", "s", "r", "i", "s2"});
    };
    round();
    uint64_t start = h.used();
    round();
    CHECK(h.used() == start);
  }

  TEST_CASE("a small sorted set is a blob until it grows into a skiplist, then an object") {
    Harness h;
    h({"ZADD", "warm", "1", "a"});
    h({"DEL", "warm"});
    uint64_t start = h.used();
    h({"ZADD", "z", "1", "a", "2.5", "b", "3", "c"});
    CHECK(h.entry("z")->kind() == ks::Entry::Kind::blob);
    CHECK(h({"OBJECT", "ENCODING", "z"}) == "listpack");
    CHECK(h({"ZSCORE", "z", "b"}) == "2.5");
    CHECK(h({"ZINCRBY", "z", "10", "a"}) == "11");
    CHECK(h({"ZRANGE", "z", "0", "-1"}) == "b c a");
    CHECK(h.entry("z")->kind() == ks::Entry::Kind::blob);
    CHECK(h({"ZADD", "z", "4", std::string(65, 'x')}) == "1");  // longer than the value limit
    CHECK(h.entry("z")->kind() == ks::Entry::Kind::object);
    CHECK(h({"OBJECT", "ENCODING", "z"}) == "skiplist");
    CHECK(h({"ZCARD", "z"}) == "4");
    CHECK(h({"ZRANK", "z", "a"}) == "3");
    h({"DEL", "z"});
    CHECK(h.used() == start);
  }

  TEST_CASE("removing, popping and range removal keep a blob sorted set and free it when empty") {
    Harness h;
    h({"ZADD", "warm", "1", "a"});
    h({"DEL", "warm"});
    uint64_t start = h.used();
    std::vector<std::string> argv{"ZADD", "z"};
    for (int i = 0; i < 20; ++i) {
      argv.push_back(std::to_string(i));
      argv.push_back("m" + std::to_string(i));
    }
    h(argv);
    CHECK(h({"ZREM", "z", "m0", "m1"}) == "2");
    CHECK(h({"ZPOPMIN", "z"}) == "m2 2");
    CHECK(h({"ZREMRANGEBYSCORE", "z", "3", "5"}) == "3");
    CHECK(h({"ZREMRANGEBYRANK", "z", "0", "1"}) == "2");
    CHECK(h({"ZCARD", "z"}) == "12");
    CHECK(h.entry("z")->kind() == ks::Entry::Kind::blob);
    CHECK(ks::ZSetRef(static_cast<const ks::Entry*>(h.entry("z"))).bytes() ==
          ks::MemoryCounter::usable_size(h.entry("z")->blob()));
    CHECK(h({"ZREMRANGEBYLEX", "z", "-", "+"}) == "12");
    CHECK(h({"EXISTS", "z"}) == "0");
    CHECK(h.used() == start);
  }

  TEST_CASE("sorted-set blobs survive COPY, RENAME, ZUNIONSTORE, SORT, DUMP/RESTORE and RELOAD") {
    Harness h;
    auto round = [&] {
      h({"ZADD", "z", "1", "a", "2", "b", "3.5", "c", "-inf", "d"});
      std::string digest = h({"DEBUG", "DIGEST-VALUE", "z"});
      CHECK(h({"COPY", "z", "c"}) == "1");
      CHECK(h({"RENAME", "c", "r"}) == "OK");
      CHECK(h.entry("r")->kind() == ks::Entry::Kind::blob);
      CHECK(h({"DEBUG", "DIGEST-VALUE", "r"}) == digest);
      CHECK(h({"ZUNIONSTORE", "u", "1", "z"}) == "4");
      CHECK(h.entry("u")->kind() == ks::Entry::Kind::blob);
      CHECK(h({"DEBUG", "DIGEST-VALUE", "u"}) == digest);
      CHECK(h({"ZRANGESTORE", "u", "u", "0", "1"}) == "2");  // source and destination alike
      CHECK(h({"ZRANGE", "u", "0", "-1"}) == "d a");
      ks::RespValue dump = [&] {
        std::vector<std::string_view> v{"DUMP", "z"};
        return h.engine.run(h.session, v);
      }();
      CHECK(h({"RESTORE", "z2", "0", dump.str}) == "OK");
      CHECK(h.entry("z2")->kind() == ks::Entry::Kind::blob);
      CHECK(h({"DEBUG", "DIGEST-VALUE", "z2"}) == digest);
      // SORT converts a listpack sorted set to a skiplist for good, as Valkey does.
      CHECK(h({"SORT", "r", "BY", "nosort"}) == "d a b c");
      CHECK(h({"OBJECT", "ENCODING", "r"}) == "skiplist");
      CHECK(h.entry("r")->kind() == ks::Entry::Kind::object);
      CHECK(h({"DEBUG", "DIGEST-VALUE", "r"}) == digest);
      h({"DEL", "z", "r", "u", "z2"});
    };
    round();
    uint64_t start = h.used();
    round();
    CHECK(h.used() == start);
  }
}
