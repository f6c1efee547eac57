#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace keyshift::engine {

class CmdContext;
class Engine;
class Session;
struct Command;

/// The type a key must hold for a client blocked on it to be served.
enum class BlockType : uint8_t { none = 0, list = 1, zset = 2, stream = 3 };

// --- For blocking command handlers (BLPOP, BLMOVE, BZPOPMIN, BZMPOP, ...) -------------------
//
// A blocking command is an ordinary handler that, when it finds nothing to serve, blocks
// instead of replying; it runs again from the start when a key it waits for becomes ready,
// so it needs no separate "serve" code:
//
//   void cmd_bzpopmin(CmdContext& ctx) {
//     int64_t deadline = 0;
//     if (!parse_block_timeout(ctx, ctx.arg(ctx.argc() - 1), deadline)) return;
//     for (each key) { wrong type -> reply WRONGTYPE, return; non-empty -> pop, reply,
//                      notify/signal as the non-blocking command does, return; }
//     if (!may_block(ctx)) { ctx.reply().null_array(); return; }  // inside MULTI/EXEC
//     block_for_keys(ctx, keys, BlockType::zset, deadline);
//   }
//
// and every write that adds elements to a list or sorted set (or creates one: RENAME, MOVE,
// COPY, RESTORE, ...) calls `engine.signal_key_as_ready(db, key)`. After the command that
// signalled (or after EXEC), the clients blocked on the key are served in the order they
// blocked, each re-running its command while the key still holds the right type; a client
// whose key is missing or of another type stays blocked (no WRONGTYPE is sent to it). A
// client that times out gets a null array; CLIENT UNBLOCK gives it a null array (TIMEOUT)
// or "-UNBLOCKED client unblocked via CLIENT UNBLOCK" (ERROR).

/// Parses a blocking timeout in seconds (fractions allowed) as Valkey's
/// getTimeoutFromObjectOrReply. On success `deadline_ms` is 0 (wait forever) or an absolute
/// unix time in ms; otherwise the error reply is written and false returned.
bool parse_block_timeout(CmdContext& ctx, std::string_view arg, int64_t& deadline_ms);
/// False while the client may not block (EXEC running its queue): the command must then
/// reply as a timeout would, with a null array (or null bulk for BLMOVE/BRPOPLPUSH).
bool may_block(const CmdContext& ctx);
/// Blocks the client of `ctx` on `keys` until one of them holds `type`, or `deadline_ms`
/// (0: forever) passes. The handler writes no reply. When the command runs again after a
/// key became ready, the original deadline is kept.
void block_for_keys(CmdContext& ctx, std::span<const std::string_view> keys, BlockType type,
                    int64_t deadline_ms);

/// Writes the reply of a client whose wait on no key ends by its timeout or by CLIENT
/// UNBLOCK ... TIMEOUT, into `session.out`.
using BlockTimeoutReply = void (*)(Engine& engine, Session& session);
/// Blocks the client of `ctx` on no key until `deadline_ms` (0: forever); `timeout_reply`
/// answers then (WAIT and WAITAOF: the acknowledgements counted by that time). The handler
/// writes no reply.
void block_until_timeout(CmdContext& ctx, int64_t deadline_ms, BlockTimeoutReply timeout_reply);

/// The clients blocked on keys of one engine (Valkey's blocked.c), their timeouts and the
/// keys signalled ready since they were last served.
class Blocking {
 public:
  explicit Blocking(Engine& engine) : m_engine(engine) {}

  /// Blocks `s` running `cmd` with `argv` (copied) on `keys` of its database. With
  /// `unblock_on_nokey` (XREADGROUP) the command also runs again when a key is deleted or
  /// no longer holds `type`, so that it fails as Valkey's does.
  void block(Session& s, Command& cmd, std::span<const std::string_view> argv,
             std::span<const std::string_view> keys, BlockType type, int64_t deadline_ms,
             bool unblock_on_nokey = false);
  /// `key` of `db` was written, deleted or expired: clients that end their wait when it
  /// goes are served if it is gone or of another type (Valkey's signalDeletedKeyAsReady).
  void signal_key_changed(int db, std::string_view key);
  /// Every key of `db` may be gone (FLUSHDB, FLUSHALL, SWAPDB; called before the change),
  /// for those same clients.
  void signal_db_changed(int db);
  /// `key` of `db` may serve blocked clients; they are served by `serve_ready`.
  void signal_ready(int db, std::string_view key);
  /// Signals every key of `db` a client waits on that exists now (after SWAPDB).
  void signal_existing_keys(int db);
  /// True when keys were signalled since the last `serve_ready`.
  bool has_ready() const { return !m_ready.empty(); }
  /// Serves the clients blocked on the keys signalled ready (Valkey's
  /// handleClientsBlockedOnKeys); keys made ready meanwhile are served too.
  void serve_ready();
  /// Times out the clients whose deadline is before `now_ms`.
  void handle_timeouts(int64_t now_ms);
  /// The earliest deadline of a blocked client (unix ms), or -1 when none waits with one.
  int64_t next_deadline_ms() const;
  /// CLIENT UNBLOCK: ends the wait of `s` as a timeout, or with the UNBLOCKED error; false
  /// if it is not blocked.
  bool unblock(Session& s, bool with_error);
  /// Ends the wait of the just blocked `s` with `reply` instead of a null array on timeout.
  void set_timeout_reply(Session& s, BlockTimeoutReply reply);
  /// Forgets `s` without a reply (the client is going away).
  void forget(Session& s);
  /// Keys some client is blocked on, over all databases (INFO total_blocking_keys).
  size_t blocking_keys() const;
  /// Of those, the keys some client waits on that end its wait when they go
  /// (INFO total_blocking_keys_on_nokey).
  size_t blocking_keys_on_nokey() const;

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  using KeyMap = std::unordered_map<std::string, std::vector<Session*>, Hash, std::equal_to<>>;

  KeyMap& keys_of(int db);
  void detach(Session& s);
  void serve_key(int db, const std::string& key);
  void finish(Session& s, Command* cmd, bool failed);

  Engine& m_engine;
  std::vector<KeyMap> m_by_db;
  std::set<std::pair<int64_t, uint64_t>> m_deadlines;  // (deadline ms, session id)
  BlockTimeoutReply take_timeout_reply(Session& s);

  std::unordered_map<uint64_t, BlockTimeoutReply> m_timeout_replies;  // by session id
  std::vector<std::pair<int, std::string>> m_ready;
  std::set<std::pair<int, std::string>, std::less<>> m_ready_set;
  bool m_serving = false;
  Session* m_reprocessing = nullptr;  // the client whose command runs again right now
  int64_t m_reprocessing_deadline = 0;
};

}  // namespace keyshift::engine
