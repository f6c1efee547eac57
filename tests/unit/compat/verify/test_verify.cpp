#include "compat/dump/jsonl_reader.hpp"
#include "compat/verify/fingerprint.hpp"
#include "compat/verify/side.hpp"
#include "compat/verify/value_reader.hpp"
#include "compat/verify/verify.hpp"
#include "engine/engine.hpp"
#include "engine/server/config.hpp"
#include "engine/util/clock.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

namespace ks = keyshift::engine;
using keyshift::compat::DiffReason;
using keyshift::compat::EngineSide;
using keyshift::compat::Fingerprint;
using keyshift::compat::FingerprintBuilder;
using keyshift::compat::KeyDifference;
using keyshift::compat::ValueKind;
using keyshift::compat::ValueReader;
using keyshift::compat::VerifyOptions;
using keyshift::compat::VerifyReport;

namespace {

ks::EngineConfig debug_config() {
  ks::EngineConfig config;
  config.enable_debug_command = ks::EnableMode::yes;
  return config;
}

/// Two engines on one manual clock, each behind an EngineSide.
struct Pair {
  ks::ManualClock clock;
  ks::Engine a{debug_config(), clock};
  ks::Engine b{debug_config(), clock};
  EngineSide source{a, "a"};
  EngineSide target{b, "b"};

  void both(std::initializer_list<std::string_view> argv) {
    a.run(argv);
    b.run(argv);
  }

  /// Round 1 in-process (both engines are here) instead of by commands.
  bool in_process = false;

  VerifyReport verify(VerifyOptions options = {}) {
    options.in_process = in_process;
    if (!options.pause) {
      options.pause = [](int, int64_t) {};
    }
    options.clock = [] { return 0.0; };
    auto report = keyshift::compat::verify_data(source, target, options);
    REQUIRE(report);
    return *report;
  }
};

/// Reads `key` of `engine` in chunks of `chunk` and returns the fingerprint.
Fingerprint read_all(ks::Engine& engine, const std::string& key, ValueKind kind, size_t chunk,
                     uint64_t* commands = nullptr) {
  EngineSide side(engine, "e");
  ValueReader reader(key, kind, chunk);
  while (!reader.done()) {
    auto replies = side.run({reader.next_command()});
    REQUIRE(replies);
    reader.feed((*replies)[0]);
  }
  REQUIRE_FALSE(reader.failed());
  if (commands != nullptr) {
    *commands = reader.commands();
  }
  return reader.fingerprint();
}

const keyshift::compat::KeyDifference* find(const std::vector<keyshift::compat::KeyDifference>& l,
                                            const std::string& key) {
  auto it = std::find_if(l.begin(), l.end(), [&](const auto& d) { return d.key == key; });
  return it == l.end() ? nullptr : &*it;
}

}  // namespace

TEST_SUITE("verify fingerprint") {
  TEST_CASE("set and hash fingerprints ignore order but lists keep it") {
    FingerprintBuilder s1(ValueKind::set);
    FingerprintBuilder s2(ValueKind::set);
    s1.add_member("a");
    s1.add_member("b");
    s2.add_member("b");
    s2.add_member("a");
    CHECK(s1.finish() == s2.finish());

    FingerprintBuilder l1(ValueKind::list);
    FingerprintBuilder l2(ValueKind::list);
    l1.add_ordered("a");
    l1.add_ordered("b");
    l2.add_ordered("b");
    l2.add_ordered("a");
    CHECK(l1.finish() != l2.finish());

    FingerprintBuilder h1(ValueKind::hash);
    FingerprintBuilder h2(ValueKind::hash);
    h1.add_pair("f1", "v1");
    h1.add_pair("f2", "v2");
    h2.add_pair("f1", "v2");
    h2.add_pair("f2", "v1");
    CHECK(h1.finish() != h2.finish());
  }

  TEST_CASE("the kind and element boundaries are part of the fingerprint") {
    FingerprintBuilder list(ValueKind::list);
    FingerprintBuilder set(ValueKind::set);
    list.add_ordered("a");
    set.add_ordered("a");
    CHECK(list.finish() != set.finish());
    FingerprintBuilder ab(ValueKind::list);
    FingerprintBuilder a_b(ValueKind::list);
    ab.add_ordered("ab");
    a_b.add_ordered("a");
    a_b.add_ordered("b");
    CHECK(ab.finish() != a_b.finish());
  }

  TEST_CASE("a member added twice does not cancel out") {
    FingerprintBuilder once(ValueKind::set);
    FingerprintBuilder twice(ValueKind::set);
    FingerprintBuilder none(ValueKind::set);
    once.add_member("x");
    twice.add_member("x");
    twice.add_member("x");
    CHECK(once.finish() != twice.finish());
    CHECK(twice.finish() != none.finish());
  }

  TEST_CASE("scores in Redis 7.0's %.17g text and in the shortest form agree") {
    FingerprintBuilder old_text(ValueKind::zset);
    FingerprintBuilder new_text(ValueKind::zset);
    CHECK(old_text.add_scored("m", "2.3700000000000001"));
    CHECK(new_text.add_scored("m", "2.37"));
    CHECK(old_text.finish() == new_text.finish());
    FingerprintBuilder other(ValueKind::zset);
    CHECK(other.add_scored("m", "2.38"));
    CHECK(other.finish() != new_text.finish());
    CHECK_FALSE(other.add_scored("m", "not a number"));
  }

  TEST_CASE("hex has 32 digits") {
    Fingerprint f{0x1, 0xabc};
    CHECK(f.hex() == "0000000000000abc0000000000000001");
  }
}

TEST_SUITE("verify value reader") {
  TEST_CASE("a big hash read in many chunks fingerprints as read in one") {
    ks::ManualClock clock;
    ks::Engine engine{ks::EngineConfig{}, clock};
    for (int i = 0; i < 3000; ++i) {
      std::string f = "field" + std::to_string(i);
      engine.run({"HSET", "h", f, "v" + std::to_string(i % 7)});
    }
    uint64_t small_chunks = 0;
    uint64_t one_chunk = 0;
    Fingerprint chunked = read_all(engine, "h", ValueKind::hash, 100, &small_chunks);
    Fingerprint whole = read_all(engine, "h", ValueKind::hash, 100000, &one_chunk);
    CHECK(small_chunks > 10);
    CHECK(one_chunk <= 2);
    CHECK(chunked == whole);
    engine.run({"HSET", "h", "field1234", "changed"});
    CHECK(read_all(engine, "h", ValueKind::hash, 100) != chunked);
  }

  TEST_CASE("lists, sorted sets, sets, streams and strings read in chunks") {
    ks::ManualClock clock;
    ks::Engine engine{ks::EngineConfig{}, clock};
    for (int i = 0; i < 250; ++i) {
      std::string n = std::to_string(i);
      engine.run({"RPUSH", "l", n});
      engine.run({"ZADD", "z", n + ".5", "m" + n});
      engine.run({"SADD", "s", "m" + n});
      engine.run({"XADD", "x", n + "-1", "f", n});
    }
    engine.run({"SET", "str", std::string(5000, 'x')});
    for (auto [key, kind] : {std::pair{"l", ValueKind::list},
                             {"z", ValueKind::zset},
                             {"s", ValueKind::set},
                             {"x", ValueKind::stream},
                             {"str", ValueKind::string}}) {
      CAPTURE(key);
      uint64_t commands = 0;
      Fingerprint chunked = read_all(engine, key, kind, 1, &commands);
      CHECK(commands > 2);
      // Strings are cut at fixed offsets, so the chunk size is part of their fingerprint;
      // the others must not depend on it.
      if (kind != ValueKind::string) {
        CHECK(chunked == read_all(engine, key, kind, 1000));
      }
    }
  }

  TEST_CASE("a hash read with field TTLs keeps only the fields that have one") {
    ks::ManualClock clock;
    ks::Engine engine{ks::EngineConfig{}, clock};
    for (int i = 0; i < 1000; ++i) {  // past the listpack size: HSCAN pages
      engine.run({"HSET", "h", "f" + std::to_string(i), "v"});
    }
    engine.run({"HPEXPIREAT", "h", "4000000000000", "FIELDS", "2", "f3", "f777"});
    EngineSide side(engine, "e");
    ValueReader reader("h", ValueKind::hash, 10, true);
    int expiry_reads = 0;
    while (!reader.done()) {
      std::vector<std::string> cmd = reader.next_command();
      expiry_reads += cmd[0] == "HPEXPIRETIME" ? 1 : 0;
      auto replies = side.run({cmd});
      REQUIRE(replies);
      reader.feed((*replies)[0]);
    }
    REQUIRE_FALSE(reader.failed());
    CHECK(expiry_reads > 5);
    auto expiries = reader.field_expiries();
    REQUIRE(expiries.size() == 2);
    CHECK(expiries[0].second == 4000000000000);
    CHECK(expiries[1].second == 4000000000000);
    CHECK(reader.fingerprint() == read_all(engine, "h", ValueKind::hash, 10));
  }

  TEST_CASE("a key that changed type meanwhile fails the reader") {
    ks::ManualClock clock;
    ks::Engine engine{ks::EngineConfig{}, clock};
    engine.run({"SET", "k", "v"});
    EngineSide side(engine, "e");
    ValueReader reader("k", ValueKind::hash, 10);
    auto replies = side.run({reader.next_command()});
    REQUIRE(replies);
    reader.feed((*replies)[0]);
    CHECK(reader.done());
    CHECK(reader.failed());
    CHECK(reader.failure().find("WRONGTYPE") != std::string::npos);
  }
}

TEST_SUITE("verify data") {
  TEST_CASE("equal datasets are equal, with and without server digests") {
    Pair p;
    p.both({"SET", "s", "v"});
    p.both({"HSET", "h", "f", "1", "g", "2"});
    p.both({"ZADD", "z", "1.5", "a"});
    p.both({"RPUSH", "l", "a", "b"});
    p.both({"SADD", "set", "x"});
    p.both({"XADD", "x", "1-1", "f", "v"});
    p.both({"SELECT", "3"});
    p.both({"SET", "in3", "v"});
    // Mode 3 compares the two engines in-process, with no command per key.
    p.in_process = true;
    VerifyReport in_process = p.verify();
    p.in_process = false;
    CHECK(in_process.equal());
    CHECK(in_process.in_process);
    CHECK(in_process.keys_compared == 7);
    CHECK(in_process.values_in_process == 7);
    CHECK(in_process.values_read == 0);
    REQUIRE(in_process.dbs.size() == 2);
    CHECK(in_process.dbs[1].keys == 1);
    for (int mode = 0; mode < 3; ++mode) {
      CAPTURE(mode);
      VerifyOptions options;
      options.dump = mode == 0;
      options.server_digest = mode == 1;
      VerifyReport r = p.verify(options);
      CHECK(r.equal());
      CHECK_FALSE(r.in_process);
      CHECK(r.server_digest == (mode == 1));
      CHECK(r.keys_compared == 7);
      // DUMP compares the five aggregates; the two strings are read, as without either.
      // Without --dump or digests the small sorted set still goes by its DUMP payload.
      CHECK(r.values_by_dump == (mode == 0 ? 5 : mode == 1 ? 0 : 1));
      // Engines have field TTLs, which server digests leave out: the hash is read.
      CHECK(r.field_ttls);
      CHECK(r.values_by_digest == (mode == 1 ? 6 : 0));
      CHECK(r.values_read == (mode == 0 ? 2 : mode == 1 ? 1 : 6));
      CHECK_FALSE(r.dbs[0].reverse_scanned);
      REQUIRE(r.dbs.size() == 2);
      CHECK(r.dbs[1].db == 3);
      CHECK(r.dbs[1].keys == 1);
      CHECK(r.dbs[0].types["string"] == 1);
      CHECK(r.dbs[0].types["hash"] == 1);
    }
  }

  TEST_CASE("a sorted set goes by its DUMP payload up to one chunk and is read beyond it") {
    Pair p;
    p.both({"ZADD", "small", "1", "a", "2", "b"});
    p.both({"ZADD", "big", "1", "a", "2", "b", "3", "c", "4", "d"});
    p.a.run({"ZADD", "small-differs", "1", "a", "2", "b"});
    p.b.run({"ZADD", "small-differs", "1", "a", "2.5", "b"});
    p.a.run({"ZADD", "big-differs", "1", "a", "2", "b", "3", "c", "4", "d"});
    p.b.run({"ZADD", "big-differs", "1", "a", "2", "b", "3", "c", "4", "e"});
    VerifyOptions options;
    options.chunk = 3;
    options.rounds = 1;
    VerifyReport r = p.verify(options);
    // "small" by payload; the differing payload of "small-differs" is read to decide, and
    // the two sets over three members are read in chunks.
    CHECK(r.values_by_dump == 1);
    CHECK(r.values_read == 3);
    REQUIRE(r.differences.size() == 2);
    std::set<std::string> keys;
    for (const KeyDifference& d : r.differences) {
      keys.insert(d.key);
      CHECK(d.reasons == std::vector<DiffReason>{DiffReason::value});
    }
    CHECK(keys == std::set<std::string>{"big-differs", "small-differs"});
  }

  TEST_CASE("many batches in flight while big values are read in chunks find every difference") {
    Pair p;
    for (int i = 0; i < 40; ++i) {
      std::string k = "k" + std::to_string(i);
      p.both({"SET", k, "v"});
    }
    for (int i = 0; i < 30; ++i) {
      p.both({"RPUSH", "long", std::to_string(i)});
      p.both({"SADD", "wide", std::to_string(i)});
    }
    p.a.run({"RPUSH", "long", "last"});
    p.b.run({"RPUSH", "long", "other"});
    p.a.run({"SET", "k7", "changed"});
    p.b.run({"SET", "only-target", "v"});
    VerifyOptions options;
    options.scan_count = 2;  // many SCAN pages: the window fills while "long" is read
    options.chunk = 2;
    options.rounds = 2;
    VerifyReport r = p.verify(options);
    CHECK(r.keys_compared == 43);
    CHECK(r.read_commands > 30);  // the list and set took many chunks each
    std::set<std::string> keys;
    for (const KeyDifference& d : r.differences) {
      keys.insert(d.key);
    }
    CHECK(keys == std::set<std::string>{"k7", "long", "only-target"});
    CHECK(r.changed.empty());
  }

  TEST_CASE("missing, extra, wrong type, wrong value and TTL differences get their reasons") {
    Pair p;
    p.a.run({"SET", "missing", "v"});
    p.b.run({"SET", "extra", "v"});
    p.a.run({"SET", "typed", "v"});
    p.b.run({"RPUSH", "typed", "v"});
    p.a.run({"SET", "ttl", "v", "PX", "100000"});
    p.b.run({"SET", "ttl", "v", "PX", "50000"});
    p.a.run({"SET", "close", "v", "PX", "100000"});
    p.b.run({"SET", "close", "v", "PX", "99500"});
    p.a.run({"SET", "persist", "v", "PX", "100000"});
    p.b.run({"SET", "persist", "v"});
    for (int i = 0; i < 2000; ++i) {
      p.both({"HSET", "big", "f" + std::to_string(i), "v"});
    }
    p.b.run({"HSET", "big", "f1999", "other"});
    for (int mode = 0; mode < 4; ++mode) {
      CAPTURE(mode);
      p.in_process = mode == 3;
      VerifyOptions options;
      options.dump = mode == 0;
      options.server_digest = mode == 1;
      options.chunk = 100;
      VerifyReport r = p.verify(options);
      CHECK_FALSE(r.equal());
      CHECK(r.differences.size() == 6);
      CHECK(r.rounds_run == 3);
      CHECK(find(r.differences, "missing")->reasons ==
            std::vector<DiffReason>{DiffReason::missing_on_target});
      CHECK(find(r.differences, "extra")->reasons ==
            std::vector<DiffReason>{DiffReason::missing_on_source});
      CHECK(find(r.differences, "typed")->reasons == std::vector<DiffReason>{DiffReason::type});
      CHECK(find(r.differences, "ttl")->reasons == std::vector<DiffReason>{DiffReason::ttl});
      CHECK(find(r.differences, "persist")->reasons == std::vector<DiffReason>{DiffReason::ttl});
      CHECK(find(r.differences, "close") == nullptr);
      CHECK(find(r.differences, "big")->reasons == std::vector<DiffReason>{DiffReason::value});
      CHECK(find(r.differences, "big")->source.type == "hash");
      CHECK(r.dbs[0].differences == 6);
      CHECK(r.dbs[0].reverse_scanned);
    }
  }

  TEST_CASE("hash field TTLs that differ beyond the tolerance are a field_ttl difference") {
    Pair p;
    for (int i = 0; i < 1000; ++i) {
      p.both({"HSET", "big", "f" + std::to_string(i), "v"});
    }
    p.both({"HSET", "small", "a", "1", "b", "2"});
    p.both({"HSET", "same", "a", "1"});
    p.both({"HPEXPIRE", "same", "100000", "FIELDS", "1", "a"});
    p.a.run({"HPEXPIRE", "small", "100000", "FIELDS", "1", "a"});
    p.b.run({"HPEXPIRE", "small", "99500", "FIELDS", "1", "a"});  // within 1000 ms
    p.a.run({"HPEXPIRE", "big", "100000", "FIELDS", "2", "f7", "f250"});
    p.b.run({"HPEXPIRE", "big", "100000", "FIELDS", "1", "f7"});
    p.both({"HSET", "valued", "a", "1"});
    p.b.run({"HSET", "valued", "a", "2"});
    p.a.run({"HPEXPIRE", "valued", "100000", "FIELDS", "1", "a"});
    for (int mode = 0; mode < 4; ++mode) {
      CAPTURE(mode);
      p.in_process = mode == 3;
      VerifyOptions options;
      options.dump = mode == 0;
      options.server_digest = mode == 1;
      options.chunk = 16;  // many HSCAN pages, each followed by HPEXPIRETIME
      VerifyReport r = p.verify(options);
      CHECK(r.field_ttls);
      REQUIRE(r.differences.size() == 2);
      const auto* big = find(r.differences, "big");
      REQUIRE(big != nullptr);
      CHECK(big->reasons == std::vector<DiffReason>{DiffReason::field_ttl});
      if (mode < 3) {  // the in-process comparison says no more than the reason
        CHECK(big->detail.find("1 field TTL(s) differ") != std::string::npos);
        CHECK(big->detail.find("source 2, target 1") != std::string::npos);
      }
      // A value that differs is reported as such; its field TTLs are not looked at.
      CHECK(find(r.differences, "valued")->reasons == std::vector<DiffReason>{DiffReason::value});
      std::string json = keyshift::compat::render_verify_json(r, 10);
      CHECK(json.find("\"reasons\":[\"field_ttl\"]") != std::string::npos);
      CHECK(json.find("\"field_ttls\":true") != std::string::npos);
    }
    p.in_process = false;
    // With a wider tolerance only the field that has no TTL on one side remains.
    p.b.run({"HPEXPIRE", "big", "100000", "FIELDS", "1", "f250"});
    p.b.run({"HPEXPIRE", "small", "50000", "FIELDS", "1", "a"});
    VerifyOptions loose;
    loose.ttl_tolerance_ms = 60000;
    VerifyReport r = p.verify(loose);
    CHECK(r.differences.size() == 1);
    CHECK(find(r.differences, "valued") != nullptr);
  }

  TEST_CASE("a key that changes between rounds is reported apart from real differences") {
    Pair p;
    p.a.run({"SET", "moving", "new"});
    p.b.run({"SET", "moving", "old"});
    p.a.run({"SET", "expiring", "v", "PX", "500"});
    p.a.run({"SET", "wrong", "a"});
    p.b.run({"SET", "wrong", "b"});
    VerifyOptions options;
    std::vector<int> rounds;
    options.pause = [&](int round, int64_t) {
      rounds.push_back(round);
      if (round == 2) {
        p.b.run({"SET", "moving", "new"});  // the replication caught up
        p.clock.advance_ms(1000);           // and the key with a TTL expired
      }
    };
    VerifyReport r = p.verify(options);
    CHECK(rounds == std::vector<int>{2, 3});
    REQUIRE(r.differences.size() == 1);
    CHECK(r.differences[0].key == "wrong");
    REQUIRE(r.changed.size() == 2);
    CHECK(find(r.changed, "moving")->reasons == std::vector<DiffReason>{DiffReason::value});
    CHECK(find(r.changed, "expiring")->reasons ==
          std::vector<DiffReason>{DiffReason::missing_on_target});
    CHECK(r.dbs[0].changed == 2);
  }

  TEST_CASE("no later round runs when the first finds nothing") {
    Pair p;
    p.both({"SET", "k", "v"});
    VerifyOptions options;
    bool paused = false;
    options.pause = [&](int, int64_t) { paused = true; };
    VerifyReport r = p.verify(options);
    CHECK(r.equal());
    CHECK(r.rounds_run == 1);
    CHECK_FALSE(paused);
  }

  TEST_CASE("a sample compares the same share of keys on both sides") {
    Pair p;
    for (int i = 0; i < 2000; ++i) {
      p.a.run({"SET", "k" + std::to_string(i), "v"});
      p.b.run({"SET", "k" + std::to_string(i), "v"});
    }
    VerifyOptions options;
    options.sample_percent = 10;
    VerifyReport r = p.verify(options);
    CHECK(r.equal());
    CHECK(r.keys_compared > 100);
    CHECK(r.keys_compared < 300);
  }

  TEST_CASE("the JSON report carries keys as escaped bytes and each side's type and TTL") {
    Pair p;
    p.a.run({"SET", std::string("bin\xff\x01", 5), "v"});
    VerifyReport r = p.verify();
    std::string json = keyshift::compat::render_verify_json(r, 10);
    CHECK(json.find("\"key\":{\"hex\": \"62696eff01\"}") != std::string::npos);
    CHECK(json.find("\"reason\":\"missing_on_target\"") != std::string::npos);
    CHECK(json.find("\"source\":{\"type\":\"string\",\"ttl_ms\":-1}") != std::string::npos);
    CHECK(json.find("\"target\":{\"type\":\"none\",\"ttl_ms\":-2}") != std::string::npos);
    std::string text = keyshift::compat::render_verify_text(r, 10);
    CHECK(text.find("missing on the target") != std::string::npos);
    CHECK(text.find("result: 1 key(s) differ") != std::string::npos);
  }
}

TEST_SUITE("jsonl reader") {
  TEST_CASE("every type of a dump line reads back") {
    ks::ManualClock clock;
    ks::Engine engine{ks::EngineConfig{}, clock};
    std::string text =
        "{\"db\":0,\"key\":{\"hex\": \"ff00\"},\"type\":\"string\",\"expire_ms\":null,"
        "\"value\":\"v\"}\n"
        "\n"
        "{\"db\":1,\"key\":\"z\",\"type\":\"zset\",\"expire_ms\":4102444800000,"
        "\"value\":[[\"a\",\"1.5\"],[\"b\",\"inf\"]]}\n"
        "{\"db\":0,\"key\":\"h\",\"type\":\"hash\",\"expire_ms\":null,"
        "\"value\":[[\"f\",\"1\"],[\"g\",\"2\"]]}\n"
        "{\"db\":0,\"key\":\"l\",\"type\":\"list\",\"expire_ms\":null,\"value\":[\"a\",\"b\"]}\n"
        "{\"db\":0,\"key\":\"x\",\"type\":\"stream\",\"expire_ms\":null,\"value\":{\"length\":1,"
        "\"last_id\":\"5-1\",\"first_id\":\"5-1\",\"max_deleted_id\":\"0-0\","
        "\"entries_added\":1,\"entries\":[[\"5-1\",[\"f\",\"v\"]]],\"groups\":[{\"name\":\"g\","
        "\"last_delivered_id\":\"5-1\",\"entries_read\":1,\"pending\":[],\"consumers\":[]}]}}\n";
    auto loaded = keyshift::compat::load_jsonl(engine, text);
    REQUIRE(loaded);
    CHECK(*loaded == 5);
    CHECK(engine.run({"GET", std::string("\xff\x00", 2)}).str == "v");
    CHECK(engine.run({"HGET", "h", "g"}).str == "2");
    CHECK(engine.run({"LINDEX", "l", "1"}).str == "b");
    CHECK(engine.run({"XLEN", "x"}).integer == 1);
    engine.run({"SELECT", "1"});
    CHECK(engine.run({"ZSCORE", "z", "b"}).str == "inf");
    CHECK(engine.run({"PEXPIRETIME", "z"}).integer == 4102444800000);
  }

  TEST_CASE("a bad line is named by its number") {
    ks::ManualClock clock;
    ks::Engine engine{ks::EngineConfig{}, clock};
    std::string text =
        "{\"db\":0,\"key\":\"a\",\"type\":\"string\",\"expire_ms\":null,\"value\":\"v\"}\n"
        "{\"db\":0,\"key\":\"b\",\"type\":\"set\",\"expire_ms\":null,\"value\":\"v\"}\n";
    auto loaded = keyshift::compat::load_jsonl(engine, text);
    REQUIRE_FALSE(loaded);
    CHECK(loaded.error() == "line 2: value is not an array");
    auto twice = keyshift::compat::load_jsonl(
        engine, "{\"db\":0,\"key\":\"a\",\"type\":\"string\",\"expire_ms\":null,\"value\":\"v\"}");
    REQUIRE_FALSE(twice);
    CHECK(twice.error() == "line 1: the key is given twice");
    auto broken = keyshift::compat::load_jsonl(engine, "{\"db\":0,");
    REQUIRE_FALSE(broken);
    CHECK(broken.error().rfind("line 1: byte ", 0) == 0);
  }

  TEST_CASE("keys already expired are skipped as a load skips them") {
    ks::ManualClock clock(2'000'000'000'000);
    ks::Engine engine{ks::EngineConfig{}, clock};
    auto loaded = keyshift::compat::load_jsonl(
        engine, "{\"db\":0,\"key\":\"a\",\"type\":\"string\",\"expire_ms\":1000,\"value\":\"v\"}");
    REQUIRE(loaded);
    CHECK(*loaded == 0);
    CHECK(engine.run({"EXISTS", "a"}).integer == 0);
  }
}
