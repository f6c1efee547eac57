#pragma once

#include "engine/resp/connection.hpp"
#include "engine/util/expected.hpp"

#include <chrono>
#include <cstdint>
#include <map>
#include <set>
#include <string>

// `import --mode scan --follow`: the keys a source changes while (and after) it is scanned,
// learned from its keyspace notifications, so they can be read again. Notifications are
// fire-and-forget: a lost subscription loses events, so any break of the link is an error,
// never silence.
namespace keyshift::migrate {

/// The keys a source changed, per database, as keyspace events name them.
using ChangedKeys = std::map<uint64_t, std::set<std::string>>;

/// A subscription to a server's keyspace events.
class KeyspaceFollower {
 public:
  /// Subscribes to every keyspace event of `endpoint` (__keyspace@*__:*). When the server's
  /// notify-keyspace-events lacks K or any of the classes of A, they are added with CONFIG
  /// SET and restore() puts the old value back; a server that refuses CONFIG SET (a managed
  /// one) without them already on cannot be followed, and the error says so.
  static engine::Expected<KeyspaceFollower, std::string> start(
      const engine::RespEndpoint& endpoint);

  /// Reads the events that have arrived, waiting up to `wait` for the first; each names a
  /// changed key. The number of events read; an error when the link broke.
  engine::Expected<uint64_t, std::string> collect(std::chrono::milliseconds wait);
  /// Reads events until none arrived for `quiet`, or `limit` passed.
  engine::Expected<uint64_t, std::string> collect_until_quiet(std::chrono::milliseconds quiet,
                                                              std::chrono::milliseconds limit);
  /// Takes the changed keys collected so far.
  ChangedKeys take();
  /// Events read since start.
  uint64_t events() const { return m_events; }
  /// The notify-keyspace-events value set by start(), or empty when it was left alone.
  const std::string& enabled() const { return m_enabled; }
  /// Puts notify-keyspace-events back as start() found it (when start() changed it).
  void restore();

 private:
  KeyspaceFollower(engine::RespConnection sub, engine::RespEndpoint endpoint)
      : m_sub(std::move(sub)), m_endpoint(std::move(endpoint)) {}

  engine::RespConnection m_sub;
  engine::RespEndpoint m_endpoint;
  std::string m_previous;
  std::string m_enabled;
  ChangedKeys m_changed;
  uint64_t m_events = 0;
};

/// The notify-keyspace-events flags that make `current` report every key change to a
/// keyspace subscriber, or `current` itself when it already does. Pure; tested alone.
std::string keyspace_flags_for_follow(std::string_view current);

/// The database and key a keyspace channel names ("__keyspace@3__:user:1"), or false.
bool parse_keyspace_channel(std::string_view channel, uint64_t& db, std::string& key);

}  // namespace keyshift::migrate
