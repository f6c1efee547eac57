#include "compat/kb/knowledge_base.hpp"

#include <doctest/doctest.h>

#include <set>
#include <string>

namespace kb = keyshift::compat::kb;

namespace {

kb::ProfileId profile(std::string_view name) {
  auto id = kb::find_profile(name);
  REQUIRE(id.has_value());
  return *id;
}

}  // namespace

TEST_SUITE("knowledge base") {
  TEST_CASE("profiles are found by name, with or without a patch version") {
    CHECK(kb::profile_info(profile("valkey-8.0")).name == "valkey-8.0");
    CHECK(kb::profile_info(profile("valkey-8.0.1")).name == "valkey-8.0");
    CHECK(kb::profile_info(profile("Redis 7.4.2")).name == "redis-7.4");
    CHECK_FALSE(kb::find_profile("valkey-5.0").has_value());
    CHECK_FALSE(kb::find_profile("dragonfly-1.0").has_value());
    CHECK_FALSE(kb::find_profile("valkey-").has_value());
  }

  TEST_CASE("a running server is placed by valkey_version, not by its frozen redis_version") {
    auto v = kb::profile_for_server("valkey", "8.0.1", "7.2.4");
    REQUIRE(v.has_value());
    CHECK(kb::profile_info(*v).name == "valkey-8.0");
    auto r = kb::profile_for_server("", "", "7.0.15");
    REQUIRE(r.has_value());
    CHECK(kb::profile_info(*r).name == "redis-7.0");
  }

  TEST_CASE("the exact tables come from release tags and say so") {
    CHECK(kb::profile_info(profile("redis-7.0")).exact);
    CHECK(kb::profile_info(profile("valkey-8.0")).exact);
    CHECK_FALSE(kb::profile_info(profile("redis-6.2")).exact);
  }

  TEST_CASE("commands carry arity, flags, ACL categories and the legacy key range") {
    const kb::KbCommand* get = kb::find_command(profile("valkey-8.0"), "GET");
    REQUIRE(get != nullptr);
    CHECK(get->arity == 2);
    CHECK(get->flags == "readonly fast");
    CHECK(get->acl == "@string @read @fast");
    CHECK(get->first_key == 1);
    CHECK(get->last_key == 1);
    CHECK(get->step == 1);
    const kb::KbCommand* mset = kb::find_command(profile("redis-7.0"), "mset");
    REQUIRE(mset != nullptr);
    CHECK(mset->last_key == -1);
    CHECK(mset->step == 2);
  }

  TEST_CASE("subcommands are found by either spelling") {
    auto id = profile("redis-7.2");
    const kb::KbCommand* a = kb::find_command(id, "CONFIG GET");
    const kb::KbCommand* b = kb::find_command(id, "config|get");
    REQUIRE(a != nullptr);
    CHECK(a == b);
  }

  TEST_CASE("hash field expiry is in Redis 7.4 and not in Valkey 8.0") {
    CHECK(kb::find_command(profile("redis-7.4"), "hexpire") != nullptr);
    CHECK(kb::find_command(profile("redis-7.2"), "hexpire") == nullptr);
    CHECK(kb::find_command(profile("valkey-8.0"), "hexpire") == nullptr);
    auto first = kb::first_profile_with("redis", "hexpire");
    REQUIRE(first.has_value());
    CHECK(kb::profile_info(*first).name == "redis-7.4");
  }

  TEST_CASE("Valkey-only commands and options are in the Valkey tables only") {
    CHECK(kb::find_command(profile("valkey-8.0"), "script|show") != nullptr);
    CHECK(kb::find_command(profile("redis-7.4"), "script|show") == nullptr);
    const kb::KbCommand* hscan = kb::find_command(profile("valkey-8.0"), "hscan");
    REQUIRE(hscan != nullptr);
    CHECK(kb::has_argument(*hscan, "novalues"));
    const kb::KbCommand* old_hscan = kb::find_command(profile("valkey-7.2"), "hscan");
    REQUIRE(old_hscan != nullptr);
    CHECK_FALSE(kb::has_argument(*old_hscan, "NOVALUES"));
    const kb::KbCommand* set = kb::find_command(profile("redis-7.0"), "set");
    REQUIRE(set != nullptr);
    CHECK(kb::argument_since(*set, "get") == "6.2.0");
    CHECK(kb::argument_since(*set, "NX").empty());
    CHECK(kb::has_argument(*set, "NX"));
    CHECK_FALSE(kb::has_argument(*set, "IFEQ"));
  }

  TEST_CASE("Redis 6.2 is derived from 7.0 by the since fields") {
    auto r62 = profile("redis-6.2");
    CHECK(kb::find_command(r62, "getex") != nullptr);  // 6.2.0
    CHECK(kb::find_command(r62, "lmpop") == nullptr);  // 7.0.0
    CHECK(kb::find_command(r62, "function|load") == nullptr);
  }

  TEST_CASE("every table has each command once, sorted, and a plausible size") {
    for (kb::ProfileId id : kb::all_profiles()) {
      auto rows = kb::commands_of(id);
      CAPTURE(kb::profile_info(id).name);
      CHECK(rows.size() > 250);
      std::set<std::string_view> names;
      for (const kb::KbCommand* row : rows) {
        CHECK(names.insert(row->name).second);
      }
    }
  }

  TEST_CASE("sentinel-only commands are not in the server tables") {
    CHECK(kb::find_command(profile("redis-7.0"), "sentinel|masters") == nullptr);
  }

  TEST_CASE("behaviour notes apply to the ranges they name") {
    const kb::KbNote* frozen = nullptr;
    const kb::KbNote* renamed = nullptr;
    for (const kb::KbNote* n : kb::notes()) {
      CHECK_FALSE(n->source.empty());
      if (n->id == "info.redis_version-frozen") {
        frozen = n;
      }
      if (n->id == "info.redis_mode-renamed") {
        renamed = n;
      }
    }
    REQUIRE(frozen != nullptr);
    REQUIRE(renamed != nullptr);
    CHECK(kb::applies_to(*frozen, profile("valkey-7.2")));
    CHECK_FALSE(kb::applies_to(*frozen, profile("redis-7.2")));
    CHECK(kb::applies_to(*renamed, profile("valkey-9.1")));
    CHECK_FALSE(kb::applies_to(*renamed, profile("valkey-7.2")));
  }

  TEST_CASE("module commands are placed in their family") {
    const kb::KbModuleFamily* json = kb::module_family_of("json.set");
    REQUIRE(json != nullptr);
    CHECK(json->module == "ReJSON");
    const kb::KbModuleFamily* vset = kb::module_family_of("VSIM");
    REQUIRE(vset != nullptr);
    CHECK(vset->module == "vectorset");
    CHECK(kb::module_family_of("GET") == nullptr);
    CHECK(kb::module_family_of("JSON.") == nullptr);
  }

  TEST_CASE("each profile knows the RDB version it writes") {
    CHECK(kb::rdb_version_written(profile("redis-7.0")) == 10);
    CHECK(kb::rdb_version_written(profile("redis-7.4")) == 12);
    CHECK(kb::rdb_version_written(profile("valkey-8.0")) == 11);
    CHECK(kb::rdb_version_written(profile("valkey-9.0")) == 80);
    // Every profile has RDB facts (rdb inspect --target and import judge by them).
    for (kb::ProfileId id : kb::all_profiles()) {
      CHECK_MESSAGE(kb::rdb_version_written(id) > 0, kb::profile_info(id).name);
    }
  }

  TEST_CASE("RDB facts say what each line reads, found by line or patch version") {
    const kb::KbRdbFacts* v8 = kb::find_rdb_facts("valkey-8.0.1");
    REQUIRE(v8 != nullptr);
    CHECK(v8->line == "valkey-8.0");
    CHECK(v8->max_read == 11);
    CHECK_FALSE(v8->field_ttls);
    CHECK(v8->valkey_api);
    const kb::KbRdbFacts* r74 = kb::find_rdb_facts("Redis-7.4");
    REQUIRE(r74 != nullptr);
    CHECK(r74->max_read == 12);
    CHECK(r74->max_type == 25);
    CHECK(r74->field_ttls);
    CHECK(r74->slot_info);
    CHECK_FALSE(r74->valkey_api);
    // Valkey 9.2 has RDB facts though no command table: its Path Hashes are version 81.
    const kb::KbRdbFacts* v92 = kb::find_rdb_facts("valkey-9.2");
    REQUIRE(v92 != nullptr);
    CHECK(v92->max_read == 81);
    CHECK(kb::find_rdb_facts("valkey-8.0x") == nullptr);
    CHECK(kb::find_rdb_facts("valkey-7") == nullptr);
    CHECK(kb::find_rdb_facts("keydb-6.3") == nullptr);
    // Each project's lines read ever newer versions.
    int last_redis = 0;
    int last_valkey = 0;
    for (const kb::KbRdbFacts& f : kb::rdb_facts()) {
      int& last = f.line.starts_with("redis") ? last_redis : last_valkey;
      CHECK_MESSAGE(f.max_read >= last, f.line);
      last = f.max_read;
    }
  }
}
