#include "tests/unit/engine/commands/conn_test_util.hpp"

#include "engine/commands/errors.hpp"
#include "engine/engine.hpp"
#include "engine/persistence/snapshots.hpp"

#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <string>

using namespace keyshift::engine::conn_test;
using keyshift::engine::EngineConfig;
using keyshift::engine::Session;
namespace errors = keyshift::engine::errors;

namespace {

// A data directory where every save fails: the snapshot's name is taken by a directory, so
// the final rename fails even for root.
std::filesystem::path unsavable_dir(std::string_view name) {
  auto d = std::filesystem::temp_directory_path() /
           (std::string("ks-stopwrites-") + std::string(name) + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d / "dump.rdb");
  return d;
}

// Runs a BGSAVE that fails and waits for its child.
void fail_a_bgsave(Fixture& f, Session& s) {
  CHECK(f.run(s, {"BGSAVE"}).str == "Background saving started");
  f.engine.snapshots().wait_for_child(f.engine);
  REQUIRE_FALSE(f.engine.snapshots().last_bgsave_ok());
}

}  // namespace

TEST_SUITE("engine::stop_writes_on_bgsave_error") {
  TEST_CASE("a failed background save stops writes and PING but not reads") {
    auto dir = unsavable_dir("on");
    EngineConfig config;
    config.dir = dir.string();
    Fixture f(config);
    Session& s = f.client();
    CHECK(is_ok(f.run(s, {"SET", "k", "v"})));
    fail_a_bgsave(f, s);
    std::string misconf(errors::k_misconf_bgsave);
    CHECK(is_err(f.run(s, {"SET", "k", "w"}), misconf));
    CHECK(is_err(f.run(s, {"PING"}), misconf));
    CHECK(is_bulk(f.run(s, {"GET", "k"}), "v"));
    // A write is refused while queued, which dooms its transaction, as in Valkey.
    CHECK(is_ok(f.run(s, {"MULTI"})));
    CHECK(is_err(f.run(s, {"INCR", "n"}), misconf));
    CHECK(
        is_err(f.run(s, {"EXEC"}), "EXECABORT Transaction discarded because of previous errors."));
    // Once a save succeeds, writes are accepted again.
    std::filesystem::remove(dir / "dump.rdb");
    CHECK(is_ok(f.run(s, {"SAVE"})));
    CHECK(is_ok(f.run(s, {"SET", "k", "w"})));
    std::filesystem::remove_all(dir);
  }

  TEST_CASE("a transaction queued before the failure is refused at EXEC") {
    auto dir = unsavable_dir("exec");
    EngineConfig config;
    config.dir = dir.string();
    Fixture f(config);
    Session& s = f.client();
    Session& admin = f.client();
    CHECK(is_ok(f.run(s, {"MULTI"})));
    CHECK(is_simple(f.run(s, {"INCR", "n"}), "QUEUED"));
    fail_a_bgsave(f, admin);
    // EXEC refused drops the transaction, quoting the reason as Valkey's execCommandAbort.
    CHECK(is_err(f.run(s, {"EXEC"}), std::string(errors::k_execabort_because_prefix) +
                                         std::string(errors::k_misconf_bgsave)));
    CHECK(is_null(f.run(s, {"GET", "n"})));
    std::filesystem::remove_all(dir);
  }

  TEST_CASE("writes go on when the setting is off or no save rule exists") {
    auto dir = unsavable_dir("off");
    EngineConfig off;
    off.dir = dir.string();
    off.stop_writes_on_bgsave_error = false;
    Fixture f(off);
    Session& s = f.client();
    fail_a_bgsave(f, s);
    CHECK(is_ok(f.run(s, {"SET", "k", "v"})));

    EngineConfig no_rules;
    no_rules.dir = dir.string();
    no_rules.save.clear();
    Fixture g(no_rules);
    Session& t = g.client();
    fail_a_bgsave(g, t);
    CHECK(is_ok(g.run(t, {"SET", "k", "v"})));
    CHECK(is_simple(g.run(t, {"PING"}), "PONG"));
    std::filesystem::remove_all(dir);
  }
}
