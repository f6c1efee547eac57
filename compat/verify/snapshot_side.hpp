#pragma once

#include "compat/verify/side.hpp"
#include "engine/resp/connection.hpp"
#include "engine/util/clock.hpp"
#include "engine/util/expected.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

// `verify data --snapshot`: a live server compared through a snapshot of its dataset, taken
// as a replica takes one (PSYNC ? -1, the full sync's RDB streamed into an engine in this
// process, nothing spooled to disk). Round 1 then compares two engines in-process, where a
// key costs the servers nothing; every command (INFO, the later rounds' re-checks of keys
// that differed) still goes to the live server, so a key written between the two snapshots
// is re-read from the servers themselves and reported as changed, not as a difference.
namespace keyshift::engine {
class Engine;
}  // namespace keyshift::engine

namespace keyshift::compat {

/// How far a snapshot is: payload bytes read and, when the primary said, expected.
struct SnapshotProgress {
  uint64_t bytes = 0;
  std::optional<uint64_t> total;
  uint64_t keys = 0;
};

/// A live server plus the snapshot of its dataset.
class SnapshotSide final : public VerifySide {
 public:
  /// Connects to `endpoint` twice: once as a client for commands, once as a replica that
  /// reads one full sync and then hangs up. `progress` (may be empty) is called as the
  /// payload arrives. A server that refuses replication (SYNC forbidden, a cluster's
  /// replica rules) fails with the server's words.
  static engine::Expected<std::unique_ptr<SnapshotSide>, std::string> take(
      const engine::RespEndpoint& endpoint,
      const std::function<void(const SnapshotProgress&)>& progress = {});
  ~SnapshotSide() override;

  std::string describe() const override { return m_live->describe(); }
  std::optional<int> url_db() const override { return m_live->url_db(); }
  engine::Expected<bool, std::string> submit(const CommandBatch& batch) override {
    return m_live->submit(batch);
  }
  engine::Expected<std::vector<engine::RespValue>, std::string> collect() override {
    return m_live->collect();
  }
  engine::Engine* dataset() override { return m_engine.get(); }
  /// Pins the live side to `db` (its URL named one).
  void pin_db(int db) { m_live->pin_db(db); }
  /// Keys the snapshot holds and the payload's size.
  uint64_t keys() const { return m_keys; }
  uint64_t payload_bytes() const { return m_bytes; }

 private:
  SnapshotSide() = default;
  engine::SystemClock m_clock;
  std::unique_ptr<ServerSide> m_live;
  std::unique_ptr<engine::Engine> m_engine;
  uint64_t m_keys = 0;
  uint64_t m_bytes = 0;
};

}  // namespace keyshift::compat
