#include "compat/verify/clients.hpp"

#include "compat/report/html_page.hpp"
#include "compat/report/json_text.hpp"
#include "engine/util/strings.hpp"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>

namespace keyshift::compat {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

/// The command row `name` has in any line, newest first: for option words of commands the
/// target lacks, and to tell a real command from a typo.
const kb::KbCommand* find_anywhere(std::string_view name) {
  auto profiles = kb::all_profiles();
  for (auto it = profiles.rbegin(); it != profiles.rend(); ++it) {
    if (const kb::KbCommand* c = kb::find_command(*it, name)) {
      return c;
    }
  }
  return nullptr;
}

/// The oldest line of `project` whose row of `command` takes option `token`.
std::optional<kb::ProfileId> first_with_option(std::string_view project, std::string_view command,
                                               std::string_view token) {
  for (kb::ProfileId id : kb::all_profiles()) {
    if (kb::profile_info(id).project != project) {
      continue;
    }
    const kb::KbCommand* c = kb::find_command(id, command);
    if (c != nullptr && kb::has_argument(*c, token)) {
      return id;
    }
  }
  return std::nullopt;
}

/// Any line whose row of `command` takes option `token`, newest first.
std::optional<kb::ProfileId> any_with_option(std::string_view command, std::string_view token) {
  auto profiles = kb::all_profiles();
  for (auto it = profiles.rbegin(); it != profiles.rend(); ++it) {
    const kb::KbCommand* c = kb::find_command(*it, command);
    if (c != nullptr && kb::has_argument(*c, token)) {
      return *it;
    }
  }
  return std::nullopt;
}

bool note_names(const kb::KbNote& n, std::string_view command) {
  std::string_view rest = n.commands;
  while (!rest.empty()) {
    size_t space = rest.find(' ');
    if (rest.substr(0, space) == command) {
      return true;
    }
    rest = space == std::string_view::npos ? std::string_view{} : rest.substr(space + 1);
  }
  return false;
}

/// The host part of a peer ("10.0.0.5:4410" → "10.0.0.5", "[::1]:6379" → "::1").
std::string host_of(MonitorPeerKind kind, std::string_view peer) {
  if (kind != MonitorPeerKind::tcp) {
    return std::string(peer);
  }
  if (!peer.empty() && peer[0] == '[') {
    size_t close = peer.find(']');
    return std::string(peer.substr(1, close == std::string_view::npos ? peer.size() : close - 1));
  }
  size_t colon = peer.rfind(':');
  return std::string(colon == std::string_view::npos ? peer : peer.substr(0, colon));
}

constexpr std::string_view k_redacted = "(redacted)";

}  // namespace

std::string_view client_verdict_name(ClientVerdict v) {
  switch (v) {
    case ClientVerdict::ok:
      return "ok";
    case ClientVerdict::missing:
      return "missing";
    case ClientVerdict::differs:
      return "differs";
    case ClientVerdict::depends_on_config:
      return "config";
    case ClientVerdict::module:
      return "module";
    case ClientVerdict::unknown:
      return "unknown";
  }
  return "ok";
}

bool ClientsReport::all_ok() const {
  for (const auto& [verdict, n] : items_by_verdict) {
    if (verdict != ClientVerdict::ok && n > 0) {
      return false;
    }
  }
  return true;
}

std::string redacted_example(std::span<const std::string_view> args, size_t max) {
  std::vector<bool> hide(args.size(), false);
  std::string cmd = args.empty() ? std::string{} : lower(args[0]);
  if (cmd == "auth") {
    for (size_t i = 1; i < args.size(); ++i) {
      hide[i] = true;
    }
  } else if (cmd == "hello") {
    for (size_t i = 1; i + 2 < args.size(); ++i) {
      if (engine::iequals(args[i], "AUTH")) {
        hide[i + 1] = hide[i + 2] = true;
      }
    }
  } else if (cmd == "migrate") {
    for (size_t i = 1; i < args.size(); ++i) {
      if (engine::iequals(args[i], "AUTH") && i + 1 < args.size()) {
        hide[i + 1] = true;
      } else if (engine::iequals(args[i], "AUTH2") && i + 2 < args.size()) {
        hide[i + 1] = hide[i + 2] = true;
      }
    }
  } else if (cmd == "config" && args.size() >= 2 && engine::iequals(args[1], "SET")) {
    for (size_t i = 2; i + 1 < args.size(); i += 2) {
      std::string name = lower(args[i]);
      if (name == "requirepass" || name == "masterauth" || name == "primaryauth" ||
          name == "masteruser" || name == "primaryuser" || name == "tls-key-file-pass" ||
          name == "tls-client-key-file-pass") {
        hide[i + 1] = true;
      }
    }
  } else if (cmd == "acl" && args.size() >= 2 && engine::iequals(args[1], "SETUSER")) {
    for (size_t i = 3; i < args.size(); ++i) {
      if (!args[i].empty() &&
          (args[i][0] == '>' || args[i][0] == '#' || args[i][0] == '<' || args[i][0] == '!')) {
        hide[i] = true;
      }
    }
  }
  std::string out;
  for (size_t i = 0; i < args.size(); ++i) {
    if (i > 0) {
      out.push_back(' ');
    }
    out += hide[i] ? monitor_quote(k_redacted) : monitor_quote(args[i]);
    if (out.size() > max) {
      out.resize(max);
      out += "...";
      break;
    }
  }
  return out;
}

struct ClientsAnalyzer::Item {
  uint64_t count = 0;
  std::string example;
  ClientVerdict verdict = ClientVerdict::ok;
  std::string detail;
  std::string source;
};

struct ClientsAnalyzer::Peer {
  MonitorPeerKind kind = MonitorPeerKind::unknown;
  std::string peer;
  std::string lib_name;
  std::string lib_ver;
  std::string client_name;
  uint64_t commands = 0;
  std::unordered_map<uint32_t, Item> items;  ///< by item id
};

struct ClientsAnalyzer::CommandInfo {
  uint32_t item = 0;       ///< the command's own item
  bool container = false;  ///< some line has subcommands "name|..."
  bool known_to_target = false;
  bool known_anywhere = false;  ///< some line has it (false: a typo or a module command)
  /// Option words that matter (added later, or lacking on the target), with their item ids.
  std::vector<std::pair<std::string, uint32_t>> options;
};

ClientsAnalyzer::ClientsAnalyzer(kb::ProfileId source, kb::ProfileId target, bool source_given)
    : m_source(source), m_target(target), m_source_given(source_given) {}

ClientsAnalyzer::~ClientsAnalyzer() = default;

uint32_t ClientsAnalyzer::intern(std::string item) {
  auto it = m_item_ids.find(item);
  if (it != m_item_ids.end()) {
    return it->second;
  }
  auto id = static_cast<uint32_t>(m_item_names.size());
  m_item_names.push_back(item);
  m_item_ids.emplace(std::move(item), id);
  return id;
}

const ClientsAnalyzer::CommandInfo& ClientsAnalyzer::command_info(std::string_view lower_name) {
  auto found = m_commands_seen.find(lower_name);
  if (found != m_commands_seen.end()) {
    return *found->second;
  }
  auto info = std::make_unique<CommandInfo>();
  std::string name(lower_name);
  info->item = intern(name);
  if (name.find('|') == std::string::npos) {
    // A container is a command some line lists subcommands of.
    for (kb::ProfileId id : kb::all_profiles()) {
      for (const kb::KbCommand* c : kb::commands_of(id)) {
        if (c->name.size() > name.size() && c->name.starts_with(name) &&
            c->name[name.size()] == '|') {
          info->container = true;
          break;
        }
      }
      if (info->container) {
        break;
      }
    }
  }
  const kb::KbCommand* target = kb::find_command(m_target, name);
  info->known_to_target = target != nullptr;
  info->known_anywhere = find_anywhere(name) != nullptr;
  if (target != nullptr) {
    // Every option word any line's row of this command has, kept when it matters here.
    std::vector<std::string> tokens;
    for (kb::ProfileId id : kb::all_profiles()) {
      const kb::KbCommand* c = kb::find_command(id, name);
      if (c == nullptr) {
        continue;
      }
      std::string_view rest = c->arguments;
      while (!rest.empty()) {
        size_t space = rest.find(' ');
        std::string_view w = rest.substr(0, space);
        rest = space == std::string_view::npos ? std::string_view{} : rest.substr(space + 1);
        std::string token(w.substr(0, w.find('@')));
        if (token.empty() || token == "?") {
          continue;
        }
        if (std::find(tokens.begin(), tokens.end(), token) == tokens.end()) {
          tokens.push_back(token);
        }
      }
    }
    for (std::string& token : tokens) {
      bool later = !kb::argument_since(*target, token).empty();
      bool lacks = !kb::has_argument(*target, token);
      if (later || lacks) {
        uint32_t id = intern(name + " " + token);
        info->options.emplace_back(std::move(token), id);
      }
    }
  }
  const CommandInfo& ref = *info;
  m_commands_seen.emplace(std::move(name), std::move(info));
  return ref;
}

void ClientsAnalyzer::items_of(std::span<const std::string_view> args, std::vector<uint32_t>& out) {
  out.clear();
  m_name_scratch.assign(args[0]);
  for (char& c : m_name_scratch) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  const CommandInfo* info = &command_info(m_name_scratch);
  size_t first = 2;
  if (info->container && args.size() >= 2) {
    m_name_scratch.push_back('|');
    for (char c : args[1]) {
      m_name_scratch.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    }
    const CommandInfo& sub = command_info(m_name_scratch);
    if (sub.known_anywhere) {
      info = &sub;
      first = 3;
    }
  }
  out.push_back(info->item);
  // A value that happens to spell an option word counts as that option.
  for (size_t i = first; i < args.size() && !info->options.empty(); ++i) {
    for (const auto& [token, id] : info->options) {
      if (engine::iequals(args[i], token) && std::find(out.begin(), out.end(), id) == out.end()) {
        out.push_back(id);
      }
    }
  }
}

ClientsAnalyzer::Item ClientsAnalyzer::judge(const std::string& item) const {
  Item it = judge_by_kb(item);
  auto e = m_evidence.find(item);
  if (e == m_evidence.end() || (e->second.differs == 0 && e->second.error_text == 0)) {
    return it;
  }
  // What a replay saw outranks what the tables predict, except a command the target lacks.
  if (it.verdict == ClientVerdict::missing || it.verdict == ClientVerdict::unknown ||
      it.verdict == ClientVerdict::module) {
    return it;
  }
  const Evidence& ev = e->second;
  it.verdict = ClientVerdict::differs;
  std::string seen =
      ev.differs > 0 ? fmt::format("replayed against {}: {} of {} replies differed", ev.target,
                                   ev.differs, ev.replies)
                     : fmt::format("replayed against {}: {} of {} error replies had another text",
                                   ev.target, ev.error_text, ev.replies);
  it.detail = it.detail.empty() ? seen : seen + ". " + it.detail;
  it.source = it.source.empty() ? ev.source : ev.source + "; " + it.source;
  return it;
}

ClientsAnalyzer::Item ClientsAnalyzer::judge_by_kb(const std::string& item) const {
  Item it;
  size_t space = item.find(' ');
  std::string command = item.substr(0, space);
  std::string_view project = kb::profile_info(m_target).project;
  if (space != std::string::npos) {
    std::string token = item.substr(space + 1);
    const kb::KbCommand* target = kb::find_command(m_target, command);
    if (target != nullptr && kb::has_argument(*target, token)) {
      std::string_view since = kb::argument_since(*target, token);
      it.verdict = ClientVerdict::ok;
      it.detail = since.empty() ? "" : fmt::format("since {}", since);
      return it;
    }
    it.verdict = ClientVerdict::missing;
    if (auto later = first_with_option(project, command, token)) {
      it.detail = fmt::format("{} has it", kb::profile_info(*later).name);
    } else if (auto any = any_with_option(command, token)) {
      it.detail =
          fmt::format("no {} release has it ({} has)", project, kb::profile_info(*any).name);
    }
    return it;
  }
  if (kb::find_command(m_target, command) == nullptr) {
    if (const kb::KbModuleFamily* family = kb::module_family_of(command)) {
      it.verdict = ClientVerdict::module;
      it.detail = fmt::format("module command ({}; built into {}; elsewhere: {})", family->module,
                              family->builtin_in, family->elsewhere);
      it.source = std::string(family->source);
      return it;
    }
    if (auto later = kb::first_profile_with(project, command)) {
      it.verdict = ClientVerdict::missing;
      it.detail = fmt::format("{} has it", kb::profile_info(*later).name);
      return it;
    }
    if (find_anywhere(command) != nullptr) {
      it.verdict = ClientVerdict::missing;
      it.detail = fmt::format("no {} release has it", project);
      return it;
    }
    it.verdict = ClientVerdict::unknown;
    it.detail = "no server line keyshift knows has this command";
    return it;
  }
  for (const kb::KbNote* n : kb::notes()) {
    if (!note_names(*n, command)) {
      continue;
    }
    bool on_target = kb::applies_to(*n, m_target);
    bool relevant = n->topic == kb::NoteTopic::configuration
                        ? on_target
                        : on_target != kb::applies_to(*n, m_source);
    if (!relevant) {
      continue;
    }
    ClientVerdict v = n->topic == kb::NoteTopic::configuration ? ClientVerdict::depends_on_config
                                                               : ClientVerdict::differs;
    if (it.verdict == ClientVerdict::ok || v == ClientVerdict::differs) {
      it.verdict = v;
    }
    if (!it.detail.empty()) {
      it.detail += " ";
      it.source += "; ";
    }
    it.detail += std::string(n->text);
    it.source += std::string(n->source);
  }
  return it;
}

ClientsAnalyzer::Peer& ClientsAnalyzer::peer_of(std::string_view conn, MonitorPeerKind kind,
                                                std::string_view peer) {
  auto slot = m_peers.find(conn);
  if (slot == m_peers.end()) {
    auto fresh = std::make_unique<Peer>();
    fresh->kind = kind;
    fresh->peer = std::string(peer);
    slot = m_peers.emplace(std::string(conn), std::move(fresh)).first;
  }
  return *slot->second;
}

void ClientsAnalyzer::add(const MonitorEntry& entry) {
  // MONITOR shows no connection, only its peer: each peer counts as one connection.
  std::string_view key = entry.peer_kind == MonitorPeerKind::unknown ? "?" : entry.peer;
  add_command(key, entry.peer_kind, key, entry.args);
}

void ClientsAnalyzer::name_connection(std::string_view conn, MonitorPeerKind kind,
                                      std::string_view peer, std::string_view client_lib,
                                      std::string_view client_name) {
  Peer& p = peer_of(conn, kind, peer);
  if (!client_lib.empty()) {
    size_t space = client_lib.rfind(' ');
    p.lib_name = std::string(client_lib.substr(0, space));
    p.lib_ver = space == std::string_view::npos ? "" : std::string(client_lib.substr(space + 1));
  }
  if (!client_name.empty()) {
    p.client_name = std::string(client_name);
  }
}

void ClientsAnalyzer::add_command(std::string_view conn, MonitorPeerKind kind,
                                  std::string_view peer, std::span<const std::string_view> args) {
  if (args.empty()) {
    return;
  }
  ++m_commands;
  Peer& p = peer_of(conn, kind, peer);
  ++p.commands;
  // How the client names itself: CLIENT SETINFO LIB-NAME/LIB-VER, CLIENT SETNAME, HELLO SETNAME.
  if (args.size() >= 4 && engine::iequals(args[0], "CLIENT") &&
      engine::iequals(args[1], "SETINFO")) {
    if (engine::iequals(args[2], "LIB-NAME")) {
      p.lib_name = std::string(args[3]);
    } else if (engine::iequals(args[2], "LIB-VER")) {
      p.lib_ver = std::string(args[3]);
    }
  } else if (args.size() >= 3 && engine::iequals(args[0], "CLIENT") &&
             engine::iequals(args[1], "SETNAME")) {
    p.client_name = std::string(args[2]);
  } else if (engine::iequals(args[0], "HELLO")) {
    for (size_t i = 1; i + 1 < args.size(); ++i) {
      if (engine::iequals(args[i], "SETNAME")) {
        p.client_name = std::string(args[i + 1]);
      }
    }
  }
  items_of(args, m_items_scratch);
  for (uint32_t id : m_items_scratch) {
    Item& item = p.items[id];
    if (item.count++ == 0) {
      item.example = redacted_example(args);
    }
  }
}

void ClientsAnalyzer::add_counts_as(std::string_view conn, std::string label,
                                    std::string_view example,
                                    const std::map<std::string, uint64_t>& calls) {
  Peer& p = peer_of(conn, MonitorPeerKind::unknown, conn);
  p.client_name = std::move(label);
  for (const auto& [name, count] : calls) {
    m_commands += count;
    p.commands += count;
    Item& item = p.items[command_info(name).item];
    if (item.count == 0) {
      item.example = std::string(example);
    }
    item.count += count;
  }
}

void ClientsAnalyzer::add_counts(const std::map<std::string, uint64_t>& calls) {
  add_counts_as("commandstats", "every client (INFO commandstats)",
                "(counts only: INFO commandstats shows no arguments)", calls);
}

void ClientsAnalyzer::add_replayed_counts(std::string label,
                                          const std::map<std::string, uint64_t>& calls) {
  add_counts_as("replay:" + label, "every client (replay report " + label + ")",
                "(counts only: a replay report shows no arguments)", calls);
}

void ClientsAnalyzer::add_replay_evidence(const std::string& command, std::string target,
                                          uint64_t replies, uint64_t differs, uint64_t error_text,
                                          std::string source) {
  Evidence& e = m_evidence[command];
  e.target = std::move(target);
  e.replies += replies;
  e.differs += differs;
  e.error_text += error_text;
  e.source = std::move(source);
}

ClientsReport ClientsAnalyzer::report(std::string method) const {
  ClientsReport r;
  r.source = m_source;
  r.target = m_target;
  r.source_given = m_source_given;
  r.inputs = m_inputs;
  r.method = std::move(method);
  r.commands = m_commands;
  // Peers merge into clients: one library (or name) on one host.
  std::map<std::pair<std::string, std::string>, ClientGroup> groups;
  std::map<std::string, ClientUsage> overall;
  std::map<std::string, Item> verdicts;
  for (const auto& [key, peer] : m_peers) {
    std::string name;
    if (peer->kind == MonitorPeerKind::lua) {
      name = "scripts";
    } else if (!peer->lib_name.empty()) {
      name = peer->lib_ver.empty() ? peer->lib_name : peer->lib_name + " " + peer->lib_ver;
    } else if (peer->kind == MonitorPeerKind::unknown && key != "?") {
      name = peer->client_name;  // counts of every client (commandstats, a replay report)
    } else if (!peer->client_name.empty()) {
      name = "client named " + peer->client_name;
    } else {
      name = "unidentified client";
    }
    std::string address = peer->kind == MonitorPeerKind::unknown && key != "?"
                              ? "all connections"
                              : host_of(peer->kind, peer->peer);
    ClientGroup& g = groups[{name, address}];
    g.name = name;
    g.address = address;
    ++g.connections;
    g.commands += peer->commands;
    for (const auto& [item_id, item] : peer->items) {
      const std::string& item_name = m_item_names[item_id];
      auto v = verdicts.find(item_name);
      if (v == verdicts.end()) {
        v = verdicts.emplace(item_name, judge(item_name)).first;
      }
      auto found = std::find_if(g.usage.begin(), g.usage.end(),
                                [&](const ClientUsage& u) { return u.item == item_name; });
      if (found == g.usage.end()) {
        g.usage.push_back(ClientUsage{item_name, 0, item.example, v->second.verdict,
                                      v->second.detail, v->second.source});
        found = g.usage.end() - 1;
      }
      found->count += item.count;
      ClientUsage& o = overall[item_name];
      if (o.count == 0) {
        o = ClientUsage{item_name,       0, item.example, v->second.verdict, v->second.detail,
                        v->second.source};
      }
      o.count += item.count;
    }
  }
  auto by_count = [](const ClientUsage& a, const ClientUsage& b) {
    return a.count != b.count ? a.count > b.count : a.item < b.item;
  };
  for (auto& [key, g] : groups) {
    std::sort(g.usage.begin(), g.usage.end(), by_count);
    r.clients.push_back(std::move(g));
  }
  std::sort(r.clients.begin(), r.clients.end(), [](const ClientGroup& a, const ClientGroup& b) {
    return a.commands != b.commands ? a.commands > b.commands : a.name < b.name;
  });
  for (auto& [name, u] : overall) {
    ++r.items_by_verdict[u.verdict];
    r.overall.push_back(std::move(u));
  }
  std::sort(r.overall.begin(), r.overall.end(), by_count);
  return r;
}

// ---- rendering ----

namespace {

std::string headline(const ClientsReport& r) {
  return fmt::format(
      "{} commands from {} client(s), {} distinct commands and options; target {}, "
      "source {}{}",
      r.commands, r.clients.size(), r.overall.size(), kb::profile_info(r.target).name,
      kb::profile_info(r.source).name, r.source_given ? "" : " (assumed; give --source)");
}

std::string verdict_counts(const ClientsReport& r) {
  std::string out;
  for (ClientVerdict v :
       {ClientVerdict::ok, ClientVerdict::missing, ClientVerdict::differs,
        ClientVerdict::depends_on_config, ClientVerdict::module, ClientVerdict::unknown}) {
    auto it = r.items_by_verdict.find(v);
    uint64_t n = it == r.items_by_verdict.end() ? 0 : it->second;
    out += fmt::format("{}{} {}", out.empty() ? "" : ", ", n, client_verdict_name(v));
  }
  return out;
}

std::string derived_warning(const ClientsReport& r) {
  if (kb::profile_info(r.target).exact && kb::profile_info(r.source).exact) {
    return {};
  }
  return "a derived command table is involved (see keyshift kb profiles): options of commands "
         "added by hand are not all known";
}

}  // namespace

std::string render_clients_text(const ClientsReport& r) {
  std::string out = headline(r) + "\n";
  out += fmt::format("read: {} ({})\n", fmt::join(r.inputs, ", "), r.method);
  out += "verdicts: " + verdict_counts(r) + "\n";
  if (std::string w = derived_warning(r); !w.empty()) {
    out += "note: " + w + "\n";
  }
  for (const ClientGroup& g : r.clients) {
    out += fmt::format("\n{} on {} ({} connection(s), {} commands)\n", g.name, g.address,
                       g.connections, g.commands);
    for (const ClientUsage& u : g.usage) {
      out += fmt::format("  {:<8} {:<28} {:>10}x", client_verdict_name(u.verdict), u.item, u.count);
      if (!u.detail.empty()) {
        out += "  " + u.detail;
      }
      out += "\n";
      if (u.verdict != ClientVerdict::ok) {
        out += "           e.g. " + u.example + "\n";
        if (!u.source.empty()) {
          out += "           source: " + u.source + "\n";
        }
      }
    }
  }
  out += r.all_ok() ? "\nverdict: everything the clients used works on the target\n"
                    : "\nverdict: some of what the clients used is missing or different on the "
                      "target\n";
  return out;
}

namespace {

std::string md_cell(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '|') {
      out += "\\|";
    } else if (c == '\n') {
      out += ' ';
    } else {
      out.push_back(c);
    }
  }
  return out;
}

}  // namespace

std::string render_clients_markdown(const ClientsReport& r) {
  std::string out = "# keyshift verify clients\n\n" + headline(r) + "\n\n";
  out += "Verdicts: " + verdict_counts(r) + "\n\n";
  if (std::string w = derived_warning(r); !w.empty()) {
    out += "> Note: " + w + "\n\n";
  }
  for (const ClientGroup& g : r.clients) {
    out += fmt::format("## {} on {}\n\n{} connection(s), {} commands\n\n", md_cell(g.name),
                       md_cell(g.address), g.connections, g.commands);
    out += "| verdict | command | count | detail | example |\n|---|---|---:|---|---|\n";
    for (const ClientUsage& u : g.usage) {
      out += fmt::format("| {} | `{}` | {} | {} | `{}` |\n", client_verdict_name(u.verdict),
                         md_cell(u.item), u.count, md_cell(u.detail), md_cell(u.example));
    }
    out += "\n";
  }
  return out;
}

namespace {

void append_usage_json(std::string& out, const ClientUsage& u) {
  out += "{\"item\":";
  append_json_string(out, u.item);
  out += fmt::format(",\"count\":{},\"verdict\":", u.count);
  append_json_string(out, client_verdict_name(u.verdict));
  out += ",\"detail\":";
  append_json_string(out, u.detail);
  out += ",\"source\":";
  append_json_string(out, u.source);
  out += ",\"example\":";
  append_json_bytes(out, u.example);
  out += '}';
}

}  // namespace

std::string render_clients_json(const ClientsReport& r) {
  std::string out = "{\"target\":";
  append_json_string(out, kb::profile_info(r.target).name);
  out += ",\"source\":";
  append_json_string(out, kb::profile_info(r.source).name);
  out += fmt::format(",\"source_given\":{},\"method\":", r.source_given ? "true" : "false");
  append_json_string(out, r.method);
  out += ",\"inputs\":[";
  for (size_t i = 0; i < r.inputs.size(); ++i) {
    if (i > 0) {
      out += ',';
    }
    append_json_bytes(out, r.inputs[i]);
  }
  out += fmt::format("],\"commands\":{},\"all_ok\":{},\"verdicts\":{{", r.commands,
                     r.all_ok() ? "true" : "false");
  bool first = true;
  for (const auto& [v, n] : r.items_by_verdict) {
    out += first ? "" : ",";
    append_json_string(out, client_verdict_name(v));
    out += fmt::format(":{}", n);
    first = false;
  }
  out += "},\"overall\":[";
  for (size_t i = 0; i < r.overall.size(); ++i) {
    if (i > 0) {
      out += ',';
    }
    append_usage_json(out, r.overall[i]);
  }
  out += "],\"clients\":[";
  for (size_t i = 0; i < r.clients.size(); ++i) {
    const ClientGroup& g = r.clients[i];
    out += i > 0 ? ",{\"name\":" : "{\"name\":";
    append_json_bytes(out, g.name);
    out += ",\"address\":";
    append_json_bytes(out, g.address);
    out +=
        fmt::format(",\"connections\":{},\"commands\":{},\"usage\":[", g.connections, g.commands);
    for (size_t j = 0; j < g.usage.size(); ++j) {
      if (j > 0) {
        out += ',';
      }
      append_usage_json(out, g.usage[j]);
    }
    out += "]}";
  }
  out += "]}\n";
  return out;
}

std::string render_clients_html(const ClientsReport& r) {
  std::string out =
      html_page_start("keyshift verify clients",
                      ".v-ok{color:#1a7f37}.v-missing,.v-unknown{color:#cf222e;font-weight:600}"
                      ".v-differs,.v-config,.v-module{color:#9a6700;font-weight:600}"
                      "td code{white-space:pre-wrap;word-break:break-all}");
  out += "<p class=\"meta\">" + html_escape(headline(r)) + "</p>\n";
  out += "<p class=\"meta\">Verdicts: " + html_escape(verdict_counts(r)) + "</p>\n";
  if (std::string w = derived_warning(r); !w.empty()) {
    out += "<p class=\"warning\">" + html_escape(w) + "</p>\n";
  }
  // A bar chart of command uses by verdict (counts summed over every client).
  std::map<ClientVerdict, uint64_t> uses;
  uint64_t most = 1;
  for (const ClientUsage& u : r.overall) {
    uses[u.verdict] += u.count;
  }
  for (const auto& [v, n] : uses) {
    most = std::max(most, n);
  }
  int rows = static_cast<int>(uses.size());
  out += fmt::format(
      "<figure class=\"chart\"><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"520\" "
      "height=\"{}\" role=\"img\" aria-label=\"command uses by verdict\">\n",
      rows * 28 + 8);
  int y = 4;
  for (const auto& [v, n] : uses) {
    int width = static_cast<int>(360.0 * static_cast<double>(n) / static_cast<double>(most));
    const char* color = v == ClientVerdict::ok                                       ? "#1a7f37"
                        : v == ClientVerdict::missing || v == ClientVerdict::unknown ? "#cf222e"
                                                                                     : "#bf8700";
    out += fmt::format(
        "<text x=\"0\" y=\"{}\" font-size=\"13\">{}</text><rect x=\"80\" y=\"{}\" width=\"{}\" "
        "height=\"20\" fill=\"{}\"/><text x=\"{}\" y=\"{}\" font-size=\"13\">{}</text>\n",
        y + 15, client_verdict_name(v), y, std::max(width, 1), color, 86 + width, y + 15, n);
    y += 28;
  }
  out += "</svg><figcaption>Command uses by verdict</figcaption></figure>\n";
  for (const ClientGroup& g : r.clients) {
    out += fmt::format("<h2>{} on {}</h2>\n<p class=\"meta\">{} connection(s), {} commands</p>\n",
                       html_escape(g.name), html_escape(g.address), g.connections, g.commands);
    out +=
        "<div class=\"scroll\"><table><thead><tr><th>verdict</th><th>command</th>"
        "<th>count</th><th>detail</th><th>example</th></tr></thead><tbody>\n";
    for (const ClientUsage& u : g.usage) {
      out += fmt::format(
          "<tr><td class=\"v-{0}\">{0}</td><td><code>{1}</code></td><td>{2}</td><td>{3}{4}</td>"
          "<td><code>{5}</code></td></tr>\n",
          client_verdict_name(u.verdict), html_escape(u.item), u.count, html_escape(u.detail),
          u.source.empty() ? std::string{} : " <small>(" + html_escape(u.source) + ")</small>",
          html_escape(u.example));
    }
    out += "</tbody></table></div>\n";
  }
  out += html_page_end();
  return out;
}

// JUnit text and attributes use html_escape: its entities and \xNN forms are valid XML 1.0.
std::string render_clients_junit(const ClientsReport& r) {
  uint64_t tests = 0;
  uint64_t failures = 0;
  for (const ClientGroup& g : r.clients) {
    for (const ClientUsage& u : g.usage) {
      ++tests;
      failures += u.verdict == ClientVerdict::ok ? 0 : 1;
    }
  }
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out +=
      fmt::format("<testsuites name=\"keyshift verify clients {}\" tests=\"{}\" failures=\"{}\">\n",
                  html_escape(kb::profile_info(r.target).name), tests, failures);
  for (const ClientGroup& g : r.clients) {
    uint64_t f = 0;
    for (const ClientUsage& u : g.usage) {
      f += u.verdict == ClientVerdict::ok ? 0 : 1;
    }
    out +=
        fmt::format("  <testsuite name=\"{} on {}\" tests=\"{}\" failures=\"{}\" errors=\"0\">\n",
                    html_escape(g.name), html_escape(g.address), g.usage.size(), f);
    for (const ClientUsage& u : g.usage) {
      out += fmt::format("    <testcase classname=\"{}\" name=\"{}\"", html_escape(g.name),
                         html_escape(u.item));
      if (u.verdict == ClientVerdict::ok) {
        out += "/>\n";
        continue;
      }
      out += fmt::format(
          ">\n      <failure type=\"{}\" message=\"{}\">used {} times, e.g. {}{}</failure>\n"
          "    </testcase>\n",
          client_verdict_name(u.verdict), html_escape(u.detail), u.count, html_escape(u.example),
          u.source.empty() ? std::string{} : "; source: " + html_escape(u.source));
    }
    out += "  </testsuite>\n";
  }
  out += "</testsuites>\n";
  return out;
}

}  // namespace keyshift::compat
