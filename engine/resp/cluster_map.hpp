#pragma once

#include "engine/resp/connection.hpp"
#include "engine/resp/resp_value.hpp"
#include "engine/util/cluster_slot.hpp"
#include "engine/util/expected.hpp"

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

// A cluster as a client sees it: which primary serves each slot, read from a node with
// CLUSTER SHARDS (Redis 7.0+, Valkey), CLUSTER SLOTS or CLUSTER NODES, and the redirects
// (MOVED, ASK) that correct it. Import's cluster target and source and verify's cluster
// side share it.
namespace keyshift::engine {

/// One primary of a cluster.
struct ClusterNode {
  std::string id;  ///< node ID; empty when the map's source did not name it
  std::string host;
  int port = 0;
  /// "host:port", for messages and checkpoints.
  std::string address() const;
};

/// The slot table: slot -> index into primaries(), or -1 while no node serves it.
class ClusterMap {
 public:
  ClusterMap();
  /// The primaries serving at least one slot, in the order first seen.
  const std::vector<ClusterNode>& primaries() const { return m_nodes; }
  /// The primary serving `slot`, or -1.
  int owner(uint16_t slot) const { return m_owner[slot]; }
  /// Index of the node at `host`:`port`, added when new.
  int node_at(std::string_view host, int port, std::string_view id = {});
  /// Gives `slot` to node `node`.
  void set_owner(uint16_t slot, int node) { m_owner[slot] = static_cast<int16_t>(node); }
  /// Slots no node serves.
  uint32_t uncovered() const;

 private:
  std::vector<ClusterNode> m_nodes;
  std::array<int16_t, k_cluster_slots> m_owner;
};

/// The map in a CLUSTER SHARDS reply (RESP2 or RESP3). `seed_host` stands in for a node
/// whose address is unknown ("" or "?").
Expected<ClusterMap, std::string> parse_cluster_shards(const RespValue& reply,
                                                       std::string_view seed_host);
/// The map in a CLUSTER SLOTS reply.
Expected<ClusterMap, std::string> parse_cluster_slots(const RespValue& reply,
                                                      std::string_view seed_host);
/// The map in CLUSTER NODES text (migrating/importing markers are ignored).
Expected<ClusterMap, std::string> parse_cluster_nodes(std::string_view text,
                                                      std::string_view seed_host);

/// Asks `node` for the map: CLUSTER SHARDS, falling back to CLUSTER SLOTS, then CLUSTER
/// NODES, on servers that do not know the newer command. The error names the node.
Expected<ClusterMap, std::string> read_cluster_map(RespConnection& node);

/// True when INFO cluster says cluster_enabled:1.
Expected<bool, std::string> is_cluster_node(RespConnection& node);

/// A MOVED or ASK error: where the slot is (MOVED) or where to ask once (ASK).
struct ClusterRedirect {
  bool ask = false;
  uint16_t slot = 0;
  std::string host;  ///< empty when the error gave only ":port" (the same host)
  int port = 0;
};

/// Reads "MOVED 3999 127.0.0.1:6381" / "ASK 3999 127.0.0.1:6381" (an error's text without
/// '-'); nothing for any other error.
std::optional<ClusterRedirect> parse_redirect(std::string_view error_text);

/// True for the errors that mean "try again later": TRYAGAIN, CLUSTERDOWN.
bool is_retry_later(std::string_view error_text);

/// The one slot all `keys` hash to, or an error naming two keys in different slots (a
/// transaction or multi-key command a cluster would refuse with CROSSSLOT). No keys: slot
/// nothing.
Expected<std::optional<uint16_t>, std::string> common_slot(std::span<const std::string_view> keys);

/// `seed` (credentials, protocol) pointed at `node`, database 0.
RespEndpoint node_endpoint(const RespEndpoint& seed, const ClusterNode& node);

}  // namespace keyshift::engine
