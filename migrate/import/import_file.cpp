#include "engine/persistence/crc64.hpp"
#include "engine/persistence/rdb_format.hpp"
#include "engine/persistence/rdb_writer.hpp"
#include "migrate/import/import_common.hpp"
#include "migrate/import/key_commands.hpp"
#include "migrate/import/live_target.hpp"
#include "migrate/rdb_convert.hpp"

#include <stdlib.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

// File sources: an RDB file checked whole, then written key by key to a live target, or
// rebuilt in the embedded engine and saved as the target's data file.
namespace keyshift::migrate::import_detail {
namespace {

/// Pass one over a file: checks it whole, judges every key and names the keys it would
/// write, so conflicts and blockers are known before the target is touched.
class PrecheckVisitor : public engine::RdbVisitor {
 public:
  PrecheckVisitor(const ImportOptions& options, const KeyRules& rules, ImportReport& report,
                  const RdbFile& file)
      : m_options(options),
        m_rules(rules),
        m_report(report),
        m_file(file),
        m_size(file.map.data().size()) {}

  bool on_key(engine::RdbKey& k) override {
    if (k.offset - m_last_progress > (1u << 20)) {
      m_file.map.drop(m_last_progress, k.offset);
      m_last_progress = k.offset;
      if (m_options.progress) {
        m_options.progress({"check", k.offset, m_size, 0});
      }
    }
    ++m_report.counts.read;
    KeyEffects effects;
    KeyVerdict verdict = apply_key_rules(m_rules, k, m_options.now_ms, effects);
    if (verdict == KeyVerdict::keep) {
      m_names[effects.target_db].push_back(std::move(k.key));
    } else if (count_verdict(verdict, k, m_report)) {
      m_blocked = true;
    }
    return true;
  }

  bool blocked() const { return m_blocked; }
  std::map<uint64_t, std::vector<std::string>>& names() { return m_names; }

 private:
  const ImportOptions& m_options;
  const KeyRules& m_rules;
  ImportReport& m_report;
  const RdbFile& m_file;
  uint64_t m_size;
  uint64_t m_last_progress = 0;
  bool m_blocked = false;
  std::map<uint64_t, std::vector<std::string>> m_names;
};

/// Pass two: every kept key goes to the live target, its value's bytes as the file holds
/// them when the target reads that encoding, rebuilt for the target otherwise.
class RestoreVisitor : public engine::RdbVisitor {
 public:
  RestoreVisitor(const ImportOptions& options, const KeyRules& rules, const RdbFile& file,
                 RestoreTarget& target, CheckpointKeeper& checkpoint, ImportReport& report)
      : m_options(options),
        m_rules(rules),
        m_file(file),
        m_target(target),
        m_checkpoint(checkpoint),
        m_report(report),
        m_writer(target, file.version, file.valkey_numbered,
                 options.conflict == ConflictPolicy::replace || report.resumed, options.now_ms,
                 report),
        m_limits(rdb_target_limits(target.server().rdb)),
        m_replace(options.conflict == ConflictPolicy::replace || report.resumed),
        m_commands(target, command_options(m_replace, m_limits)) {
    m_resume_offset = checkpoint.state().offset;
  }

  // Every value the reader can defer is: its bytes go to the target as they are, or are
  // decoded whole to be re-encoded, or a batch at a time when the key goes as commands.
  bool defer_value(uint8_t) override { return true; }

  const KeyCommands& commands() const { return m_commands; }

  // A function library is loaded as the file holds it (REPLACE: a rerun loads it again); a
  // cluster needs it on every primary, which RESTOREs routed by slot cannot do.
  void on_function(std::string_view code) override {
    if (m_options.dry_run || !m_error.empty()) {
      return;
    }
    if (m_target.cluster_stats() != nullptr) {
      m_report.warnings.push_back(
          "a function library of the file was not loaded into the cluster: load it on every "
          "primary with FUNCTION LOAD");
      return;
    }
    std::string_view argv[] = {"FUNCTION", "LOAD", "REPLACE", code};
    if (auto ok = m_target.send_part(0, "FUNCTION LOAD", argv); !ok) {
      stop(ok.error());
    }
  }

  bool on_key(engine::RdbKey& k) override {
    if (k.offset < m_resume_offset) {
      ++m_report.counts.resumed_past;
      return true;
    }
    if (k.offset - m_last_progress > (1u << 20)) {
      m_file.map.drop(m_last_progress, k.offset);
      m_last_progress = k.offset;
      if (m_options.progress) {
        m_options.progress({"write", k.offset, m_file.map.data().size(), m_report.counts.written});
      }
    }
    ++m_report.counts.read;
    KeyEffects effects;
    Screen screen = screen_key(m_rules, k, m_options.now_ms, m_report, effects);
    if (screen != Screen::keep) {
      return screen == Screen::drop || stop(blocked_error(m_report));
    }
    if (goes_as_commands(k)) {
      return write_commands(k, effects.target_db);
    }
    if (k.deferred && !m_writer.passes_through(k.value.rdb_type)) {
      auto value = engine::decode_rdb_value(k.value.rdb_type, value_bytes(k), {}, k.value_offset);
      if (!value) {
        return stop(m_options.source + ": " + value.error().message + " (at byte " +
                    std::to_string(value.error().offset) + ")");
      }
      k.value = std::move(*value);
      k.deferred = false;
    }
    std::string_view bytes;
    if (k.deferred) {
      bytes = m_file.map.data().substr(k.value_offset, k.value_bytes);
    }
    PendingKey pending;
    pending.db = effects.target_db;
    pending.key = k.key;
    pending.position = k.value_offset + k.value_bytes;
    auto sent = m_writer.write(k, bytes, std::move(pending));
    if (!sent) {
      return stop(sent.error());
    }
    return m_error.empty();
  }

  /// Streams one key as commands: a batch of elements at a time for a deferred value.
  bool write_commands(engine::RdbKey& k, uint64_t db) {
    ++m_report.counts.as_commands;
    if (auto ok = m_commands.begin(db, k.key, k.value.kind); !ok) {
      return stop(ok.error());
    }
    engine::RdbValue batch;
    const engine::RdbStream* stream = &k.value.stream;
    if (k.deferred) {
      engine::RdbReadOptions read;
      read.passed = [this, from = k.value_offset](uint64_t at) mutable {
        m_file.map.drop(from, at);
        from = at;
      };
      engine::RdbElementReader reader(k.value.rdb_type, value_bytes(k), k.value_offset, read);
      if (reader.stream_tail() != nullptr) {
        m_commands.expect_pending(*reader.stream_tail());
      }
      for (;;) {
        auto more = reader.next(batch, k_batch_bytes);
        if (!more) {
          return stop(m_options.source + ": key " + key_ref(k.db, k.key) + ": " +
                      more.error().message + " (at byte " + std::to_string(more.error().offset) +
                      ")");
        }
        if (auto ok = m_commands.add(batch); !ok) {
          return stop(ok.error());
        }
        if (!*more) {
          break;
        }
      }
      stream = &batch.stream;
    } else if (auto ok = m_commands.add(k.value); !ok) {
      return stop(ok.error());
    }
    PendingKey pending;
    pending.db = db;
    pending.key = std::move(k.key);
    pending.position = k.value_offset + k.value_bytes;
    pending.kind = static_cast<uint8_t>(k.value.kind);
    if (auto ok = m_commands.finish(std::move(pending), k.expire_ms, stream); !ok) {
      return stop(ok.error());
    }
    return m_error.empty();
  }

  bool stop(std::string message) {
    if (m_error.empty()) {
      m_error = std::move(message);
    }
    return false;
  }
  const std::string& error() const { return m_error; }

 private:
  static KeyCommandOptions command_options(bool replace, const RdbTargetLimits& limits) {
    KeyCommandOptions o;
    o.replace = replace;
    o.field_ttls = limits.field_ttls;
    return o;
  }

  std::string_view value_bytes(const engine::RdbKey& k) const {
    return m_file.map.data().substr(k.value_offset, k.value_bytes);
  }

  /// Commands for every key with --method commands; otherwise for a big aggregate (a
  /// string or module value always goes whole).
  bool goes_as_commands(const engine::RdbKey& k) const {
    if (m_options.method == ImportMethod::commands) {
      return true;
    }
    return k.value.kind != engine::RdbKind::string && k.value.kind != engine::RdbKind::module &&
           k.value_bytes > m_report.big_key_bytes;
  }

  // Elements decoded at a time from a big value.
  static constexpr size_t k_batch_bytes = size_t{1} << 20;

  const ImportOptions& m_options;
  const KeyRules& m_rules;
  const RdbFile& m_file;
  RestoreTarget& m_target;
  CheckpointKeeper& m_checkpoint;
  ImportReport& m_report;
  LiveKeyWriter m_writer;
  RdbTargetLimits m_limits;
  bool m_replace = false;
  KeyCommands m_commands;
  uint64_t m_resume_offset = 0;
  uint64_t m_last_progress = 0;
  std::string m_error;
};

/// Checks the file's CRC64 trailer a chunk at a time, giving each chunk's pages back.
std::optional<engine::RdbError> verify_checksum(const RdbFile& file) {
  std::string_view data = file.map.data();
  if (file.valkey_numbered ? false : file.version < engine::rdb::k_first_checksum_version) {
    return std::nullopt;
  }
  if (data.size() < 9 + 8) {
    return std::nullopt;  // too short to hold one: the reader names what is missing
  }
  size_t body = data.size() - 8;
  uint64_t stored = 0;
  for (int i = 7; i >= 0; --i) {
    stored = stored << 8 | static_cast<uint8_t>(data[body + static_cast<size_t>(i)]);
  }
  if (stored == 0) {
    return std::nullopt;  // written with rdbchecksum no
  }
  constexpr size_t k_chunk = 4u << 20;
  uint64_t crc = 0;
  for (size_t at = 0; at < body; at += k_chunk) {
    size_t n = std::min(k_chunk, body - at);
    crc = engine::crc64(crc, data.substr(at, n));
    file.map.drop(at, at + n);
  }
  if (crc == stored) {
    return std::nullopt;
  }
  char text[96];
  std::snprintf(text, sizeof text, "wrong CRC64 checksum: stored %016llx, computed %016llx",
                static_cast<unsigned long long>(stored), static_cast<unsigned long long>(crc));
  return engine::RdbError{body, text};
}

}  // namespace

/// Lists (up to k_listed_keys) the keys already in the target; false when any is.
bool check_conflicts(RestoreTarget& target, std::map<uint64_t, std::vector<std::string>>& names,
                     ImportReport& report) {
  uint64_t conflicts = 0;
  for (auto& [db, keys] : names) {
    auto found = target.existing(db, keys);
    if (!found) {
      report.error = found.error();
      return false;
    }
    conflicts += found->size();
    for (const std::string& key : *found) {
      if (report.blocked.size() < k_listed_keys) {
        report.blocked.push_back(key_ref(db, key));
      }
    }
  }
  if (conflicts > 0) {
    report.blocked_reason = std::to_string(conflicts) +
                            " key(s) already exist in the target (use --conflict skip or "
                            "replace to go on)";
    report.error = "cannot import: " + report.blocked_reason;
    return false;
  }
  return true;
}

LiveTarget::AckFn count_acks(ImportReport& report, CheckpointKeeper& keeper,
                             std::optional<std::string>& save_error) {
  return [&report, &keeper, &save_error](const PendingKey& key, WriteOutcome outcome) {
    count_write(key, outcome, report.counts);
    keeper.state().offset = key.position;
    ++keeper.state().keys_written;
    if (!save_error) {
      save_error = keeper.maybe_save(false);
    }
  };
}

void import_file_to_live(const ImportOptions& options, KeyRules rules, const RdbFile& file,
                         ImportReport& report) {
  engine::RdbReadOptions check;
  check.materialize = false;
  check.skip_modules = true;
  // One thread, so the pages the check has passed can be given back behind it: a second
  // checking thread would fault them in again.
  check.parallel_check_min_bytes = SIZE_MAX;
  // The checksum too is computed here, a chunk at a time, for the same reason.
  check.verify_checksum = false;
  // A big stream is checked a node at a time, not decoded whole.
  check.keep_streams = false;
  // And inside a big value, the pages it has passed.
  uint64_t dropped_to = 0;
  check.passed = [&file, &dropped_to](uint64_t at) {
    file.map.drop(std::min(dropped_to, at), at);
    dropped_to = at;
  };
  ImportCheckpoint start;
  start.source = options.source;
  start.kind = "file";
  start.source_size = file.map.data().size();
  start.source_mtime_us = file.mtime_us;
  auto target = open_live_target(options, rules, report);
  if (!target) {
    return;
  }
  start.target = report.target;

  CheckpointKeeper keeper(options.checkpoint, start);
  if (!take_checkpoint(options, keeper, report)) {
    return;
  }
  // Any checkpoint means an earlier run may have written keys past it: those are ours to
  // overwrite, and the conflict check already passed then.
  const bool resuming = report.resumed;

  if (options.precheck) {
    if (auto bad = verify_checksum(file)) {
      report.error = options.source + ": " + bad->message;
      report.error_offset = bad->offset;
      return;
    }
    PrecheckVisitor precheck(options, rules, report, file);
    auto summary = engine::read_rdb(file.map.data(), precheck, check);
    if (!summary) {
      report.error = options.source + ": " + summary.error().message;
      report.error_offset = summary.error().offset;
      return;
    }
    file.map.drop(0, file.map.data().size());
    if (precheck.blocked()) {
      report.error = "cannot import: " + report.blocked_reason;
      return;
    }
    std::map<uint64_t, uint64_t> per_db;
    for (auto& [db, keys] : precheck.names()) {
      per_db[db] = keys.size();
    }
    if (!check_target_dbs(*target, per_db, report)) {
      return;
    }
    if (options.conflict == ConflictPolicy::fail && !resuming &&
        !check_conflicts(*target, precheck.names(), report)) {
      return;
    }
    if (options.dry_run) {
      // The precheck counted every verdict already: what it kept is what would be written.
      for (auto& [db, keys] : precheck.names()) {
        report.counts.written += keys.size();
      }
      report.ok = true;
      return;
    }
    report.counts = ImportCounts{};
    report.blocked.clear();
  } else if (options.dry_run) {
    report.error = "--dry-run needs the precheck (drop --no-precheck)";
    return;
  }

  // Written before the first key, so a run killed before any acknowledgement is still
  // known to have started.
  if (auto err = keeper.maybe_save(true)) {
    report.error = "cannot save the checkpoint: " + *err;
    return;
  }
  target->skip_conflicts(options.conflict == ConflictPolicy::skip);
  std::optional<std::string> save_error;
  target->on_ack(count_acks(report, keeper, save_error));
  RestoreVisitor writer(options, rules, file, *target, keeper, report);
  engine::RdbReadOptions read;
  read.skip_modules = true;
  read.verify_checksum = !options.precheck;  // the precheck verified it
  dropped_to = 0;
  read.passed = check.passed;
  read.keep_streams = false;  // streams are deferred too: read a batch at a time when big
  auto summary = engine::read_rdb(file.map.data(), writer, read);
  if (!summary && writer.error().empty()) {
    report.error = options.source + ": " + summary.error().message;
    report.error_offset = summary.error().offset;
  }
  auto drained = target->drain();
  report.bytes_sent = target->bytes_sent();
  note_cluster_stats(*target, report);
  report.counts.chunked = writer.commands().chunked_keys();
  report.counts.commands = writer.commands().commands();
  if (!writer.error().empty()) {
    report.error = writer.error();
  } else if (!drained) {
    report.error = drained.error();
  } else if (save_error) {
    report.error = "cannot save the checkpoint: " + *save_error;
  }
  if (!report.error.empty()) {
    (void)keeper.maybe_save(true);  // what was acknowledged stays acknowledged
    return;
  }
  keeper.state().complete = true;
  keeper.state().offset = file.map.data().size();
  if (auto err = keeper.maybe_save(true)) {
    report.error = "cannot save the checkpoint: " + *err;
    return;
  }
  report.ok = true;
}

void import_file_to_embedded(const ImportOptions& options, const KeyRules& rules,
                             const RdbFile& file, ImportReport& report) {
  RdbTargetLimits limits = rdb_target_limits(options.target);
  std::filesystem::path out = std::filesystem::path(options.dir) / options.dbfilename;
  std::string dry_dir;
  if (options.dry_run) {
    char tmpl[] = "/tmp/keyshift-import-dry-run-XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) {
      report.error = "cannot make a temporary directory for --dry-run";
      return;
    }
    dry_dir = tmpl;
    out = std::filesystem::path(dry_dir) / options.dbfilename;
  }
  report.target = out.string();
  report.target_server = std::string(limits.name);
  report.target_rdb_version = limits.max_rdb_version;
  RdbConvertOptions convert;
  convert.rdb_version = limits.max_rdb_version;
  convert.rules = rules;
  convert.now_ms = options.now_ms;
  if (options.progress) {
    convert.progress = [&options](uint64_t offset, uint64_t size) {
      options.progress({"write", offset, size, 0});
    };
  }
  RdbConvertReport r = convert_rdb(file.map.data(), out.string(), convert);
  if (!dry_dir.empty()) {
    std::error_code ignored;
    std::filesystem::remove_all(dry_dir, ignored);
    report.target = (std::filesystem::path(options.dir) / options.dbfilename).string();
  }
  ImportCounts& c = report.counts;
  c.read = r.keys_read;
  c.written = r.keys_written;
  c.filtered = r.filtered.count;
  c.expired = r.expired.count;
  c.modules_dropped = r.modules_dropped.count;
  c.renamed = r.renamed.count;
  c.moved = r.moved.count;
  c.field_ttls_dropped = r.fields_ttl_dropped;
  c.fields_dropped = r.fields_removed;
  c.hashes_emptied = r.hashes_emptied.count;
  report.bytes_sent = r.bytes_written;
  if (!r.ok) {
    // convert_rdb reads bytes, not a path: its read errors are named here.
    report.error = r.error_offset ? options.source + ": " + r.error : r.error;
    report.error_offset = r.error_offset;
    for (const RdbChange* blocked :
         {&r.blocked_field_ttls, &r.blocked_modules, &r.blocked_path_hashes}) {
      for (const RdbKeyRef& k : blocked->keys) {
        if (report.blocked.size() < k_listed_keys) {
          report.blocked.push_back(key_ref(k.db, k.key));
        }
      }
    }
    return;
  }
  report.ok = true;
}

}  // namespace keyshift::migrate::import_detail
