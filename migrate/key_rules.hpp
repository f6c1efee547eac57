#pragma once

#include "engine/persistence/rdb_reader.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

// The rules a key passes on its way from a source to a target, shared by `rdb convert` and
// `import` so that both leave out, expire, rename and adjust keys the same way.
namespace keyshift::migrate {

/// What to do with hash fields that have a TTL when the target version cannot store them.
enum class FieldTtlPolicy : uint8_t { fail, drop_ttl, drop_field };

/// A key prefix to rename (`--rename-prefix OLD=NEW`; rewrite apps --fix-prefixes finds
/// the same rule for the apps): keys starting with `from`, and with none of the longer
/// `exclude` prefixes of other sites, get `to` instead.
struct PrefixRule {
  std::optional<uint64_t> db;  ///< only in this source database; every database when unset
  std::string from;
  std::string to;
  std::vector<std::string> exclude;
};

/// The rules, as the user set them.
struct KeyRules {
  /// Keep only keys matching one of these globs; empty keeps every key.
  std::vector<std::string> match;
  /// Drop keys matching any of these globs.
  std::vector<std::string> exclude;
  /// Keep only these value kinds (empty keeps every kind).
  std::vector<engine::RdbKind> types;
  /// Source database -> target database; unmapped databases keep their number, or go to
  /// `unmapped_db` when set (a database named in the target's URL).
  std::map<uint64_t, uint64_t> db_map;
  std::optional<uint64_t> unmapped_db;
  std::vector<PrefixRule> rename;
  FieldTtlPolicy field_ttl = FieldTtlPolicy::fail;
  /// Drop module keys instead of refusing them.
  bool skip_modules = false;
  /// The target stores hash field TTLs (RDB 12, Valkey 9).
  bool target_field_ttls = false;
};

/// What the rules decided for one key.
enum class KeyVerdict : uint8_t {
  keep,
  filtered,           ///< left out by match / exclude / types
  expired,            ///< its TTL (or every field's) has passed
  module_dropped,     ///< a module value, skip_modules
  blocked_module,     ///< a module value without skip_modules: the move cannot go on
  blocked_field_ttl,  ///< field TTLs the target cannot store, policy fail
  blocked_path_hash,  ///< a Valkey 9.2 Path Hash, which has no engine type
  emptied,            ///< drop-field removed every field
};

/// What the rules changed in a kept key.
struct KeyEffects {
  uint64_t target_db = 0;
  bool moved = false;               ///< the database changed
  bool renamed = false;             ///< a prefix rule renamed it (the key holds the new name)
  uint64_t field_ttls_dropped = 0;  ///< drop-ttl: TTLs removed
  uint64_t fields_dropped = 0;      ///< drop-field: fields removed
};

/// Judges `key` against `rules` at time `now_ms` (unix ms) and applies the changes of a kept
/// key in place (rename, field TTL policy). Only the key's name, db, TTL and kind are
/// needed, except for hashes with field TTLs, whose fields must be decoded.
KeyVerdict apply_key_rules(const KeyRules& rules, engine::RdbKey& key, int64_t now_ms,
                           KeyEffects& effects);

/// The target database of keys from source database `db` (--db-map, then the target URL's
/// database, else the same number).
uint64_t target_db_of(const KeyRules& rules, uint64_t db);

/// True when `key` passes match / exclude (the name-only part of the rules).
bool key_selected(const KeyRules& rules, std::string_view key);

/// The new name of `key` in source database `db` under `rule`, or nothing.
std::optional<std::string> apply_prefix_rule(const PrefixRule& rule, uint64_t db,
                                             std::string_view key);

/// Reads "OLD=NEW" (OLD non-empty); nothing when malformed.
std::optional<PrefixRule> parse_prefix_rule(std::string_view text);
/// Reads "SRC:DST" (two database numbers); nothing when malformed.
std::optional<std::pair<uint64_t, uint64_t>> parse_db_mapping(std::string_view text);
/// The kind called `name` as TYPE names it (string, list, set, zset, hash, stream), or nothing.
std::optional<engine::RdbKind> parse_value_kind(std::string_view name);
/// The policy called `name` ("fail", "drop-ttl", "drop-field"), or nothing.
std::optional<FieldTtlPolicy> parse_field_ttl_policy(std::string_view name);

}  // namespace keyshift::migrate
