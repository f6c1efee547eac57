#include "compat/verify/commands.hpp"

#include "compat/report/json_text.hpp"
#include "engine/engine.hpp"
#include "engine/util/clock.hpp"
#include "engine/util/strings.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <set>

namespace keyshift::compat {
namespace {

using engine::Expected;
using engine::RespValue;
using engine::Unexpected;

// ---- the argument syntax of the knowledge base ----

/// One node of a command's argument tree.
struct SyntaxNode {
  enum class Kind : uint8_t { value, token, group, oneof };
  Kind kind = Kind::value;
  char type = 's';    ///< value: k s i d p t
  std::string token;  ///< token
  bool optional = false;
  bool multiple = false;
  std::vector<SyntaxNode> children;  ///< group: a sequence; oneof: alternatives (groups)
};

class SyntaxParser {
 public:
  explicit SyntaxParser(std::string_view text) : m_text(text) {}

  /// The top-level sequence, or nullopt when the text is malformed.
  std::optional<std::vector<SyntaxNode>> parse() {
    std::vector<SyntaxNode> out;
    if (!sequence(out, '\0') || m_pos != m_text.size()) {
      return std::nullopt;
    }
    return out;
  }

 private:
  bool sequence(std::vector<SyntaxNode>& out, char end) {
    while (m_pos < m_text.size() && m_text[m_pos] != end && m_text[m_pos] != '|') {
      SyntaxNode node;
      if (!item(node)) {
        return false;
      }
      out.push_back(std::move(node));
      if (m_pos < m_text.size() && m_text[m_pos] == ' ') {
        ++m_pos;
      }
    }
    return true;
  }

  bool item(SyntaxNode& node) {
    char c = m_text[m_pos];
    if (c == '[') {
      ++m_pos;
      if (!item(node) || !expect(']')) {
        return false;
      }
      node.optional = true;
      return true;
    }
    if (c == '(') {
      ++m_pos;
      node.kind = SyntaxNode::Kind::oneof;
      for (;;) {
        SyntaxNode alt;
        alt.kind = SyntaxNode::Kind::group;
        if (!sequence(alt.children, ')')) {
          return false;
        }
        node.children.push_back(std::move(alt));
        if (m_pos < m_text.size() && m_text[m_pos] == '|') {
          ++m_pos;
          continue;
        }
        break;
      }
      if (!expect(')')) {
        return false;
      }
    } else if (c == '{') {
      ++m_pos;
      node.kind = SyntaxNode::Kind::group;
      if (!sequence(node.children, '}') || !expect('}')) {
        return false;
      }
    } else if (c == '=') {
      ++m_pos;
      node.kind = SyntaxNode::Kind::token;
      // A token runs to the next delimiter; "==" is the token "=".
      size_t start = m_pos;
      if (m_pos < m_text.size() && m_text[m_pos] == '=') {
        ++m_pos;
      }
      while (m_pos < m_text.size() &&
             std::string_view(" |])}").find(m_text[m_pos]) == std::string_view::npos &&
             !m_text.substr(m_pos).starts_with("...")) {
        ++m_pos;
      }
      node.token = std::string(m_text.substr(start, m_pos - start));
      if (node.token == "\"\"") {
        node.token.clear();  // the empty-string argument (MIGRATE's key "")
      }
    } else if (std::string_view("ksidpt").find(c) != std::string_view::npos) {
      node.kind = SyntaxNode::Kind::value;
      node.type = c;
      ++m_pos;
    } else {
      return false;
    }
    if (m_text.substr(m_pos).starts_with("...")) {
      node.multiple = true;
      m_pos += 3;
    }
    return true;
  }

  bool expect(char c) {
    if (m_pos < m_text.size() && m_text[m_pos] == c) {
      ++m_pos;
      return true;
    }
    return false;
  }

  std::string_view m_text;
  size_t m_pos = 0;
};

/// The key type a command's first key is, from its group.
std::string fixture_of(std::string_view group) {
  if (group == "list" || group == "hash" || group == "set" || group == "stream") {
    return std::string(group);
  }
  if (group == "sorted_set") {
    return "zset";
  }
  if (group == "geo") {
    return "geo";
  }
  if (group == "hyperloglog") {
    return "hll";
  }
  return "string";
}

/// Builds one call: required items, the first alternative of each choice, one instance of
/// each repeatable item; `enable` (a top-level index) switches one optional item on and
/// `alternative` picks the alternative of that item when it is a choice.
class CaseBuilder {
 public:
  CaseBuilder(const std::string& prefix, std::string fixture_key)
      : m_prefix(prefix), m_fixture_key(std::move(fixture_key)) {}

  void emit_sequence(const std::vector<SyntaxNode>& nodes, std::vector<std::string>& out,
                     std::optional<size_t> enable, size_t alternative) {
    for (size_t i = 0; i < nodes.size(); ++i) {
      const SyntaxNode& n = nodes[i];
      bool chosen = enable && *enable == i;
      if (n.optional && !chosen) {
        continue;
      }
      emit(n, out, chosen ? alternative : 0);
    }
  }

 private:
  void emit(const SyntaxNode& n, std::vector<std::string>& out, size_t alternative) {
    switch (n.kind) {
      case SyntaxNode::Kind::token:
        out.push_back(n.token);
        break;
      case SyntaxNode::Kind::value:
        out.push_back(value(n.type));
        break;
      case SyntaxNode::Kind::group:
        emit_sequence(n.children, out, std::nullopt, 0);
        break;
      case SyntaxNode::Kind::oneof: {
        size_t pick = alternative < n.children.size() ? alternative : 0;
        emit_sequence(n.children[pick].children, out, std::nullopt, 0);
        break;
      }
    }
  }

  std::string value(char type) {
    switch (type) {
      case 'k':
        // The first key is the fixture; later ones are fresh names under the prefix.
        return m_keys++ == 0 ? m_fixture_key : fmt::format("{}d{}", m_prefix, m_keys - 1);
      case 'i':
        return "1";
      case 'd':
        return "1.5";
      case 'p':
        return m_prefix + "*";  // patterns stay inside the prefix (KEYS, SCAN MATCH, ...)
      case 't':
        return "4102444800";  // 2100-01-01
      default:
        return "v";
    }
  }

  const std::string& m_prefix;
  std::string m_fixture_key;
  int m_keys = 0;
};

bool has_word(std::string_view words, std::string_view w) {
  while (!words.empty()) {
    size_t space = words.find(' ');
    if (words.substr(0, space) == w) {
      return true;
    }
    words = space == std::string_view::npos ? std::string_view{} : words.substr(space + 1);
  }
  return false;
}

/// Commands whose replies depend on the server or the data, not on the arguments: compared
/// by reply type only (besides the command tips).
bool shape_only(std::string_view name) {
  static constexpr std::string_view k_names[] = {"dbsize",
                                                 "info",
                                                 "lastsave",
                                                 "time",
                                                 "randomkey",
                                                 "memory|usage",
                                                 "memory|stats",
                                                 "object|idletime",
                                                 "object|freq",
                                                 "command",
                                                 "command|count",
                                                 "command|docs",
                                                 "command|info",
                                                 "command|list",
                                                 "command|getkeys",
                                                 "command|getkeysandflags",
                                                 "latency|latest",
                                                 "latency|history",
                                                 "latency|graph",
                                                 "latency|histogram",
                                                 "slowlog|get",
                                                 "slowlog|len",
                                                 "pubsub|numpat",
                                                 "pubsub|channels",
                                                 "pubsub|shardchannels",
                                                 "pubsub|numsub",
                                                 "pubsub|shardnumsub",
                                                 "lolwut",
                                                 "script|exists",
                                                 "function|list",
                                                 "function|dump",
                                                 "function|stats",
                                                 "client|id",
                                                 "client|info",
                                                 "client|list"};
  // Help texts name the server ("Redis", "Valkey"): their shape is what a client relies on.
  return std::find(std::begin(k_names), std::end(k_names), name) != std::end(k_names) ||
         name.ends_with("|help");
}

RespValue sorted_copy(const RespValue& v) {
  RespValue out = v;
  std::sort(out.elements.begin(), out.elements.end(),
            [](const RespValue& a, const RespValue& b) { return a.to_display() < b.to_display(); });
  return out;
}

bool same_value(const RespValue& a, const RespValue& b) {
  if (a.type != b.type || a.str != b.str || a.integer != b.integer ||
      a.elements.size() != b.elements.size()) {
    return false;
  }
  for (size_t i = 0; i < a.elements.size(); ++i) {
    if (!same_value(a.elements[i], b.elements[i])) {
      return false;
    }
  }
  return true;
}

std::string error_class(const RespValue& v) {
  return v.str.substr(0, v.str.find(' '));
}

std::string joined_args(const std::vector<std::string>& args) {
  std::string out;
  for (const std::string& a : args) {
    if (!out.empty()) {
      out.push_back(' ');
    }
    bool plain = !a.empty() && std::all_of(a.begin(), a.end(), [](char c) {
      return std::isgraph(static_cast<unsigned char>(c)) != 0 && c != '"';
    });
    out += plain ? a : "\"" + a + "\"";
  }
  return out;
}

/// A live table row, from COMMAND.
struct LiveRow {
  int arity = 0;
  std::set<std::string> flags;
  int64_t first = 0;
  int64_t last = 0;
  int64_t step = 0;
};

void add_live_rows(const RespValue& entry, std::map<std::string, LiveRow>& out) {
  if (entry.type != RespValue::Type::array || entry.elements.size() < 6) {
    return;
  }
  std::string name = entry.elements[0].str;
  for (char& c : name) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  LiveRow row;
  row.arity = static_cast<int>(entry.elements[1].integer);
  for (const RespValue& f : entry.elements[2].elements) {
    row.flags.insert(f.str);
  }
  row.first = entry.elements[3].integer;
  row.last = entry.elements[4].integer;
  row.step = entry.elements[5].integer;
  out[name] = row;
  if (entry.elements.size() >= 10) {
    for (const RespValue& sub : entry.elements[9].elements) {
      add_live_rows(sub, out);
    }
  }
}

std::map<std::string, LiveRow> profile_rows(kb::ProfileId id) {
  std::map<std::string, LiveRow> out;
  for (const kb::KbCommand* c : kb::commands_of(id)) {
    LiveRow row;
    row.arity = c->arity;
    std::string_view rest = c->flags;
    while (!rest.empty()) {
      size_t space = rest.find(' ');
      row.flags.insert(std::string(rest.substr(0, space)));
      rest = space == std::string_view::npos ? std::string_view{} : rest.substr(space + 1);
    }
    row.first = c->first_key;
    row.last = c->last_key;
    row.step = c->step;
    out[std::string(c->name)] = row;
  }
  return out;
}

/// An in-process engine with nothing in it: the default target.
class EmbeddedSide final : public VerifySide {
 public:
  EmbeddedSide() {
    engine::EngineConfig config;
    m_engine = std::make_unique<engine::Engine>(config, m_clock);
    m_side = std::make_unique<EngineSide>(*m_engine, "keyshift (embedded)");
  }
  ~EmbeddedSide() override {
    m_side.reset();
    m_engine.reset();
  }
  EmbeddedSide(const EmbeddedSide&) = delete;
  EmbeddedSide& operator=(const EmbeddedSide&) = delete;
  std::string describe() const override { return m_side->describe(); }
  Expected<bool, std::string> submit(const CommandBatch& batch) override {
    return m_side->submit(batch);
  }
  Expected<std::vector<RespValue>, std::string> collect() override { return m_side->collect(); }

 private:
  engine::SystemClock m_clock;
  std::unique_ptr<engine::Engine> m_engine;
  std::unique_ptr<EngineSide> m_side;
};

/// INFO's text as section → field names.
std::map<std::string, std::set<std::string>> info_fields(std::string_view text) {
  std::map<std::string, std::set<std::string>> out;
  std::string section;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    if (!line.empty() && line.back() == '\r') {
      line.remove_suffix(1);
    }
    if (line.starts_with("# ")) {
      section = std::string(line.substr(2));
      continue;
    }
    size_t colon = line.find(':');
    if (colon == std::string_view::npos || section == "Keyspace") {
      continue;
    }
    out[section].insert(std::string(line.substr(0, colon)));
  }
  return out;
}

std::set<std::string> client_info_fields(std::string_view line) {
  std::set<std::string> out;
  while (!line.empty()) {
    size_t space = line.find(' ');
    std::string_view item = line.substr(0, space);
    line = space == std::string_view::npos ? std::string_view{} : line.substr(space + 1);
    size_t eq = item.find('=');
    if (eq != std::string_view::npos) {
      out.insert(std::string(item.substr(0, eq)));
    }
  }
  return out;
}

}  // namespace

std::string_view command_verdict_name(CommandVerdict v) {
  switch (v) {
    case CommandVerdict::same:
      return "same";
    case CommandVerdict::differs:
      return "differs";
    case CommandVerdict::error_text:
      return "error-text";
    case CommandVerdict::shape_differs:
      return "shape";
    case CommandVerdict::missing:
      return "missing";
    case CommandVerdict::target_only:
      return "target-only";
    case CommandVerdict::skipped:
      return "skipped";
  }
  return "same";
}

bool VerifyCommandsReport::same() const {
  for (const auto& [v, n] : counts) {
    if (n > 0 && v != CommandVerdict::same && v != CommandVerdict::skipped) {
      return false;
    }
  }
  return shapes.empty();
}

std::vector<CommandCase> generate_cases(const kb::KbCommand& row, const std::string& prefix,
                                        size_t max_cases) {
  std::vector<CommandCase> out;
  if (row.syntax.starts_with("?")) {
    return out;
  }
  auto tree = SyntaxParser(row.syntax).parse();
  if (!tree) {
    return out;
  }
  std::vector<std::string> head;
  std::string name(row.name);
  size_t bar = name.find('|');
  if (bar == std::string::npos) {
    head.push_back(name);
  } else {
    head.push_back(name.substr(0, bar));
    head.push_back(name.substr(bar + 1));
  }
  std::string fixture = fixture_of(row.group);
  bool keyed = row.first_key > 0 || row.syntax.find('k') != std::string_view::npos;
  auto make = [&](std::string kind, std::optional<size_t> enable, size_t alternative,
                  const std::string& fix) {
    CommandCase c;
    c.command = name;
    c.kind = std::move(kind);
    c.fixture = keyed ? fix : std::string{};
    c.args = head;
    CaseBuilder builder(prefix, prefix + "k:" + fix);
    builder.emit_sequence(*tree, c.args, enable, alternative);
    return c;
  };
  out.push_back(make("minimal", std::nullopt, 0, fixture));
  // A case naming another database (COPY ... DB n) would write outside the prefix's db.
  auto other_db = [](const CommandCase& c) {
    return std::any_of(c.args.begin() + 1, c.args.end(),
                       [](const std::string& a) { return engine::iequals(a, "DB"); });
  };
  for (size_t i = 0; i < tree->size() && out.size() < max_cases; ++i) {
    const SyntaxNode& n = (*tree)[i];
    size_t alternatives = n.kind == SyntaxNode::Kind::oneof ? n.children.size() : 1;
    for (size_t a = 0; a < alternatives && out.size() < max_cases; ++a) {
      if (!n.optional && a == 0) {
        continue;  // the minimal case has it
      }
      CommandCase c = make(fmt::format("item {} alternative {}", i + 1, a + 1), i, a, fixture);
      if (!other_db(c)) {
        out.push_back(std::move(c));
      }
    }
  }
  // Too few arguments: both servers must refuse alike.
  size_t least = static_cast<size_t>(row.arity > 0 ? row.arity : -row.arity);
  if (least >= 1 && least - 1 >= head.size() && out.front().args.size() >= least) {
    CommandCase c = out.front();
    c.kind = "wrong arity";
    c.args.resize(least - 1);
    out.push_back(std::move(c));
  }
  // The first key of the wrong type.
  if (row.first_key > 0 && fixture != "string" && out.size() < max_cases + 2) {
    out.push_back(make("wrong type", std::nullopt, 0, fixture == "list" ? "hash" : "list"));
  }
  return out;
}

std::string_view skip_reason(const kb::KbCommand& row, bool read_only) {
  std::string_view name = row.name;
  static constexpr std::string_view k_state[] = {"select",
                                                 "swapdb",
                                                 "move",
                                                 "flushdb",
                                                 "flushall",
                                                 "reset",
                                                 "quit",
                                                 "hello",
                                                 "auth",
                                                 "multi",
                                                 "exec",
                                                 "discard",
                                                 "watch",
                                                 "unwatch",
                                                 "subscribe",
                                                 "psubscribe",
                                                 "ssubscribe",
                                                 "unsubscribe",
                                                 "punsubscribe",
                                                 "sunsubscribe",
                                                 "monitor",
                                                 "wait",
                                                 "waitaof",
                                                 "sync",
                                                 "psync",
                                                 "replconf",
                                                 "readonly",
                                                 "readwrite",
                                                 "asking",
                                                 "shutdown",
                                                 "failover",
                                                 "replicaof",
                                                 "slaveof",
                                                 "save",
                                                 "bgsave",
                                                 "bgrewriteaof",
                                                 "debug",
                                                 "migrate",
                                                 "restore-asking",
                                                 "pfselftest",
                                                 "pfdebug",
                                                 "function|load",
                                                 "function|delete",
                                                 "function|flush",
                                                 "function|restore",
                                                 "function|kill",
                                                 "script|flush",
                                                 "script|kill",
                                                 "script|debug",
                                                 "memory|purge",
                                                 "memory|doctor",
                                                 "latency|reset",
                                                 "latency|doctor",
                                                 "slowlog|reset",
                                                 "object|help",
                                                 "sentinel"};
  if (std::find(std::begin(k_state), std::end(k_state), name) != std::end(k_state)) {
    return "changes connection or server state, or touches data outside the prefix";
  }
  // Read-only members of the state families, safe on any server (a standalone one answers
  // the CLUSTER ones with its cluster-disabled error).
  static constexpr std::string_view k_safe[] = {"client|getname",
                                                "client|id",
                                                "client|info",
                                                "client|list",
                                                "client|help",
                                                "cluster|keyslot",
                                                "cluster|info",
                                                "cluster|help",
                                                "cluster|myid",
                                                "cluster|nodes",
                                                "cluster|slots",
                                                "cluster|shards",
                                                "cluster|countkeysinslot",
                                                "cluster|getkeysinslot",
                                                "cluster|links",
                                                "config|get",
                                                "config|help"};
  bool safe = std::find(std::begin(k_safe), std::end(k_safe), name) != std::end(k_safe);
  for (std::string_view family : {"client|", "cluster|", "config|", "acl|", "module|"}) {
    if (safe) {
      break;
    }
    if (name.starts_with(family)) {
      return "changes connection or server state";
    }
  }
  if (has_word(row.flags, "admin") && !safe) {
    return "admin command";
  }
  if (has_word(row.flags, "blocking")) {
    return "blocking command";
  }
  if (read_only && has_word(row.flags, "write")) {
    return "write command (--read-only)";
  }
  if (row.syntax.starts_with("?")) {
    return "argument syntax not known";
  }
  return {};
}

Expected<CommandsSide, std::string> open_commands_side(const std::string& spec) {
  CommandsSide side;
  side.name = spec;
  if (spec == "embedded" || spec == "keyshift") {
    side.live = std::make_unique<EmbeddedSide>();
    side.name = side.live->describe();
    return side;
  }
  if (spec.find("://") == std::string::npos && spec.find('/') == std::string::npos) {
    if (auto id = kb::find_profile(spec)) {
      side.profile = id;
      side.name = std::string(kb::profile_info(*id).name);
      return side;
    }
    return Unexpected{
        fmt::format("{}: neither a server URL nor a known server line (see "
                    "keyshift kb profiles)",
                    spec)};
  }
  auto live = open_verify_side(spec);
  if (!live) {
    return Unexpected{live.error()};
  }
  side.live = std::move(*live);
  side.name = side.live->describe();
  return side;
}

namespace {

/// The profile a live side runs, from INFO server; nullopt when unknown.
std::optional<kb::ProfileId> live_profile(VerifySide& side) {
  auto replies = side.run({{"INFO", "server"}});
  if (!replies || replies->empty() || (*replies)[0].is_error()) {
    return std::nullopt;
  }
  std::string_view text = (*replies)[0].str;
  auto field = [&](std::string_view name) -> std::string_view {
    std::string key = std::string(name) + ":";
    size_t at = text.find(key);
    if (at == std::string_view::npos || (at > 0 && text[at - 1] != '\n')) {
      return {};
    }
    size_t end = text.find_first_of("\r\n", at);
    return text.substr(at + key.size(), end - at - key.size());
  };
  return kb::profile_for_server(field("server_name"), field("valkey_version"),
                                field("redis_version"));
}

Expected<std::map<std::string, LiveRow>, std::string> table_of(CommandsSide& side) {
  if (!side.live) {
    return profile_rows(*side.profile);
  }
  auto replies = side.live->run({{"COMMAND"}});
  if (!replies) {
    return Unexpected{replies.error()};
  }
  if (replies->empty() || (*replies)[0].type != RespValue::Type::array) {
    return Unexpected{fmt::format("{}: COMMAND did not answer a table", side.name)};
  }
  std::map<std::string, LiveRow> out;
  for (const RespValue& entry : (*replies)[0].elements) {
    add_live_rows(entry, out);
  }
  return out;
}

std::string describe_row_change(const LiveRow& a, const LiveRow& b) {
  std::string out;
  if (a.arity != b.arity) {
    out += fmt::format("arity {} -> {}; ", a.arity, b.arity);
  }
  if (a.flags != b.flags) {
    std::string only_a;
    std::string only_b;
    for (const std::string& f : a.flags) {
      if (b.flags.count(f) == 0) {
        only_a += " " + f;
      }
    }
    for (const std::string& f : b.flags) {
      if (a.flags.count(f) == 0) {
        only_b += " " + f;
      }
    }
    out += fmt::format("flags -[{} ] +[{} ]; ", only_a, only_b);
  }
  if (a.first != b.first || a.last != b.last || a.step != b.step) {
    out += fmt::format("key range {} {} {} -> {} {} {}; ", a.first, a.last, a.step, b.first, b.last,
                       b.step);
  }
  if (out.size() >= 2) {
    out.resize(out.size() - 2);
  }
  return out;
}

/// The commands that make the fixture keys of each type, named under `prefix`.
CommandBatch fixture_commands(const std::string& prefix, const std::string& type) {
  std::string key = prefix + "k:" + type;
  if (type == "list") {
    return {{"RPUSH", key, "v", "w"}};
  }
  if (type == "hash") {
    return {{"HSET", key, "v", "v", "w", "1"}};
  }
  if (type == "set") {
    return {{"SADD", key, "v", "w"}};
  }
  if (type == "zset") {
    return {{"ZADD", key, "1", "v", "2", "w"}};
  }
  if (type == "stream") {
    return {{"XADD", key, "1-1", "v", "v"}};
  }
  if (type == "geo") {
    return {{"GEOADD", key, "13.361389", "38.115556", "v"}};
  }
  if (type == "hll") {
    return {{"PFADD", key, "v", "w"}};
  }
  return {{"SET", key, "v"}};
}

std::vector<std::string> prefix_keys(const std::string& prefix) {
  std::vector<std::string> keys{"DEL"};
  for (std::string_view type : {"string", "list", "hash", "set", "zset", "stream", "geo", "hll"}) {
    keys.push_back(prefix + "k:" + std::string(type));
  }
  for (int i = 1; i <= 6; ++i) {
    keys.push_back(fmt::format("{}d{}", prefix, i));
  }
  return keys;
}

/// Keys under the prefix on `side` (at most a few, for the message).
Expected<std::vector<std::string>, std::string> keys_under(VerifySide& side,
                                                           const std::string& prefix) {
  std::vector<std::string> found;
  std::string cursor = "0";
  std::string pattern;
  for (char c : prefix) {
    if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') {
      pattern.push_back('\\');
    }
    pattern.push_back(c);
  }
  pattern += "*";
  for (int pages = 0; pages < 1000000; ++pages) {
    auto r = side.run({{"SCAN", cursor, "MATCH", pattern, "COUNT", "1000"}});
    if (!r) {
      return Unexpected{r.error()};
    }
    const RespValue& v = (*r)[0];
    if (v.is_error() || v.elements.size() != 2) {
      return Unexpected{fmt::format("{}: SCAN: {}", side.describe(), v.to_display())};
    }
    for (const RespValue& k : v.elements[1].elements) {
      if (found.size() < 5) {
        found.push_back(k.str);
      }
    }
    cursor = v.elements[0].str;
    if (cursor == "0" || found.size() >= 5) {
      break;
    }
  }
  return found;
}

/// What COMMAND DOCS says of one command (or subcommand), flattened for comparison: the
/// fields a client or a reader of the docs relies on, and the option words it takes.
struct CommandDoc {
  std::map<std::string, std::string> fields;     // since, group, doc_flags, replaced_by, ...
  std::map<std::string, std::string> arguments;  // option word -> its type ("NX" -> "pure-token")
};

/// The values of a docs map (RESP2 flat array or RESP3 map), by key.
std::map<std::string, const RespValue*> doc_map(const RespValue& v) {
  std::map<std::string, const RespValue*> out;
  for (size_t i = 0; i + 1 < v.elements.size(); i += 2) {
    out[v.elements[i].str] = &v.elements[i + 1];
  }
  return out;
}

/// The option words of an argument list, nested blocks included: what a client types.
/// Argument names are left out (the projects renamed blocks without changing the syntax).
void flatten_arguments(const RespValue& list, std::map<std::string, std::string>& out) {
  for (const RespValue& arg : list.elements) {
    auto m = doc_map(arg);
    auto token = m.find("token");
    if (token != m.end() && !token->second->str.empty()) {
      auto type = m.find("type");
      std::string& shape = out[engine::to_upper(token->second->str)];
      std::string here = type == m.end() ? std::string() : type->second->str;
      // A word used twice (BITFIELD's GET in two blocks) keeps every type it takes.
      if (shape.find(here) == std::string::npos) {
        shape += (shape.empty() ? "" : ",") + here;
      }
    }
    if (auto it = m.find("arguments"); it != m.end()) {
      flatten_arguments(*it->second, out);
    }
  }
}

/// COMMAND DOCS as command name -> its doc, subcommands ("client|kill") included.
void flatten_docs(const RespValue& reply, std::map<std::string, CommandDoc>& out) {
  for (size_t i = 0; i + 1 < reply.elements.size(); i += 2) {
    CommandDoc& doc = out[engine::to_lower(reply.elements[i].str)];
    for (const auto& [key, value] : doc_map(reply.elements[i + 1])) {
      if (key == "arguments") {
        flatten_arguments(*value, doc.arguments);
      } else if (key == "subcommands") {
        flatten_docs(*value, out);
      } else if (key == "since" || key == "group" || key == "deprecated_since" ||
                 key == "replaced_by") {
        doc.fields[key] = value->str;
      } else if (key == "doc_flags") {
        std::string joined;
        for (const RespValue& e : value->elements) {
          joined += (joined.empty() ? "" : ",") + e.str;
        }
        doc.fields[key] = joined;
      }
    }
  }
}

/// COMMAND DOCS of the commands both sides have: fields that differ, and option words one
/// side documents and the other does not (or with another type). Summaries and complexity texts
/// are left out: Valkey rewrote them without changing behaviour.
void compare_docs(const RespValue& source, const RespValue& target,
                  std::vector<ShapeDifference>& out) {
  std::map<std::string, CommandDoc> ds;
  std::map<std::string, CommandDoc> dt;
  flatten_docs(source, ds);
  flatten_docs(target, dt);
  for (const auto& [name, a] : ds) {
    auto it = dt.find(name);
    if (it == dt.end()) {
      continue;  // a missing command is the command verdicts' business
    }
    const CommandDoc& b = it->second;
    std::set<std::string> keys;
    for (const auto* fields : {&a.fields, &b.fields}) {
      for (const auto& [k, v] : *fields) {
        keys.insert(k);
      }
    }
    for (const std::string& k : keys) {
      auto va = a.fields.count(k) ? a.fields.at(k) : std::string();
      auto vb = b.fields.count(k) ? b.fields.at(k) : std::string();
      if (va != vb) {
        out.push_back({"docs", name,
                       fmt::format("{} differs: '{}' -> '{}'", k, va.empty() ? "-" : va,
                                   vb.empty() ? "-" : vb)});
      }
    }
    for (const auto& [word, type] : a.arguments) {
      auto at = b.arguments.find(word);
      if (at == b.arguments.end()) {
        out.push_back({"docs", name, "option " + word + " missing on the target"});
      } else if (at->second != type) {
        out.push_back(
            {"docs", name, fmt::format("option {} differs: {} -> {}", word, type, at->second)});
      }
    }
    for (const auto& [word, type] : b.arguments) {
      if (a.arguments.count(word) == 0) {
        out.push_back({"docs", name, "option " + word + " only on the target"});
      }
    }
  }
}

void compare_shapes(VerifySide& s, VerifySide& t, VerifyCommandsReport& report) {
  CommandBatch batch{
      {"CONFIG", "GET", "*"}, {"INFO"}, {"HELLO"}, {"CLIENT", "INFO"}, {"COMMAND", "DOCS"}};
  auto rs = s.run(batch);
  auto rt = t.run(batch);
  if (!rs || !rt) {
    return;
  }
  // CONFIG GET *: directives and values.
  auto config_map = [](const RespValue& v) {
    std::map<std::string, std::string> out;
    for (size_t i = 0; i + 1 < v.elements.size(); i += 2) {
      out[v.elements[i].str] = v.elements[i + 1].str;
    }
    return out;
  };
  if (!(*rs)[0].is_error() && !(*rt)[0].is_error()) {
    auto cs = config_map((*rs)[0]);
    auto ct = config_map((*rt)[0]);
    for (const auto& [name, value] : cs) {
      auto it = ct.find(name);
      if (it == ct.end()) {
        report.shapes.push_back({"config", name, "missing on the target"});
      } else if (it->second != value) {
        report.shapes.push_back(
            {"config", name, fmt::format("value differs: '{}' -> '{}'", value, it->second)});
      }
    }
    for (const auto& [name, value] : ct) {
      if (cs.count(name) == 0) {
        report.shapes.push_back({"config", name, "only on the target"});
      }
    }
  }
  // INFO: field names per section.
  if (!(*rs)[1].is_error() && !(*rt)[1].is_error()) {
    auto fs = info_fields((*rs)[1].str);
    auto ft = info_fields((*rt)[1].str);
    for (const auto& [section, fields] : fs) {
      for (const std::string& f : fields) {
        if (ft[section].count(f) == 0) {
          report.shapes.push_back({"info", section + "." + f, "missing on the target"});
        }
      }
    }
    for (const auto& [section, fields] : ft) {
      for (const std::string& f : fields) {
        if (fs[section].count(f) == 0) {
          report.shapes.push_back({"info", section + "." + f, "only on the target"});
        }
      }
    }
  }
  // HELLO: field names (and the server field's value, which clients read).
  auto hello_map = [](const RespValue& v) {
    std::map<std::string, std::string> out;
    for (size_t i = 0; i + 1 < v.elements.size(); i += 2) {
      out[v.elements[i].str] = v.elements[i + 1].type == RespValue::Type::array
                                   ? "[...]"
                                   : v.elements[i + 1].to_display();
    }
    return out;
  };
  if (!(*rs)[2].is_error() && !(*rt)[2].is_error()) {
    auto hs = hello_map((*rs)[2]);
    auto ht = hello_map((*rt)[2]);
    for (const auto& [name, value] : hs) {
      auto it = ht.find(name);
      if (it == ht.end()) {
        report.shapes.push_back({"hello", name, "missing on the target"});
      } else if (name == "server" && it->second != value) {
        report.shapes.push_back(
            {"hello", name, fmt::format("value differs: {} -> {}", value, it->second)});
      }
    }
    for (const auto& [name, value] : ht) {
      if (hs.count(name) == 0) {
        report.shapes.push_back({"hello", name, "only on the target"});
      }
    }
  }
  if (!(*rs)[4].is_error() && !(*rt)[4].is_error()) {
    compare_docs((*rs)[4], (*rt)[4], report.shapes);
  }
  if (!(*rs)[3].is_error() && !(*rt)[3].is_error()) {
    auto cs = client_info_fields((*rs)[3].str);
    auto ct = client_info_fields((*rt)[3].str);
    for (const std::string& f : cs) {
      if (ct.count(f) == 0) {
        report.shapes.push_back({"client info", f, "missing on the target"});
      }
    }
    for (const std::string& f : ct) {
      if (cs.count(f) == 0) {
        report.shapes.push_back({"client info", f, "only on the target"});
      }
    }
  }
}

}  // namespace

Expected<VerifyCommandsReport, std::string> verify_commands(CommandsSide& source,
                                                            CommandsSide& target,
                                                            const VerifyCommandsOptions& options) {
  auto start = std::chrono::steady_clock::now();
  VerifyCommandsReport report;
  report.source = source.name;
  report.target = target.name;
  report.source_live = source.live != nullptr;
  report.target_live = target.live != nullptr;
  report.read_only = options.read_only;

  for (CommandsSide* side : {&source, &target}) {
    if (!side->live) {
      continue;
    }
    auto found = keys_under(*side->live, options.prefix);
    if (!found) {
      return Unexpected{found.error()};
    }
    if (!found->empty()) {
      return Unexpected{
          fmt::format("{}: keys already exist under the prefix '{}' (e.g. '{}'): "
                      "verify commands works only in an empty prefix; choose "
                      "another with --prefix",
                      side->name, options.prefix, found->front())};
    }
  }
  auto source_rows = table_of(source);
  if (!source_rows) {
    return Unexpected{source_rows.error()};
  }
  auto target_rows = table_of(target);
  if (!target_rows) {
    return Unexpected{target_rows.error()};
  }
  // The syntax of each command comes from the source's line (or any line knowing it).
  std::optional<kb::ProfileId> syntax_profile =
      source.profile ? source.profile : live_profile(*source.live);
  auto kb_row = [&](const std::string& name) -> const kb::KbCommand* {
    if (syntax_profile) {
      if (const kb::KbCommand* c = kb::find_command(*syntax_profile, name)) {
        return c;
      }
    }
    auto profiles = kb::all_profiles();
    for (auto it = profiles.rbegin(); it != profiles.rend(); ++it) {
      if (const kb::KbCommand* c = kb::find_command(*it, name)) {
        return c;
      }
    }
    return nullptr;
  };
  auto wanted = [&](const std::string& name) {
    if (options.only.empty()) {
      return true;
    }
    std::string top = name.substr(0, name.find('|'));
    return std::find(options.only.begin(), options.only.end(), top) != options.only.end() ||
           std::find(options.only.begin(), options.only.end(), name) != options.only.end();
  };

  bool run_cases = source.live && target.live;
  CommandBatch cleanup{prefix_keys(options.prefix)};
  size_t total = source_rows->size();
  size_t done = 0;
  for (const auto& [name, srow] : *source_rows) {
    ++done;
    if (!wanted(name)) {
      continue;
    }
    CommandResult result;
    result.command = name;
    auto trow = target_rows->find(name);
    if (trow == target_rows->end()) {
      result.verdict = CommandVerdict::missing;
      report.commands.push_back(std::move(result));
      continue;
    }
    std::string change = describe_row_change(srow, trow->second);
    if (!change.empty()) {
      result.verdict = CommandVerdict::shape_differs;
      result.detail = change;
    }
    const kb::KbCommand* row = kb_row(name);
    bool container = false;
    for (const auto& [other, r] : *source_rows) {
      if (other.size() > name.size() && other.starts_with(name) && other[name.size()] == '|') {
        container = true;
        break;
      }
    }
    if (!run_cases || container) {
      report.commands.push_back(std::move(result));
      continue;
    }
    std::string_view skip = row == nullptr ? std::string_view("not in the knowledge base")
                                           : skip_reason(*row, options.read_only);
    if (!skip.empty()) {
      if (result.verdict == CommandVerdict::same) {
        result.verdict = CommandVerdict::skipped;
        result.detail = std::string(skip);
      }
      report.commands.push_back(std::move(result));
      continue;
    }
    bool order_free = has_word(row->tips, "nondeterministic_output_order");
    bool type_only = has_word(row->tips, "nondeterministic_output") || shape_only(name);
    for (CommandCase& c : generate_cases(*row, options.prefix)) {
      CommandBatch batch;
      if (!options.read_only) {
        batch.push_back(cleanup.front());
        if (!c.fixture.empty()) {
          for (auto& cmd : fixture_commands(options.prefix, c.fixture)) {
            batch.push_back(std::move(cmd));
          }
        }
      }
      size_t call = batch.size();
      batch.push_back(c.args);
      if (!options.read_only) {
        batch.push_back(cleanup.front());
      }
      auto rs = source.live->submit(batch);
      auto rt = rs ? target.live->submit(batch) : rs;
      auto vs = rs ? source.live->collect()
                   : Expected<std::vector<RespValue>, std::string>{Unexpected{rs.error()}};
      auto vt = rt ? target.live->collect()
                   : Expected<std::vector<RespValue>, std::string>{Unexpected{rt.error()}};
      if (!vs) {
        return Unexpected{vs.error()};
      }
      if (!vt) {
        return Unexpected{vt.error()};
      }
      ++result.cases;
      ++report.cases_run;
      const RespValue& a = (*vs)[call];
      const RespValue& b = (*vt)[call];
      bool same = false;
      CommandVerdict verdict = CommandVerdict::differs;
      auto unknown = [](const RespValue& v) {
        return v.is_error() && v.str.starts_with("ERR unknown command");
      };
      if (unknown(b) && !unknown(a)) {
        // Listed by COMMAND but refused: disabled or renamed (rename-command).
        result.verdict = CommandVerdict::missing;
        result.detail =
            "listed by COMMAND, but the target answers unknown command (disabled "
            "or renamed)";
        result.example = fmt::format("{} ({})", joined_args(c.args), c.kind);
        result.source_reply = a.to_display();
        result.target_reply = b.to_display();
        break;
      }
      if (a.is_error() && b.is_error()) {
        same = a.str == b.str;
        verdict =
            error_class(a) == error_class(b) ? CommandVerdict::error_text : CommandVerdict::differs;
      } else if (type_only) {
        same = a.type == b.type;
      } else if (order_free) {
        same = same_value(sorted_copy(a), sorted_copy(b));
      } else {
        same = same_value(a, b);
      }
      if (same) {
        continue;
      }
      // The first difference is the example; a real one outranks an error's text.
      bool first = result.example.empty();
      bool upgrade =
          result.verdict == CommandVerdict::error_text && verdict == CommandVerdict::differs;
      if (first || upgrade) {
        if (result.verdict == CommandVerdict::same ||
            result.verdict == CommandVerdict::error_text) {
          result.verdict = verdict;
        }
        result.example = fmt::format("{} ({})", joined_args(c.args), c.kind);
        result.source_reply = a.to_display();
        result.target_reply = b.to_display();
        if (result.detail.empty() || upgrade) {
          result.detail =
              verdict == CommandVerdict::error_text ? "error text differs" : "replies differ";
        }
      }
    }
    report.commands.push_back(std::move(result));
    if (options.progress) {
      options.progress(done, total);
    }
  }
  for (const auto& [name, trow] : *target_rows) {
    if (wanted(name) && source_rows->count(name) == 0) {
      CommandResult result;
      result.command = name;
      result.verdict = CommandVerdict::target_only;
      report.commands.push_back(std::move(result));
    }
  }
  if (run_cases && options.only.empty()) {
    compare_shapes(*source.live, *target.live, report);
  }
  for (const CommandResult& r : report.commands) {
    ++report.counts[r.verdict];
  }
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

std::string render_verify_commands_text(const VerifyCommandsReport& r, bool all) {
  std::string out =
      fmt::format("{} -> {}: {} commands, {} cases in {:.1f} s{}\n", r.source, r.target,
                  r.commands.size(), r.cases_run, r.seconds, r.read_only ? " (read-only)" : "");
  std::string counts;
  for (const auto& [v, n] : r.counts) {
    counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", n, command_verdict_name(v));
  }
  out += "verdicts: " + counts + "\n";
  for (const CommandResult& c : r.commands) {
    if (!all && (c.verdict == CommandVerdict::same || c.verdict == CommandVerdict::skipped)) {
      continue;
    }
    out +=
        fmt::format("  {:<11} {:<26} {}\n", command_verdict_name(c.verdict), c.command, c.detail);
    if (!c.example.empty()) {
      auto cut = [](std::string text) {
        for (char& ch : text) {
          ch = ch == '\n' ? ' ' : ch;
        }
        if (text.size() > 300) {
          text.resize(300);
          text += "...";
        }
        return text;
      };
      out += fmt::format("      e.g. {}\n      source: {}\n      target: {}\n", c.example,
                         cut(c.source_reply), cut(c.target_reply));
    }
  }
  if (!r.shapes.empty()) {
    out += fmt::format("\nconfiguration, INFO, HELLO, CLIENT INFO and COMMAND DOCS ({}):\n",
                       r.shapes.size());
    for (const ShapeDifference& s : r.shapes) {
      out += fmt::format("  {:<12} {:<34} {}\n", s.area, s.name, s.what);
    }
  }
  out += r.same() ? "verdict: the target answers as the source\n"
                  : "verdict: the target answers differently\n";
  return out;
}

std::string render_verify_commands_json(const VerifyCommandsReport& r) {
  std::string out = "{\"source\":";
  append_json_bytes(out, r.source);
  out += ",\"target\":";
  append_json_bytes(out, r.target);
  out += fmt::format(",\"read_only\":{},\"same\":{},\"cases\":{},\"seconds\":{:.3f},\"counts\":{{",
                     r.read_only ? "true" : "false", r.same() ? "true" : "false", r.cases_run,
                     r.seconds);
  bool first = true;
  for (const auto& [v, n] : r.counts) {
    out += first ? "" : ",";
    append_json_string(out, command_verdict_name(v));
    out += fmt::format(":{}", n);
    first = false;
  }
  out += "},\"commands\":[";
  for (size_t i = 0; i < r.commands.size(); ++i) {
    const CommandResult& c = r.commands[i];
    out += i > 0 ? ",{\"command\":" : "{\"command\":";
    append_json_string(out, c.command);
    out += ",\"verdict\":";
    append_json_string(out, command_verdict_name(c.verdict));
    out += fmt::format(",\"cases\":{},\"detail\":", c.cases);
    append_json_bytes(out, c.detail);
    out += ",\"example\":";
    append_json_bytes(out, c.example);
    out += ",\"source_reply\":";
    append_json_bytes(out, c.source_reply);
    out += ",\"target_reply\":";
    append_json_bytes(out, c.target_reply);
    out += '}';
  }
  out += "],\"shapes\":[";
  for (size_t i = 0; i < r.shapes.size(); ++i) {
    out += i > 0 ? ",{\"area\":" : "{\"area\":";
    append_json_string(out, r.shapes[i].area);
    out += ",\"name\":";
    append_json_bytes(out, r.shapes[i].name);
    out += ",\"what\":";
    append_json_bytes(out, r.shapes[i].what);
    out += '}';
  }
  out += "]}\n";
  return out;
}

}  // namespace keyshift::compat
