#pragma once

#include "engine/util/expected.hpp"

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

// What each rewrite target accepts in its config file: the data of targets.toml, read with
// toml++ (see that file for the meaning of every field).
namespace keyshift::migrate {

/// A value the target refuses for a directive, and what to write instead.
struct ValueFix {
  std::string directive;
  std::string value;
  std::string replace;  ///< empty with `drop`
  bool drop = false;
  std::string reason;
};

/// A default that differs from Redis' when the directive is absent.
struct DefaultChange {
  std::string directive;
  std::string redis_default;
  std::string target_default;
};

/// One target server, with inheritance resolved.
struct TargetTable {
  std::string name;     ///< e.g. "valkey-8.1"
  std::string server;   ///< "valkey" or "keyshift"
  std::string version;  ///< e.g. "8.1"
  std::set<std::string> directives;
  std::set<std::string> deprecated;
  std::map<std::string, std::string> aliases;    ///< old name -> primary
  std::map<std::string, std::string> translate;  ///< unknown name -> known name
  std::vector<ValueFix> values;
  std::vector<DefaultChange> defaults;

  /// True when the target reads `name` (lower-case) as a directive, deprecated ones included.
  bool accepts(std::string_view directive) const;
};

/// Facts about Redis that hold for every target.
struct RedisFacts {
  std::map<std::string, std::string> redis_only;  ///< directive -> why it exists / is refused
  std::vector<std::string> module_paths;          ///< loadmodule paths of Redis packages
  std::vector<std::string> module_config_prefixes;
  std::vector<std::string> command_prefixes;  ///< module command prefixes, e.g. "FT."
  std::vector<std::string> redis_only_commands;
  std::vector<std::string> acl_categories;  ///< module ACL categories, e.g. "search"
};

/// Every target of a table file.
struct TargetCatalog {
  std::string source;  ///< where the table came from, for messages
  RedisFacts redis;
  std::map<std::string, TargetTable> targets;

  /// The target called `name`, or nullptr.
  const TargetTable* find(std::string_view name) const;
  /// Target names, sorted.
  std::vector<std::string> names() const;
};

/// Reads a targets table; the error names `source` and, for syntax errors, line and column.
engine::Expected<TargetCatalog, std::string> parse_target_catalog(std::string_view toml_text,
                                                                  std::string_view source);

/// The table compiled into keyshift (migrate/rewrite/targets.toml).
std::string_view builtin_target_toml();

}  // namespace keyshift::migrate
