#pragma once

#include "engine/engine.hpp"
#include "engine/persistence/rdb_reader.hpp"
#include "engine/persistence/rdb_writer.hpp"
#include "engine/util/clock.hpp"
#include "engine/util/expected.hpp"
#include "engine/util/mapped_file.hpp"
#include "migrate/import/checkpoint.hpp"
#include "migrate/import/import.hpp"
#include "migrate/import/live_target.hpp"
#include "migrate/key_rules.hpp"
#include "migrate/rdb_inspect.hpp"

#include <chrono>
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

/// Opens the live target of `options`, names it in `report` and tells `rules` whether it
/// stores field TTLs; nothing (report.error set) when it cannot be reached.
std::optional<LiveTarget> open_live_target(const ImportOptions& options, KeyRules& rules,
                                           ImportReport& report);

/// Loads the checkpoint (resume_point against keeper.state()) into `keeper`; false when the
/// import ends here: an error, or a checkpoint that says it is complete (report says which).
bool take_checkpoint(const ImportOptions& options, CheckpointKeeper& keeper, ImportReport& report);
/// Decodes a key whose value is still a DUMP payload; false with `error` naming the key.
bool materialize(engine::RdbKey& key, const engine::CheckedDumpPayload& payload,
                 std::string& error);

/// Lists (up to k_listed_keys) the keys of `names` (by target database) already in the
/// target into `report`; false when any is (report.error set) or the check failed.
bool check_conflicts(LiveTarget& target, std::map<uint64_t, std::vector<std::string>>& names,
                     ImportReport& report);
/// Counts each acknowledged key into `report` and moves the checkpoint past it (a failed
/// save lands in `save_error`).
LiveTarget::AckFn count_acks(ImportReport& report, CheckpointKeeper& keeper,
                             std::optional<std::string>& save_error);

/// File source into a live target.
void import_file_to_live(const ImportOptions& options, KeyRules rules, const RdbFile& file,
                         ImportReport& report);
/// File source into the embedded engine, saved as the target's data file.
void import_file_to_embedded(const ImportOptions& options, const KeyRules& rules,
                             const RdbFile& file, ImportReport& report);
/// True when the file at `path` starts as JSON Lines (a '{'), whatever its name.
bool is_jsonl_file(const std::string& path);
/// JSON Lines (`keyshift rdb dump --format json`) into either target.
void import_jsonl(const ImportOptions& options, ImportReport& report);
/// Live server source (SCAN + DUMP) into either target.
void import_scan(const ImportOptions& options, KeyRules rules, ImportReport& report);

}  // namespace keyshift::migrate::import_detail
