// keyshift capture: record real traffic through a transparent RESP proxy into a capture file
// (keyshift-capture(5)), and `capture info` to see what a capture holds.
#include "cli/subcommands.hpp"
#include "cli/user_error.hpp"
#include "compat/capture/capture_info.hpp"
#include "compat/capture/capture_monitor.hpp"
#include "compat/capture/capture_pcap.hpp"
#include "compat/capture/capture_proxy.hpp"
#include "engine/resp/connection.hpp"

#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace keyshift::cli {
namespace {

struct CaptureCliOptions {
  compat::capture::CaptureProxyOptions proxy;
  std::string from_monitor_log;
  std::string from_monitor;
  std::string from_pcap;
  std::vector<uint16_t> ports;
  bool no_redact = false;
  bool anonymize = false;
  std::string info_file;
  std::string format = "text";
};

void run_monitor_log(const CaptureCliOptions& o) {
  std::string flag = o.from_monitor.empty() ? "--from-monitor-log" : "--from-monitor";
  if (!o.proxy.listen.empty() || !o.proxy.upstream.empty() || !o.from_pcap.empty() ||
      (!o.from_monitor.empty() && !o.from_monitor_log.empty())) {
    throw UserError("keyshift: capture: " + flag +
                        " takes no --listen/--upstream/--from-pcap/--from-monitor-log",
                    2);
  }
  if (o.proxy.out.empty()) {
    throw UserError("keyshift: capture: " + flag + " needs --out FILE", 2);
  }
  compat::capture::MonitorCaptureOptions options;
  options.log = o.from_monitor_log;
  if (!o.from_monitor.empty()) {
    if (o.proxy.duration_s <= 0) {
      throw UserError("keyshift: capture: --from-monitor needs --duration S (> 0)", 2);
    }
    auto endpoint = engine::parse_redis_url(o.from_monitor);
    if (!endpoint) {
      throw UserError(
          "keyshift: capture: --from-monitor " + o.from_monitor + ": " + endpoint.error(), 2);
    }
    options.live = *endpoint;
    options.duration = std::chrono::milliseconds(static_cast<int64_t>(o.proxy.duration_s * 1000));
  }
  options.out = o.proxy.out;
  options.redact = !o.no_redact;
  options.anonymize = o.anonymize;
  options.keyshift_version = KEYSHIFT_VERSION;
  auto report = compat::capture::capture_from_monitor_log(options);
  if (!report) {
    throw UserError("keyshift: capture: " + report.error(), 2);
  }
  fmt::print(stderr,
             "keyshift capture: {} commands ({} run by scripts) from {} peers written to {}; "
             "MONITOR shows no replies\n",
             report->commands, report->nested, report->connections, o.proxy.out);
}

void run_pcap(const CaptureCliOptions& o) {
  if (!o.proxy.listen.empty() || !o.proxy.upstream.empty() || !o.from_monitor_log.empty()) {
    throw UserError(
        "keyshift: capture: --from-pcap reads a file: no --listen/--upstream/--from-monitor-log",
        2);
  }
  if (o.proxy.out.empty()) {
    throw UserError("keyshift: capture: --from-pcap needs --out FILE", 2);
  }
  compat::capture::PcapCaptureOptions options;
  options.pcap = o.from_pcap;
  options.out = o.proxy.out;
  if (!o.ports.empty()) {
    options.ports = o.ports;
  }
  options.redact = !o.no_redact;
  options.anonymize = o.anonymize;
  options.keyshift_version = KEYSHIFT_VERSION;
  auto report = compat::capture::capture_from_pcap(options);
  if (!report) {
    throw UserError("keyshift: capture: " + report.error(), 2);
  }
  const auto& r = *report;
  fmt::print(stderr,
             "keyshift capture: {} packets ({}), {} TCP packets on the port(s): {} connections "
             "({} partial), {} requests, {} replies, {} events written to {}\n",
             r.packets, r.link_type, r.tcp_packets, r.connections, r.partial_connections,
             r.requests, r.replies, r.events, o.proxy.out);
  if (r.gaps > 0 || r.truncated_packets > 0) {
    fmt::print(stderr,
               "keyshift capture: {} connection(s) damaged by {} gap(s) ({} bytes lost) and {} "
               "truncated packet(s): each is recorded up to its gap, then a drop event\n",
               r.damaged_connections, r.gaps, r.gap_bytes, r.truncated_packets);
  }
  if (r.skipped_bytes > 0) {
    fmt::print(stderr,
               "keyshift capture: {} bytes of partial connections before their first request "
               "were skipped\n",
               r.skipped_bytes);
  }
  if (!r.file_error.empty()) {
    throw UserError("keyshift: capture: " + o.from_pcap + " ends early (" + r.file_error +
                        "): converted up to there",
                    1);
  }
}

void run_proxy(CaptureCliOptions& o) {
  if (!o.from_pcap.empty()) {
    run_pcap(o);
    return;
  }
  if (!o.from_monitor_log.empty() || !o.from_monitor.empty()) {
    run_monitor_log(o);
    return;
  }
  if (o.proxy.listen.empty() || o.proxy.upstream.empty() || o.proxy.out.empty()) {
    throw UserError(
        "keyshift: capture: give --listen, --upstream and --out (or: keyshift capture info FILE)",
        2);
  }
  if (o.proxy.duration_s < 0) {
    throw UserError("keyshift: capture: --duration must not be negative", 2);
  }
  o.proxy.redact = !o.no_redact;
  o.proxy.anonymize = o.anonymize;
  o.proxy.keyshift_version = KEYSHIFT_VERSION;
  auto report = compat::capture::run_capture_proxy(o.proxy, stderr);
  if (!report) {
    throw UserError("keyshift: capture: " + report.error(), 2);
  }
  const auto& r = *report;
  fmt::print(stderr,
             "keyshift capture: {} connections, {} events written to {}; {} bytes to the server, "
             "{} to clients\n",
             r.connections, r.events, o.proxy.out, r.bytes_to_server, r.bytes_to_client);
  if (r.dropped_events > 0) {
    fmt::print(stderr,
               "keyshift capture: the disk fell behind: {} events ({} bytes) were not recorded "
               "(the traffic was not affected)\n",
               r.dropped_events, r.dropped_bytes);
  }
}

void run_info(const CaptureCliOptions& o) {
  auto summary = compat::capture::summarize_capture(o.info_file);
  if (!summary) {
    throw UserError(fmt::format("keyshift: capture info: {}: {} (at byte {})", o.info_file,
                                summary.error().message, summary.error().offset),
                    2);
  }
  std::string text = compat::capture::render_capture_summary(*summary, o.format == "json");
  std::fputs(text.c_str(), stdout);
  std::fflush(stdout);
  if (summary->damage) {
    throw UserError(fmt::format("keyshift: capture info: {}: damaged at byte {}: {}", o.info_file,
                                summary->damage->offset, summary->damage->reason),
                    1);
  }
}

}  // namespace

void add_capture(CLI::App& app) {
  CLI::App* capture = app.add_subcommand(
      "capture", "Record real traffic through a transparent RESP proxy into a capture file");
  capture->require_subcommand(0, 1);
  capture->footer(
      "Usage:\n"
      "  keyshift capture --listen unix:PATH|HOST:PORT --upstream unix:PATH|HOST:PORT \\\n"
      "                   --out FILE [--duration S] [--no-redact] [--anonymize]\n"
      "  keyshift capture --from-monitor-log LOG --out FILE [--no-redact] [--anonymize]\n"
      "  keyshift capture --from-monitor URL --duration S --out FILE [--no-redact] "
      "[--anonymize]\n"
      "  keyshift capture --from-pcap PCAP [--port 6379]... --out FILE [--no-redact] "
      "[--anonymize]\n"
      "  keyshift capture info FILE [--format text|json]\n"
      "Every byte is passed through unchanged; stops at SIGINT/SIGTERM or after --duration.\n"
      "See man keyshift-capture and keyshift-capture(5).\n");
  auto opts = std::make_shared<CaptureCliOptions>();
  capture->add_option("--listen", opts->proxy.listen,
                      "Where clients connect: unix:PATH, HOST:PORT or PORT");
  capture->add_option("--upstream", opts->proxy.upstream,
                      "The server traffic goes to: unix:PATH, HOST:PORT or PORT");
  capture->add_option("--out", opts->proxy.out, "The capture file to write");
  capture->add_option("--from-monitor-log", opts->from_monitor_log,
                      "Read a MONITOR log (redis-cli monitor's output; - for stdin) instead of "
                      "proxying");
  capture->add_option("--from-monitor", opts->from_monitor,
                      "Run MONITOR on this server (redis://, rediss://, unix://) for --duration "
                      "seconds instead of proxying (it costs the server throughput)");
  capture->add_option("--from-pcap", opts->from_pcap,
                      "Read a packet capture (pcap or pcapng, tcpdump -w) instead of proxying");
  capture
      ->add_option("--port", opts->ports,
                   "With --from-pcap: the server's TCP port (default 6379; may be repeated)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  capture->add_option("--duration", opts->proxy.duration_s,
                      "Stop after this many seconds (default: at SIGINT/SIGTERM)");
  capture->add_flag("--no-redact", opts->no_redact,
                    "Keep AUTH passwords and other secrets in the file (off by default)");
  capture->add_flag("--anonymize", opts->anonymize,
                    "Replace keys and values with keyed hashes of the same length (hash tags, "
                    "option words and numbers kept)");
  capture->add_option("--max-queued", opts->proxy.max_queued_bytes,
                      "Bytes of records that may wait for the disk before recording is dropped");

  CLI::App* info = capture->add_subcommand("info", "Summarise a capture file");
  info->add_option("file", opts->info_file, "The capture file")->required();
  info->add_option("--format", opts->format, "Output format: text or json")
      ->check(CLI::IsMember({"text", "json"}));
  info->callback([opts]() { run_info(*opts); });

  capture->callback([opts, info]() {
    if (info->parsed()) {
      return;
    }
    run_proxy(*opts);
  });
}

}  // namespace keyshift::cli
