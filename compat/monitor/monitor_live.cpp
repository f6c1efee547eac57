#include "compat/monitor/monitor_live.hpp"

#include "engine/util/strings.hpp"

#include <fmt/core.h>

#include <random>
#include <thread>

namespace keyshift::compat {
namespace {

using engine::Expected;
using engine::Unexpected;

constexpr std::chrono::milliseconds k_grace{10000};

}  // namespace

Expected<MonitorSummary, std::string> sample_monitor(const engine::RespEndpoint& endpoint,
                                                     std::chrono::milliseconds duration,
                                                     const MonitorHandler& handler) {
  auto monitor = engine::RespConnection::connect(endpoint, duration + k_grace);
  if (!monitor) {
    return Unexpected{monitor.error()};
  }
  auto marker_link = engine::RespConnection::connect(endpoint);
  if (!marker_link) {
    return Unexpected{marker_link.error()};
  }
  auto ok = monitor->call({"MONITOR"});
  if (!ok) {
    return Unexpected{ok.error()};
  }
  if (ok->is_error()) {
    return Unexpected{fmt::format("{}: MONITOR: {}", endpoint.describe(), ok->str)};
  }
  std::random_device rd;
  std::string marker =
      fmt::format("keyshift-monitor-end-{:016x}{:08x}", (uint64_t{rd()} << 32) | rd(), rd());
  std::string marker_error;
  std::thread ender([&] {
    std::this_thread::sleep_for(duration);
    auto r = marker_link->call({"ECHO", marker});
    if (!r) {
      marker_error = r.error();
    }
  });
  MonitorSummary summary;
  MonitorLineParser parser;
  MonitorEntry entry;
  std::string failure;
  for (;;) {
    auto reply = monitor->read_reply();
    if (!reply) {
      failure = reply.error();
      break;
    }
    if (reply->type != engine::RespValue::Type::simple) {
      failure = fmt::format("{}: MONITOR sent something other than a status line: {}",
                            endpoint.describe(), reply->to_display());
      break;
    }
    ++summary.lines;
    summary.bytes += reply->str.size() + 3;
    auto got = parser.parse(reply->str, summary.lines, entry);
    if (!got) {
      failure = fmt::format("{}: MONITOR line {}: column {}: {}", endpoint.describe(),
                            got.error().line, got.error().column, got.error().message);
      break;
    }
    if (!*got) {
      continue;
    }
    if (entry.args.size() == 2 && engine::iequals(entry.args[0], "ECHO") &&
        entry.args[1] == marker) {
      break;  // the end of the sample
    }
    ++summary.entries;
    if (!handler(entry)) {
      break;
    }
  }
  ender.join();
  if (!failure.empty()) {
    return Unexpected{failure};
  }
  if (!marker_error.empty()) {
    return Unexpected{marker_error};
  }
  return summary;
}

std::map<std::string, uint64_t> parse_commandstats(std::string_view info) {
  std::map<std::string, uint64_t> out;
  while (!info.empty()) {
    size_t nl = info.find('\n');
    std::string_view line = info.substr(0, nl);
    info = nl == std::string_view::npos ? std::string_view{} : info.substr(nl + 1);
    if (!line.starts_with("cmdstat_")) {
      continue;
    }
    size_t colon = line.find(':');
    size_t calls = line.find("calls=");
    if (colon == std::string_view::npos || calls == std::string_view::npos) {
      continue;
    }
    uint64_t n = 0;
    for (size_t i = calls + 6; i < line.size() && line[i] >= '0' && line[i] <= '9'; ++i) {
      n = n * 10 + static_cast<uint64_t>(line[i] - '0');
    }
    out[std::string(line.substr(8, colon - 8))] = n;
  }
  return out;
}

Expected<std::map<std::string, uint64_t>, std::string> sample_commandstats(
    const engine::RespEndpoint& endpoint, std::chrono::milliseconds duration) {
  auto link = engine::RespConnection::connect(endpoint);
  if (!link) {
    return Unexpected{link.error()};
  }
  auto before = link->call({"INFO", "commandstats"});
  if (!before) {
    return Unexpected{before.error()};
  }
  if (before->is_error()) {
    return Unexpected{fmt::format("{}: INFO commandstats: {}", endpoint.describe(), before->str)};
  }
  std::this_thread::sleep_for(duration);
  auto after = link->call({"INFO", "commandstats"});
  if (!after) {
    return Unexpected{after.error()};
  }
  auto a = parse_commandstats(before->str);
  auto b = parse_commandstats(after->str);
  std::map<std::string, uint64_t> out;
  for (const auto& [name, calls] : b) {
    uint64_t was = a.count(name) ? a[name] : 0;
    // Our own INFO counts once; a CONFIG RESETSTAT in between makes the delta the new count.
    uint64_t delta = calls >= was ? calls - was : calls;
    if (name == "info" && delta > 0) {
      --delta;
    }
    if (delta > 0) {
      out[name] = delta;
    }
  }
  return out;
}

}  // namespace keyshift::compat
