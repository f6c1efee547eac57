#include "engine/engine.hpp"
#include "engine/keyspace/hash_value.hpp"
#include "engine/util/clock.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <initializer_list>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace {

using keyshift::engine::EnableMode;
using keyshift::engine::Engine;
using keyshift::engine::EngineConfig;
using keyshift::engine::ManualClock;
using keyshift::engine::RespValue;
using keyshift::engine::Session;
namespace ks = keyshift::engine;

/// A reply in one line: integers and bulks as text, nil, (error) text, arrays as [a, b],
/// RESP3 maps as {k: v}.
std::string flat(const RespValue& v) {
  switch (v.type) {
    case RespValue::Type::integer:
      return std::to_string(v.integer);
    case RespValue::Type::null:
      return "nil";
    case RespValue::Type::error:
      return "(error) " + v.str;
    case RespValue::Type::array:
    case RespValue::Type::set:
    case RespValue::Type::map: {
      bool map = v.type == RespValue::Type::map;
      std::string out = map ? "{" : "[";
      for (size_t i = 0; i < v.elements.size(); ++i) {
        if (i > 0) {
          out += map && i % 2 == 1 ? ": " : ", ";
        }
        out += flat(v.elements[i]);
      }
      return out + (map ? "}" : "]");
    }
    default:
      return v.str;
  }
}

/// An engine on a manual clock with DEBUG allowed; `h({...})` runs a command on a RESP2
/// session and flattens the reply, `h3({...})` does the same on a RESP3 session.
struct Harness {
  explicit Harness(EngineConfig config = with_debug())
      : engine(std::move(config), clock),
        session(engine.open_session(nullptr)),
        session3(engine.open_session(nullptr)) {
    session3.resp = 3;
  }
  static EngineConfig with_debug() {
    EngineConfig c;
    c.enable_debug_command = EnableMode::yes;
    return c;
  }

  std::string operator()(std::initializer_list<std::string_view> argv) { return flat(raw(argv)); }
  std::string h3(std::initializer_list<std::string_view> argv) {
    std::vector<std::string_view> v(argv);
    return flat(engine.run(session3, v));
  }
  RespValue raw(std::initializer_list<std::string_view> argv) {
    std::vector<std::string_view> v(argv);
    return engine.run(session, v);
  }
  RespValue run(const std::vector<std::string>& argv) {
    std::vector<std::string_view> v(argv.begin(), argv.end());
    return engine.run(session, v);
  }
  /// Fields stored in the hash at `key` of db 0, expired or not (what cron left behind).
  size_t stored_fields(std::string_view key) {
    size_t n = 0;
    engine.db(0).for_each([&](ks::Entry* e) {
      if (e->key() == key) {
        n = ks::HashRef(static_cast<const ks::Entry*>(e))->size();
      }
    });
    return n;
  }
  void fill(std::string_view key, int fields, std::string_view prefix = "f") {
    std::vector<std::string> argv{"HSET", std::string(key)};
    for (int i = 0; i < fields; ++i) {
      argv.push_back(std::string(prefix) + std::to_string(i));
      argv.push_back("v" + std::to_string(i));
    }
    run(argv);
  }

  ManualClock clock;
  Engine engine;
  Session& session;
  Session& session3;
};

std::string err(std::string_view text) {
  return "(error) " + std::string(text);
}

constexpr std::string_view k_wrongtype =
    "WRONGTYPE Operation against a key holding the wrong kind of value";

}  // namespace

TEST_SUITE("engine::hash_family") {
  TEST_CASE("HSET adds and updates fields, HGET and HMGET read them") {
    Harness h;
    CHECK(h({"HSET", "h", "a", "1", "b", "2"}) == "2");
    CHECK(h({"HSET", "h", "a", "10", "c", "3"}) == "1");
    CHECK(h({"HGET", "h", "a"}) == "10");
    CHECK(h({"HGET", "h", "zz"}) == "nil");
    CHECK(h({"HGET", "missing", "a"}) == "nil");
    CHECK(h({"HMGET", "h", "a", "zz", "c"}) == "[10, nil, 3]");
    CHECK(h({"HMGET", "missing", "a", "b"}) == "[nil, nil]");
    CHECK(h({"HLEN", "h"}) == "3");
    CHECK(h({"HLEN", "missing"}) == "0");
    CHECK(h({"TYPE", "h"}) == "hash");
  }

  TEST_CASE("HSET and HMSET with a field but no value are arity errors") {
    Harness h;
    CHECK(h({"HSET", "h", "a", "1", "b"}) ==
          err("ERR wrong number of arguments for 'hset' command"));
    CHECK(h({"HSET", "h", "a"}) == err("ERR wrong number of arguments for 'hset' command"));
    CHECK(h({"HMSET", "h", "a", "1", "b"}) ==
          err("ERR wrong number of arguments for 'hmset' command"));
    CHECK(h({"EXISTS", "h"}) == "0");
    CHECK(h({"HMSET", "h", "a", "1", "b", "2"}) == "OK");
    CHECK(h({"HGET", "h", "b"}) == "2");
  }

  TEST_CASE("every hash command refuses a key of another type") {
    Harness h;
    h({"SET", "s", "x"});
    for (auto argv : std::vector<std::vector<std::string>>{
             {"HSET", "s", "a", "1"},
             {"HSETNX", "s", "a", "1"},
             {"HMSET", "s", "a", "1"},
             {"HGET", "s", "a"},
             {"HMGET", "s", "a"},
             {"HGETALL", "s"},
             {"HKEYS", "s"},
             {"HVALS", "s"},
             {"HDEL", "s", "a"},
             {"HEXISTS", "s", "a"},
             {"HLEN", "s"},
             {"HSTRLEN", "s", "a"},
             {"HINCRBY", "s", "a", "1"},
             {"HINCRBYFLOAT", "s", "a", "1"},
             {"HRANDFIELD", "s"},
             {"HRANDFIELD", "s", "2"},
             {"HSCAN", "s", "0"},
             {"HEXPIRE", "s", "10", "FIELDS", "1", "a"},
             {"HTTL", "s", "FIELDS", "1", "a"},
             {"HPERSIST", "s", "FIELDS", "1", "a"},
         }) {
      CAPTURE(argv[0]);
      CHECK(flat(h.run(argv)) == err(k_wrongtype));
    }
    CHECK(h({"GET", "s"}) == "x");
  }

  TEST_CASE("HSETNX only sets a missing field") {
    Harness h;
    CHECK(h({"HSETNX", "h", "a", "1"}) == "1");
    CHECK(h({"HSETNX", "h", "a", "2"}) == "0");
    CHECK(h({"HGET", "h", "a"}) == "1");
  }

  TEST_CASE("HDEL counts removed fields and deletes the emptied key") {
    Harness h;
    h({"HSET", "h", "a", "1", "b", "2", "c", "3"});
    CHECK(h({"HDEL", "h", "a", "zz", "a"}) == "1");
    CHECK(h({"HDEL", "missing", "a"}) == "0");
    CHECK(h({"HDEL", "h", "b", "c", "d"}) == "2");
    CHECK(h({"EXISTS", "h"}) == "0");
    CHECK(h({"HLEN", "h"}) == "0");
  }

  TEST_CASE("HEXISTS and HSTRLEN, including listpack integers") {
    Harness h;
    h({"HSET", "h", "n", "-12345", "s", "hello", "e", ""});
    CHECK(h({"HEXISTS", "h", "n"}) == "1");
    CHECK(h({"HEXISTS", "h", "zz"}) == "0");
    CHECK(h({"HEXISTS", "missing", "n"}) == "0");
    CHECK(h({"HSTRLEN", "h", "n"}) == "6");
    CHECK(h({"HSTRLEN", "h", "s"}) == "5");
    CHECK(h({"HSTRLEN", "h", "e"}) == "0");
    CHECK(h({"HSTRLEN", "h", "zz"}) == "0");
    CHECK(h({"HSTRLEN", "missing", "zz"}) == "0");
  }

  TEST_CASE("HGETALL HKEYS HVALS keep listpack order; HGETALL is a map under RESP3") {
    Harness h;
    h({"HSET", "h", "b", "1", "a", "2", "c", "3"});
    CHECK(h({"HGETALL", "h"}) == "[b, 1, a, 2, c, 3]");
    CHECK(h({"HKEYS", "h"}) == "[b, a, c]");
    CHECK(h({"HVALS", "h"}) == "[1, 2, 3]");
    CHECK(h.h3({"HGETALL", "h"}) == "{b: 1, a: 2, c: 3}");
    CHECK(h.h3({"HKEYS", "h"}) == "[b, a, c]");
    CHECK(h({"HGETALL", "missing"}) == "[]");
    CHECK(h.raw({"HGETALL", "missing"}).type == RespValue::Type::array);
    std::vector<std::string_view> argv{"HGETALL", "missing"};
    CHECK(h.engine.run(h.session3, argv).type == RespValue::Type::map);
    CHECK(h({"HKEYS", "missing"}) == "[]");
  }

  TEST_CASE("HGETALL of a hashtable returns every field once") {
    Harness h;
    h.fill("h", 600);
    CHECK(h({"OBJECT", "ENCODING", "h"}) == "hashtable");
    RespValue all = h.raw({"HGETALL", "h"});
    REQUIRE(all.elements.size() == 1200);
    std::set<std::string> fields;
    for (size_t i = 0; i < all.elements.size(); i += 2) {
      std::string f = all.elements[i].str;
      CHECK(all.elements[i + 1].str == "v" + f.substr(1));
      fields.insert(f);
    }
    CHECK(fields.size() == 600);
  }

  TEST_CASE("HINCRBY adds to integers and refuses others") {
    Harness h;
    CHECK(h({"HINCRBY", "h", "n", "5"}) == "5");
    CHECK(h({"HINCRBY", "h", "n", "-7"}) == "-2");
    CHECK(h({"HGET", "h", "n"}) == "-2");
    h({"HSET", "h", "s", "abc", "sp", " 1", "big", "9223372036854775807"});
    CHECK(h({"HINCRBY", "h", "s", "1"}) == err("ERR hash value is not an integer"));
    CHECK(h({"HINCRBY", "h", "sp", "1"}) == err("ERR hash value is not an integer"));
    CHECK(h({"HINCRBY", "h", "big", "1"}) == err("ERR increment or decrement would overflow"));
    CHECK(h({"HINCRBY", "h", "n", "x"}) == err("ERR value is not an integer or out of range"));
    CHECK(h({"HINCRBY", "h", "big", "-9223372036854775807"}) == "0");
    CHECK(h({"HINCRBY", "other", "n", "x"}) == err("ERR value is not an integer or out of range"));
    CHECK(h({"EXISTS", "other"}) == "0");
  }

  TEST_CASE("HINCRBYFLOAT adds, formats like Valkey and refuses NaN and Infinity") {
    Harness h;
    CHECK(h({"HINCRBYFLOAT", "h", "f", "10.5"}) == "10.5");
    CHECK(h({"HINCRBYFLOAT", "h", "f", "0.1"}) == "10.6");
    CHECK(h({"HINCRBYFLOAT", "h", "f", "-10.6"}) == "0");
    CHECK(h({"HINCRBYFLOAT", "h", "g", "5.0e3"}) == "5000");
    h({"HSET", "h", "s", "abc", "m", "1.18e4932", "sp", "1.5 ", "e", "1e5"});
    CHECK(h({"HINCRBYFLOAT", "h", "s", "1"}) == err("ERR hash value is not a float"));
    CHECK(h({"HINCRBYFLOAT", "h", "sp", "1"}) == err("ERR hash value is not a float"));
    CHECK(h({"HINCRBYFLOAT", "h", "e", "1"}) == "100001");
    CHECK(h({"HINCRBYFLOAT", "h", "f", "x"}) == err("ERR value is not a valid float"));
    CHECK(h({"HINCRBYFLOAT", "h", "f", "inf"}) == err("ERR value is NaN or Infinity"));
    // Long doubles reach far past 1e308; only their own overflow is refused.
    CHECK(h({"HINCRBYFLOAT", "h", "m", "1.18e4932"}) ==
          err("ERR increment would produce NaN or Infinity"));
    CHECK(h({"HGET", "h", "m"}) == "1.18e4932");
    // Replies as redis-server 7.0 prints the same sum.
    CHECK(h({"HINCRBYFLOAT", "h", "x", "1e300"}) ==
          "1000000000000000000008997324079559193870523944273290747938260082321265646596180935755849"
          "152083750497190350372508614274835903592556184672983913096260520748646287327135641843653"
          "294084255107606016789726652932370030551382947620994540294772781889620606179267611627097"
          "410650567187386105690089424915104006144");
  }

  TEST_CASE("HRANDFIELD without a count picks one field, nil when missing") {
    Harness h;
    CHECK(h({"HRANDFIELD", "missing"}) == "nil");
    h({"HSET", "h", "a", "1", "b", "2"});
    std::string f = h({"HRANDFIELD", "h"});
    CHECK((f == "a" || f == "b"));
  }

  TEST_CASE("HRANDFIELD with a count: unique for positive, repeated for negative") {
    for (int size : {5, 700}) {
      Harness h;
      h.fill("h", size);
      CHECK(h({"HRANDFIELD", "h", "0"}) == "[]");
      CHECK(h({"HRANDFIELD", "missing", "3"}) == "[]");
      for (int64_t count : {1, 3, 4, 5, 6, 250, 1000}) {
        RespValue r = h.run({"HRANDFIELD", "h", std::to_string(count)});
        std::set<std::string> unique;
        for (const RespValue& e : r.elements) {
          unique.insert(e.str);
        }
        size_t expect = static_cast<size_t>(std::min<int64_t>(count, size));
        CHECK(r.elements.size() == expect);
        CHECK(unique.size() == expect);
      }
      RespValue rep = h.raw({"HRANDFIELD", "h", "-20"});
      CHECK(rep.elements.size() == 20);
      RespValue pairs = h.raw({"HRANDFIELD", "h", "-3", "WITHVALUES"});
      REQUIRE(pairs.elements.size() == 6);
      CHECK(pairs.elements[1].str == "v" + pairs.elements[0].str.substr(1));
      std::vector<std::string_view> argv{"HRANDFIELD", "h", "2", "WITHVALUES"};
      RespValue nested = h.engine.run(h.session3, argv);
      REQUIRE(nested.elements.size() == 2);
      REQUIRE(nested.elements[0].elements.size() == 2);
      CHECK(nested.elements[0].elements[1].str ==
            "v" + nested.elements[0].elements[0].str.substr(1));
    }
  }

  TEST_CASE("HRANDFIELD argument errors come before the key lookup") {
    Harness h;
    CHECK(h({"HRANDFIELD", "missing", "x"}) == err("ERR value is not an integer or out of range"));
    CHECK(h({"HRANDFIELD", "missing", "1", "WITHSCORES"}) == err("ERR syntax error"));
    CHECK(h({"HRANDFIELD", "missing", "1", "WITHVALUES", "x"}) == err("ERR syntax error"));
    CHECK(h({"HRANDFIELD", "missing", "-9223372036854770000", "WITHVALUES"}) ==
          err("ERR value is out of range"));
    CHECK(h({"HRANDFIELD", "missing", "-9223372036854775808", "WITHVALUES"}) ==
          err("ERR value is out of range, value must between -9223372036854775807 and "
              "9223372036854775807"));
    CHECK(h({"HRANDFIELD", "missing", "-9223372036854775808"}) ==
          err("ERR value is out of range, value must between -9223372036854775807 and "
              "9223372036854775807"));
    CHECK(h({"HRANDFIELD", "missing", "-9223372036854775807"}) == "[]");
  }

  TEST_CASE("HSCAN of a listpack returns everything at once with cursor 0") {
    Harness h;
    h({"HSET", "h", "a1", "1", "b1", "2", "a2", "3"});
    CHECK(h({"HSCAN", "h", "0"}) == "[0, [a1, 1, b1, 2, a2, 3]]");
    CHECK(h({"HSCAN", "h", "0", "MATCH", "a*"}) == "[0, [a1, 1, a2, 3]]");
    CHECK(h({"HSCAN", "h", "0", "NOVALUES"}) == "[0, [a1, b1, a2]]");
    CHECK(h({"HSCAN", "h", "0", "COUNT", "1", "MATCH", "b*", "NOVALUES"}) == "[0, [b1]]");
    CHECK(h({"HSCAN", "missing", "0", "BOGUS"}) == "[0, []]");
  }

  TEST_CASE("HSCAN argument errors") {
    Harness h;
    h({"HSET", "h", "a", "1"});
    CHECK(h({"HSCAN", "h", "x"}) == err("ERR invalid cursor"));
    CHECK(h({"HSCAN", "h", "-1"}) == err("ERR invalid cursor"));
    CHECK(h({"HSCAN", "h", "0", "COUNT", "0"}) == err("ERR syntax error"));
    CHECK(h({"HSCAN", "h", "0", "COUNT", "x"}) ==
          err("ERR value is not an integer or out of range"));
    CHECK(h({"HSCAN", "h", "0", "TYPE", "hash"}) == err("ERR syntax error"));
    CHECK(h({"HSCAN", "h", "0", "NOSCORES"}) ==
          err("ERR NOSCORES option can only be used in ZSCAN"));
    CHECK(h({"HSCAN", "h", "0", "MATCH"}) == err("ERR syntax error"));
  }

  TEST_CASE("HSCAN of a hashtable walks the reverse-binary cursor to every field") {
    Harness h;
    h.fill("h", 1000);
    std::set<std::string> seen;
    std::string cursor = "0";
    int calls = 0;
    do {
      RespValue r = h.run({"HSCAN", "h", cursor, "COUNT", "50"});
      REQUIRE(r.elements.size() == 2);
      cursor = r.elements[0].str;
      for (size_t i = 0; i < r.elements[1].elements.size(); i += 2) {
        seen.insert(r.elements[1].elements[i].str);
      }
      ++calls;
    } while (cursor != "0" && calls < 10000);
    CHECK(seen.size() == 1000);
    CHECK(calls > 2);
    RespValue keys_only = h.raw({"HSCAN", "h", "0", "COUNT", "2000", "NOVALUES", "MATCH", "f99*"});
    CHECK(keys_only.elements[1].elements.size() == 11);  // f99, f990..f999
  }

  TEST_CASE("OBJECT ENCODING moves from listpack to hashtable past the limits, never back") {
    EngineConfig cfg = Harness::with_debug();
    cfg.hash_max_listpack_entries = 4;
    cfg.hash_max_listpack_value = 10;
    Harness h(cfg);
    h.fill("h", 4);
    CHECK(h({"OBJECT", "ENCODING", "h"}) == "listpack");
    h({"HSET", "h", "f4", "v"});
    CHECK(h({"OBJECT", "ENCODING", "h"}) == "hashtable");
    h({"HDEL", "h", "f0", "f1", "f2", "f3"});
    CHECK(h({"OBJECT", "ENCODING", "h"}) == "hashtable");
    h({"HSET", "v", "f", "0123456789"});
    CHECK(h({"OBJECT", "ENCODING", "v"}) == "listpack");
    h({"HSET", "v", "f", "0123456789a"});
    CHECK(h({"OBJECT", "ENCODING", "v"}) == "hashtable");
    h({"HINCRBYFLOAT", "w", std::string(11, 'k'), "1"});
    CHECK(h({"OBJECT", "ENCODING", "w"}) == "hashtable");
    // Too many pairs in one HSET convert before anything is added.
    h({"HSET", "m", "a", "1", "b", "2", "c", "3", "d", "4", "e", "5"});
    CHECK(h({"OBJECT", "ENCODING", "m"}) == "hashtable");
  }

  TEST_CASE("hash-max-listpack-* and their ziplist aliases are live settings") {
    Harness h;
    CHECK(h({"CONFIG", "SET", "hash-max-ziplist-entries", "2"}) == "OK");
    CHECK(h({"CONFIG", "GET", "hash-max-listpack-entries"}) == "[hash-max-listpack-entries, 2]");
    h.fill("h", 3);
    CHECK(h({"OBJECT", "ENCODING", "h"}) == "hashtable");
    CHECK(h({"CONFIG", "SET", "hash-max-listpack-value", "3"}) == "OK");
    h({"HSET", "v", "f", "abcd"});
    CHECK(h({"OBJECT", "ENCODING", "v"}) == "hashtable");
  }

  TEST_CASE("memory accounting returns to its start when every hash is gone") {
    for (uint64_t entries : {512, 4}) {
      EngineConfig cfg = Harness::with_debug();
      cfg.hash_max_listpack_entries = entries;
      Harness h(cfg);
      h({"SET", "anchor", "x"});
      uint64_t start = h.engine.memory().used();
      h.fill("a", 50);
      h({"HSET", "a", "f1", std::string(300, 'x')});  // value rewrite, then conversion
      h({"HINCRBY", "a", "n", "5"});
      h({"HEXPIRE", "a", "100", "FIELDS", "3", "f2", "f3", "n"});
      h({"HPERSIST", "a", "FIELDS", "1", "f2"});
      h.fill("b", 3);
      h({"HPEXPIRE", "b", "10", "FIELDS", "3", "f0", "f1", "f2"});
      CHECK(h.engine.memory().used() > start);
      h({"COPY", "a", "c"});
      std::vector<std::string> del{"HDEL", "a"};
      for (int i = 0; i < 50; ++i) {
        del.push_back("f" + std::to_string(i));
      }
      del.push_back("n");
      h.run(del);
      CHECK(h({"EXISTS", "a"}) == "0");
      h({"DEL", "c"});
      h.clock.advance_ms(20);
      h.engine.cron();  // b's fields all expire: the key goes with them
      CHECK(h({"EXISTS", "b"}) == "0");
      CHECK(h.engine.memory().used() == start);
    }
  }

  TEST_CASE("HEXPIRE replies per field and HTTL family reports the TTLs") {
    Harness h;
    int64_t now = h.clock.now_ms();
    h({"HSET", "h", "a", "1", "b", "2", "c", "3"});
    CHECK(h({"HEXPIRE", "h", "100", "FIELDS", "2", "a", "zz"}) == "[1, -2]");
    CHECK(h({"HPEXPIRE", "h", "1500", "FIELDS", "1", "b"}) == "[1]");
    CHECK(h({"OBJECT", "ENCODING", "h"}) == "listpackex");
    CHECK(h({"HTTL", "h", "FIELDS", "4", "a", "b", "c", "zz"}) == "[100, 2, -1, -2]");
    CHECK(h({"HPTTL", "h", "FIELDS", "2", "a", "b"}) == "[100000, 1500]");
    CHECK(h({"HPEXPIRETIME", "h", "FIELDS", "2", "a", "c"}) ==
          "[" + std::to_string(now + 100000) + ", -1]");
    CHECK(h({"HEXPIRETIME", "h", "FIELDS", "1", "b"}) ==
          "[" + std::to_string((now + 1500 + 999) / 1000) + "]");
    CHECK(h({"HTTL", "missing", "FIELDS", "2", "a", "b"}) == "[-2, -2]");
    CHECK(h({"HEXPIRE", "missing", "10", "FIELDS", "1", "a"}) == "[-2]");
    CHECK(h({"HEXPIREAT", "h", std::to_string(now / 1000 + 50), "FIELDS", "1", "c"}) == "[1]");
    CHECK(h({"HPEXPIREAT", "h", std::to_string(now + 7), "FIELDS", "1", "c"}) == "[1]");
    CHECK(h({"HPTTL", "h", "FIELDS", "1", "c"}) == "[7]");
  }

  TEST_CASE("expired fields are never returned and the last one takes the key") {
    Harness h;
    h({"HSET", "h", "a", "1", "b", "2", "c", "3"});
    h({"HPEXPIRE", "h", "100", "FIELDS", "1", "a"});
    h({"HPEXPIRE", "h", "200", "FIELDS", "2", "b", "c"});
    h.clock.advance_ms(99);
    CHECK(h({"HGET", "h", "a"}) == "1");
    h.clock.advance_ms(1);
    CHECK(h({"HGET", "h", "a"}) == "nil");
    CHECK(h({"HLEN", "h"}) == "2");
    CHECK(h({"HEXISTS", "h", "a"}) == "0");
    CHECK(h({"HGETALL", "h"}) == "[b, 2, c, 3]");
    CHECK(h({"HTTL", "h", "FIELDS", "1", "a"}) == "[-2]");
    CHECK(h({"HPERSIST", "h", "FIELDS", "1", "a"}) == "[-2]");
    h.clock.advance_ms(100);
    CHECK(h({"HLEN", "h"}) == "0");
    CHECK(h({"EXISTS", "h"}) == "0");
    CHECK(h({"HGETALL", "h"}) == "[]");
  }

  TEST_CASE("every read skips expired fields in the hashtable encoding too") {
    Harness h;
    h.fill("h", 600);
    h({"HPEXPIRE", "h", "10", "FIELDS", "3", "f1", "f2", "f3"});
    CHECK(h({"OBJECT", "ENCODING", "h"}) == "hashtable");
    h.clock.advance_ms(10);
    CHECK(h({"HMGET", "h", "f1", "f4"}) == "[nil, v4]");
    CHECK(h({"HLEN", "h"}) == "597");
    CHECK(h({"HSTRLEN", "h", "f2"}) == "0");
    RespValue keys = h.raw({"HKEYS", "h"});
    CHECK(keys.elements.size() == 597);
    RespValue scan = h.raw({"HSCAN", "h", "0", "COUNT", "100000", "MATCH", "f3"});
    CHECK(scan.elements[1].elements.empty());
  }

  TEST_CASE("cron expires fields actively and deletes a hash left empty") {
    Harness h;
    h({"HSET", "small", "a", "1", "b", "2"});
    h.fill("big", 600);
    h({"HPEXPIRE", "small", "50", "FIELDS", "1", "a"});
    h({"HPEXPIRE", "big", "50", "FIELDS", "2", "f0", "f1"});
    h({"HSET", "gone", "x", "1"});
    h({"HPEXPIRE", "gone", "50", "FIELDS", "1", "x"});
    h.clock.advance_ms(49);
    h.engine.cron();
    CHECK(h.stored_fields("small") == 2);
    h.clock.advance_ms(1);
    h.engine.cron();
    CHECK(h.stored_fields("small") == 1);
    CHECK(h.stored_fields("big") == 598);
    CHECK(h.engine.db(0).size() == 2);  // "gone" went without being read
    CHECK(h.engine.db(0).field_expiry_registrations() == 0);
  }

  TEST_CASE("a renamed, moved or copied hash keeps expiring its fields") {
    Harness h;
    h({"HSET", "h", "a", "1", "b", "2"});
    h({"HPEXPIRE", "h", "10", "FIELDS", "1", "a"});
    h({"RENAME", "h", "r"});
    h({"COPY", "r", "c"});
    h({"MOVE", "c", "1"});
    h.clock.advance_ms(10);
    h.engine.cron();
    CHECK(h.stored_fields("r") == 1);
    size_t in_db1 = 0;
    h.engine.db(1).for_each(
        [&](ks::Entry* e) { in_db1 = ks::HashRef(static_cast<const ks::Entry*>(e))->size(); });
    CHECK(in_db1 == 1);
  }

  TEST_CASE("HEXPIRE with a past or zero time deletes fields and reports 2") {
    Harness h;
    h({"HSET", "h", "a", "1", "b", "2"});
    CHECK(h({"HEXPIRE", "h", "0", "FIELDS", "1", "a"}) == "[2]");
    CHECK(h({"HEXISTS", "h", "a"}) == "0");
    CHECK(h({"HPEXPIREAT", "h", "1", "FIELDS", "2", "b", "zz"}) == "[2, -2]");
    CHECK(h({"EXISTS", "h"}) == "0");
  }

  TEST_CASE("HEXPIRE conditions NX XX GT LT") {
    Harness h;
    h({"HSET", "h", "a", "1", "b", "2"});
    CHECK(h({"HEXPIRE", "h", "100", "XX", "FIELDS", "1", "a"}) == "[0]");
    CHECK(h({"HEXPIRE", "h", "100", "GT", "FIELDS", "1", "a"}) == "[0]");
    CHECK(h({"HEXPIRE", "h", "100", "NX", "FIELDS", "2", "a", "b"}) == "[1, 1]");
    CHECK(h({"HEXPIRE", "h", "200", "NX", "FIELDS", "1", "a"}) == "[0]");
    CHECK(h({"HEXPIRE", "h", "50", "gt", "FIELDS", "1", "a"}) == "[0]");
    CHECK(h({"HEXPIRE", "h", "200", "GT", "FIELDS", "1", "a"}) == "[1]");
    CHECK(h({"HEXPIRE", "h", "300", "lt", "FIELDS", "1", "b"}) == "[0]");
    CHECK(h({"HEXPIRE", "h", "30", "LT", "FIELDS", "1", "b"}) == "[1]");
    CHECK(h({"HEXPIRE", "h", "40", "xx", "FIELDS", "1", "b"}) == "[1]");
    CHECK(h({"HTTL", "h", "FIELDS", "2", "a", "b"}) == "[200, 40]");
    h({"HSET", "h", "c", "3"});
    CHECK(h({"HEXPIRE", "h", "10", "LT", "FIELDS", "1", "c"}) == "[1]");
  }

  TEST_CASE("HEXPIRE argument errors, worded as Redis 7.4") {
    Harness h;
    h({"HSET", "h", "a", "1"});
    CHECK(h({"HEXPIRE", "h", "x", "FIELDS", "1", "a"}) ==
          err("ERR value is not an integer or out of range"));
    CHECK(h({"HEXPIRE", "h", "-1", "FIELDS", "1", "a"}) ==
          err("ERR invalid expire time, must be >= 0"));
    CHECK(h({"HEXPIRE", "h", "70368744178", "FIELDS", "1", "a"}) ==
          err("ERR invalid expire time in 'hexpire' command"));
    CHECK(h({"HPEXPIREAT", "h", "70368744177664", "FIELDS", "1", "a"}) ==
          err("ERR invalid expire time in 'hpexpireat' command"));
    CHECK(h({"HPEXPIREAT", "h", "70368744177663", "FIELDS", "1", "a"}) == "[1]");
    CHECK(h({"HEXPIRE", "h", "10", "FIELDS", "0", "a"}) ==
          err("ERR Parameter `numFields` should be greater than 0"));
    CHECK(h({"HEXPIRE", "h", "10", "FIELDS", "x", "a"}) ==
          err("ERR Parameter `numFields` should be greater than 0"));
    CHECK(h({"HEXPIRE", "h", "10", "FIELDS", "2", "a"}) ==
          err("ERR The `numfields` parameter must match the number of arguments"));
    CHECK(h({"HEXPIRE", "h", "10", "FIELDS", "1", "a", "b"}) ==
          err("ERR The `numfields` parameter must match the number of arguments"));
    CHECK(h({"HEXPIRE", "h", "10", "FOO", "FIELDS", "1", "a"}) ==
          err("ERR Mandatory argument FIELDS is missing or not at the right position"));
    CHECK(h({"HEXPIRE", "h", "10", "NX", "XX", "FIELDS", "1", "a"}) ==
          err("ERR Mandatory argument FIELDS is missing or not at the right position"));
    CHECK(h({"HEXPIRE", "h", "10", "1", "a"}) ==
          err("ERR wrong number of arguments for 'hexpire' command"));
    CHECK(h({"HTTL", "h", "FIELDS", "0", "a"}) ==
          err("ERR Number of fields must be a positive integer"));
    CHECK(h({"HTTL", "h", "FILEDS", "1", "a"}) ==
          err("ERR Mandatory argument FIELDS is missing or not at the right position"));
    CHECK(h({"HPERSIST", "h", "FIELDS", "2", "a"}) ==
          err("ERR The `numfields` parameter must match the number of arguments"));
    CHECK(h({"HPERSIST", "h", "FIELDS", "-1", "a"}) ==
          err("ERR Number of fields must be a positive integer"));
  }

  TEST_CASE("HPERSIST removes field TTLs") {
    Harness h;
    h({"HSET", "h", "a", "1", "b", "2"});
    CHECK(h({"HPERSIST", "h", "FIELDS", "2", "a", "zz"}) == "[-1, -2]");
    CHECK(h({"OBJECT", "ENCODING", "h"}) == "listpack");
    h({"HEXPIRE", "h", "10", "FIELDS", "1", "a"});
    CHECK(h({"HPERSIST", "h", "FIELDS", "3", "a", "b", "a"}) == "[1, -1, -1]");
    CHECK(h({"HTTL", "h", "FIELDS", "1", "a"}) == "[-1]");
    CHECK(h({"HPERSIST", "missing", "FIELDS", "1", "a"}) == "[-2]");
    h.clock.advance_ms(20000);
    CHECK(h({"HGET", "h", "a"}) == "1");
  }

  TEST_CASE("HSET drops a field's TTL, HINCRBY and HINCRBYFLOAT keep it") {
    Harness h;
    h({"HSET", "h", "a", "1", "b", "2", "c", "3"});
    h({"HEXPIRE", "h", "100", "FIELDS", "3", "a", "b", "c"});
    h({"HINCRBY", "h", "a", "1"});
    h({"HINCRBYFLOAT", "h", "b", "1.5"});
    h({"HSET", "h", "c", "9"});
    CHECK(h({"HTTL", "h", "FIELDS", "3", "a", "b", "c"}) == "[100, 100, -1]");
    CHECK(h({"HMGET", "h", "a", "b", "c"}) == "[2, 3.5, 9]");
    CHECK(h({"HSETNX", "h", "a", "x"}) == "0");
    h.clock.advance_ms(100000);
    CHECK(h({"HGETALL", "h"}) == "[c, 9]");
  }

  TEST_CASE("a field whose time has come can be set again as a new field") {
    Harness h;
    h({"HSET", "h", "a", "1"});
    h({"HPEXPIRE", "h", "5", "FIELDS", "1", "a"});
    h.clock.advance_ms(5);
    CHECK(h({"HSETNX", "h", "a", "2"}) == "1");
    CHECK(h({"HINCRBY", "h", "a", "1"}) == "3");
    CHECK(h({"HTTL", "h", "FIELDS", "1", "a"}) == "[-1]");
  }

  TEST_CASE("DEBUG DIGEST-VALUE covers hashes whatever their encoding") {
    EngineConfig cfg = Harness::with_debug();
    cfg.hash_max_listpack_entries = 1;
    Harness h;
    Harness small_limit(cfg);
    h({"HSET", "h", "a", "1", "b", "2"});
    small_limit({"HSET", "h", "b", "2", "a", "1"});
    CHECK(small_limit({"OBJECT", "ENCODING", "h"}) == "hashtable");
    std::string d = h({"DEBUG", "DIGEST-VALUE", "h"});
    CHECK(d == small_limit({"DEBUG", "DIGEST-VALUE", "h"}));
    CHECK(d != "[0000000000000000000000000000000000000000]");
    // Matches redis-server 7.0 for the same hash (same algorithm as Valkey 8).
    CHECK(d == "[6c8f22b3bf510fdcfd6122dd0f908a80e88243bf]");
    CHECK(h({"DEBUG", "DIGEST"}) != "0000000000000000000000000000000000000000");
  }

  TEST_CASE("HSET creating a key keeps its listpack without growth headroom") {
    Harness h;
    h.fill("h", 10);
    ks::Entry* e = h.engine.db(0).lookup("h", false);
    REQUIRE(e != nullptr);
    ks::HashRef hv(static_cast<const ks::Entry*>(e));
    // A clone copies the listpack into an exactly sized buffer.
    ks::HeapObject* copy = hv->clone();
    CHECK(hv->bytes() == copy->bytes());
    delete copy;
  }
}
