#include "compat/replay/replay_target.hpp"

#include "engine/commands/command_keys.hpp"
#include "engine/util/cluster_slot.hpp"
#include "engine/util/strings.hpp"

namespace keyshift::compat::replay {
namespace {

/// Redirects one request may take before its reply is taken as it is.
constexpr int k_max_redirects = 5;

/// A view of a whole reply held as bytes.
engine::ReplyView view_of(std::string_view bytes) {
  engine::ReplyView v;
  v.bytes = bytes;
  v.is_error = !bytes.empty() && (bytes[0] == '-' || bytes[0] == '!');
  v.is_null = bytes == "$-1\r\n" || bytes == "*-1\r\n" || bytes == "_\r\n";
  if (!bytes.empty() && bytes[0] == '-' && bytes.size() >= 3) {
    v.error_text = bytes.substr(1, bytes.size() - 3);
  }
  return v;
}

/// Commands that set a connection up: a cluster client sends them to every node.
bool is_setup(std::span<const std::string_view> args) {
  if (args.empty()) {
    return false;
  }
  if (engine::iequals(args[0], "HELLO") || engine::iequals(args[0], "SELECT") ||
      engine::iequals(args[0], "READONLY")) {
    return true;
  }
  return args.size() >= 2 && engine::iequals(args[0], "CLIENT") &&
         (engine::iequals(args[1], "SETNAME") || engine::iequals(args[1], "SETINFO"));
}

}  // namespace

ClusterRoutes::ClusterRoutes(engine::RespEndpoint seed, engine::ClusterMap map)
    : m_seed(std::move(seed)), m_map(std::move(map)) {
  engine::register_all_families(m_registry);
}

engine::Expected<std::unique_ptr<ClusterRoutes>, std::string> ClusterRoutes::open(
    const engine::RespEndpoint& seed) {
  auto conn = engine::RespConnection::connect(seed);
  if (!conn) {
    return engine::Unexpected{conn.error()};
  }
  auto cluster = engine::is_cluster_node(*conn);
  if (!cluster || !*cluster) {
    return std::unique_ptr<ClusterRoutes>();  // one server
  }
  auto map = engine::read_cluster_map(*conn);
  if (!map) {
    return engine::Unexpected{map.error()};
  }
  return std::unique_ptr<ClusterRoutes>(new ClusterRoutes(seed, std::move(*map)));
}

int ClusterRoutes::moved(uint16_t slot, std::string_view host, int port) {
  ++m_redirects;
  int node = m_map.node_at(host, port);
  m_map.set_owner(slot, node);
  return node;
}

engine::RespEndpoint ClusterRoutes::endpoint(int index) const {
  return engine::node_endpoint(m_seed, m_map.primaries()[static_cast<size_t>(index)]);
}

std::optional<uint16_t> ClusterRoutes::slot_of(std::span<const std::string_view> args) const {
  if (args.empty()) {
    return std::nullopt;
  }
  engine::CommandKeys keys = engine::command_key_positions(m_registry, args);
  if (!keys.found || keys.positions.empty()) {
    return std::nullopt;
  }
  return engine::key_hash_slot(args[keys.positions[0]]);
}

TargetSide::TargetSide(engine::RespEndpoint target, ClusterRoutes* routes, uint32_t window)
    : m_target(std::move(target)), m_routes(routes), m_window(window) {}

engine::Expected<TargetSide::Link*, std::string> TargetSide::link(int index) {
  auto at = static_cast<size_t>(index);
  if (m_links.size() <= at) {
    m_links.resize(at + 1);
  }
  if (!m_links[at]) {
    engine::RespEndpoint where = m_routes != nullptr ? m_routes->endpoint(index) : m_target;
    auto conn = engine::PipelinedConnection::connect(where, m_window);
    if (!conn) {
      return engine::Unexpected{conn.error()};
    }
    m_links[at] = std::make_unique<Link>(Link{std::move(*conn), {}});
    ++m_opened;
    // A node joined later gets the connection's setup first (its replies belong to nobody).
    for (const std::vector<std::string>& setup : m_setup) {
      m_links[at]->conn.send(std::span<const std::string>(setup));
      m_links[at]->order.push_back(k_nobody);
    }
  }
  return m_links[at].get();
}

engine::Expected<SentRequest, std::string> TargetSide::queue(int index,
                                                             std::span<const std::string_view> args,
                                                             std::string_view raw,
                                                             bool expect_reply) {
  auto l = link(index);
  if (!l) {
    return engine::Unexpected{l.error()};
  }
  uint64_t id = m_next_id++;
  if (!expect_reply && !raw.empty()) {
    (*l)->conn.send_raw(raw, 0);
    return SentRequest{index, id};
  }
  if (raw.empty()) {
    (*l)->conn.send(args);
  } else {
    (*l)->conn.send_raw(raw, 1);
  }
  (*l)->order.push_back(id);
  return SentRequest{index, id};
}

engine::Expected<int, std::string> TargetSide::route(std::span<const std::string_view> args) {
  if (m_routes == nullptr) {
    return 0;
  }
  bool multi = !args.empty() && engine::iequals(args[0], "MULTI");
  if (multi && !m_in_multi) {
    m_in_multi = true;
    m_multi_link = k_deferred;
    return k_deferred;
  }
  std::optional<uint16_t> slot = m_routes->slot_of(args);
  int node = slot ? m_routes->owner(*slot) : m_home;
  if (node < 0) {
    node = m_home >= 0 ? m_home : 0;
  }
  if (m_in_multi) {
    if (m_multi_link == k_deferred) {
      // The transaction goes where its first key lives, as a cluster client sends it.
      std::string_view multi_args[] = {"MULTI"};
      auto sent = queue(node, multi_args, {}, true);
      if (!sent) {
        return engine::Unexpected{sent.error()};
      }
      Link& l = *m_links[static_cast<size_t>(node)];
      l.order.back() = m_multi_answered ? k_nobody : *m_multi_id;
      if (!m_multi_answered) {
        m_deferred_at[*m_multi_id] = node;
      }
      m_multi_link = node;
    }
    node = m_multi_link;
    if (!args.empty() &&
        (engine::iequals(args[0], "EXEC") || engine::iequals(args[0], "DISCARD"))) {
      m_in_multi = false;
      m_multi_link = k_deferred;
      m_multi_id.reset();
      m_multi_answered = false;
    }
  }
  if (m_home < 0) {
    m_home = node;
  }
  return node;
}

void TargetSide::remember_setup(std::span<const std::string_view> args) {
  if (m_routes != nullptr && is_setup(args)) {
    m_setup.emplace_back(args.begin(), args.end());
  }
}

engine::Expected<SentRequest, std::string> TargetSide::send(std::span<const std::string_view> args,
                                                            std::string_view raw,
                                                            bool expect_reply) {
  auto where = route(args);
  if (!where) {
    return engine::Unexpected{where.error()};
  }
  if (*where == k_deferred) {
    uint64_t id = m_next_id++;
    m_multi_id = id;
    m_multi_answered = false;
    return SentRequest{k_deferred, id};
  }
  auto sent = queue(*where, args, raw, expect_reply);
  if (sent) {
    remember_setup(args);
  }
  return sent;
}

engine::Expected<SentRequest, std::string> TargetSide::send_args(
    std::span<const std::string_view> args) {
  return send(args, {});
}

SentRequest TargetSide::expect_more(const SentRequest& after) {
  int index = after.link;
  if (index == k_deferred) {
    auto it = m_deferred_at.find(after.id);
    index = it != m_deferred_at.end() ? it->second : std::max(m_home, 0);
  }
  uint64_t id = m_next_id++;
  auto l = link(index);
  if (l) {
    (*l)->conn.send_raw(std::string_view("", 0), 1);
    (*l)->order.push_back(id);
  }
  return SentRequest{index, id};
}

engine::Expected<bool, std::string> TargetSide::flush() {
  for (const std::unique_ptr<Link>& l : m_links) {
    if (l && l->conn.flush() == engine::PipelinedConnection::Io::failed) {
      return engine::Unexpected{l->conn.error()};
    }
  }
  return true;
}

engine::Expected<engine::ReplyView, std::string> TargetSide::wait_once(
    const SentRequest& request, std::chrono::milliseconds timeout) {
  int index = request.link;
  if (index == k_deferred) {
    auto it = m_deferred_at.find(request.id);
    if (it == m_deferred_at.end()) {
      // Not sent yet (its transaction has no key so far): a server answers MULTI with +OK,
      // and the real one's reply, when it goes, belongs to nobody.
      m_multi_answered = true;
      m_last = "+OK\r\n";
      return view_of(m_last);
    }
    index = it->second;
    m_deferred_at.erase(it);
  }
  if (auto stashed = m_stash.find(request.id); stashed != m_stash.end()) {
    m_last = std::move(stashed->second);
    m_stash.erase(stashed);
    return view_of(m_last);
  }
  if (index < 0 || static_cast<size_t>(index) >= m_links.size() ||
      !m_links[static_cast<size_t>(index)]) {
    return engine::Unexpected{std::string("no request of this connection was sent there")};
  }
  Link& l = *m_links[static_cast<size_t>(index)];
  for (;;) {
    if (l.order.empty()) {
      return engine::Unexpected{l.conn.endpoint().describe() + ": no reply is due"};
    }
    auto reply = l.conn.wait_reply(timeout);
    if (!reply) {
      return engine::Unexpected{reply.error()};
    }
    uint64_t id = l.order.front();
    l.order.pop_front();
    if (id == request.id) {
      m_last.assign(reply->bytes);  // its capacity is reused reply after reply
      return view_of(m_last);
    }
    if (id != k_nobody) {
      m_stash.emplace(id, std::string(reply->bytes));
    }
  }
}

engine::Expected<engine::ReplyView, std::string> TargetSide::wait(
    const SentRequest& request, std::string_view raw, std::chrono::milliseconds timeout) {
  auto got = wait_once(request, timeout);
  for (int hop = 0; got && m_routes != nullptr && hop < k_max_redirects && !raw.empty(); ++hop) {
    if (!got->is_error) {
      break;
    }
    auto redirect = engine::parse_redirect(got->error_text);
    if (!redirect) {
      break;
    }
    int from = request.link >= 0 ? request.link : std::max(m_home, 0);
    std::string host = redirect->host;
    if (host.empty() && static_cast<size_t>(from) < m_links.size() &&
        m_links[static_cast<size_t>(from)]) {
      host = m_links[static_cast<size_t>(from)]->conn.endpoint().host;
    }
    SentRequest again;
    if (redirect->ask) {
      int node = m_routes->node_at(host, redirect->port);
      auto l = link(node);
      if (!l) {
        return engine::Unexpected{l.error()};
      }
      (*l)->conn.send({"ASKING"});
      (*l)->order.push_back(k_nobody);
      auto sent = queue(node, {}, raw, true);
      if (!sent) {
        return engine::Unexpected{sent.error()};
      }
      again = *sent;
    } else {
      int node = m_routes->moved(redirect->slot, host, redirect->port);
      auto sent = queue(node, {}, raw, true);
      if (!sent) {
        return engine::Unexpected{sent.error()};
      }
      again = *sent;
    }
    if (auto flushed = flush(); !flushed) {
      return engine::Unexpected{flushed.error()};
    }
    got = wait_once(again, timeout);
  }
  return got;
}

}  // namespace keyshift::compat::replay
