#pragma once

#include "engine/repl/replica_client.hpp"

#include <cstdint>
#include <deque>
#include <future>
#include <memory>
#include <optional>
#include <string>

// The replica side of `keyshift serve`: follows the primary the engine's ReplicationState
// names, with the ReplicaClient `keyshift import --mode sync` uses. Dialing, the handshake
// and the PSYNC answer (blocking socket calls) run on a short-lived thread that touches no
// engine state; the connected client then comes back to the server's loop, which reads the
// stream non-blocking and applies the payload and the commands itself, so that the engine
// keeps a single writer and the commands take the normal call path (keyspace events, AOF,
// WATCH, blocked clients) with no locks.
namespace keyshift::engine {

class Engine;
class Logger;
class Session;

/// Drives the replication link from the server's event loop.
class ReplicaLink {
 public:
  ReplicaLink(Engine& engine, Logger& log);
  ~ReplicaLink();
  ReplicaLink(const ReplicaLink&) = delete;
  ReplicaLink& operator=(const ReplicaLink&) = delete;

  /// Follows the role's changes (REPLICAOF), dials when due (once a second on the engine's
  /// clock), adopts a finished dial, sends the periodic ACK and reads what has arrived.
  void tick();
  /// The link's socket became readable: reads and applies what arrived.
  void on_readable();
  /// The socket to watch for input, -1 without a link.
  int fd() const;

 private:
  struct Dial;
  class Applier;

  void drop(const std::string& why);
  void start_dial();
  void adopt_dial();
  void read_stream();
  std::optional<uint64_t> fsynced_offset();

  Engine& m_engine;
  Logger& m_log;
  uint64_t m_generation = 0;  // of the ReplicationState the current link serves
  std::optional<std::future<std::unique_ptr<Dial>>> m_dial;
  uint64_t m_dial_generation = 0;
  std::optional<ReplicaClient> m_client;
  std::unique_ptr<Applier> m_applier;
  Session* m_session = nullptr;  // the primary's session while linked
  int64_t m_next_dial_ms = 0;
  int m_db = 0;  // the database the stream had selected when the link dropped
  // (propagation offset, replication offset) after each read applied, until the AOF has
  // fsynced the former: what FACK reports.
  std::deque<std::pair<uint64_t, uint64_t>> m_marks;
  uint64_t m_fsynced = 0;
};

}  // namespace keyshift::engine
