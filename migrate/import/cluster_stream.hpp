#pragma once

#include "engine/commands/registry.hpp"
#include "engine/util/expected.hpp"
#include "migrate/import/cluster_target.hpp"
#include "migrate/import/command_stream.hpp"

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

// A replication import's command stream into a cluster target. A cluster runs a transaction
// only when all its keys are in one slot, so the stream is cut by slot: each slot's commands
// go as MULTI ... EXEC with a marker key of that slot (its name carries a hash tag of the
// slot) set to "<replid> <offset>", atomically with them. A rerun after kill -9 reads every
// slot's marker and skips the commands of that slot the target already holds, so nothing is
// applied twice even though the checkpoint file lags behind. Commands over keys of several
// slots are split where that keeps their meaning (MSET, DEL, UNLINK, TOUCH) and refused
// otherwise; a source transaction over several slots is split into one per slot and counted.
namespace keyshift::migrate {

/// What the writer did that the report shows.
struct ClusterStreamCounts {
  uint64_t transactions_split = 0;  ///< source MULTI/EXEC spread over several slots
  uint64_t commands_split = 0;      ///< MSET/DEL/UNLINK/TOUCH over several slots, split
  uint64_t skipped_applied = 0;     ///< commands a slot's marker says the target holds
  uint64_t broadcast = 0;           ///< keyless commands run on every primary
};

class ClusterStreamWriter final : public MarkedStreamWriter {
 public:
  /// `marker_key` is the session's marker name; each slot's marker is that name followed by
  /// ":{TAG}", TAG a hash tag of the slot.
  ClusterStreamWriter(ClusterTarget& target, const engine::CommandRegistry& registry,
                      std::string marker_id, std::string marker_key);

  engine::Expected<bool, std::string> command(uint64_t db, std::span<const std::string_view> argv,
                                              uint64_t offset) override;
  engine::Expected<bool, std::string> begin_transaction() override;
  engine::Expected<bool, std::string> end_transaction(uint64_t offset) override;
  engine::Expected<bool, std::string> flush() override;
  engine::Expected<bool, std::string> clear_marker() override;
  void set_marker_id(std::string id) override { m_marker_id = std::move(id); }

  /// Reads the markers of this session on every primary: those of stream `replid` say,
  /// per slot, up to which offset the target already holds the commands; the others are
  /// left from an earlier stream and are removed at the clean stop.
  engine::Expected<bool, std::string> load_markers(const std::string& replid);

  /// The marker key of `slot` for this session.
  std::string marker_of(uint16_t slot) const;
  const ClusterStreamCounts& counts() const { return m_counts; }

 private:
  /// One command bound for one slot.
  struct Routed {
    uint16_t slot = 0;
    std::vector<std::string> argv;
  };
  /// Splits `argv` by slot: one entry for a single-slot command, several for a split one,
  /// none for a keyless one; an error for a command a cluster cannot run.
  engine::Expected<std::vector<Routed>, std::string> route(std::span<const std::string_view> argv,
                                                           uint64_t offset);
  /// Adds `commands` (one slot's share of a source command or transaction at `offset`).
  void add(uint16_t slot, std::vector<std::vector<std::string>> commands, uint64_t offset);
  engine::Expected<bool, std::string> keyless(std::span<const std::string_view> argv,
                                              uint64_t offset);
  bool already_applied(uint16_t slot, uint64_t offset) const;

  struct Batch {
    std::vector<std::vector<std::string>> commands;
    uint64_t offset = 0;
  };

  ClusterTarget& m_target;
  const engine::CommandRegistry& m_registry;
  std::string m_marker_id;
  std::string m_marker_key;
  std::vector<std::string> m_tags;  // by slot: a hash tag whose key lands in it
  std::unordered_map<uint16_t, Batch> m_open;
  std::vector<uint16_t> m_open_order;
  size_t m_buffered = 0;
  uint64_t m_last_offset = 0;
  std::vector<uint64_t> m_applied;  // by slot: what the markers of this stream say
  std::vector<bool> m_marked;       // by slot: a marker of this session exists
  bool m_in_transaction = false;
  std::vector<std::vector<std::string>> m_transaction;
  ClusterStreamCounts m_counts;
};

}  // namespace keyshift::migrate
