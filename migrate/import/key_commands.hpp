#pragma once

#include "engine/persistence/rdb_value.hpp"
#include "engine/util/expected.hpp"
#include "migrate/import/live_target.hpp"

#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

// A key written to a live target as plain commands (`--method commands`, and big keys):
// RPUSH / SADD / ZADD / HSET / XADD in chunks of bounded size into a temporary key, then
// the stream's metadata and groups, the TTL, and one RENAME into place, so that neither a
// reader nor a crash ever sees half a key and a rerun, which starts the key over from a
// DEL of the temporary key, never doubles an element.
namespace keyshift::migrate {

/// How keys go as commands.
struct KeyCommandOptions {
  size_t chunk_bytes = size_t{1} << 20;  ///< element bytes per command
  size_t chunk_elements = 4096;          ///< elements per command
  bool replace = false;     ///< RENAME / SET over a key the target has (else RENAMENX / NX)
  bool field_ttls = false;  ///< the target has HPEXPIREAT
};

/// The temporary name a key is built under: in the key's hash slot (the key's hash tag, or
/// the whole key as one), so a cluster can RENAME it.
std::string temporary_key(std::string_view key);

/// Writes one key at a time as commands through a live target, one server or a cluster.
class KeyCommands {
 public:
  KeyCommands(RestoreTarget& target, KeyCommandOptions options);

  /// Starts `key` (in `db`) of `kind`: clears its temporary key.
  engine::Expected<bool, std::string> begin(uint64_t db, std::string_view key,
                                            engine::RdbKind kind);
  /// Names a stream's pending entries before its entries are added: a deleted entry they
  /// refer to is added too (then deleted again), so that XCLAIM can keep it pending.
  void expect_pending(const engine::RdbStream& stream);
  /// Sends the elements of `batch` (items, zset, hash or stream entries; a string's bytes).
  engine::Expected<bool, std::string> add(engine::RdbValue& batch);
  /// Sends what completes the key: a stream's metadata and groups (`stream`, from the last
  /// batch), the TTL (`expire_ms`, absolute, -1: none) and the rename; the target
  /// acknowledges `pending` with the rename's reply.
  engine::Expected<bool, std::string> finish(PendingKey pending, int64_t expire_ms,
                                             const engine::RdbStream* stream);

  /// Commands sent so far, and keys that took more than one chunk.
  uint64_t commands() const { return m_commands; }
  uint64_t chunked_keys() const { return m_chunked_keys; }

 private:
  engine::Expected<bool, std::string> part(std::vector<std::string>& args);
  engine::Expected<bool, std::string> flush_chunk();
  engine::Expected<bool, std::string> string_value(PendingKey& pending, int64_t expire_ms);
  engine::Expected<bool, std::string> stream_tail(const engine::RdbStream& stream);

  RestoreTarget& m_target;
  KeyCommandOptions m_options;
  uint64_t m_db = 0;
  std::string m_key;
  std::string m_temp;
  engine::RdbKind m_kind = engine::RdbKind::string;
  std::string m_string;              // a string's bytes, written at finish
  std::vector<std::string> m_chunk;  // the command being filled
  size_t m_chunk_bytes = 0;
  size_t m_chunk_elements = 0;
  uint64_t m_elements = 0;                                    // elements of this key sent
  uint64_t m_chunks = 0;                                      // element commands of this key
  std::vector<std::pair<std::string, int64_t>> m_field_ttls;  // of the chunk being filled
  std::vector<std::string> m_deleted;  // IDs of a stream's deleted entries, added for its PEL
  std::set<std::pair<uint64_t, uint64_t>> m_pending;  // a stream's pending IDs
  uint64_t m_commands = 0;
  uint64_t m_chunked_keys = 0;
  std::vector<std::string_view> m_views;
};

}  // namespace keyshift::migrate
