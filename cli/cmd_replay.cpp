// keyshift replay: a capture's requests sent again to a target (by default keyshift's own
// engine), each reply compared with the recorded one.
#include "cli/subcommands.hpp"
#include "cli/tls_flags.hpp"
#include "cli/user_error.hpp"
#include "compat/process/server_process.hpp"
#include "compat/replay/replay.hpp"
#include "engine/resp/server_url.hpp"
#include "engine/util/atomic_file.hpp"

#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <thread>

namespace keyshift::cli {
namespace {

struct ReplayCliOptions {
  std::string file;
  std::string to;
  std::string compare;
  std::string format = "text";
  std::string out;
  int timeout_ms = 5000;
  size_t examples = 20;
  std::string speed = "max";
  std::string connections = "as-recorded";
  bool read_only = false;
  std::optional<double> from_s;
  std::optional<double> until_s;
  engine::TlsClientOptions tls;
};

/// "max" (0), "1x", "2.5x" or "2.5".
double parse_speed(const std::string& text) {
  if (text == "max") {
    return 0;
  }
  std::string digits = text;
  if (!digits.empty() && (digits.back() == 'x' || digits.back() == 'X')) {
    digits.pop_back();
  }
  double v = 0;
  size_t used = 0;
  try {
    v = std::stod(digits, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != digits.size() || !(v > 0) || v > 1e6) {
    throw UserError("keyshift: replay: --speed " + text + ": expected max, 1x, 2x, 0.5x ...", 2);
  }
  return v;
}

void run_replay(const ReplayCliOptions& o) {
  compat::replay::ReplayOptions options;
  options.file = o.file;
  options.reply_timeout = std::chrono::milliseconds(o.timeout_ms);
  options.max_examples = o.examples;
  options.speed = parse_speed(o.speed);
  options.read_only = o.read_only;
  if (o.connections != "as-recorded") {
    char* end = nullptr;
    unsigned long n = std::strtoul(o.connections.c_str(), &end, 10);
    if (o.connections.empty() || *end != '\0' || n == 0 || n > 100000) {
      throw UserError("keyshift: replay: --connections " + o.connections +
                          ": expected as-recorded or a number from 1 to 100000",
                      2);
    }
    options.connections = static_cast<uint32_t>(n);
  }
  options.from_s = o.from_s;
  options.until_s = o.until_s;
  options.wait = [](std::chrono::nanoseconds d) { std::this_thread::sleep_for(d); };
  std::unique_ptr<compat::ServerProcess> engine;
  if (o.to.empty()) {
    // `keyshift serve` from this very binary, on a socket in a private directory.
    compat::ServerLaunch launch{"/proc/self/exe", {"serve"}, {}};
    launch.scratch_prefix = "keyshift-replay-";
    auto started = compat::ServerProcess::start(launch);
    if (!started) {
      throw UserError(
          fmt::format("keyshift: replay: the embedded engine did not start: {}", started.error()),
          1);
    }
    engine = std::move(*started);
    options.target = engine->endpoint();
  } else {
    auto endpoint = engine::parse_redis_url(o.to, o.tls);
    if (!endpoint) {
      throw UserError("keyshift: replay: --to " + o.to + ": " + endpoint.error(), 2);
    }
    options.target = *endpoint;
  }
  if (!o.compare.empty()) {
    auto endpoint = engine::parse_redis_url(o.compare, o.tls);
    if (!endpoint) {
      throw UserError("keyshift: replay: --compare " + o.compare + ": " + endpoint.error(), 2);
    }
    options.compare = *endpoint;
  }
  auto report = compat::replay::replay_capture(options);
  if (!report) {
    throw UserError("keyshift: replay: " + report.error(), 2);
  }
  if (engine) {
    report->target = "keyshift (embedded)";
  }
  std::string text = o.format == "json"   ? compat::replay::render_replay_json(*report)
                     : o.format == "html" ? compat::replay::render_replay_html(*report)
                                          : compat::replay::render_replay_text(*report);
  if (o.out.empty() || o.out == "-") {
    std::fputs(text.c_str(), stdout);
    std::fflush(stdout);
  } else if (auto failed = engine::write_file_atomically(o.out, text)) {
    throw UserError("keyshift: replay: " + failed->message(), 2);
  }
  if (report->damage) {
    // Said on stderr too: a report written to --out (or read as JSON) is not where people
    // look for why the exit status is 1.
    std::fprintf(stderr,
                 "keyshift: replay: %s: damaged at byte %llu (%s); replayed what came before\n",
                 o.file.c_str(), static_cast<unsigned long long>(report->damage->offset),
                 report->damage->reason.c_str());
  }
  if (!report->same() || report->damage) {
    throw UserError("", 1);
  }
}

}  // namespace

void add_replay(CLI::App& app) {
  CLI::App* replay = app.add_subcommand(
      "replay", "Replay a capture against a target and compare every reply with the recorded one");
  replay->footer(
      "Usage:\n"
      "  keyshift replay FILE [--to URL] [--compare URL] [--format text|json|html] [--out F]\n"
      "                  [--speed max|1x|Nx] [--connections as-recorded|N] [--read-only]\n"
      "                  [--from S] [--until S]\n"
      "                  [--timeout-ms N] [--examples N]\n"
      "Without --to the target is keyshift's own engine. Exit 0 when every reply matched,\n"
      "1 when one differed or the file is damaged, 2 for bad input. See man keyshift-replay.\n");
  auto opts = std::make_shared<ReplayCliOptions>();
  replay->add_option("file", opts->file, "The capture file (keyshift capture --out)")->required();
  replay->add_option("--to", opts->to,
                     "Target server URL: redis://, rediss://, unix:// (default: keyshift's "
                     "own engine)");
  replay->add_option("--compare", opts->compare,
                     "A second server: compare the target's replies with its replies instead "
                     "of the recorded ones");
  replay->add_option("--format", opts->format, "Output format: text, json or html")
      ->check(CLI::IsMember({"text", "json", "html"}));
  replay->add_option("--out", opts->out, "Write the report to this file (atomically)");
  replay
      ->add_option("--timeout-ms", opts->timeout_ms,
                   "How long to wait for one reply before that connection stops (default 5000)")
      ->check(CLI::PositiveNumber);
  replay->add_option("--examples", opts->examples, "Differing replies to show (default 20)");
  replay->add_option("--speed", opts->speed,
                     "max (default: as fast as the target answers), 1x (the recorded pace), Nx");
  replay->add_option("--connections", opts->connections,
                     "as-recorded (default), or N: the recorded connections that keep no state "
                     "share N target connections");
  replay->add_flag("--read-only", opts->read_only,
                   "Leave out write commands (and their replies): safe against production");
  replay->add_option("--from", opts->from_s,
                     "Start at this many seconds after the capture's first request");
  replay->add_option("--until", opts->until_s,
                     "Stop at this many seconds after the capture's first request");
  add_tls_flags(*replay, opts->tls);
  replay->callback([opts]() { run_replay(*opts); });
}

}  // namespace keyshift::cli
