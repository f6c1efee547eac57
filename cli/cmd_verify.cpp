// keyshift verify data SOURCE TARGET: are two datasets the same? The comparison lives in
// compat/verify; this file maps flags and picks the exit status (0 equal, 1 differences,
// 2 error).
#include "cli/subcommands.hpp"
#include "cli/tls_flags.hpp"
#include "cli/user_error.hpp"
#include "compat/kb/knowledge_base.hpp"
#include "compat/monitor/monitor_live.hpp"
#include "compat/monitor/monitor_log.hpp"
#include "compat/verify/clients.hpp"
#include "compat/verify/clients_inputs.hpp"
#include "compat/verify/commands.hpp"
#include "compat/verify/side.hpp"
#include "compat/verify/verify.hpp"
#include "engine/resp/connection.hpp"
#include "engine/util/atomic_file.hpp"

#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <future>
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
  bool snapshot = false;
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

  if (opts.snapshot && show) {
    std::fputs("keyshift verify: taking snapshots by replication ...\n", stderr);
  }
  // Snapshots are taken at once, so the servers' states are as close in time as they can be.
  auto source_open = std::async(opts.snapshot ? std::launch::async : std::launch::deferred, [&] {
    return compat::open_verify_side(opts.source, opts.tls, opts.snapshot);
  });
  auto target = compat::open_verify_side(opts.target, opts.tls, opts.snapshot);
  auto source = source_open.get();
  if (!source) {
    throw UserError("keyshift: verify: " + source.error(), 2);
  }
  if (!target) {
    throw UserError("keyshift: verify: " + target.error(), 2);
  }
  double opened = seconds_now();
  auto report = compat::verify_data(**source, **target, options);
  if (report) {
    report->setup_seconds = opened - start;
  }
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

struct ClientsCliOptions {
  std::vector<std::string> inputs;
  double duration = 0;
  std::string sample = "monitor";
  std::string target = "valkey-8.0";
  std::string source;
  std::string format = "text";
  std::string out;
};

compat::kb::ProfileId profile_or_fail(const std::string& flag, const std::string& name) {
  auto id = compat::kb::find_profile(name);
  if (!id) {
    throw UserError(fmt::format("keyshift: verify clients: {} {}: unknown server line (see "
                                "keyshift kb profiles)",
                                flag, name),
                    2);
  }
  return *id;
}

void run_clients(const ClientsCliOptions& opts) {
  compat::kb::ProfileId target = profile_or_fail("--target", opts.target);
  bool source_given = !opts.source.empty();
  compat::kb::ProfileId source =
      profile_or_fail("--source", source_given ? opts.source : "redis-7.0");
  compat::ClientsAnalyzer analyzer(source, target, source_given);
  std::string method;
  for (const std::string& input : opts.inputs) {
    if (compat::kb::find_profile(input)) {
      throw UserError(fmt::format("keyshift: verify clients: {}: a server line is a --target or "
                                  "--source, not an input",
                                  input),
                      2);
    }
    if (input.find("://") != std::string::npos) {
      // A live server, sampled for --duration seconds.
      if (opts.duration <= 0) {
        throw UserError(fmt::format("keyshift: verify clients: {}: a live source needs "
                                    "--duration SECONDS",
                                    input),
                        2);
      }
      auto endpoint = engine::parse_redis_url(input);
      if (!endpoint) {
        throw UserError(fmt::format("keyshift: verify clients: {}: {}", input, endpoint.error()),
                        2);
      }
      auto duration = std::chrono::milliseconds(static_cast<int64_t>(opts.duration * 1000));
      if (opts.sample == "commandstats") {
        auto calls = compat::sample_commandstats(*endpoint, duration);
        if (!calls) {
          throw UserError("keyshift: verify clients: " + calls.error(), 2);
        }
        analyzer.add_counts(*calls);
        method =
            method.empty() ? "INFO commandstats deltas" : method + ", INFO commandstats deltas";
      } else {
        auto read = compat::sample_monitor(*endpoint, duration, [&](const compat::MonitorEntry& e) {
          analyzer.add(e);
          return true;
        });
        if (!read) {
          throw UserError("keyshift: verify clients: " + read.error(), 2);
        }
        method = method.empty() ? "MONITOR sample" : method + ", MONITOR sample";
      }
      analyzer.add_input(fmt::format("{} for {} s", endpoint->describe(), opts.duration));
      continue;
    }
    auto kind = compat::sniff_clients_input(input);
    if (!kind) {
      throw UserError("keyshift: verify clients: " + kind.error(), 2);
    }
    std::string_view what = "MONITOR log";
    if (*kind == compat::ClientsInputKind::capture) {
      auto read = compat::read_capture_for_clients(input, analyzer);
      if (!read) {
        throw UserError("keyshift: verify clients: " + read.error(), 2);
      }
      if (!read->empty()) {
        std::fprintf(stderr, "keyshift: verify clients: %s: %s\n", input.c_str(), read->c_str());
      }
      analyzer.add_input(read->empty() ? input : fmt::format("{} ({})", input, *read));
      what = "capture file";
    } else if (*kind == compat::ClientsInputKind::replay_report) {
      if (auto failed = compat::read_replay_report_for_clients(input, analyzer)) {
        throw UserError("keyshift: verify clients: " + *failed, 2);
      }
      analyzer.add_input(input);
      what = "replay report";
    } else {
      auto read = compat::read_monitor_file(input, [&](const compat::MonitorEntry& e) {
        analyzer.add(e);
        return true;
      });
      if (!read) {
        throw UserError("keyshift: verify clients: " + read.error(), 2);
      }
      analyzer.add_input(input);
    }
    if (method.find(what) == std::string::npos) {
      method = method.empty() ? std::string(what) : method + ", " + std::string(what);
    }
  }
  compat::ClientsReport report = analyzer.report(method);
  std::string text = opts.format == "json"       ? compat::render_clients_json(report)
                     : opts.format == "markdown" ? compat::render_clients_markdown(report)
                     : opts.format == "html"     ? compat::render_clients_html(report)
                     : opts.format == "junit"    ? compat::render_clients_junit(report)
                                                 : compat::render_clients_text(report);
  if (opts.out.empty() || opts.out == "-") {
    std::fputs(text.c_str(), stdout);
    std::fflush(stdout);
  } else {
    if (auto failed = engine::write_file_atomically(opts.out, text)) {
      throw UserError("keyshift: verify clients: " + failed->message(), 2);
    }
  }
  if (!report.all_ok()) {
    throw UserError("", 1);  // the report said it
  }
}

struct CommandsCliOptions {
  std::string source;
  std::string target = "embedded";
  std::string prefix = "{keyshift-verify}:";
  bool read_only = false;
  std::vector<std::string> only;
  std::string format = "text";
  bool all = false;
};

void run_commands(const CommandsCliOptions& opts) {
  auto source = compat::open_commands_side(opts.source);
  if (!source) {
    throw UserError("keyshift: verify commands: " + source.error(), 2);
  }
  auto target = compat::open_commands_side(opts.target);
  if (!target) {
    throw UserError("keyshift: verify commands: " + target.error(), 2);
  }
  compat::VerifyCommandsOptions options;
  options.prefix = opts.prefix;
  options.read_only = opts.read_only;
  for (const std::string& name : opts.only) {
    std::string lower;
    for (char c : name) {
      lower.push_back(c == ' ' ? '|'
                               : static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    }
    options.only.push_back(lower);
  }
  if (options.prefix.empty()) {
    throw UserError("keyshift: verify commands: --prefix must not be empty", 2);
  }
  auto report = compat::verify_commands(*source, *target, options);
  if (!report) {
    throw UserError("keyshift: verify commands: " + report.error(), 2);
  }
  std::string out = opts.format == "json" ? compat::render_verify_commands_json(*report)
                                          : compat::render_verify_commands_text(*report, opts.all);
  std::fputs(out.c_str(), stdout);
  std::fflush(stdout);
  if (!report->same()) {
    throw UserError("", 1);
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
      "                       [--digest] [--dump] [--snapshot] [--format text|json]\n"
      "                       [--max-differences N]\n"
      "  keyshift verify commands SOURCE [TARGET] [--prefix P] [--read-only] [--only CMD]\n"
      "                       [--format text|json] [--all]\n"
      "  keyshift verify clients MONITOR-LOG...|URL [--duration S] [--sample "
      "monitor|commandstats]\n"
      "                       [--target LINE] [--source LINE]\n"
      "                       [--format text|markdown|json|html|junit] [--out FILE]\n"
      "SOURCE and TARGET are server URLs (redis://[user:password@]host:port[/db],\n"
      "unix:///path/to.sock) or files (an RDB file, or JSON Lines from keyshift rdb dump).\n"
      "Exit status: 0 equal (all ok), 1 differences (something missing or different), 2 error.\n"
      "See man keyshift-verify.\n");
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
  data->add_flag("--snapshot", opts->snapshot,
                 "Take each server's dataset as a replica does (one full sync) and compare "
                 "the two in this process; later rounds re-check on the live servers");
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

  auto mopts = std::make_shared<CommandsCliOptions>();
  CLI::App* commands =
      verify->add_subcommand("commands", "Check that two servers answer the same commands alike");
  commands
      ->add_option("source", mopts->source,
                   "Server URL or server line (e.g. redis-7.0) to compare from")
      ->required();
  commands->add_option("target", mopts->target,
                       "Server URL, server line, or embedded (default: keyshift's own engine)");
  commands->add_option("--prefix", mopts->prefix,
                       "Keys the cases use live under this prefix, which must be empty "
                       "(default {keyshift-verify}:)");
  commands->add_flag("--read-only", mopts->read_only,
                     "Run no write command and create no key (safe against production)");
  commands->add_option("--only", mopts->only, "Only these commands (repeatable)");
  commands->add_option("--format", mopts->format, "Report format: text or json")
      ->check(CLI::IsMember({"text", "json"}));
  commands->add_flag("--all", mopts->all, "List every command in the text report, same ones too");
  commands->callback([mopts]() { run_commands(*mopts); });

  auto copts = std::make_shared<ClientsCliOptions>();
  CLI::App* clients = verify->add_subcommand(
      "clients", "What the clients use, and whether the target server line has it");
  clients
      ->add_option("input", copts->inputs,
                   "MONITOR log files (redis-cli monitor output; - for stdin), keyshift capture "
                   "files, keyshift replay --format json reports, or server URLs to sample for "
                   "--duration")
      ->required();
  clients->add_option("--duration", copts->duration, "Seconds to sample a live server")
      ->check(CLI::PositiveNumber);
  clients
      ->add_option("--sample", copts->sample,
                   "How to sample a live server: monitor (every command, costs the server "
                   "throughput) or commandstats (counts only, nearly free)")
      ->check(CLI::IsMember({"monitor", "commandstats"}));
  clients->add_option("--target", copts->target,
                      "Server line to judge against, e.g. valkey-8.0 (default valkey-8.0)");
  clients->add_option("--source", copts->source,
                      "Server line the clients use now (default redis-7.0)");
  clients->add_option("--format", copts->format, "Report format: text, markdown, json, html, junit")
      ->check(CLI::IsMember({"text", "markdown", "json", "html", "junit"}));
  clients->add_option("--out", copts->out, "Write the report to this file (atomically)");
  clients->callback([copts]() { run_clients(*copts); });
}

}  // namespace keyshift::cli
