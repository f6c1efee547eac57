#include "migrate/import/keyspace_follow.hpp"

#include <charconv>

namespace keyshift::migrate {
namespace {

/// The classes 'A' stands for in notify-keyspace-events (Valkey's NOTIFY_ALL).
constexpr std::string_view k_all_classes = "g$lshzxetd";

}  // namespace

std::string keyspace_flags_for_follow(std::string_view current) {
  bool keyspace = current.find('K') != std::string_view::npos;
  bool all = current.find('A') != std::string_view::npos;
  if (!all) {
    all = true;
    for (char c : k_all_classes) {
      if (current.find(c) == std::string_view::npos) {
        all = false;
        break;
      }
    }
  }
  if (keyspace && all) {
    return std::string(current);
  }
  std::string flags(current);
  if (!keyspace) {
    flags += 'K';
  }
  if (!all) {
    flags += 'A';
  }
  return flags;
}

bool parse_keyspace_channel(std::string_view channel, uint64_t& db, std::string& key) {
  constexpr std::string_view k_prefix = "__keyspace@";
  if (!channel.starts_with(k_prefix)) {
    return false;
  }
  std::string_view rest = channel.substr(k_prefix.size());
  auto r = std::from_chars(rest.data(), rest.data() + rest.size(), db);
  if (r.ec != std::errc()) {
    return false;
  }
  rest = rest.substr(static_cast<size_t>(r.ptr - rest.data()));
  if (!rest.starts_with("__:")) {
    return false;
  }
  key.assign(rest.substr(3));
  return true;
}

engine::Expected<KeyspaceFollower, std::string> KeyspaceFollower::start(
    const engine::RespEndpoint& endpoint) {
  engine::RespEndpoint at = endpoint;
  at.db = 0;
  at.protocol = 2;  // pushes as plain arrays
  auto control = engine::RespConnection::connect(at);
  if (!control) {
    return engine::Unexpected{control.error()};
  }
  auto got = control->call({"CONFIG", "GET", "notify-keyspace-events"});
  if (!got) {
    return engine::Unexpected{got.error()};
  }
  if (got->is_error() || got->elements.size() != 2) {
    return engine::Unexpected{"--follow: " + endpoint.describe() +
                              " does not tell its notify-keyspace-events (" +
                              (got->is_error() ? got->str : std::string("no value")) +
                              "): keys changed during the scan cannot be followed"};
  }
  std::string previous = got->elements[1].str;
  std::string wanted = keyspace_flags_for_follow(previous);
  std::string enabled;
  if (wanted != previous) {
    auto set = control->call({"CONFIG", "SET", "notify-keyspace-events", wanted});
    if (!set) {
      return engine::Unexpected{set.error()};
    }
    if (set->is_error()) {
      return engine::Unexpected{"--follow: " + endpoint.describe() +
                                " refused CONFIG SET notify-keyspace-events " + wanted + " (" +
                                set->str +
                                "): enable keyspace events (K and A) on it, or import "
                                "without --follow"};
    }
    enabled = wanted;
  }
  auto sub = engine::RespConnection::connect(at);
  if (!sub) {
    return engine::Unexpected{sub.error()};
  }
  auto subscribed = sub->call({"PSUBSCRIBE", "__keyspace@*__:*"});
  if (!subscribed || subscribed->is_error()) {
    return engine::Unexpected{"--follow: PSUBSCRIBE on " + endpoint.describe() +
                              " failed: " + (subscribed ? subscribed->str : subscribed.error())};
  }
  KeyspaceFollower follower(std::move(*sub), endpoint);
  follower.m_previous = std::move(previous);
  follower.m_enabled = std::move(enabled);
  return follower;
}

engine::Expected<uint64_t, std::string> KeyspaceFollower::collect(std::chrono::milliseconds wait) {
  uint64_t read = 0;
  std::chrono::milliseconds next = wait;
  for (;;) {
    auto reply = m_sub.poll_reply(next);
    if (!reply) {
      return engine::Unexpected{"--follow: the keyspace subscription to " + m_endpoint.describe() +
                                " broke (" + reply.error() +
                                "): changes after that point were not seen"};
    }
    if (!*reply) {
      return read;
    }
    const engine::RespValue& v = **reply;
    // ["pmessage", pattern, channel, event]
    if (v.elements.size() == 4 && v.elements[0].str == "pmessage") {
      uint64_t db = 0;
      std::string key;
      if (parse_keyspace_channel(v.elements[2].str, db, key)) {
        m_changed[db].insert(std::move(key));
        ++m_events;
        ++read;
      }
    }
    next = std::chrono::milliseconds(0);
  }
}

engine::Expected<uint64_t, std::string> KeyspaceFollower::collect_until_quiet(
    std::chrono::milliseconds quiet, std::chrono::milliseconds limit) {
  uint64_t total = 0;
  auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    auto got = collect(quiet);
    if (!got) {
      return got;
    }
    total += *got;
    if (*got == 0 || std::chrono::steady_clock::now() >= deadline) {
      return total;
    }
  }
}

ChangedKeys KeyspaceFollower::take() {
  ChangedKeys out;
  out.swap(m_changed);
  return out;
}

void KeyspaceFollower::restore() {
  if (m_enabled.empty()) {
    return;
  }
  engine::RespEndpoint at = m_endpoint;
  at.db = 0;
  if (auto control = engine::RespConnection::connect(at)) {
    (void)control->call({"CONFIG", "SET", "notify-keyspace-events", m_previous});
  }
  m_enabled.clear();
}

}  // namespace keyshift::migrate
