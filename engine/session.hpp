#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace keyshift::engine {

class Session;

/// What an engine needs from whoever carries a session's bytes (the network server, or
/// nothing for in-process use).
class SessionHost {
 public:
  virtual ~SessionHost() = default;
  /// Output was added to `session` outside its own command (MONITOR, pub/sub).
  virtual void wake(Session& session) = 0;
  /// SHUTDOWN was accepted; the host stops after the current event.
  virtual void request_shutdown() = 0;
};

/// Flags of a session, as CLIENT LIST shows some of them.
enum SessionFlag : uint32_t {
  k_session_close_after_reply = 1u << 0,  // QUIT, protocol error
  k_session_close_asap = 1u << 1,         // CLIENT KILL
  k_session_monitor = 1u << 2,
  k_session_unix_socket = 1u << 3,
  k_session_in_process = 1u << 4,
  k_session_no_evict = 1u << 5,
  k_session_no_touch = 1u << 6,
  k_session_multi = 1u << 7,
  k_session_pubsub = 1u << 8,
  k_session_blocked = 1u << 9,
  // CLIENT REPLY: OFF drops every reply, SKIP drops the next command's reply only.
  k_session_reply_off = 1u << 20,
  k_session_reply_skip_next = 1u << 21,
};

/// One client's state inside the engine: selected database, protocol, identity, and the
/// reply bytes waiting to be sent.
class Session {
 public:
  Session(uint64_t id, SessionHost* host) : m_id(id), m_host(host) {}
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  /// The CLIENT ID.
  uint64_t id() const { return m_id; }
  /// The host that carries this session, or nullptr in-process.
  SessionHost* host() const { return m_host; }

  int db = 0;
  int resp = 2;
  bool authenticated = false;
  uint32_t flags = 0;
  int fd = -1;
  std::string name;
  std::string lib_name;
  std::string lib_ver;
  std::string addr;   // "ip:port", or "/path:0" for unix
  std::string laddr;  // local address
  int64_t created_ms = 0;
  int64_t last_interaction_ms = 0;
  std::string_view last_command = "NULL";  // points into the command registry
  uint64_t query_buffer_bytes = 0;         // filled by the host for CLIENT LIST
  uint64_t total_commands = 0;
  uint64_t net_input_bytes = 0;
  uint64_t net_output_bytes = 0;
  /// Reply bytes not yet written to the peer.
  std::string out;

  bool has(SessionFlag f) const { return (flags & f) != 0; }
  void set(SessionFlag f) { flags |= f; }
  void clear(SessionFlag f) { flags &= ~static_cast<uint32_t>(f); }

 private:
  uint64_t m_id;
  SessionHost* m_host;
};

}  // namespace keyshift::engine
