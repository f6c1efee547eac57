#include "migrate/import/command_stream.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using keyshift::migrate::CommandStreamApplier;
using keyshift::migrate::KeyRules;
using keyshift::migrate::PrefixRule;
using keyshift::migrate::StreamWriter;

namespace {

/// Records what reaches the target, one line per command.
class Recorder : public StreamWriter {
 public:
  keyshift::engine::Expected<bool, std::string> command(uint64_t db,
                                                        std::span<const std::string_view> argv,
                                                        uint64_t offset) override {
    std::string line = "db" + std::to_string(db);
    for (std::string_view a : argv) {
      line += " " + std::string(a);
    }
    lines.push_back(line + " @" + std::to_string(offset));
    return true;
  }
  keyshift::engine::Expected<bool, std::string> begin_transaction() override {
    lines.emplace_back("MULTI");
    return true;
  }
  keyshift::engine::Expected<bool, std::string> end_transaction(uint64_t offset) override {
    lines.push_back("EXEC @" + std::to_string(offset));
    return true;
  }
  std::vector<std::string> lines;
};

struct Fixture {
  keyshift::engine::CommandRegistry registry;
  Fixture() { keyshift::engine::register_all_families(registry); }
};

bool apply(CommandStreamApplier& a, std::initializer_list<std::string_view> argv, uint64_t off,
           std::string* error = nullptr) {
  std::vector<std::string_view> v(argv);
  auto r = a.apply(v, off);
  if (!r && error != nullptr) {
    *error = r.error();
  }
  return r.has_value();
}

}  // namespace

TEST_SUITE("migrate::command_stream") {
  TEST_CASE("SELECT is followed through --db-map and keys are renamed by their key specs") {
    Fixture f;
    KeyRules rules;
    rules.db_map[1] = 5;
    rules.rename.push_back(PrefixRule{std::nullopt, "app:", "new:", {}});
    Recorder out;
    CommandStreamApplier a(rules, f.registry, out);
    REQUIRE(apply(a, {"SELECT", "1"}, 10));
    REQUIRE(apply(a, {"SET", "app:x", "1"}, 20));
    REQUIRE(apply(a, {"MSET", "app:a", "1", "app:b", "2"}, 30));
    REQUIRE(apply(a, {"ZUNIONSTORE", "app:dst", "2", "app:z1", "app:z2", "WEIGHTS", "1", "2"}, 40));
    REQUIRE(apply(a, {"SELECT", "0"}, 50));
    REQUIRE(apply(a, {"RENAME", "app:old", "app:new"}, 60));
    REQUIRE(apply(a, {"MOVE", "app:m", "1"}, 70));
    CHECK(out.lines == std::vector<std::string>{
                           "db5 SET new:x 1 @20",
                           "db5 MSET new:a 1 new:b 2 @30",
                           "db5 ZUNIONSTORE new:dst 2 new:z1 new:z2 WEIGHTS 1 2 @40",
                           "db0 RENAME new:old new:new @60",
                           "db0 MOVE new:m 5 @70",
                       });
    CHECK(a.counts().renamed == 5);
  }

  TEST_CASE("MULTI/EXEC reaches the writer as one transaction carrying the EXEC's offset") {
    Fixture f;
    KeyRules rules;
    rules.exclude.push_back("skip:*");
    Recorder out;
    CommandStreamApplier a(rules, f.registry, out);
    REQUIRE(apply(a, {"MULTI"}, 5));
    REQUIRE(apply(a, {"INCR", "a"}, 10));
    CHECK(out.lines.empty());  // nothing before EXEC
    CHECK(a.in_transaction());
    REQUIRE(apply(a, {"INCR", "skip:b"}, 20));
    REQUIRE(apply(a, {"LPUSH", "c", "x"}, 30));
    REQUIRE(apply(a, {"EXEC"}, 40));
    CHECK(out.lines ==
          std::vector<std::string>{"MULTI", "db0 INCR a @0", "db0 LPUSH c x @0", "EXEC @40"});
    CHECK(a.counts().filtered == 1);
    CHECK(a.counts().transactions == 1);
  }

  TEST_CASE("what cannot be applied faithfully is refused with the reason") {
    Fixture f;
    KeyRules rules;
    rules.match.push_back("app:*");
    Recorder out;
    CommandStreamApplier a(rules, f.registry, out);
    std::string error;
    CHECK_FALSE(apply(a, {"RENAME", "app:a", "other:b"}, 1, &error));
    CHECK(error.find("keep and keys they leave out") != std::string::npos);
    CHECK_FALSE(apply(a, {"FLUSHALL"}, 2, &error));
    CHECK(error.find("FLUSHALL") != std::string::npos);
    CHECK_FALSE(apply(a, {"EVAL", "return 1", "1", "app:a"}, 3, &error));
    CHECK(error.find("script") != std::string::npos);
    CHECK_FALSE(apply(a, {"NOSUCHCOMMAND", "x"}, 4, &error));
    CHECK(error.find("does not know") != std::string::npos);
    // Keys all left out: dropped, not refused.
    CHECK(apply(a, {"DEL", "other:1", "other:2"}, 5));
    CHECK(out.lines.empty());
    KeyRules typed;
    typed.types.push_back(keyshift::engine::RdbKind::hash);
    CHECK(CommandStreamApplier::unsupported_rules(typed).has_value());
  }

  TEST_CASE("field-TTL commands become what a target without field TTLs keeps, per policy") {
    Fixture f;
    KeyRules rules;
    std::string error;
    {
      Recorder out;
      CommandStreamApplier a(rules, f.registry, out);  // --field-ttl fail
      CHECK_FALSE(apply(a, {"HPEXPIREAT", "h", "99999999999999", "FIELDS", "1", "f"}, 1, &error));
      CHECK(error.find("cannot store hash field TTLs") != std::string::npos);
    }
    rules.field_ttl = keyshift::migrate::FieldTtlPolicy::drop_ttl;
    {
      Recorder out;
      CommandStreamApplier a(rules, f.registry, out);
      REQUIRE(apply(a, {"HPEXPIREAT", "h", "99999999999999", "FIELDS", "2", "f", "g"}, 1));
      REQUIRE(apply(a, {"HPERSIST", "h", "FIELDS", "1", "f"}, 2));
      REQUIRE(apply(
          a, {"HSETEX", "h", "FNX", "PXAT", "99999999999999", "FIELDS", "2", "a", "1", "b", "2"},
          3));
      REQUIRE(apply(a, {"HSETEX", "h", "KEEPTTL", "FIELDS", "1", "c", "3"}, 4));
      REQUIRE(apply(a, {"HGETDEL", "h", "FIELDS", "1", "a"}, 5));
      CHECK(out.lines == std::vector<std::string>{"db0 HSET h a 1 b 2 @3", "db0 HSET h c 3 @4",
                                                  "db0 HDEL h a @5"});
      CHECK(a.counts().skipped == 2);
      CHECK_FALSE(apply(a, {"HSETEX", "h", "PX", "10", "FIELDS", "2", "a", "1"}, 6, &error));
      CHECK(error.find("FIELDS") != std::string::npos);
    }
    rules.field_ttl = keyshift::migrate::FieldTtlPolicy::drop_field;
    {
      Recorder out;
      CommandStreamApplier a(rules, f.registry, out);
      REQUIRE(apply(a, {"HPEXPIREAT", "h", "99999999999999", "GT", "FIELDS", "2", "f", "g"}, 1));
      REQUIRE(apply(a, {"HSETEX", "h", "EX", "100", "FIELDS", "1", "a", "1"}, 2));
      CHECK(out.lines == std::vector<std::string>{"db0 HDEL h f g @1", "db0 HDEL h a @2"});
      CHECK_FALSE(apply(a, {"HPERSIST", "h", "FIELDS", "1", "f"}, 3, &error));
      CHECK(error.find("drop-field") != std::string::npos);
      CHECK_FALSE(apply(a, {"HSETEX", "h", "KEEPTTL", "FIELDS", "1", "c", "3"}, 4, &error));
      CHECK(error.find("KEEPTTL") != std::string::npos);
    }
  }

  TEST_CASE("without rules everything passes, FLUSHALL and FUNCTION LOAD included") {
    Fixture f;
    KeyRules rules;
    Recorder out;
    CommandStreamApplier a(rules, f.registry, out);
    REQUIRE(apply(a,
                  {"FUNCTION", "LOAD",
                   "#!lua name=x\nserver.register_function('f', function() return 1 end)"},
                  1));
    REQUIRE(apply(a, {"FLUSHALL"}, 2));
    REQUIRE(apply(a, {"PING"}, 3));
    CHECK(out.lines.size() == 2);
    CHECK(a.counts().skipped == 1);
  }
}
