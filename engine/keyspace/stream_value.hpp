#pragma once

// The stream value, laid out as Valkey lays it out so that RDB can store its nodes as they
// are: an ordered map from each node's master ID to a listpack holding the node's entries
// (a master entry with the field names of the node's first entry, then entries as ID
// deltas with either their own field names or a flag saying they reuse the master's).
// Deleted entries stay in their node, flagged, until the whole node is dropped. Consumer
// groups hold their pending entries (PEL) and consumers; each consumer points at the
// group's PEL records it owns.

#include "engine/ds/listpack.hpp"
#include "engine/keyspace/digest.hpp"
#include "engine/keyspace/object.hpp"

#include <compare>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace keyshift::engine {

/// A stream entry ID: milliseconds and sequence.
struct StreamId {
  uint64_t ms = 0;
  uint64_t seq = 0;

  friend auto operator<=>(const StreamId&, const StreamId&) = default;
  /// The largest possible ID.
  static constexpr StreamId max() { return {UINT64_MAX, UINT64_MAX}; }
  bool is_zero() const { return ms == 0 && seq == 0; }
  /// Moves to the next ID; false (and wraps to 0-0) at the maximum.
  bool incr();
  /// Moves to the previous ID; false (and wraps to the maximum) at 0-0.
  bool decr();
  /// "ms-seq".
  std::string text() const;
  /// The 16-byte big-endian form Valkey uses as the node key in RDB.
  std::string encode() const;
};

struct StreamConsumer;

/// A pending entry: delivered to a consumer, not yet acknowledged.
struct StreamNack {
  int64_t delivery_time_ms = 0;
  uint64_t delivery_count = 1;
  StreamConsumer* consumer = nullptr;
};

/// A consumer of a group.
struct StreamConsumer {
  std::string name;
  int64_t seen_time_ms = 0;             // last interaction
  int64_t active_time_ms = -1;          // last successful read or claim; -1 never
  std::map<StreamId, StreamNack*> pel;  // points into the group's PEL
};

/// A consumer group. `entries_read` is -1 when unknown (Valkey's SCG_INVALID_ENTRIES_READ).
struct StreamGroup {
  StreamId last_id;
  int64_t entries_read = -1;
  std::map<StreamId, StreamNack> pel;
  std::map<std::string, std::unique_ptr<StreamConsumer>> consumers;
};

/// Limits consulted when appending: a node closes at this many bytes / entries (0: none).
struct StreamLimits {
  uint64_t node_max_bytes = 4096;
  uint64_t node_max_entries = 100;
};

/// One entry read out of a node. Field and value views point into the node (or `buf`) and
/// are valid until the stream changes.
struct StreamEntryView {
  StreamId id;
  int64_t flags = 0;
  Listpack::Pos flags_pos = Listpack::k_none;
  std::vector<std::pair<LpValue, LpValue>> fields;
  bool deleted() const;
};

/// Reads the entries of one node (Valkey's node layout) one at a time.
class StreamNodeReader {
 public:
  StreamNodeReader(StreamId master, const Listpack& lp);
  /// The position of the node's first entry (its flags), or k_none.
  Listpack::Pos first_entry() const { return m_first; }
  /// Decodes the entry at `pos` into `view` (its fields too when `with_fields`); returns
  /// the position of the next entry, or k_none.
  Listpack::Pos decode(Listpack::Pos pos, StreamEntryView& view, bool with_fields) const;

 private:
  StreamId m_master;
  const Listpack& m_lp;
  int64_t m_master_fields = 0;
  Listpack::Pos m_master_start = Listpack::k_none;
  Listpack::Pos m_first = Listpack::k_none;
};

/// How XADD/XTRIM trim.
struct StreamTrim {
  enum class Strategy : uint8_t { none, maxlen, minid };
  Strategy strategy = Strategy::none;
  bool approx = false;
  int64_t limit = 0;  // 0: no limit on entries removed
  uint64_t maxlen = 0;
  StreamId minid;
};

class StreamValue final : public HeapObject {
 public:
  /// Largest total field/value bytes of one entry (Valkey's STREAM_LISTPACK_MAX_SIZE).
  static constexpr uint64_t k_max_entry_bytes = uint64_t{1} << 30;

  StreamValue() = default;
  size_t bytes() const override { return sizeof(*this) + m_extra_bytes; }
  HeapObject* clone() const override;

  /// Live entries.
  uint64_t length() const { return m_length; }
  StreamId last_id() const { return m_last_id; }
  StreamId first_id() const { return m_first_id; }
  StreamId max_deleted_id() const { return m_max_deleted_id; }
  uint64_t entries_added() const { return m_entries_added; }
  void set_last_id(StreamId id) { m_last_id = id; }
  void set_first_id(StreamId id) { m_first_id = id; }
  void set_max_deleted_id(StreamId id) { m_max_deleted_id = id; }
  void set_entries_added(uint64_t n) { m_entries_added = n; }

  /// The nodes by master ID (radix-tree-keys is their number).
  const std::map<StreamId, Listpack>& nodes() const { return m_nodes; }

  /// Appends an entry with `id` (greater than last_id(), checked by the caller) and
  /// `field_values` (field, value, field, value...), as Valkey's streamAppendItem.
  void append(StreamId id, std::span<const std::string_view> field_values,
              const StreamLimits& limits);
  /// Adds a node read from RDB (master ID, then a listpack the reader validated, after the
  /// last node); its live entries count toward length(). Metadata is set separately.
  void load_node(StreamId master, Listpack&& lp);
  /// Deletes the live entry `id`; false when there is none. Does not touch first-id or
  /// max-deleted-id (XDEL does, once for all its IDs).
  bool remove(StreamId id);
  /// Trims as Valkey's streamTrim; returns the number of entries removed.
  int64_t trim(const StreamTrim& t);
  /// The first (or last) live entry's ID; false when the stream is empty.
  bool edge_id(bool first, StreamId& out) const;
  /// True when a live entry `id` exists.
  bool contains(StreamId id) const;

  /// Calls `fn(const StreamEntryView&)` for live entries in [start, end], ascending or
  /// (`rev`) descending, while it returns true.
  template <typename Fn>
  void range(StreamId start, StreamId end, bool rev, Fn&& fn) const;

  // --- Consumer groups (Valkey's cgroups rax: ordered by name) --------------------------
  const std::map<std::string, StreamGroup>& groups() const { return m_groups; }
  StreamGroup* group(std::string_view name);
  /// Creates a group; null when one of that name exists.
  StreamGroup* create_group(std::string_view name, StreamId last_id, int64_t entries_read);
  /// Destroys a group; false when absent.
  bool destroy_group(std::string_view name);
  /// Creates a consumer; null when it exists.
  StreamConsumer* create_consumer(StreamGroup& g, std::string_view name, int64_t now_ms);
  /// Deletes a consumer and its pending entries; returns how many were pending.
  uint64_t delete_consumer(StreamGroup& g, StreamConsumer* c);
  /// Adds a pending entry to `g` owned by `c` (which must not be pending yet).
  StreamNack* add_pending(StreamGroup& g, StreamId id, StreamConsumer* c, int64_t now_ms,
                          uint64_t delivery_count);
  /// Removes a pending entry (XACK, or XCLAIM of a deleted entry); false when absent.
  bool remove_pending(StreamGroup& g, StreamId id);
  /// Moves a pending entry to consumer `c` (from another consumer or from none).
  void transfer_pending(StreamGroup& g, StreamId id, StreamNack& nack, StreamConsumer* c);
  /// Valkey's streamEstimateDistanceFromFirstEverEntry; -1 when it cannot be told.
  int64_t estimate_distance(StreamId id) const;
  /// True when [start, end] may hold a deleted entry (Valkey's streamRangeHasTombstones).
  bool range_has_tombstones(StreamId start, StreamId end) const;

  /// Decodes every entry of one node, deleted ones included.
  static void decode_node(StreamId master, const Listpack& lp, std::vector<StreamEntryView>& out);

 private:
  static constexpr size_t k_node_overhead = 64;
  static constexpr size_t k_group_overhead = 160;
  static constexpr size_t k_consumer_overhead = 128;
  static constexpr size_t k_nack_overhead = 96;
  static constexpr size_t k_consumer_pel_overhead = 64;

  void account(int64_t delta) {
    m_extra_bytes = static_cast<size_t>(static_cast<int64_t>(m_extra_bytes) + delta);
  }
  void remove_node(std::map<StreamId, Listpack>::iterator it);

  std::map<StreamId, Listpack> m_nodes;
  uint64_t m_length = 0;
  StreamId m_last_id;
  StreamId m_first_id;
  StreamId m_max_deleted_id;
  uint64_t m_entries_added = 0;
  std::map<std::string, StreamGroup> m_groups;
  size_t m_extra_bytes = 0;
};

template <typename Fn>
void StreamValue::range(StreamId start, StreamId end, bool rev, Fn&& fn) const {
  if (start > end || m_nodes.empty()) {
    return;
  }
  // One view is reused for every entry; its fields are decoded only for entries emitted.
  StreamEntryView e;
  if (!rev) {
    auto it = m_nodes.upper_bound(start);
    if (it != m_nodes.begin()) {
      --it;
    }
    for (; it != m_nodes.end() && it->first <= end; ++it) {
      StreamNodeReader reader(it->first, it->second);
      for (Listpack::Pos p = reader.first_entry(); p != Listpack::k_none;) {
        Listpack::Pos next = reader.decode(p, e, false);
        if (!e.deleted() && e.id >= start) {
          if (e.id > end) {
            return;
          }
          reader.decode(p, e, true);
          if (!fn(e)) {
            return;
          }
        }
        p = next;
      }
    }
    return;
  }
  std::vector<Listpack::Pos> positions;
  auto it = m_nodes.upper_bound(end);
  while (it != m_nodes.begin()) {
    --it;
    StreamNodeReader reader(it->first, it->second);
    positions.clear();
    for (Listpack::Pos p = reader.first_entry(); p != Listpack::k_none;
         p = reader.decode(p, e, false)) {
      positions.push_back(p);
    }
    for (auto p = positions.rbegin(); p != positions.rend(); ++p) {
      reader.decode(*p, e, false);
      if (e.deleted() || e.id > end) {
        continue;
      }
      if (e.id < start) {
        return;
      }
      reader.decode(*p, e, true);
      if (!fn(e)) {
        return;
      }
    }
  }
}

/// DEBUG DIGEST-VALUE of a stream (Valkey's: each live entry's "ms.seq", then its fields).
Digest digest_stream(const StreamValue& s, bool has_expire, const Digest& seed = {});

}  // namespace keyshift::engine
