// keyshift verify data SOURCE TARGET: are two datasets the same? The comparison lives in
// compat/verify; this file maps flags and picks the exit status (0 equal, 1 differences,
// 2 error).
#include "cli/subcommands.hpp"
#include "cli/tls_flags.hpp"
#include "cli/user_error.hpp"
#include "compat/verify/side.hpp"
#include "compat/verify/verify.hpp"

#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

namespace keyshift::cli {
namespace {

struct VerifyCliOptions {
  std::string source;
  std::string target;
  int64_t ttl_tolerance_ms = 1000;
  std::string sample = "100";
  int rounds = 3;
  int64_t pause_ms = 2000;
  size_t batch = 1000;
  size_t chunk = 512;
  bool digest = false;
  bool dump = false;
  std::optional<int> db;
  std::string match;
  std::string format = "text";
  size_t max_listed = 20;
  bool progress = false;
  bool no_progress = false;
  engine::TlsClientOptions tls;
};

double seconds_now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/// "10", "10%" or "2.5" into a percentage; a usage error otherwise.
double parse_sample(const std::string& text) {
  std::string number = text;
  if (!number.empty() && number.back() == '%') {
    number.pop_back();
  }
  size_t used = 0;
  double value = 0;
  try {
    value = std::stod(number, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != number.size() || !(value > 0 && value <= 100)) {
    throw UserError(
        fmt::format("keyshift: --sample {}: expected a percentage above 0, at most 100", text), 2);
  }
  return value;
}

void run_verify(const VerifyCliOptions& opts) {
  compat::VerifyOptions options;
  options.ttl_tolerance_ms = opts.ttl_tolerance_ms;
  options.sample_percent = parse_sample(opts.sample);
  options.rounds = opts.rounds;
  options.pause_ms = opts.pause_ms;
  options.scan_count = opts.batch;
  options.chunk = opts.chunk;
  options.server_digest = opts.digest;
  options.dump = opts.dump;
  options.db = opts.db;
  options.match = opts.match;

  bool show = !opts.no_progress && (opts.progress || ::isatty(STDERR_FILENO) == 1);
  double start = seconds_now();
  double last = -1;
  bool drawn = false;
  if (show) {
    options.progress = [&](const compat::VerifyProgress& p) {
      double now = seconds_now();
      if (last >= 0 && now - last < 0.2) {
        return;
      }
      last = now;
      drawn = true;
      std::string line = compat::verify_progress_line(p, now - start);
      std::fwrite(line.data(), 1, line.size(), stderr);
      std::fflush(stderr);
    };
  }
  // Later rounds say so on stderr, so whoever watches knows verify waits on purpose.
  options.pause = [&](int round, int64_t pause_ms) {
    if (drawn) {
      std::fputs("\r\033[K", stderr);
      drawn = false;
    }
    fmt::print(stderr, "keyshift verify: round {} in {} ms\n", round, pause_ms);
    std::fflush(stderr);
    if (pause_ms > 0) {
      ::usleep(static_cast<useconds_t>(pause_ms * 1000));
    }
  };

  auto source = compat::open_verify_side(opts.source, opts.tls);
  if (!source) {
    throw UserError("keyshift: verify: " + source.error(), 2);
  }
  auto target = compat::open_verify_side(opts.target, opts.tls);
  if (!target) {
    throw UserError("keyshift: verify: " + target.error(), 2);
  }
  auto report = compat::verify_data(**source, **target, options);
  if (drawn) {
    std::fputs("\r\033[K", stderr);
  }
  if (!report) {
    throw UserError("keyshift: verify: " + report.error(), 2);
  }
  std::string out = opts.format == "json" ? compat::render_verify_json(*report, opts.max_listed)
                                          : compat::render_verify_text(*report, opts.max_listed);
  std::fputs(out.c_str(), stdout);
  std::fflush(stdout);
  if (!report->equal()) {
    throw UserError("", 1);  // the report said it
  }
}

}  // namespace

void add_verify(CLI::App& app) {
  CLI::App* verify = app.add_subcommand("verify", "Check that two datasets are the same");
  verify->require_subcommand(1);
  verify->footer(
      "Usage:\n"
      "  keyshift verify data SOURCE TARGET [--ttl-tolerance MS] [--sample PERCENT]\n"
      "                       [--rounds N] [--pause MS] [--db N] [--match PATTERN]\n"
      "                       [--digest] [--dump] [--format text|json]\n"
      "                       [--max-differences N]\n"
      "SOURCE and TARGET are server URLs (redis://[user:password@]host:port[/db],\n"
      "unix:///path/to.sock) or files (an RDB file, or JSON Lines from keyshift rdb dump).\n"
      "Exit status: 0 equal, 1 differences, 2 error. See man keyshift-verify.\n");
  auto opts = std::make_shared<VerifyCliOptions>();
  CLI::App* data = verify->add_subcommand("data", "Compare keys, types, TTLs and values");
  data->add_option("source", opts->source, "Server URL or file to compare from")->required();
  data->add_option("target", opts->target, "Server URL or file to compare with")->required();
  data->add_option("--ttl-tolerance", opts->ttl_tolerance_ms,
                   "TTLs further apart than this many ms differ (default 1000)")
      ->check(CLI::NonNegativeNumber);
  data->add_option("--sample", opts->sample,
                   "Compare only this percentage of the keys, e.g. 5 or 5% (default 100)");
  data->add_option("--rounds", opts->rounds,
                   "Rounds in all: later rounds compare again only the keys that differed "
                   "(default 3)")
      ->check(CLI::Range(1, 100));
  data->add_option("--pause", opts->pause_ms, "Pause before each later round, in ms (default 2000)")
      ->check(CLI::NonNegativeNumber);
  data->add_option("--batch", opts->batch, "Keys per SCAN page and batch (default 1000)")
      ->check(CLI::Range(1, 100000));
  data->add_option("--chunk", opts->chunk,
                   "Elements per read of a big value, KiB for strings (default 512)")
      ->check(CLI::Range(1, 1000000));
  data->add_flag("--digest", opts->digest,
                 "Compare values by DEBUG DIGEST-VALUE where both sides allow it (less "
                 "traffic, more server CPU)");
  data->add_flag("--dump", opts->dump,
                 "Compare small lists, sets, sorted sets, hashes and streams by DUMP payload");
  data->add_option("--db", opts->db, "Only this database")->check(CLI::NonNegativeNumber);
  data->add_option("--match", opts->match, "Only keys matching this glob pattern");
  add_tls_flags(*data, opts->tls);
  data->add_option("--format", opts->format, "Report format: text or json")
      ->check(CLI::IsMember({"text", "json"}));
  data->add_option("--max-differences", opts->max_listed,
                   "List at most this many differences (default 20)")
      ->check(CLI::NonNegativeNumber);
  data->add_flag("--progress", opts->progress,
                 "Show progress on stderr even when it is not a terminal");
  data->add_flag("--no-progress", opts->no_progress, "Never show progress");
  data->callback([opts]() { run_verify(*opts); });
}

}  // namespace keyshift::cli
