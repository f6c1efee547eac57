#pragma once

#include "compat/verify/side.hpp"
#include "engine/resp/cluster_map.hpp"
#include "engine/resp/connection.hpp"

#include <memory>
#include <string>
#include <vector>

namespace keyshift::compat {

/// A cluster as one verify side: keys are listed primary by primary (the side's SCAN
/// cursor is "NODE:CURSOR", NODE indexing the primaries of CLUSTER SHARDS / SLOTS / NODES),
/// every command about a key goes to the primary owning its slot, and MOVED and ASK
/// replies are followed. INFO keyspace and DBSIZE add up every primary; SELECT takes only
/// database 0, as a cluster does.
class ClusterSide final : public VerifySide {
 public:
  /// Reads the map from `seed` and connects to every primary.
  static engine::Expected<std::unique_ptr<ClusterSide>, std::string> connect(
      const engine::RespEndpoint& seed);
  ~ClusterSide() override;
  std::string describe() const override;
  engine::Expected<bool, std::string> submit(const CommandBatch& batch) override;
  engine::Expected<std::vector<engine::RespValue>, std::string> collect() override;
  /// MOVED and ASK replies followed so far.
  uint64_t redirects() const { return m_redirects; }

 private:
  /// How one command of a batch is answered.
  struct Plan {
    enum class Kind : uint8_t { routed, scan, select, info_keyspace, dbsize, first_node };
    Kind kind = Kind::routed;
    int node = 0;                          // routed, scan, first_node
    std::vector<engine::RespValue> parts;  // replies gathered for this command
    engine::RespValue local;               // select: the answer made here
  };
  explicit ClusterSide(engine::RespEndpoint seed) : m_seed(std::move(seed)) {}
  engine::Expected<engine::RespConnection*, std::string> node(int index);
  engine::Expected<engine::RespValue, std::string> follow(const std::vector<std::string>& command,
                                                          engine::RespValue reply);

  engine::RespEndpoint m_seed;
  engine::ClusterMap m_map;
  std::vector<std::unique_ptr<engine::RespConnection>> m_nodes;
  CommandBatch m_batch;
  std::vector<Plan> m_plans;
  uint64_t m_redirects = 0;
};

}  // namespace keyshift::compat
