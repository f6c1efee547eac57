#pragma once

#include <cstdint>
#include <string>

// What a capture holds, independent of how it was recorded (proxy, pcap, MONITOR) and of the
// file format that stores it (capture_file, keyshift-capture(5)). `keyshift capture` produces
// these, `keyshift replay` and `capture info` consume them: the one vocabulary both sides use.
namespace keyshift::compat::capture {

/// What one event of a capture is.
enum class EventKind : uint8_t {
  open = 1,     ///< a client connection appeared (peer, client name/lib if known)
  close = 2,    ///< it went away
  request = 3,  ///< one command the client sent: the exact bytes of one RESP request
  reply = 4,    ///< one reply the server sent: the exact bytes of one RESP reply
  drop = 5,     ///< recording lost bytes here (disk too slow, packet loss): `bytes` says how many
};

/// Facts about an event, as bits.
enum EventFlags : uint16_t {
  k_flag_none = 0,
  k_flag_partial = 1 << 0,     ///< the connection was seen mid-stream (pcap): state before unknown
  k_flag_redacted = 1 << 1,    ///< secret arguments were replaced at capture time
  k_flag_no_reply = 1 << 2,    ///< the source records no replies (MONITOR), or CLIENT REPLY OFF
  k_flag_anonymized = 1 << 3,  ///< key names and values replaced by keyed hashes
  k_flag_nested = 1 << 4,      ///< run by a script (MONITOR's "lua" lines), not sent by a client
};

/// One event, in the order recorded. Requests and replies of a connection alternate in the
/// order the wire carried them; a pipeline is several requests before their replies, and
/// `batch` groups the requests that arrived in one read (replay keeps those batches).
struct CaptureEvent {
  EventKind kind = EventKind::request;
  uint16_t flags = k_flag_none;
  uint64_t conn_id = 0;     ///< unique within the capture
  int64_t start_ns = 0;     ///< unix time, ns: first byte seen
  int64_t end_ns = 0;       ///< unix time, ns: last byte seen (== start_ns when unknown)
  uint64_t batch = 0;       ///< requests: read batch number within the connection
  uint32_t db = 0;          ///< the connection's database when the event happened
  uint8_t resp = 2;         ///< the connection's protocol (2 or 3) when the event happened
  std::string peer;         ///< open: "ip:port", "[ipv6]:port", "unix:path"
  std::string client_name;  ///< open (and when CLIENT SETNAME/HELLO SETNAME changes it)
  std::string client_lib;   ///< CLIENT SETINFO lib-name / lib-ver, "name ver"
  std::string bytes;        ///< request/reply: exact RESP bytes; drop: decimal byte count
};

}  // namespace keyshift::compat::capture
