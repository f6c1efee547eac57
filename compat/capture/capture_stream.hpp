#pragma once

#include "compat/capture/capture_anonymize.hpp"
#include "compat/capture/capture_file.hpp"
#include "compat/capture/capture_record.hpp"
#include "compat/capture/capture_session.hpp"
#include "engine/resp/reply_scanner.hpp"
#include "engine/resp/request_parser.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

// One connection's recording with no I/O, shared by every source that sees both directions
// of a connection (the proxy, packet captures): the client's bytes cut into requests by the
// engine's RequestParser (secrets redacted, SessionState applied, so CLIENT REPLY OFF/SKIP
// requests are flagged no-reply), the server's bytes cut into top-level replies by
// ReplyScanner, each handed to an EventSink in the order the bytes came. Replies are not
// paired here: the file keeps the wire's order and readers pair them (replay).
namespace keyshift::compat::capture {

/// Where a connection's events go.
class EventSink {
 public:
  virtual ~EventSink() = default;
  /// One event; its views are valid during the call only. `traffic_bytes` is what the
  /// event stands for on the wire (what a sink that loses it must count).
  virtual void emit(const CaptureEventView& event, size_t traffic_bytes) = 0;
};

/// What a recorder has emitted so far.
struct StreamCounts {
  uint64_t requests = 0;
  uint64_t replies = 0;
  uint64_t redacted = 0;
  uint64_t redacted_replies = 0;
  uint64_t no_reply = 0;
  uint64_t skipped_bytes = 0;  ///< mid-stream: bytes before the first request (and its replies)
};

/// One connection's requests and replies, recorded from its two byte streams.
class StreamRecorder {
 public:
  /// `redact`: secrets in requests and replies replaced; `anonymizer` (may be null, must
  /// outlive the recorder): data hashed.
  StreamRecorder(uint64_t conn_id, bool redact, const Anonymizer* anonymizer = nullptr)
      : m_conn_id(conn_id), m_redact(redact), m_anonymizer(anonymizer) {}

  /// The connection was seen mid-stream (a packet capture without its SYN): the client's
  /// stream is synced at the first point that parses as the start of a multibulk request,
  /// the server's bytes before that request are dropped, and every event is flagged partial.
  void start_mid_stream() { m_mid_stream = true; }
  /// Records the open event.
  void open(std::string_view peer, int64_t now, EventSink& sink);
  /// Records the close event.
  void close(int64_t now, EventSink& sink);
  /// Bytes the client sent, as one read (one batch); `start` is when the first came.
  void client_bytes(const char* data, size_t n, int64_t start, int64_t now, EventSink& sink);
  /// Bytes the server sent.
  void server_bytes(const char* data, size_t n, int64_t start, int64_t now, EventSink& sink);
  /// `bytes` of traffic were lost (a gap in a packet capture): a drop event says so, and
  /// nothing later of this connection is recorded, since neither stream can be followed
  /// across the hole.
  void lose(uint64_t bytes, int64_t now, EventSink& sink);
  /// True once the recording stopped in either direction (not RESP, or lost bytes).
  bool stopped() const { return m_requests_broken || m_replies_broken; }
  const StreamCounts& counts() const { return m_counts; }
  uint64_t conn_id() const { return m_conn_id; }

 private:
  bool sync_requests(const char*& data, size_t& n);
  void record_request(std::string_view bytes, int64_t start, int64_t end, EventSink& sink);
  void emit(EventKind kind, uint16_t flags, int64_t start, int64_t end, std::string_view bytes,
            uint32_t db, uint8_t resp, EventSink& sink);

  uint64_t m_conn_id;
  bool m_redact;
  const Anonymizer* m_anonymizer;
  std::string m_rewritten;  // a request or reply as rewritten for the file
  bool m_mid_stream = false;
  bool m_synced = false;          // mid-stream: a request has been recorded
  bool m_replies_synced = false;  // mid-stream: the reply stream starts at a reply
  std::string m_sync_hold;        // mid-stream: client bytes not yet known to start a request
  engine::RequestParser m_parser;
  engine::RequestLimits m_limits;
  std::string m_request_partial;  // the start of a request that has not ended yet
  int64_t m_request_start_ns = 0;
  bool m_requests_broken = false;
  engine::ReplyScanner m_scanner;
  std::string m_reply_partial;  // the start of a reply that has not ended yet
  size_t m_reply_scanned = 0;   // bytes of m_reply_partial the scanner has consumed
  int64_t m_reply_start_ns = 0;
  bool m_replies_broken = false;
  uint64_t m_batch = 0;
  SessionState m_state;
  std::vector<std::string_view> m_args;
  std::string m_peer;
  StreamCounts m_counts;
};

}  // namespace keyshift::compat::capture
