#pragma once

#include "engine/net/tls.hpp"
#include "engine/repl/repl_stream.hpp"
#include "engine/resp/connection.hpp"
#include "engine/util/clock.hpp"
#include "engine/util/expected.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

// A replica's link to a primary: the handshake (PING, AUTH, REPLCONF listening-port, capa
// eof, capa psync2), PSYNC, then the full-sync payload and the command stream through a
// ReplStreamParser, with REPLCONF GETACK answered and an ACK sent every second. `keyshift
// import --mode sync` drives it; a replica server can too. Time comes from the injected
// clock.
namespace keyshift::engine {

/// Why the link failed; `refused` when the primary refuses replication itself (PSYNC or
/// SYNC unknown or forbidden to this user), as opposed to a network or protocol failure.
struct ReplError {
  std::string message;
  bool refused = false;
};

/// How to talk to the primary.
struct ReplicaOptions {
  /// REPLCONF listening-port (what INFO replication shows for this replica); 0 sends none.
  int listening_port = 0;
  /// Offer diskless (EOF-marked) payloads.
  bool capa_eof = true;
  /// Nothing received for this long fails the link (Valkey's repl-timeout).
  std::chrono::milliseconds timeout = std::chrono::seconds(60);
  /// How often to send REPLCONF ACK.
  std::chrono::milliseconds ack_period = std::chrono::seconds(1);
};

/// What PSYNC answered.
struct PsyncResult {
  bool full = false;       ///< +FULLRESYNC: a payload follows
  std::string replid;      ///< the primary's replication ID now
  std::string old_replid;  ///< +CONTINUE with a new ID: the one asked for (now its replid2)
  uint64_t offset = 0;     ///< where the stream starts (the offset of its first byte - 1)
};

/// The replica side of a replication link.
class ReplicaClient {
 public:
  /// Connects and logs in (AUTH as the endpoint says), then PING and the REPLCONFs.
  static Expected<ReplicaClient, ReplError> connect(const RespEndpoint& endpoint,
                                                    const Clock& clock,
                                                    const ReplicaOptions& options = {});

  ReplicaClient(ReplicaClient&& other) noexcept;
  ReplicaClient& operator=(ReplicaClient&& other) noexcept;
  ReplicaClient(const ReplicaClient&) = delete;
  ReplicaClient& operator=(const ReplicaClient&) = delete;
  ~ReplicaClient();

  /// Sends PSYNC `replid` `offset + 1` (the next byte wanted after `offset`), or `PSYNC ? -1`
  /// when `replid` is empty, and reads the answer (skipping the keepalive newlines before
  /// it). The stream that follows is read by poll().
  Expected<PsyncResult, ReplError> psync(std::string_view replid, uint64_t offset);

  /// Reads what has arrived (waiting up to `wait` for something) into the parser, answers
  /// GETACK and sends the periodic ACK. False when nothing arrived in time or the handler
  /// paused the stream; an error when the link failed or went silent past the timeout.
  Expected<bool, ReplError> poll(ReplStreamHandler& handler, std::chrono::milliseconds wait);

  /// Sends REPLCONF ACK with the offset of the last command handed over (and FACK with the
  /// fsynced offset, when set).
  Expected<bool, ReplError> send_ack();
  /// The offset up to which this replica's AOF is fsynced, sent as the ACKs' FACK (Valkey's
  /// fsynced_reploff, which WAITAOF counts); none without an AOF.
  void set_fsynced_offset(std::optional<uint64_t> offset) { m_fsynced = offset; }
  /// The parser (phase, offset, payload bytes).
  const ReplStreamParser& stream() const { return *m_stream; }
  /// The socket, for an event loop to watch (TLS may hold bytes it cannot see: poll()
  /// periodically too).
  int fd() const { return m_fd; }
  /// Bytes received since connect.
  uint64_t bytes_received() const { return m_received; }
  /// The endpoint, for messages.
  std::string describe() const { return m_endpoint.describe(); }

 private:
  ReplicaClient(Transport transport, RespEndpoint endpoint, const Clock& clock,
                ReplicaOptions options);
  Expected<bool, ReplError> write_all(std::string_view bytes);
  /// Reads what the socket (or TLS) has: > 0 bytes, 0 when the primary closed, -1 when
  /// nothing is there yet, -2 on an error (`error` says why).
  ssize_t read_some(std::string& error);
  /// Waits up to `timeout_ms` for bytes to read; true at once when TLS holds some already.
  int wait_readable(int timeout_ms);
  ReplError failure(std::string what) const;

  class GetAckFilter;
  Expected<bool, ReplError> send_ack_of(uint64_t offset);

  int m_fd = -1;          // owned: closed with the client
  Transport m_transport;  // plain or TLS over m_fd
  RespEndpoint m_endpoint;
  const Clock* m_clock;
  ReplicaOptions m_options;
  std::unique_ptr<ReplStreamParser> m_stream;
  std::string m_early;  // bytes read with the PSYNC reply that belong to the stream
  std::unique_ptr<char[]> m_in;
  size_t m_in_cap = 0;
  int64_t m_last_ack_us = 0;
  std::optional<uint64_t> m_fsynced;
  int64_t m_last_read_us = 0;
  uint64_t m_received = 0;
  bool m_resume = false;  // the handler paused the parser with commands still buffered
};

}  // namespace keyshift::engine
