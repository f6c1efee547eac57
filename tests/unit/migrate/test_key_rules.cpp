#include "migrate/key_rules.hpp"

#include <doctest/doctest.h>

namespace m = keyshift::migrate;
namespace ks = keyshift::engine;

namespace {

ks::RdbKey key_of(std::string name, ks::RdbKind kind = ks::RdbKind::string, uint64_t db = 0) {
  ks::RdbKey k;
  k.key = std::move(name);
  k.db = db;
  k.value.kind = kind;
  return k;
}

m::KeyVerdict judge(const m::KeyRules& rules, ks::RdbKey& k, m::KeyEffects& effects) {
  return m::apply_key_rules(rules, k, 1'000, effects);
}

}  // namespace

TEST_SUITE("migrate::key_rules") {
  TEST_CASE("a key passes when it matches any --match and no --exclude") {
    m::KeyRules rules;
    rules.match = {"user:*", "session:*"};
    rules.exclude = {"session:tmp*"};
    CHECK(m::key_selected(rules, "user:1"));
    CHECK(m::key_selected(rules, "session:9"));
    CHECK_FALSE(m::key_selected(rules, "session:tmp1"));
    CHECK_FALSE(m::key_selected(rules, "other"));
  }

  TEST_CASE("types, expiry and modules decide before any change is made") {
    m::KeyRules rules;
    rules.types = {ks::RdbKind::hash};
    m::KeyEffects effects;
    auto s = key_of("s");
    CHECK(judge(rules, s, effects) == m::KeyVerdict::filtered);
    auto h = key_of("h", ks::RdbKind::hash);
    h.expire_ms = 1'000;  // not after now: expired
    CHECK(judge(rules, h, effects) == m::KeyVerdict::expired);
    h.expire_ms = 1'001;
    CHECK(judge(rules, h, effects) == m::KeyVerdict::keep);

    m::KeyRules plain;
    auto mod = key_of("mod", ks::RdbKind::module);
    CHECK(judge(plain, mod, effects) == m::KeyVerdict::blocked_module);
    plain.skip_modules = true;
    CHECK(judge(plain, mod, effects) == m::KeyVerdict::module_dropped);
  }

  TEST_CASE(
      "a prefix rule renames whole prefixes, spares other sites' longer ones, and keeps "
      "to its database") {
    m::PrefixRule rule = *m::parse_prefix_rule("wp_=wp_a:");
    rule.exclude = {"wp_b"};
    CHECK(m::apply_prefix_rule(rule, 0, "wp_options") == "wp_a:options");
    CHECK_FALSE(m::apply_prefix_rule(rule, 0, "wp_bsite:x"));
    CHECK_FALSE(m::apply_prefix_rule(rule, 0, "xwp_1"));
    rule.db = 2;
    CHECK_FALSE(m::apply_prefix_rule(rule, 0, "wp_options"));
    CHECK(m::apply_prefix_rule(rule, 2, "wp_options") == "wp_a:options");

    m::KeyRules rules;
    rules.rename = {*m::parse_prefix_rule("old:=new:")};
    rules.db_map = {{3, 0}};
    auto k = key_of("old:1", ks::RdbKind::string, 3);
    m::KeyEffects effects;
    REQUIRE(judge(rules, k, effects) == m::KeyVerdict::keep);
    CHECK(k.key == "new:1");
    CHECK(effects.renamed);
    CHECK(effects.moved);
    CHECK(effects.target_db == 0);
    CHECK_FALSE(m::parse_prefix_rule("=x"));
    CHECK_FALSE(m::parse_prefix_rule("nothing"));
  }

  TEST_CASE("field TTLs follow the policy when the target cannot store them") {
    auto hash = [] {
      auto k = key_of("h", ks::RdbKind::hash);
      k.value.hash = {{"a", "1", -1}, {"b", "2", 5'000}, {"c", "3", 500}};
      return k;
    };
    m::KeyRules rules;
    m::KeyEffects effects;
    auto k = hash();
    CHECK(judge(rules, k, effects) == m::KeyVerdict::blocked_field_ttl);
    rules.field_ttl = m::FieldTtlPolicy::drop_ttl;
    k = hash();
    REQUIRE(judge(rules, k, effects) == m::KeyVerdict::keep);
    CHECK(effects.field_ttls_dropped == 1);  // c had expired and is gone either way
    CHECK(k.value.hash.size() == 2);
    rules.field_ttl = m::FieldTtlPolicy::drop_field;
    k = hash();
    REQUIRE(judge(rules, k, effects) == m::KeyVerdict::keep);
    CHECK(k.value.hash.size() == 1);
    CHECK(effects.fields_dropped == 1);
    rules.target_field_ttls = true;
    k = hash();
    REQUIRE(judge(rules, k, effects) == m::KeyVerdict::keep);
    CHECK(k.value.hash.size() == 3);
  }

  TEST_CASE("database mappings and type names are read strictly") {
    CHECK(m::parse_db_mapping("1:2") == std::make_pair(uint64_t{1}, uint64_t{2}));
    CHECK_FALSE(m::parse_db_mapping("1:"));
    CHECK_FALSE(m::parse_db_mapping("a:1"));
    CHECK_FALSE(m::parse_db_mapping("1:2:3"));
    CHECK(m::parse_value_kind("zset") == ks::RdbKind::zset);
    CHECK_FALSE(m::parse_value_kind("ZSET"));
  }
}
