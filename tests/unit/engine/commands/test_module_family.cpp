#include "tests/unit/engine/commands/conn_test_util.hpp"

#include "engine/commands/errors.hpp"
#include "engine/engine.hpp"

#include <doctest/doctest.h>

using namespace keyshift::engine::conn_test;
using keyshift::engine::EnableMode;
using keyshift::engine::EngineConfig;
using keyshift::engine::RespValue;
using keyshift::engine::Session;
namespace errors = keyshift::engine::errors;

TEST_SUITE("engine::module_family") {
  TEST_CASE("MODULE LOAD, LOADEX and UNLOAD are refused unless enable-module-command allows") {
    Fixture f;
    Session& s = f.client();
    CHECK(is_err(f.run(s, {"MODULE", "LOAD", "/x.so"}), errors::k_module_not_allowed));
    CHECK(is_err(f.run(s, {"MODULE", "UNLOAD", "x"}), errors::k_module_not_allowed));
    // The DEBUG switch does not open MODULE, nor the other way round.
    EngineConfig debug_only;
    debug_only.enable_debug_command = EnableMode::yes;
    Fixture g(debug_only);
    Session& t = g.client();
    CHECK(is_err(g.run(t, {"MODULE", "LOADEX", "/x.so"}), errors::k_module_not_allowed));
  }

  TEST_CASE("with modules allowed, loading fails and unloading finds nothing, as Valkey does") {
    EngineConfig cfg;
    cfg.enable_module_command = EnableMode::yes;
    Fixture f(cfg);
    Session& s = f.client();
    CHECK(is_err(f.run(s, {"MODULE", "LOAD", "/x.so"}),
                 "ERR Error loading the extension. Please check the server logs."));
    CHECK(is_err(f.run(s, {"MODULE", "UNLOAD", "x"}),
                 "ERR Error unloading module: no such module with that name"));
    CHECK(is_err(f.run(s, {"DEBUG", "SLEEP", "0"}), errors::k_debug_not_allowed));
  }

  TEST_CASE("MODULE LIST is empty and needs no permission") {
    Fixture f;
    Session& s = f.client();
    RespValue v = f.run(s, {"MODULE", "LIST"});
    CHECK(v.type == RespValue::Type::array);
    CHECK(v.elements.empty());
  }

  TEST_CASE("FAILOVER parses its arguments, then needs replicas keyshift cannot have yet") {
    Fixture f;
    Session& s = f.client();
    CHECK(is_err(f.run(s, {"FAILOVER", "ABORT"}), "ERR No failover in progress."));
    CHECK(is_err(f.run(s, {"FAILOVER", "TIMEOUT", "0"}),
                 "ERR FAILOVER timeout must be greater than 0"));
    CHECK(is_err(f.run(s, {"FAILOVER", "BOGUS"}), errors::k_syntax));
    CHECK(is_err(f.run(s, {"FAILOVER"}), "ERR FAILOVER requires connected replicas."));
  }
}
