#pragma once

// The primary's side of replication without I/O: the backlog of the stream it sent (the bytes
// a reconnecting replica may be missing) and the PSYNC decision, Valkey's
// primaryTryPartialResynchronization, as pure functions of the history and the request.
#include <cstdint>
#include <string>
#include <string_view>

namespace keyshift::engine {

/// A circular buffer of the last `capacity` bytes of the replication stream, addressed by
/// stream offset as Valkey's repl_backlog is: the first byte kept is at offset
/// `first_byte_offset()`, the last at the primary's master_repl_offset.
class ReplBacklog {
 public:
  /// An empty backlog whose next byte will be at stream offset `next_offset` + 1.
  ReplBacklog(uint64_t capacity, uint64_t next_offset);

  /// Adds bytes of the stream, dropping the oldest beyond the capacity.
  void append(std::string_view bytes);
  /// repl-backlog-size changed: keeps the newest bytes that still fit.
  void resize(uint64_t capacity);
  uint64_t capacity() const { return m_capacity; }
  /// Bytes held (repl_backlog_histlen).
  uint64_t histlen() const { return m_histlen; }
  /// Offset of the oldest byte held (repl_backlog_first_byte_offset).
  uint64_t first_byte_offset() const { return m_end_offset - m_histlen + 1; }
  /// Offset of the last byte held (master_repl_offset while the backlog exists).
  uint64_t end_offset() const { return m_end_offset; }
  /// The bytes after stream offset `offset` (which must lie in [first-1, end]).
  std::string copy_after(uint64_t offset) const;

 private:
  std::string m_buf;
  uint64_t m_capacity;
  uint64_t m_histlen = 0;
  size_t m_head = 0;  // where the next byte goes
  uint64_t m_end_offset;
};

/// What the primary knows of its history when a PSYNC arrives.
struct PsyncHistory {
  std::string_view replid;
  std::string_view replid2;
  int64_t second_offset = -1;  // replid2 is valid for offsets below this
  bool has_backlog = false;
  uint64_t backlog_first = 0;  // repl_backlog->offset
  uint64_t backlog_histlen = 0;
};

/// The answer to PSYNC <replid> <offset>.
enum class PsyncDecision : uint8_t {
  full_requested,  ///< "?" or no usable history: full sync, not a failed partial attempt
  full_replid,     ///< an unknown replid (or replid2 past where it ended): full sync
  full_backlog,    ///< the offset lies outside the backlog: full sync
  partial,         ///< +CONTINUE and the backlog from the offset
};

/// Valkey's primaryTryPartialResynchronization decision for a replica that asks for
/// `replid` from `offset` (the offset of the first byte it lacks).
PsyncDecision decide_psync(const PsyncHistory& history, std::string_view replid, int64_t offset);

}  // namespace keyshift::engine
