#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace keyshift::engine {

class Session;

/// The three subscription namespaces: SUBSCRIBE channels, PSUBSCRIBE patterns and SSUBSCRIBE
/// shard channels (which never match patterns).
enum class PubSubKind : uint8_t { channel, pattern, shard };

/// Every subscription of one engine's sessions, indexed by channel and pattern, and message
/// delivery (Valkey's pubsub.c). Each session also keeps its own subscriptions
/// (Session::channels, patterns, shard_channels); this is the reverse index. Messages are
/// appended to the receivers' output and their host is woken; in-process sessions without a
/// host just accumulate them.
class PubSub {
 public:
  /// Adds a subscription of `s`; false if it already had it. Replies are the caller's.
  bool subscribe(Session& s, PubSubKind kind, std::string_view name);
  /// Removes a subscription of `s`; false if it did not have it.
  bool unsubscribe(Session& s, PubSubKind kind, std::string_view name);
  /// Drops every subscription of `s` without replies (RESET, disconnect).
  void unsubscribe_all(Session& s);
  /// Delivers `message` to the subscribers of `channel` and, unless `shard`, to those of
  /// every matching pattern; returns how many messages were delivered.
  int64_t publish(std::string_view channel, std::string_view message, bool shard);
  /// Channels with at least one subscriber, all of them or those matching a glob.
  std::vector<std::string> active_channels(std::optional<std::string_view> pattern,
                                           bool shard) const;
  /// Number of sessions subscribed to `channel` (patterns excluded).
  size_t subscribers(std::string_view channel, bool shard) const;
  /// The session whose command runs now (nullptr between commands). Messages for it wait
  /// in a side buffer until `flush_pending`, so they follow the reply it is building (even a
  /// whole EXEC), as Valkey's pending push messages do.
  void set_current(Session* s) { m_current = s; }
  /// Where a push for `s` goes: its output, or the side buffer while its command runs
  /// (client tracking's invalidations share it, so they keep their order with messages).
  std::string& output_of(Session& s);
  /// Appends the messages held back for the current session to its output.
  void flush_pending();
  /// Channels, patterns and shard channels with at least one subscriber (INFO stats).
  size_t channel_count() const { return m_channels.size(); }
  size_t pattern_count() const { return m_patterns.size(); }
  size_t shard_channel_count() const { return m_shard_channels.size(); }

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  // Subscribers by session id: delivery follows subscription age of the connections.
  using Subscribers = std::map<uint64_t, Session*>;
  using ChannelMap = std::unordered_map<std::string, Subscribers, Hash, std::equal_to<>>;

  ChannelMap m_channels;
  ChannelMap m_shard_channels;
  std::map<std::string, Subscribers, std::less<>> m_patterns;
  Session* m_current = nullptr;
  std::string m_pending;  // messages for m_current
};

}  // namespace keyshift::engine
