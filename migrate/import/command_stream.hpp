#pragma once

#include "engine/commands/registry.hpp"
#include "engine/engine.hpp"
#include "engine/util/expected.hpp"
#include "migrate/import/live_target.hpp"
#include "migrate/key_rules.hpp"

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

// A source's write commands applied to a target through the key rules: the command stream
// of a replication import, and later a RESP command file or an AOF. SELECT is followed and
// mapped with --db-map, each command's keys are found from the engine's command table key
// specs so --match/--exclude/--rename-prefix apply to them, MULTI/EXEC reaches the target
// as one transaction, and what cannot be applied faithfully is refused with a reason.
namespace keyshift::migrate {

/// "SET 'key' ..." for messages: the command and its first arguments, quoted.
std::string describe_command(std::span<const std::string_view> argv);

/// Where applied commands go.
class StreamWriter {
 public:
  virtual ~StreamWriter() = default;
  /// One command for target database `db`. `offset` is the source position reached once it
  /// is applied, 0 inside a transaction (the transaction's end carries it).
  virtual engine::Expected<bool, std::string> command(uint64_t db,
                                                      std::span<const std::string_view> argv,
                                                      uint64_t offset) = 0;
  /// The commands up to end_transaction() form one atomic unit.
  virtual engine::Expected<bool, std::string> begin_transaction() = 0;
  virtual engine::Expected<bool, std::string> end_transaction(uint64_t offset) = 0;
};

/// A StreamWriter into a live target that records, atomically with the writes, how far the
/// source's stream got (marker keys), so a rerun applies nothing twice.
class MarkedStreamWriter : public StreamWriter {
 public:
  /// Sends what is buffered, closing the open batch with its marker.
  virtual engine::Expected<bool, std::string> flush() = 0;
  /// Removes the markers (a clean stop: the checkpoint file is exact then).
  virtual engine::Expected<bool, std::string> clear_marker() = 0;
  /// What the markers name with the offset: the primary's replication ID.
  virtual void set_marker_id(std::string id) = 0;
};

/// Counts of what the applier did.
struct CommandStreamCounts {
  uint64_t applied = 0;       ///< commands sent to the target
  uint64_t filtered = 0;      ///< commands whose keys the rules leave out
  uint64_t renamed = 0;       ///< commands with a renamed key
  uint64_t transactions = 0;  ///< MULTI/EXEC units applied
  uint64_t skipped = 0;       ///< replication chatter and field-TTL commands dropped by policy
};

/// Applies one source's command stream.
class CommandStreamApplier {
 public:
  /// `registry` is the command table key positions come from; `writer` receives the result.
  CommandStreamApplier(const KeyRules& rules, const engine::CommandRegistry& registry,
                       StreamWriter& writer);

  /// Checks that the rules can be applied to a command stream at all (--type cannot: a
  /// command does not say its key's type); the reason when not.
  static std::optional<std::string> unsupported_rules(const KeyRules& rules);

  /// One source command; `offset` the source position after it. The error says which
  /// command could not be applied and why.
  engine::Expected<bool, std::string> apply(std::span<const std::string_view> argv,
                                            uint64_t offset);

  /// True inside MULTI (the commands wait for EXEC).
  bool in_transaction() const { return m_in_multi; }
  /// The source database the stream has selected.
  uint64_t source_db() const { return m_db; }
  const CommandStreamCounts& counts() const { return m_counts; }

 private:
  struct Queued {
    uint64_t db;
    std::vector<std::string> argv;
  };
  engine::Expected<bool, std::string> emit(uint64_t db, std::vector<std::string> argv,
                                           uint64_t offset);
  uint64_t target_db(uint64_t source_db) const;
  bool keyspace_rules() const;

  const KeyRules& m_rules;
  const engine::CommandRegistry& m_registry;
  StreamWriter& m_writer;
  uint64_t m_db = 0;
  bool m_in_multi = false;
  std::vector<Queued> m_queued;
  CommandStreamCounts m_counts;
  std::vector<std::string_view> m_views;
};

/// A StreamWriter into a live target, through its pipelined connection. Commands go in
/// batches, each one MULTI ... EXEC that also sets a marker key to the source offset it
/// reaches, so the target itself records, atomically with the writes, how far it got: a
/// rerun after kill -9 continues from there and applies nothing twice (no INCR counted
/// again, no list element pushed twice). A source transaction lands whole inside a batch.
/// Acknowledgements come back through the target's on_ack (PendingKey::command, position
/// the offset a batch's EXEC reaches; 0 for the rest).
class LiveStreamWriter final : public MarkedStreamWriter {
 public:
  static constexpr uint8_t k_command_kind = 255;
  /// The marker key (in database 0): "<replid> <offset>". A cluster source's sessions each
  /// keep their own, this name followed by ":" and the primary's node ID.
  static constexpr std::string_view k_marker_key = "__keyshift_import_offset__";

  /// `marker_id` is what the marker names with the offset (the primary's replication ID);
  /// `marker_key` the key that holds it.
  LiveStreamWriter(LiveTarget& target, std::string marker_id,
                   std::string marker_key = std::string(k_marker_key))
      : m_target(target), m_marker_id(std::move(marker_id)), m_marker_key(std::move(marker_key)) {}
  engine::Expected<bool, std::string> command(uint64_t db, std::span<const std::string_view> argv,
                                              uint64_t offset) override;
  engine::Expected<bool, std::string> begin_transaction() override;
  engine::Expected<bool, std::string> end_transaction(uint64_t offset) override;
  /// Ends the open batch (EXEC with the marker); nothing when none is open.
  engine::Expected<bool, std::string> flush() override;
  engine::Expected<bool, std::string> clear_marker() override;
  void set_marker_id(std::string id) override { m_marker_id = std::move(id); }

  /// Reads the marker `key` of `endpoint`: the ID and offset, or nothing.
  static std::optional<std::pair<std::string, uint64_t>> read_marker(
      const engine::RespEndpoint& endpoint, std::string_view key = k_marker_key);
  /// True for `key` when it is a marker (of any session).
  static bool is_marker(std::string_view key);

 private:
  engine::Expected<bool, std::string> open_batch();

  LiveTarget& m_target;
  std::string m_marker_id;
  std::string m_marker_key;
  bool m_in_batch = false;
  uint64_t m_batch_commands = 0;
  uint64_t m_batch_offset = 0;
};

/// A StreamWriter into an in-process engine, through one session as Valkey's primary
/// client applies its stream: replies dropped, an error reply is an error.
class EngineStreamWriter final : public StreamWriter {
 public:
  explicit EngineStreamWriter(engine::Engine& engine);
  ~EngineStreamWriter() override;
  EngineStreamWriter(const EngineStreamWriter&) = delete;
  EngineStreamWriter& operator=(const EngineStreamWriter&) = delete;
  engine::Expected<bool, std::string> command(uint64_t db, std::span<const std::string_view> argv,
                                              uint64_t offset) override;
  engine::Expected<bool, std::string> begin_transaction() override;
  engine::Expected<bool, std::string> end_transaction(uint64_t offset) override;

 private:
  engine::Expected<bool, std::string> run(std::span<const std::string_view> argv);
  engine::Engine& m_engine;
  engine::Session& m_session;
  std::optional<uint64_t> m_db;
};

}  // namespace keyshift::migrate
