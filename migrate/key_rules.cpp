#include "migrate/key_rules.hpp"

#include "engine/util/glob.hpp"

#include <algorithm>
#include <charconv>

namespace keyshift::migrate {
namespace {

bool parse_u64(std::string_view text, uint64_t& out) {
  if (text.empty() || text.size() > 19) {
    return false;
  }
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && ptr == text.data() + text.size();
}

/// Applies the field TTL policy to a decoded hash; false when the key goes no further.
KeyVerdict apply_field_ttls(const KeyRules& rules, std::vector<engine::RdbHashField>& fields,
                            int64_t now_ms, KeyEffects& effects) {
  bool any_ttl = std::any_of(fields.begin(), fields.end(),
                             [](const engine::RdbHashField& f) { return f.expire_ms >= 0; });
  if (!any_ttl || rules.target_field_ttls) {
    return KeyVerdict::keep;
  }
  // Fields already past their TTL are gone on any server; no policy applies to them.
  std::erase_if(fields, [now_ms](const engine::RdbHashField& f) {
    return f.expire_ms >= 0 && f.expire_ms <= now_ms;
  });
  if (fields.empty()) {
    return KeyVerdict::expired;
  }
  auto with_ttl = static_cast<uint64_t>(
      std::count_if(fields.begin(), fields.end(),
                    [](const engine::RdbHashField& f) { return f.expire_ms >= 0; }));
  if (with_ttl == 0) {
    return KeyVerdict::keep;
  }
  switch (rules.field_ttl) {
    case FieldTtlPolicy::fail:
      return KeyVerdict::blocked_field_ttl;
    case FieldTtlPolicy::drop_ttl:
      for (engine::RdbHashField& f : fields) {
        f.expire_ms = -1;
      }
      effects.field_ttls_dropped = with_ttl;
      return KeyVerdict::keep;
    case FieldTtlPolicy::drop_field:
      std::erase_if(fields, [](const engine::RdbHashField& f) { return f.expire_ms >= 0; });
      effects.fields_dropped = with_ttl;
      return fields.empty() ? KeyVerdict::emptied : KeyVerdict::keep;
  }
  return KeyVerdict::keep;
}

}  // namespace

bool key_selected(const KeyRules& rules, std::string_view key) {
  if (!rules.match.empty() &&
      std::none_of(rules.match.begin(), rules.match.end(),
                   [key](const std::string& p) { return engine::glob_match(p, key); })) {
    return false;
  }
  return std::none_of(rules.exclude.begin(), rules.exclude.end(),
                      [key](const std::string& p) { return engine::glob_match(p, key); });
}

std::optional<std::string> apply_prefix_rule(const PrefixRule& rule, uint64_t db,
                                             std::string_view key) {
  if ((rule.db && *rule.db != db) || !key.starts_with(rule.from)) {
    return std::nullopt;
  }
  for (const std::string& longer : rule.exclude) {
    if (key.starts_with(longer)) {
      return std::nullopt;
    }
  }
  return rule.to + std::string(key.substr(rule.from.size()));
}

KeyVerdict apply_key_rules(const KeyRules& rules, engine::RdbKey& key, int64_t now_ms,
                           KeyEffects& effects) {
  effects = KeyEffects{};
  if (!key_selected(rules, key.key)) {
    return KeyVerdict::filtered;
  }
  const engine::RdbKind kind = key.value.kind;
  if (kind != engine::RdbKind::module && !rules.types.empty() &&
      std::find(rules.types.begin(), rules.types.end(), kind) == rules.types.end()) {
    return KeyVerdict::filtered;
  }
  if (key.expire_ms >= 0 && key.expire_ms <= now_ms) {
    return KeyVerdict::expired;
  }
  if (kind == engine::RdbKind::module) {
    return rules.skip_modules ? KeyVerdict::module_dropped : KeyVerdict::blocked_module;
  }
  if (kind == engine::RdbKind::path_hash) {
    return KeyVerdict::blocked_path_hash;
  }
  if (kind == engine::RdbKind::hash && !key.deferred) {
    KeyVerdict v = apply_field_ttls(rules, key.value.hash, now_ms, effects);
    if (v != KeyVerdict::keep) {
      return v;
    }
  }
  for (const PrefixRule& rule : rules.rename) {
    if (auto renamed = apply_prefix_rule(rule, key.db, key.key)) {
      key.key = std::move(*renamed);
      effects.renamed = true;
      break;
    }
  }
  effects.target_db = target_db_of(rules, key.db);
  effects.moved = effects.target_db != key.db;
  return KeyVerdict::keep;
}

uint64_t target_db_of(const KeyRules& rules, uint64_t db) {
  if (auto it = rules.db_map.find(db); it != rules.db_map.end()) {
    return it->second;
  }
  return rules.unmapped_db.value_or(db);
}

std::optional<PrefixRule> parse_prefix_rule(std::string_view text) {
  size_t eq = text.find('=');
  if (eq == std::string_view::npos || eq == 0) {
    return std::nullopt;
  }
  PrefixRule rule;
  rule.from = std::string(text.substr(0, eq));
  rule.to = std::string(text.substr(eq + 1));
  return rule;
}

std::optional<std::pair<uint64_t, uint64_t>> parse_db_mapping(std::string_view text) {
  size_t colon = text.find(':');
  uint64_t from = 0;
  uint64_t to = 0;
  if (colon == std::string_view::npos || !parse_u64(text.substr(0, colon), from) ||
      !parse_u64(text.substr(colon + 1), to)) {
    return std::nullopt;
  }
  return std::make_pair(from, to);
}

std::optional<engine::RdbKind> parse_value_kind(std::string_view name) {
  static constexpr std::pair<std::string_view, engine::RdbKind> k_kinds[] = {
      {"string", engine::RdbKind::string}, {"list", engine::RdbKind::list},
      {"set", engine::RdbKind::set},       {"zset", engine::RdbKind::zset},
      {"hash", engine::RdbKind::hash},     {"stream", engine::RdbKind::stream}};
  for (const auto& [n, kind] : k_kinds) {
    if (n == name) {
      return kind;
    }
  }
  return std::nullopt;
}

std::optional<FieldTtlPolicy> parse_field_ttl_policy(std::string_view name) {
  if (name == "fail") {
    return FieldTtlPolicy::fail;
  }
  if (name == "drop-ttl") {
    return FieldTtlPolicy::drop_ttl;
  }
  if (name == "drop-field") {
    return FieldTtlPolicy::drop_field;
  }
  return std::nullopt;
}

}  // namespace keyshift::migrate
