#include "engine/commands/command_docs.hpp"
#include "engine/commands/registry.hpp"
#include "engine/engine.hpp"
#include "engine/util/clock.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ks = keyshift::engine;

namespace {

std::vector<std::string> strings(const ks::RespValue& v) {
  std::vector<std::string> out;
  for (const ks::RespValue& e : v.elements) {
    out.push_back(e.str);
  }
  return out;
}

/// COMMAND INFO's flag words for Valkey's flag bits, in the order Valkey prints them.
std::vector<std::string> valkey_flag_words(uint32_t flags) {
  static constexpr std::pair<uint32_t, std::string_view> k_words[] = {
      {ks::k_vf_write, "write"},
      {ks::k_vf_readonly, "readonly"},
      {ks::k_vf_denyoom, "denyoom"},
      {ks::k_vf_admin, "admin"},
      {ks::k_vf_pubsub, "pubsub"},
      {ks::k_vf_noscript, "noscript"},
      {ks::k_vf_blocking, "blocking"},
      {ks::k_vf_loading, "loading"},
      {ks::k_vf_stale, "stale"},
      {ks::k_vf_skip_monitor, "skip_monitor"},
      {ks::k_vf_skip_slowlog, "skip_slowlog"},
      {ks::k_vf_asking, "asking"},
      {ks::k_vf_fast, "fast"},
      {ks::k_vf_no_auth, "no_auth"},
      {ks::k_vf_no_mandatory_keys, "no_mandatory_keys"},
      {ks::k_vf_no_async_loading, "no_async_loading"},
      {ks::k_vf_no_multi, "no_multi"},
      {ks::k_vf_movablekeys, "movablekeys"},
      {ks::k_vf_allow_busy, "allow_busy"},
  };
  std::vector<std::string> out;
  for (const auto& [bit, word] : k_words) {
    if ((flags & bit) != 0) {
      out.emplace_back(word);
    }
  }
  return out;
}

/// Hash field expiry (HEXPIRE and its family) came with Redis 7.4 and Valkey 9: Valkey
/// 8.0.1's commands.def has no row for them, so Redis 7.4's COMMAND INFO is the reference.
struct RedisOnlyRow {
  std::string_view name;
  int arity;
  uint32_t flags;
  std::string_view acl;
};
constexpr uint32_t k_w = ks::k_cmd_write;
constexpr uint32_t k_r = ks::k_cmd_readonly;
constexpr uint32_t k_f = ks::k_cmd_fast;
constexpr uint32_t k_d = ks::k_cmd_denyoom;
constexpr RedisOnlyRow k_redis_7_4_only[] = {
    {"hexpire", -6, k_w | k_d | k_f, "@write @hash @fast"},
    {"hpexpire", -6, k_w | k_d | k_f, "@write @hash @fast"},
    {"hexpireat", -6, k_w | k_d | k_f, "@write @hash @fast"},
    {"hpexpireat", -6, k_w | k_d | k_f, "@write @hash @fast"},
    {"httl", -5, k_r | k_f, "@read @hash @fast"},
    {"hpttl", -5, k_r | k_f, "@read @hash @fast"},
    {"hexpiretime", -5, k_r | k_f, "@read @hash @fast"},
    {"hpexpiretime", -5, k_r | k_f, "@read @hash @fast"},
    {"hpersist", -5, k_w | k_f, "@write @hash @fast"},
};

const RedisOnlyRow* redis_only_row(std::string_view name) {
  for (const RedisOnlyRow& row : k_redis_7_4_only) {
    if (row.name == name) {
      return &row;
    }
  }
  return nullptr;
}

struct Table {
  ks::ManualClock clock;
  ks::Engine engine{ks::EngineConfig{}, clock};
  ks::Session& me = engine.open_session(nullptr);

  ks::RespValue info(const std::string& name) {
    std::vector<std::string_view> argv{"COMMAND", "INFO", name};
    ks::RespValue v = engine.run(me, argv);
    REQUIRE(v.elements.size() == 1);
    return v.elements[0];
  }
};

/// Checks one registered command against Valkey 8's row for it; returns false when Valkey
/// has none.
bool matches_valkey(Table& t, const ks::Command& c) {
  const ks::CommandDoc* doc = ks::find_command_doc(c.full_name);
  if (doc == nullptr) {
    return false;
  }
  CHECK(c.spec.arity == doc->arity);
  CHECK(c.spec.first_key == doc->first_key);
  CHECK(c.spec.last_key == doc->last_key);
  CHECK(c.spec.step == doc->step);
  ks::RespValue info = t.info(c.full_name);
  REQUIRE(info.elements.size() >= 7);
  CHECK(strings(info.elements[2]) == valkey_flag_words(doc->flags));
  CHECK(((c.spec.flags & ks::k_cmd_protected) != 0) == ((doc->flags & ks::k_vf_protected) != 0));
  std::string categories;
  std::vector<std::string> listed;
  for (size_t i = 0; i < std::size(ks::k_acl_category_names); ++i) {
    if (((doc->acl >> i) & 1u) != 0) {
      listed.push_back("@" + std::string(ks::k_acl_category_names[i]));
      categories += (categories.empty() ? "" : " ") + listed.back();
    }
  }
  CHECK(strings(info.elements[6]) == listed);
  // The row's own category text names them all, the implicit ones (from flags) included.
  CHECK(c.spec.acl_categories == categories);
  return true;
}

}  // namespace

TEST_SUITE("command table") {
  TEST_CASE("every registered command matches Valkey 8's commands.def or Redis 7.4's row") {
    Table t;
    size_t checked = 0;
    auto check = [&](const ks::Command& c) {
      CAPTURE(c.full_name);
      if (matches_valkey(t, c)) {
        ++checked;
        return;
      }
      const RedisOnlyRow* row = redis_only_row(c.full_name);
      REQUIRE_MESSAGE(row != nullptr, "neither Valkey 8.0.1 nor Redis 7.4 has this command");
      CHECK(c.spec.arity == row->arity);
      CHECK(c.spec.flags == row->flags);
      CHECK(c.spec.first_key == 1);
      CHECK(c.spec.last_key == 1);
      CHECK(c.spec.step == 1);
      CHECK(c.spec.acl_categories == row->acl);
      ++checked;
    };
    for (const ks::Command* c : t.engine.registry().commands()) {
      check(*c);
      for (const ks::Command* sub : c->subcommands) {
        check(*sub);
      }
    }
    CHECK(checked > 200);
  }

  TEST_CASE("the commands Valkey 8 lacks are registered, so their rows are not stale") {
    Table t;
    for (const RedisOnlyRow& row : k_redis_7_4_only) {
      CAPTURE(row.name);
      CHECK(ks::find_command_doc(row.name) == nullptr);
      CHECK(t.engine.registry().find(row.name) != nullptr);
    }
  }

  TEST_CASE("a renamed command is reached by its new name only, and keeps its own name") {
    ks::CommandRegistry registry;
    ks::register_all_families(registry);
    ks::Command* config = registry.find("config");
    REQUIRE(config != nullptr);
    size_t live = registry.live_commands().size();
    CHECK(registry.rename("CONFIG", "ks-admin") == ks::RenameStatus::ok);
    CHECK(registry.find("config") == nullptr);
    CHECK(registry.find("KS-ADMIN") == config);
    CHECK(registry.find_sub(*config, "get") != nullptr);
    CHECK(registry.find_original("config") == config);
    CHECK(config->full_name == "config");
    CHECK(registry.live_commands().size() == live);
    CHECK(registry.rename("flushall", "") == ks::RenameStatus::ok);
    CHECK(registry.find("flushall") == nullptr);
    CHECK(registry.live_commands().size() == live - 1);
    CHECK(registry.commands().size() == live);
    CHECK(registry.rename("flushall", "x") == ks::RenameStatus::no_such_command);
    CHECK(registry.rename("get", "set") == ks::RenameStatus::target_exists);
  }

  TEST_CASE("an engine given a rename of no command says so at start") {
    ks::ManualClock clock;
    ks::EngineConfig config;
    config.renamed_commands.push_back({"nosuch", "x", "a.conf", 3});
    ks::Engine engine{config, clock};
    CHECK(engine.config_startup_error() == "a.conf:3: No such command in rename-command");
  }
}
