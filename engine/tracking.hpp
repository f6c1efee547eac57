#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace keyshift::engine {

class Engine;
class Session;
struct Command;

/// CLIENT TRACKING's options, as the command parsed them.
struct TrackingOptions {
  uint64_t redirect = 0;  // client id; 0 for none
  bool bcast = false;
  bool optin = false;
  bool optout = false;
  bool noloop = false;
  std::vector<std::string> prefixes;  // BCAST only
};

/// Server-assisted client-side caching of one engine (Valkey's tracking.c): the table of
/// keys read by tracking clients (key -> client ids, over all databases as Valkey keeps it),
/// the BCAST prefixes with the keys changed since the last broadcast, and the invalidation
/// messages (RESP3 `invalidate` pushes, or `__redis__:invalidate` messages to a RESP2
/// redirect client). A session's own state is in its flags, `tracking_redirect` and
/// `tracking_prefixes`.
class Tracking {
 public:
  explicit Tracking(Engine& engine) : m_engine(engine) {}

  /// Turns tracking on for `s` (options already checked against each other and `s`).
  void enable(Session& s, const TrackingOptions& options);
  /// Turns tracking off for `s` and drops its prefixes; its keys stay in the table until
  /// they are invalidated, as in Valkey.
  void disable(Session& s);
  /// Valkey's checkPrefixCollisionsOrReply: the error text when a new prefix overlaps one of
  /// `s` or another new one; empty when they are fine.
  std::string prefix_collision(const Session& s, std::span<const std::string> prefixes) const;
  /// After `cmd` (read-only) ran with `argv` for `tracker`'s request: remembers its keys for
  /// `tracker` unless OPTIN/OPTOUT and CLIENT CACHING say otherwise.
  void remember_keys(Session& tracker, const Command& cmd, std::span<const std::string_view> argv);
  /// `key` was modified by the running client `by` (nullptr for expiry and eviction): the
  /// clients that read it are told, and BCAST prefixes remember it for `broadcast`.
  void invalidate_key(std::string_view key, Session* by, bool bcast = true);
  /// FLUSHDB / FLUSHALL: every tracking client gets a null invalidation; the table empties.
  void invalidate_all();
  /// Sends the keys changed under each BCAST prefix since the last call (before replies
  /// leave, as Valkey's beforeSleep).
  void broadcast();
  /// tracking-table-max-keys: invalidates random tracked keys until the table fits (cron
  /// and before each command, as Valkey's trackingLimitUsedSlots, with its growing effort).
  void limit_table(uint64_t max_keys);
  /// The session whose request runs now, for NOLOOP (set by Engine::execute).
  void set_current(Session* s) { m_current = s; }
  Session* current() const { return m_current; }

  /// INFO tracking_clients, tracking_total_keys, tracking_total_items, tracking_total_prefixes.
  uint64_t clients() const { return m_clients; }
  uint64_t total_keys() const { return m_table.size(); }
  uint64_t total_items() const { return m_items; }
  uint64_t total_prefixes() const { return m_prefixes.size(); }

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  /// One BCAST prefix: its clients, and the keys changed since the last broadcast with the
  /// client that changed each last (nullptr: expiry, eviction), for NOLOOP.
  struct Prefix {
    std::map<uint64_t, Session*> clients;
    std::map<std::string, Session*, std::less<>> keys;
  };

  /// Valkey's sendTrackingMessage: `proto` (a RESP array or null) to `s`, or to its
  /// redirect client.
  void send(Session& s, std::string_view proto);

  Engine& m_engine;
  std::unordered_map<std::string, std::set<uint64_t>, Hash, std::equal_to<>> m_table;
  std::map<std::string, Prefix, std::less<>> m_prefixes;
  uint64_t m_items = 0;
  uint64_t m_clients = 0;
  unsigned m_limit_rounds = 0;  // rounds the table stayed over its limit
  Session* m_current = nullptr;
};

}  // namespace keyshift::engine
