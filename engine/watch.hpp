#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace keyshift::engine {

class Engine;
class Session;

/// WATCH bookkeeping of one engine (Valkey's multi.c): which sessions watch which key of
/// which database, and the marking of their transactions as failed (k_session_dirty_cas)
/// when a watched key changes. Each session lists its own keys in Session::watched_keys.
class WatchTable {
 public:
  explicit WatchTable(Engine& engine) : m_engine(engine) {}

  /// Starts watching `key` of database `db` for `s`; a key already watched is left alone.
  void watch(Session& s, int db, std::string_view key);
  /// Forgets every key `s` watches.
  void unwatch_all(Session& s);
  /// True when a key `s` watches has logically expired since WATCH (keys already stale at
  /// WATCH time do not count): EXEC then fails, as Valkey's isWatchedKeyExpired.
  bool any_expired(Session& s);
  /// `key` of `db` changed: every session watching it gets a failing transaction (Valkey's
  /// touchWatchedKey).
  void touch(int db, std::string_view key);
  /// Database `emptied` is about to be flushed (`replaced_with` -1) or swapped with
  /// `replaced_with`: fails the transactions whose watched keys change by it. Call before
  /// the change (Valkey's touchAllWatchedKeysInDb).
  void touch_all_in_db(int emptied, int replaced_with);
  /// Keys watched by at least one session, over all databases (INFO total_watched_keys).
  size_t watched_keys() const;
  /// Sessions watching at least one key (INFO watching_clients).
  size_t watching_clients() const { return m_watching_clients; }

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  using KeyMap = std::unordered_map<std::string, std::vector<Session*>, Hash, std::equal_to<>>;

  KeyMap& keys_of(int db);
  void mark_dirty(Session& s);

  Engine& m_engine;
  std::vector<KeyMap> m_by_db;
  size_t m_watching_clients = 0;
};

}  // namespace keyshift::engine
