#include "engine/commands/registry.hpp"
#include "engine/persistence/aof_reader.hpp"
#include "engine/persistence/rdb_writer.hpp"
#include "migrate/import/cluster_stream.hpp"
#include "migrate/import/cluster_target.hpp"
#include "migrate/import/command_stream.hpp"
#include "migrate/import/import_common.hpp"
#include "migrate/import/live_target.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <memory>

// Command files as sources: an append-only file (a single file, RESP commands after an
// optional RDB preamble, or Redis 7's / Valkey's multi-part directory through its manifest)
// and a plain RESP command file (`rdb dump --format resp`, redis-dump-go, what people feed
// `redis-cli --pipe`). The engine's AOF reader yields the preamble's keys and then every
// command with its file and byte offset; keys go through the same key writers as RDB files,
// commands through the CommandStreamApplier replication uses. One position orders both: the
// byte offset across all the files read, so one checkpoint offset (and the target's marker,
// written in the same MULTI/EXEC as each batch of commands) says what a rerun skips.
namespace keyshift::migrate::import_detail {
namespace {

/// What identifies the source between runs: its bytes and newest modification time (a
/// directory's files summed; the manifest changes when Valkey rewrites the AOF).
struct SourceIdentity {
  uint64_t size = 0;
  int64_t mtime_us = 0;
};

int64_t mtime_us_of(const struct stat& st) {
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000 + st.st_mtim.tv_nsec / 1000;
}

engine::Expected<SourceIdentity, std::string> identify(const std::string& path) {
  SourceIdentity id;
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    for (const auto& entry : std::filesystem::directory_iterator(path, ec)) {
      struct stat st {};
      if (entry.is_regular_file() && ::stat(entry.path().c_str(), &st) == 0) {
        id.size += static_cast<uint64_t>(st.st_size);
        id.mtime_us = std::max(id.mtime_us, mtime_us_of(st));
      }
    }
    if (ec) {
      return engine::Unexpected{path + ": " + ec.message()};
    }
    return id;
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return engine::Unexpected{path + ": " + std::strerror(errno)};
  }
  id.size = static_cast<uint64_t>(st.st_size);
  id.mtime_us = mtime_us_of(st);
  return id;
}

/// The RDB version of a preamble's magic, or 0.
int preamble_version(std::string_view bytes, bool& valkey_numbered) {
  std::string_view head = bytes.substr(0, 9);
  int version = 0;
  auto digits = [&](std::string_view d) {
    auto r = std::from_chars(d.data(), d.data() + d.size(), version);
    return r.ec == std::errc() && r.ptr == d.data() + d.size();
  };
  valkey_numbered = head.size() == 9 && head.starts_with("VALKEY") && digits(head.substr(6));
  if (valkey_numbered) {
    return version;
  }
  return head.size() == 9 && head.starts_with("REDIS") && digits(head.substr(5)) ? version : 0;
}

/// Takes the commands of a check pass: nothing is written.
class CountingWriter final : public StreamWriter {
 public:
  engine::Expected<bool, std::string> command(uint64_t, std::span<const std::string_view>,
                                              uint64_t) override {
    return true;
  }
  engine::Expected<bool, std::string> begin_transaction() override { return true; }
  engine::Expected<bool, std::string> end_transaction(uint64_t) override { return true; }
};

/// Reads the AOF once: the preamble's keys to a key writer (or only judged, in the check
/// pass), the commands through the applier. Positions are byte offsets across every file
/// read, plus one, so that position 0 means "nothing yet".
class AofImporter final : public engine::AofVisitor, public engine::RdbVisitor {
 public:
  AofImporter(const ImportOptions& options, const KeyRules& rules, ImportReport& report,
              StreamWriter& stream, const engine::CommandRegistry& registry, bool check_only)
      : m_options(options),
        m_rules(rules),
        m_report(report),
        m_applier(rules, registry, stream),
        m_check_only(check_only) {}

  void use_live(RestoreTarget* target, bool replace) {
    m_live = target;
    m_replace = replace;
  }
  void use_engine(EngineKeyWriter* writer) { m_engine_writer = writer; }
  /// Keys and commands at positions up to `position` are in the target already.
  void resume_after(uint64_t position) { m_resume = position; }
  /// Target databases and the key names the check pass kept (the conflict check).
  std::map<uint64_t, std::vector<std::string>>& names() { return m_names; }
  uint64_t total() const { return m_total; }
  void set_total(uint64_t total) { m_total = total; }

  void on_file(const engine::AofFileInfo& file) override {
    m_file_base = m_next_base;
    m_next_base += file.size;
    m_file = &file;
  }

  engine::Expected<uint64_t, engine::RdbError> on_rdb_preamble(
      std::string_view bytes, const engine::AofFileInfo& file) override {
    m_preamble = bytes;
    bool valkey_numbered = false;
    int version = preamble_version(bytes, valkey_numbered);
    if (m_live != nullptr && !m_check_only) {
      m_live_writer = std::make_unique<LiveKeyWriter>(*m_live, version, valkey_numbered, m_replace,
                                                      m_options.now_ms, m_report);
    }
    engine::RdbReadOptions read;
    read.skip_modules = true;
    read.materialize = !m_check_only;
    auto summary = engine::read_rdb(bytes, *this, read);
    m_preamble = {};
    (void)file;
    if (!summary) {
      return engine::Unexpected{summary.error()};
    }
    return summary->end_offset;
  }
  engine::RdbVisitor* rdb_visitor() override { return this; }

  bool defer_value(uint8_t type) override {
    return m_live_writer != nullptr && m_live_writer->passes_through(type);
  }

  void on_function(std::string_view code) override {
    if (m_check_only) {
      return;
    }
    std::string_view argv[] = {"FUNCTION", "LOAD", "REPLACE", code};
    if (auto ok = m_applier.apply(argv, 0); !ok) {
      fail(ok.error());
    }
  }

  bool on_key(engine::RdbKey& k) override {
    uint64_t position = m_file_base + k.offset + 1;
    if (position <= m_resume) {
      ++m_report.counts.resumed_past;
      return true;
    }
    ++m_report.counts.read;
    KeyEffects effects;
    Screen screen = screen_key(m_rules, k, m_options.now_ms, m_report, effects);
    if (screen != Screen::keep) {
      return screen == Screen::drop || fail(blocked_error(m_report));
    }
    if (m_check_only) {
      m_names[effects.target_db].push_back(k.key);
      return true;
    }
    if (m_live_writer) {
      std::string_view bytes;
      if (k.deferred) {
        bytes = m_preamble.substr(k.value_offset, k.value_bytes);
      }
      PendingKey pending;
      pending.db = effects.target_db;
      pending.key = k.key;
      pending.position = position;
      if (auto sent = m_live_writer->write(k, bytes, std::move(pending)); !sent) {
        return fail(sent.error());
      }
      return true;
    }
    if (auto added = m_engine_writer->write(effects.target_db, k, true); !added) {
      return fail(added.error());
    }
    return true;
  }

  bool on_command(const engine::AofCommand& c) override {
    uint64_t position = m_file_base + c.offset + 1;
    if (position <= m_resume) {
      return true;
    }
    auto applied = m_applier.apply(c.argv, position);
    if (!applied) {
      return fail(c.file->path + ": byte " + std::to_string(c.offset) + ": " + applied.error());
    }
    if (m_options.progress && position - m_last_progress >= (1u << 20)) {
      m_last_progress = position;
      m_options.progress(
          {m_check_only ? "check" : "write", position, m_total, m_report.counts.written});
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
  const CommandStreamApplier& applier() const { return m_applier; }

 private:
  const ImportOptions& m_options;
  const KeyRules& m_rules;
  ImportReport& m_report;
  CommandStreamApplier m_applier;
  bool m_check_only;
  RestoreTarget* m_live = nullptr;
  bool m_replace = false;
  std::unique_ptr<LiveKeyWriter> m_live_writer;
  EngineKeyWriter* m_engine_writer = nullptr;
  const engine::AofFileInfo* m_file = nullptr;
  std::string_view m_preamble;
  uint64_t m_file_base = 0;
  uint64_t m_next_base = 0;
  uint64_t m_resume = 0;
  uint64_t m_total = 0;
  uint64_t m_last_progress = 0;
  std::map<uint64_t, std::vector<std::string>> m_names;
  std::string m_error;
};

/// Reads the whole source through `importer`; false with report.error (and the offset of
/// the damage) set when it could not.
bool read_source(const ImportOptions& options, AofImporter& importer, ImportReport& report) {
  engine::AofReadOptions read;
  // A command cut off at the end is a damaged source here, not a crash to recover from:
  // importing what precedes it would look like success.
  read.allow_truncated = false;
  std::error_code ec;
  if (!std::filesystem::is_directory(options.source, ec) && options.source.ends_with(".manifest")) {
    read.appendfilename =
        std::filesystem::path(options.source)
            .filename()
            .string()
            .substr(0, std::filesystem::path(options.source).filename().string().size() - 9);
  }
  auto summary = engine::read_aof(options.source, importer, read);
  if (!importer.error().empty()) {
    report.error = importer.error();
    return false;
  }
  if (!summary) {
    report.error = summary.error().describe();
    if (summary.error().line == 0) {
      report.error_offset = summary.error().offset;
    }
    return false;
  }
  if (importer.applier().in_transaction()) {
    report.error = options.source + ": ends inside MULTI (no EXEC)";
    return false;
  }
  return true;
}

void copy_stream_counts(const AofImporter& importer, ImportReport& report) {
  const CommandStreamCounts& counts = importer.applier().counts();
  report.commands_applied = counts.applied;
  report.commands_filtered = counts.filtered;
  report.transactions = counts.transactions;
}

}  // namespace

void import_aof(const ImportOptions& options, KeyRules rules, ImportReport& report) {
  std::error_code ec;
  std::string name = std::filesystem::path(options.source).filename().string();
  report.source_kind = std::filesystem::is_directory(options.source, ec) ||
                               name.ends_with(".manifest") || name.ends_with(".aof") ||
                               name.find(".aof.") != std::string::npos
                           ? "aof"
                           : "resp";
  if (auto why = CommandStreamApplier::unsupported_rules(rules)) {
    report.error = *why;
    return;
  }
  auto identity = identify(options.source);
  if (!identity) {
    report.error = identity.error();
    return;
  }
  engine::CommandRegistry registry;
  engine::register_all_families(registry);

  std::unique_ptr<RestoreTarget> target_holder;
  RestoreTarget* target = nullptr;
  RdbTargetLimits limits = rdb_target_limits(options.target);
  if (options.to) {
    target_holder = open_live_target(options, rules, report);
    target = target_holder.get();
    if (target == nullptr) {
      return;
    }
  } else {
    rules.target_field_ttls = limits.field_ttls;
    report.target = (std::filesystem::path(options.dir) / options.dbfilename).string();
    report.target_server = std::string(limits.name);
    report.target_rdb_version = limits.max_rdb_version;
  }

  // The check pass: the whole source read before anything is written (a damaged file is
  // refused with its offset and the target untouched), the keys it would write listed.
  CountingWriter counting;
  AofImporter check(options, rules, report, counting, registry, true);
  check.set_total(identity->size);
  if (options.precheck) {
    if (!read_source(options, check, report)) {
      return;
    }
    if (options.dry_run) {
      for (auto& [db, keys] : check.names()) {
        report.counts.written += keys.size();
      }
      copy_stream_counts(check, report);
      report.ok = true;
      return;
    }
  } else if (options.dry_run) {
    report.error = "--dry-run needs the precheck (drop --no-precheck)";
    return;
  }

  if (!options.to) {
    // The embedded target: a fresh engine saved once at the end, so it needs no checkpoint.
    report.counts = ImportCounts{};
    report.blocked.clear();
    engine::EngineConfig config;
    int databases = 16;
    for (const auto& [from, to] : rules.db_map) {
      databases = std::max<int>(databases, static_cast<int>(std::min<uint64_t>(to, 1 << 20)) + 1);
    }
    config.databases = databases;
    // Keys expire by the source's own PEXPIREATs and DELs against the import's clock.
    engine::ManualClock clock(options.now_ms);
    engine::Engine engine(config, clock);
    EngineKeyWriter key_writer(engine, report, options.now_ms);
    EngineStreamWriter stream(engine);
    AofImporter importer(options, rules, report, stream, registry, false);
    importer.use_engine(&key_writer);
    importer.set_total(identity->size);
    if (!read_source(options, importer, report)) {
      return;
    }
    copy_stream_counts(importer, report);
    uint64_t keys = 0;
    for (int db = 0; db < config.databases; ++db) {
      keys += engine.db(db).size();
    }
    report.counts.written = keys;
    engine::RdbWriteOptions write;
    write.version = report.target_rdb_version;
    auto stats = engine::save_rdb(engine, report.target, write);
    if (!stats) {
      report.error = "cannot write " + report.target + ": " + stats.error();
      return;
    }
    report.bytes_sent = stats->bytes;
    report.ok = true;
    return;
  }

  ImportCheckpoint start;
  start.source = options.source;
  start.kind = "aof";
  start.source_size = identity->size;
  start.source_mtime_us = identity->mtime_us;
  start.target = report.target;
  CheckpointKeeper keeper(options.checkpoint, start);
  if (!take_checkpoint(options, keeper, report)) {
    return;
  }
  const bool resuming = report.resumed;
  const std::string marker_id =
      "aof " + std::to_string(identity->size) + " " + std::to_string(identity->mtime_us);
  uint64_t resume = keeper.state().offset;
  // One server takes the commands in batches under one marker; a cluster slot by slot,
  // each slot under its own (ClusterStreamWriter).
  std::unique_ptr<MarkedStreamWriter> stream_holder;
  auto* single = dynamic_cast<LiveTarget*>(target);
  if (single != nullptr) {
    stream_holder = std::make_unique<LiveStreamWriter>(*single, marker_id);
  } else {
    auto writer = std::make_unique<ClusterStreamWriter>(
        *static_cast<ClusterTarget*>(target), registry, marker_id,
        std::string(LiveStreamWriter::k_marker_key));
    if (resuming) {
      // Past the checkpoint, each slot's marker says which of its commands are in.
      if (auto loaded = writer->load_markers(marker_id); !loaded) {
        report.error = loaded.error();
        return;
      }
    }
    stream_holder = std::move(writer);
  }
  if (resuming && single != nullptr) {
    // The target's marker, written in the same MULTI/EXEC as each batch, may be past the
    // checkpoint file (killed between an EXEC and the next save): it is the truth.
    auto marker = LiveStreamWriter::read_marker(*options.to);
    if (marker && marker->first == marker_id) {
      resume = std::max(resume, marker->second);
    }
  }
  if (options.precheck) {
    std::map<uint64_t, uint64_t> per_db;
    for (auto& [db, keys] : check.names()) {
      per_db[db] = keys.size();
    }
    if (!check_target_dbs(*target, per_db, report)) {
      return;
    }
    if (options.conflict == ConflictPolicy::fail && !resuming) {
      // Commands write keys the check pass cannot list: any key the rules could write
      // that the target holds already is a conflict, as for a replication import.
      if (!refuse_target_conflicts(*options.to, rules, report)) {
        return;
      }
    }
  }
  report.counts = ImportCounts{};
  report.blocked.clear();
  report.commands_applied = 0;

  if (auto err = keeper.maybe_save(true)) {
    report.error = "cannot save the checkpoint: " + *err;
    return;
  }
  MarkedStreamWriter& stream = *stream_holder;
  AofImporter importer(options, rules, report, stream, registry, false);
  importer.use_live(target, options.conflict == ConflictPolicy::replace || resuming);
  importer.resume_after(resume);
  importer.set_total(identity->size);
  ImportCheckpoint& state = keeper.state();
  state.offset = resume;
  std::optional<std::string> save_error;
  target->skip_conflicts(options.conflict == ConflictPolicy::skip);
  target->on_ack([&](const PendingKey& key, WriteOutcome outcome) {
    if (!key.command) {
      count_write(key, outcome, report.counts);
      ++state.keys_written;
    }
    if (key.position > 0) {
      state.offset = key.position;
    }
    if (!save_error) {
      save_error = keeper.maybe_save(false);
    }
  });
  bool read = read_source(options, importer, report);
  copy_stream_counts(importer, report);
  if (read) {
    if (auto ok = stream.flush(); !ok) {
      report.error = ok.error();
      read = false;
    }
  }
  auto drained = target->drain();
  report.bytes_sent = target->bytes_sent();
  if (read && !drained) {
    report.error = drained.error();
  } else if (read && save_error) {
    report.error = "cannot save the checkpoint: " + *save_error;
  }
  if (!read || !report.error.empty()) {
    (void)keeper.maybe_save(true);  // what was acknowledged stays acknowledged
    return;
  }
  // Every command is acknowledged: the checkpoint says so before the marker goes, so a run
  // killed in between still skips them all.
  state.offset = identity->size + 1;
  if (auto err = keeper.maybe_save(true)) {
    report.error = "cannot save the checkpoint: " + *err;
    return;
  }
  if (auto ok = stream.clear_marker(); !ok) {
    report.error = ok.error();
    return;
  }
  if (auto ok = target->drain(); !ok) {
    report.error = ok.error();
    return;
  }
  state.complete = true;
  if (auto err = keeper.maybe_save(true)) {
    report.error = "cannot save the checkpoint: " + *err;
    return;
  }
  report.ok = true;
}

}  // namespace keyshift::migrate::import_detail
