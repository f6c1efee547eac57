// The TTL index (Db's vector of volatile entries) against random key moves and active
// expiry on a manual clock. A broken slot once left a dangling pointer that the active
// expire cycle followed (SIGSEGV in Db::unlink_expired).

#include "engine/engine.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace keyshift::engine {
namespace {

constexpr int k_dbs = 3;
constexpr int k_keys = 12;

/// Drives one session with random commands that move keys between names and databases,
/// change their TTLs and replace their values, and checks the TTL index after each.
struct TtlIndexDriver {
  ManualClock clock;
  Engine engine;
  Session& session;
  std::mt19937_64 rng;
  std::vector<std::string> argv_store;

  explicit TtlIndexDriver(uint64_t seed)
      : engine(make_config(), clock), session(engine.open_session(nullptr)), rng(seed) {}

  static EngineConfig make_config() {
    EngineConfig cfg;
    cfg.databases = k_dbs;
    return cfg;
  }

  int pick(int n) { return static_cast<int>(rng() % static_cast<uint64_t>(n)); }
  std::string key() { return "k" + std::to_string(pick(k_keys)); }
  std::string db() { return std::to_string(pick(k_dbs)); }
  std::string ttl_ms() { return std::to_string(1 + pick(400)); }
  /// Values of several sizes, so replacements both fit in place and need a new entry.
  std::string value() {
    static constexpr int k_sizes[] = {1, 7, 30, 90, 300};
    return std::string(static_cast<size_t>(k_sizes[pick(5)]), static_cast<char>('a' + pick(26)));
  }

  RespValue run(std::vector<std::string> argv) {
    argv_store = std::move(argv);
    std::vector<std::string_view> views(argv_store.begin(), argv_store.end());
    return engine.run(session, views);
  }

  void step() {
    switch (pick(22)) {
      case 0:
        run({"SET", key(), value()});
        break;
      case 1:
        run({"SET", key(), value(), "PX", ttl_ms()});
        break;
      case 2:
        run({"SET", key(), value(), "KEEPTTL"});
        break;
      case 3:
        run({"SET", key(), std::to_string(pick(1000)), "EX", "1"});  // integer encoding
        break;
      case 4:
        run({"PEXPIRE", key(), ttl_ms()});
        break;
      case 5:
        run({"PERSIST", key()});
        break;
      case 6:
        run({"GETEX", key(), pick(2) == 0 ? "PERSIST" : "PX", ttl_ms()});
        break;
      case 7:
        run({"MOVE", key(), db()});
        break;
      case 8:
        run({"SWAPDB", db(), db()});
        break;
      case 9:
        run({"RENAME", key(), key()});
        break;
      case 10:
        run({"COPY", key(), key(), "DB", db(), "REPLACE"});
        break;
      case 11:
        run({"COPY", key(), key()});
        break;
      case 12: {
        RespValue dump = run({"DUMP", key()});
        if (dump.type == RespValue::Type::bulk) {
          run({"RESTORE", key(), pick(2) == 0 ? "0" : ttl_ms(), dump.str, "REPLACE"});
        }
        break;
      }
      case 13:
        run({"SELECT", db()});
        break;
      case 14:
        if (pick(8) == 0) {
          run({pick(3) == 0 ? "FLUSHALL" : "FLUSHDB"});
        }
        break;
      case 15:
        run({"DEL", key()});
        break;
      case 16:
        run({"RPUSH", key(), value(), value()});  // WRONGTYPE for strings: a no-op then
        break;
      case 17:
        run({"APPEND", key(), value()});
        break;
      case 18:
        run({"GETSET", key(), value()});
        break;
      case 19:
        run({"SETRANGE", key(), std::to_string(pick(200)), value()});
        break;
      case 20:
        run({"INCR", key()});
        break;
      default:
        clock.advance_ms(pick(120));
        engine.cron();
        break;
    }
  }

  /// Every database's index matches its table.
  std::string check() const {
    for (int i = 0; i < k_dbs; ++i) {
      std::string problem = const_cast<Engine&>(engine).db(i).check_ttl_index();
      if (!problem.empty()) {
        return "db " + std::to_string(i) + ": " + problem;
      }
    }
    return {};
  }
};

}  // namespace

TEST_SUITE("Db TTL index") {
  TEST_CASE("the TTL index matches the table after every random key move and expiry") {
    for (uint64_t seed = 1; seed <= 40; ++seed) {
      TtlIndexDriver driver(seed);
      for (int i = 0; i < 1500; ++i) {
        driver.step();
        std::string problem = driver.check();
        if (!problem.empty()) {
          FAIL("seed " << seed << ", step " << i << " (" << driver.argv_store[0]
                       << "): " << problem);
        }
      }
      // Let everything expire: the active cycle alone must empty every index safely.
      driver.clock.advance_ms(1000);
      for (int i = 0; i < 50; ++i) {
        driver.engine.cron();
      }
      CHECK(driver.check().empty());
      for (int d = 0; d < k_dbs; ++d) {
        CHECK(driver.engine.db(d).expires_size() == 0);
      }
    }
  }

  TEST_CASE("a value replaced by one that does not fit keeps its TTL slot") {
    TtlIndexDriver driver(0);
    driver.run({"SET", "b", "y", "PX", "100000"});
    driver.run({"SET", "a", "x", "PX", "100000"});  // slot 1: not the default 0
    // A longer value cannot be assigned in place: a new entry replaces the old one.
    driver.run({"SET", "a", std::string(500, 'z'), "KEEPTTL"});
    CHECK(driver.check().empty());
    driver.run({"PERSIST", "a"});
    CHECK(driver.check().empty());
    CHECK(driver.engine.db(0).expires_size() == 1);
    driver.clock.advance_ms(200000);
    driver.engine.cron();
    CHECK(driver.engine.db(0).expires_size() == 0);
    CHECK(driver.run({"EXISTS", "a", "b"}).integer == 1);
  }
}

}  // namespace keyshift::engine
