#include "tests/unit/engine/commands/conn_test_util.hpp"

#include "engine/commands/errors.hpp"
#include "engine/engine.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

using namespace keyshift::engine::conn_test;
using keyshift::engine::RespValue;
using keyshift::engine::Session;
namespace errors = keyshift::engine::errors;

namespace {

bool contains(const RespValue& list, std::string_view name) {
  return std::any_of(list.elements.begin(), list.elements.end(),
                     [&](const RespValue& e) { return e.str == name; });
}

}  // namespace

TEST_SUITE("engine::cluster_family") {
  TEST_CASE("every CLUSTER subcommand answers as a standalone Valkey: cluster support disabled") {
    Fixture f;
    Session& s = f.client();
    CHECK(is_err(f.run(s, {"CLUSTER", "HELP"}), errors::k_cluster_disabled));
    CHECK(is_err(f.run(s, {"CLUSTER", "INFO"}), errors::k_cluster_disabled));
    CHECK(is_err(f.run(s, {"cluster", "keyslot", "foo"}), errors::k_cluster_disabled));
    CHECK(is_err(f.run(s, {"CLUSTER", "SETSLOT", "1", "STABLE"}), errors::k_cluster_disabled));
  }

  TEST_CASE("CLUSTER arity and unknown subcommands are rejected as for any container") {
    Fixture f;
    Session& s = f.client();
    CHECK(is_err(f.run(s, {"CLUSTER", "INFO", "extra"}),
                 "ERR wrong number of arguments for 'cluster|info' command"));
    CHECK(is_err(f.run(s, {"CLUSTER", "nosuch"}),
                 "ERR unknown subcommand 'nosuch'. Try CLUSTER HELP."));
    CHECK(is_err(f.run(s, {"CLUSTER"}), "ERR wrong number of arguments for 'cluster' command"));
  }

  TEST_CASE("COMMAND LIST FILTERBY PATTERN finds CLUSTER's subcommands next to CLIENT's") {
    Fixture f;
    Session& s = f.client();
    RespValue help = f.run(s, {"COMMAND", "LIST", "FILTERBY", "PATTERN", "cl*help"});
    CHECK(contains(help, "client|help"));
    CHECK(contains(help, "cluster|help"));
    RespValue info = f.run(s, {"COMMAND", "INFO", "cluster|setslot"});
    REQUIRE(info.elements.size() == 1);
    REQUIRE(info.elements[0].elements.size() >= 3);
    CHECK(is_int(info.elements[0].elements[1], -4));
    CHECK(contains(info.elements[0].elements[2], "admin"));
    CHECK(contains(info.elements[0].elements[2], "stale"));
    // Valkey hides may_replicate from COMMAND INFO on purpose.
    CHECK_FALSE(contains(info.elements[0].elements[2], "may_replicate"));
  }
}
