#include "engine/commands/registry.hpp"
#include "engine/persistence/rdb_format.hpp"
#include "engine/persistence/rdb_load.hpp"
#include "engine/persistence/rdb_writer.hpp"
#include "engine/repl/replica_client.hpp"
#include "engine/resp/connection.hpp"
#include "engine/util/clock.hpp"
#include "migrate/import/command_stream.hpp"
#include "migrate/import/import_common.hpp"
#include "migrate/import/live_target.hpp"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <deque>
#include <filesystem>
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
  void use_live(LiveTarget* target, bool replace) {
    m_live = target;
    m_replace = replace;
  }
  void use_engine(engine::Engine* engine, EngineKeyWriter* writer) {
    m_engine = engine;
    m_engine_writer = writer;
  }
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
    if (m_options.progress && m_payload_read - m_last_progress >= (1u << 20)) {
      m_last_progress = m_payload_read;
      m_options.progress({"sync", m_payload_read, m_payload_size, m_report.counts.written});
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
      if (auto ok = m_live->command(std::move(pending), argv, std::nullopt); !ok) {
        fail(ok.error());
      }
    } else if (m_engine != nullptr) {
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
    auto added = m_engine_writer->write(effects.target_db, k, true);
    if (!added) {
      return fail(added.error());
    }
    return true;
  }

  // The command stream.
  bool on_command(std::span<const std::string_view> argv, uint64_t offset) override {
    auto applied = m_applier.apply(argv, offset);
    if (!applied) {
      return fail(applied.error());
    }
    m_read_offset = offset;
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
  LiveTarget* m_live = nullptr;
  bool m_replace = false;
  std::unique_ptr<LiveKeyWriter> m_live_writer;
  engine::Engine* m_engine = nullptr;
  EngineKeyWriter* m_engine_writer = nullptr;
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
  uint64_t removed = 0;
  for (const auto& [db, keys] : names) {
    auto sel = conn->call({"SELECT", std::to_string(db)});
    if (!sel || sel->is_error()) {
      report.error += "; the keys written before it could not be removed (SELECT failed)";
      return;
    }
    for (const std::string& k : keys) {
      auto r = conn->call({"DEL", k});
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
  engine::SystemClock clock;
  auto client = engine::ReplicaClient::connect(*endpoint, clock);
  if (!client) {
    report.error = client.error().refused ? refused_text(client.error()) : client.error().message;
    return;
  }
  engine::RespEndpoint probe_at = *endpoint;
  probe_at.db = 0;
  auto probe_conn = engine::RespConnection::connect(probe_at);
  if (!probe_conn) {
    report.error = probe_conn.error();
    return;
  }
  SourceProbe probe(std::move(*probe_conn), clock);

  ImportCheckpoint start;
  start.kind = "sync";
  start.source = client->describe();
  engine::CommandRegistry registry;
  engine::register_all_families(registry);

  std::unique_ptr<RestoreTarget> target_holder;
  LiveTarget* target = nullptr;
  std::unique_ptr<engine::ManualClock> engine_clock;
  std::unique_ptr<engine::Engine> engine;
  std::unique_ptr<EngineKeyWriter> engine_writer;
  std::unique_ptr<StreamWriter> stream_writer;
  LiveStreamWriter* live_writer = nullptr;
  std::filesystem::path out;
  if (options.to) {
    // A cluster target routes by key (scan sources can feed it).
    target = open_stream_target(
        options, rules, report, target_holder,
        "importing by replication into a cluster target is not supported yet; use --mode scan");
    if (target == nullptr) {
      return;
    }
    start.target = report.target;
    auto writer = std::make_unique<LiveStreamWriter>(*target, std::string());
    live_writer = writer.get();
    stream_writer = std::move(writer);
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
    stream_writer = std::make_unique<EngineStreamWriter>(*engine);
  }

  // The embedded target is saved once at the end: it keeps no checkpoint.
  CheckpointKeeper keeper(options.to ? options.checkpoint : std::string(), start);
  if (options.to) {
    auto resume = resume_point(options, keeper.state());
    if (!resume) {
      report.error = resume.error();
      return;
    }
    if (*resume) {
      keeper.state() = **resume;
      keeper.state().complete = false;
      report.resumed = true;
    }
  }
  ImportCheckpoint& state = keeper.state();
  const bool resuming = report.resumed;

  if (resuming && state.synced) {
    // The target's own marker, written atomically with each batch, may be past the
    // checkpoint file (killed between an EXEC and the next save): it is the truth.
    auto marker = LiveStreamWriter::read_marker(*options.to);
    if (marker && marker->first == state.replid && marker->second > state.repl_offset) {
      state.repl_offset = marker->second;
    }
  }
  std::string want_id = resuming && state.synced ? state.replid : std::string();
  auto psync = client->psync(want_id, state.repl_offset);
  if (!psync) {
    report.error = psync.error().refused ? refused_text(psync.error()) : psync.error().message;
    return;
  }
  report.replid = psync->replid;
  if (live_writer != nullptr) {
    live_writer->set_marker_id(psync->replid);
  }
  SyncHandler handler(options, rules, report, *stream_writer, registry);
  uint64_t acked_offset = psync->offset;
  if (psync->full) {
    report.sync = "full";
    if (!want_id.empty()) {
      report.warnings.push_back(
          "the source could not continue from offset " + std::to_string(state.repl_offset) +
          " of " + want_id +
          " (its replication backlog no longer holds it, or its ID changed): a full resync "
          "was done instead; raise repl-backlog-size on the source to cover the longest "
          "expected interruption");
    }
    state.replid = psync->replid;
    state.replid2.clear();
    state.repl_offset = psync->offset;
    state.synced = false;
  } else {
    report.sync = "partial";
    state.replid = psync->replid;
    if (!psync->old_replid.empty()) {
      state.replid2 = psync->old_replid;
    }
  }

  if (target) {
    if (psync->full && options.conflict == ConflictPolicy::fail && !resuming) {
      // Before the first write: keys of the target that this import could write.
      if (!refuse_target_conflicts(*options.to, rules, report)) {
        return;
      }
    }
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
          if (state.synced) {
            state.repl_offset = key.position;
          }
        }
        return;
      }
      count_write(key, outcome, report.counts);
      ++state.keys_written;
    });
    if (auto err = keeper.maybe_save(true)) {
      report.error = "cannot save the checkpoint: " + *err;
      return;
    }
  } else {
    handler.use_engine(engine.get(), engine_writer.get());
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
    } else if (clean && state.synced && !handler.applier().in_transaction()) {
      acked_offset = std::max(acked_offset, client->stream().offset());
      state.repl_offset = acked_offset;
    }
    if (auto err = keeper.maybe_save(true); err && report.error.empty()) {
      report.error = "cannot save the checkpoint: " + *err;
    }
    return report.error.empty();
  };

  if (psync->full) {
    bool loaded = pump(*client, handler, report, [&] { return handler.payload_done(); }, {});
    if (!loaded) {
      (void)finish_live(false);
      if (target && !report.blocked.empty() && !resuming) {
        // A key the target cannot take (a field TTL, a module) stops the move: what the sync
        // wrote before it is taken out again, so a refused move leaves the target as it was.
        remove_written(*options.to, handler.names(), report);
      }
      return;
    }
    if (target) {
      auto drained = target->drain();
      if (!drained) {
        report.error = drained.error();
        return;
      }
      if (resuming && options.conflict == ConflictPolicy::fail) {
        // What the earlier attempt wrote and the snapshot no longer has.
        uint64_t removed = 0;
        auto& names = handler.names();
        auto scanned =
            scan_target(*options.to, rules,
                        [&](engine::RespConnection& conn, uint64_t db,
                            std::vector<std::string>& keys) -> engine::Expected<bool, std::string> {
                          auto& kept = names[db];
                          for (const std::string& k : keys) {
                            if (kept.count(k) == 0) {
                              auto r = conn.call({"DEL", k});
                              if (!r || r->is_error()) {
                                return engine::Unexpected{"DEL failed on the target"};
                              }
                              ++removed;
                            }
                          }
                          return true;
                        });
        if (!scanned) {
          report.error = scanned.error();
          return;
        }
        if (removed > 0) {
          report.warnings.push_back(std::to_string(removed) +
                                    " key(s) written by the interrupted attempt were gone from "
                                    "the new snapshot and were removed from the target");
        }
        names.clear();
        handler.track_names(false);
      }
      state.synced = true;
      state.repl_offset = psync->offset;
      acked_offset = psync->offset;
      if (auto err = keeper.maybe_save(true)) {
        report.error = "cannot save the checkpoint: " + *err;
        return;
      }
    }
  } else if (!state.synced) {
    state.synced = true;
  }

  // The command stream.
  auto caught_up_at = probe.master_offset();
  if (!caught_up_at) {
    report.error = caught_up_at.error();
    return;
  }
  uint64_t last_progress_us = 0;
  auto applied = [&] { return target ? acked_offset : client->stream().offset(); };
  acked_offset = std::max(acked_offset, client->stream().offset());
  auto should_stop = [&]() -> bool {
    if (options.stop_requested && options.stop_requested()) {
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
        state.repl_offset = acked_offset;
      }
      if (auto err = keeper.maybe_save(false)) {
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
      options.progress(p);
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
  if (!finish_live(streamed) || !streamed) {
    report.repl_offset = applied();
    return;
  }
  report.repl_offset = applied();
  (void)probe.master_offset();
  report.lag_bytes = probe.lag_bytes(report.repl_offset);
  report.lag_seconds = probe.lag_seconds(report.repl_offset);
  if (!target) {
    engine::RdbWriteOptions write;
    write.version = report.target_rdb_version;
    auto stats = engine::save_rdb(*engine, out.string(), write);
    if (!stats) {
      report.error = "cannot write " + out.string() + ": " + stats.error();
      return;
    }
    report.bytes_sent = stats->bytes;
  }
  report.ok = true;
}

}  // namespace keyshift::migrate::import_detail
