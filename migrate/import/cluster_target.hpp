#pragma once

#include "engine/resp/cluster_map.hpp"
#include "engine/resp/pipelined_connection.hpp"
#include "migrate/import/live_target.hpp"

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

// `keyshift import --to redis://seed:7000 --cluster`: RESTOREs routed by slot over one
// pipelined connection per primary. Redirects are followed (MOVED: the slot changes owner,
// the map is read again, the key is resent; ASK: ASKING then the key, once, to the named
// node), TRYAGAIN and CLUSTERDOWN are backed off and retried a bounded number of times, and
// the keys of one slot reach the cluster in the order they were sent. Acknowledgements are
// handed back in send order across all nodes: the checkpoint position is that of the
// oldest key still unanswered anywhere.
namespace keyshift::migrate {

class ClusterTarget final : public RestoreTarget {
 public:
  /// Reads the map from `seed` (CLUSTER SHARDS, SLOTS or NODES), connects to every primary
  /// and identifies the server by INFO server. `window` requests in flight per primary.
  static engine::Expected<std::unique_ptr<ClusterTarget>, std::string> open(
      const engine::RespEndpoint& seed, uint32_t window);
  ~ClusterTarget() override;

  const TargetServer& server() const override { return m_server; }
  std::string describe() const override;
  engine::Expected<bool, std::string> restore(PendingKey pending, int64_t expire_ms,
                                              std::string_view payload, bool replace,
                                              int64_t idle_s, int freq) override;
  engine::Expected<bool, std::string> drain() override;
  engine::Expected<std::vector<std::string>, std::string> existing(
      uint64_t db, const std::vector<std::string>& keys) override;
  std::optional<uint64_t> only_db() const override { return 0; }
  const ClusterWriteStats* cluster_stats() const override;
  /// Queues one command of a key written as commands on the owner of the key's slot (the
  /// temporary key shares it), in order with every other write of that slot; redirects and
  /// retries as for RESTORE.
  engine::Expected<bool, std::string> send_part(uint64_t db, std::string_view key,
                                                std::span<const std::string_view> args) override;
  /// Queues the rename (and the cleanup) that completes such a key; its reply acknowledges
  /// `pending` as LiveTarget's does.
  engine::Expected<bool, std::string> send_last(
      PendingKey pending, std::span<const std::string_view> args,
      std::span<const std::string_view> cleanup = {}) override;
  /// Waits for every queued write, then runs `argv` on every primary in turn; acknowledges
  /// `pending` once all have answered. An error reply from any is an error.
  engine::Expected<bool, std::string> command_everywhere(
      PendingKey pending, std::span<const std::string_view> argv) override;

  /// Queues `commands` as one transaction on the owner of `slot`: MULTI, the commands,
  /// EXEC (after ASKING when an ASK redirect names a node importing the slot). A redirect,
  /// TRYAGAIN or CLUSTERDOWN, which abort the transaction, sends it whole again; its EXEC
  /// acknowledges `pending`, in send order with every other write.
  engine::Expected<bool, std::string> transaction(PendingKey pending, uint16_t slot,
                                                  std::vector<std::vector<std::string>> commands);
  /// How to reach each primary of the map (index order).
  std::vector<engine::RespEndpoint> primary_endpoints() const;

  /// The map as last read or corrected.
  const engine::ClusterMap& map() const { return m_map; }

 private:
  struct Node;
  struct Entry;
  struct Retry;

  ClusterTarget(engine::RespEndpoint seed, uint32_t window);
  engine::Expected<Node*, std::string> node(int index);
  engine::Expected<int, std::string> route(uint16_t slot);
  engine::Expected<bool, std::string> refresh_map(const engine::RespEndpoint& from);
  /// Whether a key of `slot` may go to node `index` now without passing an older key of
  /// its slot still in flight elsewhere.
  bool slot_free_for(uint16_t slot, int index) const;
  engine::Expected<bool, std::string> send_entry(uint64_t seq, int index, bool asking);
  engine::Expected<bool, std::string> send_retries();
  engine::Expected<bool, std::string> take_reply(int index, const engine::ReplyView& reply);
  /// An error a write met: redirected, retried later, or the import's end.
  engine::Expected<bool, std::string> refused(uint64_t seq, const std::string& text,
                                              const engine::RespEndpoint& from);
  /// Queues entry `e` (built by the caller) and sends it when its slot's turn comes.
  engine::Expected<bool, std::string> enqueue(Entry e);
  /// Queues a part or last entry with its command (and cleanup).
  engine::Expected<bool, std::string> enqueue_commands(Entry e,
                                                       std::span<const std::string_view> args,
                                                       std::span<const std::string_view> cleanup);
  /// A reply to a part or last entry; the last of an attempt's replies decides it.
  engine::Expected<bool, std::string> take_command_reply(int index, uint64_t seq,
                                                         const engine::ReplyView& reply);
  /// One round: retries due, flushes, replies taken, acks delivered; waits up to `wait`
  /// for a socket when nothing moved.
  engine::Expected<bool, std::string> pump(std::chrono::milliseconds wait);
  void deliver_acks();
  Entry& entry(uint64_t seq);

  engine::RespEndpoint m_seed;
  uint32_t m_window;
  engine::ClusterMap m_map;
  TargetServer m_server;
  std::vector<std::unique_ptr<Node>> m_nodes;  // by map node index; null until connected
  std::deque<Entry> m_entries;                 // every key not yet acknowledged to the caller
  uint64_t m_first_seq = 0;
  std::deque<Retry> m_retries;
  std::vector<uint32_t> m_slot_in_flight;  // keys of each slot sent and unanswered
  std::vector<int16_t> m_slot_node;        // where those keys are
  std::vector<uint32_t> m_slot_retrying;   // keys of each slot waiting in m_retries
  std::optional<engine::RespEndpoint> m_refresh_from;
  ClusterWriteStats m_stats;
  mutable ClusterWriteStats m_stats_view;
  std::vector<uint64_t> m_node_keys;
  std::vector<std::string_view> m_args;
};

}  // namespace keyshift::migrate
