#pragma once

#include "engine/persistence/rdb_reader.hpp"
#include "engine/util/expected.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

// `keyshift rdb check` and `rdb inspect`: one pass over an RDB file with the engine's reader,
// summed up in a report that says what the file holds and whether a given server can load
// it as is. The CLI only parses flags and prints what the renderers return.
namespace keyshift::migrate {

/// A server an RDB file may be moved to: one per release line of the knowledge base's RDB
/// facts (compat/kb), in its order.
enum class RdbTarget : uint8_t {
  redis_6_2,
  redis_7_0,
  redis_7_2,
  redis_7_4,
  redis_8_0,
  redis_8_2,
  redis_8_4,
  valkey_7_2,
  valkey_8_0,
  valkey_8_1,
  valkey_9_0,
  valkey_9_1,
  valkey_9_2
};

/// What a target server reads: the knowledge base's RDB facts of its line.
struct RdbTargetLimits {
  std::string_view name;        // "valkey-8.0"
  int max_rdb_version = 0;      // newest "REDIS00NN" it accepts
  uint8_t max_object_type = 0;  // newest object type byte it decodes
  bool field_ttls = false;      // hash-field expiration (types 22-25)
  bool slot_info = false;       // the SLOT_INFO opcode (244)
  bool valkey = false;          // Valkey's Lua API (server.*) exists
};

/// The target called `name` ("valkey-8.0", "redis-7.4", a patch version "valkey-8.0.1"), or
/// nothing.
std::optional<RdbTarget> parse_rdb_target(std::string_view name);
/// Every target name, in the order the help lists them.
std::vector<std::string_view> rdb_target_names();
/// What `target` accepts.
RdbTargetLimits rdb_target_limits(RdbTarget target);

/// How to analyse a file.
struct RdbInspectOptions {
  /// Current time for the TTL buckets (unix ms); injected so tests are reproducible.
  int64_t now_ms = 0;
  /// Separator of the key prefix breakdown (the first segment before it is the prefix).
  std::string delimiter = ":";
  size_t top_keys = 10;
  size_t top_prefixes = 20;
  /// When set, judge whether the file moves to this server.
  std::optional<RdbTarget> target;
  /// Module keys will be dropped rather than block the move.
  bool skip_modules = false;
  /// Called with the offset reached, at most once per percent; may be empty.
  std::function<void(uint64_t offset, uint64_t size)> progress;
};

/// Keys and the bytes their values take in the file.
struct RdbCount {
  uint64_t keys = 0;
  uint64_t value_bytes = 0;
};

/// One database.
struct RdbDbStats {
  uint64_t keys = 0;
  uint64_t expires = 0;
  uint64_t value_bytes = 0;
};

/// One of the biggest keys.
struct RdbBigKey {
  std::string key;
  uint64_t db = 0;
  uint8_t rdb_type = 0;
  uint64_t value_bytes = 0;
  uint64_t offset = 0;
};

/// One key prefix.
struct RdbPrefix {
  std::string prefix;
  RdbCount count;
};

/// Keys by remaining time to live, relative to RdbInspectOptions::now_ms.
struct RdbTtlBuckets {
  uint64_t no_ttl = 0;
  uint64_t expired = 0;
  uint64_t under_1h = 0;
  uint64_t under_1d = 0;
  uint64_t under_30d = 0;
  uint64_t longer = 0;
};

/// A function library (FUNCTION2 opcode).
struct RdbLibrary {
  std::string name;              // from the "#!lua name=..." first line, empty if absent
  bool uses_valkey_api = false;  // calls server.*, which Redis refuses to load
};

/// Can the file move to the target, and what changes on the way.
enum class RdbVerdict : uint8_t { loads_as_is, needs_conversion, cannot_move };

/// The judgement for one target.
struct RdbTargetReport {
  RdbTarget target = RdbTarget::valkey_8_0;
  RdbVerdict verdict = RdbVerdict::loads_as_is;
  std::vector<std::string> changes;   // conversions keyshift would make
  std::vector<std::string> blockers;  // why it cannot move
  std::vector<std::string> notes;     // facts that change nothing (expired keys dropped)
};

/// Everything one pass over the file found.
struct RdbReport {
  uint64_t size_bytes = 0;
  engine::RdbSummary summary;
  std::vector<std::pair<std::string, std::string>> aux;  // in file order
  std::optional<int64_t> ctime;                          // the "ctime" aux, seconds
  uint64_t total_keys = 0;
  std::map<uint64_t, RdbDbStats> dbs;
  std::map<uint8_t, RdbCount> types;          // by object type byte
  std::map<engine::RdbKind, RdbCount> kinds;  // by logical type
  std::vector<RdbBigKey> biggest;             // biggest first
  std::string delimiter;
  std::vector<RdbPrefix> prefixes;  // biggest key count first, at most top_prefixes
  uint64_t distinct_prefixes = 0;
  RdbCount without_delimiter;  // keys with no delimiter (not counted as prefixes)
  RdbTtlBuckets ttl;
  int64_t now_ms = 0;
  std::vector<RdbLibrary> libraries;
  std::map<std::string, uint64_t> module_keys;  // module type name -> keys
  std::vector<std::string> module_aux;          // module names with aux data
  uint64_t slot_info_records = 0;
  uint64_t slot_import_records = 0;  // Valkey 9's SLOT_IMPORT
  uint64_t field_ttl_hashes = 0;     // keys of types 22-25
  uint64_t fields_with_ttl = 0;
  std::optional<RdbTargetReport> target;
};

/// Reads `file` (a whole RDB file) once and sums it up; an RdbError names the offset of the
/// first structural or checksum problem.
engine::Expected<RdbReport, engine::RdbError> inspect_rdb(std::string_view file,
                                                          const RdbInspectOptions& options);

/// Judges whether the file `report` describes loads in `target`.
RdbTargetReport judge_target(const RdbReport& report, RdbTarget target, bool skip_modules);

/// "creator: redis-ver 7.4.1" style: the writer named by the aux fields, or empty.
std::string rdb_creator(const RdbReport& report);
/// "verified", "disabled" (stored 0) or "absent" (version < 5).
std::string_view checksum_status(const engine::RdbSummary& summary);
/// The logical type's name ("hash").
std::string_view kind_name(engine::RdbKind kind);
/// "loads as is", "needs conversion", "cannot move".
std::string_view verdict_name(RdbVerdict verdict);

/// What the renderers print.
enum class RdbReportDetail : uint8_t { check, inspect };

/// Human-readable report of `file`.
std::string render_rdb_text(const RdbReport& report, std::string_view file, RdbReportDetail detail);
/// One JSON object (fields documented in keyshift-rdb(1)), newline-terminated.
std::string render_rdb_json(const RdbReport& report, std::string_view file, RdbReportDetail detail);
/// The failure as one JSON object with ok=false; `offset` absent when the file is unreadable.
std::string render_rdb_error_json(std::string_view file, std::optional<uint64_t> offset,
                                  std::string_view message);

}  // namespace keyshift::migrate
