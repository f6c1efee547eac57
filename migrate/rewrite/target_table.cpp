#include "migrate/rewrite/target_table.hpp"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <functional>
#include <optional>
#include <sstream>

namespace keyshift::migrate {
namespace {

using engine::Unexpected;

std::optional<std::string> read_strings(const toml::node* node, std::string_view what,
                                        std::vector<std::string>& out) {
  if (node == nullptr) {
    return std::nullopt;
  }
  const toml::array* array = node->as_array();
  if (array == nullptr) {
    return fmt::format("{} must be an array of strings", what);
  }
  for (const toml::node& item : *array) {
    auto value = item.value<std::string>();
    if (!value) {
      return fmt::format("{} must be an array of strings", what);
    }
    out.push_back(*value);
  }
  return std::nullopt;
}

std::optional<std::string> read_string_map(const toml::node* node, std::string_view what,
                                           std::map<std::string, std::string>& out) {
  if (node == nullptr) {
    return std::nullopt;
  }
  const toml::table* table = node->as_table();
  if (table == nullptr) {
    return fmt::format("{} must be a table of strings", what);
  }
  for (const auto& [key, value] : *table) {
    auto text = value.value<std::string>();
    if (!text) {
      return fmt::format("{}.{} must be a string", what, key.str());
    }
    out[std::string(key.str())] = *text;
  }
  return std::nullopt;
}

std::string string_field(const toml::table& table, std::string_view key) {
  return table[key].value_or(std::string());
}

class Resolver {
 public:
  Resolver(const toml::table& targets, TargetCatalog& catalog)
      : m_targets(targets), m_catalog(catalog) {}

  std::optional<std::string> resolve(const std::string& name, int depth) {
    if (m_catalog.targets.count(name) != 0) {
      return std::nullopt;
    }
    if (depth > 16) {
      return fmt::format("targets.{}: inherits in a loop", name);
    }
    const toml::table* spec = m_targets[name].as_table();
    if (spec == nullptr) {
      return fmt::format("targets.{} is not a table", name);
    }
    TargetTable table;
    std::string parent = string_field(*spec, "inherits");
    if (!parent.empty()) {
      if (m_targets[parent].as_table() == nullptr) {
        return fmt::format("targets.{}: inherits unknown target '{}'", name, parent);
      }
      if (auto error = resolve(parent, depth + 1)) {
        return error;
      }
      table = m_catalog.targets.at(parent);
    }
    table.name = name;
    table.server = string_field(*spec, "server");
    table.version = string_field(*spec, "version");
    if (table.server.empty()) {
      return fmt::format("targets.{}: missing server", name);
    }
    std::string where = "targets." + name;
    std::vector<std::string> list;
    if (const toml::node* own = spec->get("directives")) {
      table.directives.clear();
      if (auto error = read_strings(own, where + ".directives", list)) {
        return error;
      }
      table.directives.insert(list.begin(), list.end());
    }
    list.clear();
    if (auto error = read_strings(spec->get("add"), where + ".add", list)) {
      return error;
    }
    table.directives.insert(list.begin(), list.end());
    list.clear();
    if (auto error = read_strings(spec->get("remove"), where + ".remove", list)) {
      return error;
    }
    for (const std::string& gone : list) {
      table.directives.erase(gone);
    }
    list.clear();
    if (auto error = read_strings(spec->get("deprecated"), where + ".deprecated", list)) {
      return error;
    }
    table.deprecated.insert(list.begin(), list.end());
    if (auto error = read_string_map(spec->get("aliases"), where + ".aliases", table.aliases)) {
      return error;
    }
    if (auto error =
            read_string_map(spec->get("translate"), where + ".translate", table.translate)) {
      return error;
    }
    if (const toml::array* values = (*spec)["values"].as_array()) {
      for (const toml::node& item : *values) {
        const toml::table* v = item.as_table();
        if (v == nullptr) {
          return fmt::format("{}.values must be an array of tables", where);
        }
        ValueFix fix;
        fix.directive = string_field(*v, "directive");
        fix.value = string_field(*v, "value");
        fix.replace = string_field(*v, "replace");
        fix.drop = (*v)["drop"].value_or(false);
        fix.reason = string_field(*v, "reason");
        if (fix.directive.empty() || fix.value.empty() || (fix.replace.empty() && !fix.drop)) {
          return fmt::format("{}.values: each needs directive, value and replace or drop", where);
        }
        table.values.push_back(std::move(fix));
      }
    }
    if (const toml::array* defaults = (*spec)["defaults"].as_array()) {
      for (const toml::node& item : *defaults) {
        const toml::table* d = item.as_table();
        if (d == nullptr) {
          return fmt::format("{}.defaults must be an array of tables", where);
        }
        table.defaults.push_back(DefaultChange{
            string_field(*d, "directive"), string_field(*d, "redis"), string_field(*d, "target")});
      }
    }
    if (table.directives.empty()) {
      return fmt::format("{}: no directives", where);
    }
    m_catalog.targets[name] = std::move(table);
    return std::nullopt;
  }

 private:
  const toml::table& m_targets;
  TargetCatalog& m_catalog;
};

}  // namespace

bool TargetTable::accepts(std::string_view directive) const {
  std::string key(directive);
  return directives.count(key) != 0 || deprecated.count(key) != 0;
}

const TargetTable* TargetCatalog::find(std::string_view name) const {
  auto it = targets.find(std::string(name));
  return it == targets.end() ? nullptr : &it->second;
}

std::vector<std::string> TargetCatalog::names() const {
  std::vector<std::string> out;
  for (const auto& [name, table] : targets) {
    out.push_back(name);
  }
  return out;
}

engine::Expected<TargetCatalog, std::string> parse_target_catalog(std::string_view toml_text,
                                                                  std::string_view source) {
  toml::table root;
  try {
    root = toml::parse(toml_text, source);
  } catch (const toml::parse_error& error) {
    return Unexpected{fmt::format("{}:{}:{}: {}", source, error.source().begin.line,
                                  error.source().begin.column, error.description())};
  }
  auto fail = [&](const std::string& what) {
    return Unexpected{fmt::format("{}: {}", source, what)};
  };
  if (root["schema"].value_or(int64_t{0}) != 1) {
    return fail("schema must be 1");
  }
  TargetCatalog catalog;
  catalog.source = std::string(source);
  if (auto error =
          read_string_map(root.get("redis_only"), "redis_only", catalog.redis.redis_only)) {
    return fail(*error);
  }
  if (const toml::table* modules = root["redis_modules"].as_table()) {
    std::optional<std::string> error;
    error = read_strings(modules->get("paths"), "redis_modules.paths", catalog.redis.module_paths);
    if (!error) {
      error = read_strings(modules->get("config_prefixes"), "redis_modules.config_prefixes",
                           catalog.redis.module_config_prefixes);
    }
    if (!error) {
      error = read_strings(modules->get("command_prefixes"), "redis_modules.command_prefixes",
                           catalog.redis.command_prefixes);
    }
    if (!error) {
      error = read_strings(modules->get("redis_only_commands"), "redis_modules.redis_only_commands",
                           catalog.redis.redis_only_commands);
    }
    if (!error) {
      error = read_strings(modules->get("acl_categories"), "redis_modules.acl_categories",
                           catalog.redis.acl_categories);
    }
    if (error) {
      return fail(*error);
    }
  }
  const toml::table* targets = root["targets"].as_table();
  if (targets == nullptr || targets->empty()) {
    return fail("no [targets]");
  }
  Resolver resolver(*targets, catalog);
  for (const auto& [key, value] : *targets) {
    if (auto error = resolver.resolve(std::string(key.str()), 0)) {
      return fail(*error);
    }
  }
  return catalog;
}

}  // namespace keyshift::migrate
