#include "compat/capture/capture_info.hpp"

#include "compat/report/json_text.hpp"
#include "engine/resp/request_parser.hpp"
#include "engine/util/strings.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <map>
#include <unordered_map>

namespace keyshift::compat::capture {
namespace {

// Commands whose first argument names what they do.
bool is_container(std::string_view upper) {
  static constexpr std::string_view k_containers[] = {
      "ACL",    "CLIENT", "CLUSTER", "COMMAND", "CONFIG",  "FUNCTION", "LATENCY", "MEMORY",
      "MODULE", "OBJECT", "PUBSUB",  "SCRIPT",  "SLOWLOG", "XGROUP",   "XINFO"};
  return std::find(std::begin(k_containers), std::end(k_containers), upper) !=
         std::end(k_containers);
}

std::string format_duration_ns(int64_t ns) {
  return fmt::format("{:.3f} s", static_cast<double>(ns) / 1e9);
}

}  // namespace

std::string request_command_name(std::string_view bytes) {
  engine::RequestParser parser;
  engine::RequestLimits limits;
  if (parser.parse(bytes.data(), bytes.size(), limits) != engine::RequestParser::Status::ready) {
    return "";
  }
  std::vector<std::string_view> args;
  parser.args(bytes.data(), args);
  if (args.empty()) {
    return "";
  }
  std::string name = engine::to_upper(args[0]);
  if (args.size() >= 2 && is_container(name)) {
    name += " " + engine::to_upper(args[1]);
  }
  return name;
}

engine::Expected<CaptureSummary, CaptureOpenError> summarize_capture(const std::string& path) {
  auto reader = CaptureFileReader::open(path);
  if (!reader) {
    return engine::Unexpected{std::move(reader.error())};
  }
  CaptureSummary s;
  s.path = path;
  s.file_size = reader->size();
  s.version = reader->version();
  s.header = reader->header();
  std::unordered_map<std::string, uint64_t> commands;
  // Each connection's last name and lib: a client is counted under what it called itself.
  std::map<uint64_t, std::pair<std::string, std::string>> names;
  CaptureEvent e;
  while (reader->next(e)) {
    ++s.events;
    if (s.first_ns == 0 || (e.start_ns != 0 && e.start_ns < s.first_ns)) {
      s.first_ns = e.start_ns;
    }
    s.last_ns = std::max(s.last_ns, e.end_ns);
    switch (e.kind) {
      case EventKind::open:
        ++s.connections;
        names[e.conn_id] = {e.client_name, e.client_lib};
        break;
      case EventKind::close:
        ++s.closes;
        names[e.conn_id] = {e.client_name, e.client_lib};
        break;
      case EventKind::request: {
        ++s.requests;
        s.request_bytes += e.bytes.size();
        ++commands[request_command_name(e.bytes)];
        if ((e.flags & k_flag_redacted) != 0) {
          ++s.redacted;
        }
        if ((e.flags & k_flag_no_reply) != 0) {
          ++s.no_reply;
        }
        names[e.conn_id] = {e.client_name, e.client_lib};
        break;
      }
      case EventKind::reply:
        ++s.replies;
        s.reply_bytes += e.bytes.size();
        if (!e.bytes.empty() && (e.bytes[0] == '-' || e.bytes[0] == '!')) {
          ++s.error_replies;
        }
        break;
      case EventKind::drop: {
        ++s.drops;
        uint64_t n = 0;
        for (char ch : e.bytes) {
          if (ch < '0' || ch > '9') {
            break;
          }
          n = n * 10 + static_cast<uint64_t>(ch - '0');
        }
        s.dropped_bytes += n;
        break;
      }
    }
  }
  s.damage = reader->damage();
  s.commands.assign(commands.begin(), commands.end());
  std::sort(s.commands.begin(), s.commands.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  std::map<std::pair<std::string, std::string>, uint64_t> clients;
  for (const auto& [id, nl] : names) {
    ++clients[nl];
  }
  for (const auto& [nl, count] : clients) {
    s.clients.push_back({nl.first, nl.second, count});
  }
  std::sort(s.clients.begin(), s.clients.end(),
            [](const auto& a, const auto& b) { return a.connections > b.connections; });
  return s;
}

std::string render_capture_summary(const CaptureSummary& s, bool json, size_t top) {
  int64_t duration = s.last_ns > s.first_ns ? s.last_ns - s.first_ns : 0;
  std::string out;
  if (json) {
    out += "{\"file\":";
    append_json_bytes(out, s.path);
    out += fmt::format(",\"size\":{},\"version\":{},\"header\":{{", s.file_size, s.version);
    for (size_t i = 0; i < s.header.fields.size(); ++i) {
      out += i == 0 ? "" : ",";
      append_json_bytes(out, s.header.fields[i].first);
      out += ":";
      append_json_bytes(out, s.header.fields[i].second);
    }
    out += fmt::format(
        "}},\"first_ns\":{},\"last_ns\":{},\"duration_ns\":{},\"events\":{},\"connections\":{},"
        "\"closes\":{},\"requests\":{},\"replies\":{},\"error_replies\":{},\"redacted\":{},"
        "\"no_reply\":{},\"drops\":{},\"dropped_bytes\":{},\"bytes_to_server\":{},"
        "\"bytes_to_client\":{},\"commands\":[",
        s.first_ns, s.last_ns, duration, s.events, s.connections, s.closes, s.requests, s.replies,
        s.error_replies, s.redacted, s.no_reply, s.drops, s.dropped_bytes, s.request_bytes,
        s.reply_bytes);
    for (size_t i = 0; i < s.commands.size(); ++i) {
      out += i == 0 ? "{\"name\":" : ",{\"name\":";
      append_json_bytes(out, s.commands[i].first);
      out += fmt::format(",\"count\":{}}}", s.commands[i].second);
    }
    out += "],\"clients\":[";
    for (size_t i = 0; i < s.clients.size(); ++i) {
      out += i == 0 ? "{\"name\":" : ",{\"name\":";
      append_json_bytes(out, s.clients[i].name);
      out += ",\"lib\":";
      append_json_bytes(out, s.clients[i].lib);
      out += fmt::format(",\"connections\":{}}}", s.clients[i].connections);
    }
    out += "],\"complete\":";
    out += s.damage ? "false" : "true";
    if (s.damage) {
      out += fmt::format(",\"damage\":{{\"offset\":{},\"reason\":", s.damage->offset);
      append_json_string(out, s.damage->reason);
      out += "}";
    }
    out += "}\n";
    return out;
  }
  out += fmt::format("file:            {} ({} bytes, format version {})\n", s.path, s.file_size,
                     s.version);
  for (std::string_view key : {"capture.method", "capture.listen", "capture.upstream",
                               "source.redis_version", "source.valkey_version", "source.run_id"}) {
    if (const std::string* v = s.header.find(key); v != nullptr && !v->empty()) {
      out += fmt::format("{:<17}{}\n", std::string(key.substr(key.find('.') + 1)) + ":", *v);
    }
  }
  if (const std::string* packets = s.header.find("capture.pcap.packets"); packets != nullptr) {
    // A packet capture says what the packets could not show.
    auto field = [&s](std::string_view key) {
      const std::string* v = s.header.find(key);
      return v != nullptr ? *v : std::string();
    };
    out += fmt::format("source:          {}\n", field("capture.source"));
    out += fmt::format(
        "packets:         {} ({}), {} partial connection(s), {} damaged by {} gap(s) ({} bytes "
        "lost), {} truncated packet(s)\n",
        *packets, field("capture.pcap.link_type"), field("capture.pcap.partial_connections"),
        field("capture.pcap.damaged_connections"), field("capture.pcap.gaps"),
        field("capture.pcap.gap_bytes"), field("capture.pcap.truncated_packets"));
    if (std::string e = field("capture.pcap.file_error"); !e.empty()) {
      out += fmt::format("pcap ends early: {}\n", e);
    }
  }
  out += fmt::format("duration:        {}\n", format_duration_ns(duration));
  out += fmt::format("connections:     {} opened, {} closed\n", s.connections, s.closes);
  out += fmt::format("requests:        {} ({} redacted, {} with replies off)\n", s.requests,
                     s.redacted, s.no_reply);
  out += fmt::format("replies:         {} ({} errors)\n", s.replies, s.error_replies);
  out += fmt::format("bytes:           {} to the server, {} to clients\n", s.request_bytes,
                     s.reply_bytes);
  if (s.drops > 0) {
    out +=
        fmt::format("dropped:         {} times, {} bytes not recorded\n", s.drops, s.dropped_bytes);
  }
  out += "commands:\n";
  for (size_t i = 0; i < s.commands.size() && i < top; ++i) {
    out += fmt::format("  {:>12}  {}\n", s.commands[i].second,
                       s.commands[i].first.empty() ? "(unparsed)" : s.commands[i].first);
  }
  if (s.commands.size() > top) {
    out += fmt::format("  ... and {} more names\n", s.commands.size() - top);
  }
  out += "clients:\n";
  for (const auto& c : s.clients) {
    out += fmt::format("  {:>12}  name={} lib={}\n", c.connections,
                       c.name.empty() ? "(none)" : c.name, c.lib.empty() ? "(none)" : c.lib);
  }
  if (s.damage) {
    out += fmt::format("damaged:         at byte {}: {}; the {} events before it are shown\n",
                       s.damage->offset, s.damage->reason, s.events);
  }
  return out;
}

}  // namespace keyshift::compat::capture
