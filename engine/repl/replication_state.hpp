#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

// What a server knows of its own place in replication, kept apart from any I/O so that the
// transitions REPLICAOF, the link and REPLICAOF NO ONE make are testable on their own. The
// engine holds one (commands read and change it); the server's ReplicaLink drives the link
// states and the offset.
namespace keyshift::engine {

/// The replica's link to its primary, as ROLE names the states.
enum class ReplLinkState : uint8_t {
  none,        ///< not a replica
  connect,     ///< waiting to dial (again)
  connecting,  ///< dialing, handshake and PSYNC in flight
  sync,        ///< receiving the full-sync payload
  connected,   ///< applying the command stream
};

/// ROLE's word for `state` ("none", "connect", "connecting", "sync", "connected").
std::string_view repl_link_state_name(ReplLinkState state);

/// A server's replication role and history: the primary it follows, the link's state, the
/// replication IDs (the current one, and the previous one with the offset it ended at, as
/// a promoted replica keeps them for PSYNC from the other replicas) and the offsets.
class ReplicationState {
 public:
  /// Starts as a primary with history `replid` at offset 0.
  explicit ReplicationState(std::string replid);

  bool is_replica() const { return !m_host.empty(); }
  const std::string& primary_host() const { return m_host; }
  int primary_port() const { return m_port; }
  ReplLinkState state() const { return m_state; }
  /// Changes whenever the primary changes (REPLICAOF), so that a connection attempt started
  /// for another primary is thrown away when it completes.
  uint64_t generation() const { return m_generation; }

  /// REPLICAOF host port: false (nothing changes) when it already follows that primary.
  /// The data and history are kept, so that PSYNC can continue from them.
  bool follow(std::string host, int port);
  /// REPLICAOF NO ONE: a primary again, with a new history `new_replid`; the old one
  /// becomes replid2, valid up to the current offset. False when not a replica.
  bool promote(std::string new_replid);

  /// The link is being dialed.
  void on_connecting();
  /// PSYNC answered: a full sync of history `replid` from `offset` (a payload follows), or
  /// a continuation (`replid` is the primary's, possibly new: the old one becomes replid2).
  void on_psync(bool full, const std::string& replid, uint64_t offset);
  /// The full-sync payload is loaded: the command stream follows.
  void on_loaded();
  /// The link failed or was closed at `now_ms`: dial again later, keeping history and
  /// offset for a continuation.
  void on_link_lost(int64_t now_ms);
  /// A command of the stream was applied: the offset after it.
  void on_applied(uint64_t offset) { m_offset = offset; }
  /// As a primary, `n` bytes were added to the replication stream (master_repl_offset).
  void advance(uint64_t n) { m_offset += n; }
  /// A new backlog has no past history: replid2 is forgotten (clearReplicationId2).
  void clear_replid2() {
    m_replid2 = std::string(40, '0');
    m_second_offset = -1;
  }
  /// Bytes of the stream were read (up to `offset`), applied or not.
  void on_read(uint64_t offset) { m_read_offset = offset; }
  /// Something arrived from the primary at `now_ms`.
  void on_io(int64_t now_ms) { m_last_io_ms = now_ms; }
  /// The full sync's progress: `read` payload bytes of `total` (-1: diskless, unknown).
  void on_sync_progress(int64_t total, uint64_t read) {
    m_sync_total = total;
    m_sync_read = read;
    m_loading = m_state == ReplLinkState::sync;
  }
  /// The old dataset is flushed and the payload is being loaded (clients get LOADING).
  bool sync_loading() const { return m_loading && m_state == ReplLinkState::sync; }

  /// The ID of the data's history (master_replid).
  const std::string& replid() const { return m_replid; }
  /// DEBUG CHANGE-REPL-ID: a new ID for the current history.
  void set_replid(std::string replid) { m_replid = std::move(replid); }
  const std::string& replid2() const { return m_replid2; }
  /// Where replid2's history ended plus one (second_repl_offset), -1 without replid2.
  int64_t second_offset() const { return m_second_offset; }
  /// The offset of the last command applied (slave_repl_offset, master_repl_offset).
  uint64_t offset() const { return m_offset; }
  /// The offset of the last byte read from the primary (slave_read_repl_offset).
  uint64_t read_offset() const { return m_read_offset; }
  /// Since when the link is down (unix ms; 0 when it never was up).
  int64_t down_since_ms() const { return m_down_since_ms; }
  /// When the primary last sent something (unix ms).
  int64_t last_io_ms() const { return m_last_io_ms; }
  int64_t sync_total() const { return m_sync_total; }
  uint64_t sync_read() const { return m_sync_read; }
  /// Whether the link was ever up since the last REPLICAOF (PSYNC may continue then, or
  /// from the history the server had as a primary).
  bool has_history() const { return m_has_history; }

 private:
  std::string m_host;
  int m_port = 0;
  ReplLinkState m_state = ReplLinkState::none;
  uint64_t m_generation = 0;
  std::string m_replid;
  std::string m_replid2 = std::string(40, '0');
  int64_t m_second_offset = -1;
  uint64_t m_offset = 0;
  uint64_t m_read_offset = 0;
  int64_t m_down_since_ms = 0;
  bool m_has_history = true;
  int64_t m_last_io_ms = 0;
  int64_t m_sync_total = 0;
  uint64_t m_sync_read = 0;
  bool m_loading = false;
};

}  // namespace keyshift::engine
