#include "compat/dump/jsonl_reader.hpp"
#include "migrate/import/import_common.hpp"
#include "migrate/import/key_commands.hpp"
#include "migrate/import/live_target.hpp"
#include "migrate/rdb_convert.hpp"

#include <stdlib.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

// JSON Lines sources (what `keyshift rdb dump --format json` writes): checked whole first
// (a damaged line is refused with its number before anything is written), then each kept
// key goes to a live target as a RESTORE payload built for it, or as commands; the
// checkpoint is the byte offset after the last acknowledged line.
namespace keyshift::migrate::import_detail {
namespace {

/// The offset just past the line that starts at `at`.
uint64_t line_end(std::string_view text, uint64_t at) {
  size_t end = text.find('\n', at);
  return end == std::string_view::npos ? text.size() : end + 1;
}

void import_jsonl_to_live(const ImportOptions& options, KeyRules rules,
                          const engine::MappedFile& file, int64_t mtime_us, ImportReport& report) {
  std::string_view text = file.data();
  ImportCheckpoint start;
  start.source = options.source;
  start.kind = "jsonl";
  start.source_size = text.size();
  start.source_mtime_us = mtime_us;
  auto target = open_live_target(options, rules, report);
  if (!target) {
    return;
  }
  start.target = report.target;
  CheckpointKeeper keeper(options.checkpoint, start);
  if (!take_checkpoint(options, keeper, report)) {
    return;
  }
  const bool resuming = report.resumed;
  const uint64_t resume_offset = keeper.state().offset;

  if (options.precheck) {
    std::map<uint64_t, std::vector<std::string>> names;
    bool blocked = false;
    auto checked = compat::read_dump_lines(
        text, [&](engine::RdbKey& k) -> engine::Expected<bool, std::string> {
          ++report.counts.read;
          KeyEffects effects;
          KeyVerdict verdict = apply_key_rules(rules, k, options.now_ms, effects);
          if (verdict == KeyVerdict::keep) {
            names[effects.target_db].push_back(std::move(k.key));
          } else if (count_verdict(verdict, k, report)) {
            blocked = true;
          }
          return true;
        });
    if (!checked) {
      report.error = options.source + ": " + checked.error();
      return;
    }
    file.drop(0, text.size());
    if (blocked) {
      report.error = "cannot import: " + report.blocked_reason;
      return;
    }
    if (options.conflict == ConflictPolicy::fail && !resuming &&
        !check_conflicts(*target, names, report)) {
      return;
    }
    if (options.dry_run) {
      for (auto& [db, keys] : names) {
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

  if (auto err = keeper.maybe_save(true)) {
    report.error = "cannot save the checkpoint: " + *err;
    return;
  }
  target->skip_conflicts(options.conflict == ConflictPolicy::skip);
  std::optional<std::string> save_error;
  target->on_ack(count_acks(report, keeper, save_error));
  RdbTargetLimits limits = rdb_target_limits(target->server().rdb);
  const bool replace = options.conflict == ConflictPolicy::replace || resuming;
  KeyCommandOptions command_options;
  command_options.replace = replace;
  command_options.field_ttls = limits.field_ttls;
  KeyCommands commands(*target, command_options);
  Reencoder reencoder(options.now_ms);
  uint64_t last_drop = 0;
  std::string error;
  auto written =
      compat::read_dump_lines(text, [&](engine::RdbKey& k) -> engine::Expected<bool, std::string> {
        if (k.offset < resume_offset) {
          ++report.counts.resumed_past;
          return true;
        }
        if (k.offset - last_drop > (4u << 20)) {
          file.drop(last_drop, k.offset);
          last_drop = k.offset;
          if (options.progress) {
            options.progress({"write", k.offset, text.size(), report.counts.written});
          }
        }
        ++report.counts.read;
        KeyEffects effects;
        Screen screen = screen_key(rules, k, options.now_ms, report, effects);
        if (screen == Screen::block) {
          return engine::Unexpected{blocked_error(report)};
        }
        if (screen == Screen::drop) {
          return true;
        }
        PendingKey pending;
        pending.db = effects.target_db;
        pending.position = line_end(text, k.offset);
        pending.kind = static_cast<uint8_t>(k.value.kind);
        // A big key's payload would be about its line's size: it goes in chunks instead.
        if (options.method == ImportMethod::commands ||
            (k.value.kind != engine::RdbKind::string &&
             pending.position - k.offset > report.big_key_bytes)) {
          ++report.counts.as_commands;
          pending.key = k.key;
          engine::Expected<bool, std::string> ok =
              commands.begin(effects.target_db, k.key, k.value.kind);
          if (ok) {
            ok = commands.add(k.value);
          }
          if (ok) {
            ok = commands.finish(std::move(pending), k.expire_ms, &k.value.stream);
          }
          if (!ok) {
            error = ok.error();
            return engine::Unexpected{ok.error()};
          }
          return true;
        }
        std::string key = k.key;
        auto payload = reencoder.payload(std::move(k.value), limits.max_rdb_version);
        if (!payload) {
          if (payload.error().rfind("empty", 0) == 0) {
            ++report.counts.expired;  // every field's TTL had passed
            return true;
          }
          error = "key " + key_ref(k.db, key) + ": " + payload.error();
          return engine::Unexpected{error};
        }
        ++report.counts.reencoded;
        pending.key = std::move(key);
        auto sent = target->restore(std::move(pending), k.expire_ms, *payload, replace, -1, -1);
        if (!sent) {
          error = sent.error();
          return engine::Unexpected{sent.error()};
        }
        return true;
      });
  auto drained = target->drain();
  report.bytes_sent = target->bytes_sent();
  report.counts.chunked = commands.chunked_keys();
  report.counts.commands = commands.commands();
  if (!error.empty()) {
    report.error = error;
  } else if (!written) {
    report.error = options.source + ": " + written.error();
  } else if (!drained) {
    report.error = drained.error();
  } else if (save_error) {
    report.error = "cannot save the checkpoint: " + *save_error;
  }
  if (!report.error.empty()) {
    (void)keeper.maybe_save(true);
    return;
  }
  keeper.state().complete = true;
  keeper.state().offset = text.size();
  if (auto err = keeper.maybe_save(true)) {
    report.error = "cannot save the checkpoint: " + *err;
    return;
  }
  report.ok = true;
}

void import_jsonl_to_embedded(const ImportOptions& options, const KeyRules& rules,
                              const engine::MappedFile& file, ImportReport& report) {
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
  report.target = (std::filesystem::path(options.dir) / options.dbfilename).string();
  report.target_server = std::string(limits.name);
  report.target_rdb_version = limits.max_rdb_version;
  RdbConvertOptions convert;
  convert.rdb_version = limits.max_rdb_version;
  convert.rules = rules;
  convert.now_ms = options.now_ms;
  RdbConvertReport r = convert_dump_lines(file.data(), out.string(), convert);
  if (!dry_dir.empty()) {
    std::error_code ignored;
    std::filesystem::remove_all(dry_dir, ignored);
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
    report.error = options.source + ": " + r.error;
    return;
  }
  report.ok = true;
}

}  // namespace

bool is_jsonl_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in.is_open()) {
    return false;  // the RDB path names the file and why it cannot be read
  }
  char head[256];
  in.read(head, sizeof head);
  std::string_view text(head, static_cast<size_t>(in.gcount()));
  size_t at = text.find_first_not_of(" \t\r\n");
  // Nothing at all is the dump of an empty dataset (an RDB file is never empty).
  return at == std::string_view::npos || text[at] == '{';
}

void import_jsonl(const ImportOptions& options, ImportReport& report) {
  auto map = engine::MappedFile::open(options.source, engine::MappedFile::Access::streaming);
  if (!map) {
    report.error = map.error().message();
    return;
  }
  struct stat st {};
  if (::stat(options.source.c_str(), &st) != 0) {
    report.error = options.source + ": " + std::strerror(errno);
    return;
  }
  int64_t mtime_us =
      static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000 + st.st_mtim.tv_nsec / 1000;
  if (options.to) {
    import_jsonl_to_live(options, options.rules, *map, mtime_us, report);
  } else {
    import_jsonl_to_embedded(options, options.rules, *map, report);
  }
}

}  // namespace keyshift::migrate::import_detail
