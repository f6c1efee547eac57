#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace keyshift::engine {

class Session;
struct Command;
namespace acl {
struct User;
}

/// What an engine needs from whoever carries a session's bytes (the network server, or
/// nothing for in-process use).
class SessionHost {
 public:
  virtual ~SessionHost() = default;
  /// Output was added to `session` outside its own command (MONITOR, pub/sub).
  virtual void wake(Session& session) = 0;
  /// SHUTDOWN was accepted; the host stops after the current event.
  virtual void request_shutdown() = 0;
  /// `session` was unblocked (its blocking command has replied): the host goes on with the
  /// commands it stopped reading while the session was blocked.
  virtual void resume(Session& session) { (void)session; }
  /// A script of `caller` has run past busy-reply-threshold: the host serves its other
  /// clients once (new connections, commands, replies) without reading `caller`, so they get
  /// BUSY replies and may send SCRIPT KILL or SHUTDOWN NOSAVE (Valkey's
  /// processEventsWhileBlocked).
  virtual void serve_while_busy(Session& caller) { (void)caller; }
  /// CONFIG SET changed the settings `changed` (primary names): the host acts on those it
  /// owns (port, tls-port, the TLS context). Valkey's error text when one could not be applied.
  virtual std::optional<std::string> apply_config(std::span<const std::string_view> changed) {
    (void)changed;
    return std::nullopt;
  }
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
  // A WATCHed key changed: EXEC fails with a null array (Valkey's dirty_cas).
  k_session_dirty_cas = 1u << 10,
  // A command was rejected while queueing: EXEC fails with EXECABORT (dirty_exec).
  k_session_dirty_exec = 1u << 11,
  // Blocking commands answer at once as if timed out (set while EXEC runs its queue).
  k_session_deny_blocking = 1u << 12,
  // CLIENT TRACKING: on, and its modes; broken_redir once the redirect client is gone;
  // caching after CLIENT CACHING YES/NO, for the next command (or transaction).
  k_session_tracking = 1u << 13,
  k_session_tracking_bcast = 1u << 14,
  k_session_tracking_optin = 1u << 15,
  k_session_tracking_optout = 1u << 16,
  k_session_tracking_noloop = 1u << 17,
  k_session_tracking_caching = 1u << 18,
  k_session_tracking_broken_redir = 1u << 19,
  // The link from this replica's primary: its writes pass read-only, it gets no replies.
  k_session_primary = 1u << 24,
  // CLIENT REPLY: OFF drops every reply, SKIP drops the next command's reply only.
  k_session_reply_off = 1u << 20,
  k_session_reply_skip_next = 1u << 21,
  // Set while the command whose reply SKIP drops runs.
  k_session_reply_skip_current = 1u << 22,
  // CLIENT PAUSE holds this client's command (in postponed_argv) until the pause ends.
  k_session_postponed = 1u << 23,
  // The scripting engine's own client: commands run by server.call from EVAL or FCALL.
  k_session_script = 1u << 25,
  // A replica of this server (SYNC/PSYNC): its output is the replication stream, so the
  // replies to what it sends (REPLCONF ACK) are dropped.
  k_session_replica = 1u << 26,
};

/// A command queued between MULTI and EXEC, with its arguments copied.
struct QueuedCommand {
  Command* cmd = nullptr;
  std::vector<std::string> argv;
};

/// A key a session WATCHes.
struct WatchedKey {
  int db = 0;
  std::string key;
  bool expired = false;  // it was logically expired when WATCH ran (a stale key)
};

/// What a client blocked by BLPOP and friends waits for; its command runs again once one of
/// the keys becomes ready.
struct BlockState {
  Command* cmd = nullptr;
  std::vector<std::string> argv;  // the blocked command, copied
  std::vector<std::string> keys;  // distinct keys, in argument order
  int db = 0;
  uint8_t type = 0;               // BlockType of engine/blocking.hpp
  int64_t deadline_ms = 0;        // unix ms; 0 waits forever
  int64_t blocked_at_us = 0;      // monotonic, for the command's duration
  bool unblock_on_nokey = false;  // XREADGROUP: a deleted or retyped key ends the wait
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
  /// The ACL user the session runs as (the default user until AUTH); nullptr for the
  /// engine's own sessions, which may run anything (Valkey's clients without a user).
  acl::User* user = nullptr;
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
  /// The engine's propagation offset after this client's last write (Valkey's woff), what
  /// WAITAOF waits to see fsynced.
  uint64_t woff = 0;
  /// master_repl_offset after this client's last write, what WAIT waits for replicas to
  /// acknowledge.
  uint64_t repl_woff = 0;
  /// For a replica: the net_output_bytes total at which its snapshot payload is sent, so
  /// that the output buffer limit counts only what follows it.
  uint64_t payload_end_output = 0;
  uint64_t net_input_bytes = 0;
  uint64_t net_output_bytes = 0;
  /// Reply bytes not yet written to the peer.
  std::string out;
  /// Unix seconds since which `out` has been at its class's soft output buffer limit; 0
  /// when under it (Valkey's obuf_soft_limit_reached_time).
  int64_t obuf_soft_limit_since_s = 0;
  /// Pub/sub pushes written while CLIENT REPLY OFF/SKIP drops the command's reply: as in
  /// Valkey (its "pushing" flag) they are delivered all the same.
  std::string kept_pushes;

  // Transactions: commands queued by MULTI, the OR of their flags (EXEC's OOM check) and
  // the WATCHed keys.
  std::vector<QueuedCommand> multi_queue;
  uint32_t multi_cmd_flags = 0;
  std::vector<WatchedKey> watched_keys;
  // Pub/sub subscriptions, kept sorted so UNSUBSCRIBE without arguments is deterministic.
  std::set<std::string, std::less<>> channels;
  std::set<std::string, std::less<>> patterns;
  std::set<std::string, std::less<>> shard_channels;
  // Set while k_session_blocked.
  BlockState block;
  // CLIENT TRACKING: the REDIRECT client id (0: none) and the BCAST prefixes.
  uint64_t tracking_redirect = 0;
  std::set<std::string, std::less<>> tracking_prefixes;
  // The command CLIENT PAUSE holds, copied, while k_session_postponed.
  std::vector<std::string> postponed_argv;

  /// True while the running command's reply is dropped (CLIENT REPLY OFF or SKIP).
  bool replies_silenced() const {
    return has(k_session_reply_off) || has(k_session_reply_skip_current);
  }

  /// Output bytes held beyond the 16 KiB reply buffer (CLIENT LIST omem=): what
  /// client-output-buffer-limit counts, as Valkey counts its reply list.
  uint64_t reply_list_bytes() const {
    return out.size() > k_reply_buffer_bytes ? out.size() - k_reply_buffer_bytes : 0;
  }
  /// The fixed reply buffer every Valkey client has (PROTO_REPLY_CHUNK_BYTES).
  static constexpr uint64_t k_reply_buffer_bytes = 16 * 1024;

  /// CLIENT LIST sub=, psub=, ssub=, multi= and watch= figures.
  int sub_count() const { return static_cast<int>(channels.size()); }
  int psub_count() const { return static_cast<int>(patterns.size()); }
  int ssub_count() const { return static_cast<int>(shard_channels.size()); }
  int multi_count() const {
    return has(k_session_multi) ? static_cast<int>(multi_queue.size()) : -1;
  }
  int watch_count() const { return static_cast<int>(watched_keys.size()); }
  /// Subscriptions counted by SUBSCRIBE/PSUBSCRIBE replies (channels plus patterns).
  size_t subscription_count() const { return channels.size() + patterns.size(); }

  bool has(SessionFlag f) const { return (flags & f) != 0; }
  void set(SessionFlag f) { flags |= f; }
  void clear(SessionFlag f) { flags &= ~static_cast<uint32_t>(f); }

 private:
  uint64_t m_id;
  SessionHost* m_host;
};

}  // namespace keyshift::engine
