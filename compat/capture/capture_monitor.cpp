#include "compat/capture/capture_monitor.hpp"

#include "compat/capture/capture_anonymize.hpp"
#include "compat/capture/capture_file.hpp"
#include "compat/capture/capture_proxy.hpp"
#include "compat/capture/capture_session.hpp"
#include "compat/monitor/monitor_live.hpp"
#include "compat/monitor/monitor_log.hpp"
#include "engine/resp/request_writer.hpp"

#include <fmt/core.h>

#include <optional>
#include <unordered_map>
#include <vector>

namespace keyshift::compat::capture {

engine::Expected<MonitorCaptureReport, std::string> capture_from_monitor_log(
    const MonitorCaptureOptions& options) {
  CaptureHeader header;
  header.add("capture.tool", "keyshift capture");
  header.add("capture.keyshift_version", options.keyshift_version);
  header.add("capture.method", options.live ? "monitor" : "monitor-log");
  header.add("capture.source", options.live ? options.live->describe() : options.log);
  if (options.live) {
    header.add("capture.duration_s", fmt::format("{:g}", options.duration.count() / 1000.0));
    read_source_identity(*options.live, header);
  }
  header.add("capture.redact", options.redact ? "on" : "off");
  header.add("capture.anonymize", options.anonymize ? "on" : "off");
  auto writer = CaptureFileWriter::create(options.out, header);
  if (!writer) {
    return engine::Unexpected{writer.error().message()};
  }
  MonitorCaptureReport report;
  std::optional<Anonymizer> anonymizer;
  if (options.anonymize) {
    anonymizer.emplace(Anonymizer::with_random_key());
  }
  std::unordered_map<std::string, uint64_t> conns;
  uint64_t last_caller = 0;
  std::string bytes;
  std::vector<std::string_view> args;
  std::optional<std::string> failure;
  auto fail = [&](std::string message) {
    if (!failure) {
      failure = std::move(message);
    }
    return false;
  };
  auto handler = [&](const compat::MonitorEntry& e) {
    bool nested = e.peer_kind == compat::MonitorPeerKind::lua;
    uint64_t conn = last_caller;
    if (!nested) {
      auto [it, added] = conns.try_emplace(std::string(e.peer), conns.size() + 1);
      conn = it->second;
      last_caller = conn;
      if (added) {
        CaptureEventView open;
        open.kind = EventKind::open;
        open.conn_id = conn;
        open.start_ns = open.end_ns = e.time_us * 1000;
        open.peer = e.peer;
        if (auto err = writer->append(open)) {
          return fail(err->message());
        }
        ++report.connections;
      }
    }
    args.assign(e.args.begin(), e.args.end());
    uint16_t flags = k_flag_no_reply | (nested ? k_flag_nested : k_flag_none);
    bytes.clear();
    std::optional<std::vector<std::string>> redacted;
    if (options.redact) {
      redacted = redact_request(args);
    }
    if (redacted) {
      engine::append_request(bytes, std::span<const std::string>(*redacted));
      flags |= k_flag_redacted;
      ++report.redacted;
    } else {
      engine::append_request(bytes, std::span<const std::string_view>(args));
    }
    if (anonymizer) {
      anonymizer->request(bytes);
      flags |= k_flag_anonymized;
    }
    CaptureEventView request;
    request.kind = EventKind::request;
    request.flags = flags;
    request.conn_id = conn;
    request.start_ns = request.end_ns = e.time_us * 1000;
    request.db = static_cast<uint32_t>(e.db);
    request.bytes = bytes;
    if (auto err = writer->append(request)) {
      return fail(err->message());
    }
    ++report.commands;
    report.nested += nested ? 1 : 0;
    return true;
  };
  auto read = options.live ? compat::sample_monitor(*options.live, options.duration, handler)
                           : compat::read_monitor_file(options.log, handler);
  if (!read) {
    return engine::Unexpected{read.error()};
  }
  if (failure) {
    return engine::Unexpected{*failure};
  }
  for (const auto& [peer, conn] : conns) {
    CaptureEventView close;
    close.kind = EventKind::close;
    close.conn_id = conn;
    if (auto err = writer->append(close)) {
      return engine::Unexpected{err->message()};
    }
  }
  report.events = writer->events();
  if (auto err = writer->close()) {
    return engine::Unexpected{err->message()};
  }
  return report;
}

}  // namespace keyshift::compat::capture
