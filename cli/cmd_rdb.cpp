// keyshift rdb check|inspect FILE: validate an RDB file and say what it holds and where it
// can go. The analysis lives in migrate/rdb_inspect; this file only maps flags and the file.
#include "cli/key_rule_flags.hpp"
#include "cli/subcommands.hpp"
#include "cli/user_error.hpp"
#include "compat/report/progress.hpp"
#include "engine/util/mapped_file.hpp"
#include "engine/util/memory.hpp"
#include "migrate/rdb_convert.hpp"
#include "migrate/rdb_dump.hpp"
#include "migrate/rdb_inspect.hpp"

#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace keyshift::cli {
namespace {

/// Files above this size show a progress line on a terminal.
constexpr uint64_t k_progress_min_bytes = 8ULL << 20;

struct RdbOptions {
  std::string file;
  bool progress = false;
  std::string format = "text";
  std::string target;
  std::string delimiter = ":";
  size_t top = 10;
  bool skip_modules = false;
};

/// A progress meter on stderr for reading `file` of `size` bytes: when asked (--progress), or
/// when stderr is a terminal and the file is large; otherwise none.
std::unique_ptr<compat::ProgressMeter> progress_meter(const std::string& file, uint64_t size,
                                                      bool forced) {
  if (!forced && (size <= k_progress_min_bytes || ::isatty(STDERR_FILENO) != 1)) {
    return nullptr;
  }
  auto start = std::chrono::steady_clock::now();
  return std::make_unique<compat::ProgressMeter>(
      file, size,
      [](std::string_view line) {
        std::fwrite(line.data(), 1, line.size(), stderr);
        std::fflush(stderr);
      },
      [start] {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      });
}

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

/// Prints the failure in the chosen format and leaves through main with exit status 1.
[[noreturn]] void fail(const RdbOptions& opts, std::optional<uint64_t> offset,
                       const std::string& message) {
  if (opts.format == "json") {
    std::fputs(migrate::render_rdb_error_json(opts.file, offset, message).c_str(), stdout);
    std::fflush(stdout);
  }
  if (offset) {
    throw UserError(fmt::format("keyshift: {}: error at byte {}: {}", opts.file, *offset, message),
                    1);
  }
  throw UserError(fmt::format("keyshift: {}: {}", opts.file, message), 1);
}

/// `path` mapped; a file that cannot be read leaves through fail().
engine::MappedFile map_or_fail(const RdbOptions& opts, const std::string& path) {
  auto mapped = engine::MappedFile::open(path);
  if (!mapped) {
    fail(opts, std::nullopt, "cannot read the file: " + mapped.error().reason());
  }
  return std::move(*mapped);
}

void run_rdb(const RdbOptions& opts, migrate::RdbReportDetail detail) {
  engine::MappedFile mapped = map_or_fail(opts, opts.file);
  std::string_view bytes = mapped.data();
  migrate::RdbInspectOptions options;
  options.now_ms = now_ms();
  options.delimiter = opts.delimiter;
  options.top_keys = opts.top;
  options.skip_modules = opts.skip_modules;
  if (!opts.target.empty()) {
    options.target = migrate::parse_rdb_target(opts.target);
  }
  auto meter = progress_meter(opts.file, bytes.size(), opts.progress);
  if (meter) {
    options.progress = [&meter](uint64_t offset, uint64_t) { meter->update(offset); };
  }
  auto report = migrate::inspect_rdb(bytes, options);
  if (meter) {
    meter->finish();
  }
  if (!report) {
    fail(opts, report.error().offset, report.error().message);
  }
  std::string out = opts.format == "json" ? migrate::render_rdb_json(*report, opts.file, detail)
                                          : migrate::render_rdb_text(*report, opts.file, detail);
  std::fputs(out.c_str(), stdout);
}

struct DumpOptions {
  std::string file;
  bool progress = false;
  std::string format = "json";
  std::optional<uint64_t> db;
  std::string match;
};

void run_dump(const DumpOptions& opts) {
  RdbOptions as_rdb;
  as_rdb.file = opts.file;
  engine::MappedFile mapped = map_or_fail(as_rdb, opts.file);
  migrate::RdbDumpOptions options;
  options.format = opts.format == "resp"   ? migrate::RdbDumpFormat::resp
                   : opts.format == "keys" ? migrate::RdbDumpFormat::keys
                                           : migrate::RdbDumpFormat::json;
  options.db = opts.db;
  options.match = opts.match;
  auto meter = progress_meter(opts.file, mapped.data().size(), opts.progress);
  if (meter) {
    options.progress = [&meter](uint64_t offset, uint64_t) { meter->update(offset); };
  }
  auto stats = migrate::dump_rdb(mapped.data(), options, [](std::string_view chunk) {
    std::fwrite(chunk.data(), 1, chunk.size(), stdout);
  });
  std::fflush(stdout);
  if (meter) {
    meter->finish();
  }
  if (!stats) {
    fail(as_rdb, stats.error().offset, stats.error().message);
  }
  if (std::ferror(stdout) != 0) {
    throw UserError(fmt::format("keyshift: writing the dump: {}", std::strerror(errno)), 1);
  }
  if (options.format == migrate::RdbDumpFormat::resp && stats->module_keys > 0) {
    fmt::print(stderr, "keyshift: {}: {} module key(s) left out: no command recreates them\n",
               opts.file, stats->module_keys);
  }
  if (options.format == migrate::RdbDumpFormat::resp && stats->path_hash_keys > 0) {
    fmt::print(stderr,
               "keyshift: {}: {} Path Hash key(s) (Valkey 9.2) left out: keyshift writes no "
               "commands for them\n",
               opts.file, stats->path_hash_keys);
  }
  if (stats->lost_pending > 0) {
    fmt::print(stderr,
               "keyshift: {}: {} pending stream entr(ies) left out: their entries were "
               "deleted, so XCLAIM cannot recreate them\n",
               opts.file, stats->lost_pending);
  }
}

struct ConvertOptions {
  std::string in;
  std::string out;
  int rdb_version = 11;
  KeyRuleFlags rules;
  bool verbose = false;
  std::string format = "text";
  bool progress = false;
};

void run_convert(const ConvertOptions& opts) {
  // convert builds the whole keyspace in memory, as serve's load does: the same heap.
  (void)engine::set_up_heap(true, false, engine::system_thp_mode());
  migrate::RdbConvertOptions options;
  options.rdb_version = opts.rdb_version;
  options.rules = to_key_rules(opts.rules);
  options.now_ms = now_ms();
  RdbOptions as_rdb;
  as_rdb.file = opts.in;
  as_rdb.format = opts.format;
  // OUT may be IN: the mapping keeps the old file's bytes after the rename replaces it.
  engine::MappedFile mapped = map_or_fail(as_rdb, opts.in);
  auto meter = progress_meter(opts.in, mapped.data().size(), opts.progress);
  if (meter) {
    options.progress = [&meter](uint64_t offset, uint64_t) { meter->update(offset); };
  }
  migrate::RdbConvertReport report = migrate::convert_rdb(mapped.data(), opts.out, options);
  if (meter) {
    meter->finish();
  }
  if (opts.format == "json") {
    std::fputs(migrate::render_convert_json(report, opts.in, opts.out).c_str(), stdout);
  } else {
    std::fputs(migrate::render_convert_text(report, opts.in, opts.out, opts.verbose).c_str(),
               stdout);
  }
  std::fflush(stdout);
  if (!report.ok) {
    if (report.error_offset) {
      throw UserError(fmt::format("keyshift: {}: error at byte {}: {}", opts.in,
                                  *report.error_offset, report.error),
                      1);
    }
    throw UserError(fmt::format("keyshift: {}: {}", opts.in, report.error), 1);
  }
}

void add_convert(CLI::App* rdb) {
  auto opts = std::make_shared<ConvertOptions>();
  CLI::App* convert =
      rdb->add_subcommand("convert", "Rewrite an RDB file for another server version");
  convert->add_option("in", opts->in, "The RDB file to read")->required();
  convert->add_option("out", opts->out, "The RDB file to write (replaced atomically)")->required();
  convert
      ->add_option("--rdb-version", opts->rdb_version,
                   "RDB version to write: 10, 11, 12, 80 (Valkey 9.0's VALKEY080) or 81 (Valkey "
                   "9.2's VALKEY081)")
      ->check(CLI::IsMember({10, 11, 12, 80, 81}));
  add_key_rule_flags(*convert, opts->rules);
  convert->add_flag("--verbose", opts->verbose, "Name the keys of every change");
  convert->add_flag("--progress", opts->progress,
                    "Show progress on stderr even when it is not a terminal");
  convert->add_option("--format", opts->format, "Report format: text or json")
      ->check(CLI::IsMember({"text", "json"}));
  convert->callback([opts]() { run_convert(*opts); });
}

void add_common(CLI::App* sub, RdbOptions& opts) {
  sub->add_option("file", opts.file, "The RDB file (read only, never written)")->required();
  sub->add_option("--format", opts.format, "Output format: text or json")
      ->check(CLI::IsMember({"text", "json"}));
  sub->add_flag("--progress", opts.progress,
                "Show progress on stderr even when it is not a terminal");
}

}  // namespace

void add_rdb(CLI::App& app) {
  auto opts = std::make_shared<RdbOptions>();
  CLI::App* rdb = app.add_subcommand("rdb", "Check and inspect RDB snapshot files");
  rdb->require_subcommand(1);
  rdb->footer(
      "Usage:\n"
      "  keyshift rdb check FILE [--format text|json]\n"
      "  keyshift rdb inspect FILE [--target SERVER] [--format text|json] [--delimiter :]\n"
      "                            [--top N] [--skip-modules]\n"
      "  keyshift rdb dump FILE [--format json|resp|keys] [--db N] [--match PATTERN]\n"
      "  keyshift rdb convert IN OUT [--rdb-version 10|11|12|80|81] [--field-ttl POLICY]\n"
      "                       [--skip-modules] [--match P] [--exclude P] [--db-map SRC:DST]...\n"
      "                       [--verbose] [--format text|json]\n"
      "check validates the structure and checksum (exit 0 when the file is sound, 1 with the\n"
      "byte offset of the first problem); inspect adds the biggest keys, key prefixes, TTLs,\n"
      "functions, modules, field TTLs and whether SERVER loads the file as is; dump writes\n"
      "the keys out; convert rewrites the file for an older or newer server.\n"
      "See man keyshift-rdb.\n");

  CLI::App* check = rdb->add_subcommand("check", "Validate an RDB file's structure and checksum");
  add_common(check, *opts);
  check->callback([opts]() { run_rdb(*opts, migrate::RdbReportDetail::check); });

  CLI::App* inspect =
      rdb->add_subcommand("inspect", "Sum up an RDB file and judge whether a server loads it");
  add_common(inspect, *opts);
  std::vector<std::string> targets;
  for (std::string_view name : migrate::rdb_target_names()) {
    targets.emplace_back(name);
  }
  inspect->add_option("--target", opts->target, "Server to judge the file against")
      ->check(CLI::IsMember(targets));
  inspect->add_option("--delimiter", opts->delimiter, "Key prefix separator (default ':')")
      ->check([](const std::string& v) {
        return v.empty() ? std::string("the delimiter cannot be empty") : std::string();
      });
  inspect->add_option("--top", opts->top, "How many of the biggest keys to list (default 10)")
      ->check(CLI::NonNegativeNumber);
  inspect->add_flag("--skip-modules", opts->skip_modules,
                    "Judge as if module keys were dropped rather than blocking the move");
  inspect->callback([opts]() { run_rdb(*opts, migrate::RdbReportDetail::inspect); });

  auto dump_opts = std::make_shared<DumpOptions>();
  CLI::App* dump = rdb->add_subcommand("dump", "Write every key of an RDB file to stdout");
  dump->add_option("file", dump_opts->file, "The RDB file (read only)")->required();
  dump->add_option("--format", dump_opts->format,
                   "json (JSON Lines), resp (commands for redis-cli --pipe) or keys")
      ->check(CLI::IsMember({"json", "resp", "keys"}));
  dump->add_option("--db", dump_opts->db, "Only keys of this database")
      ->check(CLI::NonNegativeNumber);
  dump->add_option("--match", dump_opts->match, "Only keys matching this glob pattern");
  dump->add_flag("--progress", dump_opts->progress,
                 "Show progress on stderr even when it is not a terminal");
  dump->callback([dump_opts]() { run_dump(*dump_opts); });
  add_convert(rdb);
}

}  // namespace keyshift::cli
