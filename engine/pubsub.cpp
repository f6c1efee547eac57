#include "engine/pubsub.hpp"

#include "engine/resp/reply_builder.hpp"
#include "engine/session.hpp"
#include "engine/util/glob.hpp"

namespace keyshift::engine {
namespace {

std::set<std::string, std::less<>>& own_set(Session& s, PubSubKind kind) {
  switch (kind) {
    case PubSubKind::pattern:
      return s.patterns;
    case PubSubKind::shard:
      return s.shard_channels;
    case PubSubKind::channel:
      break;
  }
  return s.channels;
}

void wake(Session& s) {
  if (s.host() != nullptr) {
    s.host()->wake(s);
  }
}

}  // namespace

bool PubSub::subscribe(Session& s, PubSubKind kind, std::string_view name) {
  auto [it, added] = own_set(s, kind).emplace(name);
  if (!added) {
    return false;
  }
  if (kind == PubSubKind::pattern) {
    auto p = m_patterns.find(name);
    if (p == m_patterns.end()) {
      p = m_patterns.emplace(std::string(name), Subscribers{}).first;
    }
    p->second.emplace(s.id(), &s);
    return true;
  }
  ChannelMap& map = kind == PubSubKind::shard ? m_shard_channels : m_channels;
  auto c = map.find(name);
  if (c == map.end()) {
    c = map.emplace(std::string(name), Subscribers{}).first;
  }
  c->second.emplace(s.id(), &s);
  return true;
}

bool PubSub::unsubscribe(Session& s, PubSubKind kind, std::string_view name) {
  auto& mine = own_set(s, kind);
  auto it = mine.find(name);
  if (it == mine.end()) {
    return false;
  }
  if (kind == PubSubKind::pattern) {
    auto p = m_patterns.find(name);
    if (p != m_patterns.end()) {
      p->second.erase(s.id());
      if (p->second.empty()) {
        m_patterns.erase(p);
      }
    }
  } else {
    ChannelMap& map = kind == PubSubKind::shard ? m_shard_channels : m_channels;
    auto c = map.find(name);
    if (c != map.end()) {
      c->second.erase(s.id());
      if (c->second.empty()) {
        map.erase(c);
      }
    }
  }
  mine.erase(it);
  return true;
}

void PubSub::unsubscribe_all(Session& s) {
  for (PubSubKind kind : {PubSubKind::channel, PubSubKind::pattern, PubSubKind::shard}) {
    auto& mine = own_set(s, kind);
    while (!mine.empty()) {
      std::string name = *mine.begin();
      unsubscribe(s, kind, name);
    }
  }
}

std::string& PubSub::output_of(Session& s) {
  return &s == m_current ? m_pending : s.out;
}

void PubSub::flush_pending() {
  if (m_current != nullptr && !m_pending.empty()) {
    m_current->out += m_pending;
    wake(*m_current);
  }
  m_pending.clear();
}

int64_t PubSub::publish(std::string_view channel, std::string_view message, bool shard) {
  int64_t receivers = 0;
  const ChannelMap& map = shard ? m_shard_channels : m_channels;
  if (auto c = map.find(channel); c != map.end()) {
    for (auto& [id, s] : c->second) {
      // A client being closed (over its output limit) is still counted but gets nothing,
      // as Valkey drops writes to it.
      if (s->has(k_session_close_asap)) {
        ++receivers;
        continue;
      }
      ReplyBuilder rb(output_of(*s), s->resp);
      rb.push(3);
      rb.bulk(shard ? "smessage" : "message");
      rb.bulk(channel);
      rb.bulk(message);
      wake(*s);
      ++receivers;
    }
  }
  if (shard) {
    return receivers;
  }
  for (auto& [pattern, subs] : m_patterns) {
    if (!glob_match(pattern, channel)) {
      continue;
    }
    for (auto& [id, s] : subs) {
      if (s->has(k_session_close_asap)) {
        ++receivers;
        continue;
      }
      ReplyBuilder rb(output_of(*s), s->resp);
      rb.push(4);
      rb.bulk("pmessage");
      rb.bulk(pattern);
      rb.bulk(channel);
      rb.bulk(message);
      wake(*s);
      ++receivers;
    }
  }
  return receivers;
}

std::vector<std::string> PubSub::active_channels(std::optional<std::string_view> pattern,
                                                 bool shard) const {
  std::vector<std::string> out;
  for (const auto& [name, subs] : shard ? m_shard_channels : m_channels) {
    if (!pattern || glob_match(*pattern, name)) {
      out.push_back(name);
    }
  }
  return out;
}

size_t PubSub::subscribers(std::string_view channel, bool shard) const {
  const ChannelMap& map = shard ? m_shard_channels : m_channels;
  auto c = map.find(channel);
  return c == map.end() ? 0 : c->second.size();
}

}  // namespace keyshift::engine
