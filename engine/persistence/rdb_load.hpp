#pragma once

#include "engine/keyspace/entry.hpp"
#include "engine/persistence/rdb_reader.hpp"
#include "engine/util/expected.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace keyshift::engine {

class Engine;

/// How to load.
struct RdbLoadOptions {
  RdbReadOptions read;
  /// Skip keys whose type the engine cannot hold (module values, Path Hashes) instead of
  /// failing; they are counted in RdbLoadStats::skipped_unsupported.
  bool skip_unsupported = false;
  /// A key already in the engine is replaced instead of failing the load (DEBUG RELOAD
  /// MERGE).
  bool replace_existing = false;
  /// Files read on a second thread: how the reading thread shares work with the inserting
  /// one. `when_idle` leaves a batch's values (reading and building them) to the inserter
  /// when it is about to run out of work; `always` and `never` pin the choice (tests).
  enum class Share : uint8_t { when_idle, always, never };
  Share share = Share::when_idle;
};

/// What a load did.
struct RdbLoadStats {
  RdbSummary summary;
  uint64_t keys_loaded = 0;
  uint64_t expired_skipped = 0;  // keys (or hashes whose every field) already expired
  uint64_t empty_skipped = 0;    // empty collections, which Valkey skips too
  uint64_t skipped_unsupported = 0;
  std::vector<std::string> functions;  // library code of FUNCTION2 records
};

/// Loads an RDB file held in memory into `engine`'s databases, adding to what they hold.
/// Keys already expired are skipped as Valkey's primary does. Validation is complete
/// before a key is added, but a failure midway leaves the keys loaded so far: callers that
/// need all-or-nothing load into a fresh engine. Keyspace events are not emitted.
Expected<RdbLoadStats, RdbError> load_rdb(Engine& engine, std::string_view file,
                                          const RdbLoadOptions& options = {});

/// Builds the engine value for a decoded RDB value (also used by RESTORE). A hash's fields
/// whose TTL is not after `now_ms` are dropped. Fails with a message for an empty value or
/// a type the engine does not hold.
Expected<Entry::ValueSpec, std::string> build_engine_value(Engine& engine, RdbValue&& value,
                                                           int64_t now_ms);

}  // namespace keyshift::engine
