#pragma once

#include "engine/resp/connection.hpp"
#include "migrate/key_rules.hpp"
#include "migrate/rdb_inspect.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

// `keyshift import`: moves a dataset from a source (an RDB file, or a live server read by
// SCAN + DUMP) into a target (a live server by RESTORE ... ABSTTL, or the embedded engine
// saved as the target's data file), through the key rules, resumably.
namespace keyshift::migrate {

/// What to do with keys that already exist in a live target.
enum class ConflictPolicy : uint8_t {
  fail,     ///< list them and write nothing (checked before the first write)
  skip,     ///< leave the target's key, count it
  replace,  ///< overwrite (RESTORE ... REPLACE)
};

/// How values go to a live target.
enum class ImportMethod : uint8_t {
  restore,   ///< RESTORE ... ABSTTL of a payload (big keys still go as commands)
  commands,  ///< plain commands for every key (targets that refuse RESTORE)
};

/// Big keys go as commands below this payload size at most (and half the target's
/// proto-max-bulk-len when it says less).
inline constexpr uint64_t k_default_big_key_bytes = uint64_t{8} << 20;

/// Where the import stands, for a progress line.
struct ImportProgress {
  std::string_view phase;  ///< "check", "conflicts", "write", "save"
  uint64_t done = 0;       ///< bytes of the file or keys of the scan
  uint64_t total = 0;      ///< 0 when unknown
  uint64_t keys = 0;       ///< keys written so far
};

/// How to import.
struct ImportOptions {
  /// An RDB file, or a server URL (redis://, unix://) read by SCAN + DUMP.
  std::string source;
  /// A live target; unset: the embedded engine, saved as `dir`/`dbfilename`.
  std::optional<engine::RespEndpoint> to;
  std::string dir = ".";
  std::string dbfilename = "dump.rdb";
  /// The embedded target's server (the RDB version and types written).
  RdbTarget target = RdbTarget::valkey_8_0;
  KeyRules rules;
  ConflictPolicy conflict = ConflictPolicy::fail;
  /// Read and judge everything, write nothing.
  bool dry_run = false;
  /// Check a file source whole before the first write (off: stream it).
  bool precheck = true;
  /// Checkpoint file; empty: no checkpoint (the import starts over when rerun).
  std::string checkpoint;
  /// RESTORE payloads, or commands for every key.
  ImportMethod method = ImportMethod::restore;
  /// A key whose payload would be larger goes as commands in chunks; 0: the default
  /// (k_default_big_key_bytes, or half the target's proto-max-bulk-len when smaller).
  uint64_t big_key_bytes = 0;
  /// Requests in flight to a live target.
  uint32_t window = 256;
  /// SCAN COUNT for scan sources.
  uint32_t scan_count = 1000;
  /// Current time (unix ms); keys whose TTL is not after it are not written.
  int64_t now_ms = 0;
  std::function<void(const ImportProgress&)> progress;
  /// A live target or scan source answering -LOADING is waited for this long.
  uint32_t loading_wait_s = 300;
  /// Told things worth a line on the terminal while the import runs (waits).
  std::function<void(const std::string&)> notice;
  /// Compare source and target with `verify data` once the import is done.
  bool verify = false;
};

/// What `--verify` found.
struct ImportVerify {
  bool ran = false;
  bool equal = false;
  uint64_t keys_compared = 0;
  uint64_t differences = 0;
  uint64_t changed = 0;  ///< differed, then agreed in a later round (changing at the source)
  std::string error;     ///< the comparison could not run
  std::string skipped;   ///< why it did not run (rules that change keys on the way)
  std::string text;      ///< verify's own text report
};

/// Counts of keys that went, or did not, and why.
struct ImportCounts {
  uint64_t read = 0;
  uint64_t written = 0;
  std::map<std::string, uint64_t> written_by_type;  ///< "string", "hash", ...
  uint64_t filtered = 0;
  uint64_t expired = 0;  ///< TTL passed at the source: not written
  uint64_t modules_dropped = 0;
  uint64_t renamed = 0;
  uint64_t moved = 0;
  uint64_t field_ttls_dropped = 0;
  uint64_t fields_dropped = 0;
  uint64_t hashes_emptied = 0;
  uint64_t conflicts_skipped = 0;
  uint64_t conflicts_found = 0;    ///< --conflict fail: keys already in the target
  uint64_t vanished = 0;           ///< scans: deleted or expired between SCAN and DUMP
  uint64_t resumed_past = 0;       ///< keys a checkpoint said the target already had
  uint64_t reencoded = 0;          ///< values rebuilt for the target's RDB version
  uint64_t as_commands = 0;        ///< keys sent as commands rather than RESTORE
  uint64_t chunked = 0;            ///< of those, keys that took more than one element command
  uint64_t commands = 0;           ///< commands those keys took
  uint64_t expired_in_flight = 0;  ///< TTL passed while the key was being written
};

/// What an import did, or why it stopped.
struct ImportReport {
  bool ok = false;
  std::string error;
  std::optional<uint64_t> error_offset;  ///< a damaged file: where
  std::string source;
  std::string source_kind;  ///< "rdb" or "scan"
  std::string target;       ///< endpoint or file written
  std::string target_server;
  int target_rdb_version = 0;
  std::string method;          ///< "restore" or "commands" (live targets)
  uint64_t big_key_bytes = 0;  ///< the threshold used (live targets)
  bool dry_run = false;
  ImportCounts counts;
  /// Keys that block the move (conflicts, modules, field TTLs): "db N key".
  std::vector<std::string> blocked;
  std::string blocked_reason;
  uint64_t bytes_sent = 0;
  double seconds = 0;
  std::string checkpoint;
  bool resumed = false;
  bool already_complete = false;
  /// Said plainly when the result cannot be guaranteed consistent (scans of a live source).
  std::vector<std::string> warnings;
  ImportVerify verify;
};

/// Runs the import; never throws for bad input (the report says what went wrong).
ImportReport run_import(const ImportOptions& options);

/// The report for a terminal.
std::string render_import_text(const ImportReport& report);
/// The report as one JSON object (documented in keyshift-import(1)), newline-terminated.
std::string render_import_json(const ImportReport& report);

}  // namespace keyshift::migrate
