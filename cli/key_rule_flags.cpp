#include "cli/key_rule_flags.hpp"

#include "cli/user_error.hpp"

#include <fmt/core.h>

namespace keyshift::cli {

void add_key_rule_flags(CLI::App& cmd, KeyRuleFlags& flags) {
  auto repeatable = [](CLI::Option* o) {
    o->expected(1)->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  };
  repeatable(cmd.add_option("--match", flags.match,
                            "Keep only keys matching this glob pattern (repeatable: any of them)"));
  repeatable(cmd.add_option("--exclude", flags.exclude,
                            "Leave out keys matching this glob pattern (repeatable)"));
  repeatable(cmd.add_option("--type", flags.types,
                            "Keep only keys of this type: string, list, set, zset, hash, stream "
                            "(repeatable)"));
  repeatable(cmd.add_option("--db-map", flags.db_map, "Move database SRC to DST (SRC:DST)"));
  repeatable(cmd.add_option("--rename-prefix", flags.rename_prefix,
                            "Rename keys starting with OLD to start with NEW (OLD=NEW)"));
  cmd.add_option("--field-ttl", flags.field_ttl,
                 "Hash field TTLs on a target without them: fail, drop-ttl or drop-field")
      ->check(CLI::IsMember({"fail", "drop-ttl", "drop-field"}));
  cmd.add_flag("--skip-modules", flags.skip_modules, "Drop module keys instead of failing");
}

migrate::KeyRules to_key_rules(const KeyRuleFlags& flags) {
  migrate::KeyRules rules;
  rules.match = flags.match;
  rules.exclude = flags.exclude;
  rules.skip_modules = flags.skip_modules;
  rules.field_ttl = migrate::parse_field_ttl_policy(flags.field_ttl).value();
  for (const std::string& name : flags.types) {
    auto kind = migrate::parse_value_kind(name);
    if (!kind) {
      throw UserError(fmt::format("keyshift: --type {}: expected string, list, set, zset, hash or "
                                  "stream",
                                  name),
                      2);
    }
    rules.types.push_back(*kind);
  }
  for (const std::string& pair : flags.db_map) {
    auto mapping = migrate::parse_db_mapping(pair);
    if (!mapping || !rules.db_map.emplace(mapping->first, mapping->second).second) {
      throw UserError(fmt::format("keyshift: --db-map {}: expected SRC:DST database numbers, "
                                  "each source once",
                                  pair),
                      2);
    }
  }
  for (const std::string& text : flags.rename_prefix) {
    auto rule = migrate::parse_prefix_rule(text);
    if (!rule) {
      throw UserError(fmt::format("keyshift: --rename-prefix {}: expected OLD=NEW with a "
                                  "non-empty OLD",
                                  text),
                      2);
    }
    rules.rename.push_back(std::move(*rule));
  }
  return rules;
}

}  // namespace keyshift::cli
