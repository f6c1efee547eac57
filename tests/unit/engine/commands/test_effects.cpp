#include "engine/engine.hpp"
#include "engine/persistence/aof.hpp"
#include "engine/persistence/aof_reader.hpp"
#include "engine/propagation.hpp"
#include "engine/util/clock.hpp"

#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

using keyshift::engine::AofCommand;
using keyshift::engine::AofVisitor;
using keyshift::engine::encode_propagated;
using keyshift::engine::Engine;
using keyshift::engine::EngineConfig;
using keyshift::engine::ManualClock;
using keyshift::engine::PropagatedCommand;
using keyshift::engine::PropagationSink;
using keyshift::engine::read_aof;

namespace {

constexpr int64_t k_now = 1'700'000'000'000;

// Every unit as one line: "db:ARG ARG | db:ARG ...".
struct UnitLog final : PropagationSink {
  std::vector<std::string> units;
  void propagate(std::span<const PropagatedCommand> unit) override {
    std::string line;
    for (const PropagatedCommand& c : unit) {
      if (!line.empty()) {
        line += " | ";
      }
      line += std::to_string(c.db) + ":";
      for (size_t i = 0; i < c.argv.size(); ++i) {
        line += (i == 0 ? "" : " ") + c.argv[i];
      }
    }
    units.push_back(line);
  }
};

struct Fixture {
  ManualClock clock{k_now};
  Engine engine{EngineConfig{}, clock};
  UnitLog log;
  Fixture() { engine.add_propagation_sink(&log); }
  ~Fixture() { engine.remove_propagation_sink(&log); }
  std::string last() const { return log.units.empty() ? std::string() : log.units.back(); }
};

}  // namespace

TEST_SUITE("effects") {
  TEST_CASE("relative TTLs are propagated as absolute times") {
    Fixture f;
    f.engine.run({"SET", "k", "v", "EX", "100"});
    CHECK(f.last() == "0:SET k v PXAT " + std::to_string(k_now + 100000));
    f.engine.run({"SETEX", "k", "5", "v"});
    CHECK(f.last() == "0:SET k v PXAT " + std::to_string(k_now + 5000));
    f.engine.run({"EXPIRE", "k", "10", "GT"});
    CHECK(f.last() == "0:PEXPIREAT k " + std::to_string(k_now + 10000) + " GT");
    f.engine.run({"GETEX", "k", "PX", "7"});
    CHECK(f.last() == "0:PEXPIREAT k " + std::to_string(k_now + 7));
    f.engine.run({"GETEX", "k", "PERSIST"});
    CHECK(f.last() == "0:PERSIST k");
    f.engine.run({"EXPIREAT", "k", "1"});  // in the past: the key is deleted
    CHECK(f.last() == "0:UNLINK k");
  }

  TEST_CASE("results the command chose are propagated, not the choice") {
    Fixture f;
    f.engine.run({"INCRBYFLOAT", "f", "1.5"});
    CHECK(f.last() == "0:SET f 1.5 KEEPTTL");
    f.engine.run({"HINCRBYFLOAT", "h", "x", "2.5"});
    CHECK(f.last() == "0:HSET h x 2.5");
    f.engine.run({"SADD", "s", "only"});
    f.engine.run({"SPOP", "s"});
    CHECK(f.last() == "0:SREM s only");
    f.engine.run({"XADD", "x", "MAXLEN", "~", "10", "*", "a", "b"});
    CHECK(f.last().starts_with("0:XADD x MAXLEN ~ 10 " + std::to_string(k_now) + "-0 a b"));
    f.engine.run({"SET", "g", "1", "GET"});
    CHECK(f.last() == "0:SET g 1");
  }

  TEST_CASE("reads, failed writes and no-op writes propagate nothing") {
    Fixture f;
    f.engine.run({"GET", "k"});
    f.engine.run({"SET", "k", "v", "XX"});
    f.engine.run({"DEL", "missing"});
    f.engine.run({"LPUSH"});
    CHECK(f.log.units.empty());
    f.engine.run({"FLUSHALL"});  // always, as Valkey forces it
    CHECK(f.last() == "0:FLUSHALL");
  }

  TEST_CASE("a transaction is one unit and a session's database travels with it") {
    Fixture f;
    auto& s = f.engine.open_session(nullptr);
    auto run = [&](std::vector<std::string_view> argv) { return f.engine.run(s, argv); };
    run({"SELECT", "5"});
    run({"MULTI"});
    run({"SET", "a", "1"});
    run({"GET", "a"});
    run({"INCR", "n"});
    run({"EXEC"});
    REQUIRE(f.log.units.size() == 1);
    CHECK(f.last() == "5:SET a 1 | 5:INCR n");
    CHECK(s.woff == f.engine.propagation_offset());
  }

  TEST_CASE("a served blocking pop is propagated as the pop it did") {
    Fixture f;
    auto& waiter = f.engine.open_session(nullptr);
    std::vector<std::string_view> blpop{"BLPOP", "q", "0"};
    f.engine.run(waiter, blpop);  // blocks: nothing yet
    CHECK(f.log.units.empty());
    f.engine.run({"RPUSH", "q", "job"});
    REQUIRE(f.log.units.size() == 2);
    CHECK(f.log.units[0] == "0:RPUSH q job");
    CHECK(f.log.units[1] == "0:LPOP q");
  }

  TEST_CASE("encoding selects databases and wraps transactions as Valkey's AOF") {
    std::vector<PropagatedCommand> unit{{2, {"SET", "a", "1"}}, {2, {"DEL", "b"}}};
    int selected = 0;
    std::string out;
    encode_propagated(unit, selected, out);
    CHECK(out ==
          "*2\r\n$6\r\nSELECT\r\n$1\r\n2\r\n*1\r\n$5\r\nMULTI\r\n*3\r\n$3\r\nSET\r\n$1\r\na\r\n"
          "$1\r\n1\r\n*2\r\n$3\r\nDEL\r\n$1\r\nb\r\n*1\r\n$4\r\nEXEC\r\n");
    CHECK(selected == 2);
    out.clear();
    encode_propagated(std::span(unit).first(1), selected, out);
    CHECK(out == "*3\r\n$3\r\nSET\r\n$1\r\na\r\n$1\r\n1\r\n");
  }
}

TEST_SUITE("aof") {
  TEST_CASE("an engine's AOF directory reads back as the writes it logged") {
    namespace fs = std::filesystem;
    fs::path dir = fs::temp_directory_path() / ("ks-aof-engine-" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    ManualClock clock{k_now};
    EngineConfig cfg;
    cfg.dir = dir.string();
    cfg.appendonly = true;
    cfg.appendfsync = "always";
    {
      Engine engine(cfg, clock);
      REQUIRE(engine.aof().load());
      REQUIRE_FALSE(engine.aof().open_on_start());
      engine.run({"SET", "k", "v", "PX", "5000"});
      engine.run({"RPUSH", "l", "a", "b"});
      engine.before_replies();
      CHECK(engine.aof().fsynced_offset() == engine.propagation_offset());
      engine.aof().shutdown();
    }
    struct Lines final : AofVisitor {
      std::vector<std::string> commands;
      bool on_command(const AofCommand& c) override {
        std::string line;
        for (std::string_view a : c.argv) {
          line += line.empty() ? "" : " ";
          line += a;
        }
        commands.push_back(line);
        return true;
      }
    } lines;
    auto summary = read_aof((dir / "appendonlydir").string(), lines);
    REQUIRE(summary);
    CHECK(summary->rdb_base);
    CHECK(lines.commands == std::vector<std::string>{"SELECT 0",
                                                     "SET k v PXAT " + std::to_string(k_now + 5000),
                                                     "RPUSH l a b"});
    {
      // Loaded again: the AOF is the dataset.
      Engine engine(cfg, clock);
      auto report = engine.aof().load();
      REQUIRE(report);
      CHECK(report->found);
      CHECK(report->commands == 3);
      CHECK(engine.run({"LRANGE", "l", "0", "-1"}).elements.size() == 2);
      CHECK(engine.run({"PTTL", "k"}).integer == 5000);
    }
    fs::remove_all(dir);
  }
}
