#include "compat/verify/snapshot_side.hpp"

#include "engine/engine.hpp"
#include "engine/persistence/rdb_load.hpp"
#include "engine/persistence/rdb_reader.hpp"
#include "engine/repl/replica_client.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <span>
#include <string_view>
#include <utility>

namespace keyshift::compat {
namespace {

using engine::Expected;
using engine::Unexpected;

/// Databases the snapshot's engine gets: enough for any server's payload.
constexpr int k_snapshot_databases = 16;
/// The most keys a RESIZEDB hint of a payload of unknown size (diskless, EOF-framed) sizes
/// a table for.
constexpr uint64_t k_max_hint = uint64_t{1} << 22;

/// The full sync's payload into the snapshot's engine. Keys already expired are left out:
/// the live server answers for them as absent, and so must the snapshot.
class PayloadLoader final : public engine::ReplStreamHandler, public engine::RdbVisitor {
 public:
  PayloadLoader(engine::Engine& engine,
                const std::function<void(const SnapshotProgress&)>& progress)
      : m_engine(engine), m_progress(progress) {}

  bool on_payload_begin(std::optional<uint64_t> size) override {
    m_state.total = size;
    engine::RdbReadOptions read;
    read.skip_modules = true;  // a module value has no engine type; verify cannot read it
    // Listpacks and intsets are adopted as the validated blocks they are, as a file loads:
    // expanded into items, each small hash, set and sorted set was rebuilt member by member
    // with a search of the listpack per member.
    read.keep_blocks = true;
    m_reader = std::make_unique<engine::RdbStreamReader>(*this, read);
    return true;
  }
  bool on_payload(std::string_view bytes) override {
    m_state.bytes += bytes.size();
    auto fed = m_reader->feed(bytes);
    if (!fed) {
      return fail(fmt::format("the full sync's RDB: {} (at byte {})", fed.error().message,
                              fed.error().offset));
    }
    if (m_progress) {
      m_progress(m_state);
    }
    return m_error.empty();
  }
  bool on_payload_end() override {
    auto summary = m_reader->finish();
    if (!summary) {
      return fail(fmt::format("the full sync's RDB: {} (at byte {})", summary.error().message,
                              summary.error().offset));
    }
    m_done = m_error.empty();
    return m_done;
  }
  void on_select_db(uint64_t db) override { m_db = db; }
  void on_resize_db(uint64_t keys, uint64_t) override {
    // Sized up front, the table is never rehashed while the payload streams in. A hint is
    // believed only as far as the payload could hold keys.
    if (m_db < static_cast<uint64_t>(m_engine.db_count())) {
      m_engine.db(static_cast<int>(m_db))
          .reserve(std::min(keys, m_state.total.value_or(k_max_hint)));
    }
  }
  bool on_command(std::span<const std::string_view>, uint64_t) override {
    return false;  // the snapshot ends with its payload
  }

  bool on_key(engine::RdbKey& k) override {
    if (k.db >= static_cast<uint64_t>(m_engine.db_count())) {
      return fail(fmt::format("the full sync's RDB: database {} is out of range", k.db));
    }
    int64_t now = m_engine.clock().now_ms();
    if (k.expire_ms >= 0 && k.expire_ms <= now) {
      return true;
    }
    auto spec = engine::build_engine_value(m_engine, std::move(k.value), now);
    if (!spec) {
      return true;  // a hash whose fields all expired: absent on the live server too
    }
    engine::Db& db = m_engine.db(static_cast<int>(k.db));
    if (db.exists(k.key)) {
      db.remove(k.key);
    }
    db.add(k.key, *spec, k.expire_ms);
    ++m_state.keys;
    return true;
  }

  bool done() const { return m_done; }
  const std::string& error() const { return m_error; }
  const SnapshotProgress& state() const { return m_state; }

 private:
  bool fail(std::string why) {
    if (m_error.empty()) {
      m_error = std::move(why);
    }
    return false;
  }

  engine::Engine& m_engine;
  const std::function<void(const SnapshotProgress&)>& m_progress;
  std::unique_ptr<engine::RdbStreamReader> m_reader;
  SnapshotProgress m_state;
  uint64_t m_db = 0;
  std::string m_error;
  bool m_done = false;
};

}  // namespace

SnapshotSide::~SnapshotSide() = default;

Expected<std::unique_ptr<SnapshotSide>, std::string> SnapshotSide::take(
    const engine::RespEndpoint& endpoint,
    const std::function<void(const SnapshotProgress&)>& progress) {
  std::unique_ptr<SnapshotSide> side(new SnapshotSide());
  auto live = ServerSide::connect(endpoint);
  if (!live) {
    return Unexpected{live.error()};
  }
  side->m_live = std::move(*live);
  engine::EngineConfig config;
  config.databases = k_snapshot_databases;
  // verify's comparison reads the snapshot in-process; DEBUG stays available to it.
  config.enable_debug_command = engine::EnableMode::yes;
  side->m_engine = std::make_unique<engine::Engine>(config, side->m_clock);

  auto client = engine::ReplicaClient::connect(endpoint, side->m_clock);
  std::string where = endpoint.describe();
  if (!client) {
    return Unexpected{fmt::format("{}: --snapshot: {}", where, client.error().message)};
  }
  auto answer = client->psync("", 0);
  if (!answer) {
    return Unexpected{fmt::format("{}: --snapshot: {}", where, answer.error().message)};
  }
  if (!answer->full) {
    return Unexpected{
        fmt::format("{}: --snapshot: PSYNC ? -1 was answered without a full sync", where)};
  }
  PayloadLoader loader(*side->m_engine, progress);
  while (!loader.done()) {
    auto polled = client->poll(loader, std::chrono::milliseconds(200));
    if (!loader.error().empty()) {
      return Unexpected{fmt::format("{}: --snapshot: {}", where, loader.error())};
    }
    if (!polled) {
      return Unexpected{fmt::format("{}: --snapshot: {}", where, polled.error().message)};
    }
  }
  side->m_keys = loader.state().keys;
  side->m_bytes = loader.state().bytes;
  return side;
}

}  // namespace keyshift::compat
