#include "engine/resp/cluster_map.hpp"

#include "engine/util/split_args.hpp"

#include <charconv>

namespace keyshift::engine {
namespace {

bool to_int(std::string_view text, int64_t& out) {
  auto r = std::from_chars(text.data(), text.data() + text.size(), out);
  return r.ec == std::errc() && r.ptr == text.data() + text.size();
}

/// A RESP2 flat array or a RESP3 map: the value under `name`, or nullptr.
const RespValue* member(const RespValue& object, std::string_view name) {
  for (size_t i = 0; i + 1 < object.elements.size(); i += 2) {
    if (object.elements[i].str == name) {
      return &object.elements[i + 1];
    }
  }
  return nullptr;
}

std::string_view known_host(std::string_view host, std::string_view seed_host) {
  return host.empty() || host == "?" ? seed_host : host;
}

bool valid_slot(int64_t slot) {
  return slot >= 0 && slot < k_cluster_slots;
}

/// "host:port" with the host possibly a bracketed or bare IPv6 address: split at the last ':'.
bool split_host_port(std::string_view address, std::string_view& host, int& port) {
  size_t colon = address.rfind(':');
  if (colon == std::string_view::npos) {
    return false;
  }
  int64_t p = 0;
  if (!to_int(address.substr(colon + 1), p) || p < 0 || p > 65535) {
    return false;
  }
  host = address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  port = static_cast<int>(p);
  return true;
}

}  // namespace

std::string ClusterNode::address() const {
  std::string h = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  return h + ":" + std::to_string(port);
}

ClusterMap::ClusterMap() {
  m_owner.fill(-1);
}

int ClusterMap::node_at(std::string_view host, int port, std::string_view id) {
  for (size_t i = 0; i < m_nodes.size(); ++i) {
    if (m_nodes[i].host == host && m_nodes[i].port == port) {
      if (m_nodes[i].id.empty()) {
        m_nodes[i].id = std::string(id);
      }
      return static_cast<int>(i);
    }
  }
  m_nodes.push_back(ClusterNode{std::string(id), std::string(host), port});
  return static_cast<int>(m_nodes.size() - 1);
}

uint32_t ClusterMap::uncovered() const {
  uint32_t n = 0;
  for (int16_t o : m_owner) {
    n += o < 0 ? 1 : 0;
  }
  return n;
}

Expected<ClusterMap, std::string> parse_cluster_shards(const RespValue& reply,
                                                       std::string_view seed_host) {
  if (reply.type != RespValue::Type::array) {
    return Unexpected{std::string("CLUSTER SHARDS: the reply is not an array")};
  }
  ClusterMap map;
  for (const RespValue& shard : reply.elements) {
    const RespValue* slots = member(shard, "slots");
    const RespValue* nodes = member(shard, "nodes");
    if (slots == nullptr || nodes == nullptr || slots->elements.size() % 2 != 0) {
      return Unexpected{std::string("CLUSTER SHARDS: a shard without slots or nodes")};
    }
    if (slots->elements.empty()) {
      continue;
    }
    const RespValue* primary = nullptr;
    for (const RespValue& node : nodes->elements) {
      const RespValue* role = member(node, "role");
      if (role != nullptr && (role->str == "master" || role->str == "primary")) {
        primary = &node;
        break;
      }
    }
    if (primary == nullptr) {
      return Unexpected{std::string("CLUSTER SHARDS: a shard serving slots has no primary")};
    }
    const RespValue* endpoint = member(*primary, "endpoint");
    const RespValue* ip = member(*primary, "ip");
    const RespValue* port = member(*primary, "port");
    const RespValue* id = member(*primary, "id");
    if (port == nullptr || (endpoint == nullptr && ip == nullptr)) {
      return Unexpected{std::string("CLUSTER SHARDS: a primary without an address or port")};
    }
    std::string_view host = endpoint != nullptr ? std::string_view(endpoint->str) : "";
    if ((host.empty() || host == "?") && ip != nullptr) {
      host = ip->str;
    }
    int index = map.node_at(known_host(host, seed_host), static_cast<int>(port->integer),
                            id != nullptr ? std::string_view(id->str) : "");
    for (size_t i = 0; i < slots->elements.size(); i += 2) {
      int64_t from = slots->elements[i].integer;
      int64_t to = slots->elements[i + 1].integer;
      if (!valid_slot(from) || !valid_slot(to) || from > to) {
        return Unexpected{std::string("CLUSTER SHARDS: a slot range out of bounds")};
      }
      for (int64_t s = from; s <= to; ++s) {
        map.set_owner(static_cast<uint16_t>(s), index);
      }
    }
  }
  return map;
}

Expected<ClusterMap, std::string> parse_cluster_slots(const RespValue& reply,
                                                      std::string_view seed_host) {
  if (reply.type != RespValue::Type::array) {
    return Unexpected{std::string("CLUSTER SLOTS: the reply is not an array")};
  }
  ClusterMap map;
  for (const RespValue& range : reply.elements) {
    if (range.elements.size() < 3 || range.elements[2].elements.size() < 2) {
      return Unexpected{std::string("CLUSTER SLOTS: a range without a primary")};
    }
    int64_t from = range.elements[0].integer;
    int64_t to = range.elements[1].integer;
    const RespValue& primary = range.elements[2];
    if (!valid_slot(from) || !valid_slot(to) || from > to) {
      return Unexpected{std::string("CLUSTER SLOTS: a slot range out of bounds")};
    }
    std::string_view id = primary.elements.size() > 2 ? std::string_view(primary.elements[2].str)
                                                      : std::string_view();
    int index = map.node_at(known_host(primary.elements[0].str, seed_host),
                            static_cast<int>(primary.elements[1].integer), id);
    for (int64_t s = from; s <= to; ++s) {
      map.set_owner(static_cast<uint16_t>(s), index);
    }
  }
  return map;
}

Expected<ClusterMap, std::string> parse_cluster_nodes(std::string_view text,
                                                      std::string_view seed_host) {
  ClusterMap map;
  size_t at = 0;
  int line_no = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    std::string_view line = text.substr(at, end == std::string_view::npos ? end : end - at);
    at = end == std::string_view::npos ? text.size() : end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') {
      line.remove_suffix(1);
    }
    if (line.empty()) {
      continue;
    }
    std::vector<std::string_view> fields;
    size_t pos = 0;
    while (pos <= line.size()) {
      size_t space = line.find(' ', pos);
      if (space == std::string_view::npos) {
        space = line.size();
      }
      if (space > pos) {
        fields.push_back(line.substr(pos, space - pos));
      }
      pos = space + 1;
    }
    if (fields.size() < 8) {
      return Unexpected{"CLUSTER NODES: line " + std::to_string(line_no) + " has too few fields"};
    }
    std::string_view flags = fields[2];
    if (flags.find("master") == std::string_view::npos || fields.size() == 8) {
      continue;
    }
    // "ip:port@cport[,hostname]"
    std::string_view address = fields[1].substr(0, fields[1].find_first_of("@,"));
    std::string_view host;
    int port = 0;
    if (!split_host_port(address, host, port)) {
      return Unexpected{"CLUSTER NODES: line " + std::to_string(line_no) + ": bad address " +
                        quote_repr(fields[1])};
    }
    int index = map.node_at(known_host(host, seed_host), port, fields[0]);
    for (size_t i = 8; i < fields.size(); ++i) {
      std::string_view slot = fields[i];
      if (slot.starts_with('[')) {
        continue;  // a slot being migrated or imported: still served where it was
      }
      size_t dash = slot.find('-');
      int64_t from = 0;
      int64_t to = 0;
      bool ok = dash == std::string_view::npos
                    ? to_int(slot, from)
                    : to_int(slot.substr(0, dash), from) && to_int(slot.substr(dash + 1), to);
      if (dash == std::string_view::npos) {
        to = from;
      }
      if (!ok || !valid_slot(from) || !valid_slot(to) || from > to) {
        return Unexpected{"CLUSTER NODES: line " + std::to_string(line_no) + ": bad slot " +
                          quote_repr(slot)};
      }
      for (int64_t s = from; s <= to; ++s) {
        map.set_owner(static_cast<uint16_t>(s), index);
      }
    }
  }
  return map;
}

Expected<ClusterMap, std::string> read_cluster_map(RespConnection& node) {
  std::string seed = node.endpoint().unix_path.empty() ? node.endpoint().host : "127.0.0.1";
  std::string where = node.endpoint().describe();
  auto shards = node.call({"CLUSTER", "SHARDS"});
  if (!shards) {
    return Unexpected{shards.error()};
  }
  if (!shards->is_error()) {
    auto map = parse_cluster_shards(*shards, seed);
    if (!map) {
      return Unexpected{where + ": " + map.error()};
    }
    return map;
  }
  auto slots = node.call({"CLUSTER", "SLOTS"});
  if (!slots) {
    return Unexpected{slots.error()};
  }
  if (!slots->is_error()) {
    auto map = parse_cluster_slots(*slots, seed);
    if (!map) {
      return Unexpected{where + ": " + map.error()};
    }
    return map;
  }
  auto nodes = node.call({"CLUSTER", "NODES"});
  if (!nodes) {
    return Unexpected{nodes.error()};
  }
  if (nodes->is_error()) {
    return Unexpected{where + ": CLUSTER NODES failed: " + nodes->str};
  }
  auto map = parse_cluster_nodes(nodes->str, seed);
  if (!map) {
    return Unexpected{where + ": " + map.error()};
  }
  return map;
}

Expected<bool, std::string> is_cluster_node(RespConnection& node) {
  auto info = node.call({"INFO", "cluster"});
  if (!info) {
    return Unexpected{info.error()};
  }
  if (info->is_error()) {
    return false;  // a server without the section knows no clusters
  }
  return info->str.find("cluster_enabled:1") != std::string::npos;
}

std::optional<ClusterRedirect> parse_redirect(std::string_view error_text) {
  ClusterRedirect r;
  std::string_view rest;
  if (error_text.starts_with("MOVED ")) {
    rest = error_text.substr(6);
  } else if (error_text.starts_with("ASK ")) {
    rest = error_text.substr(4);
    r.ask = true;
  } else {
    return std::nullopt;
  }
  size_t space = rest.find(' ');
  int64_t slot = 0;
  if (space == std::string_view::npos || !to_int(rest.substr(0, space), slot) ||
      !valid_slot(slot)) {
    return std::nullopt;
  }
  std::string_view host;
  if (!split_host_port(rest.substr(space + 1), host, r.port)) {
    return std::nullopt;
  }
  r.slot = static_cast<uint16_t>(slot);
  r.host = std::string(host);
  return r;
}

bool is_retry_later(std::string_view error_text) {
  return error_text.starts_with("TRYAGAIN") || error_text.starts_with("CLUSTERDOWN");
}

Expected<std::optional<uint16_t>, std::string> common_slot(std::span<const std::string_view> keys) {
  std::optional<uint16_t> slot;
  std::string_view first;
  for (std::string_view key : keys) {
    uint16_t s = key_hash_slot(key);
    if (!slot) {
      slot = s;
      first = key;
    } else if (*slot != s) {
      return Unexpected{"keys in different slots: " + quote_repr(first) + " (slot " +
                        std::to_string(*slot) + ") and " + quote_repr(key) + " (slot " +
                        std::to_string(s) + ")"};
    }
  }
  return slot;
}

RespEndpoint node_endpoint(const RespEndpoint& seed, const ClusterNode& node) {
  RespEndpoint ep = seed;
  ep.unix_path.clear();
  ep.host = node.host;
  ep.port = node.port;
  ep.db = 0;
  return ep;
}

}  // namespace keyshift::engine
