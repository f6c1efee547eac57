#pragma once

// The primary's side of replication (Valkey's replication.c as a primary): replicas are
// sessions of the server's event loop flagged k_session_replica; a full sync forks a child
// that writes the snapshot while the engine goes on serving, and the child's file goes out
// as the payload followed by the stream written since the fork; the stream is one more
// propagation sink, kept in a backlog for partial resyncs. Nothing here reads a socket: the
// bytes go into the replica sessions' output, which the host sends.
#include "engine/propagation.hpp"
#include "engine/repl/backlog.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace keyshift::engine {

class Engine;
class Session;

/// Where a replica is in its synchronization (Valkey's REPLICA_STATE_*).
enum class ReplicaState : uint8_t {
  handshake,          ///< REPLCONF seen, no SYNC/PSYNC yet (not a replica yet)
  wait_bgsave_start,  ///< full sync asked, waiting for a snapshot child to start
  wait_bgsave_end,    ///< +FULLRESYNC sent, the child writes the snapshot
  send_bulk,          ///< the snapshot file is being sent
  online,             ///< payload sent (or +CONTINUE): receives the stream
};

/// What INFO's slaveN line, ROLE and WAIT know of one replica.
struct ReplicaPeer {
  uint64_t session_id = 0;
  std::string ip;  // REPLCONF ip-address, else the peer's address
  int listening_port = 0;
  bool capa_eof = false;
  bool capa_psync2 = false;
  ReplicaState state = ReplicaState::handshake;
  uint64_t ack_offset = 0;
  uint64_t aof_offset = 0;
  int64_t ack_time_s = 0;
  bool old_sync = false;  // SYNC rather than PSYNC: no +FULLRESYNC line
  // After an `$EOF:` payload the stream waits for the first ACK: the replica finds the mark
  // only at the end of what it reads (Valkey's repl_start_cmd_stream_on_ack).
  bool stream_on_ack = false;
  bool ack_seen = false;       // an ACK came since the payload
  bool socket_target = false;  // fed from the diskless child's pipe, not a file
  int64_t wait_start_s = 0;    // when it began waiting for a child (repl-diskless-sync-delay)
  int payload_fd = -1;         // the snapshot file while send_bulk
  uint64_t payload_left = 0;   // its bytes not yet queued
  std::string trailer;         // the $EOF: mark, sent after the file
  std::string pending;         // the stream written while the snapshot is made (or before the ACK)
};

/// One engine's replicas, backlog and full-sync child.
class ReplicationPrimary final : public PropagationSink {
 public:
  explicit ReplicationPrimary(Engine& engine);
  ~ReplicationPrimary() override;
  ReplicationPrimary(const ReplicationPrimary&) = delete;
  ReplicationPrimary& operator=(const ReplicationPrimary&) = delete;

  /// Where log lines go (level as LogLevel's int).
  void set_log_sink(std::function<void(int level, std::string_view line)> sink) {
    m_log = std::move(sink);
  }

  /// The peer record of `s` (REPLCONF before SYNC creates it).
  ReplicaPeer& peer(Session& s);
  /// The peer record of `s` when it has one.
  const ReplicaPeer* find(const Session& s) const;
  /// SYNC (`psync` false) or PSYNC replid offset from `s`: the reply goes to s.out, and `s`
  /// becomes a replica session. False (an error written) when it cannot be served.
  void sync(Session& s, bool psync, std::string_view replid, int64_t offset);
  /// REPLCONF ACK offset [FACK aof_offset] from the replica `s`.
  void on_ack(Session& s, uint64_t offset, std::optional<uint64_t> aof_offset);
  /// The session went away.
  void forget(const Session& s);

  /// Once per engine cron: reaps the snapshot child and sends payloads, pings replicas
  /// every repl-ping-replica-period seconds, newlines to those waiting, the good-replica
  /// count for min-replicas-to-write.
  void cron();
  /// Before replies leave: the GETACK a WAIT asked for goes into the stream.
  void before_replies();
  /// True when a replica's snapshot payload can take its next chunk now (the host then
  /// does not sleep before its next pass).
  bool wants_pump() const;
  /// Stops a running snapshot child (shutdown).
  void shutdown();
  /// The read end of a diskless child's pipe while its bytes can go to the replicas now
  /// (the host polls it for reading and then calls pump()), else -1.
  int payload_pipe() const;
  /// Closes a diskless child's pipe once it is read to its end; the host calls it after it
  /// stopped polling the descriptor, so the number is never reused while still watched.
  void release_pipe();
  /// Moves what is ready of a payload (the snapshot file's next chunk, the pipe's bytes)
  /// into the replicas' output.
  void pump();

  /// PropagationSink: the unit goes to the stream.
  void propagate(std::span<const PropagatedCommand> unit) override;

  /// As a replica: bytes of our primary's stream, passed on verbatim to our own replicas
  /// and kept in the backlog (same replication ID and offsets as the primary's).
  void proxy(std::string_view raw);
  /// As a replica: a full sync from our primary starts; our replicas' history ends (they
  /// are dropped, to sync again), and so do the backlog and a snapshot child.
  void on_full_sync_begin();
  /// As a replica: the link carries our primary's stream now (after the payload or
  /// +CONTINUE); the backlog starts here if there was none. `new_history`: the primary's
  /// replication ID changed, which our replicas learn by reconnecting.
  void on_synced(bool new_history);

  /// Replicas (sessions that sent SYNC/PSYNC), in arrival order.
  std::vector<const ReplicaPeer*> replicas() const;
  /// The backlog, once the first replica created it.
  const ReplBacklog* backlog() const { return m_backlog.get(); }
  /// Online replicas whose acknowledged offset (or AOF offset) reached `offset`.
  int64_t acked(uint64_t offset, bool aof) const;
  /// A WAIT/WAITAOF client blocked for `needed` replicas at `offset`; woken by acks.
  void add_waiter(uint64_t session_id, int64_t needed, uint64_t offset, bool aof);
  /// Asks every replica for an ACK as soon as the current event ends.
  void request_acks() { m_get_acks = true; }
  /// Re-reads min-replicas-to-write and min-replicas-max-lag (asked on every write).
  void refresh_settings();
  /// min-replicas-to-write / min-replicas-max-lag: false when writes are refused.
  bool enough_good_replicas() const;
  /// The number of online replicas within min-replicas-max-lag (min_slaves_good_slaves).
  int64_t good_replicas() const { return m_good_replicas; }

  uint64_t sync_full() const { return m_sync_full; }
  uint64_t sync_partial_ok() const { return m_sync_partial_ok; }
  uint64_t sync_partial_err() const { return m_sync_partial_err; }
  /// The snapshot child's pid, or -1.
  int child_pid() const { return m_child; }

 private:
  struct Waiter {
    uint64_t session_id = 0;
    int64_t needed = 0;
    uint64_t offset = 0;
    bool aof = false;
  };

  Session* session_of(const ReplicaPeer& p) const;
  void log(int level, const std::string& line) const;
  std::string replica_name(const Session& s, const ReplicaPeer& p) const;
  void ensure_backlog();
  void feed(std::string_view bytes);
  void distribute(std::string_view bytes);
  void drop_all();
  void check_role();
  int stream_db() const;
  void send(ReplicaPeer& p, std::string_view bytes);
  void full_resync_reply(Session& s, ReplicaPeer& p);
  void start_child();
  void child_done(bool ok);
  void drop(ReplicaPeer& p);
  void read_pipe();
  void end_pipe();
  void start_pending();
  void close_payload(ReplicaPeer& p);
  void refresh_good_replicas();
  void wake_waiters();

  Engine& m_engine;
  std::function<void(int, std::string_view)> m_log;
  std::map<uint64_t, ReplicaPeer> m_peers;  // by session id
  std::vector<uint64_t> m_order;            // replicas, in arrival order
  std::unique_ptr<ReplBacklog> m_backlog;
  int m_selected_db = -1;  // replicas_eldb
  int m_child = -1;
  std::string m_child_path;
  uint64_t m_child_offset = 0;
  bool m_child_socket = false;  // the child writes to the replicas through m_pipe
  int m_pipe = -1;              // its read end
  bool m_pipe_done = false;     // read to its end (or given up): closed by release_pipe
  int64_t m_last_cron_s = 0;
  int64_t m_last_ping_s = 0;
  uint64_t m_generation = 0;  // of the ReplicationState our replicas joined
  bool m_get_acks = false;
  bool m_release_held = false;  // an ACK arrived from a replica whose stream is held
  int64_t m_good_replicas = 0;
  int64_t m_min_replicas = 0;  // min-replicas-to-write
  int64_t m_max_lag = 10;      // min-replicas-max-lag
  std::vector<Waiter> m_waiters;
  uint64_t m_sync_full = 0;
  uint64_t m_sync_partial_ok = 0;
  uint64_t m_sync_partial_err = 0;
};

}  // namespace keyshift::engine
