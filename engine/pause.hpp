#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace keyshift::engine {

class Engine;
class Session;
struct Command;

/// CLIENT PAUSE of one engine (Valkey's pauseActions for the client-command purpose):
/// while a pause lasts, clients' commands are held (k_session_postponed, the host reads no
/// further) - every command with ALL, those that may write or replicate with WRITE - and
/// active expiry and eviction stop. Held commands go through dispatch again, in the order
/// they came, once the pause ends or becomes less strict (they may be held again).
class ClientPause {
 public:
  explicit ClientPause(Engine& engine) : m_engine(engine) {}

  /// CLIENT PAUSE: pauses until unix ms `end_ms` (a longer earlier end is kept), every
  /// command when `all`, else writes (an ALL pause already in force stays ALL).
  void pause_by_client(int64_t end_ms, bool all);
  /// CLIENT UNPAUSE: ends the pause; held commands run at the next `update`.
  void unpause_by_client();
  /// True when a command with flags `cmd_flags` (EXEC: with its queue's) must be held now.
  bool holds(uint32_t cmd_flags) const;
  /// The flags the pause judges `cmd` by: a script's shebang flags replace EVAL's and
  /// EVALSHA's write flags (Valkey's evalGetCommandFlags); other commands keep theirs.
  uint32_t command_flags(const Command& cmd, std::span<const std::string_view> argv) const;
  /// True while a pause is in force (commands may be held).
  bool active() const { return m_actions != 0; }
  /// True while keys may not expire or be evicted (any pause in force).
  bool dataset_frozen() const { return m_actions != 0; }
  /// Holds `s`'s command `argv` (copied) until the pause ends.
  void postpone(Session& s, std::span<const std::string_view> argv);
  /// Forgets `s` (it is going away).
  void forget(Session& s);
  /// Ends a pause whose time has come (the injected clock's now) and, when the pause became
  /// less strict, runs the held commands again (the host calls this every loop).
  void update();
  /// When the pause ends (unix ms) while commands are held; -1 otherwise.
  int64_t next_end_ms() const;
  /// Clients holding a command (INFO blocked_clients counts them, as Valkey).
  size_t postponed() const { return m_postponed.size(); }

 private:
  enum : uint32_t { k_pause_write = 1u << 0, k_pause_all = 1u << 1 };
  void recompute();

  Engine& m_engine;
  int64_t m_end_ms = 0;
  uint32_t m_requested = 0;  // the CLIENT PAUSE purpose's actions
  uint32_t m_actions = 0;    // in force now
  bool m_released = false;   // the pause got less strict: held commands go again
  std::vector<Session*> m_postponed;
};

}  // namespace keyshift::engine
