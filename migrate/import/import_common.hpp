#pragma once

#include "engine/engine.hpp"
#include "engine/persistence/rdb_reader.hpp"
#include "engine/persistence/rdb_writer.hpp"
#include "engine/util/clock.hpp"
#include "engine/util/expected.hpp"
#include "engine/util/mapped_file.hpp"
#include "migrate/import/checkpoint.hpp"
#include "migrate/import/cluster_target.hpp"
#include "migrate/import/import.hpp"
#include "migrate/import/live_target.hpp"
#include "migrate/key_rules.hpp"
#include "migrate/rdb_inspect.hpp"

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

// The pieces every import path shares (file and scan sources, live and embedded targets):
// internal to migrate/import.
namespace keyshift::migrate::import_detail {

/// Keys named in a report before "and N more".
inline constexpr size_t k_listed_keys = 20;

/// An RDB file mapped for reading, with what identifies it for a checkpoint.
struct RdbFile {
  /// Mapped for streaming: passes give back the pages behind them (bounded memory).
  engine::MappedFile map;
  int64_t mtime_us = 0;  ///< modification time, microseconds
  int version = 0;
  bool valkey_numbered = false;  ///< "VALKEY" magic: Valkey 9's own type numbering
};

/// Maps `path` and reads its header; an error names the file.
engine::Expected<RdbFile, std::string> open_rdb_file(const std::string& path);
/// True when `source` is a server URL rather than a file.
bool is_server_source(std::string_view source);

/// "string", "hash", ... as TYPE answers.
inline std::string_view kind_name(engine::RdbKind kind) {
  return engine::rdb_kind_name(kind);
}
/// "db0 'key'", for messages.
std::string key_ref(uint64_t db, std::string_view key);
/// Counts a verdict other than keep into `report`; true when it blocks the move.
bool count_verdict(KeyVerdict verdict, const engine::RdbKey& k, ImportReport& report);
/// Counts what the rules changed in a kept key.
void count_effects(const KeyEffects& effects, ImportCounts& counts);
/// Counts one key the live target acknowledged, by its outcome.
void count_write(const PendingKey& key, WriteOutcome outcome, ImportCounts& counts);
/// What the key rules decided for one key of a source.
enum class Screen { keep, drop, block };
/// The key rules applied to `k` and counted, the same for every source: keep (go on with
/// `effects`), drop (counted apart), or block (the move stops with blocked_error()).
Screen screen_key(const KeyRules& rules, engine::RdbKey& k, int64_t now_ms, ImportReport& report,
                  KeyEffects& effects);
/// The error a move stops with when screen_key() blocked it.
std::string blocked_error(const ImportReport& report);
/// The newest REDIS-numbered payload version `limits` reads (Valkey 9 reads up to 11).
int redis_numbered_max(const RdbTargetLimits& limits);

/// Builds values in a scratch engine and encodes them for a version: the path for values
/// the target cannot take as the source stored them.
class Reencoder {
 public:
  explicit Reencoder(int64_t now_ms);
  /// The DUMP payload of `value` at RDB `version`.
  engine::Expected<std::string, std::string> payload(engine::RdbValue&& value, int version);

 private:
  engine::ManualClock m_clock;
  std::unique_ptr<engine::Engine> m_engine;
};

/// Writes keys read from an RDB (a file or a full sync's payload) into a live target: a
/// value the target reads as the source stored it goes as its own bytes wrapped as a DUMP
/// payload (the reader defers it), any other is rebuilt for the target's RDB version.
class LiveKeyWriter {
 public:
  LiveKeyWriter(RestoreTarget& target, int source_version, bool source_valkey_numbered,
                bool replace, int64_t now_ms, ImportReport& report);
  /// True when a value of object type `type` can go as its bytes (defer it when reading).
  bool passes_through(uint8_t type) const;
  /// Sends kept key `k` (the rules applied) as `pending`; `value_bytes` are the value's bytes
  /// when it was deferred. False (no error) when the rebuilt value was empty (every field
  /// expired): counted as expired.
  engine::Expected<bool, std::string> write(engine::RdbKey& k, std::string_view value_bytes,
                                            PendingKey pending);
  void set_replace(bool replace) { m_replace = replace; }

 private:
  RestoreTarget& m_target;
  RdbTargetLimits m_limits;
  int m_source_version;
  bool m_passthrough;
  bool m_replace;
  ImportReport& m_report;
  Reencoder m_reencoder;
};

/// Adds keys read from an RDB into an in-process engine (the embedded target).
class EngineKeyWriter {
 public:
  EngineKeyWriter(engine::Engine& engine, ImportReport& report, int64_t now_ms)
      : m_engine(engine), m_report(report), m_now_ms(now_ms) {}
  /// Adds kept key `k` (materialized, the rules applied) to database `db`, replacing a key
  /// of that name when `replace`; the error names the key.
  engine::Expected<bool, std::string> write(uint64_t db, engine::RdbKey& k, bool replace);

 private:
  engine::Engine& m_engine;
  ImportReport& m_report;
  int64_t m_now_ms;
};

/// The checkpoint an import keeps, saved as acknowledgements move it.
class CheckpointKeeper {
 public:
  CheckpointKeeper(std::string path, ImportCheckpoint state);
  ImportCheckpoint& state() { return m_state; }
  bool enabled() const { return !m_path.empty(); }
  /// Saves when enough has changed since the last save, or always with `force`; the
  /// error text when the save failed.
  std::optional<std::string> maybe_save(bool force);

 private:
  std::string m_path;
  ImportCheckpoint m_state;
  std::chrono::steady_clock::time_point m_saved_at;
  uint64_t m_saved_keys = 0;
};

/// Loads the checkpoint of `options` and checks it belongs to `expected` (same source,
/// kind, file identity and target); nothing when there is none. Errors name the file.
engine::Expected<std::optional<ImportCheckpoint>, std::string> resume_point(
    const ImportOptions& options, const ImportCheckpoint& expected);

/// Opens the live target of `options` (a cluster with options.cluster or when INFO cluster
/// says so), names it in `report` and tells `rules` whether it stores field TTLs; nothing
/// (report.error set) when it cannot be reached.
std::unique_ptr<RestoreTarget> open_live_target(const ImportOptions& options, KeyRules& rules,
                                                ImportReport& report);
/// Refuses (false, report.error set) target databases `target` does not have: a cluster
/// has only database 0. `dbs` maps each target database to the number of keys going there.
bool check_target_dbs(const RestoreTarget& target, const std::map<uint64_t, uint64_t>& dbs,
                      ImportReport& report);
/// Copies a cluster target's redirect counts and keys per node into `report`.
void note_cluster_stats(const RestoreTarget& target, ImportReport& report);

/// Loads the checkpoint (resume_point against keeper.state()) into `keeper`; false when the
/// import ends here: an error, or a checkpoint that says it is complete (report says which).
bool take_checkpoint(const ImportOptions& options, CheckpointKeeper& keeper, ImportReport& report);
/// Decodes a key whose value is still a DUMP payload; false with `error` naming the key.
bool materialize(engine::RdbKey& key, const engine::CheckedDumpPayload& payload,
                 std::string& error);

/// Lists (up to k_listed_keys) the keys of `names` (by target database) already in the
/// target into `report`; false when any is (report.error set) or the check failed.
bool check_conflicts(RestoreTarget& target, std::map<uint64_t, std::vector<std::string>>& names,
                     ImportReport& report);
/// Counts each acknowledged key into `report` and moves the checkpoint past it (a failed
/// save lands in `save_error`).
RestoreTarget::AckFn count_acks(ImportReport& report, CheckpointKeeper& keeper,
                                std::optional<std::string>& save_error);

/// The databases holding keys and how many, from INFO keyspace ("db3:keys=10,...").
std::map<uint64_t, uint64_t> keyspace_key_counts(std::string_view info);
/// The databases holding keys, from INFO keyspace.
std::vector<uint64_t> keyspace_dbs(std::string_view info);
/// True when target key `name` may have been written by an import under `rules`: its
/// source name (undoing a prefix rename) is one the rules keep.
bool could_be_ours(const KeyRules& rules, std::string_view name);
/// True when target database `db` may receive keys under `rules`.
bool destination_db(const KeyRules& rules, uint64_t db);
/// Calls `fn(connection, db, keys)` for every batch of keys of the target's destination
/// databases that the import could have written (SCAN).
engine::Expected<bool, std::string> scan_target(
    const engine::RespEndpoint& to, const KeyRules& rules,
    const std::function<engine::Expected<bool, std::string>(engine::RespConnection&, uint64_t,
                                                            std::vector<std::string>&)>& fn);
/// --conflict fail for sources whose keys cannot be listed before writing (commands): any
/// key of the target the rules could write (the import's marker aside) is a conflict. False
/// with report.error, blocked and conflicts_found set when there is one or the scan failed.
bool refuse_target_conflicts(const engine::RespEndpoint& to, const KeyRules& rules,
                             ImportReport& report);
/// An AOF (single file, with or without an RDB preamble, or a multi-part directory) or a
/// RESP command file into either target.
void import_aof(const ImportOptions& options, KeyRules rules, ImportReport& report);

/// File source into a live target.
void import_file_to_live(const ImportOptions& options, KeyRules rules, const RdbFile& file,
                         ImportReport& report);
/// File source into the embedded engine, saved as the target's data file.
void import_file_to_embedded(const ImportOptions& options, const KeyRules& rules,
                             const RdbFile& file, ImportReport& report);
/// Live server source by replication (PSYNC, full sync, command stream) into either target.
void import_sync(const ImportOptions& options, KeyRules rules, ImportReport& report);
/// True when the file at `path` starts as JSON Lines (a '{'), whatever its name.
bool is_jsonl_file(const std::string& path);
/// JSON Lines (`keyshift rdb dump --format json`) into either target.
void import_jsonl(const ImportOptions& options, ImportReport& report);
/// Live server source (SCAN + DUMP) into either target.
void import_scan(const ImportOptions& options, KeyRules rules, ImportReport& report);

}  // namespace keyshift::migrate::import_detail
