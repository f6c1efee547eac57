// `keyshift import SOURCE [--to URL | --dir DIR --target NAME]`: flags -> ImportOptions ->
// migrate::run_import.
#include "cli/key_rule_flags.hpp"
#include "cli/subcommands.hpp"
#include "cli/tls_flags.hpp"
#include "cli/user_error.hpp"
#include "compat/report/progress.hpp"
#include "engine/resp/connection.hpp"
#include "migrate/import/import.hpp"
#include "migrate/rdb_inspect.hpp"

#include <fmt/core.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

namespace keyshift::cli {
namespace {

struct ImportFlags {
  std::string source;
  std::string to;
  std::string dir = ".";
  std::string dbfilename = "dump.rdb";
  std::string target = "valkey-8.0";
  KeyRuleFlags rules;
  std::string conflict = "fail";
  bool dry_run = false;
  bool no_precheck = false;
  std::string checkpoint;
  bool no_checkpoint = false;
  uint32_t window = 256;
  std::string method = "restore";
  uint64_t big_key_bytes = 0;
  uint32_t loading_wait = 300;
  uint32_t scan_count = 1000;
  std::string format = "text";
  bool progress = false;
  bool verify = false;
  bool cluster = false;
  bool follow = false;
  engine::TlsClientOptions tls;
  std::string mode = "sync";
  std::string until = "caught-up";
};

/// Set by SIGTERM/SIGINT while a replication import streams: it stops at a command boundary
/// with its checkpoint saved.
volatile std::sig_atomic_t g_stop_requested = 0;

void request_stop(int) {
  g_stop_requested = 1;
}

int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

double seconds_now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/// The progress shown on stderr: a byte meter for files, a key count for scans.
class ImportProgressLine {
 public:
  ImportProgressLine(std::string label, bool shown) : m_label(std::move(label)), m_shown(shown) {}

  void update(const migrate::ImportProgress& p) {
    if (!m_shown) {
      return;
    }
    if (p.phase == "stream") {
      double now = seconds_now();
      double rate = m_stream_at > 0 && now > m_stream_at
                        ? static_cast<double>(p.done - m_stream_done) / (now - m_stream_at)
                        : 0;
      m_stream_at = now;
      m_stream_done = p.done;
      if (m_meter) {
        m_meter->finish();
        m_meter.reset();
      }
      write_stderr(
          fmt::format("\rkeyshift: {} [stream]: {} commands ({:.0f}/s), lag {} bytes, "
                      "{:.1f} s\033[K",
                      m_label, p.done, rate, p.lag_bytes < 0 ? 0 : p.lag_bytes,
                      p.lag_seconds < 0 ? 0.0 : p.lag_seconds));
      m_open = true;
      return;
    }
    if (p.total > 0) {
      if (!m_meter || p.phase != m_phase) {
        if (m_meter) {
          m_meter->finish();
        }
        m_phase = std::string(p.phase);
        m_meter = std::make_unique<compat::ProgressMeter>(fmt::format("{} [{}]", m_label, p.phase),
                                                          p.total, &write_stderr, &seconds_now);
      }
      m_meter->update(p.done);
      return;
    }
    double now = seconds_now();
    if (now - m_last < 0.2) {
      return;
    }
    if (m_started == 0) {
      m_started = now;
    }
    m_last = now;
    double spent = std::max(now - m_started, 1e-3);
    std::string line =
        p.phase == "sync"
            ? fmt::format(
                  "\rkeyshift: {} [sync]: {:.1f} MB received ({:.1f} MB/s), {} keys "
                  "written ({:.0f}/s)\033[K",
                  m_label, static_cast<double>(p.done) / 1e6,
                  static_cast<double>(p.done) / 1e6 / spent, p.keys,
                  static_cast<double>(p.keys) / spent)
            : fmt::format("\rkeyshift: {}: {} keys read, {} written", m_label, p.done, p.keys);
    write_stderr(line);
    m_open = true;
  }

  void finish() {
    if (m_meter) {
      m_meter->finish();
    }
    if (m_open) {
      write_stderr("\r\033[K");
    }
  }

 private:
  static void write_stderr(std::string_view text) {
    std::fwrite(text.data(), 1, text.size(), stderr);
    std::fflush(stderr);
  }

  std::string m_label;
  bool m_shown;
  std::string m_phase;
  std::unique_ptr<compat::ProgressMeter> m_meter;
  double m_last = 0;
  bool m_open = false;
  double m_started = 0;
  double m_stream_at = 0;
  uint64_t m_stream_done = 0;
};

void run_import(const ImportFlags& f) {
  migrate::ImportOptions options;
  options.source = f.source;
  options.tls = f.tls;
  if (!f.to.empty()) {
    auto endpoint = engine::parse_redis_url(f.to, f.tls);
    if (!endpoint) {
      throw UserError("keyshift: --to: " + endpoint.error(), 2);
    }
    options.to = *endpoint;
  }
  auto target = migrate::parse_rdb_target(f.target);
  if (!target) {
    std::string names;
    for (std::string_view n : migrate::rdb_target_names()) {
      names += (names.empty() ? "" : ", ") + std::string(n);
    }
    throw UserError(fmt::format("keyshift: --target {}: expected one of {}", f.target, names), 2);
  }
  options.target = *target;
  options.dir = f.dir;
  options.dbfilename = f.dbfilename;
  options.rules = to_key_rules(f.rules);
  if (options.to && options.to->db != 0) {
    // As redis-cli -n N: a database in the target's URL takes every source database that
    // --db-map does not place.
    options.rules.unmapped_db = static_cast<uint64_t>(options.to->db);
  }
  options.conflict = f.conflict == "skip"      ? migrate::ConflictPolicy::skip
                     : f.conflict == "replace" ? migrate::ConflictPolicy::replace
                                               : migrate::ConflictPolicy::fail;
  options.dry_run = f.dry_run;
  options.precheck = !f.no_precheck;
  if (options.to && !f.no_checkpoint) {
    // Beside the data the import is about, so a rerun from anywhere finds it.
    options.checkpoint =
        f.checkpoint.empty()
            ? (std::filesystem::path(f.dir) / "keyshift-import.checkpoint").string()
            : f.checkpoint;
  } else if (!f.checkpoint.empty() && !f.no_checkpoint) {
    options.checkpoint = f.checkpoint;
  }
  options.verify = f.verify;
  options.cluster = f.cluster;
  options.follow = f.follow;
  options.mode = f.mode == "scan" ? migrate::SourceMode::scan : migrate::SourceMode::sync;
  if (f.until == "caught-up") {
    options.until = migrate::UntilKind::caught_up;
  } else if (f.until == "sigterm") {
    options.until = migrate::UntilKind::signal;
  } else {
    options.until = migrate::UntilKind::stop_file;
    options.until_path = f.until;
  }
  bool server_source = f.source.find("://") != std::string::npos || f.source.starts_with("unix:");
  if (f.follow && (!server_source || options.mode != migrate::SourceMode::scan)) {
    throw UserError("keyshift: --follow goes with --mode scan and a server source", 2);
  }
  if (server_source && (options.mode == migrate::SourceMode::sync || f.follow)) {
    // Only the stream polls the flag: other imports keep the default (die on SIGTERM).
    std::signal(SIGTERM, request_stop);
    std::signal(SIGINT, request_stop);
    options.stop_requested = [] { return g_stop_requested != 0; };
  }
  options.window = f.window;
  options.method =
      f.method == "commands" ? migrate::ImportMethod::commands : migrate::ImportMethod::restore;
  options.big_key_bytes = f.big_key_bytes;
  options.loading_wait_s = f.loading_wait;
  options.notice = [](const std::string& line) {
    std::fprintf(stderr, "keyshift: %s\n", line.c_str());
  };
  options.scan_count = f.scan_count;
  options.now_ms = wall_ms();
  ImportProgressLine progress("import " + f.source,
                              f.progress || (f.format == "text" && ::isatty(STDERR_FILENO) == 1));
  options.progress = [&progress](const migrate::ImportProgress& p) { progress.update(p); };

  migrate::ImportReport report = migrate::run_import(options);
  progress.finish();
  if (f.format == "json") {
    std::fputs(migrate::render_import_json(report).c_str(), stdout);
    std::fflush(stdout);
    if (!report.ok) {
      throw UserError("", 1);
    }
    return;
  }
  std::string text = migrate::render_import_text(report);
  if (!report.ok) {
    if (!text.empty() && text.back() == '\n') {
      text.pop_back();
    }
    throw UserError(text, 1);
  }
  std::fputs(text.c_str(), stdout);
}

}  // namespace

void add_import(CLI::App& app) {
  auto flags = std::make_shared<ImportFlags>();
  CLI::App* cmd = app.add_subcommand(
      "import",
      "Move a dataset from an RDB file or a live server (replication, or SCAN + DUMP) into a "
      "live server "
      "(RESTORE ... ABSTTL) or into the target's data file, resumably");
  cmd->add_option("source", flags->source,
                  "An RDB file, or a server URL (redis://[[user]:password@]host[:port][/db], "
                  "unix:///path) read as a replica (--mode sync) or by SCAN + DUMP (--mode scan)")
      ->required();
  cmd->add_option("--to", flags->to,
                  "Write into this live server (redis://... or unix://...); without it the "
                  "dataset is saved as DIR/DBFILENAME for --target");
  cmd->add_flag("--cluster", flags->cluster,
                "The --to server is a node of a cluster: keys go to the primary owning their "
                "slot (also found from INFO cluster without this flag)");
  cmd->add_option("--dir", flags->dir,
                  "Where the data file is written (no --to), and the default checkpoint's "
                  "directory");
  cmd->add_option("--dbfilename", flags->dbfilename, "The data file's name (no --to)");
  cmd->add_option("--target", flags->target,
                  "The server that will load the data file (no --to): valkey-8.0, redis-7.0, ...");
  add_key_rule_flags(*cmd, flags->rules);
  cmd->add_option("--conflict", flags->conflict,
                  "Keys already in the target: fail (list them, write nothing), skip or replace")
      ->check(CLI::IsMember({"fail", "skip", "replace"}));
  cmd->add_flag("--dry-run", flags->dry_run, "Read and judge everything, write nothing");
  add_tls_flags(*cmd, flags->tls);
  cmd->add_flag("--no-precheck", flags->no_precheck,
                "Stream a file source instead of checking it whole before the first write");
  cmd->add_option("--checkpoint", flags->checkpoint,
                  "Resume state (default DIR/keyshift-import.checkpoint with --to); rerun the "
                  "same command to go on after an interruption");
  cmd->add_flag("--no-checkpoint", flags->no_checkpoint, "Keep no resume state");
  cmd->add_option("--window", flags->window, "Requests in flight to a live target")
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--mode", flags->mode,
                  "A server source: sync (as a replica: full sync, then the command stream; the "
                  "default) or scan (SCAN + DUMP, for servers that refuse SYNC)")
      ->check(CLI::IsMember({"sync", "scan"}));
  cmd->add_option("--until", flags->until,
                  "--mode sync (and scan --follow): stream until caught-up (the primary's "
                  "offset when the stream began; for --follow, a round with no change), "
                  "sigterm (until SIGTERM/SIGINT), or PATH (until that file exists)");
  cmd->add_flag("--follow", flags->follow,
                "--mode scan: read again the keys the source's keyspace notifications name "
                "while and after it is scanned (enables them with CONFIG SET if needed)");
  cmd->add_option("--method", flags->method,
                  "How keys go to a live target: restore (RESTORE payloads; big keys as "
                  "commands) or commands (plain commands for every key)")
      ->check(CLI::IsMember({"restore", "commands"}));
  cmd->add_option("--big-key-bytes", flags->big_key_bytes,
                  "Keys whose payload is larger go as commands in chunks (default 8 MiB, or "
                  "half the target's proto-max-bulk-len)")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 40));
  cmd->add_option("--loading-wait", flags->loading_wait,
                  "Seconds to wait for a target or scan source that is loading its dataset "
                  "(-LOADING)")
      ->check(CLI::Range(0, 86400));
  cmd->add_option("--scan-count", flags->scan_count, "SCAN COUNT for a server source")
      ->check(CLI::Range(1, 100000));
  cmd->add_flag("--verify", flags->verify,
                "Compare source and target with verify data when done (exit 1 on a difference)");
  cmd->add_option("--format", flags->format, "Report format: text or json")
      ->check(CLI::IsMember({"text", "json"}));
  cmd->add_flag("--progress", flags->progress,
                "Show progress on stderr even when it is not a terminal");
  cmd->callback([flags]() { run_import(*flags); });
}

}  // namespace keyshift::cli
