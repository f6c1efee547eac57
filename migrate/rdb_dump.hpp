#pragma once

#include "engine/persistence/rdb_reader.hpp"
#include "engine/util/expected.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

// `keyshift rdb dump`: every key of an RDB file written out as JSON Lines (a format
// `import` reads back), as RESP commands that rebuild the dataset on any server through
// `redis-cli --pipe`, or as one line per key. Binary safe: no byte of a key or value is lost.
namespace keyshift::migrate {

/// What `rdb dump` writes.
enum class RdbDumpFormat : uint8_t { json, resp, keys };

/// How to dump.
struct RdbDumpOptions {
  RdbDumpFormat format = RdbDumpFormat::json;
  /// Only keys of this database.
  std::optional<uint64_t> db;
  /// Only keys matching this glob (Valkey's KEYS rules); empty matches every key.
  std::string match;
  /// Elements per RESP command at most, so no command grows without bound.
  size_t batch = 1000;
  /// Called with the offset of each key read and the file's size; may be empty.
  std::function<void(uint64_t offset, uint64_t size)> progress;
};

/// What a dump wrote.
struct RdbDumpStats {
  engine::RdbSummary summary;
  uint64_t keys_written = 0;
  uint64_t keys_filtered = 0;  // left out by --db or --match
  /// Module keys: listed in json/keys, left out of resp (no command recreates them).
  uint64_t module_keys = 0;
  /// Valkey 9.2 Path Hash keys: listed in json/keys, left out of resp (keyshift writes no
  /// PH* commands).
  uint64_t path_hash_keys = 0;
  /// Stream pending entries whose ID is no longer in the stream: XCLAIM cannot recreate them.
  uint64_t lost_pending = 0;
};

/// Receives the output in pieces, in order.
using RdbDumpSink = std::function<void(std::string_view)>;

/// Reads `file` (a whole RDB file) and writes every selected key to `sink` as
/// `options.format` says; stops at the first structural problem of the file.
engine::Expected<RdbDumpStats, engine::RdbError> dump_rdb(std::string_view file,
                                                          const RdbDumpOptions& options,
                                                          const RdbDumpSink& sink);

/// "ms-seq".
std::string stream_id_text(const engine::RdbStreamId& id);

}  // namespace keyshift::migrate
