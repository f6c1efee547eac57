#include "tests/unit/engine/commands/command_test_util.hpp"

#include "engine/commands/errors.hpp"

#include <doctest/doctest.h>

#include <string>
#include <string_view>

namespace {

using keyshift::engine::RespValue;
using keyshift::engine::command_test::err;
using keyshift::engine::command_test::Harness;
namespace errors = keyshift::engine::errors;

// The function-name check raises from Lua, whose error gets its own ERR (Valkey's
// luaPushError) inside FUNCTION LOAD's wrapper.
constexpr std::string_view k_name_format =
    "ERR Error registering functions: ERR Library names can only contain letters, numbers, or "
    "underscores(_) and must be at least one character long";

std::string library(std::string_view name, std::string_view function) {
  return "#!lua name=" + std::string(name) + "\nserver.register_function('" +
         std::string(function) + "', function() return 1 end)";
}

}  // namespace

TEST_SUITE("function_family") {
  TEST_CASE("FUNCTION RESTORE APPEND of a library that exists names it without quotes") {
    Harness h;
    std::string code = library("test", "test");
    h({"FUNCTION", "LOAD", code});
    RespValue dump = h.raw({"FUNCTION", "DUMP"});
    REQUIRE(dump.type == RespValue::Type::bulk);
    CHECK(h({"FUNCTION", "RESTORE", dump.str, "APPEND"}) == err("ERR Library test already exists"));
    CHECK(h({"FUNCTION", "RESTORE", dump.str}) == err("ERR Library test already exists"));
    CHECK(h({"FUNCTION", "LOAD", code}) == err("ERR Library 'test' already exists"));
    CHECK(h({"FUNCTION", "RESTORE", dump.str, "REPLACE"}) == "OK");
    CHECK(h({"FCALL", "test", "0"}) == "(integer) 1");
  }

  TEST_CASE("FUNCTION FLUSH refuses an unknown mode and an extra argument as Valkey words it") {
    Harness h;
    CHECK(h({"FUNCTION", "FLUSH", "bad_arg"}) == err(errors::k_function_flush_mode));
    CHECK(h({"FUNCTION", "flush", "sync", "extra_arg"}) ==
          err("ERR unknown subcommand or wrong number of arguments for 'flush'. Try FUNCTION "
              "HELP."));
    CHECK(h({"FUNCTION", "FLUSH", "async"}) == "OK");
  }

  TEST_CASE("library and function names outside letters, digits and _ are refused") {
    Harness h;
    CHECK(h({"FUNCTION", "LOAD", library("a-b", "f")}) ==
          err("ERR Library names can only contain letters, numbers, or underscores(_) and must "
              "be at least one character long"));
    CHECK(h({"FUNCTION", "LOAD", library("lib2", "test\\0test")}) == err(k_name_format));
    CHECK(h({"FUNCTION", "LOAD", library("lib2", "")}) == err(k_name_format));
    CHECK(h({"FUNCTION", "LIST"}) == "(empty array)");
  }

  TEST_CASE("FUNCTION STATS shows no running script when none runs") {
    Harness h;
    h({"FUNCTION", "LOAD", library("lib", "f")});
    RespValue stats = h.raw({"FUNCTION", "STATS"});
    REQUIRE(stats.elements.size() == 4);
    CHECK(stats.elements[0].str == "running_script");
    CHECK(stats.elements[1].type == RespValue::Type::null);
    CHECK(stats.elements[2].str == "engines");
  }
}
