#include "tests/unit/engine/commands/conn_test_util.hpp"

#include "engine/engine.hpp"
#include "engine/persistence/crc64.hpp"
#include "engine/persistence/rdb_writer.hpp"
#include "engine/persistence/snapshots.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <vector>

using namespace keyshift::engine::conn_test;
using keyshift::engine::EnableMode;
using keyshift::engine::EngineConfig;
using keyshift::engine::parse_save_rules;
using keyshift::engine::RespValue;
using keyshift::engine::Session;

namespace {

EngineConfig in_dir(const std::filesystem::path& dir) {
  EngineConfig c;
  c.dir = dir.string();
  c.enable_debug_command = EnableMode::yes;
  return c;
}

std::filesystem::path fresh_dir(std::string_view name) {
  auto d = std::filesystem::temp_directory_path() /
           (std::string("ks-persist-") + std::string(name) + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

RespValue run(Fixture& f, Session& s, const std::vector<std::string>& argv) {
  std::vector<std::string_view> v(argv.begin(), argv.end());
  return f.engine.run(s, v);
}

/// `payload` with its 2-byte RDB version replaced by `version` and its CRC64 made right
/// again: what a server of that version would have sent for the same value bytes.
std::string restamp(const std::string& payload, int version) {
  std::string out = payload.substr(0, payload.size() - 10);
  out.push_back(static_cast<char>(version & 0xFF));
  out.push_back(static_cast<char>((version >> 8) & 0xFF));
  uint64_t crc = keyshift::engine::crc64(0, out);
  for (int i = 0; i < 8; ++i) {
    out.push_back(static_cast<char>((crc >> (8 * i)) & 0xFF));
  }
  return out;
}

}  // namespace

TEST_SUITE("engine::persistence_family") {
  TEST_CASE("DUMP and RESTORE move every type between keys with equal digests") {
    Fixture f(in_dir(std::filesystem::temp_directory_path()));
    Session& c = f.client();
    f.run(c, {"SET", "s", "text"});
    f.run(c, {"RPUSH", "l", "a", "1", "b"});
    f.run(c, {"SADD", "set", "1", "2", "x"});
    f.run(c, {"ZADD", "z", "1.5", "a", "-inf", "b"});
    f.run(c, {"HSET", "h", "f", "v"});
    for (std::string key : {"s", "l", "set", "z", "h"}) {
      CAPTURE(key);
      RespValue payload = f.run(c, {"DUMP", key});
      REQUIRE(payload.type == RespValue::Type::bulk);
      std::string copy = key + ":copy";
      CHECK(is_ok(run(f, c, {"RESTORE", copy, "0", payload.str})));
      CHECK(f.run(c, {"DEBUG", "DIGEST-VALUE", key}).elements.at(0).str ==
            run(f, c, {"DEBUG", "DIGEST-VALUE", copy}).elements.at(0).str);
      CHECK(is_err(run(f, c, {"RESTORE", copy, "0", payload.str}),
                   "BUSYKEY Target key name already exists."));
      CHECK(is_ok(run(f, c, {"RESTORE", copy, "0", payload.str, "REPLACE"})));
    }
    CHECK(f.run(c, {"DUMP", "missing"}).type == RespValue::Type::null);
  }

  TEST_CASE("RESTORE checks its arguments and payload as Valkey does") {
    Fixture f;
    Session& c = f.client();
    f.run(c, {"SET", "k", "v"});
    std::string payload = f.run(c, {"DUMP", "k"}).str;
    CHECK(
        is_err(run(f, c, {"RESTORE", "n", "-1", payload}), "ERR Invalid TTL value, must be >= 0"));
    CHECK(is_err(run(f, c, {"RESTORE", "n", "x", payload}),
                 "ERR value is not an integer or out of range"));
    CHECK(is_err(run(f, c, {"RESTORE", "n", "0", payload, "BOGUS"}), "ERR syntax error"));
    CHECK(is_err(run(f, c, {"RESTORE", "n", "0", payload, "IDLETIME", "-1"}),
                 "ERR Invalid IDLETIME value, must be >= 0"));
    CHECK(is_err(run(f, c, {"RESTORE", "n", "0", payload, "FREQ", "256"}),
                 "ERR Invalid FREQ value, must be >= 0 and <= 255"));
    CHECK(is_err(run(f, c, {"RESTORE", "n", "0", payload, "IDLETIME", "1", "FREQ", "1"}),
                 "ERR syntax error"));
    std::string corrupt = payload;
    corrupt[1] = static_cast<char>(corrupt[1] ^ 1);
    CHECK(is_err(run(f, c, {"RESTORE", "n", "0", corrupt}),
                 "ERR DUMP payload version or checksum are wrong"));
    CHECK(is_err(run(f, c, {"RESTORE", "n", "0", "short"}),
                 "ERR DUMP payload version or checksum are wrong"));
    // TTLs: relative, absolute, and one already past (nothing is stored, reply OK).
    CHECK(is_ok(run(f, c, {"RESTORE", "t1", "5000", payload})));
    CHECK(f.run(c, {"PTTL", "t1"}).integer == 5000);
    int64_t at = f.clock.now_ms() + 9000;
    CHECK(is_ok(run(f, c, {"RESTORE", "t2", std::to_string(at), payload, "ABSTTL"})));
    CHECK(f.run(c, {"PEXPIRETIME", "t2"}).integer == at);
    CHECK(is_ok(run(f, c, {"RESTORE", "t3", "1000", payload, "ABSTTL"})));
    CHECK(f.run(c, {"EXISTS", "t3"}).integer == 0);
  }

  TEST_CASE("RESTORE takes payloads of every RDB version keyshift reads and refuses the rest") {
    Fixture f(in_dir(std::filesystem::temp_directory_path()));  // DEBUG DIGEST-VALUE
    Session& c = f.client();
    const int64_t when = f.clock.now_ms() + 86'400'000;
    f.run(c, {"RPUSH", "l", "a", "b"});
    f.run(c, {"HSET", "hf", "f", "1", "g", "2"});
    f.run(c, {"HPEXPIREAT", "hf", std::to_string(when), "FIELDS", "1", "g"});
    std::string digest = f.run(c, {"DEBUG", "DIGEST-VALUE", "l"}).elements.at(0).str;
    // Payloads keyshift's writer makes at each version it writes, and the list's bytes under
    // every version Valkey 8.0.1's verifyDumpPayload passes (0-11) and the ones keyshift
    // adds (12, Valkey 9.0's 80 and 9.2's 81).
    auto* list = f.engine.db(0).lookup("l");
    REQUIRE(list != nullptr);
    for (int version : {10, 11, 12, 80, 81}) {
      CAPTURE(version);
      keyshift::engine::RdbWriteOptions w;
      w.version = version;
      auto payload = keyshift::engine::dump_payload(*list, w);
      REQUIRE(payload.has_value());
      std::string copy = "l" + std::to_string(version);
      CHECK(is_ok(run(f, c, {"RESTORE", copy, "0", *payload})));
      CHECK(run(f, c, {"DEBUG", "DIGEST-VALUE", copy}).elements.at(0).str == digest);
    }
    std::string v11 = f.run(c, {"DUMP", "l"}).str;
    for (int version : {0, 1, 9, 11, 12, 80, 81}) {
      CAPTURE(version);
      std::string copy = "r" + std::to_string(version);
      CHECK(is_ok(run(f, c, {"RESTORE", copy, "0", restamp(v11, version)})));
    }
    // Versions keyshift does not read get Valkey's answer for a future version.
    for (int version : {13, 79, 82, 0x1000}) {
      CAPTURE(version);
      CHECK(is_err(run(f, c, {"RESTORE", "n", "0", restamp(v11, version)}),
                   "ERR DUMP payload version or checksum are wrong"));
    }
    // A hash with field TTLs: Valkey 9's HASH_2 (type 22) at 80/81 keeps its TTLs; the same
    // bytes under RDB 12 are Redis 7.4's pre-GA type 22, which they are not.
    keyshift::engine::RdbWriteOptions v80;
    v80.version = 80;
    auto hash2 = keyshift::engine::dump_payload(*f.engine.db(0).lookup("hf"), v80);
    REQUIRE(hash2.has_value());
    CHECK(static_cast<uint8_t>((*hash2)[0]) == 22);
    for (int version : {80, 81}) {
      CAPTURE(version);
      std::string copy = "hf" + std::to_string(version);
      CHECK(is_ok(run(f, c, {"RESTORE", copy, "0", restamp(*hash2, version)})));
      CHECK(run(f, c, {"HPEXPIRETIME", copy, "FIELDS", "1", "g"}).elements.at(0).integer == when);
    }
    CHECK(is_err(run(f, c, {"RESTORE", "n", "0", restamp(*hash2, 12)}), "ERR Bad data format"));
    // A Path Hash (type 23 at 81) is a valid payload keyshift has no type for; at 80 there is
    // no type 23 at all. Either way Valkey 8's answer for a type it cannot load.
    std::string path_hash = std::string(
                                "\x17\x01\x02/p\x01\x01"
                                "f\x01v",
                                10) +
                            "xxxxxxxxxx";
    CHECK(is_err(run(f, c, {"RESTORE", "n", "0", restamp(path_hash, 81)}), "ERR Bad data format"));
    CHECK(is_err(run(f, c, {"RESTORE", "n", "0", restamp(path_hash, 80)}), "ERR Bad data format"));
    CHECK(f.run(c, {"EXISTS", "n"}).integer == 0);
    // As Valkey's RESTORE (and redis-server 7.0's, checked by hand): the object is read from
    // the payload's first byte with the footer still there to read, and what follows it is
    // ignored. So bytes between the value and the footer pass, a 10-byte payload is parsed
    // from its version bytes, and fewer than 10 bytes is a bad payload.
    std::string junk = std::string(
                           "\x00\x03"
                           "abcJUNK",
                           9) +
                       "xxxxxxxxxx";
    CHECK(is_ok(run(f, c, {"RESTORE", "j", "0", restamp(junk, 10)})));
    CHECK(f.run(c, {"GET", "j"}).str == "abc");
    CHECK(is_ok(run(f, c, {"RESTORE", "e", "0", restamp(std::string(10, 'x'), 0)})));
    CHECK(f.run(c, {"STRLEN", "e"}).integer == 0);  // type 0 (string), length 0
    CHECK(is_err(run(f, c, {"RESTORE", "n", "0", restamp(std::string(10, 'x'), 10)}),
                 "ERR Bad data format"));
    CHECK(is_err(run(f, c, {"RESTORE", "n", "0", "123456789"}),
                 "ERR DUMP payload version or checksum are wrong"));
  }

  TEST_CASE("SAVE writes dir/dbfilename, LASTSAVE and INFO follow, BGSAVE reports in cron") {
    auto dir = fresh_dir("save");
    Fixture f(in_dir(dir));
    Session& c = f.client();
    f.run(c, {"SET", "a", "1"});
    f.run(c, {"RPUSH", "b", "x"});
    RespValue info = f.run(c, {"INFO", "persistence"});
    CHECK(info.str.find("rdb_changes_since_last_save:2\r\n") != std::string::npos);
    f.clock.advance_ms(3000);
    CHECK(is_ok(f.run(c, {"SAVE"})));
    CHECK(std::filesystem::exists(dir / "dump.rdb"));
    CHECK(f.run(c, {"LASTSAVE"}).integer == f.clock.now_ms() / 1000);
    info = f.run(c, {"INFO", "persistence"});
    CHECK(info.str.find("rdb_changes_since_last_save:0\r\n") != std::string::npos);
    CHECK(info.str.find("rdb_saves:1\r\n") != std::string::npos);
    CHECK(is_err(f.run(c, {"BGSAVE", "NOW"}), "ERR syntax error"));
    CHECK(f.run(c, {"BGSAVE"}).str == "Background saving started");
    f.engine.snapshots().wait_for_child(f.engine);
    info = f.run(c, {"INFO", "persistence"});
    CHECK(info.str.find("rdb_bgsave_in_progress:0\r\n") != std::string::npos);
    CHECK(info.str.find("rdb_last_bgsave_status:ok\r\n") != std::string::npos);
    CHECK(info.str.find("rdb_saves:2\r\n") != std::string::npos);
    std::filesystem::remove_all(dir);
  }

  TEST_CASE("changes since the last save count as Valkey's server.dirty does") {
    Fixture f;
    Session& c = f.client();
    auto changes = [&] { return f.engine.snapshots().dirty(); };
    struct Step {
      std::vector<std::string> argv;
      uint64_t counted;  // what Valkey 8 adds to server.dirty for it
    };
    const Step steps[] = {
        {{"LPUSH", "l", "a", "b", "c"}, 3},         // one per pushed element
        {{"LMOVE", "l", "m", "LEFT", "RIGHT"}, 1},  // once for both keys
        {{"LTRIM", "l", "0", "-1"}, 0},             // nothing trimmed
        {{"LTRIM", "l", "1", "-1"}, 1},             // one element trimmed
        {{"LREM", "l", "0", "a"}, 1},               // one per removed element
        {{"LPOP", "m", "5"}, 1},                    // one per popped element
        {{"SADD", "s", "1", "2", "3"}, 3},          // one per added member
        {{"SADD", "s", "3", "4"}, 1},               // existing members do not count
        {{"SREM", "s", "1", "2", "9"}, 2},          // one per removed member
        {{"SPOP", "s", "5"}, 2},                    // the members popped
        {{"HSET", "h", "f1", "v", "f2", "v"}, 2},   // one per field written
        {{"HSET", "h", "f1", "v"}, 1},              // even when it existed
        {{"HDEL", "h", "f1", "f2", "nope"}, 2},     // one per deleted field
        {{"ZADD", "z", "1", "a", "2", "b"}, 2},     // added + updated
        {{"ZADD", "z", "1", "a", "5", "b"}, 1},     // unchanged scores do not count
        {{"ZPOPMIN", "z", "2"}, 2},                 // one per popped member
        {{"SET", "k", "v"}, 1},
        {{"RENAME", "k", "k2"}, 1},  // once for both keys
        {{"MOVE", "k2", "1"}, 1},    // once for both databases
        // Streams (t_stream.c; the same counts redis-server 7.0 reports in
        // rdb_changes_since_last_save for this sequence).
        {{"XADD", "x", "1-1", "f", "v"}, 1},
        {{"XADD", "x", "2-1", "f", "v"}, 1},
        {{"XADD", "x", "MAXLEN", "1", "3-1", "f", "v"}, 1},  // trimmed entries do not count
        {{"XADD", "x", "4-1", "f", "v"}, 1},
        {{"XADD", "x", "5-1", "f", "v"}, 1},
        {{"XADD", "x", "6-1", "f", "v"}, 1},
        {{"XDEL", "x", "4-1", "5-1", "99-1"}, 2},  // one per deleted entry
        {{"XTRIM", "x", "MAXLEN", "0"}, 2},        // one per trimmed entry
        {{"XTRIM", "x", "MAXLEN", "0"}, 0},
        {{"XADD", "x", "7-1", "f", "v"}, 1},
        {{"XGROUP", "CREATE", "x", "g", "0"}, 1},
        {{"XGROUP", "CREATE", "x2", "g", "$", "MKSTREAM"}, 1},  // the stream itself is free
        {{"XGROUP", "CREATE", "x", "g", "0"}, 0},               // BUSYGROUP
        {{"XGROUP", "SETID", "x", "g", "0"}, 1},
        {{"XGROUP", "CREATECONSUMER", "x", "g", "c1"}, 1},
        {{"XGROUP", "CREATECONSUMER", "x", "g", "c1"}, 0},
        {{"XREADGROUP", "GROUP", "g", "c2", "STREAMS", "x", ">"}, 2},  // new consumer + read
        {{"XREADGROUP", "GROUP", "g", "c2", "STREAMS", "x", ">"}, 0},  // nothing to serve
        {{"XREADGROUP", "GROUP", "g", "c2", "STREAMS", "x", "0"}, 1},  // history is served
        {{"XADD", "x", "8-1", "f", "v"}, 1},
        {{"XREADGROUP", "GROUP", "g", "c2", "STREAMS", "x", ">"}, 1},
        {{"XCLAIM", "x", "g", "c3", "0", "7-1"}, 2},  // new consumer + one claimed
        {{"XCLAIM", "x", "g", "c3", "0", "99-1"}, 0},
        {{"XCLAIM", "x", "g", "c3", "0", "99-1", "LASTID", "50-0"}, 1},  // LASTID moved
        {{"XDEL", "x", "8-1"}, 1},
        {{"XAUTOCLAIM", "x", "g", "c3", "0", "0"}, 2},  // 7-1 claimed, deleted 8-1 cleared
        {{"XACK", "x", "g", "7-1", "99-1"}, 1},         // one per acknowledged entry
        {{"XGROUP", "DELCONSUMER", "x", "g", "c2"}, 1},
        {{"XGROUP", "DELCONSUMER", "x", "g", "c2"}, 0},
        {{"XGROUP", "DESTROY", "x", "g"}, 1},
        {{"XGROUP", "DESTROY", "x", "g"}, 0},
        {{"XSETID", "x", "100-0"}, 1},
        {{"XREAD", "STREAMS", "x", "0"}, 0},
    };
    for (const Step& step : steps) {
      uint64_t before = changes();
      run(f, c, step.argv);
      std::string what = step.argv[0] + " " + step.argv[1];
      CHECK_MESSAGE(changes() - before == step.counted, what);
    }
  }

  TEST_CASE("a save rule starts a background save once enough time and changes passed") {
    CHECK(parse_save_rules("3600 1 300 100") ==
          std::vector<std::pair<int64_t, int64_t>>{{3600, 1}, {300, 100}});
    CHECK(parse_save_rules("").empty());
    auto dir = fresh_dir("rules");
    EngineConfig cfg = in_dir(dir);
    cfg.save = "10 2";
    Fixture f(cfg);
    Session& c = f.client();
    f.run(c, {"SET", "a", "1"});
    f.clock.advance_ms(20'000);
    f.engine.cron();
    CHECK_FALSE(f.engine.snapshots().bgsave_in_progress());  // one change, two needed
    f.run(c, {"SET", "b", "2"});
    f.engine.cron();
    CHECK(f.engine.snapshots().bgsave_in_progress());
    f.engine.snapshots().wait_for_child(f.engine);
    CHECK(std::filesystem::exists(dir / "dump.rdb"));
    CHECK(f.engine.snapshots().dirty() == 0);
    std::filesystem::remove_all(dir);
  }

  TEST_CASE("SHUTDOWN saves when rules exist or SAVE is given, and NOSAVE skips it") {
    auto dir = fresh_dir("shutdown");
    {
      EngineConfig cfg = in_dir(dir);
      cfg.save = "";
      Fixture f(cfg);
      Session& c = f.client();
      f.run(c, {"SET", "a", "1"});
      f.send(c, {"SHUTDOWN"});
      CHECK_FALSE(std::filesystem::exists(dir / "dump.rdb"));
      f.send(c, {"SHUTDOWN", "SAVE"});
      CHECK(std::filesystem::exists(dir / "dump.rdb"));
    }
    std::filesystem::remove(dir / "dump.rdb");
    {
      Fixture f(in_dir(dir));  // default rules
      Session& c = f.client();
      f.run(c, {"SET", "a", "1"});
      f.send(c, {"SHUTDOWN", "NOSAVE"});
      CHECK_FALSE(std::filesystem::exists(dir / "dump.rdb"));
      f.send(c, {"SHUTDOWN"});
      CHECK(std::filesystem::exists(dir / "dump.rdb"));
    }
    {
      EngineConfig cfg = in_dir(dir / "missing-subdir");
      Fixture f(cfg);
      Session& c = f.client();
      f.run(c, {"SET", "a", "1"});
      f.send(c, {"SHUTDOWN"});
      CHECK(is_err(Fixture::drain(c).at(0), "ERR Errors trying to SHUTDOWN. Check logs."));
      CHECK_FALSE(f.engine.shutdown_requested());
    }
    std::filesystem::remove_all(dir);
  }

  TEST_CASE("DEBUG RELOAD saves, empties and loads back, field TTLs included") {
    auto dir = fresh_dir("reload");
    Fixture f(in_dir(dir));
    Session& c = f.client();
    f.run(c, {"RPUSH", "l", "a", "b"});
    f.run(c, {"HSET", "h", "f", "v", "g", "w"});
    int64_t at = f.clock.now_ms() + 60'000;
    run(f, c, {"HPEXPIREAT", "h", std::to_string(at), "FIELDS", "1", "f"});
    std::string digest = f.run(c, {"DEBUG", "DIGEST"}).str;
    CHECK(is_ok(f.run(c, {"DEBUG", "RELOAD"})));
    CHECK(f.run(c, {"DEBUG", "DIGEST"}).str == digest);
    RespValue ttl = f.run(c, {"HPEXPIRETIME", "h", "FIELDS", "1", "f"});
    REQUIRE(ttl.elements.size() == 1);
    CHECK(ttl.elements[0].integer == at);
    f.run(c, {"SET", "extra", "1"});
    CHECK(is_ok(f.run(c, {"DEBUG", "RELOAD", "NOSAVE"})));
    CHECK(f.run(c, {"EXISTS", "extra"}).integer == 0);
    f.run(c, {"SET", "extra", "1"});
    CHECK(is_ok(f.run(c, {"DEBUG", "RELOAD", "NOSAVE", "NOFLUSH", "MERGE"})));
    CHECK(f.run(c, {"EXISTS", "extra"}).integer == 1);
    CHECK(is_err(f.run(c, {"DEBUG", "RELOAD", "NOSAVE", "NOFLUSH"}),
                 "ERR Error trying to load the RDB dump, check server logs."));
    CHECK(is_err(f.run(c, {"DEBUG", "RELOAD", "BOGUS"}),
                 "ERR DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE options."));
    std::filesystem::remove_all(dir);
  }
}
