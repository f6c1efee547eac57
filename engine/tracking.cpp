#include "engine/tracking.hpp"

#include "engine/commands/command_keys.hpp"
#include "engine/engine.hpp"
#include "engine/pubsub.hpp"
#include "engine/resp/reply_builder.hpp"

#include <algorithm>

namespace keyshift::engine {
namespace {

constexpr std::string_view k_invalidate_channel = "__redis__:invalidate";

/// True when one of `a` and `b` starts with the other (Valkey's stringCheckPrefix).
bool overlaps(std::string_view a, std::string_view b) {
  size_t n = std::min(a.size(), b.size());
  return a.substr(0, n) == b.substr(0, n);
}

/// A one-key invalidation as the RESP array Valkey sends.
std::string key_array(std::string_view key) {
  std::string proto;
  ReplyBuilder rb(proto, 2);
  rb.array(1);
  rb.bulk(key);
  return proto;
}

}  // namespace

void Tracking::enable(Session& s, const TrackingOptions& options) {
  if (!s.has(k_session_tracking)) {
    ++m_clients;
  }
  s.set(k_session_tracking);
  for (SessionFlag f :
       {k_session_tracking_broken_redir, k_session_tracking_bcast, k_session_tracking_optin,
        k_session_tracking_optout, k_session_tracking_noloop}) {
    s.clear(f);
  }
  s.tracking_redirect = options.redirect;
  if (options.bcast) {
    s.set(k_session_tracking_bcast);
    std::vector<std::string> prefixes = options.prefixes;
    if (prefixes.empty()) {
      prefixes.emplace_back();  // every key
    }
    for (const std::string& p : prefixes) {
      Prefix& entry = m_prefixes[p];
      if (entry.clients.emplace(s.id(), &s).second) {
        s.tracking_prefixes.insert(p);
      }
    }
  }
  if (options.optin) {
    s.set(k_session_tracking_optin);
  }
  if (options.optout) {
    s.set(k_session_tracking_optout);
  }
  if (options.noloop) {
    s.set(k_session_tracking_noloop);
  }
}

void Tracking::disable(Session& s) {
  if (s.has(k_session_tracking_bcast)) {
    for (const std::string& p : s.tracking_prefixes) {
      auto it = m_prefixes.find(p);
      if (it == m_prefixes.end()) {
        continue;
      }
      it->second.clients.erase(s.id());
      if (it->second.clients.empty()) {
        m_prefixes.erase(it);
      }
    }
    s.tracking_prefixes.clear();
  }
  if (s.has(k_session_tracking)) {
    --m_clients;
    for (SessionFlag f :
         {k_session_tracking, k_session_tracking_broken_redir, k_session_tracking_bcast,
          k_session_tracking_optin, k_session_tracking_optout, k_session_tracking_caching,
          k_session_tracking_noloop}) {
      s.clear(f);
    }
  }
}

std::string Tracking::prefix_collision(const Session& s,
                                       std::span<const std::string> prefixes) const {
  for (size_t i = 0; i < prefixes.size(); ++i) {
    for (const std::string& mine : s.tracking_prefixes) {
      if (overlaps(mine, prefixes[i])) {
        return "ERR Prefix '" + prefixes[i] + "' overlaps with an existing prefix '" + mine +
               "'. Prefixes for a single client must not overlap.";
      }
    }
    for (size_t j = i + 1; j < prefixes.size(); ++j) {
      if (overlaps(prefixes[i], prefixes[j])) {
        return "ERR Prefix '" + prefixes[i] + "' overlaps with another provided prefix '" +
               prefixes[j] + "'. Prefixes for a single client must not overlap.";
      }
    }
  }
  return {};
}

void Tracking::remember_keys(Session& tracker, const Command& cmd,
                             std::span<const std::string_view> argv) {
  bool caching = tracker.has(k_session_tracking_caching);
  if ((tracker.has(k_session_tracking_optin) && !caching) ||
      (tracker.has(k_session_tracking_optout) && caching)) {
    return;
  }
  if ((cmd.spec.flags & k_cmd_pubsub) != 0) {
    return;
  }
  CommandKeys keys = command_key_positions(m_engine.registry(), argv);
  for (size_t pos : keys.positions) {
    if (pos >= argv.size()) {
      continue;
    }
    auto it = m_table.find(argv[pos]);
    if (it == m_table.end()) {
      it = m_table.emplace(std::string(argv[pos]), std::set<uint64_t>{}).first;
    }
    if (it->second.insert(tracker.id()).second) {
      ++m_items;
    }
  }
}

void Tracking::send(Session& s, std::string_view proto) {
  Session* to = &s;
  bool redirected = false;
  if (s.tracking_redirect != 0) {
    auto it = m_engine.sessions().find(s.tracking_redirect);
    if (it == m_engine.sessions().end()) {
      s.set(k_session_tracking_broken_redir);
      if (s.resp > 2 && !s.has(k_session_close_asap)) {
        ReplyBuilder rb(m_engine.pubsub().output_of(s), s.resp);
        rb.push(2);
        rb.bulk("tracking-redir-broken");
        rb.integer(static_cast<int64_t>(s.tracking_redirect));
        if (s.host() != nullptr) {
          s.host()->wake(s);
        }
      }
      return;
    }
    to = it->second.get();
    redirected = true;
  }
  if (to->has(k_session_close_asap)) {
    return;
  }
  // To the running client: after its command's reply when the command itself changed the
  // key, before it when the server did so ahead of the command (eviction in processCommand).
  std::string& out =
      to == m_current && !m_engine.executing() ? to->out : m_engine.pubsub().output_of(*to);
  ReplyBuilder rb(out, to->resp);
  if (to->resp > 2) {
    rb.push(2);
    rb.bulk("invalidate");
  } else if (redirected && to->has(k_session_pubsub)) {
    rb.array(3);
    rb.bulk("message");
    rb.bulk(k_invalidate_channel);
  } else {
    return;  // a RESP2 client without a redirect has nowhere to get messages
  }
  rb.raw(proto);
  if (to->host() != nullptr) {
    to->host()->wake(*to);
  }
}

void Tracking::invalidate_key(std::string_view key, Session* by, bool bcast) {
  if (bcast) {
    for (auto& [prefix, entry] : m_prefixes) {
      if (key.starts_with(prefix)) {
        entry.keys.insert_or_assign(std::string(key), by);
      }
    }
  }
  auto it = m_table.find(key);
  if (it == m_table.end()) {
    return;
  }
  std::set<uint64_t> ids = std::move(it->second);
  m_items -= ids.size();
  m_table.erase(it);
  std::string proto = key_array(key);
  for (uint64_t id : ids) {
    auto s = m_engine.sessions().find(id);
    if (s == m_engine.sessions().end()) {
      continue;
    }
    Session& target = *s->second;
    if (!target.has(k_session_tracking) || target.has(k_session_tracking_bcast)) {
      continue;
    }
    if (target.has(k_session_tracking_noloop) && &target == m_current) {
      continue;
    }
    send(target, proto);
  }
}

void Tracking::invalidate_all() {
  if (m_clients != 0) {
    for (const auto& [id, s] : m_engine.sessions()) {
      if (s->has(k_session_tracking)) {
        // The null is in the tracking client's protocol, also when it is redirected.
        send(*s, s->resp > 2 ? std::string_view("_\r\n") : std::string_view("$-1\r\n"));
      }
    }
  }
  m_table.clear();
  m_items = 0;
}

void Tracking::broadcast() {
  if (m_clients == 0) {
    return;
  }
  for (auto& [prefix, entry] : m_prefixes) {
    if (entry.keys.empty()) {
      continue;
    }
    auto build = [&](const Session* skip) {
      size_t count = 0;
      for (const auto& [key, by] : entry.keys) {
        count += skip == nullptr || by != skip ? 1 : 0;
      }
      std::string proto;
      if (count == 0) {
        return proto;
      }
      ReplyBuilder rb(proto, 2);
      rb.array(count);
      for (const auto& [key, by] : entry.keys) {
        if (skip == nullptr || by != skip) {
          rb.bulk(key);
        }
      }
      return proto;
    };
    std::string all = build(nullptr);
    for (auto& [id, s] : entry.clients) {
      if (s->has(k_session_tracking_noloop)) {
        std::string own = build(s);
        if (!own.empty()) {
          send(*s, own);
        }
      } else {
        send(*s, all);
      }
    }
    entry.keys.clear();
  }
}

void Tracking::limit_table(uint64_t max_keys) {
  if (max_keys == 0 || m_table.size() <= max_keys) {
    m_limit_rounds = 0;
    return;
  }
  int effort = 100 * static_cast<int>(m_limit_rounds + 1);
  while (effort-- > 0 && !m_table.empty()) {
    // A random bucket, then the next one holding a key: random enough to spread the loss.
    size_t buckets = m_table.bucket_count();
    size_t b = static_cast<size_t>(m_engine.rng()() % buckets);
    while (m_table.bucket_size(b) == 0) {
      b = (b + 1) % buckets;
    }
    std::string key = m_table.begin(b)->first;
    invalidate_key(key, nullptr, false);
    if (m_table.size() <= max_keys) {
      m_limit_rounds = 0;
      return;
    }
  }
  ++m_limit_rounds;
}

}  // namespace keyshift::engine
