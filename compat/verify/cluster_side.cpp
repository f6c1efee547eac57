#include "compat/verify/cluster_side.hpp"

#include "engine/resp/request_writer.hpp"
#include "engine/util/strings.hpp"

#include <fmt/core.h>

#include <charconv>
#include <span>

namespace keyshift::compat {
namespace {

using engine::Expected;
using engine::RespValue;
using engine::Unexpected;

/// Redirects one command may take before the side gives up.
constexpr int k_max_redirects = 8;

RespValue simple(std::string text, RespValue::Type type = RespValue::Type::simple) {
  RespValue v;
  v.type = type;
  v.str = std::move(text);
  return v;
}

/// The key a command is about, or nullptr (commands verify sends: TYPE, PTTL, DUMP, the
/// chunked reads, MEMORY USAGE key, DEBUG DIGEST-VALUE key).
const std::string* key_of(const std::vector<std::string>& command) {
  if (command.size() >= 3 &&
      (engine::iequals(command[0], "MEMORY") || engine::iequals(command[0], "DEBUG"))) {
    return &command[2];
  }
  if (command.size() >= 2) {
    return &command[1];
  }
  return nullptr;
}

/// "db0:keys=10,expires=2,avg_ttl=0" in INFO keyspace text: keys and expires of db 0.
void add_keyspace(std::string_view info, uint64_t& keys, uint64_t& expires) {
  size_t at = info.find("db0:keys=");
  if (at == std::string_view::npos) {
    return;
  }
  at += 9;
  uint64_t k = 0;
  auto r = std::from_chars(info.data() + at, info.data() + info.size(), k);
  keys += k;
  std::string_view rest(r.ptr, static_cast<size_t>(info.data() + info.size() - r.ptr));
  if (rest.starts_with(",expires=")) {
    uint64_t e = 0;
    std::from_chars(rest.data() + 9, rest.data() + rest.size(), e);
    expires += e;
  }
}

}  // namespace

ClusterSide::~ClusterSide() = default;

Expected<std::unique_ptr<ClusterSide>, std::string> ClusterSide::connect(
    const engine::RespEndpoint& seed) {
  auto probe = engine::RespConnection::connect(seed);
  if (!probe) {
    return Unexpected{probe.error()};
  }
  auto map = engine::read_cluster_map(*probe);
  if (!map) {
    return Unexpected{map.error()};
  }
  if (map->primaries().empty()) {
    return Unexpected{seed.describe() + ": the cluster serves no slots"};
  }
  std::unique_ptr<ClusterSide> side(new ClusterSide(seed));
  side->m_map = std::move(*map);
  for (size_t i = 0; i < side->m_map.primaries().size(); ++i) {
    if (auto n = side->node(static_cast<int>(i)); !n) {
      return Unexpected{n.error()};
    }
  }
  return side;
}

std::string ClusterSide::describe() const {
  return "cluster " + m_seed.describe();
}

Expected<engine::RespConnection*, std::string> ClusterSide::node(int index) {
  auto at = static_cast<size_t>(index);
  if (m_nodes.size() <= at) {
    m_nodes.resize(at + 1);
  }
  if (!m_nodes[at]) {
    auto c = engine::RespConnection::connect(engine::node_endpoint(m_seed, m_map.primaries()[at]));
    if (!c) {
      return Unexpected{c.error()};
    }
    m_nodes[at] = std::make_unique<engine::RespConnection>(std::move(*c));
  }
  return m_nodes[at].get();
}

Expected<bool, std::string> ClusterSide::submit(const CommandBatch& batch) {
  m_batch = batch;
  m_plans.assign(batch.size(), Plan{});
  size_t primaries = m_map.primaries().size();
  std::vector<std::string> out(m_nodes.size());
  auto queue = [&out](int node, std::span<const std::string> args) {
    if (out.size() <= static_cast<size_t>(node)) {
      out.resize(static_cast<size_t>(node) + 1);
    }
    engine::append_request(out[static_cast<size_t>(node)], args);
  };
  for (size_t i = 0; i < batch.size(); ++i) {
    const std::vector<std::string>& cmd = batch[i];
    Plan& plan = m_plans[i];
    if (cmd.empty()) {
      return Unexpected{std::string("an empty command")};
    }
    const std::string& name = cmd[0];
    if (engine::iequals(name, "SCAN") && cmd.size() >= 2) {
      plan.kind = Plan::Kind::scan;
      std::string_view cursor = cmd[1];
      size_t colon = cursor.find(':');
      int node = 0;
      std::string inner = "0";
      if (colon != std::string_view::npos) {
        auto r = std::from_chars(cursor.data(), cursor.data() + colon, node);
        if (r.ec != std::errc() || node < 0 || static_cast<size_t>(node) >= primaries) {
          return Unexpected{fmt::format("{}: bad cluster SCAN cursor {}", describe(), cursor)};
        }
        inner = std::string(cursor.substr(colon + 1));
      } else if (cursor != "0") {
        return Unexpected{fmt::format("{}: bad cluster SCAN cursor {}", describe(), cursor)};
      }
      plan.node = node;
      std::vector<std::string> inner_cmd = cmd;
      inner_cmd[1] = inner;
      queue(node, inner_cmd);
    } else if (engine::iequals(name, "SELECT")) {
      plan.kind = Plan::Kind::select;
      plan.local =
          cmd.size() == 2 && cmd[1] == "0"
              ? simple("OK")
              : simple("ERR SELECT is not allowed in cluster mode", RespValue::Type::error);
    } else if (engine::iequals(name, "DBSIZE") ||
               (engine::iequals(name, "INFO") && cmd.size() == 2 &&
                engine::iequals(cmd[1], "keyspace"))) {
      plan.kind = engine::iequals(name, "DBSIZE") ? Plan::Kind::dbsize : Plan::Kind::info_keyspace;
      for (size_t n = 0; n < primaries; ++n) {
        queue(static_cast<int>(n), cmd);
      }
    } else if (const std::string* key = key_of(cmd);
               key != nullptr && !engine::iequals(name, "INFO")) {
      int owner = m_map.owner(engine::key_hash_slot(*key));
      plan.node = owner < 0 ? 0 : owner;  // an unserved slot: the node says CLUSTERDOWN
      queue(plan.node, cmd);
    } else {
      plan.kind = Plan::Kind::first_node;
      plan.node = 0;
      queue(0, cmd);
    }
  }
  for (size_t n = 0; n < out.size(); ++n) {
    if (out[n].empty()) {
      continue;
    }
    auto c = node(static_cast<int>(n));
    if (!c) {
      return Unexpected{c.error()};
    }
    if (auto sent = (*c)->send_raw(out[n]); !sent) {
      return sent;
    }
  }
  return true;
}

Expected<RespValue, std::string> ClusterSide::follow(const std::vector<std::string>& command,
                                                     RespValue reply) {
  for (int hop = 0; hop < k_max_redirects; ++hop) {
    if (!reply.is_error()) {
      return reply;
    }
    auto redirect = engine::parse_redirect(reply.str);
    if (!redirect) {
      return reply;
    }
    ++m_redirects;
    std::string host = redirect->host.empty() ? m_seed.host : redirect->host;
    int to = m_map.node_at(host, redirect->port);
    if (!redirect->ask) {
      m_map.set_owner(redirect->slot, to);
    }
    auto c = node(to);
    if (!c) {
      return Unexpected{c.error()};
    }
    if (redirect->ask) {
      auto replies = (*c)->pipeline({{"ASKING"}, command});
      if (!replies) {
        return Unexpected{replies.error()};
      }
      reply = std::move((*replies)[1]);
    } else {
      auto again = (*c)->call(command);
      if (!again) {
        return Unexpected{again.error()};
      }
      reply = std::move(*again);
    }
  }
  return Unexpected{fmt::format("{}: {} was redirected more than {} times", describe(),
                                command.empty() ? "" : command[0], k_max_redirects)};
}

Expected<std::vector<RespValue>, std::string> ClusterSide::collect() {
  // Each node answers its requests in the order they were queued: read them back the same
  // way the batch was split.
  size_t primaries = m_map.primaries().size();
  auto read_from = [this](int n) -> Expected<RespValue, std::string> {
    return m_nodes[static_cast<size_t>(n)]->read_reply();
  };
  std::vector<std::vector<size_t>> order(m_nodes.size());
  for (size_t i = 0; i < m_plans.size(); ++i) {
    Plan& plan = m_plans[i];
    switch (plan.kind) {
      case Plan::Kind::select:
        break;
      case Plan::Kind::dbsize:
      case Plan::Kind::info_keyspace:
        for (size_t n = 0; n < primaries; ++n) {
          order[n].push_back(i);
        }
        break;
      default:
        order[static_cast<size_t>(plan.node)].push_back(i);
    }
  }
  for (size_t n = 0; n < order.size(); ++n) {
    for (size_t i : order[n]) {
      auto reply = read_from(static_cast<int>(n));
      if (!reply) {
        return Unexpected{reply.error()};
      }
      m_plans[i].parts.push_back(std::move(*reply));
    }
  }
  std::vector<RespValue> replies;
  replies.reserve(m_plans.size());
  for (size_t i = 0; i < m_plans.size(); ++i) {
    Plan& plan = m_plans[i];
    switch (plan.kind) {
      case Plan::Kind::select:
        replies.push_back(std::move(plan.local));
        break;
      case Plan::Kind::dbsize: {
        RespValue sum;
        sum.type = RespValue::Type::integer;
        for (const RespValue& part : plan.parts) {
          if (part.is_error()) {
            return Unexpected{describe() + ": DBSIZE failed: " + part.str};
          }
          sum.integer += part.integer;
        }
        replies.push_back(std::move(sum));
        break;
      }
      case Plan::Kind::info_keyspace: {
        uint64_t keys = 0;
        uint64_t expires = 0;
        for (const RespValue& part : plan.parts) {
          if (part.is_error()) {
            return Unexpected{describe() + ": INFO keyspace failed: " + part.str};
          }
          add_keyspace(part.str, keys, expires);
        }
        std::string text = "# Keyspace\r\n";
        if (keys > 0) {
          text += fmt::format("db0:keys={},expires={},avg_ttl=0\r\n", keys, expires);
        }
        replies.push_back(simple(std::move(text), RespValue::Type::bulk));
        break;
      }
      case Plan::Kind::scan: {
        RespValue reply = std::move(plan.parts[0]);
        if (!reply.is_error() && reply.elements.size() == 2) {
          std::string& next = reply.elements[0].str;
          if (next != "0") {
            next = fmt::format("{}:{}", plan.node, next);
          } else if (static_cast<size_t>(plan.node) + 1 < primaries) {
            next = fmt::format("{}:0", plan.node + 1);
          }
        }
        replies.push_back(std::move(reply));
        break;
      }
      default: {
        auto reply = follow(m_batch[i], std::move(plan.parts[0]));
        if (!reply) {
          return Unexpected{reply.error()};
        }
        replies.push_back(std::move(*reply));
      }
    }
  }
  m_plans.clear();
  return replies;
}

}  // namespace keyshift::compat
