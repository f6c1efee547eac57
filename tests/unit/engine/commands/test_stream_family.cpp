#include "engine/engine.hpp"
#include "engine/keyspace/digest.hpp"
#include "engine/session.hpp"
#include "engine/util/clock.hpp"

#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace {

using keyshift::engine::EnableMode;
using keyshift::engine::Engine;
using keyshift::engine::EngineConfig;
using keyshift::engine::k_session_blocked;
using keyshift::engine::ManualClock;
using keyshift::engine::RespValue;
using keyshift::engine::Session;
using keyshift::engine::StreamDigestBuilder;

constexpr int64_t k_start_ms = 1'700'000'000'000;

EngineConfig debug_config() {
  EngineConfig c;
  c.enable_debug_command = EnableMode::yes;
  return c;
}

struct Harness {
  explicit Harness(EngineConfig config = debug_config())
      : clock(k_start_ms),
        engine(std::move(config), clock),
        session(engine.open_session(nullptr)) {}

  RespValue operator()(std::initializer_list<std::string_view> argv) { return run(session, argv); }
  RespValue run(Session& s, std::initializer_list<std::string_view> argv) {
    std::vector<std::string_view> v(argv);
    return engine.run(s, v);
  }
  RespValue raw(const std::vector<std::string>& argv) {
    std::vector<std::string_view> v(argv.begin(), argv.end());
    return engine.run(session, v);
  }
  /// The raw reply bytes in protocol `resp`.
  std::string wire(std::initializer_list<std::string_view> argv, int resp = 2) {
    session.resp = resp;
    std::vector<std::string_view> v(argv);
    size_t start = session.out.size();
    engine.execute(session, v);
    std::string out = session.out.substr(start);
    session.out.resize(start);
    session.resp = 2;
    return out;
  }
  std::string error(std::initializer_list<std::string_view> argv) {
    RespValue r = (*this)(argv);
    return r.type == RespValue::Type::error ? r.str : "(not an error) " + r.to_display();
  }
  int64_t integer(std::initializer_list<std::string_view> argv) { return (*this)(argv).integer; }
  /// The IDs of an XRANGE-style reply.
  static std::vector<std::string> ids(const RespValue& r) {
    std::vector<std::string> out;
    for (const RespValue& e : r.elements) {
      out.push_back(e.elements.at(0).str);
    }
    return out;
  }
  /// A field of an XINFO-style flat map reply.
  static const RespValue& field(const RespValue& map, std::string_view name) {
    for (size_t i = 0; i + 1 < map.elements.size(); i += 2) {
      if (map.elements[i].str == name) {
        return map.elements[i + 1];
      }
    }
    FAIL("no field " << name);
    return map;
  }

  ManualClock clock;
  Engine engine;
  Session& session;
};

using Ids = std::vector<std::string>;

}  // namespace

TEST_SUITE("engine::stream_family") {
  TEST_CASE("XADD appends with explicit, partial and automatic IDs and XRANGE reads them back") {
    Harness h;
    CHECK(h({"XADD", "s", "1-1", "a", "1"}).str == "1-1");
    CHECK(h({"XADD", "s", "1-*", "b", "2"}).str == "1-2");
    CHECK(h({"XADD", "s", "5", "c", "3"}).str == "5-0");
    CHECK(h({"XADD", "s", "*", "d", "4"}).str == std::to_string(k_start_ms) + "-0");
    CHECK(h({"XADD", "s", "*", "e", "5"}).str == std::to_string(k_start_ms) + "-1");
    CHECK(h.integer({"XLEN", "s"}) == 5);
    CHECK(h({"TYPE", "s"}).str == "stream");
    CHECK(h({"OBJECT", "ENCODING", "s"}).str == "stream");
    RespValue all = h({"XRANGE", "s", "-", "+"});
    CHECK(Harness::ids(all) == Ids{"1-1", "1-2", "5-0", std::to_string(k_start_ms) + "-0",
                                   std::to_string(k_start_ms) + "-1"});
    CHECK(all.elements[2].elements[1].elements[0].str == "c");
    CHECK(all.elements[2].elements[1].elements[1].str == "3");
    CHECK(Harness::ids(h({"XRANGE", "s", "(1-1", "5", "COUNT", "2"})) == Ids{"1-2", "5-0"});
    CHECK(Harness::ids(h({"XREVRANGE", "s", "5", "-", "COUNT", "2"})) == Ids{"5-0", "1-2"});
    CHECK(Harness::ids(h({"XRANGE", "s", "1", "1"})) == Ids{"1-1", "1-2"});
    CHECK(h.wire({"XRANGE", "s", "-", "+", "COUNT", "0"}) == "*-1\r\n");
    CHECK(h.wire({"XRANGE", "missing", "-", "+"}) == "*0\r\n");
    CHECK(h.wire({"XRANGE", "s", "1-1", "1-1"}) ==
          "*1\r\n*2\r\n$3\r\n1-1\r\n*2\r\n$1\r\na\r\n$1\r\n1\r\n");
  }

  TEST_CASE("XADD refuses IDs and arguments as Valkey does") {
    Harness h;
    CHECK(h.error({"XADD", "s", "0-0", "a", "1"}) ==
          "ERR The ID specified in XADD must be greater than 0-0");
    CHECK(h.integer({"EXISTS", "s"}) == 0);
    h({"XADD", "s", "5-5", "a", "1"});
    CHECK(h.error({"XADD", "s", "5-5", "a", "1"}) ==
          "ERR The ID specified in XADD is equal or smaller than the target stream top item");
    CHECK(h.error({"XADD", "s", "4", "a", "1"}) ==
          "ERR The ID specified in XADD is equal or smaller than the target stream top item");
    CHECK(h.error({"XADD", "s", "abc", "a", "1"}) ==
          "ERR Invalid stream ID specified as stream command argument");
    CHECK(h.error({"XADD", "s", "-", "a", "1"}) ==
          "ERR Invalid stream ID specified as stream command argument");
    CHECK(h.error({"XADD", "s", "*", "a"}) == "ERR wrong number of arguments for 'xadd' command");
    CHECK(h.error({"XADD", "s", "*", "a", "1", "b"}) ==
          "ERR wrong number of arguments for 'xadd' command");
    CHECK(h.error({"XADD", "s", "MAXLEN", "-1", "*", "a", "1"}) ==
          "ERR The MAXLEN argument must be >= 0.");
    CHECK(h.error({"XADD", "s", "MAXLEN", "1", "MINID", "1", "*", "a", "1"}) ==
          "ERR syntax error, MAXLEN and MINID options at the same time are not compatible");
    CHECK(h.error({"XADD", "s", "MAXLEN", "1", "LIMIT", "5", "*", "a", "1"}) ==
          "ERR syntax error, LIMIT cannot be used without the special ~ option");
    CHECK(h.error({"XADD", "s", "LIMIT", "5", "*", "a", "1"}) ==
          "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy");
    CHECK(h.wire({"XADD", "nokey", "NOMKSTREAM", "*", "a", "1"}) == "$-1\r\n");
    CHECK(h.integer({"EXISTS", "nokey"}) == 0);
    h({"SET", "str", "x"});
    CHECK(h.error({"XADD", "str", "*", "a", "1"}) ==
          "WRONGTYPE Operation against a key holding the wrong kind of value");
    CHECK(h({"XADD", "s", "18446744073709551615-18446744073709551615", "a", "1"}).str ==
          "18446744073709551615-18446744073709551615");
    CHECK(h.error({"XADD", "s", "*", "a", "1"}) ==
          "ERR The stream has exhausted the last possible ID, unable to add more items");
  }

  TEST_CASE("MAXLEN and MINID trim exactly, or by whole nodes with ~") {
    Harness h;
    h({"CONFIG", "SET", "stream-node-max-entries", "10"});
    for (int i = 1; i <= 95; ++i) {
      h.raw({"XADD", "s", std::to_string(i), "f", std::to_string(i)});
    }
    RespValue info = h({"XINFO", "STREAM", "s"});
    CHECK(Harness::field(info, "radix-tree-keys").integer == 10);
    // ~: only whole nodes go, so 95 - 80 = 15 entries remain above 10.
    CHECK(h.integer({"XTRIM", "s", "MAXLEN", "~", "10"}) == 80);
    CHECK(h.integer({"XLEN", "s"}) == 15);
    CHECK(h.integer({"XTRIM", "s", "MAXLEN", "=", "10"}) == 5);
    CHECK(Harness::ids(h({"XRANGE", "s", "-", "+", "COUNT", "1"})) == Ids{"86-0"});
    CHECK(h.integer({"XTRIM", "s", "MINID", "90"}) == 4);
    CHECK(Harness::ids(h({"XRANGE", "s", "-", "+", "COUNT", "1"})) == Ids{"90-0"});
    info = h({"XINFO", "STREAM", "s"});
    CHECK(Harness::field(info, "recorded-first-entry-id").str == "90-0");
    CHECK(Harness::field(info, "entries-added").integer == 95);
    CHECK(h({"XADD", "s", "MAXLEN", "2", "*", "x", "y"}).type == RespValue::Type::bulk);
    CHECK(h.integer({"XLEN", "s"}) == 2);
    CHECK(h.error({"XTRIM", "s"}) == "ERR wrong number of arguments for 'xtrim' command");
    CHECK(h.error({"XTRIM", "s", "FOO", "1"}) == "ERR syntax error");
    CHECK(h.integer({"XTRIM", "missing", "MAXLEN", "0"}) == 0);
  }

  TEST_CASE("XDEL marks entries deleted and keeps the stream's metadata as Valkey does") {
    Harness h;
    for (std::string id : {"1", "2", "3", "4"}) {
      h.raw({"XADD", "s", id, "f", "v"});
    }
    CHECK(h.integer({"XDEL", "s", "2-0", "9-0"}) == 1);
    CHECK(h.error({"XDEL", "s", "bad"}) ==
          "ERR Invalid stream ID specified as stream command argument");
    CHECK(h.integer({"XDEL", "s", "1-0"}) == 1);
    RespValue info = h({"XINFO", "STREAM", "s"});
    CHECK(Harness::field(info, "length").integer == 2);
    CHECK(Harness::field(info, "max-deleted-entry-id").str == "2-0");
    CHECK(Harness::field(info, "recorded-first-entry-id").str == "3-0");
    CHECK(Harness::field(info, "first-entry").elements[0].str == "3-0");
    CHECK(Harness::field(info, "last-entry").elements[0].str == "4-0");
    CHECK(h.integer({"XDEL", "s", "3", "4"}) == 2);
    CHECK(h.integer({"EXISTS", "s"}) == 1);  // an emptied stream stays
    info = h({"XINFO", "STREAM", "s"});
    CHECK(Harness::field(info, "recorded-first-entry-id").str == "0-0");
    CHECK(Harness::field(info, "radix-tree-keys").integer == 0);
    CHECK(Harness::field(info, "first-entry").type == RespValue::Type::null);
    CHECK(h.error({"XADD", "s", "4", "f", "v"}) ==
          "ERR The ID specified in XADD is equal or smaller than the target stream top item");
  }

  TEST_CASE("XSETID checks its IDs against the stream") {
    Harness h;
    h({"XADD", "s", "5", "f", "v"});
    CHECK(h.error({"XSETID", "s", "4"}) ==
          "ERR The ID specified in XSETID is smaller than the target stream top item");
    CHECK(h.error({"XSETID", "s", "9", "ENTRIESADDED", "0"}) ==
          "ERR The entries_added specified in XSETID is smaller than the target stream length");
    CHECK(h.error({"XSETID", "s", "9", "MAXDELETEDID", "10"}) ==
          "ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id");
    CHECK(h.error({"XSETID", "missing", "9"}) == "ERR no such key");
    CHECK(h({"XSETID", "s", "9", "ENTRIESADDED", "7", "MAXDELETEDID", "3"}).str == "OK");
    RespValue info = h({"XINFO", "STREAM", "s"});
    CHECK(Harness::field(info, "last-generated-id").str == "9-0");
    CHECK(Harness::field(info, "entries-added").integer == 7);
    CHECK(Harness::field(info, "max-deleted-entry-id").str == "3-0");
    CHECK(h({"XADD", "s", "*", "f", "v"}).str == std::to_string(k_start_ms) + "-0");
  }

  TEST_CASE("consumer groups deliver, track pending entries, acknowledge and claim") {
    Harness h;
    for (std::string id : {"1", "2", "3", "4"}) {
      h.raw({"XADD", "s", id, "f", id});
    }
    CHECK(h({"XGROUP", "CREATE", "s", "g", "0"}).str == "OK");
    CHECK(h.error({"XGROUP", "CREATE", "s", "g", "0"}) ==
          "BUSYGROUP Consumer Group name already exists");
    CHECK(h.error({"XGROUP", "CREATE", "nokey", "g", "0"})
              .rfind("ERR The XGROUP subcommand requires the key to exist.", 0) == 0);
    RespValue r = h({"XREADGROUP", "GROUP", "g", "alice", "COUNT", "2", "STREAMS", "s", ">"});
    REQUIRE(r.elements.size() == 1);
    CHECK(r.elements[0].elements[0].str == "s");
    CHECK(Harness::ids(r.elements[0].elements[1]) == Ids{"1-0", "2-0"});
    r = h({"XREADGROUP", "GROUP", "g", "bob", "STREAMS", "s", ">"});
    CHECK(Harness::ids(r.elements[0].elements[1]) == Ids{"3-0", "4-0"});
    CHECK(h.wire({"XREADGROUP", "GROUP", "g", "bob", "STREAMS", "s", ">"}) == "*-1\r\n");
    // History: bob's own pending entries.
    r = h({"XREADGROUP", "GROUP", "g", "bob", "STREAMS", "s", "0"});
    CHECK(Harness::ids(r.elements[0].elements[1]) == Ids{"3-0", "4-0"});
    RespValue summary = h({"XPENDING", "s", "g"});
    CHECK(summary.elements[0].integer == 4);
    CHECK(summary.elements[1].str == "1-0");
    CHECK(summary.elements[2].str == "4-0");
    CHECK(summary.elements[3].elements[1].elements[0].str == "bob");
    CHECK(summary.elements[3].elements[1].elements[1].str == "2");
    CHECK(h.integer({"XACK", "s", "g", "1", "1", "9"}) == 1);
    h.clock.advance_ms(500);
    RespValue detail = h({"XPENDING", "s", "g", "-", "+", "10"});
    REQUIRE(detail.elements.size() == 3);
    CHECK(detail.elements[0].elements[0].str == "2-0");
    CHECK(detail.elements[0].elements[1].str == "alice");
    CHECK(detail.elements[0].elements[2].integer == 500);
    CHECK(detail.elements[1].elements[3].integer == 2);  // bob read 3-0 twice
    r = h({"XCLAIM", "s", "g", "carol", "100", "2-0", "3-0", "JUSTID"});
    CHECK(r.elements.size() == 2);
    CHECK(h({"XPENDING", "s", "g", "-", "+", "10", "carol"}).elements.size() == 2);
    h.clock.advance_ms(500);
    r = h({"XAUTOCLAIM", "s", "g", "dave", "200", "0", "COUNT", "1"});
    CHECK(r.elements[0].str == "3-0");
    CHECK(Harness::ids(r.elements[1]) == Ids{"2-0"});
    CHECK(r.elements[2].elements.empty());
    CHECK(h.integer({"XDEL", "s", "3"}) == 1);
    r = h({"XAUTOCLAIM", "s", "g", "dave", "0", "0"});
    CHECK(r.elements[0].str == "0-0");
    CHECK(Harness::ids(r.elements[1]) == Ids{"2-0", "4-0"});
    CHECK(r.elements[2].elements[0].str == "3-0");
    RespValue groups = h({"XINFO", "GROUPS", "s"});
    REQUIRE(groups.elements.size() == 1);
    CHECK(Harness::field(groups.elements[0], "consumers").integer == 4);
    CHECK(Harness::field(groups.elements[0], "pending").integer == 2);
    CHECK(Harness::field(groups.elements[0], "last-delivered-id").str == "4-0");
    CHECK(Harness::field(groups.elements[0], "entries-read").integer == 4);
    CHECK(Harness::field(groups.elements[0], "lag").integer == 0);
    RespValue consumers = h({"XINFO", "CONSUMERS", "s", "g"});
    CHECK(consumers.elements.size() == 4);
    CHECK(Harness::field(consumers.elements[3], "name").str == "dave");
    CHECK(Harness::field(consumers.elements[3], "pending").integer == 2);
    CHECK(h.integer({"XGROUP", "DELCONSUMER", "s", "g", "dave"}) == 2);
    CHECK(h.integer({"XGROUP", "CREATECONSUMER", "s", "g", "erin"}) == 1);
    CHECK(h.integer({"XGROUP", "CREATECONSUMER", "s", "g", "erin"}) == 0);
    CHECK(h({"XGROUP", "SETID", "s", "g", "$", "ENTRIESREAD", "3"}).str == "OK");
    CHECK(h.integer({"XGROUP", "DESTROY", "s", "g"}) == 1);
    CHECK(h.integer({"XGROUP", "DESTROY", "s", "g"}) == 0);
    CHECK(h.error({"XREADGROUP", "GROUP", "g", "x", "STREAMS", "s", ">"}) ==
          "NOGROUP No such key 's' or consumer group 'g' in XREADGROUP with GROUP option");
    CHECK(h.error({"XPENDING", "s", "g"}) == "NOGROUP No such key 's' or consumer group 'g'");
  }

  TEST_CASE("XREAD serves entries after the given IDs, and blocks until XADD brings some") {
    Harness h;
    h({"XADD", "a", "1", "f", "v"});
    h({"XADD", "b", "2", "f", "v"});
    RespValue r = h({"XREAD", "COUNT", "5", "STREAMS", "a", "b", "0", "2"});
    REQUIRE(r.elements.size() == 1);
    CHECK(r.elements[0].elements[0].str == "a");
    CHECK(h.wire({"XREAD", "STREAMS", "a", "$"}) == "*-1\r\n");
    CHECK(h.error({"XREAD", "COUNT", "1", "STREAMS", "a"}) ==
          "ERR Unbalanced 'xread' list of streams: for each stream key an ID or '$' must be "
          "specified.");
    CHECK(h.error({"XREAD", "STREAMS", "a", ">"}) ==
          "ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> "
          "<consumer> option.");
    CHECK(h.error({"XREAD", "BLOCK", "-1", "STREAMS", "a", "$"}) == "ERR timeout is negative");
    Session& waiter = h.engine.open_session(nullptr);
    std::vector<std::string_view> block{"XREAD", "BLOCK", "0", "STREAMS", "a", "$"};
    h.engine.execute(waiter, block);
    CHECK(waiter.has(k_session_blocked));
    CHECK(waiter.out.empty());
    h({"XADD", "a", "7", "new", "entry"});
    CHECK(!waiter.has(k_session_blocked));
    CHECK(waiter.out.find("$3\r\n7-0\r\n") != std::string::npos);
    CHECK(waiter.out.find("$1\r\n1-0\r\n") == std::string::npos);
  }

  TEST_CASE("a blocked XREADGROUP fails when its key or group goes; a blocked XREAD waits on") {
    Harness h;
    Session& reader = h.engine.open_session(nullptr);
    Session& group_reader = h.engine.open_session(nullptr);
    auto block = [&](Session& s, std::vector<std::string_view> argv) {
      s.out.clear();
      h.engine.execute(s, argv);
      CHECK(s.has(k_session_blocked));
    };
    std::vector<std::string_view> xread{"XREAD", "BLOCK", "0", "STREAMS", "s", "$"};
    std::vector<std::string_view> xreadgroup{"XREADGROUP", "GROUP",   "g", "c", "BLOCK",
                                             "0",          "STREAMS", "s", ">"};
    for (std::string_view how : {"DEL", "SET", "FLUSHALL", "DESTROY", "MULTI"}) {
      CAPTURE(how);
      h({"FLUSHALL"});
      h({"XADD", "s", "1", "f", "v"});
      h({"XGROUP", "CREATE", "s", "g", "$"});
      block(reader, xread);
      block(group_reader, xreadgroup);
      if (how == "DEL") {
        h({"DEL", "s"});
      } else if (how == "SET") {
        h({"SET", "s", "x"});
      } else if (how == "FLUSHALL") {
        h({"FLUSHALL"});
      } else if (how == "DESTROY") {
        h({"XGROUP", "DESTROY", "s", "g"});
      } else {
        h({"MULTI"});
        h({"DEL", "s"});
        h({"SADD", "s", "m"});
        h({"EXEC"});
      }
      CHECK_FALSE(group_reader.has(k_session_blocked));
      std::string want = how == "SET" || how == "MULTI" ? "-WRONGTYPE" : "-NOGROUP";
      CHECK(group_reader.out.rfind(want, 0) == 0);
      CHECK(reader.has(k_session_blocked));
      CHECK(h({"INFO", "clients"}).str.find("total_blocking_keys_on_nokey:0\r\n") !=
            std::string::npos);
      h({"DEL", "s"});
      h({"XADD", "s", "2", "f", "v"});  // XREAD's "$" was 1-0: 2-0 serves it
      CHECK_FALSE(reader.has(k_session_blocked));
      CHECK(reader.out.find("$3\r\n2-0\r\n") != std::string::npos);
    }
  }

  TEST_CASE("DEBUG DIGEST-VALUE digests each live entry as ms.seq then its fields") {
    // DEBUG RELOAD saves to dir/dbfilename: a scratch directory, not the working directory.
    std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                ("keyshift-stream-reload-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    EngineConfig config = debug_config();
    config.dir = dir.string();
    Harness h(config);
    h({"XADD", "s", "1-1", "a", "1", "b", "22"});
    h({"XADD", "s", "2-0", "a", "x"});
    h({"XADD", "s", "3-0", "gone", "y"});
    h({"XDEL", "s", "3-0"});
    StreamDigestBuilder b;
    b.add_entry(1, 1);
    b.add_field("a", "1");
    b.add_field("b", "22");
    b.add_entry(2, 0);
    b.add_field("a", "x");
    RespValue d = h({"DEBUG", "DIGEST-VALUE", "s"});
    REQUIRE(d.elements.size() == 1);
    CHECK(d.elements[0].str == b.finish(false).hex());
    std::string before = h({"DEBUG", "DIGEST"}).str;
    CHECK(h({"DEBUG", "RELOAD"}).str == "OK");
    CHECK(h({"DEBUG", "DIGEST"}).str == before);
    CHECK(h({"DEBUG", "DIGEST-VALUE", "s"}).elements[0].str == b.finish(false).hex());
    std::filesystem::remove_all(dir);
  }

  TEST_CASE("DUMP and RESTORE, COPY, RENAME and MOVE carry a stream with its groups") {
    Harness h;
    for (int i = 1; i <= 300; ++i) {
      h.raw(
          {"XADD", "s", std::to_string(i), "field", std::string(static_cast<size_t>(i % 50), 'v')});
    }
    h({"XDEL", "s", "7"});
    h({"XGROUP", "CREATE", "s", "g", "0"});
    h({"XREADGROUP", "GROUP", "g", "c", "COUNT", "3", "STREAMS", "s", ">"});
    std::string digest = h({"DEBUG", "DIGEST-VALUE", "s"}).elements[0].str;
    RespValue payload = h({"DUMP", "s"});
    REQUIRE(payload.type == RespValue::Type::bulk);
    CHECK(h({"RESTORE", "r", "0", payload.str}).str == "OK");
    CHECK(h({"DEBUG", "DIGEST-VALUE", "r"}).elements[0].str == digest);
    CHECK(h({"XPENDING", "r", "g"}).elements[0].integer == 3);
    CHECK(h.integer({"COPY", "s", "c"}) == 1);
    h({"XADD", "s", "1000", "only", "in-s"});
    CHECK(h.integer({"XLEN", "c"}) == 299);
    CHECK(h({"XPENDING", "c", "g"}).elements[0].integer == 3);
    CHECK(h({"RENAME", "c", "d"}).str == "OK");
    CHECK(h.integer({"MOVE", "d", "1"}) == 1);
    h({"SELECT", "1"});
    CHECK(h({"DEBUG", "DIGEST-VALUE", "d"}).elements[0].str == digest);
    CHECK(h({"SCAN", "0", "TYPE", "stream"}).elements[1].elements.size() == 1);
    RespValue keyspace = h({"INFO", "keyspace"});
    CHECK(keyspace.str.find("db1:keys=1,") != std::string::npos);
  }

  TEST_CASE("memory returns to the baseline after streams grow, trim, hold groups and go") {
    Harness h;
    h({"SET", "anchor", "x"});
    uint64_t baseline = h.engine.memory().used();
    for (int i = 1; i <= 500; ++i) {
      h.raw({"XADD", "s", std::to_string(i), "f", std::to_string(i), "g", "value"});
    }
    h({"XADD", "s", "501", "other", "fields"});
    h({"XDEL", "s", "3", "250"});
    h({"XTRIM", "s", "MAXLEN", "~", "300"});
    h({"XTRIM", "s", "MINID", "260"});
    h({"XGROUP", "CREATE", "s", "g", "0"});
    h({"XREADGROUP", "GROUP", "g", "a", "COUNT", "50", "STREAMS", "s", ">"});
    h({"XCLAIM", "s", "g", "b", "0", "260", "261", "FORCE"});
    h({"XACK", "s", "g", "262"});
    h({"XGROUP", "CREATECONSUMER", "s", "g", "idle"});
    h({"XGROUP", "DELCONSUMER", "s", "g", "a"});
    h({"XGROUP", "CREATE", "s", "h", "$"});
    CHECK(h({"MEMORY", "USAGE", "s"}).integer > 0);
    CHECK(h.engine.memory().used() > baseline);
    h({"COPY", "s", "t"});
    h({"DEL", "s", "t"});
    CHECK(h.engine.memory().used() == baseline);
  }

  TEST_CASE("keyspace events name each stream change") {
    Harness h;
    h({"CONFIG", "SET", "notify-keyspace-events", "Et"});
    Session& sub = h.engine.open_session(nullptr);
    h.run(sub, {"PSUBSCRIBE", "__keyevent@0__:*"});
    sub.out.clear();
    h({"XADD", "s", "MAXLEN", "1", "1", "f", "v"});
    h({"XADD", "s", "MAXLEN", "1", "2", "f", "v"});
    h({"XGROUP", "CREATE", "s", "g", "0"});
    h({"XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">"});
    h({"XDEL", "s", "2"});
    h({"XSETID", "s", "5"});
    h({"XGROUP", "DESTROY", "s", "g"});
    for (std::string_view ev : {"xadd", "xtrim", "xgroup-create", "xgroup-createconsumer", "xdel",
                                "xsetid", "xgroup-destroy"}) {
      CAPTURE(ev);
      CHECK(sub.out.find("__keyevent@0__:" + std::string(ev) + "\r\n") != std::string::npos);
    }
  }
}
