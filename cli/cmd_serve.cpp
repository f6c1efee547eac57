// keyshift serve [CONFIGFILE] [--directive value ...]: the engine as a drop-in server.
#include "cli/subcommands.hpp"
#include "cli/user_error.hpp"
#include "engine/engine.hpp"
#include "engine/persistence/aof.hpp"
#include "engine/persistence/rdb_load.hpp"
#include "engine/persistence/snapshots.hpp"
#include "engine/repl/replication_state.hpp"
#include "engine/server/config_file.hpp"
#include "engine/server/config_table.hpp"
#include "engine/server/log.hpp"
#include "engine/server/server.hpp"
#include "engine/server/supervision.hpp"
#include "engine/util/clock.hpp"
#include "engine/util/mapped_file.hpp"
#include "engine/util/memory.hpp"

#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

namespace keyshift::cli {
namespace {

struct ServeOptions {
  std::vector<std::string> args;
  bool test_config = false;
};

/// Valkey's presentation of a config error, so people who know valkey-server recognise it.
std::string format_config_error(const engine::ConfigError& e) {
  std::string where = e.line > 0 ? fmt::format("at line {}", e.line) : std::string();
  if (e.line > 0) {
    return fmt::format(
        "\n*** FATAL CONFIG FILE ERROR (keyshift {}) ***\nReading the configuration file "
        "{}, {}\n>>> '{}'\n{}",
        KEYSHIFT_VERSION, e.file, where, e.text, e.message);
  }
  return fmt::format("\n*** FATAL CONFIG FILE ERROR (keyshift {}) ***\n{}{}", KEYSHIFT_VERSION,
                     e.file.empty() ? "" : e.file + ": ", e.message);
}

/// Builds the engine config from the command line (file, stdin, --directives).
engine::EngineConfig load(const ServeOptions& opts, std::vector<std::string>& warnings) {
  engine::RealConfigFilesystem fs;
  auto cmdline = engine::parse_command_line(opts.args);
  if (!cmdline) {
    throw UserError(format_config_error(cmdline.error()), 1);
  }
  std::string stdin_text;
  if (cmdline->config_from_stdin) {
    stdin_text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  }
  auto directives = engine::load_config(fs, *cmdline, stdin_text);
  if (!directives) {
    throw UserError(format_config_error(directives.error()), 1);
  }
  engine::EngineConfig config;
  if (auto err = engine::apply_directives(*directives, config, warnings)) {
    throw UserError(format_config_error(*err), 1);
  }
  if (!cmdline->config_file.empty()) {
    char* real = ::realpath(cmdline->config_file.c_str(), nullptr);
    config.config_file = real != nullptr ? real : cmdline->config_file;
    std::free(real);
  }
  return config;
}

/// Loads dir/dbfilename as valkey-server does at start; a file that cannot be loaded stops
/// the server (starting empty would lose the data at the next save).
void load_dataset(engine::Engine& eng, const engine::EngineConfig& config, engine::Logger& log) {
  std::filesystem::path path = std::filesystem::path(config.dir) / config.dbfilename;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    return;
  }
  auto start = std::chrono::steady_clock::now();
  auto file = engine::MappedFile::open(path.string());
  if (!file) {
    log.warning(fmt::format("Fatal error loading the DB: {}. Exiting.", file.error().message()));
    throw UserError(fmt::format("cannot load {}", file.error().message()), 1);
  }
  auto stats = engine::load_rdb(eng, file->data());
  if (!stats) {
    std::string what = fmt::format("{}: error at byte {}: {}", path.string(), stats.error().offset,
                                   stats.error().message);
    log.warning(fmt::format("Fatal error loading the DB: {}. Exiting.", what));
    throw UserError(what, 1);
  }
  eng.snapshots().note_load(stats->keys_loaded, stats->expired_skipped);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  log.notice(fmt::format("Done loading RDB, keys loaded: {}, keys expired: {}.", stats->keys_loaded,
                         stats->expired_skipped));
  log.notice(fmt::format("DB loaded from disk: {:.3f} seconds", secs));
}

/// With appendonly yes the AOF is the dataset, as in Valkey: it is loaded instead of the RDB
/// (even when there is no AOF yet), then opened for appending.
void load_and_open_aof(engine::Engine& eng, engine::Logger& log) {
  auto start = std::chrono::steady_clock::now();
  auto report = eng.aof().load();
  if (!report) {
    log.warning(fmt::format("Fatal error loading the AOF: {}. Exiting.", report.error()));
    throw UserError(report.error(), 1);
  }
  for (const std::string& line : report->notices) {
    log.notice(line);
  }
  if (report->found) {
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    log.notice(fmt::format("DB loaded from append only file: {:.3f} seconds", secs));
  }
  if (auto err = eng.aof().open_on_start()) {
    log.warning(*err);
    throw UserError(*err, 1);
  }
}

void run_serve(const ServeOptions& opts) {
  std::vector<std::string> warnings;
  engine::EngineConfig config = load(opts, warnings);
  if (opts.test_config) {
    for (const auto& w : warnings) {
      fmt::print(stderr, "warning: {}\n", w);
    }
    fmt::print("Configuration test passed\n");
    return;
  }
  engine::Logger log(config.logfile, engine::parse_log_level(config.loglevel));
  if (!log.ok()) {
    throw UserError(fmt::format("Can't open the log file: {}", config.logfile), 1);
  }
  for (const auto& w : warnings) {
    log.warning(w);
  }
  engine::HeapSetup heap =
      engine::set_up_heap(config.huge_page_heap, config.disable_thp, engine::system_thp_mode());
  log.notice(heap.detail);
  // Before the load, as Valkey: systemd hears "loading" while a big dataset is read.
  engine::SupervisionEnvironment env{std::getenv("NOTIFY_SOCKET"), std::getenv("UPSTART_JOB")};
  std::unique_ptr<engine::ServiceNotifier> notifier =
      engine::start_supervision(config.supervised, env, log);
  engine::SystemClock clock;
  engine::Engine eng(config, clock);
  eng.identity().executable = "keyshift";
  eng.set_service_notifier(notifier.get());
  if (!eng.config_startup_error().empty()) {
    throw UserError(eng.config_startup_error(), 1);
  }
  if (!eng.acl_startup_error().empty()) {
    // As valkey-server: users that cannot be loaded stop the start.
    log.warning(eng.acl_startup_error());
    throw UserError(eng.acl_startup_error(), 1);
  }
  if (config.appendonly) {
    load_and_open_aof(eng, log);
  } else {
    load_dataset(eng, config, log);
  }
  engine::Server server(eng, log);
  std::string err = server.listen();
  if (!err.empty()) {
    log.warning(err);
    throw UserError(err, 1);
  }
  log.notice(fmt::format("keyshift {} (Valkey 8 compatible) started, pid={}", KEYSHIFT_VERSION,
                         static_cast<int>(getpid())));
  if (config.port != 0) {
    log.notice(fmt::format("Ready to accept connections tcp on port {}", config.port));
  }
  if (config.tls_port != 0) {
    log.notice(fmt::format("Ready to accept connections tls on port {}", config.tls_port));
  }
  if (!config.unixsocket.empty()) {
    log.notice(fmt::format("Ready to accept connections unix on {}", config.unixsocket));
  }
  if (notifier != nullptr) {
    notifier->notify(eng.replication().is_replica()
                         ? "STATUS=Ready to accept connections in read-only mode. Waiting for "
                           "MASTER <-> REPLICA sync\n"
                         : "STATUS=Ready to accept connections\n");
    notifier->notify("READY=1\n");
  }
  int rc = server.run();
  if (rc != 0) {
    throw UserError("keyshift serve stopped with an error", rc);
  }
}

}  // namespace

void add_serve(CLI::App& app) {
  auto opts = std::make_shared<ServeOptions>();
  CLI::App* sub =
      app.add_subcommand("serve", "Run the embedded engine as a Valkey-compatible server");
  sub->footer(
      "Usage: keyshift serve [CONFIGFILE] [-] [--directive value ...]\n"
      "Reads valkey.conf/redis.conf syntax (quotes, include globs, units such as 2gb) and\n"
      "takes directives as flags, as valkey-server does, e.g.\n"
      "  keyshift serve /etc/valkey/valkey.conf --port 6380\n"
      "  keyshift serve --unixsocket /run/valkey/valkey.sock --maxmemory 2gb\n"
      "See man keyshift-serve.\n");
  sub->add_flag("--test-config", opts->test_config,
                "Check the configuration and exit (0 when it loads)");
  sub->allow_extras(true);
  sub->prefix_command(false);
  sub->callback([opts, sub]() {
    opts->args = sub->remaining();
    run_serve(*opts);
  });
}

}  // namespace keyshift::cli
