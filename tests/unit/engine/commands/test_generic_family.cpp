#include "tests/unit/engine/commands/command_test_util.hpp"

#include "engine/engine.hpp"
#include "engine/keyspace/object.hpp"
#include "engine/util/clock.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <initializer_list>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace {

using keyshift::engine::Engine;
using keyshift::engine::EngineConfig;
using keyshift::engine::EvictionPolicy;
using keyshift::engine::ManualClock;
using keyshift::engine::RespValue;
using keyshift::engine::Session;
namespace ks = keyshift::engine;

using keyshift::engine::command_test::bulk;
using keyshift::engine::command_test::err;
using keyshift::engine::command_test::Harness;
using keyshift::engine::command_test::num;

/// Runs `argv` on `session` and decodes the reply.
RespValue run_on(Engine& e, Session& s, std::initializer_list<std::string_view> argv) {
  std::vector<std::string_view> v(argv);
  return e.run(s, v);
}

/// The cursor and keys of a SCAN reply.
struct ScanPage {
  std::string cursor;
  std::vector<std::string> keys;
};

ScanPage scan_page(const RespValue& v) {
  ScanPage page;
  REQUIRE(v.type == RespValue::Type::array);
  REQUIRE(v.elements.size() == 2);
  REQUIRE(v.elements[0].type == RespValue::Type::bulk);
  page.cursor = v.elements[0].str;
  for (const RespValue& k : v.elements[1].elements) {
    REQUIRE(k.type == RespValue::Type::bulk);
    page.keys.push_back(k.str);
  }
  return page;
}

/// Every key a full SCAN iteration with `options` returns (a multiset, as a vector).
std::vector<std::string> scan_all(Harness& h, std::vector<std::string> options = {}) {
  std::vector<std::string> keys;
  std::string cursor = "0";
  int guard = 0;
  do {
    std::vector<std::string> argv{"SCAN", cursor};
    argv.insert(argv.end(), options.begin(), options.end());
    std::vector<std::string_view> views(argv.begin(), argv.end());
    ScanPage page = scan_page(h.engine.run(h.session, views));
    keys.insert(keys.end(), page.keys.begin(), page.keys.end());
    cursor = page.cursor;
    REQUIRE(++guard < 100000);
  } while (cursor != "0");
  return keys;
}

std::set<std::string> as_set(const std::vector<std::string>& v) {
  return std::set<std::string>(v.begin(), v.end());
}

/// A stand-in for a collection type that later work adds: a heap value with its own clone.
class FakeCollection final : public ks::HeapObject {
 public:
  explicit FakeCollection(std::vector<std::string> items) : m_items(std::move(items)) {}
  size_t bytes() const override { return sizeof(*this); }
  HeapObject* clone() const override { return new FakeCollection(m_items); }
  std::vector<std::string>& items() { return m_items; }

 private:
  std::vector<std::string> m_items;
};

/// Stores a FakeCollection of `type` under `key` in database 0.
FakeCollection* put_fake(Engine& e, std::string_view key, ks::ObjType type,
                         ks::ObjEncoding encoding, std::vector<std::string> items) {
  auto* obj = new FakeCollection(std::move(items));
  ks::Entry::ValueSpec spec;
  spec.kind = ks::Entry::Kind::object;
  spec.object = obj;
  spec.type = type;
  spec.encoding = encoding;
  e.db(0).set(key, spec);
  return obj;
}

/// Stores a small value of `type` kept inline in its entry (as a listpack would be).
void put_inline(Engine& e, std::string_view key, ks::ObjType type, std::string_view bytes) {
  ks::Entry::ValueSpec spec;
  spec.kind = ks::Entry::Kind::inline_bytes;
  spec.bytes = bytes;
  spec.type = type;
  spec.encoding = ks::ObjEncoding::listpack;
  e.db(0).set(key, spec);
}

}  // namespace

TEST_SUITE("engine::generic_family") {
  TEST_CASE("DEL and UNLINK remove live keys and count only those") {
    Harness h;
    h({"SET", "a", "1"});
    h({"SET", "b", "2"});
    h({"SET", "c", "3"});
    h({"PEXPIRE", "c", "100"});
    h.clock.advance_ms(200);
    CHECK(h({"DEL", "a", "missing", "a", "c"}) == num(1));
    CHECK(h({"EXISTS", "a", "c"}) == num(0));
    CHECK(h({"UNLINK", "b", "b"}) == num(1));
    CHECK(h({"UNLINK", "b"}) == num(0));
    CHECK(h({"DEL"}) == err("ERR wrong number of arguments for 'del' command"));
    CHECK(h({"UNLINK"}) == err("ERR wrong number of arguments for 'unlink' command"));
  }

  TEST_CASE("EXISTS counts a repeated key every time and never sees expired keys") {
    Harness h;
    h({"SET", "k", "v"});
    h({"SET", "gone", "v", "PX", "10"});
    uint64_t hits = h.engine.keyspace().keyspace_hits;
    uint64_t misses = h.engine.keyspace().keyspace_misses;
    CHECK(h({"EXISTS", "k", "k", "k", "nope"}) == num(3));
    CHECK(h.engine.keyspace().keyspace_hits == hits + 3);
    CHECK(h.engine.keyspace().keyspace_misses == misses + 1);
    CHECK(h({"EXISTS", "gone"}) == num(1));
    h.clock.advance_ms(10);
    CHECK(h({"EXISTS", "gone"}) == num(0));
  }

  TEST_CASE("TYPE replies with a status naming the type, or none") {
    Harness h;
    h({"SET", "s", "hello"});
    RespValue r = h.raw({"TYPE", "s"});
    CHECK(r.type == RespValue::Type::simple);
    CHECK(r.str == "string");
    CHECK(h({"TYPE", "missing"}) == "none");
    h({"PEXPIRE", "s", "5"});
    h.clock.advance_ms(5);
    CHECK(h({"TYPE", "s"}) == "none");
  }

  TEST_CASE("RENAME moves the value and its TTL and overwrites the target") {
    Harness h;
    h({"SET", "src", "value"});
    h({"EXPIRE", "src", "100"});
    h({"SET", "dst", "old"});
    h({"EXPIRE", "dst", "5000"});
    CHECK(h({"RENAME", "src", "dst"}) == "OK");
    CHECK(h({"GET", "dst"}) == bulk("value"));
    CHECK(h({"TTL", "dst"}) == num(100));
    CHECK(h({"EXISTS", "src"}) == num(0));
    // A target without TTL ends up persistent when the source has none.
    h({"SET", "plain", "p"});
    CHECK(h({"RENAME", "plain", "dst"}) == "OK");
    CHECK(h({"TTL", "dst"}) == num(-1));
  }

  TEST_CASE("RENAME keeps long heap strings and integers intact") {
    Harness h;
    std::string big(1000, 'x');
    h({"SET", "big", big});
    h({"SET", "n", "12345"});
    CHECK(h({"RENAME", "big", "big2"}) == "OK");
    CHECK(h({"RENAME", "n", "n2"}) == "OK");
    CHECK(h({"GET", "big2"}) == bulk(big));
    CHECK(h({"OBJECT", "ENCODING", "big2"}) == bulk("raw"));
    CHECK(h({"GET", "n2"}) == bulk("12345"));
    CHECK(h({"OBJECT", "ENCODING", "n2"}) == bulk("int"));
  }

  TEST_CASE("RENAME and RENAMENX on a missing or expired source fail with no such key") {
    Harness h;
    CHECK(h({"RENAME", "nope", "x"}) == err("ERR no such key"));
    CHECK(h({"RENAMENX", "nope", "x"}) == err("ERR no such key"));
    CHECK(h({"RENAME", "nope", "nope"}) == err("ERR no such key"));
    CHECK(h({"RENAMENX", "nope", "nope"}) == err("ERR no such key"));
    h({"SET", "old", "v", "PX", "1"});
    h.clock.advance_ms(1);
    CHECK(h({"RENAME", "old", "x"}) == err("ERR no such key"));
  }

  TEST_CASE("RENAME to the same key replies OK and RENAMENX replies 0") {
    Harness h;
    h({"SET", "k", "v"});
    CHECK(h({"RENAME", "k", "k"}) == "OK");
    CHECK(h({"RENAMENX", "k", "k"}) == num(0));
    CHECK(h({"GET", "k"}) == bulk("v"));
  }

  TEST_CASE("RENAMENX renames only when the target does not exist") {
    Harness h;
    h({"SET", "a", "1"});
    h({"SET", "b", "2"});
    CHECK(h({"RENAMENX", "a", "b"}) == num(0));
    CHECK(h({"GET", "a"}) == bulk("1"));
    CHECK(h({"RENAMENX", "a", "c"}) == num(1));
    CHECK(h({"GET", "c"}) == bulk("1"));
    CHECK(h({"EXISTS", "a"}) == num(0));
    // An expired target counts as missing.
    h({"SET", "d", "x", "PX", "1"});
    h.clock.advance_ms(2);
    CHECK(h({"RENAMENX", "c", "d"}) == num(1));
  }

  TEST_CASE("KEYS returns the live keys matching a glob") {
    Harness h;
    CHECK(h({"KEYS", "*"}) == "(empty array)");
    for (const char* k : {"user:1", "user:2", "user:10", "order:1", "u"}) {
      h({"SET", k, "v"});
    }
    h({"SET", "user:gone", "v", "PX", "1"});
    h.clock.advance_ms(1);
    RespValue all = h.raw({"KEYS", "*"});
    REQUIRE(all.type == RespValue::Type::array);
    std::set<std::string> got;
    for (const RespValue& v : all.elements) {
      got.insert(v.str);
    }
    CHECK(got == std::set<std::string>{"user:1", "user:2", "user:10", "order:1", "u"});
    RespValue users = h.raw({"KEYS", "user:?"});
    CHECK(users.elements.size() == 2);
    RespValue ranged = h.raw({"KEYS", "user:[1-2]*"});
    CHECK(ranged.elements.size() == 3);
    CHECK(h({"KEYS", "nomatch*"}) == "(empty array)");
    CHECK(h({"KEYS", "u"}) == "1) \"u\"");
  }

  TEST_CASE("SCAN walks every key once on a stable table") {
    Harness h;
    for (int i = 0; i < 500; ++i) {
      h({"SET", "key:" + std::to_string(i), "v"});
    }
    std::vector<std::string> keys = scan_all(h);
    CHECK(keys.size() == 500);
    CHECK(as_set(keys).size() == 500);
    std::vector<std::string> small = scan_all(h, {"COUNT", "1"});
    CHECK(as_set(small).size() == 500);
    std::vector<std::string> big = scan_all(h, {"COUNT", "100000"});
    CHECK(big.size() == 500);
  }

  TEST_CASE("SCAN returns every key present for the whole iteration while the table grows") {
    Harness h;
    std::set<std::string> original;
    for (int i = 0; i < 300; ++i) {
      std::string k = "orig:" + std::to_string(i);
      h({"SET", k, "v"});
      original.insert(k);
    }
    const size_t start_buckets = h.engine.db(0).buckets();
    bool scanned_mid_rehash = false;
    std::set<std::string> seen;
    std::string cursor = "0";
    int added = 0;
    int calls = 0;
    do {
      // Both tables are live while a resize is in progress, so the bucket total is not a
      // power of two.
      size_t b = h.engine.db(0).buckets();
      scanned_mid_rehash |= (b & (b - 1)) != 0;
      ScanPage page = scan_page(h.raw({"SCAN", cursor, "COUNT", "5"}));
      seen.insert(page.keys.begin(), page.keys.end());
      cursor = page.cursor;
      // Grow the table between calls: batches of inserts trigger resizes and leave
      // incremental rehashing in progress for the next call.
      for (int j = 0; j < 50 && added < 5000; ++j) {
        h({"SET", "new:" + std::to_string(added++), "v"});
      }
      if (calls % 7 == 0) {
        h.engine.cron();  // some rehash steps too
      }
      REQUIRE(++calls < 100000);
    } while (cursor != "0");
    CHECK(h.engine.db(0).buckets() >= start_buckets * 4);
    CHECK(scanned_mid_rehash);
    for (const std::string& k : original) {
      CHECK_MESSAGE(seen.count(k) == 1, k);
    }
  }

  TEST_CASE("SCAN returns every surviving key while the table shrinks") {
    Harness h;
    for (int i = 0; i < 2000; ++i) {
      h({"SET", "k:" + std::to_string(i), "v"});
    }
    std::set<std::string> seen;
    std::string cursor = "0";
    int next_delete = 100;
    do {
      ScanPage page = scan_page(h.raw({"SCAN", cursor, "COUNT", "20"}));
      seen.insert(page.keys.begin(), page.keys.end());
      cursor = page.cursor;
      for (int j = 0; j < 100 && next_delete < 2000; ++j) {
        h({"DEL", "k:" + std::to_string(next_delete++)});
      }
    } while (cursor != "0");
    for (int i = 0; i < 100; ++i) {
      CHECK(seen.count("k:" + std::to_string(i)) == 1);
    }
  }

  TEST_CASE("SCAN filters by MATCH and TYPE and drops expired keys") {
    Harness h;
    for (int i = 0; i < 50; ++i) {
      h({"SET", "a:" + std::to_string(i), "v"});
      h({"SET", "b:" + std::to_string(i), "v"});
    }
    for (int i = 0; i < 10; ++i) {
      h({"PEXPIRE", "a:" + std::to_string(i), "5"});
    }
    h.clock.advance_ms(5);
    CHECK(as_set(scan_all(h, {"MATCH", "a:*"})).size() == 40);
    CHECK(as_set(scan_all(h, {"MATCH", "*"})).size() == 90);
    CHECK(as_set(scan_all(h, {"TYPE", "string"})).size() == 90);
    CHECK(as_set(scan_all(h, {"TYPE", "STRING", "MATCH", "b:1*"})).size() == 11);
    CHECK(scan_all(h, {"TYPE", "hash"}).empty());
    CHECK(scan_all(h, {"TYPE", "list", "COUNT", "3"}).empty());
    // The expired keys were reclaimed by the walk.
    CHECK(h.engine.db(0).size() == 90);
  }

  TEST_CASE("SCAN rejects bad cursors and options with Valkey's errors") {
    Harness h;
    h({"SET", "k", "v"});
    CHECK(h({"SCAN", "abc"}) == err("ERR invalid cursor"));
    CHECK(h({"SCAN", "-1"}) == err("ERR invalid cursor"));
    CHECK(h({"SCAN", ""}) == err("ERR invalid cursor"));
    CHECK(h({"SCAN", "1 "}) == err("ERR invalid cursor"));
    CHECK(h({"SCAN", "18446744073709551616"}) == err("ERR invalid cursor"));
    CHECK(h({"SCAN", "0", "COUNT", "0"}) == err("ERR syntax error"));
    CHECK(h({"SCAN", "0", "COUNT", "-5"}) == err("ERR syntax error"));
    CHECK(h({"SCAN", "0", "COUNT", "x"}) == err("ERR value is not an integer or out of range"));
    CHECK(h({"SCAN", "0", "COUNT"}) == err("ERR syntax error"));
    CHECK(h({"SCAN", "0", "MATCH"}) == err("ERR syntax error"));
    CHECK(h({"SCAN", "0", "TYPE", "blob"}) == err("ERR unknown type name 'blob'"));
    CHECK(h({"SCAN", "0", "BOGUS"}) == err("ERR syntax error"));
    CHECK(h({"SCAN", "0", "NOVALUES"}) == err("ERR NOVALUES option can only be used in HSCAN"));
    CHECK(h({"SCAN", "0", "NOSCORES"}) == err("ERR NOSCORES option can only be used in ZSCAN"));
    CHECK(h({"SCAN"}) == err("ERR wrong number of arguments for 'scan' command"));
  }

  TEST_CASE("SCAN accepts the cursor spellings strtoull accepts") {
    Harness h;
    h({"SET", "k", "v"});
    for (const char* c : {"0", " 0", "+0", "00", "-0", "\t0"}) {
      ScanPage page = scan_page(h.raw({"SCAN", c}));
      CHECK(page.cursor == "0");
      CHECK(page.keys == std::vector<std::string>{"k"});
    }
    ScanPage huge = scan_page(h.raw({"SCAN", "18446744073709551615"}));
    CHECK(huge.cursor == "0");
  }

  TEST_CASE("SCAN on an empty database ends at once") {
    Harness h;
    RespValue r = h.raw({"SCAN", "0"});
    ScanPage page = scan_page(r);
    CHECK(page.cursor == "0");
    CHECK(page.keys.empty());
  }

  TEST_CASE("RANDOMKEY returns a live key, reclaims expired ones and is nil when empty") {
    Harness h;
    CHECK(h({"RANDOMKEY"}) == "(nil)");
    for (int i = 0; i < 20; ++i) {
      h({"SET", "tmp:" + std::to_string(i), "v", "PX", "10"});
    }
    h({"SET", "live", "v"});
    h.clock.advance_ms(10);
    for (int i = 0; i < 10; ++i) {
      CHECK(h({"RANDOMKEY"}) == bulk("live"));
    }
    h({"DEL", "live"});
    CHECK(h({"RANDOMKEY"}) == "(nil)");
    CHECK(h.engine.db(0).size() == 0);
  }

  TEST_CASE("TOUCH counts existing keys and resets their idle time") {
    Harness h;
    h({"SET", "a", "1"});
    h({"SET", "b", "2"});
    h.clock.advance_ms(10'000);
    CHECK(h({"OBJECT", "IDLETIME", "a"}) == num(10));
    CHECK(h({"TOUCH", "a", "a", "missing"}) == num(2));
    CHECK(h({"OBJECT", "IDLETIME", "a"}) == num(0));
    CHECK(h({"OBJECT", "IDLETIME", "b"}) == num(10));
  }

  TEST_CASE("EXPIRE family sets relative and absolute times in both units") {
    Harness h;
    int64_t now_ms = h.clock.now_ms();
    h({"SET", "k", "v"});
    CHECK(h({"EXPIRE", "k", "100"}) == num(1));
    CHECK(h({"PTTL", "k"}) == num(100'000));
    CHECK(h({"PEXPIRE", "k", "1500"}) == num(1));
    CHECK(h({"PTTL", "k"}) == num(1500));
    std::string at_s = std::to_string(now_ms / 1000 + 50);
    CHECK(h({"EXPIREAT", "k", at_s}) == num(1));
    CHECK(h({"EXPIRETIME", "k"}) == num(now_ms / 1000 + 50));
    std::string at_ms = std::to_string(now_ms + 777);
    CHECK(h({"PEXPIREAT", "k", at_ms}) == num(1));
    CHECK(h({"PEXPIRETIME", "k"}) == num(now_ms + 777));
    CHECK(h({"PTTL", "k"}) == num(777));
    h.clock.advance_ms(776);
    CHECK(h({"GET", "k"}) == bulk("v"));
    h.clock.advance_ms(1);
    CHECK(h({"GET", "k"}) == "(nil)");
    CHECK(h({"EXPIRE", "k", "10"}) == num(0));
  }

  TEST_CASE("EXPIRE with a time in the past deletes the key and replies 1") {
    Harness h;
    for (const char* k : {"a", "b", "c", "d", "e"}) {
      h({"SET", k, "v"});
    }
    CHECK(h({"EXPIRE", "a", "-10"}) == num(1));
    CHECK(h({"EXPIRE", "b", "0"}) == num(1));
    CHECK(h({"PEXPIRE", "c", "-1"}) == num(1));
    CHECK(h({"EXPIREAT", "d", "1"}) == num(1));
    CHECK(h({"PEXPIREAT", "e", std::to_string(h.clock.now_ms())}) == num(1));
    CHECK(h({"EXISTS", "a", "b", "c", "d", "e"}) == num(0));
    CHECK(h({"EXPIRE", "missing", "-1"}) == num(0));
  }

  TEST_CASE("EXPIRE NX and XX look at whether the key has a TTL") {
    Harness h;
    h({"SET", "k", "v"});
    CHECK(h({"EXPIRE", "k", "100", "XX"}) == num(0));
    CHECK(h({"TTL", "k"}) == num(-1));
    CHECK(h({"EXPIRE", "k", "100", "NX"}) == num(1));
    CHECK(h({"EXPIRE", "k", "200", "NX"}) == num(0));
    CHECK(h({"TTL", "k"}) == num(100));
    CHECK(h({"EXPIRE", "k", "200", "xx"}) == num(1));
    CHECK(h({"TTL", "k"}) == num(200));
  }

  TEST_CASE("EXPIRE GT and LT treat a missing TTL as infinite") {
    Harness h;
    h({"SET", "k", "v"});
    CHECK(h({"EXPIRE", "k", "100", "GT"}) == num(0));
    CHECK(h({"TTL", "k"}) == num(-1));
    CHECK(h({"EXPIRE", "k", "100", "LT"}) == num(1));
    CHECK(h({"EXPIRE", "k", "200", "LT"}) == num(0));
    CHECK(h({"EXPIRE", "k", "100", "LT"}) == num(0));
    CHECK(h({"EXPIRE", "k", "50", "LT"}) == num(1));
    CHECK(h({"EXPIRE", "k", "50", "GT"}) == num(0));
    CHECK(h({"EXPIRE", "k", "300", "GT", "XX"}) == num(1));
    CHECK(h({"TTL", "k"}) == num(300));
    // A past time still has to pass the condition before it deletes.
    CHECK(h({"EXPIRE", "k", "-1", "GT"}) == num(0));
    CHECK(h({"EXISTS", "k"}) == num(1));
    CHECK(h({"EXPIRE", "k", "-1", "LT"}) == num(1));
    CHECK(h({"EXISTS", "k"}) == num(0));
  }

  TEST_CASE("EXPIRE option conflicts and bad arguments use Valkey's errors") {
    Harness h;
    h({"SET", "k", "v"});
    std::string nx = err("ERR NX and XX, GT or LT options at the same time are not compatible");
    CHECK(h({"EXPIRE", "k", "10", "NX", "XX"}) == nx);
    CHECK(h({"EXPIRE", "k", "10", "GT", "NX"}) == nx);
    CHECK(h({"PEXPIRE", "k", "10", "NX", "LT"}) == nx);
    CHECK(h({"EXPIREAT", "k", "10", "GT", "LT"}) ==
          err("ERR GT and LT options at the same time are not compatible"));
    CHECK(h({"EXPIRE", "k", "10", "FOO"}) == err("ERR Unsupported option FOO"));
    // Options are checked before the time.
    CHECK(h({"EXPIRE", "k", "soon", "NX", "XX"}) == nx);
    CHECK(h({"EXPIRE", "k", "soon"}) == err("ERR value is not an integer or out of range"));
    CHECK(h({"EXPIRE", "k", "1.5"}) == err("ERR value is not an integer or out of range"));
    CHECK(h({"EXPIRE", "k"}) == err("ERR wrong number of arguments for 'expire' command"));
    CHECK(h({"TTL", "k"}) == num(-1));
  }

  TEST_CASE("EXPIRE times that overflow are invalid for the command that got them") {
    Harness h;
    h({"SET", "k", "v"});
    CHECK(h({"EXPIRE", "k", "9223372036854775807"}) ==
          err("ERR invalid expire time in 'expire' command"));
    CHECK(h({"EXPIRE", "k", "-9223372036854775808"}) ==
          err("ERR invalid expire time in 'expire' command"));
    CHECK(h({"PEXPIRE", "k", "9223372036854775807"}) ==
          err("ERR invalid expire time in 'pexpire' command"));
    CHECK(h({"EXPIREAT", "k", "9223372036854775807"}) ==
          err("ERR invalid expire time in 'expireat' command"));
    // The check comes before the key lookup.
    CHECK(h({"EXPIRE", "missing", "9223372036854775807"}) ==
          err("ERR invalid expire time in 'expire' command"));
    // The largest absolute time in ms is representable.
    CHECK(h({"PEXPIREAT", "k", "9223372036854775807"}) == num(1));
    CHECK(h({"PEXPIRETIME", "k"}) == num(INT64_MAX));
    // Rounding that to seconds does not overflow (redis-server 7.0 replies the same).
    CHECK(h({"EXPIRETIME", "k"}) == num(9223372036854776));
  }

  TEST_CASE("TTL and PTTL report -2 for missing keys, -1 without TTL and round seconds") {
    Harness h;
    CHECK(h({"TTL", "none"}) == num(-2));
    CHECK(h({"PTTL", "none"}) == num(-2));
    CHECK(h({"EXPIRETIME", "none"}) == num(-2));
    CHECK(h({"PEXPIRETIME", "none"}) == num(-2));
    h({"SET", "k", "v"});
    CHECK(h({"TTL", "k"}) == num(-1));
    CHECK(h({"PTTL", "k"}) == num(-1));
    CHECK(h({"EXPIRETIME", "k"}) == num(-1));
    CHECK(h({"PEXPIRETIME", "k"}) == num(-1));
    h({"PEXPIRE", "k", "1499"});
    CHECK(h({"TTL", "k"}) == num(1));
    h({"PEXPIRE", "k", "1500"});
    CHECK(h({"TTL", "k"}) == num(2));
    h({"PEXPIRE", "k", "10"});
    CHECK(h({"TTL", "k"}) == num(0));
    h.clock.advance_ms(10);
    CHECK(h({"TTL", "k"}) == num(-2));
  }

  TEST_CASE("EXPIRETIME rounds the absolute time to the nearest second") {
    Harness h;
    h({"SET", "k", "v"});
    h({"PEXPIREAT", "k", "4000000000499"});
    CHECK(h({"EXPIRETIME", "k"}) == num(4000000000));
    h({"PEXPIREAT", "k", "4000000000500"});
    CHECK(h({"EXPIRETIME", "k"}) == num(4000000001));
    CHECK(h({"PEXPIRETIME", "k"}) == num(4000000000500));
  }

  TEST_CASE("PERSIST removes a TTL and reports whether there was one") {
    Harness h;
    CHECK(h({"PERSIST", "missing"}) == num(0));
    h({"SET", "k", "v"});
    CHECK(h({"PERSIST", "k"}) == num(0));
    h({"EXPIRE", "k", "10"});
    CHECK(h({"PERSIST", "k"}) == num(1));
    CHECK(h({"TTL", "k"}) == num(-1));
    h.clock.advance_ms(20'000);
    CHECK(h({"GET", "k"}) == bulk("v"));
    CHECK(h.engine.db(0).expires_size() == 0);
  }

  TEST_CASE("OBJECT ENCODING reports int, embstr and raw strings and nil when missing") {
    Harness h;
    h({"SET", "i", "12345"});
    h({"SET", "e", "hello"});
    h({"SET", "r", std::string(45, 'x')});
    h({"SET", "big", std::string(1000, 'x')});
    h({"SET", "a", "x"});
    h({"APPEND", "a", "y"});
    CHECK(h({"OBJECT", "ENCODING", "i"}) == bulk("int"));
    CHECK(h({"OBJECT", "ENCODING", "e"}) == bulk("embstr"));
    CHECK(h({"OBJECT", "ENCODING", "r"}) == bulk("raw"));
    CHECK(h({"OBJECT", "ENCODING", "big"}) == bulk("raw"));
    CHECK(h({"OBJECT", "encoding", "a"}) == bulk("raw"));
    CHECK(h({"OBJECT", "ENCODING", "missing"}) == "(nil)");
  }

  TEST_CASE("OBJECT REFCOUNT reports shared small integers as Valkey does") {
    Harness h;
    h({"SET", "small", "9999"});
    h({"SET", "zero", "0"});
    h({"SET", "large", "10000"});
    h({"SET", "neg", "-1"});
    h({"SET", "s", "text"});
    CHECK(h({"OBJECT", "REFCOUNT", "small"}) == num(2147483647));
    CHECK(h({"OBJECT", "REFCOUNT", "zero"}) == num(2147483647));
    CHECK(h({"OBJECT", "REFCOUNT", "large"}) == num(1));
    CHECK(h({"OBJECT", "REFCOUNT", "neg"}) == num(1));
    CHECK(h({"OBJECT", "REFCOUNT", "s"}) == num(1));
    CHECK(h({"OBJECT", "REFCOUNT", "missing"}) == "(nil)");
  }

  TEST_CASE("OBJECT REFCOUNT is 1 for small integers under an LRU maxmemory policy") {
    EngineConfig cfg;
    cfg.maxmemory = 1ull << 30;
    cfg.maxmemory_policy = EvictionPolicy::allkeys_lru;
    Harness h(cfg);
    h({"SET", "small", "5"});
    CHECK(h({"OBJECT", "REFCOUNT", "small"}) == num(1));
  }

  TEST_CASE("OBJECT IDLETIME grows with time, is not reset by reads of OBJECT or TTL") {
    Harness h;
    h({"SET", "k", "v"});
    h.clock.advance_ms(3'000);
    CHECK(h({"OBJECT", "IDLETIME", "k"}) == num(3));
    h({"TTL", "k"});
    h({"TYPE", "k"});
    h({"EXISTS", "k"});
    CHECK(h({"OBJECT", "IDLETIME", "k"}) == num(3));
    h({"GET", "k"});
    CHECK(h({"OBJECT", "IDLETIME", "k"}) == num(0));
    CHECK(h({"OBJECT", "IDLETIME", "missing"}) == "(nil)");
  }

  TEST_CASE("OBJECT FREQ needs an LFU policy and IDLETIME refuses one") {
    std::string not_lfu =
        "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please "
        "note that when switching between policies at runtime LRU and LFU data will take some "
        "time to adjust.";
    std::string lfu =
        "ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when "
        "switching between policies at runtime LRU and LFU data will take some time to adjust.";
    {
      Harness h;
      h({"SET", "k", "v"});
      CHECK(h({"OBJECT", "FREQ", "k"}) == err(not_lfu));
      // A missing key is reported before the policy.
      CHECK(h({"OBJECT", "FREQ", "missing"}) == "(nil)");
    }
    {
      EngineConfig cfg;
      cfg.maxmemory_policy = EvictionPolicy::allkeys_lfu;
      Harness h(cfg);
      h({"SET", "k", "v"});
      CHECK(h({"OBJECT", "FREQ", "k"}) == num(5));
      CHECK(h({"OBJECT", "IDLETIME", "k"}) == err(lfu));
      // The counter decays by one per lfu-decay-time minute of inactivity.
      h.clock.advance_ms(3 * 60'000);
      CHECK(h({"OBJECT", "FREQ", "k"}) == num(2));
    }
    {
      EngineConfig cfg;
      cfg.maxmemory_policy = EvictionPolicy::volatile_lfu;
      Harness h(cfg);
      h({"SET", "k", "v"});
      CHECK(h({"OBJECT", "FREQ", "k"}) == num(5));
    }
  }

  TEST_CASE("OBJECT HELP lists the subcommands and unknown ones are rejected") {
    Harness h;
    RespValue help = h.raw({"OBJECT", "HELP"});
    REQUIRE(help.type == RespValue::Type::array);
    REQUIRE(help.elements.size() == 15);
    CHECK(help.elements[0].type == RespValue::Type::simple);
    CHECK(help.elements[0].str ==
          "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:");
    CHECK(help.elements[1].str == "ENCODING <key>");
    CHECK(help.elements[13].str == "HELP");
    CHECK(help.elements[14].str == "    Print this help.");
    CHECK(h({"OBJECT", "FOO", "k"}) == err("ERR unknown subcommand 'FOO'. Try OBJECT HELP."));
    CHECK(h({"OBJECT"}) == err("ERR wrong number of arguments for 'object' command"));
    CHECK(h({"OBJECT", "ENCODING"}) ==
          err("ERR wrong number of arguments for 'object|encoding' command"));
    CHECK(h({"OBJECT", "HELP", "x"}) ==
          err("ERR wrong number of arguments for 'object|help' command"));
  }

  TEST_CASE("MOVE moves a key with its TTL to another database") {
    Harness h;
    h({"SET", "k", "v"});
    h({"EXPIRE", "k", "100"});
    CHECK(h({"MOVE", "k", "1"}) == num(1));
    CHECK(h({"EXISTS", "k"}) == num(0));
    CHECK(h({"MOVE", "k", "1"}) == num(0));
    h({"SELECT", "1"});
    CHECK(h({"GET", "k"}) == bulk("v"));
    CHECK(h({"TTL", "k"}) == num(100));
    h({"SELECT", "0"});
    // The target already holding the key stops the move.
    h({"SET", "k", "other"});
    CHECK(h({"MOVE", "k", "1"}) == num(0));
    CHECK(h({"GET", "k"}) == bulk("other"));
    CHECK(h.engine.db(0).expires_size() == 0);
    CHECK(h.engine.db(1).expires_size() == 1);
  }

  TEST_CASE("MOVE validates the database index") {
    Harness h;
    h({"SET", "k", "v"});
    CHECK(h({"MOVE", "k", "0"}) == err("ERR source and destination objects are the same"));
    CHECK(h({"MOVE", "k", "16"}) == err("ERR DB index is out of range"));
    CHECK(h({"MOVE", "k", "-1"}) == err("ERR DB index is out of range"));
    CHECK(h({"MOVE", "k", "x"}) == err("ERR value is not an integer or out of range"));
    CHECK(h({"MOVE", "k", "4294967296"}) ==
          err("ERR value is out of range, value must between -2147483648 and 2147483647"));
    CHECK(h({"MOVE", "missing", "0"}) == err("ERR source and destination objects are the same"));
    CHECK(h({"MOVE", "missing", "3"}) == num(0));
  }

  TEST_CASE("COPY duplicates the value and TTL, leaving the source alone") {
    Harness h;
    h({"SET", "src", "hello"});
    h({"PEXPIRE", "src", "5000"});
    CHECK(h({"COPY", "src", "dst"}) == num(1));
    CHECK(h({"GET", "dst"}) == bulk("hello"));
    CHECK(h({"PTTL", "dst"}) == num(5000));
    CHECK(h({"GET", "src"}) == bulk("hello"));
    CHECK(h({"COPY", "src", "dst"}) == num(0));
    h({"SET", "src", "changed"});
    CHECK(h({"COPY", "src", "dst", "REPLACE"}) == num(1));
    CHECK(h({"GET", "dst"}) == bulk("changed"));
    CHECK(h({"TTL", "dst"}) == num(-1));
    CHECK(h({"COPY", "missing", "dst"}) == num(0));
    CHECK(h({"COPY", "missing", "dst", "REPLACE"}) == num(0));
  }

  TEST_CASE("COPY makes an independent copy of a heap string") {
    Harness h;
    std::string big(600, 'a');
    h({"SET", "big", big});
    h({"SET", "n", "42"});
    uint64_t before = h.engine.used_memory();
    CHECK(h({"COPY", "big", "big2"}) == num(1));
    CHECK(h.engine.used_memory() > before + 600);
    CHECK(h({"APPEND", "big", "b"}) == num(601));
    CHECK(h({"GET", "big2"}) == bulk(big));
    CHECK(h({"OBJECT", "ENCODING", "big2"}) == bulk("raw"));
    CHECK(h({"COPY", "n", "n2"}) == num(1));
    CHECK(h({"OBJECT", "ENCODING", "n2"}) == bulk("int"));
    CHECK(h({"INCR", "n2"}) == num(43));
    CHECK(h({"GET", "n"}) == bulk("42"));
    CHECK(h({"DEL", "big", "big2", "n", "n2"}) == num(4));
  }

  TEST_CASE("COPY to another database with DB and REPLACE") {
    Harness h;
    h({"SET", "k", "v"});
    CHECK(h({"COPY", "k", "k", "DB", "2"}) == num(1));
    h({"SELECT", "2"});
    CHECK(h({"GET", "k"}) == bulk("v"));
    h({"SET", "k", "old"});
    h({"SELECT", "0"});
    CHECK(h({"COPY", "k", "k", "db", "2"}) == num(0));
    CHECK(h({"COPY", "k", "k", "replace", "DB", "2"}) == num(1));
    h({"SELECT", "2"});
    CHECK(h({"GET", "k"}) == bulk("v"));
  }

  TEST_CASE("COPY rejects bad options and copying a key onto itself") {
    Harness h;
    h({"SET", "k", "v"});
    std::string same = err("ERR source and destination objects are the same");
    CHECK(h({"COPY", "k", "k"}) == same);
    CHECK(h({"COPY", "k", "k", "DB", "0"}) == same);
    CHECK(h({"COPY", "missing", "missing"}) == same);
    CHECK(h({"COPY", "k", "d", "DB"}) == err("ERR syntax error"));
    CHECK(h({"COPY", "k", "d", "FORCE"}) == err("ERR syntax error"));
    CHECK(h({"COPY", "k", "d", "DB", "16"}) == err("ERR DB index is out of range"));
    CHECK(h({"COPY", "k", "d", "DB", "x"}) == err("ERR value is not an integer or out of range"));
    CHECK(h({"COPY", "k", "d", "DB", "99999999999"}) ==
          err("ERR value is out of range, value must between -2147483648 and 2147483647"));
    CHECK(h({"COPY", "k"}) == err("ERR wrong number of arguments for 'copy' command"));
  }

  TEST_CASE("SWAPDB exchanges two databases for every session") {
    Harness h;
    h({"SET", "a", "in0"});
    h({"EXPIRE", "a", "100"});
    h({"SELECT", "1"});
    h({"SET", "b", "in1"});
    h({"SELECT", "0"});
    CHECK(h({"SWAPDB", "0", "1"}) == "OK");
    CHECK(h({"GET", "a"}) == "(nil)");
    CHECK(h({"GET", "b"}) == bulk("in1"));
    h({"SELECT", "1"});
    CHECK(h({"GET", "a"}) == bulk("in0"));
    CHECK(h({"TTL", "a"}) == num(100));
    CHECK(h({"SWAPDB", "1", "1"}) == "OK");
    CHECK(h({"GET", "a"}) == bulk("in0"));
  }

  TEST_CASE("SWAPDB validates both indexes") {
    Harness h;
    CHECK(h({"SWAPDB", "x", "1"}) == err("ERR invalid first DB index"));
    CHECK(h({"SWAPDB", "0", "y"}) == err("ERR invalid second DB index"));
    CHECK(h({"SWAPDB", "x", "y"}) == err("ERR invalid first DB index"));
    CHECK(h({"SWAPDB", "99999999999", "0"}) == err("ERR invalid first DB index"));
    CHECK(h({"SWAPDB", "0", "16"}) == err("ERR DB index is out of range"));
    CHECK(h({"SWAPDB", "-1", "0"}) == err("ERR DB index is out of range"));
    CHECK(h({"SWAPDB", "0"}) == err("ERR wrong number of arguments for 'swapdb' command"));
  }

  TEST_CASE("TYPE, SCAN TYPE, OBJECT ENCODING, RENAME and MOVE work for any value type") {
    Harness h;
    put_fake(h.engine, "list", ks::ObjType::list, ks::ObjEncoding::quicklist, {"a", "b"});
    put_inline(h.engine, "hash", ks::ObjType::hash, "packed");
    h({"SET", "str", "v"});
    CHECK(h({"TYPE", "list"}) == "list");
    CHECK(h({"TYPE", "hash"}) == "hash");
    CHECK(h({"OBJECT", "ENCODING", "list"}) == bulk("quicklist"));
    CHECK(h({"OBJECT", "ENCODING", "hash"}) == bulk("listpack"));
    CHECK(h({"OBJECT", "REFCOUNT", "list"}) == num(1));
    CHECK(scan_all(h, {"TYPE", "list"}) == std::vector<std::string>{"list"});
    CHECK(scan_all(h, {"TYPE", "Hash"}) == std::vector<std::string>{"hash"});
    CHECK(scan_all(h, {"TYPE", "string"}) == std::vector<std::string>{"str"});
    CHECK(scan_all(h, {"TYPE", "zset"}).empty());
    CHECK(h({"RENAME", "list", "list2"}) == "OK");
    CHECK(h({"TYPE", "list2"}) == "list");
    CHECK(h({"MOVE", "hash", "1"}) == num(1));
    h({"SELECT", "1"});
    CHECK(h({"TYPE", "hash"}) == "hash");
    CHECK(h({"OBJECT", "ENCODING", "hash"}) == bulk("listpack"));
    h({"SELECT", "0"});
    CHECK(h({"LCS", "str", "list2"}) == err("ERR The specified keys must contain string values"));
    CHECK(h({"LCS", "list2", "missing", "LEN"}) ==
          err("ERR The specified keys must contain string values"));
  }

  TEST_CASE("COPY deep-copies other value types through their clone") {
    Harness h;
    FakeCollection* original =
        put_fake(h.engine, "src", ks::ObjType::set, ks::ObjEncoding::hashtable, {"x", "y"});
    put_inline(h.engine, "small", ks::ObjType::zset, "inline");
    h({"PEXPIRE", "src", "900"});
    uint64_t before = h.engine.used_memory();
    CHECK(h({"COPY", "src", "dst"}) == num(1));
    CHECK(h.engine.used_memory() > before);
    CHECK(h({"TYPE", "dst"}) == "set");
    CHECK(h({"OBJECT", "ENCODING", "dst"}) == bulk("hashtable"));
    CHECK(h({"PTTL", "dst"}) == num(900));
    ks::Entry* copy = h.engine.db(0).lookup("dst");
    REQUIRE(copy != nullptr);
    REQUIRE(copy->kind() == ks::Entry::Kind::object);
    auto* cloned = static_cast<FakeCollection*>(copy->object());
    CHECK(cloned != original);
    original->items().push_back("z");
    CHECK(cloned->items() == std::vector<std::string>{"x", "y"});
    CHECK(h({"COPY", "small", "small2", "DB", "3"}) == num(1));
    h({"SELECT", "3"});
    CHECK(h({"TYPE", "small2"}) == "zset");
    h({"SELECT", "0"});
    CHECK(h({"DEL", "src", "dst", "small"}) == num(3));
  }

  TEST_CASE("a NO-TOUCH session leaves access times alone except for TOUCH") {
    Harness h;
    Session& s = h.engine.open_session(nullptr);
    s.set(ks::k_session_no_touch);
    h({"SET", "k", "v"});
    h({"SET", "k2", "v"});
    h.clock.advance_ms(4'000);
    run_on(h.engine, s, {"EXPIRE", "k", "100"});
    run_on(h.engine, s, {"COPY", "k", "k3"});
    CHECK(h({"OBJECT", "IDLETIME", "k"}) == num(4));
    run_on(h.engine, s, {"TOUCH", "k"});
    CHECK(h({"OBJECT", "IDLETIME", "k"}) == num(0));
    h({"EXPIRE", "k2", "100"});
    CHECK(h({"OBJECT", "IDLETIME", "k2"}) == num(0));
  }

  TEST_CASE("LCS returns the longest common subsequence, its length or its ranges") {
    Harness h;
    h({"MSET", "key1", "ohmytext", "key2", "mynewtext"});
    CHECK(h({"LCS", "key1", "key2"}) == bulk("mytext"));
    CHECK(h({"LCS", "key1", "key2", "LEN"}) == num(6));
    RespValue idx = h.raw({"LCS", "key1", "key2", "IDX"});
    CHECK(idx.to_display() ==
          "1) \"matches\"\n"
          "2) 1) 1) 1) (integer) 4\n"
          "         2) (integer) 7\n"
          "      2) 1) (integer) 5\n"
          "         2) (integer) 8\n"
          "   2) 1) 1) (integer) 2\n"
          "         2) (integer) 3\n"
          "      2) 1) (integer) 0\n"
          "         2) (integer) 1\n"
          "3) \"len\"\n"
          "4) (integer) 6");
    RespValue min = h.raw({"LCS", "key1", "key2", "IDX", "MINMATCHLEN", "4", "WITHMATCHLEN"});
    CHECK(min.to_display() ==
          "1) \"matches\"\n"
          "2) 1) 1) 1) (integer) 4\n"
          "         2) (integer) 7\n"
          "      2) 1) (integer) 5\n"
          "         2) (integer) 8\n"
          "      3) (integer) 4\n"
          "3) \"len\"\n"
          "4) (integer) 6");
    RespValue none = h.raw({"LCS", "key1", "key2", "IDX", "MINMATCHLEN", "10"});
    REQUIRE(none.elements.size() == 4);
    CHECK(none.elements[1].elements.empty());
  }

  TEST_CASE("LCS treats missing keys as empty strings and works on integers") {
    Harness h;
    CHECK(h({"LCS", "a", "b"}) == bulk(""));
    CHECK(h({"LCS", "a", "b", "LEN"}) == num(0));
    h({"SET", "n1", "12345"});
    h({"SET", "n2", "2x4"});
    CHECK(h({"LCS", "n1", "n2"}) == bulk("24"));
    CHECK(h({"LCS", "n1", "n1"}) == bulk("12345"));
    RespValue idx = h.raw({"LCS", "n1", "missing", "IDX"});
    CHECK(idx.to_display() == "1) \"matches\"\n2) (empty array)\n3) \"len\"\n4) (integer) 0");
  }

  TEST_CASE("LCS IDX replies with a map under RESP3") {
    Harness h;
    h({"MSET", "key1", "ohmytext", "key2", "mynewtext"});
    Session& s = h.engine.open_session(nullptr);
    s.resp = 3;
    RespValue r = run_on(h.engine, s, {"LCS", "key1", "key2", "IDX", "WITHMATCHLEN"});
    REQUIRE(r.type == RespValue::Type::map);
    REQUIRE(r.elements.size() == 4);
    CHECK(r.elements[0].str == "matches");
    REQUIRE(r.elements[1].elements.size() == 2);
    CHECK(r.elements[1].elements[0].elements[2].integer == 4);
    CHECK(r.elements[1].elements[1].elements[2].integer == 2);
    CHECK(r.elements[2].str == "len");
    CHECK(r.elements[3].integer == 6);
  }

  TEST_CASE("LCS rejects wrong types and conflicting options") {
    Harness h;
    h({"SET", "a", "abc"});
    CHECK(h({"LCS", "a", "a", "LEN", "IDX"}) ==
          err("ERR If you want both the length and indexes, please just use IDX."));
    CHECK(h({"LCS", "a", "a", "BOGUS"}) == err("ERR syntax error"));
    CHECK(h({"LCS", "a", "a", "MINMATCHLEN"}) == err("ERR syntax error"));
    CHECK(h({"LCS", "a", "a", "MINMATCHLEN", "x"}) ==
          err("ERR value is not an integer or out of range"));
    CHECK(h({"LCS", "a", "a", "MINMATCHLEN", "-3", "LEN"}) == num(3));
    CHECK(h({"LCS", "a"}) == err("ERR wrong number of arguments for 'lcs' command"));
  }

  TEST_CASE("LCS refuses inputs whose table would exceed proto-max-bulk-len") {
    EngineConfig cfg;
    cfg.proto_max_bulk_len = 1024;
    Harness h(cfg);
    h({"SET", "a", std::string(100, 'a')});
    CHECK(h({"LCS", "a", "a"}) ==
          err("ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len"));
  }
}
