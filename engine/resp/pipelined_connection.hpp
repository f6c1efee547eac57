#pragma once

#include "engine/resp/connection.hpp"
#include "engine/resp/reply_scanner.hpp"
#include "engine/util/expected.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace keyshift::engine {

/// One reply as it arrived: its bytes (the whole top-level reply, still encoded) and what a
/// load generator wants to know without decoding it. `bytes` and `error_text` stay valid
/// until the next fill() or poll().
struct ReplyView {
  std::string_view bytes;
  bool is_error = false;
  bool is_null = false;
  std::string_view error_text;  ///< a simple error's text without '-' (empty otherwise)
};

/// A non-blocking RESP connection that keeps up to `window` requests in flight: the client
/// bench, import, replay and verify share. Requests are encoded straight into an output
/// buffer sized once and replies are found by ReplyScanner in an input buffer read in
/// place, so a steady stream of requests allocates nothing. It does no event loop of its
/// own: a caller with many connections polls their fd() itself (bench), one with a single
/// connection calls poll().
class PipelinedConnection {
 public:
  /// What a read or write step did.
  enum class Io : uint8_t {
    ok,       ///< progress made (or nothing was left to do)
    blocked,  ///< the socket would block: wait for it (wants_write() says which way)
    failed,   ///< the connection is unusable; error() says why
  };

  /// Connects and logs in exactly as RespConnection::connect does (TLS, HELLO, AUTH,
  /// SELECT), then switches the socket to non-blocking. `out_capacity` is the output buffer's first
  /// size; it grows only for a request bigger than all before it.
  static Expected<PipelinedConnection, std::string> connect(
      const RespEndpoint& endpoint, uint32_t window, size_t out_capacity = 64 * 1024,
      std::chrono::milliseconds timeout = std::chrono::milliseconds(5000));

  PipelinedConnection(PipelinedConnection&& other) noexcept;
  PipelinedConnection& operator=(PipelinedConnection&& other) noexcept;
  PipelinedConnection(const PipelinedConnection&) = delete;
  PipelinedConnection& operator=(const PipelinedConnection&) = delete;
  ~PipelinedConnection();

  /// The socket, for callers that multiplex connections with epoll: wait for readability
  /// always and for writability while wants_write(). Over TLS, fill() leaves no decrypted
  /// bytes behind in the TLS layer, so readiness of the fd is all there is to wait for.
  int fd() const { return m_fd; }
  /// True when the connection runs over TLS.
  bool is_tls() const { return m_transport.is_tls(); }
  /// The endpoint this connection talks to.
  const RespEndpoint& endpoint() const { return m_endpoint; }
  /// Requests sent or queued whose replies have not arrived.
  uint32_t in_flight() const { return m_in_flight; }
  /// Most requests allowed in flight.
  uint32_t window() const { return m_window; }
  /// True while another request fits in the window.
  bool can_send() const { return m_in_flight < m_window; }
  /// True when queued bytes are waiting for the socket to take them (or TLS needs the
  /// socket writable to go on reading).
  bool wants_write() const { return m_out_sent < m_out_len || m_transport.read_wants_write(); }
  /// Why the connection failed (after Io::failed), naming the endpoint.
  const std::string& error() const { return m_error; }

  /// Room for one request of at most `max_bytes` bytes at the end of the output queue.
  char* reserve(size_t max_bytes);
  /// Queues the `bytes` bytes written at reserve()'s pointer as one request.
  void commit(size_t bytes);
  /// Encodes `args` as one request and queues it.
  void send(std::span<const std::string_view> args);
  /// The same for owned arguments.
  void send(std::span<const std::string> args);
  /// The same for a list written in place: send({"GET", key}).
  void send(std::initializer_list<std::string_view> args);
  /// Queues `bytes` (already RESP-encoded) holding `requests` requests.
  void send_raw(std::string_view bytes, uint32_t requests);

  /// Writes as much of the queue as the socket takes.
  Io flush();
  /// Reads what the socket holds into the input buffer.
  Io fill();
  /// Takes the next complete reply from the input buffer: true and `out` set, or false
  /// when none is complete (fill() more). A protocol error or a reply nobody asked for
  /// fails the connection (error() set) and also returns false.
  bool next_reply(ReplyView& out);
  /// True when input bytes past the last reply taken are buffered (part of a reply, or
  /// one nobody asked for yet).
  bool has_buffered() const { return m_in_pos < m_in_len; }
  /// True when the connection has failed.
  bool failed() const { return !m_error.empty(); }

  /// One step for a caller with this one connection: flushes, waits up to `timeout` for
  /// the socket, then reads (or writes) what it can. Io::ok when something moved or nothing
  /// is pending, Io::blocked when the time ran out. Take replies with next_reply() after.
  Io poll(std::chrono::milliseconds timeout);
  /// Flushes and waits until the next reply is complete, then returns it; an error text
  /// names the endpoint (timeouts, hang-ups, protocol errors).
  Expected<ReplyView, std::string> wait_reply(
      std::chrono::milliseconds timeout = std::chrono::milliseconds(30000));

 private:
  PipelinedConnection(Transport transport, RespEndpoint endpoint, uint32_t window,
                      size_t out_capacity);
  Io fail(std::string what);
  void grow_out(size_t need);

  int m_fd = -1;
  Transport m_transport;
  RespEndpoint m_endpoint;
  uint32_t m_window = 1;
  uint32_t m_in_flight = 0;
  std::unique_ptr<char[]> m_out;
  size_t m_out_cap = 0;
  size_t m_out_len = 0;
  size_t m_out_sent = 0;
  std::unique_ptr<char[]> m_in;
  size_t m_in_cap = 0;
  size_t m_in_len = 0;
  size_t m_in_pos = 0;    // start of the first reply not yet returned
  size_t m_scan_pos = 0;  // how far the scanner has read (a reply may span fills)
  ReplyScanner m_scanner;
  std::string m_error;
};

}  // namespace keyshift::engine
