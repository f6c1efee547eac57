#include "migrate/import/cluster_target.hpp"

#include "engine/resp/resp_value.hpp"
#include "engine/util/split_args.hpp"

#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>

namespace keyshift::migrate {
namespace {

using Clock = std::chrono::steady_clock;

/// Redirects one key may take before the import gives up (a map that never settles).
constexpr int k_max_redirects = 16;
/// TRYAGAIN / CLUSTERDOWN answers one key may get before the import gives up.
constexpr int k_max_retries = 40;
/// No reply from any node for this long stops the import.
constexpr auto k_reply_timeout = std::chrono::seconds(30);
/// The marker of an ASKING request in a node's list of requests sent.
constexpr uint64_t k_asking = std::numeric_limits<uint64_t>::max();

/// Back-off before retry `attempt` (1, 2, ...): 20 ms doubling, at most a second.
std::chrono::milliseconds backoff(int attempt) {
  return std::chrono::milliseconds(std::min<int64_t>(1000, int64_t{20} << std::min(attempt, 6)));
}

}  // namespace

struct ClusterTarget::Node {
  engine::PipelinedConnection link;
  std::deque<uint64_t> sent;  // seq of each request in flight, k_asking for an ASKING
};

struct ClusterTarget::Entry {
  enum class State : uint8_t { queued, in_flight, written, conflict };
  /// A RESTORE; a transaction; one command of a key written as commands (never
  /// acknowledged); the command completing such a key, and its cleanup if any.
  enum class Kind : uint8_t { restore, transaction, part, last };
  PendingKey key;
  int64_t expire_ms = -1;
  std::string payload;  // kept until acknowledged: a redirect sends it again
  bool replace = false;
  int64_t idle_s = -1;
  int freq = -1;
  uint16_t slot = 0;
  State state = State::queued;
  int redirects = 0;
  int retries = 0;
  Kind kind = Kind::restore;
  // Any other kind than a RESTORE: its commands (a transaction's, between MULTI and EXEC;
  // a part's one; a last's command and cleanup), the replies seen of the current attempt,
  // and the first error among them (a last's: its command's reply decides the outcome).
  std::vector<std::vector<std::string>> commands;
  size_t replies = 0;
  std::string first_error;
  WriteOutcome outcome = WriteOutcome::written;

  /// Requests one attempt sends (ASKING not counted).
  size_t requests() const {
    return kind == Kind::transaction ? commands.size() + 2
           : kind == Kind::restore   ? 1
                                     : commands.size();
  }
  /// What the entry is, for messages.
  std::string describe() const {
    return kind == Kind::transaction
               ? "transaction " + key.key + " (slot " + std::to_string(slot) + ")"
               : "key " + engine::quote_repr(key.key);
  }
};

struct ClusterTarget::Retry {
  uint64_t seq = 0;
  int node = -1;  // -1: the slot's owner when sent
  bool asking = false;
  Clock::time_point not_before;
};

ClusterTarget::ClusterTarget(engine::RespEndpoint seed, uint32_t window)
    : m_seed(std::move(seed)),
      m_window(window),
      m_slot_in_flight(engine::k_cluster_slots, 0),
      m_slot_node(engine::k_cluster_slots, -1),
      m_slot_retrying(engine::k_cluster_slots, 0) {}

ClusterTarget::~ClusterTarget() = default;

engine::Expected<std::unique_ptr<ClusterTarget>, std::string> ClusterTarget::open(
    const engine::RespEndpoint& seed, uint32_t window) {
  if (seed.db != 0) {
    return engine::Unexpected{"a cluster has only database 0, and the URL of " + seed.describe() +
                              " names database " + std::to_string(seed.db)};
  }
  auto probe = engine::RespConnection::connect(seed);
  if (!probe) {
    return engine::Unexpected{probe.error()};
  }
  auto map = engine::read_cluster_map(*probe);
  if (!map) {
    return engine::Unexpected{map.error()};
  }
  if (map->primaries().empty()) {
    return engine::Unexpected{seed.describe() + ": the cluster serves no slots"};
  }
  std::unique_ptr<ClusterTarget> target(new ClusterTarget(seed, window));
  target->m_map = std::move(*map);
  auto info = probe->call({"INFO", "server"});
  if (!info) {
    return engine::Unexpected{info.error()};
  }
  if (info->is_error()) {
    return engine::Unexpected{"INFO server failed on " + seed.describe() + ": " + info->str};
  }
  auto server = identify_server(info->str);
  if (!server) {
    return engine::Unexpected{seed.describe() + ": " + server.error()};
  }
  target->m_server = std::move(*server);
  for (size_t i = 0; i < target->m_map.primaries().size(); ++i) {
    if (auto n = target->node(static_cast<int>(i)); !n) {
      return engine::Unexpected{n.error()};
    }
  }
  return target;
}

std::string ClusterTarget::describe() const {
  return "cluster " + m_seed.describe();
}

const ClusterWriteStats* ClusterTarget::cluster_stats() const {
  m_stats_view = m_stats;
  m_stats_view.keys_per_node.clear();
  for (size_t i = 0; i < m_map.primaries().size(); ++i) {
    m_stats_view.keys_per_node.emplace_back(m_map.primaries()[i].address(),
                                            i < m_node_keys.size() ? m_node_keys[i] : 0);
  }
  return &m_stats_view;
}

engine::Expected<ClusterTarget::Node*, std::string> ClusterTarget::node(int index) {
  if (index < 0 || static_cast<size_t>(index) >= m_map.primaries().size()) {
    return engine::Unexpected{std::string("no such cluster node")};
  }
  auto at = static_cast<size_t>(index);
  if (m_nodes.size() <= at) {
    m_nodes.resize(at + 1);
    m_node_keys.resize(at + 1, 0);
  }
  if (!m_nodes[at]) {
    auto link = engine::PipelinedConnection::connect(
        engine::node_endpoint(m_seed, m_map.primaries()[at]), m_window);
    if (!link) {
      return engine::Unexpected{link.error()};
    }
    m_nodes[at] = std::make_unique<Node>(Node{std::move(*link), {}});
  }
  return m_nodes[at].get();
}

engine::Expected<int, std::string> ClusterTarget::route(uint16_t slot) {
  int owner = m_map.owner(slot);
  if (owner >= 0) {
    return owner;
  }
  if (auto ok = refresh_map(m_seed); !ok) {
    return engine::Unexpected{ok.error()};
  }
  owner = m_map.owner(slot);
  if (owner < 0) {
    return engine::Unexpected{"no node of " + describe() + " serves slot " + std::to_string(slot) +
                              " (is the cluster complete? see CLUSTER SHARDS)"};
  }
  return owner;
}

engine::Expected<bool, std::string> ClusterTarget::refresh_map(const engine::RespEndpoint& from) {
  auto probe = engine::RespConnection::connect(from);
  if (!probe) {
    return engine::Unexpected{probe.error()};
  }
  auto fresh = engine::read_cluster_map(*probe);
  if (!fresh) {
    return engine::Unexpected{fresh.error()};
  }
  ++m_stats.refreshes;
  // Node indexes stay what they were (connections and requests in flight refer to them):
  // the fresh owners are merged into the map, which only gains nodes.
  for (uint32_t s = 0; s < engine::k_cluster_slots; ++s) {
    int o = fresh->owner(static_cast<uint16_t>(s));
    if (o >= 0) {
      const engine::ClusterNode& n = fresh->primaries()[static_cast<size_t>(o)];
      m_map.set_owner(static_cast<uint16_t>(s), m_map.node_at(n.host, n.port, n.id));
    }
  }
  return true;
}

ClusterTarget::Entry& ClusterTarget::entry(uint64_t seq) {
  return m_entries[static_cast<size_t>(seq - m_first_seq)];
}

bool ClusterTarget::slot_free_for(uint16_t slot, int index) const {
  return m_slot_in_flight[slot] == 0 || m_slot_node[slot] == index;
}

engine::Expected<bool, std::string> ClusterTarget::send_entry(uint64_t seq, int index,
                                                              bool asking) {
  auto n = node(index);
  if (!n) {
    return engine::Unexpected{n.error()};
  }
  Entry& e = entry(seq);
  if (asking) {
    (*n)->link.send({"ASKING"});
    (*n)->sent.push_back(k_asking);
  }
  if (e.kind == Entry::Kind::part || e.kind == Entry::Kind::last) {
    for (const std::vector<std::string>& c : e.commands) {
      (*n)->link.send(std::span<const std::string>(c));
      (*n)->sent.push_back(seq);
    }
    e.replies = 0;
    e.first_error.clear();
    e.outcome = WriteOutcome::written;
  } else if (e.kind == Entry::Kind::transaction) {
    (*n)->link.send({"MULTI"});
    (*n)->sent.push_back(seq);
    for (const std::vector<std::string>& c : e.commands) {
      (*n)->link.send(std::span<const std::string>(c));
      (*n)->sent.push_back(seq);
    }
    (*n)->link.send({"EXEC"});
    (*n)->sent.push_back(seq);
    e.replies = 0;
    e.first_error.clear();
  } else {
    char scratch[48];
    restore_args(m_args, e.key.key, e.expire_ms, e.payload, e.replace, e.idle_s, e.freq, scratch);
    (*n)->link.send(std::span<const std::string_view>(m_args));
    (*n)->sent.push_back(seq);
  }
  e.state = Entry::State::in_flight;
  ++m_slot_in_flight[e.slot];
  m_slot_node[e.slot] = static_cast<int16_t>(index);
  return true;
}

engine::Expected<bool, std::string> ClusterTarget::send_retries() {
  if (m_retries.empty()) {
    return true;
  }
  auto now = Clock::now();
  std::vector<uint16_t> blocked;  // slots whose older retry must go first
  std::deque<Retry> kept;
  while (!m_retries.empty()) {
    Retry r = m_retries.front();
    m_retries.pop_front();
    uint16_t slot = entry(r.seq).slot;
    bool go =
        std::find(blocked.begin(), blocked.end(), slot) == blocked.end() && now >= r.not_before;
    int index = r.node;
    if (go && index < 0) {
      auto owner = route(slot);
      if (!owner) {
        return engine::Unexpected{owner.error()};
      }
      index = *owner;
    }
    if (go) {
      auto n = node(index);
      if (!n) {
        return engine::Unexpected{n.error()};
      }
      go = slot_free_for(slot, index) && (*n)->link.can_send();
    }
    if (!go) {
      blocked.push_back(slot);
      kept.push_back(r);
      continue;
    }
    if (auto sent = send_entry(r.seq, index, r.asking); !sent) {
      return sent;
    }
    --m_slot_retrying[slot];
  }
  m_retries = std::move(kept);
  return true;
}

engine::Expected<bool, std::string> ClusterTarget::take_reply(int index,
                                                              const engine::ReplyView& reply) {
  Node& n = *m_nodes[static_cast<size_t>(index)];
  uint64_t seq = n.sent.front();
  n.sent.pop_front();
  if (seq == k_asking) {
    if (reply.is_error) {
      return engine::Unexpected{"ASKING failed on " + n.link.endpoint().describe() + ": " +
                                std::string(reply.error_text)};
    }
    return true;
  }
  Entry& e = entry(seq);
  if (e.kind == Entry::Kind::part || e.kind == Entry::Kind::last) {
    return take_command_reply(index, seq, reply);
  }
  if (e.kind == Entry::Kind::transaction) {
    // MULTI's +OK and each command's +QUEUED, or the error that will abort EXEC.
    if (++e.replies < e.requests()) {
      if (reply.is_error && e.first_error.empty()) {
        e.first_error = std::string(reply.error_text);
      }
      return true;
    }
    --m_slot_in_flight[e.slot];
    if (!reply.is_error && e.first_error.empty()) {
      e.state = Entry::State::written;
      std::vector<std::vector<std::string>>().swap(e.commands);
      return true;
    }
    std::string text = e.first_error.empty() ? std::string(reply.error_text) : e.first_error;
    return refused(seq, text, n.link.endpoint());
  }
  --m_slot_in_flight[e.slot];
  if (!reply.is_error) {
    e.state = Entry::State::written;
    ++m_node_keys[static_cast<size_t>(index)];
    std::string().swap(e.payload);
    return true;
  }
  std::string text(reply.error_text);
  if (m_skip_conflicts && text.starts_with("BUSYKEY")) {
    e.state = Entry::State::conflict;
    std::string().swap(e.payload);
    return true;
  }
  return refused(seq, text, n.link.endpoint());
}

engine::Expected<bool, std::string> ClusterTarget::take_command_reply(
    int index, uint64_t seq, const engine::ReplyView& reply) {
  Node& n = *m_nodes[static_cast<size_t>(index)];
  Entry& e = entry(seq);
  bool decides = e.kind == Entry::Kind::last && e.replies == 0;  // the rename's own reply
  ++e.replies;
  if (reply.is_error) {
    std::string text(reply.error_text);
    bool redirected = engine::parse_redirect(text).has_value() || engine::is_retry_later(text);
    if (decides && !redirected && text.starts_with("ERR no such key")) {
      e.outcome = WriteOutcome::expired_in_flight;
    } else if (e.first_error.empty()) {
      e.first_error = std::move(text);
    }
  } else if (decides && (reply.is_null || reply.bytes == ":0\r\n")) {
    if (!m_skip_conflicts) {
      e.first_error =
          "the target " + describe() + " already has key " + engine::quote_repr(e.key.key);
    }
    e.outcome = WriteOutcome::conflict_skipped;
  }
  if (e.replies < e.requests()) {
    return true;
  }
  --m_slot_in_flight[e.slot];
  if (e.first_error.empty()) {
    e.state = e.outcome == WriteOutcome::conflict_skipped ? Entry::State::conflict
                                                          : Entry::State::written;
    if (e.kind == Entry::Kind::last && e.outcome == WriteOutcome::written) {
      ++m_node_keys[static_cast<size_t>(index)];
    }
    std::vector<std::vector<std::string>>().swap(e.commands);
    return true;
  }
  if (e.first_error.starts_with("the target ")) {
    return engine::Unexpected{e.first_error};
  }
  // A redirect or retry sends the whole attempt again; any other error ends the import.
  return refused(seq, e.first_error, n.link.endpoint());
}

engine::Expected<bool, std::string> ClusterTarget::refused(uint64_t seq, const std::string& text,
                                                           const engine::RespEndpoint& from) {
  Entry& e = entry(seq);
  std::string where = from.describe();
  if (auto redirect = engine::parse_redirect(text)) {
    if (++e.redirects > k_max_redirects) {
      return engine::Unexpected{
          e.describe() + " was redirected " + std::to_string(k_max_redirects) +
          " times; the cluster's slot map does not settle (last: " + text + ")"};
    }
    std::string host = redirect->host.empty() ? from.host : redirect->host;
    int to = m_map.node_at(host, redirect->port);
    Retry r{seq, -1, false, Clock::now()};
    if (redirect->ask) {
      ++m_stats.ask;
      r.node = to;
      r.asking = true;
    } else {
      ++m_stats.moved;
      m_map.set_owner(redirect->slot, to);
      m_refresh_from = engine::node_endpoint(m_seed, m_map.primaries()[static_cast<size_t>(to)]);
    }
    e.state = Entry::State::queued;
    ++m_slot_retrying[e.slot];
    m_retries.push_back(r);
    return true;
  }
  if (engine::is_retry_later(text)) {
    if (++e.retries > k_max_retries) {
      return engine::Unexpected{"the target " + where + " still refused " + e.describe() +
                                " after " + std::to_string(k_max_retries) + " tries: " + text};
    }
    ++m_stats.retries;
    if (text.starts_with("CLUSTERDOWN")) {
      m_refresh_from = m_seed;
    }
    e.state = Entry::State::queued;
    ++m_slot_retrying[e.slot];
    m_retries.push_back(Retry{seq, -1, false, Clock::now() + backoff(e.retries)});
    return true;
  }
  return engine::Unexpected{"the target " + where + " refused " + e.describe() + ": " + text};
}

void ClusterTarget::deliver_acks() {
  while (!m_entries.empty()) {
    Entry& e = m_entries.front();
    if (e.state != Entry::State::written && e.state != Entry::State::conflict) {
      break;
    }
    if (m_on_ack && e.kind != Entry::Kind::part) {
      WriteOutcome outcome = e.state == Entry::State::conflict ? WriteOutcome::conflict_skipped
                             : e.kind == Entry::Kind::last     ? e.outcome
                                                               : WriteOutcome::written;
      m_on_ack(e.key, outcome);
    }
    m_entries.pop_front();
    ++m_first_seq;
  }
}

engine::Expected<bool, std::string> ClusterTarget::pump(std::chrono::milliseconds wait) {
  if (m_refresh_from) {
    engine::RespEndpoint from = *m_refresh_from;
    m_refresh_from.reset();
    // Read from the node the last MOVED named, which knows the slot is its own; a failed
    // refresh leaves the map the redirects corrected in use.
    (void)refresh_map(from);
  }
  if (auto ok = send_retries(); !ok) {
    return ok;
  }
  bool moved = false;
  std::vector<pollfd> fds;
  std::vector<int> fd_node;
  for (size_t i = 0; i < m_nodes.size(); ++i) {
    if (!m_nodes[i]) {
      continue;
    }
    Node& n = *m_nodes[i];
    if (n.link.flush() == engine::PipelinedConnection::Io::failed) {
      return engine::Unexpected{n.link.error()};
    }
    if (n.link.in_flight() == 0) {
      continue;
    }
    engine::ReplyView reply;
    for (int round = 0; round < 2; ++round) {
      while (n.link.next_reply(reply)) {
        moved = true;
        if (auto ok = take_reply(static_cast<int>(i), reply); !ok) {
          return ok;
        }
      }
      if (n.link.failed()) {
        return engine::Unexpected{n.link.error()};
      }
      if (round == 0 && n.link.in_flight() > 0 &&
          n.link.fill() == engine::PipelinedConnection::Io::failed) {
        return engine::Unexpected{n.link.error()};
      }
    }
    if (n.link.in_flight() > 0 || n.link.wants_write()) {
      fds.push_back(pollfd{n.link.fd(),
                           static_cast<short>(POLLIN | (n.link.wants_write() ? POLLOUT : 0)), 0});
      fd_node.push_back(static_cast<int>(i));
    }
  }
  deliver_acks();
  if (moved || (fds.empty() && m_retries.empty())) {
    return true;
  }
  auto timeout = wait;
  if (!m_retries.empty()) {
    auto due = m_retries.front().not_before;
    for (const Retry& r : m_retries) {
      due = std::min(due, r.not_before);
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(due - Clock::now());
    timeout = std::clamp(left, std::chrono::milliseconds(1), wait);
  }
  int rc = 0;
  do {
    rc = ::poll(fds.data(), fds.size(), static_cast<int>(timeout.count()));
  } while (rc < 0 && errno == EINTR);
  if (rc < 0) {
    return engine::Unexpected{std::string("poll failed: ") + std::strerror(errno)};
  }
  return rc > 0 || !m_retries.empty();
}

engine::Expected<bool, std::string> ClusterTarget::restore(PendingKey pending, int64_t expire_ms,
                                                           std::string_view payload, bool replace,
                                                           int64_t idle_s, int freq) {
  if (pending.db != 0) {
    return engine::Unexpected{"a cluster has only database 0, and key " +
                              engine::quote_repr(pending.key) + " would go to database " +
                              std::to_string(pending.db) + " (map it with --db-map " +
                              std::to_string(pending.db) + ":0)"};
  }
  Entry e;
  e.slot = engine::key_hash_slot(pending.key);
  e.key = std::move(pending);
  e.expire_ms = expire_ms;
  e.payload = std::string(payload);
  e.replace = replace;
  e.idle_s = idle_s;
  e.freq = freq;
  m_bytes_sent += payload.size() + e.key.key.size();
  return enqueue(std::move(e));
}

engine::Expected<bool, std::string> ClusterTarget::transaction(
    PendingKey pending, uint16_t slot, std::vector<std::vector<std::string>> commands) {
  Entry e;
  e.slot = slot;
  e.key = std::move(pending);
  e.kind = Entry::Kind::transaction;
  for (const std::vector<std::string>& c : commands) {
    for (const std::string& a : c) {
      m_bytes_sent += a.size();
    }
  }
  e.commands = std::move(commands);
  return enqueue(std::move(e));
}

engine::Expected<bool, std::string> ClusterTarget::send_part(
    uint64_t db, std::string_view key, std::span<const std::string_view> args) {
  Entry e;
  e.kind = Entry::Kind::part;
  e.key.db = db;
  e.key.key = std::string(key);
  return enqueue_commands(std::move(e), args, {});
}

engine::Expected<bool, std::string> ClusterTarget::send_last(
    PendingKey pending, std::span<const std::string_view> args,
    std::span<const std::string_view> cleanup) {
  Entry e;
  e.kind = Entry::Kind::last;
  e.key = std::move(pending);
  return enqueue_commands(std::move(e), args, cleanup);
}

engine::Expected<bool, std::string> ClusterTarget::enqueue_commands(
    Entry e, std::span<const std::string_view> args, std::span<const std::string_view> cleanup) {
  if (e.key.db != 0) {
    return engine::Unexpected{"a cluster has only database 0, and key " +
                              engine::quote_repr(e.key.key) + " would go to database " +
                              std::to_string(e.key.db) + " (map it with --db-map " +
                              std::to_string(e.key.db) + ":0)"};
  }
  // The temporary key a big key is built under shares the key's slot (temporary_key).
  e.slot = engine::key_hash_slot(e.key.key);
  for (std::span<const std::string_view> c : {args, cleanup}) {
    if (c.empty()) {
      continue;
    }
    std::vector<std::string>& command = e.commands.emplace_back();
    for (std::string_view a : c) {
      command.emplace_back(a);
      m_bytes_sent += a.size();
    }
  }
  return enqueue(std::move(e));
}

engine::Expected<bool, std::string> ClusterTarget::enqueue(Entry e) {
  // Every write not yet acknowledged to the caller is held (for resending); a slow node
  // holds the others back, so the number held is bounded too.
  size_t cap = static_cast<size_t>(m_window) * std::max<size_t>(m_map.primaries().size(), 1) * 2;
  auto idle_since = Clock::now();
  while (m_entries.size() >= cap) {
    auto moved = pump(std::chrono::milliseconds(1000));
    if (!moved) {
      return moved;
    }
    if (*moved) {
      idle_since = Clock::now();
    } else if (Clock::now() - idle_since > k_reply_timeout) {
      return engine::Unexpected{"the target " + describe() + " did not answer within 30 s"};
    }
  }
  uint16_t slot = e.slot;
  m_entries.push_back(std::move(e));
  uint64_t seq = m_first_seq + m_entries.size() - 1;
  idle_since = Clock::now();
  for (;;) {
    auto owner = route(slot);
    if (!owner) {
      return engine::Unexpected{owner.error()};
    }
    auto n = node(*owner);
    if (!n) {
      return engine::Unexpected{n.error()};
    }
    if (m_slot_retrying[slot] == 0 && slot_free_for(slot, *owner) && (*n)->link.can_send()) {
      return send_entry(seq, *owner, false);
    }
    auto moved = pump(std::chrono::milliseconds(1000));
    if (!moved) {
      return moved;
    }
    if (*moved) {
      idle_since = Clock::now();
    } else if (Clock::now() - idle_since > k_reply_timeout) {
      return engine::Unexpected{"the target " + describe() + " did not answer within 30 s"};
    }
  }
}

engine::Expected<bool, std::string> ClusterTarget::command_everywhere(
    PendingKey pending, std::span<const std::string_view> argv) {
  if (auto ok = drain(); !ok) {
    return ok;
  }
  for (size_t i = 0; i < m_map.primaries().size(); ++i) {
    auto n = node(static_cast<int>(i));
    if (!n) {
      return engine::Unexpected{n.error()};
    }
    (*n)->link.send(argv);
    auto reply = (*n)->link.wait_reply();
    if (!reply) {
      return engine::Unexpected{reply.error()};
    }
    if (reply->is_error) {
      return engine::Unexpected{"the target " + (*n)->link.endpoint().describe() + " refused " +
                                pending.key + ": " + std::string(reply->error_text)};
    }
  }
  // Every write before it was answered (drain): the acknowledgement is in order.
  if (m_on_ack) {
    m_on_ack(pending, WriteOutcome::written);
  }
  return true;
}

std::vector<engine::RespEndpoint> ClusterTarget::primary_endpoints() const {
  std::vector<engine::RespEndpoint> out;
  for (const engine::ClusterNode& n : m_map.primaries()) {
    out.push_back(engine::node_endpoint(m_seed, n));
  }
  return out;
}

engine::Expected<bool, std::string> ClusterTarget::drain() {
  auto idle_since = Clock::now();
  while (!m_entries.empty()) {
    auto moved = pump(std::chrono::milliseconds(1000));
    if (!moved) {
      return moved;
    }
    if (*moved) {
      idle_since = Clock::now();
    } else if (Clock::now() - idle_since > k_reply_timeout) {
      return engine::Unexpected{"the target " + describe() + " did not answer within 30 s"};
    }
  }
  return true;
}

engine::Expected<std::vector<std::string>, std::string> ClusterTarget::existing(
    uint64_t db, const std::vector<std::string>& keys) {
  if (db != 0) {
    return engine::Unexpected{"a cluster has only database 0, and keys would go to database " +
                              std::to_string(db) + " (map it with --db-map " + std::to_string(db) +
                              ":0)"};
  }
  if (auto ok = drain(); !ok) {
    return engine::Unexpected{ok.error()};
  }
  // One pipelined EXISTS per key on the node owning its slot; a redirected key is asked
  // again where the redirect points.
  std::vector<char> found(keys.size(), 0);
  std::vector<size_t> pending(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    pending[i] = i;
  }
  for (int pass = 0; pass <= k_max_redirects && !pending.empty(); ++pass) {
    std::vector<std::vector<size_t>> by_node;
    for (size_t i : pending) {
      auto owner = route(engine::key_hash_slot(keys[i]));
      if (!owner) {
        return engine::Unexpected{owner.error()};
      }
      if (by_node.size() <= static_cast<size_t>(*owner)) {
        by_node.resize(static_cast<size_t>(*owner) + 1);
      }
      by_node[static_cast<size_t>(*owner)].push_back(i);
    }
    std::vector<size_t> again;
    for (size_t ni = 0; ni < by_node.size(); ++ni) {
      if (by_node[ni].empty()) {
        continue;
      }
      auto n = node(static_cast<int>(ni));
      if (!n) {
        return engine::Unexpected{n.error()};
      }
      engine::PipelinedConnection& link = (*n)->link;
      const std::vector<size_t>& mine = by_node[ni];
      size_t next = 0;
      size_t answered = 0;
      while (answered < mine.size()) {
        while (next < mine.size() && link.can_send()) {
          link.send({"EXISTS", keys[mine[next]]});
          ++next;
        }
        auto reply = link.wait_reply();
        if (!reply) {
          return engine::Unexpected{reply.error()};
        }
        size_t k = mine[answered];
        ++answered;
        if (reply->is_error) {
          std::string text(reply->error_text);
          if (auto r = engine::parse_redirect(text)) {
            if (!r->ask) {
              m_map.set_owner(
                  r->slot,
                  m_map.node_at(r->host.empty() ? link.endpoint().host : r->host, r->port));
              again.push_back(k);
              continue;
            }
            // ASK: the key is being moved; it exists on one of the two nodes.
            auto there = engine::RespConnection::connect(engine::node_endpoint(
                m_seed, engine::ClusterNode{"", r->host.empty() ? link.endpoint().host : r->host,
                                            r->port}));
            if (!there) {
              return engine::Unexpected{there.error()};
            }
            auto replies = there->pipeline({{"ASKING"}, {"EXISTS", keys[k]}});
            if (!replies) {
              return engine::Unexpected{replies.error()};
            }
            found[k] = (*replies)[1].integer > 0 ? 1 : 0;
            continue;
          }
          if (engine::is_retry_later(text)) {
            again.push_back(k);
            continue;
          }
          return engine::Unexpected{"EXISTS failed on " + link.endpoint().describe() + ": " + text};
        }
        found[k] = reply->bytes != ":0\r\n" ? 1 : 0;
      }
    }
    std::sort(again.begin(), again.end());
    pending = std::move(again);
  }
  if (!pending.empty()) {
    return engine::Unexpected{"EXISTS of " + engine::quote_repr(keys[pending.front()]) + " on " +
                              describe() + " was redirected too often"};
  }
  std::vector<std::string> out;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (found[i] != 0) {
      out.push_back(keys[i]);
    }
  }
  return out;
}

}  // namespace keyshift::migrate
