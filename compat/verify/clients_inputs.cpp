#include "compat/verify/clients_inputs.hpp"

#include "compat/capture/capture_file.hpp"
#include "compat/report/json_value.hpp"
#include "engine/resp/request_parser.hpp"
#include "engine/util/mapped_file.hpp"

#include <fmt/core.h>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>
#include <unordered_map>
#include <vector>

namespace keyshift::compat {
namespace {

MonitorPeerKind peer_kind_of(std::string_view peer) {
  if (peer.starts_with("unix:")) {
    return MonitorPeerKind::unix;
  }
  if (peer.empty()) {
    return MonitorPeerKind::unknown;
  }
  return MonitorPeerKind::tcp;
}

/// A JSON count: a non-negative integer, or the error names the member.
std::optional<uint64_t> count_of(const JsonValue* v) {
  if (v == nullptr || v->type != JsonValue::Type::number || v->number < 0 ||
      v->number != std::floor(v->number)) {
    return std::nullopt;
  }
  return static_cast<uint64_t>(v->number);
}

}  // namespace

engine::Expected<ClientsInputKind, std::string> sniff_clients_input(const std::string& path) {
  if (path == "-") {
    return ClientsInputKind::monitor_log;
  }
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    return engine::Unexpected{fmt::format("{}: {}", path, std::strerror(errno))};
  }
  char head[64];
  size_t n = std::fread(head, 1, sizeof head, f);
  std::fclose(f);
  std::string_view bytes(head, n);
  if (bytes.starts_with(capture::k_capture_magic)) {
    return ClientsInputKind::capture;
  }
  // A MONITOR line starts with a timestamp ("+" or a digit); a JSON report with "{".
  size_t first = 0;
  while (first < bytes.size() && std::isspace(static_cast<unsigned char>(bytes[first])) != 0) {
    ++first;
  }
  if (first < bytes.size() && bytes[first] == '{') {
    return ClientsInputKind::replay_report;
  }
  return ClientsInputKind::monitor_log;
}

engine::Expected<std::string, std::string> read_capture_for_clients(const std::string& path,
                                                                    ClientsAnalyzer& analyzer) {
  auto reader = capture::CaptureFileReader::open(path);
  if (!reader) {
    return engine::Unexpected{
        fmt::format("{}: byte {}: {}", path, reader.error().offset, reader.error().message)};
  }
  struct Conn {
    std::string key;
    std::string peer;
    MonitorPeerKind kind = MonitorPeerKind::unknown;
  };
  std::unordered_map<uint64_t, Conn> conns;
  auto conn_of = [&](uint64_t id) -> Conn& {
    Conn& c = conns[id];
    if (c.key.empty()) {
      // A connection the file saw only mid-stream still counts as one client.
      c.key = fmt::format("capture:{}:{}", path, id);
    }
    return c;
  };
  capture::CaptureEvent e;
  engine::RequestParser parser;
  engine::RequestLimits limits;
  std::vector<std::string_view> args;
  const std::string lua = "lua";
  while (reader->next(e)) {
    if (e.kind == capture::EventKind::open) {
      Conn& c = conn_of(e.conn_id);
      c.peer = e.peer;
      c.kind = peer_kind_of(e.peer);
      analyzer.name_connection(c.key, c.kind, c.peer, e.client_lib, e.client_name);
      continue;
    }
    if (e.kind == capture::EventKind::close) {
      conns.erase(e.conn_id);
      continue;
    }
    if (e.kind != capture::EventKind::request) {
      continue;
    }
    parser.reset();
    args.clear();
    if (parser.parse(e.bytes.data(), e.bytes.size(), limits) !=
        engine::RequestParser::Status::ready) {
      continue;  // replay reports such requests; they name no command to judge
    }
    for (const auto& slice : parser.slices()) {
      args.emplace_back(e.bytes.data() + slice.offset, slice.length);
    }
    Conn& c = conn_of(e.conn_id);
    if ((e.flags & capture::k_flag_nested) != 0) {
      analyzer.add_command("lua", MonitorPeerKind::lua, lua, args);
    } else {
      analyzer.add_command(c.key, c.kind, c.peer, args);
    }
  }
  if (const auto& damage = reader->damage()) {
    return fmt::format("records read up to byte {}: {}", damage->offset, damage->reason);
  }
  return std::string();
}

std::optional<std::string> read_replay_report_for_clients(const std::string& path,
                                                          ClientsAnalyzer& analyzer) {
  auto file = engine::MappedFile::open(path);
  if (!file) {
    return file.error().message();
  }
  JsonValue report;
  try {
    report = parse_json(file->data());
  } catch (const JsonError& e) {
    return fmt::format("{}: byte {}: {}", path, e.offset, e.what());
  }
  const JsonValue* commands = report.find("commands");
  const JsonValue* verdicts = report.find("verdicts");
  if (report.type != JsonValue::Type::object || commands == nullptr ||
      commands->type != JsonValue::Type::object || verdicts == nullptr) {
    return fmt::format(
        "{}: not a keyshift replay report (no \"commands\" and \"verdicts\"; "
        "write one with keyshift replay --format json)",
        path);
  }
  std::string target = "the target";
  if (const JsonValue* t = report.find("target");
      t != nullptr && t->type == JsonValue::Type::string) {
    target = t->string;
  }
  std::map<std::string, uint64_t> calls;
  for (const auto& [name, counts] : commands->object) {
    auto replies = count_of(counts.find("replies"));
    auto differs = count_of(counts.find("differs"));
    auto error_text = count_of(counts.find("error_text"));
    if (!replies || !differs || !error_text) {
      return fmt::format("{}: command \"{}\": replies, differs and error_text must be counts", path,
                         name);
    }
    calls[name] += *replies;
    analyzer.add_replay_evidence(name, target, *replies, *differs, *error_text,
                                 "replay report " + path);
  }
  analyzer.add_replayed_counts(path, calls);
  return std::nullopt;
}

}  // namespace keyshift::compat
