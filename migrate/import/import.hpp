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

/// How a server source is read.
enum class SourceMode : uint8_t {
  sync,  ///< as a replica: PSYNC, the full sync's RDB, then the command stream
  scan,  ///< SCAN + DUMP (managed servers that refuse SYNC)
};

/// When a replication import stops streaming.
enum class UntilKind : uint8_t {
  caught_up,  ///< the applied offset reached the primary's offset read when the stream began
  stop_file,  ///< a file appears (until_path)
  signal,     ///< stop() says so (SIGTERM)
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
  std::string_view phase;  ///< "check", "conflicts", "write", "save", "sync", "stream"
  uint64_t done = 0;       ///< bytes of the file or payload, keys of the scan, stream commands
  uint64_t total = 0;      ///< 0 when unknown
  uint64_t keys = 0;       ///< keys written so far
  // Replication: how far behind the primary the target is (-1 when not known yet).
  int64_t lag_bytes = -1;
  double lag_seconds = -1;
};

/// How to import.
struct ImportOptions {
  /// An RDB file, or a server URL (redis://, unix://) read by SCAN + DUMP.
  std::string source;
  /// TLS for a server source (rediss://, or every TCP source with tls.enabled): CA,
  /// client certificate, SNI (the --tls flags).
  engine::TlsClientOptions tls;
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
  /// The live target is a cluster (--cluster); also found from INFO cluster without it.
  bool cluster = false;
  /// Server sources: by replication (the default) or by scanning.
  SourceMode mode = SourceMode::sync;
  UntilKind until = UntilKind::caught_up;
  std::string until_path;
  /// Scan sources: follow the source's keyspace notifications during and after the scan and
  /// read the keys they name again (until --until says stop).
  bool follow = false;
  /// Polled while streaming: true asks for a clean stop (the CLI's SIGTERM/SIGINT flag).
  std::function<bool()> stop_requested;
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
  uint64_t followed = 0;           ///< --follow: keys read again after a keyspace event
  uint64_t follow_deleted = 0;     ///< --follow: keys deleted in the target (gone at the source)
};

/// A cluster source read by replication: how one primary's session went.
struct ImportSyncStream {
  std::string node;  ///< "host:port"
  std::string replid;
  uint64_t repl_offset = 0;  ///< applied and acknowledged by the target
  std::string sync;          ///< "full" or "partial"
  int64_t lag_bytes = -1;
  double lag_seconds = -1;
};

/// What a cluster on either side saw: keys per primary and the redirects followed.
struct ImportClusterCounts {
  bool target = false;  ///< the target was a cluster
  bool source = false;  ///< the source was a cluster (one scan or replication per primary)
  /// A cluster source by replication: one entry per primary, in the order of source_nodes.
  std::vector<ImportSyncStream> source_streams;
  /// Target primaries ("host:port") and the keys each acknowledged.
  std::vector<std::pair<std::string, uint64_t>> target_nodes;
  /// Source primaries and the keys read from each.
  std::vector<std::pair<std::string, uint64_t>> source_nodes;
  uint64_t moved = 0;      ///< MOVED redirects followed (key resent to the new owner)
  uint64_t ask = 0;        ///< ASK redirects followed (ASKING, then the key, once)
  uint64_t retries = 0;    ///< TRYAGAIN / CLUSTERDOWN answers backed off and retried
  uint64_t refreshes = 0;  ///< slot map reads after the first
  /// A cluster source: slots that changed owner during the scan, read again from the new one.
  uint64_t slots_reread = 0;
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
  ImportClusterCounts cluster;
  /// Replication: the primary's ID, the offset applied and acknowledged by the target, the
  /// lag when the stream stopped, and how the sync went ("full" or "partial").
  std::string replid;
  uint64_t repl_offset = 0;
  int64_t lag_bytes = -1;
  double lag_seconds = -1;
  std::string sync;
  /// --follow: rounds of second reads, and keyspace events received.
  uint64_t follow_rounds = 0;
  uint64_t follow_events = 0;
  uint64_t commands_applied = 0;
  uint64_t commands_filtered = 0;
  uint64_t transactions = 0;
};

/// Runs the import; never throws for bad input (the report says what went wrong).
ImportReport run_import(const ImportOptions& options);

/// The report for a terminal.
std::string render_import_text(const ImportReport& report);
/// The report as one JSON object (documented in keyshift-import(1)), newline-terminated.
std::string render_import_json(const ImportReport& report);

}  // namespace keyshift::migrate
