#include "engine/commands/registry.hpp"
#include "engine/persistence/rdb_format.hpp"
#include "engine/persistence/rdb_load.hpp"
#include "engine/persistence/rdb_writer.hpp"
#include "engine/repl/replica_client.hpp"
#include "engine/resp/cluster_map.hpp"
#include "engine/resp/connection.hpp"
#include "engine/util/clock.hpp"
#include "engine/util/cluster_slot.hpp"
#include "engine/util/mapped_file.hpp"
#include "migrate/import/cluster_stream.hpp"
#include "migrate/import/cluster_target.hpp"
#include "migrate/import/command_stream.hpp"
#include "migrate/import/import_common.hpp"
#include "migrate/import/live_target.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <mutex>
#include <thread>
#include <unordered_set>

// Server sources by replication: keyshift connects as a replica (engine/repl), streams the
// full sync's RDB through RdbStreamReader into the same key writers file sources use, then
// applies the command stream through CommandStreamApplier until --until says stop. The
// checkpoint holds the primary's replication ID and the offset the target acknowledged, so
// a rerun continues with PSYNC while the primary's backlog still holds it.
namespace keyshift::migrate::import_detail {
namespace {

using namespace std::chrono_literals;

constexpr auto k_poll = 100ms;
constexpr int64_t k_second_us = 1'000'000;
/// The embedded target's data file is rewritten this often while commands stream in (the
/// point a killed run continues from).
constexpr int64_t k_snapshot_every_us = 30 * k_second_us;
/// The data file's AUX field with a stream's position ("keyshift-sync" or, for a cluster
/// source, "keyshift-sync:NODEID"; the value "REPLID OFFSET").
constexpr std::string_view k_sync_aux = "keyshift-sync";

/// A number from INFO text ("name:123").
std::optional<uint64_t> info_number(std::string_view info, std::string_view name) {
  std::string needle = "\n" + std::string(name) + ":";
  std::string text = "\n" + std::string(info);
  size_t at = text.find(needle);
  if (at == std::string::npos) {
    return std::nullopt;
  }
  at += needle.size();
  uint64_t n = 0;
  auto r = std::from_chars(text.data() + at, text.data() + text.size(), n);
  if (r.ec != std::errc()) {
    return std::nullopt;
  }
  return n;
}

/// The primary's own offset, read beside the replication link, and how far behind it the
/// target is in bytes and seconds (how long ago the primary was where the target is now).
class SourceProbe {
 public:
  SourceProbe(engine::RespConnection conn, const engine::Clock& clock)
      : m_conn(std::move(conn)), m_clock(clock) {}

  engine::Expected<uint64_t, std::string> master_offset() {
    auto info = m_conn.call({"INFO", "replication"});
    if (!info) {
      return engine::Unexpected{info.error()};
    }
    auto offset = info_number(info->str, "master_repl_offset");
    if (!offset) {
      return engine::Unexpected{m_conn.endpoint().describe() +
                                ": INFO replication has no master_repl_offset"};
    }
    int64_t now = m_clock.monotonic_us();
    if (m_samples.empty() || m_samples.back().second != *offset) {
      m_samples.emplace_back(now, *offset);
    }
    while (m_samples.size() > 600) {
      m_samples.pop_front();
    }
    m_last = *offset;
    return *offset;
  }

  /// Samples once a second at most.
  void maybe_sample() {
    int64_t now = m_clock.monotonic_us();
    if (now - m_sampled_us >= k_second_us) {
      m_sampled_us = now;
      (void)master_offset();
    }
  }

  int64_t lag_bytes(uint64_t applied) const {
    return m_last > applied ? static_cast<int64_t>(m_last - applied) : 0;
  }

  double lag_seconds(uint64_t applied) const {
    for (const auto& [at, offset] : m_samples) {
      if (offset > applied) {
        return static_cast<double>(m_clock.monotonic_us() - at) / 1e6;
      }
    }
    return 0;
  }

 private:
  engine::RespConnection m_conn;
  const engine::Clock& m_clock;
  std::deque<std::pair<int64_t, uint64_t>> m_samples;
  uint64_t m_last = 0;
  int64_t m_sampled_us = 0;
};

/// The full sync's keys and the command stream, for either target.
class SyncHandler final : public engine::ReplStreamHandler, public engine::RdbVisitor {
 public:
  SyncHandler(const ImportOptions& options, const KeyRules& rules, ImportReport& report,
              StreamWriter& stream_writer, const engine::CommandRegistry& registry)
      : m_options(options),
        m_rules(rules),
        m_report(report),
        m_applier(rules, registry, stream_writer) {}

  // Exactly one of these is set: the key writer of the target.
  void use_live(RestoreTarget* target, bool replace) {
    m_live = target;
    m_replace = replace;
  }
  /// `lock` guards the engine, which a cluster source's sessions share.
  void use_engine(engine::Engine* engine, EngineKeyWriter* writer, std::mutex* lock) {
    m_engine = engine;
    m_engine_writer = writer;
    m_engine_lock = lock;
  }
  /// The embedded target: where to keep the offset of the last command the engine holds
  /// (written under the engine's lock; a transaction counts once its EXEC is applied).
  void track_applied(uint64_t* applied) { m_applied = applied; }
  /// Where the full sync's progress goes (the sessions of a cluster source add theirs up).
  void on_progress(std::function<void(const ImportProgress&)> fn) { m_progress = std::move(fn); }
  /// Remembers the target names the full sync wrote (a resync removes the others after).
  void track_names(bool on) { m_track = on; }
  std::map<uint64_t, std::unordered_set<std::string>>& names() { return m_names; }

  // The payload.
  bool on_payload_begin(std::optional<uint64_t> size) override {
    m_payload_size = size.value_or(0);
    engine::RdbReadOptions read;
    read.skip_modules = true;
    m_reader = std::make_unique<engine::RdbStreamReader>(*this, read);
    return true;
  }
  bool on_payload(std::string_view bytes) override {
    m_payload_read += bytes.size();
    auto fed = m_reader->feed(bytes);
    if (!fed) {
      return fail("the full sync's RDB: " + fed.error().message + " (at byte " +
                  std::to_string(fed.error().offset) + ")");
    }
    if (m_progress && m_payload_read - m_last_progress >= (1u << 20)) {
      m_last_progress = m_payload_read;
      m_progress({"sync", m_payload_read, m_payload_size, m_report.counts.written});
    }
    return m_error.empty();
  }
  bool on_payload_end() override {
    auto summary = m_reader->finish();
    if (!summary) {
      return fail("the full sync's RDB: " + summary.error().message + " (at byte " +
                  std::to_string(summary.error().offset) + ")");
    }
    m_payload_done = true;
    return m_error.empty();
  }

  // The payload's records.
  bool defer_value(uint8_t type) override {
    if (m_live == nullptr) {
      return false;
    }
    ensure_live_writer();
    return m_live_writer->passes_through(type);
  }
  void on_function(std::string_view code) override {
    if (m_options.dry_run) {
      return;
    }
    std::string_view argv[] = {"FUNCTION", "LOAD", "REPLACE", code};
    if (m_live != nullptr) {
      PendingKey pending;
      pending.key = "FUNCTION LOAD";
      pending.kind = LiveStreamWriter::k_command_kind;
      if (auto ok = m_live->command_everywhere(std::move(pending), argv); !ok) {
        fail(ok.error());
      }
    } else if (m_engine != nullptr) {
      std::lock_guard guard(*m_engine_lock);
      engine::RespValue r = m_engine->run({"FUNCTION", "LOAD", "REPLACE", code});
      if (r.is_error()) {
        fail("the embedded engine refused a function library: " + r.str);
      }
    }
  }
  bool on_key(engine::RdbKey& k) override {
    ++m_report.counts.read;
    KeyEffects effects;
    Screen screen = screen_key(m_rules, k, m_options.now_ms, m_report, effects);
    if (screen != Screen::keep) {
      return screen == Screen::drop || fail(blocked_error(m_report));
    }
    if (m_track) {
      m_names[effects.target_db].insert(k.key);
    }
    if (m_live != nullptr) {
      ensure_live_writer();
      std::string_view bytes;
      if (k.deferred) {
        bytes = m_reader->bytes_at(k.value_offset, k.value_bytes);
      }
      PendingKey pending;
      pending.db = effects.target_db;
      pending.key = k.key;
      auto sent = m_live_writer->write(k, bytes, std::move(pending));
      if (!sent) {
        return fail(sent.error());
      }
      return true;
    }
    std::lock_guard guard(*m_engine_lock);
    auto added = m_engine_writer->write(effects.target_db, k, true);
    if (!added) {
      return fail(added.error());
    }
    return true;
  }

  // The command stream.
  bool on_command(std::span<const std::string_view> argv, uint64_t offset) override {
    std::unique_lock<std::mutex> guard;
    if (m_engine_lock != nullptr) {
      guard = std::unique_lock(*m_engine_lock);
    }
    auto applied = m_applier.apply(argv, offset);
    if (!applied) {
      return fail(applied.error());
    }
    m_read_offset = offset;
    if (m_applied != nullptr && !m_applier.in_transaction()) {
      *m_applied = offset;  // under the engine's lock
    }
    return true;
  }

  bool fail(std::string message) {
    if (m_error.empty()) {
      m_error = std::move(message);
    }
    return false;
  }
  const std::string& error() const { return m_error; }
  bool payload_done() const { return m_payload_done; }
  uint64_t read_offset() const { return m_read_offset; }
  const CommandStreamApplier& applier() const { return m_applier; }

 private:
  void ensure_live_writer() {
    if (!m_live_writer) {
      // The payload's RDB version is known once its header is read, before the first key.
      const engine::RdbSummary& s = m_reader->summary();
      m_live_writer = std::make_unique<LiveKeyWriter>(*m_live, s.version, s.valkey_magic, m_replace,
                                                      m_options.now_ms, m_report);
    }
  }

  const ImportOptions& m_options;
  const KeyRules& m_rules;
  ImportReport& m_report;
  CommandStreamApplier m_applier;
  RestoreTarget* m_live = nullptr;
  bool m_replace = false;
  std::unique_ptr<LiveKeyWriter> m_live_writer;
  engine::Engine* m_engine = nullptr;
  EngineKeyWriter* m_engine_writer = nullptr;
  std::mutex* m_engine_lock = nullptr;
  std::function<void(const ImportProgress&)> m_progress;
  uint64_t* m_applied = nullptr;
  std::unique_ptr<engine::RdbStreamReader> m_reader;
  uint64_t m_payload_size = 0;
  uint64_t m_payload_read = 0;
  uint64_t m_last_progress = 0;
  bool m_payload_done = false;
  uint64_t m_read_offset = 0;
  bool m_track = false;
  std::map<uint64_t, std::unordered_set<std::string>> m_names;
  std::string m_error;
};

/// Deletes the keys `names` lists (by target database) from `to`; a failure is added to
/// report.error.
void remove_written(const engine::RespEndpoint& to,
                    const std::map<uint64_t, std::unordered_set<std::string>>& names,
                    ImportReport& report) {
  engine::RespEndpoint at = to;
  at.db = 0;
  auto conn = engine::RespConnection::connect(at);
  if (!conn) {
    report.error += "; the keys written before it could not be removed: " + conn.error();
    return;
  }
  // A cluster: each key is deleted on its slot's owner (all keys are in database 0).
  std::optional<engine::ClusterMap> map;
  std::vector<std::optional<engine::RespConnection>> nodes;
  if (auto cluster = engine::is_cluster_node(*conn); cluster && *cluster) {
    auto read = engine::read_cluster_map(*conn);
    if (!read) {
      report.error += "; the keys written before it could not be removed: " + read.error();
      return;
    }
    map = std::move(*read);
    nodes.resize(map->primaries().size());
  }
  auto conn_for = [&](const std::string& key) -> engine::RespConnection* {
    if (!map) {
      return &*conn;
    }
    int owner = map->owner(engine::key_hash_slot(key));
    if (owner < 0) {
      return nullptr;
    }
    auto& slot = nodes[static_cast<size_t>(owner)];
    if (!slot) {
      auto c = engine::RespConnection::connect(
          engine::node_endpoint(at, map->primaries()[static_cast<size_t>(owner)]));
      if (!c) {
        return nullptr;
      }
      slot = std::move(*c);
    }
    return &*slot;
  };
  uint64_t removed = 0;
  for (const auto& [db, keys] : names) {
    if (!map) {
      auto sel = conn->call({"SELECT", std::to_string(db)});
      if (!sel || sel->is_error()) {
        report.error += "; the keys written before it could not be removed (SELECT failed)";
        return;
      }
    }
    for (const std::string& k : keys) {
      engine::RespConnection* c = conn_for(k);
      auto r = c == nullptr ? engine::Expected<engine::RespValue, std::string>(
                                  engine::Unexpected{std::string("no connection")})
                            : c->call({"DEL", k});
      if (!r || r->is_error()) {
        report.error += "; the keys written before it could not all be removed";
        return;
      }
      removed += static_cast<uint64_t>(r->integer);
    }
  }
  if (removed > 0) {
    report.warnings.push_back(std::to_string(removed) +
                              " key(s) written before the refusal were removed from the target");
  }
}

/// Reads the link until `done()` or a failure; false with report.error set on failure.
bool pump(engine::ReplicaClient& client, SyncHandler& handler, ImportReport& report,
          const std::function<bool()>& done, const std::function<bool()>& idle) {
  while (!done()) {
    auto polled = client.poll(handler, k_poll);
    if (!handler.error().empty()) {
      report.error = handler.error();
      return false;
    }
    if (!polled) {
      report.error = polled.error().message;
      return false;
    }
    if (!*polled && idle && !idle()) {
      return false;
    }
  }
  return true;
}

std::string refused_text(const engine::ReplError& e) {
  return e.message +
         "\n  the source refuses replication (SYNC/PSYNC renamed, disabled or not allowed to "
         "this user); import with --mode scan instead (SCAN + DUMP)";
}

/// One primary a replication import reads: the server itself, or one primary of a cluster.
struct SyncSource {
  engine::RespEndpoint endpoint;
  std::string node_id;      // a cluster primary's node ID; empty for a single server
  std::string address;      // a cluster primary's "host:port"
  std::vector<bool> slots;  // a cluster primary's slots; empty for a single server

  /// The target key that records how far this source's stream got.
  std::string marker_key() const {
    std::string key(LiveStreamWriter::k_marker_key);
    return node_id.empty() ? key : key + ":" + node_id;
  }
};

/// A stream that syncs in full again over a preloaded engine: its keys go first (the whole
/// engine for one server; the primary's slots for a cluster source).
void drop_source_keys(engine::Engine& engine, const SyncSource& source) {
  if (source.slots.empty()) {
    (void)engine.run({"FLUSHALL"});
    return;
  }
  std::string cursor = "0";
  do {
    engine::RespValue page = engine.run({"SCAN", cursor, "COUNT", "1000"});
    if (page.type != engine::RespValue::Type::array || page.elements.size() != 2) {
      return;
    }
    cursor = page.elements[0].str;
    for (const engine::RespValue& key : page.elements[1].elements) {
      if (source.slots[engine::key_hash_slot(key.str)]) {
        (void)engine.run({"DEL", key.str});
      }
    }
  } while (cursor != "0");
}

/// What the sessions of one import share. `lock` guards the embedded target, the checkpoint
/// and the progress line; the first session that fails raises `stop` for the others, and
/// every session waits at `payloads` until all full syncs are in, so that none streams
/// commands into a target another session's refused snapshot is taken out of again.
class SyncShared {
 public:
  SyncShared(const ImportOptions& o, CheckpointKeeper& k, size_t sessions)
      : options(o), keeper(k), progress(sessions), payloads_pending(sessions) {
    engine::register_all_families(registry);
  }

  const ImportOptions& options;
  engine::CommandRegistry registry;
  CheckpointKeeper& keeper;
  bool cluster = false;
  bool resuming = false;
  std::mutex lock;
  std::condition_variable payloads;
  std::vector<ImportProgress> progress;
  size_t payloads_pending;
  std::atomic<bool> stop{false};
  std::atomic<bool> blocked{false};
  // The embedded target (no --to), under `lock`.
  engine::Engine* engine = nullptr;
  EngineKeyWriter* engine_writer = nullptr;
  StreamWriter* engine_stream = nullptr;
  // Its snapshots, its checkpoint: the data file written with each session's position in
  // AUX fields, then the checkpoint (the file's own fields are believed on a rerun).
  const std::vector<SyncSource>* sources = nullptr;
  bool snapshots = false;
  bool preloaded = false;  // the engine holds the earlier run's data file
  std::string data_file;
  engine::RdbWriteOptions write;
  std::vector<std::string> replids;  // under lock
  std::vector<uint64_t> applied;     // under lock: each stream's offset the engine holds
  std::vector<uint64_t> snapshot_offsets;
  int64_t snapshot_at_us = 0;
  bool synced_snapshot = false;

  /// Records session `index`'s position in the checkpoint and saves it when due.
  std::optional<std::string> save(size_t index, const SyncPosition& pos, bool force) {
    std::lock_guard guard(lock);
    store(index, pos);
    return keeper.maybe_save(force);
  }

  /// The embedded target: writes the data file and then the checkpoint when `force`, or when
  /// commands were applied and k_snapshot_every passed since the last one.
  /// `bytes` gets the file's size. The final save (`bytes` given) writes even without a
  /// checkpoint.
  std::optional<std::string> snapshot(bool force, const engine::Clock& clock,
                                      uint64_t* bytes = nullptr) {
    if (!snapshots && bytes == nullptr) {
      return std::nullopt;
    }
    std::lock_guard guard(lock);
    int64_t now = clock.monotonic_us();
    if (!force && (now - snapshot_at_us < k_snapshot_every_us || applied == snapshot_offsets)) {
      return std::nullopt;
    }
    std::vector<std::pair<std::string, std::string>> aux;
    for (size_t i = 0; i < applied.size(); ++i) {
      aux.emplace_back(sync_aux_name((*sources)[i]), replids[i] + " " + std::to_string(applied[i]));
    }
    auto saved = engine::save_rdb(*engine, data_file, write, aux);
    if (!saved) {
      return "cannot write " + data_file + ": " + saved.error();
    }
    if (bytes != nullptr) {
      *bytes = saved->bytes;
    }
    snapshot_at_us = now;
    snapshot_offsets = applied;
    for (size_t i = 0; i < applied.size(); ++i) {
      SyncPosition p;
      p.node = (*sources)[i].node_id;
      p.address = (*sources)[i].address;
      p.replid = replids[i];
      p.repl_offset = applied[i];
      p.synced = true;
      p.keys_written = saved->keys;
      store(i, p);
    }
    keeper.state().keys_written = saved->keys;
    return keeper.maybe_save(true);
  }

  /// The AUX field of the data file that holds `source`'s "replid offset".
  static std::string sync_aux_name(const SyncSource& source) {
    std::string name(k_sync_aux);
    return source.node_id.empty() ? name : name + ":" + source.node_id;
  }

 private:
  void store(size_t index, const SyncPosition& pos) {
    ImportCheckpoint& c = keeper.state();
    if (cluster) {
      c.streams[index] = pos;
      c.keys_written = 0;
      for (const SyncPosition& p : c.streams) {
        c.keys_written += p.keys_written;
      }
    } else {
      c.replid = pos.replid;
      c.replid2 = pos.replid2;
      c.repl_offset = pos.repl_offset;
      c.synced = pos.synced;
      c.keys_written = pos.keys_written;
    }
  }

 public:
  /// Reports session `index`'s progress: the sum over the sessions.
  void report_progress(size_t index, const ImportProgress& p) {
    if (!options.progress) {
      return;
    }
    std::lock_guard guard(lock);
    progress[index] = p;
    ImportProgress sum{"stream", 0, 0, 0};
    for (const ImportProgress& q : progress) {
      if (q.phase == std::string_view("sync") || q.phase.empty()) {
        sum.phase = "sync";
      }
      sum.done += q.done;
      sum.total += q.total;
      sum.keys += q.keys;
      if (q.lag_bytes >= 0) {
        sum.lag_bytes = std::max<int64_t>(sum.lag_bytes, 0) + q.lag_bytes;
      }
      sum.lag_seconds = std::max(sum.lag_seconds, q.lag_seconds);
    }
    options.progress(sum);
  }

  /// Session's full sync is in (or it had none, or it stopped): waits for the others; false
  /// when one of them failed.
  bool payload_in() {
    std::unique_lock guard(lock);
    if (payloads_pending > 0) {
      --payloads_pending;
    }
    payloads.notify_all();
    while (payloads_pending > 0 && !stop) {
      payloads.wait_for(guard, k_poll);
    }
    return !stop;
  }

  /// A session failed: the others stop.
  void fail(const ImportReport& report) {
    if (!report.blocked.empty()) {
      blocked = true;
    }
    stop = true;
    payloads.notify_all();
  }
};

/// One primary's replication into the target: connect, PSYNC, the full sync's keys, then the
/// command stream until --until (or another session's failure) says stop. `pos` is where the
/// checkpoint left it; `report` is this session's.
void sync_session(SyncShared& shared, size_t index, const SyncSource& source, KeyRules rules,
                  SyncPosition pos, ImportReport& report) {
  const ImportOptions& options = shared.options;
  bool payload_counted = false;
  auto fail_session = [&] {
    shared.fail(report);
    if (!payload_counted) {
      payload_counted = true;
      (void)shared.payload_in();
    }
  };
  engine::SystemClock clock;
  auto client = engine::ReplicaClient::connect(source.endpoint, clock);
  if (!client) {
    report.error = client.error().refused ? refused_text(client.error()) : client.error().message;
    fail_session();
    return;
  }
  engine::RespEndpoint probe_at = source.endpoint;
  probe_at.db = 0;
  auto probe_conn = engine::RespConnection::connect(probe_at);
  if (!probe_conn) {
    report.error = probe_conn.error();
    fail_session();
    return;
  }
  SourceProbe probe(std::move(*probe_conn), clock);

  std::unique_ptr<RestoreTarget> target_holder;
  RestoreTarget* target = nullptr;
  ClusterStreamWriter* cluster_writer = nullptr;
  std::unique_ptr<StreamWriter> stream_writer_holder;
  StreamWriter* stream_writer = shared.engine_stream;
  MarkedStreamWriter* live_writer = nullptr;
  if (options.to) {
    target_holder = open_live_target(options, rules, report);
    target = target_holder.get();
    if (target == nullptr) {
      fail_session();
      return;
    }
    if (auto* single = dynamic_cast<LiveTarget*>(target)) {
      auto writer = std::make_unique<LiveStreamWriter>(*single, std::string(), source.marker_key());
      live_writer = writer.get();
      stream_writer_holder = std::move(writer);
    } else {
      // A cluster runs a transaction in one slot only: the stream is cut by slot, each
      // slot's share with its own marker.
      auto writer = std::make_unique<ClusterStreamWriter>(*static_cast<ClusterTarget*>(target),
                                                          shared.registry, std::string(),
                                                          source.marker_key());
      cluster_writer = writer.get();
      live_writer = writer.get();
      stream_writer_holder = std::move(writer);
    }
    stream_writer = stream_writer_holder.get();
  }
  const bool resuming = shared.resuming;
  if (resuming && pos.synced && options.to && cluster_writer == nullptr) {
    // The target's own marker, written atomically with each batch, may be past the
    // checkpoint file (killed between an EXEC and the next save): it is the truth.
    auto marker = LiveStreamWriter::read_marker(*options.to, source.marker_key());
    if (marker && marker->first == pos.replid && marker->second > pos.repl_offset) {
      pos.repl_offset = marker->second;
    }
  }
  std::string want_id = resuming && pos.synced ? pos.replid : std::string();
  auto psync = client->psync(want_id, pos.repl_offset);
  if (!psync) {
    report.error = psync.error().refused ? refused_text(psync.error()) : psync.error().message;
    fail_session();
    return;
  }
  report.replid = psync->replid;
  if (live_writer != nullptr) {
    live_writer->set_marker_id(psync->replid);
  }
  if (cluster_writer != nullptr && resuming) {
    // Each slot's marker says how far the target got in that slot, past the checkpoint
    // the stream continues from; markers of an earlier stream are only removed.
    if (auto loaded = cluster_writer->load_markers(psync->replid); !loaded) {
      report.error = loaded.error();
      fail_session();
      return;
    }
  }
  if (!options.to) {
    std::lock_guard guard(shared.lock);
    shared.replids[index] = psync->replid;
    shared.applied[index] = psync->offset;
    if (psync->full && shared.preloaded) {
      drop_source_keys(*shared.engine, source);
    }
  }
  SyncHandler handler(options, rules, report, *stream_writer, shared.registry);
  if (!options.to) {
    handler.track_applied(&shared.applied[index]);
  }
  if (options.progress) {
    handler.on_progress([&](const ImportProgress& p) { shared.report_progress(index, p); });
  }
  uint64_t acked_offset = psync->offset;
  if (psync->full) {
    report.sync = "full";
    if (!want_id.empty()) {
      report.warnings.push_back(
          (source.address.empty() ? std::string() : "primary " + source.address + ": ") +
          "the source could not continue from offset " + std::to_string(pos.repl_offset) + " of " +
          want_id +
          " (its replication backlog no longer holds it, or its ID changed): a full resync "
          "was done instead; raise repl-backlog-size on the source to cover the longest "
          "expected interruption");
    }
    pos.replid = psync->replid;
    pos.replid2.clear();
    pos.repl_offset = psync->offset;
    pos.synced = false;
  } else {
    report.sync = "partial";
    pos.replid = psync->replid;
    if (!psync->old_replid.empty()) {
      pos.replid2 = psync->old_replid;
    }
  }

  if (target) {
    // A resync over an earlier attempt's keys replaces them, and removes afterwards those
    // the new snapshot no longer holds.
    bool resync = psync->full && resuming;
    handler.use_live(&*target, options.conflict == ConflictPolicy::replace || resync);
    // With --conflict fail the target held none of these names before: the ones this sync
    // writes are known, so a resync can remove the stale ones and a refused move its own.
    handler.track_names(psync->full && options.conflict == ConflictPolicy::fail);
    if (resync && options.conflict != ConflictPolicy::fail) {
      report.warnings.push_back(
          "a resync with --conflict skip/replace cannot tell the earlier attempt's keys from "
          "the target's own: keys deleted at the source meanwhile may remain in the target");
    }
    target->skip_conflicts(options.conflict == ConflictPolicy::skip);
    target->on_ack([&](const PendingKey& key, WriteOutcome outcome) {
      if (key.command) {
        if (key.position > 0) {
          acked_offset = key.position;
          if (pos.synced) {
            pos.repl_offset = key.position;
          }
        }
        return;
      }
      count_write(key, outcome, report.counts);
      ++pos.keys_written;
    });
    if (auto err = shared.save(index, pos, true)) {
      report.error = "cannot save the checkpoint: " + *err;
      fail_session();
      return;
    }
  } else {
    handler.use_engine(shared.engine, shared.engine_writer, &shared.lock);
  }

  auto finish_live = [&](bool clean) -> bool {
    if (!target) {
      return true;
    }
    if (clean) {
      if (auto ok = live_writer->clear_marker(); !ok) {
        report.error = ok.error();
      }
    }
    auto drained = target->drain();
    report.bytes_sent = target->bytes_sent();
    if (!drained) {
      report.error = drained.error();
    } else if (clean && pos.synced && !handler.applier().in_transaction()) {
      acked_offset = std::max(acked_offset, client->stream().offset());
      pos.repl_offset = acked_offset;
    }
    if (auto err = shared.save(index, pos, true); err && report.error.empty()) {
      report.error = "cannot save the checkpoint: " + *err;
    }
    return report.error.empty();
  };
  // A refused move takes out what its full syncs wrote, in every session.
  auto take_back = [&] {
    if (target && shared.blocked && !resuming) {
      remove_written(*options.to, handler.names(), report);
    }
  };

  if (psync->full) {
    bool loaded =
        pump(*client, handler, report, [&] { return handler.payload_done() || shared.stop; }, {});
    if (loaded && target) {
      if (auto drained = target->drain(); !drained) {
        report.error = drained.error();
        loaded = false;
      }
    }
    if (!loaded) {
      (void)finish_live(false);
      fail_session();
      take_back();
      return;
    }
    payload_counted = true;
    if (!shared.payload_in()) {
      (void)finish_live(false);
      take_back();
      return;
    }
    if (!target && shared.snapshots) {
      // The first data file a rerun can continue from: every full sync is in.
      bool first = false;
      {
        std::lock_guard guard(shared.lock);
        first = !shared.synced_snapshot;
        shared.synced_snapshot = true;
      }
      if (first) {
        if (auto err = shared.snapshot(true, clock)) {
          report.error = *err;
          fail_session();
          return;
        }
      }
    }
    if (target) {
      if (resuming && options.conflict == ConflictPolicy::fail) {
        // What the earlier attempt wrote and the snapshot no longer has. A cluster source's
        // session looks only at the keys of its own primary's slots.
        uint64_t removed = 0;
        auto& names = handler.names();
        bool owned_only = shared.cluster && rules.rename.empty();
        bool skip = shared.cluster && !rules.rename.empty();
        if (skip) {
          report.warnings.push_back(
              "primary " + source.address +
              ": a resync with --rename-prefix from a cluster source cannot tell which "
              "primary a renamed key came from: keys deleted at the source meanwhile may "
              "remain in the target");
        }
        auto scanned =
            skip ? engine::Expected<bool, std::string>(true)
                 : scan_target(
                       *options.to, rules,
                       [&](engine::RespConnection& conn, uint64_t db,
                           std::vector<std::string>& keys) -> engine::Expected<bool, std::string> {
                         auto& kept = names[db];
                         for (const std::string& k : keys) {
                           if (LiveStreamWriter::is_marker(k) || kept.count(k) != 0) {
                             continue;
                           }
                           if (owned_only && !source.slots[engine::key_hash_slot(k)]) {
                             continue;
                           }
                           auto r = conn.call({"DEL", k});
                           if (!r || r->is_error()) {
                             return engine::Unexpected{"DEL failed on the target"};
                           }
                           ++removed;
                         }
                         return true;
                       });
        if (!scanned) {
          report.error = scanned.error();
          fail_session();
          return;
        }
        if (removed > 0) {
          report.warnings.push_back(std::to_string(removed) +
                                    " key(s) written by the interrupted attempt were gone from "
                                    "the new snapshot and were removed from the target");
        }
      }
      handler.names().clear();
      handler.track_names(false);
      pos.synced = true;
      pos.repl_offset = psync->offset;
      acked_offset = psync->offset;
      if (auto err = shared.save(index, pos, true)) {
        report.error = "cannot save the checkpoint: " + *err;
        fail_session();
        return;
      }
    }
  } else {
    pos.synced = true;
    payload_counted = true;
    if (!shared.payload_in()) {
      return;
    }
  }

  // The command stream.
  auto caught_up_at = probe.master_offset();
  if (!caught_up_at) {
    report.error = caught_up_at.error();
    (void)finish_live(false);
    fail_session();
    return;
  }
  uint64_t last_progress_us = 0;
  auto applied = [&] { return target ? acked_offset : client->stream().offset(); };
  acked_offset = std::max(acked_offset, client->stream().offset());
  auto should_stop = [&]() -> bool {
    if (shared.stop || (options.stop_requested && options.stop_requested())) {
      return true;
    }
    switch (options.until) {
      case UntilKind::caught_up:
        return applied() >= *caught_up_at && !handler.applier().in_transaction();
      case UntilKind::stop_file:
        return !options.until_path.empty() && ::access(options.until_path.c_str(), F_OK) == 0;
      case UntilKind::signal:
        return false;
    }
    return false;
  };
  auto on_idle = [&]() -> bool {
    if (auto err = shared.snapshot(false, clock)) {
      report.error = *err;
      return false;
    }
    if (target) {
      if (auto ok = live_writer->flush(); !ok) {
        report.error = ok.error();
        return false;
      }
      auto drained = target->drain();
      if (!drained) {
        report.error = drained.error();
        return false;
      }
      // Everything read is acknowledged now, the commands that sent nothing (the primary's
      // PINGs, commands the rules leave out) included; a transaction still open is not.
      if (!handler.applier().in_transaction()) {
        acked_offset = std::max(acked_offset, client->stream().offset());
        pos.repl_offset = acked_offset;
      }
      if (auto err = shared.save(index, pos, false)) {
        report.error = "cannot save the checkpoint: " + *err;
        return false;
      }
    }
    probe.maybe_sample();
    auto now = static_cast<uint64_t>(clock.monotonic_us());
    if (options.progress && now - last_progress_us >= static_cast<uint64_t>(k_second_us)) {
      last_progress_us = now;
      ImportProgress p{"stream", handler.applier().counts().applied, 0, report.counts.written};
      p.lag_bytes = probe.lag_bytes(applied());
      p.lag_seconds = probe.lag_seconds(applied());
      shared.report_progress(index, p);
    }
    return true;
  };
  bool streamed = true;
  while (!should_stop()) {
    auto polled = client->poll(handler, k_poll);
    if (!handler.error().empty()) {
      report.error = handler.error();
      streamed = false;
      break;
    }
    if (!polled) {
      report.error = polled.error().message;
      streamed = false;
      break;
    }
    if (!on_idle()) {
      streamed = false;
      break;
    }
  }
  const CommandStreamCounts& counts = handler.applier().counts();
  report.commands_applied = counts.applied;
  report.commands_filtered = counts.filtered;
  report.transactions = counts.transactions;
  if (cluster_writer != nullptr) {
    const ClusterStreamCounts& c = cluster_writer->counts();
    std::string who = source.address.empty() ? std::string() : "primary " + source.address + ": ";
    if (c.transactions_split > 0) {
      report.warnings.push_back(
          who + std::to_string(c.transactions_split) +
          " source transaction(s) spanned several slots: each slot's share was applied as "
          "its own transaction (a cluster runs a transaction in one slot only)");
    }
    if (c.commands_split > 0) {
      report.warnings.push_back(who + std::to_string(c.commands_split) +
                                " MSET/DEL/UNLINK/TOUCH command(s) over several slots were "
                                "split into one per slot");
    }
    if (c.skipped_applied > 0) {
      report.warnings.push_back(who + std::to_string(c.skipped_applied) +
                                " command(s) the target already held (its slot markers said "
                                "so) were not applied again");
    }
  }
  // Stopped because another session failed: this one's position is saved, its marker kept.
  bool clean = streamed && !shared.stop;
  if (!finish_live(clean) || !streamed) {
    report.repl_offset = applied();
    fail_session();
    return;
  }
  report.repl_offset = applied();
  (void)probe.master_offset();
  report.lag_bytes = probe.lag_bytes(report.repl_offset);
  report.lag_seconds = probe.lag_seconds(report.repl_offset);
  report.ok = clean;
}

/// The primaries of the server at `endpoint`: itself, or each primary of its cluster.
bool sync_sources(const engine::RespEndpoint& endpoint, std::vector<SyncSource>& sources,
                  ImportReport& report) {
  auto probe = engine::RespConnection::connect(endpoint);
  if (!probe) {
    report.error = probe.error();
    return false;
  }
  auto cluster = engine::is_cluster_node(*probe);
  if (!cluster || !*cluster) {
    // A server that does not answer INFO cluster is read as one server; the replica
    // connection says what is wrong with it.
    sources.push_back(SyncSource{endpoint, {}, {}, {}});
    return true;
  }
  auto map = engine::read_cluster_map(*probe);
  if (!map) {
    report.error = map.error();
    return false;
  }
  if (uint32_t missing = map->uncovered(); missing > 0) {
    report.error = "the source cluster serves only " +
                   std::to_string(engine::k_cluster_slots - missing) + " of " +
                   std::to_string(engine::k_cluster_slots) +
                   " slots: replicate it when every slot has a primary";
    return false;
  }
  for (size_t i = 0; i < map->primaries().size(); ++i) {
    const engine::ClusterNode& n = map->primaries()[i];
    SyncSource s{engine::node_endpoint(endpoint, n), n.id, n.address(),
                 std::vector<bool>(engine::k_cluster_slots, false)};
    for (uint32_t slot = 0; slot < engine::k_cluster_slots; ++slot) {
      s.slots[slot] = map->owner(static_cast<uint16_t>(slot)) == static_cast<int>(i);
    }
    if (s.node_id.empty()) {
      // CLUSTER SLOTS of an old server: the node's own ID names its checkpoint entry.
      if (auto conn = engine::RespConnection::connect(s.endpoint)) {
        auto id = conn->call({"CLUSTER", "MYID"});
        if (id && id->type == engine::RespValue::Type::bulk) {
          s.node_id = id->str;
        }
      }
    }
    if (s.node_id.empty()) {
      report.error = "primary " + s.address + ": its cluster node ID is unknown";
      return false;
    }
    sources.push_back(std::move(s));
  }
  report.cluster.source = true;
  return true;
}

/// resume_point for a cluster source, which any of its nodes names: the checkpoint is this
/// import's when it has the same target and shares a primary (by node ID) with `sources`.
engine::Expected<std::optional<ImportCheckpoint>, std::string> cluster_resume_point(
    const ImportOptions& options, const ImportCheckpoint& expected,
    const std::vector<SyncSource>& sources) {
  if (options.checkpoint.empty()) {
    return std::optional<ImportCheckpoint>();
  }
  auto loaded = load_checkpoint(options.checkpoint);
  if (!loaded || !*loaded) {
    return loaded;
  }
  const ImportCheckpoint& c = **loaded;
  bool shared_node = false;
  for (const SyncPosition& p : c.streams) {
    for (const SyncSource& s : sources) {
      shared_node = shared_node || p.node == s.node_id;
    }
  }
  if (c.kind != expected.kind || c.target != expected.target ||
      (c.source != expected.source && !shared_node)) {
    return engine::Unexpected{options.checkpoint + ": the checkpoint is of another import (" +
                              c.source + " to " + c.target +
                              "); remove it to start over, or give another --checkpoint"};
  }
  (*loaded)->source = expected.source;
  return loaded;
}

/// The AUX fields of an RDB file, read up to its first key.
class AuxReader final : public engine::RdbVisitor {
 public:
  void on_aux(std::string_view name, std::string_view value) override {
    m_aux.emplace(std::string(name), std::string(value));
  }
  bool on_key(engine::RdbKey&) override { return false; }
  const std::map<std::string, std::string>& aux() const { return m_aux; }

 private:
  std::map<std::string, std::string> m_aux;
};

/// A rerun into the embedded target: loads the data file the earlier run left when it names
/// a position for every stream, and continues each from there (the file's positions are the
/// truth: the checkpoint is written after it). Without them the streams sync in full. False
/// with report.error when the file cannot be read.
bool preload_data_file(SyncShared& shared, const KeyRules& rules,
                       std::vector<SyncPosition>& positions, ImportReport& report) {
  std::error_code ec;
  if (!std::filesystem::exists(shared.data_file, ec)) {
    positions.assign(positions.size(), SyncPosition{});
    return true;
  }
  if (shared.cluster && !rules.rename.empty()) {
    // A primary that must sync in full again takes its slots' keys out of the engine,
    // which a renamed key's slot no longer tells.
    report.warnings.push_back("a cluster source with --rename-prefix cannot continue from " +
                              shared.data_file + ": every primary syncs in full again");
    positions.assign(positions.size(), SyncPosition{});
    return true;
  }
  auto map = engine::MappedFile::open(shared.data_file);
  if (!map) {
    report.error = map.error().what + ": " + map.error().reason();
    return false;
  }
  AuxReader reader;
  auto header = engine::read_rdb(map->data(), reader);
  if (!header && reader.aux().empty()) {
    report.error = shared.data_file + ": " + header.error().message + " (at byte " +
                   std::to_string(header.error().offset) + ")";
    return false;
  }
  for (size_t i = 0; i < positions.size(); ++i) {
    auto at = reader.aux().find(SyncShared::sync_aux_name((*shared.sources)[i]));
    size_t sp = at == reader.aux().end() ? std::string::npos : at->second.rfind(' ');
    uint64_t offset = 0;
    if (sp != std::string::npos) {
      std::string_view digits = std::string_view(at->second).substr(sp + 1);
      auto r = std::from_chars(digits.data(), digits.data() + digits.size(), offset);
      if (r.ec != std::errc() || r.ptr != digits.data() + digits.size()) {
        sp = std::string::npos;
      }
    }
    if (sp == std::string::npos) {
      report.warnings.push_back(shared.data_file +
                                " holds no replication position of this import: the source "
                                "syncs in full again");
      positions.assign(positions.size(), SyncPosition{});
      return true;
    }
    positions[i].replid = at->second.substr(0, sp);
    positions[i].repl_offset = offset;
    positions[i].synced = true;
  }
  auto loaded = engine::load_rdb(*shared.engine, map->data());
  if (!loaded) {
    report.error = shared.data_file + ": " + loaded.error().message + " (at byte " +
                   std::to_string(loaded.error().offset) + ")";
    return false;
  }
  shared.preloaded = true;
  return true;
}

/// Adds a session's report to the import's.
void merge_session(ImportReport& into, const ImportReport& from, const SyncSource& source) {
  const ImportCounts& f = from.counts;
  ImportCounts& c = into.counts;
  for (auto [a, b] : {std::pair{&c.read, &f.read},
                      {&c.written, &f.written},
                      {&c.filtered, &f.filtered},
                      {&c.expired, &f.expired},
                      {&c.modules_dropped, &f.modules_dropped},
                      {&c.renamed, &f.renamed},
                      {&c.moved, &f.moved},
                      {&c.field_ttls_dropped, &f.field_ttls_dropped},
                      {&c.fields_dropped, &f.fields_dropped},
                      {&c.hashes_emptied, &f.hashes_emptied},
                      {&c.conflicts_skipped, &f.conflicts_skipped},
                      {&c.conflicts_found, &f.conflicts_found},
                      {&c.vanished, &f.vanished},
                      {&c.resumed_past, &f.resumed_past},
                      {&c.reencoded, &f.reencoded},
                      {&c.as_commands, &f.as_commands},
                      {&c.chunked, &f.chunked},
                      {&c.commands, &f.commands},
                      {&c.expired_in_flight, &f.expired_in_flight},
                      {&c.followed, &f.followed},
                      {&c.follow_deleted, &f.follow_deleted}}) {
    *a += *b;
  }
  for (const auto& [type, n] : f.written_by_type) {
    c.written_by_type[type] += n;
  }
  for (const std::string& key : from.blocked) {
    if (into.blocked.size() < k_listed_keys) {
      into.blocked.push_back(key);
    }
  }
  if (into.blocked_reason.empty()) {
    into.blocked_reason = from.blocked_reason;
  }
  for (const std::string& w : from.warnings) {
    if (std::find(into.warnings.begin(), into.warnings.end(), w) == into.warnings.end()) {
      into.warnings.push_back(w);
    }
  }
  if (into.error.empty() && !from.error.empty()) {
    into.error = "primary " + source.address + ": " + from.error;
  }
  if (into.target.empty()) {
    into.target = from.target;
    into.target_server = from.target_server;
    into.target_rdb_version = from.target_rdb_version;
    into.method = from.method;
    into.big_key_bytes = from.big_key_bytes;
  }
  into.bytes_sent += from.bytes_sent;
  into.commands_applied += from.commands_applied;
  into.commands_filtered += from.commands_filtered;
  into.transactions += from.transactions;
  if (from.sync == "full" || into.sync.empty()) {
    into.sync = from.sync;
  }
  into.lag_bytes = std::max<int64_t>(into.lag_bytes, 0) + std::max<int64_t>(from.lag_bytes, 0);
  into.lag_seconds = std::max(into.lag_seconds, from.lag_seconds);
  into.cluster.source_nodes.emplace_back(source.address, f.read);
  into.cluster.source_streams.push_back(ImportSyncStream{
      source.address, from.replid, from.repl_offset, from.sync, from.lag_bytes, from.lag_seconds});
}

}  // namespace

void import_sync(const ImportOptions& options, KeyRules rules, ImportReport& report) {
  if (auto why = CommandStreamApplier::unsupported_rules(rules)) {
    report.error = *why;
    return;
  }
  if (options.dry_run) {
    report.error =
        "--dry-run reads a server source by scanning: add --mode scan (a replication import "
        "has no dry run)";
    return;
  }
  auto endpoint = engine::parse_redis_url(options.source, options.tls);
  if (!endpoint) {
    report.error = endpoint.error();
    return;
  }
  std::vector<SyncSource> sources;
  if (!sync_sources(*endpoint, sources, report)) {
    return;
  }
  const bool cluster = report.cluster.source;
  if (cluster && endpoint->db != 0) {
    report.error = "a cluster source has only database 0";
    return;
  }

  ImportCheckpoint start;
  start.kind = "sync";
  start.source = endpoint->describe();
  std::unique_ptr<engine::ManualClock> engine_clock;
  std::unique_ptr<engine::Engine> engine;
  std::unique_ptr<EngineKeyWriter> engine_writer;
  std::unique_ptr<StreamWriter> engine_stream;
  std::filesystem::path out;
  if (options.to) {
    // Opened once here to name the target in the checkpoint and check the conflicts; each
    // session opens its own connection.
    std::unique_ptr<RestoreTarget> holder;
    KeyRules probe_rules = rules;
    holder = open_live_target(options, probe_rules, report);
    if (!holder) {
      return;
    }
    if (holder->only_db()) {
      // A cluster target: every database the sources hold keys in must map to its only one,
      // known before the first write (a later SELECT of another stops the stream too).
      std::map<uint64_t, uint64_t> target_dbs;
      for (const SyncSource& source : sources) {
        engine::RespEndpoint at = source.endpoint;
        at.db = 0;
        auto conn = engine::RespConnection::connect(at);
        if (!conn) {
          report.error = conn.error();
          return;
        }
        auto keyspace = conn->call({"INFO", "keyspace"});
        if (!keyspace || keyspace->is_error()) {
          report.error = at.describe() + ": INFO keyspace failed";
          return;
        }
        for (const auto& [db, keys] : keyspace_key_counts(keyspace->str)) {
          target_dbs[target_db_of(rules, db)] += keys;
        }
      }
      if (!check_target_dbs(*holder, target_dbs, report)) {
        return;
      }
    }
    start.target = report.target;
  } else {
    RdbTargetLimits limits = rdb_target_limits(options.target);
    rules.target_field_ttls = limits.field_ttls;
    out = std::filesystem::path(options.dir) / options.dbfilename;
    report.target = out.string();
    start.target = report.target;
    report.target_server = std::string(limits.name);
    report.target_rdb_version = limits.max_rdb_version;
    engine::EngineConfig config;
    int databases = 16;
    for (const auto& [from, to] : rules.db_map) {
      databases = std::max<int>(databases, static_cast<int>(std::min<uint64_t>(to, 1 << 20)) + 1);
    }
    config.databases = databases;
    // As a replica's: keys expire when the primary's DEL says so, never by this clock.
    engine_clock = std::make_unique<engine::ManualClock>(options.now_ms);
    engine = std::make_unique<engine::Engine>(config, *engine_clock);
    engine_writer = std::make_unique<EngineKeyWriter>(*engine, report, options.now_ms);
    engine_stream = std::make_unique<EngineStreamWriter>(*engine);
  }

  // The embedded target's checkpoint is its data file, rewritten now and then with each
  // stream's position in it (SyncShared::snapshot), and the checkpoint file beside.
  CheckpointKeeper keeper(options.checkpoint, start);
  SyncShared shared(options, keeper, sources.size());
  shared.cluster = cluster;
  shared.engine = engine.get();
  shared.engine_writer = engine_writer.get();
  shared.engine_stream = engine_stream.get();
  shared.sources = &sources;
  shared.snapshots = !options.to && keeper.enabled();
  shared.data_file = out.string();
  shared.write.version = report.target_rdb_version;
  shared.replids.assign(sources.size(), std::string());
  shared.applied.assign(sources.size(), 0);
  std::vector<SyncPosition> positions(sources.size());
  {
    auto resume = cluster ? cluster_resume_point(options, keeper.state(), sources)
                          : resume_point(options, keeper.state());
    if (!resume) {
      report.error = resume.error();
      return;
    }
    if (*resume) {
      keeper.state() = **resume;
      keeper.state().complete = false;
      report.resumed = true;
      const ImportCheckpoint& c = keeper.state();
      if (cluster) {
        // Each primary continues from its own entry, found by node ID (a primary the
        // checkpoint does not know, after a failover or a new shard, syncs in full).
        for (size_t i = 0; i < sources.size(); ++i) {
          for (const SyncPosition& p : c.streams) {
            if (p.node == sources[i].node_id) {
              positions[i] = p;
            }
          }
        }
      } else {
        positions[0] =
            SyncPosition{{}, {}, c.replid, c.replid2, c.repl_offset, c.synced, c.keys_written};
      }
      if (!options.to && !preload_data_file(shared, rules, positions, report)) {
        return;
      }
    }
    if (options.to && options.conflict == ConflictPolicy::fail && !report.resumed) {
      // Before the first write: keys of the target that this import could write.
      if (!refuse_target_conflicts(*options.to, rules, report)) {
        return;
      }
    }
  }
  shared.resuming = report.resumed;
  if (cluster) {
    keeper.state().streams.clear();
    for (size_t i = 0; i < sources.size(); ++i) {
      positions[i].node = sources[i].node_id;
      positions[i].address = sources[i].address;
      keeper.state().streams.push_back(positions[i]);
    }
  }

  if (!cluster) {
    sync_session(shared, 0, sources[0], rules, positions[0], report);
  } else {
    std::vector<ImportReport> reports(sources.size());
    std::vector<std::thread> threads;
    threads.reserve(sources.size());
    for (size_t i = 0; i < sources.size(); ++i) {
      reports[i].resumed = report.resumed;
      threads.emplace_back(
          [&, i] { sync_session(shared, i, sources[i], rules, positions[i], reports[i]); });
    }
    for (std::thread& t : threads) {
      t.join();
    }
    bool all_ok = true;
    for (size_t i = 0; i < sources.size(); ++i) {
      merge_session(report, reports[i], sources[i]);
      all_ok = all_ok && reports[i].ok;
    }
    if (!all_ok && report.error.empty()) {
      report.error = "a replication session stopped without saying why";
    }
    report.ok = all_ok;
  }
  if (!report.ok || !report.error.empty()) {
    report.ok = false;
    return;
  }
  if (!options.to) {
    uint64_t bytes = 0;
    engine::SystemClock clock;
    if (auto err = shared.snapshot(true, clock, &bytes)) {
      report.error = *err;
      report.ok = false;
      return;
    }
    report.bytes_sent = bytes;
  }
}

}  // namespace keyshift::migrate::import_detail
