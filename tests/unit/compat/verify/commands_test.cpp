#include "compat/verify/commands.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace compat = keyshift::compat;
namespace kb = keyshift::compat::kb;

namespace {

const kb::KbCommand& row(std::string_view name) {
  const kb::KbCommand* c = kb::find_command(*kb::find_profile("valkey-8.0"), name);
  REQUIRE(c != nullptr);
  return *c;
}

using Args = std::vector<std::string>;

bool has_case(const std::vector<compat::CommandCase>& cases, const Args& args) {
  return std::any_of(cases.begin(), cases.end(),
                     [&](const compat::CommandCase& c) { return c.args == args; });
}

}  // namespace

TEST_SUITE("verify commands") {
  TEST_CASE("SET's cases cover the minimal call, its options and too few arguments") {
    auto cases = compat::generate_cases(row("set"), "p:");
    REQUIRE(cases.size() >= 4);
    CHECK(cases[0].kind == "minimal");
    CHECK(cases[0].args == Args{"set", "p:k:string", "v"});
    CHECK(has_case(cases, Args{"set", "p:k:string", "v", "NX"}));
    CHECK(has_case(cases, Args{"set", "p:k:string", "v", "XX"}));
    CHECK(has_case(cases, Args{"set", "p:k:string", "v", "GET"}));
    CHECK(has_case(cases, Args{"set", "p:k:string"}));  // wrong arity
  }

  TEST_CASE("every key is under the prefix, the first one the fixture of the command's type") {
    auto cases = compat::generate_cases(row("lmove"), "p:");
    REQUIRE_FALSE(cases.empty());
    CHECK(cases[0].fixture == "list");
    CHECK(cases[0].args[1] == "p:k:list");
    CHECK(cases[0].args[2] == "p:d1");
    auto wrong = std::find_if(cases.begin(), cases.end(),
                              [](const compat::CommandCase& c) { return c.kind == "wrong type"; });
    REQUIRE(wrong != cases.end());
    CHECK(wrong->args[1] == "p:k:hash");
  }

  TEST_CASE("subcommands keep their container and patterns stay in the prefix") {
    auto cases = compat::generate_cases(row("object|encoding"), "p:");
    REQUIRE_FALSE(cases.empty());
    CHECK(cases[0].args == Args{"object", "encoding", "p:k:string"});
    auto keys = compat::generate_cases(row("keys"), "p:");
    REQUIRE_FALSE(keys.empty());
    CHECK(keys[0].args == Args{"keys", "p:*"});
  }

  TEST_CASE("a case that would write another database is not generated") {
    for (const compat::CommandCase& c : compat::generate_cases(row("copy"), "p:", 20)) {
      CHECK(std::find(c.args.begin(), c.args.end(), "DB") == c.args.end());
    }
  }

  TEST_CASE("state-changing, admin and blocking commands are skipped, writes in read-only mode") {
    CHECK_FALSE(compat::skip_reason(row("flushdb"), false).empty());
    CHECK_FALSE(compat::skip_reason(row("config|set"), false).empty());
    CHECK(compat::skip_reason(row("config|get"), false).empty());
    CHECK_FALSE(compat::skip_reason(row("blpop"), false).empty());
    CHECK(compat::skip_reason(row("set"), false).empty());
    CHECK_FALSE(compat::skip_reason(row("set"), true).empty());
    CHECK(compat::skip_reason(row("get"), true).empty());
  }
}
