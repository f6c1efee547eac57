#pragma once

#include "migrate/key_rules.hpp"

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace keyshift::cli {

/// The key-rule flags `rdb convert` and `import` share, as typed.
struct KeyRuleFlags {
  std::vector<std::string> match;
  std::vector<std::string> exclude;
  std::vector<std::string> types;
  std::vector<std::string> db_map;
  std::vector<std::string> rename_prefix;
  std::string field_ttl = "fail";
  bool skip_modules = false;
};

/// Declares --match, --exclude, --type, --db-map, --rename-prefix, --field-ttl and
/// --skip-modules on `cmd`, bound to `flags`.
void add_key_rule_flags(CLI::App& cmd, KeyRuleFlags& flags);

/// The rules the flags name; a malformed value is a UserError (exit 2) naming the flag.
migrate::KeyRules to_key_rules(const KeyRuleFlags& flags);

}  // namespace keyshift::cli
