#pragma once

#include "engine/persistence/rdb_reader.hpp"
#include "migrate/key_rules.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

// `keyshift rdb convert`: rewrites an RDB file for a target server. The input is decoded to
// neutral values, filtered and adjusted (field TTLs, modules, databases), rebuilt in a fresh
// engine and saved at the requested RDB version. The output file is replaced atomically or
// not touched at all.
namespace keyshift::migrate {

/// How to convert.
struct RdbConvertOptions {
  /// 10 (Redis 7.0), 11 (Valkey 7.2/8.x, Redis 7.2), 12 (Redis 7.4), 80 (Valkey 9.0) or 81
  /// (Valkey 9.2).
  int rdb_version = 11;
  /// Which keys go, and how they change (target_field_ttls is set from rdb_version).
  KeyRules rules;
  /// Keys whose TTL is not after this (unix ms) are dropped.
  int64_t now_ms = 0;
  /// Called with the offset of each key read and the input's size; may be empty.
  std::function<void(uint64_t offset, uint64_t size)> progress;
};

/// A key named in a report.
struct RdbKeyRef {
  uint64_t db = 0;  // in the input
  std::string key;
};

/// A kind of change and the keys it touched.
struct RdbChange {
  uint64_t count = 0;
  std::vector<RdbKeyRef> keys;
};

/// What a conversion did, or why it did not happen.
struct RdbConvertReport {
  bool ok = false;
  /// Why nothing was written; `error_offset` is set for a damaged input.
  std::string error;
  std::optional<uint64_t> error_offset;
  /// The keys that block the conversion: nothing is written while any is non-empty.
  RdbChange blocked_field_ttls;   // hashes with field TTLs, target below 12, policy fail
  RdbChange blocked_modules;      // without --skip-modules
  RdbChange blocked_path_hashes;  // Valkey 9.2 Path Hashes: no engine type to rebuild them in
  int input_version = 0;
  int output_version = 0;
  uint64_t keys_read = 0;
  uint64_t keys_written = 0;
  uint64_t bytes_written = 0;
  RdbChange expired;             // TTL already passed
  RdbChange filtered;            // left out by --match / --exclude
  RdbChange modules_dropped;     // --skip-modules
  RdbChange field_ttls_dropped;  // hashes whose field TTLs were removed (drop-ttl)
  uint64_t fields_ttl_dropped = 0;
  RdbChange fields_dropped;  // hashes that lost fields (drop-field)
  uint64_t fields_removed = 0;
  RdbChange hashes_emptied;     // dropped because no field was left
  RdbChange moved;              // keys whose database changed
  RdbChange renamed;            // keys a prefix rule renamed (listed by their new name)
  uint64_t functions_kept = 0;  // FUNCTION2 libraries, written to OUT as they were
};

/// Converts `input` (a whole RDB file) and writes it to `out_path` unless the report says
/// otherwise. `out_path` may be the file `input` maps: every key is read before writing,
/// and the new file replaces the old one by rename.
RdbConvertReport convert_rdb(std::string_view input, const std::string& out_path,
                             const RdbConvertOptions& options);
/// The same for the JSON Lines `keyshift rdb dump` writes; a bad line fails with its number.
RdbConvertReport convert_dump_lines(std::string_view text, const std::string& out_path,
                                    const RdbConvertOptions& options);

/// A human-readable report; `verbose` lists the keys of every change.
std::string render_convert_text(const RdbConvertReport& report, std::string_view in,
                                std::string_view out, bool verbose);
/// The report as one JSON object (fields documented in keyshift-rdb(1)), newline-terminated.
std::string render_convert_json(const RdbConvertReport& report, std::string_view in,
                                std::string_view out);

}  // namespace keyshift::migrate
