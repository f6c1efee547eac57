#pragma once

#include "engine/ds/intset.hpp"
#include "engine/ds/listpack.hpp"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

// Neutral values decoded from RDB: plain containers, independent of how the file encoded
// them (zipmap, ziplist, listpack, intset, ...) and of the engine's own representation.
namespace keyshift::engine {

/// A stream ID.
struct RdbStreamId {
  uint64_t ms = 0;
  uint64_t seq = 0;
  friend bool operator==(const RdbStreamId&, const RdbStreamId&) = default;
};

/// One live stream entry: its ID and field/value pairs in entry order.
struct RdbStreamEntry {
  RdbStreamId id;
  std::vector<std::pair<std::string, std::string>> fields;
  /// A deleted entry still in its node: only RdbElementReader hands these out.
  bool deleted = false;
};

/// A pending entry of a consumer group.
struct RdbStreamNack {
  RdbStreamId id;
  int64_t delivery_time_ms = 0;
  uint64_t delivery_count = 0;
};

/// A consumer of a group, with the IDs it owns in the group's PEL.
struct RdbStreamConsumer {
  std::string name;
  int64_t seen_time_ms = 0;
  int64_t active_time_ms = -1;  // -1: not in the file (types 15 and 19)
  std::vector<RdbStreamId> pending;
};

/// A consumer group.
struct RdbStreamGroup {
  std::string name;
  RdbStreamId last_delivered;
  int64_t entries_read = -1;  // -1: not in the file (type 15)
  std::vector<RdbStreamNack> pending;
  std::vector<RdbStreamConsumer> consumers;
};

/// A stream node as stored: its master ID and its listpack (validated by the reader), kept
/// so that a load keeps the file's node boundaries and deleted entries as Valkey does.
struct RdbStreamNode {
  RdbStreamId master;
  std::string listpack;
};

/// A whole stream.
struct RdbStream {
  std::vector<RdbStreamEntry> entries;
  std::vector<RdbStreamNode> nodes;  // empty when the value was not read from a file
  uint64_t length = 0;
  RdbStreamId last_id;
  RdbStreamId first_id;
  RdbStreamId max_deleted_id;
  uint64_t entries_added = 0;
  bool has_v2_metadata = false;  // first/max-deleted/entries-added came from the file
  std::vector<RdbStreamGroup> groups;
};

/// A hash field; `expire_ms` is -1 without a field TTL.
struct RdbHashField {
  std::string field;
  std::string value;
  int64_t expire_ms = -1;
};

/// A quicklist node as stored: how many of the list's elements it holds, and whether it is
/// a plain node (one large element stored as is). Valkey keeps the stored node boundaries.
struct RdbListNode {
  uint32_t count = 0;
  bool plain = false;
};

/// One path of a Valkey 9.2 Path Hash and the field/value pairs stored under it.
struct RdbPath {
  std::string path;
  std::vector<std::pair<std::string, std::string>> fields;
};

/// What kind of value a key holds. A Path Hash (Valkey 9.2) is read and reported but has
/// no engine type, so it never loads.
enum class RdbKind : uint8_t { string, list, set, zset, hash, stream, module, path_hash };

/// One decoded value. Only the members of its kind are used.
struct RdbValue {
  RdbKind kind = RdbKind::string;
  uint8_t rdb_type = 0;                              // the type byte in the file (rdb::Type)
  std::string str;                                   // string
  std::vector<std::string> items;                    // list (in order), set (members)
  std::vector<RdbListNode> list_nodes;               // quicklist types (14, 18): the stored nodes
  std::vector<std::pair<std::string, double>> zset;  // members and scores
  std::vector<RdbHashField> hash;
  RdbStream stream;
  std::vector<RdbPath> paths;  // path_hash, in the file's order
  std::string module_name;     // module: the 9-character type name
  int module_version = 0;
  // RdbReadOptions::keep_blocks: validated blocks taken from the file as they are, in place
  // of `items`/`hash`. A hash (type 16) or set (type 20) listpack is packed[0]; a quicklist
  // (type 18) has one listpack per packed node in list_nodes order, while its plain nodes'
  // elements stay in `items`; a type-11 set is `intset`.
  std::vector<Listpack> packed;
  Intset intset;
};

}  // namespace keyshift::engine
