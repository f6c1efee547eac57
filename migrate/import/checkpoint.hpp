#pragma once

#include "engine/util/expected.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

// Where an interrupted import stands: written (atomically, fsync'ed) only after the target
// acknowledged every write it covers, so a rerun that skips what it covers loses nothing
// and writes nothing twice. The format is keyshift-import-checkpoint(5).
namespace keyshift::migrate {

/// The format's name and version, the first two members of every checkpoint.
inline constexpr const char* k_checkpoint_format = "keyshift-import-checkpoint";
inline constexpr int k_checkpoint_version = 1;

/// One database's scan position (scan sources).
struct ScanPosition {
  uint64_t db = 0;
  std::string cursor = "0";  ///< the next SCAN cursor; "0" after the last batch
  bool done = false;
  /// A cluster source: the primary ("host:port") this cursor belongs to; empty otherwise.
  std::string node;
};

/// One primary's replication position (a cluster source: one per primary).
struct SyncPosition {
  std::string node;     ///< the primary's cluster node ID
  std::string address;  ///< its "host:port" when the position was saved
  std::string replid;
  std::string replid2;
  uint64_t repl_offset = 0;
  bool synced = false;
  uint64_t keys_written = 0;
};

/// An import's progress.
struct ImportCheckpoint {
  std::string source;  ///< the source as given (path or URL without password)
  std::string target;  ///< the target as described (endpoint or data file)
  std::string kind;    ///< "file", "jsonl", "scan" or "sync"
  // Files: the identity of the file read and the end of the last acknowledged key.
  uint64_t source_size = 0;
  int64_t source_mtime_us = 0;
  uint64_t offset = 0;  ///< keys starting before this offset are in the target
  // Scans: the position per database.
  std::vector<ScanPosition> scans;
  // Replication ("sync"): the primary's IDs and the offset whose every command the target
  // acknowledged; `synced` once the full sync's keys are all acknowledged (until then a
  // rerun syncs in full again).
  std::string replid;
  std::string replid2;
  uint64_t repl_offset = 0;
  bool synced = false;
  /// A cluster source by replication: a position per primary (the members above stay empty).
  std::vector<SyncPosition> streams;
  uint64_t keys_written = 0;
  bool complete = false;
};

/// The checkpoint as JSON text (newline-terminated).
std::string render_checkpoint(const ImportCheckpoint& checkpoint);
/// Reads a checkpoint; the error names the byte offset or the missing member.
engine::Expected<ImportCheckpoint, std::string> parse_checkpoint(std::string_view text);

/// Reads the checkpoint at `path`: nothing when there is no file, an error naming the file
/// when it cannot be read or parsed.
engine::Expected<std::optional<ImportCheckpoint>, std::string> load_checkpoint(
    const std::string& path);
/// Replaces the checkpoint at `path` (temp file, fsync, rename, fsync of the directory).
std::optional<std::string> save_checkpoint(const std::string& path,
                                           const ImportCheckpoint& checkpoint);

}  // namespace keyshift::migrate
