// Server commands: INFO, CONFIG, COMMAND, CLIENT, MONITOR, MEMORY, DEBUG, FLUSHDB/FLUSHALL,
// DBSIZE, TIME, LASTSAVE, SHUTDOWN, LATENCY, SLOWLOG, ROLE, LOLWUT.
#include "engine/commands/command_docs.hpp"
#include "engine/commands/context.hpp"
#include "engine/commands/families.hpp"
#include "engine/commands/info.hpp"
#include "engine/keyspace/digest.hpp"
#include "engine/keyspace/hash_value.hpp"
#include "engine/keyspace/list_value.hpp"
#include "engine/keyspace/set_value.hpp"
#include "engine/keyspace/stream_value.hpp"
#include "engine/keyspace/string_value.hpp"
#include "engine/keyspace/zset_value.hpp"
#include "engine/persistence/mapped_file.hpp"
#include "engine/persistence/rdb_load.hpp"
#include "engine/persistence/snapshots.hpp"
#include "engine/server/config_table.hpp"
#include "engine/util/glob.hpp"
#include "engine/util/split_args.hpp"
#include "engine/util/strconv.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace keyshift::engine {
namespace {

// --- Shared helpers ---------------------------------------------------------------------

std::string to_upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  return out;
}

std::string to_lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

/// Valkey's addReplySubcommandSyntaxError().
std::string subcommand_syntax_error(CmdContext& ctx) {
  return "ERR unknown subcommand or wrong number of arguments for '" +
         std::string(ctx.arg(1).substr(0, 128)) + "'. Try " + to_upper(ctx.arg(0)) + " HELP.";
}

/// True for a client on the same host (unix socket, loopback, in-process).
bool is_local(const Session& s) {
  return s.has(k_session_unix_socket) || s.has(k_session_in_process) ||
         s.addr.starts_with("127.") || s.addr.starts_with("[::1]:") || s.addr.starts_with("::1:");
}

/// The entry for `key` even if its TTL has passed (Valkey's dbFind: DEBUG and MEMORY look at
/// logically expired keys without deleting them), without touching its access time.
Entry* find_without_expiry(CmdContext& ctx, std::string_view key) {
  KeyspaceShared& ks = ctx.engine().keyspace();
  int64_t saved = ks.command_time_ms;
  ks.command_time_ms = 1;  // a time before every TTL, so nothing counts as expired
  Entry* e = ctx.db().lookup(key, false);
  ks.command_time_ms = saved;
  return e;
}

/// Strict integer argument with Valkey's getLongLongFromObjectOrReply() error.
bool parse_int_arg(CmdContext& ctx, std::string_view text, int64_t& out,
                   std::string_view error = errors::k_not_integer) {
  if (!parse_i64(text, out)) {
    ctx.reply().error(error);
    return false;
  }
  return true;
}

/// Parses "on"/"off" (any case); false when it is neither.
bool parse_on_off(std::string_view text, bool& on) {
  if (iequals(text, "on")) {
    on = true;
    return true;
  }
  if (iequals(text, "off")) {
    on = false;
    return true;
  }
  return false;
}

// --- INFO -------------------------------------------------------------------------------

void cmd_info(CmdContext& ctx) {
  std::string text = generate_info(ctx.engine(), ctx.args().subspan(1));
  ctx.reply().verbatim(text);
}

// --- CONFIG -----------------------------------------------------------------------------

void cmd_config_get(CmdContext& ctx) {
  std::vector<std::string> patterns(ctx.args().begin() + 2, ctx.args().end());
  auto found = config_get(ctx.engine().config(), patterns);
  ctx.reply().map(found.size());
  for (const auto& [name, value] : found) {
    ctx.reply().bulk(name);
    ctx.reply().bulk(value);
  }
}

/// Side effects a changed setting needs beyond the EngineConfig field.
void apply_config_changes(Engine& engine, std::span<const std::string_view> changed) {
  for (std::string_view name : changed) {
    if (name == "maxmemory" && engine.config().maxmemory != 0 &&
        engine.used_memory() > engine.config().maxmemory) {
      // As Valkey: lowering maxmemory below the usage starts evicting right away.
      engine.perform_evictions();
    }
  }
  engine.refresh_settings();
}

void cmd_config_set(CmdContext& ctx) {
  std::vector<std::string> pairs(ctx.args().begin() + 2, ctx.args().end());
  auto changed =
      config_set(ctx.engine().config(), pairs,
                 is_local(ctx.session()) ? ClientLocality::local : ClientLocality::remote);
  if (!changed) {
    ctx.reply().error(changed.error());
    return;
  }
  apply_config_changes(ctx.engine(), *changed);
  ctx.reply().ok();
}

void cmd_config_resetstat(CmdContext& ctx) {
  ctx.engine().reset_stats();
  ctx.reply().ok();
}

/// A config-file word, quoted when the config reader would otherwise split or unescape it.
std::string config_word(std::string_view word) {
  bool plain = !word.empty() && std::all_of(word.begin(), word.end(), [](char c) {
    return c > ' ' && c < 0x7f && c != '"' && c != '\'' && c != '\\';
  });
  if (plain) {
    return std::string(word);
  }
  std::string out = "\"";
  for (char c : word) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '"':
        out += "\\\"";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < ' ' || static_cast<unsigned char>(c) >= 0x7f) {
          char esc[8];
          std::snprintf(esc, sizeof(esc), "\\x%02x", static_cast<unsigned char>(c));
          out += esc;
        } else {
          out += c;
        }
    }
  }
  out += '"';
  return out;
}

/// The config-file line for `spec` holding `value` (CONFIG GET form).
std::string config_line(const DirectiveSpec& spec, const std::string& value) {
  std::string line(spec.name);
  std::vector<std::string> words;
  if ((spec.flags & k_flag_multi_arg) != 0 && !value.empty()) {
    split_args(value, words);
  } else {
    words.push_back(value);
  }
  for (const std::string& w : words) {
    line += ' ';
    line += config_word(w);
  }
  return line;
}

constexpr std::string_view k_rewrite_signature = "# Generated by CONFIG REWRITE";

/// CONFIG REWRITE's new file text from the old one, as Valkey's rewriteConfig(): lines of
/// settings keep their place with the current value, repeated or now-default ones are
/// blanked, settings that differ from their default and had no line are appended after the
/// signature comment, and unknown lines are kept as "# ??? " comments.
std::string rewrite_config_text(std::string_view old_text, const EngineConfig& config) {
  std::vector<std::string> lines;
  std::map<std::string, std::vector<size_t>, std::less<>> option_lines;
  bool needs_signature = true;
  size_t pos = 0;
  while (pos < old_text.size()) {
    size_t nl = old_text.find('\n', pos);
    std::string_view raw = old_text.substr(pos, nl == std::string_view::npos ? nl : nl - pos);
    pos = nl == std::string_view::npos ? old_text.size() : nl + 1;
    size_t b = raw.find_first_not_of("\r\n\t ");
    size_t e = raw.find_last_not_of("\r\n\t ");
    std::string line = b == std::string_view::npos ? "" : std::string(raw.substr(b, e - b + 1));
    if (line.empty() || line[0] == '#') {
      if (line == k_rewrite_signature) {
        needs_signature = false;
      }
      lines.push_back(std::move(line));
      continue;
    }
    std::vector<std::string> words;
    const DirectiveSpec* spec = nullptr;
    if (split_args(line, words) && !words.empty()) {
      spec = find_directive(words[0]);
    }
    if (spec == nullptr) {
      lines.push_back("# ??? " + line);
      continue;
    }
    lines.push_back(std::move(line));
    if (spec->is_setting() && (spec->flags & k_flag_deprecated) == 0) {
      option_lines[std::string(spec->name)].push_back(lines.size() - 1);
    }
  }

  std::vector<std::string> appended;
  for (const DirectiveSpec& spec : directive_table()) {
    if (!spec.is_setting() || (spec.flags & k_flag_deprecated) != 0) {
      continue;
    }
    std::string value = directive_value(spec, config);
    bool force = value != spec.default_value || spec.name == "save";
    auto it = option_lines.find(spec.name);
    std::string line =
        spec.name == "save" && value.empty() ? std::string("save \"\"") : config_line(spec, value);
    if (it != option_lines.end()) {
      std::vector<size_t>& at = it->second;
      lines[at.front()] = std::move(line);
      for (size_t i = 1; i < at.size(); ++i) {
        lines[at[i]].clear();
      }
      option_lines.erase(it);
    } else if (force) {
      appended.push_back(std::move(line));
    }
  }
  if (!appended.empty() && needs_signature) {
    lines.emplace_back(k_rewrite_signature);
  }
  lines.insert(lines.end(), appended.begin(), appended.end());

  std::string out;
  bool was_empty = false;
  for (const std::string& line : lines) {
    if (line.empty()) {
      if (was_empty) {
        continue;
      }
      was_empty = true;
    } else {
      was_empty = false;
    }
    out += line;
    out += '\n';
  }
  return out;
}

/// Writes `text` to `path` through a temporary file and a rename, so a crash never leaves
/// a half-written configuration. Returns an errno value, 0 on success.
int replace_file(const std::string& path, const std::string& text) {
  std::string tmp = path + ".tmp-" + std::to_string(static_cast<long>(getpid()));
  std::FILE* f = std::fopen(tmp.c_str(), "w");
  if (f == nullptr) {
    return errno;
  }
  size_t written = std::fwrite(text.data(), 1, text.size(), f);
  int err = written == text.size() ? 0 : errno;
  if (std::fflush(f) != 0 && err == 0) {
    err = errno;
  }
  if (err == 0 && fsync(fileno(f)) != 0) {
    err = errno;
  }
  if (std::fclose(f) != 0 && err == 0) {
    err = errno;
  }
  if (err == 0 && std::rename(tmp.c_str(), path.c_str()) != 0) {
    err = errno;
  }
  if (err != 0) {
    std::remove(tmp.c_str());
  }
  return err != 0 ? err : 0;
}

void cmd_config_rewrite(CmdContext& ctx) {
  const std::string& path = ctx.engine().identity().config_file;
  if (path.empty()) {
    ctx.reply().error(errors::k_no_config_file);
    return;
  }
  std::string old_text;
  std::ifstream in(path, std::ios::binary);
  if (in) {
    std::ostringstream ss;
    ss << in.rdbuf();
    old_text = ss.str();
  } else if (errno != ENOENT) {
    ctx.reply().error(std::string(errors::k_rewriting_config_prefix) + std::strerror(errno));
    return;
  }
  int err = replace_file(path, rewrite_config_text(old_text, ctx.engine().config()));
  if (err != 0) {
    ctx.reply().error(std::string(errors::k_rewriting_config_prefix) + std::strerror(err));
    return;
  }
  ctx.reply().ok();
}

void cmd_config_help(CmdContext& ctx) {
  reply_help(ctx, {
                      "GET <pattern>",
                      "    Return parameters matching the glob-like <pattern> and their values.",
                      "SET <directive> <value>",
                      "    Set the configuration <directive> to <value>.",
                      "RESETSTAT",
                      "    Reset statistics reported by the INFO command.",
                      "REWRITE",
                      "    Rewrite the configuration file.",
                  });
}

// --- COMMAND ----------------------------------------------------------------------------

/// The command named `name` ("get", or "config|get" for a subcommand), any case.
Command* lookup_command(CommandRegistry& registry, std::string_view name) {
  size_t bar = name.find('|');
  if (bar == std::string_view::npos) {
    return registry.find(name);
  }
  std::string_view base = name.substr(0, bar);
  std::string_view sub = name.substr(bar + 1);
  if (sub.find('|') != std::string_view::npos) {
    return nullptr;
  }
  Command* parent = registry.find(base);
  if (parent == nullptr || parent->subcommands.empty()) {
    return nullptr;
  }
  return registry.find_sub(*parent, sub);
}

/// Valkey's documentation of `c`, or nullptr for a command Valkey does not have.
const CommandDoc* doc_of(const Command& c) {
  return find_command_doc(to_lower(c.full_name));
}

/// ACL categories of `c`: those its table row names plus the ones Valkey implies from its
/// flags (write, read, admin+dangerous, pubsub, fast, blocking, and slow unless fast).
uint32_t acl_bits(const Command& c) {
  uint32_t bits = 0;
  std::string_view cats = c.spec.acl_categories;
  while (!cats.empty()) {
    size_t sp = cats.find(' ');
    std::string_view word = cats.substr(0, sp);
    cats = sp == std::string_view::npos ? std::string_view() : cats.substr(sp + 1);
    if (word.starts_with('@')) {
      word.remove_prefix(1);
    }
    bits |= acl_category_by_name(word);
  }
  uint32_t f = c.spec.flags;
  if ((f & k_cmd_write) != 0) {
    bits |= k_acl_write;
  }
  if ((f & k_cmd_readonly) != 0 && (bits & k_acl_scripting) == 0) {
    bits |= k_acl_read;
  }
  if ((f & k_cmd_admin) != 0) {
    bits |= k_acl_admin | k_acl_dangerous;
  }
  if ((f & k_cmd_pubsub) != 0) {
    bits |= k_acl_pubsub;
  }
  if ((f & k_cmd_fast) != 0) {
    bits |= k_acl_fast;
  }
  if ((f & k_cmd_blocking) != 0) {
    bits |= k_acl_blocking;
  }
  if ((bits & k_acl_fast) == 0) {
    bits |= k_acl_slow;
  }
  return bits;
}

/// COMMAND INFO's flag names in Valkey's order. Flags keyshift has a bit for come from the
/// registry; the others (module, asking, no_async_loading) from Valkey's table.
struct InfoFlag {
  std::string_view name;
  uint32_t keyshift;
  uint32_t valkey;
};
constexpr InfoFlag k_info_flags[] = {
    {"write", k_cmd_write, 0},
    {"readonly", k_cmd_readonly, 0},
    {"denyoom", k_cmd_denyoom, 0},
    {"module", 0, k_vf_module},
    {"admin", k_cmd_admin, 0},
    {"pubsub", k_cmd_pubsub, 0},
    {"noscript", k_cmd_noscript, 0},
    {"blocking", k_cmd_blocking, 0},
    {"loading", k_cmd_loading, 0},
    {"stale", k_cmd_stale, 0},
    {"skip_monitor", k_cmd_skip_monitor, 0},
    {"skip_slowlog", k_cmd_skip_slowlog, 0},
    {"asking", 0, k_vf_asking},
    {"fast", k_cmd_fast, 0},
    {"no_auth", k_cmd_no_auth, 0},
    {"no_mandatory_keys", k_cmd_no_mandatory_keys, 0},
    {"no_async_loading", 0, k_vf_no_async_loading},
    {"no_multi", k_cmd_no_multi, 0},
    {"movablekeys", k_cmd_movablekeys, k_vf_movablekeys},
    {"allow_busy", k_cmd_allow_busy, 0},
};

/// Replies with a set of simple strings: the names of the bits of `flags` in `names`
/// (indexed by bit position).
void reply_flag_set(ReplyBuilder& r, uint32_t flags, std::span<const std::string_view> names) {
  size_t n = 0;
  for (size_t i = 0; i < names.size(); ++i) {
    n += (flags >> i) & 1u;
  }
  r.set(n);
  for (size_t i = 0; i < names.size(); ++i) {
    if (((flags >> i) & 1u) != 0) {
      r.simple(names[i]);
    }
  }
}

void reply_key_specs(ReplyBuilder& r, const CommandDoc* doc) {
  if (doc == nullptr) {
    r.set(0);
    return;
  }
  r.set(doc->key_specs().size());
  for (const KeySpecDoc& ks : doc->key_specs()) {
    r.map(ks.notes != nullptr ? 4 : 3);
    if (ks.notes != nullptr) {
      r.bulk("notes");
      r.bulk(ks.notes);
    }
    r.bulk("flags");
    reply_flag_set(r, ks.flags, k_key_spec_flag_names);
    r.bulk("begin_search");
    r.map(2);
    r.bulk("type");
    switch (ks.begin_search) {
      case BeginSearch::unknown:
        r.bulk("unknown");
        r.bulk("spec");
        r.map(0);
        break;
      case BeginSearch::index:
        r.bulk("index");
        r.bulk("spec");
        r.map(1);
        r.bulk("index");
        r.integer(ks.index);
        break;
      case BeginSearch::keyword:
        r.bulk("keyword");
        r.bulk("spec");
        r.map(2);
        r.bulk("keyword");
        r.bulk(ks.keyword);
        r.bulk("startfrom");
        r.integer(ks.startfrom);
        break;
    }
    r.bulk("find_keys");
    r.map(2);
    r.bulk("type");
    switch (ks.find_keys) {
      case FindKeys::unknown:
        r.bulk("unknown");
        r.bulk("spec");
        r.map(0);
        break;
      case FindKeys::range:
        r.bulk("range");
        r.bulk("spec");
        r.map(3);
        r.bulk("lastkey");
        r.integer(ks.a);
        r.bulk("keystep");
        r.integer(ks.b);
        r.bulk("limit");
        r.integer(ks.c);
        break;
      case FindKeys::keynum:
        r.bulk("keynum");
        r.bulk("spec");
        r.map(3);
        r.bulk("keynumidx");
        r.integer(ks.a);
        r.bulk("firstkey");
        r.integer(ks.b);
        r.bulk("keystep");
        r.integer(ks.c);
        break;
    }
  }
}

/// One COMMAND INFO entry, or a null for a command that does not exist.
void reply_command_info(ReplyBuilder& r, const Command* c) {
  if (c == nullptr) {
    r.null();
    return;
  }
  const CommandDoc* doc = doc_of(*c);
  uint32_t doc_flags = doc != nullptr ? doc->flags : 0;
  r.array(10);
  r.bulk(c->full_name);
  r.integer(c->spec.arity);
  size_t nflags = 0;
  for (const InfoFlag& f : k_info_flags) {
    nflags += ((c->spec.flags & f.keyshift) | (doc_flags & f.valkey)) != 0 ? 1 : 0;
  }
  r.set(nflags);
  for (const InfoFlag& f : k_info_flags) {
    if (((c->spec.flags & f.keyshift) | (doc_flags & f.valkey)) != 0) {
      r.simple(f.name);
    }
  }
  r.integer(c->spec.first_key);
  r.integer(c->spec.last_key);
  r.integer(c->spec.step);
  uint32_t acl = acl_bits(*c);
  size_t ncat = 0;
  for (size_t i = 0; i < std::size(k_acl_category_names); ++i) {
    ncat += (acl >> i) & 1u;
  }
  r.set(ncat);
  for (size_t i = 0; i < std::size(k_acl_category_names); ++i) {
    if (((acl >> i) & 1u) != 0) {
      r.simple("@" + std::string(k_acl_category_names[i]));
    }
  }
  if (doc != nullptr) {
    r.set(doc->tips().size());
    for (const char* tip : doc->tips()) {
      r.bulk(tip);
    }
  } else {
    r.set(0);
  }
  reply_key_specs(r, doc);
  if (c->subcommands.empty()) {
    r.set(0);
  } else {
    r.array(c->subcommands.size());
    for (const Command* sub : c->subcommands) {
      reply_command_info(r, sub);
    }
  }
}

void reply_arg_docs(ReplyBuilder& r, std::span<const ArgDoc> args) {
  static constexpr std::string_view k_arg_flag_names[] = {"optional", "multiple", "multiple_token"};
  r.array(args.size());
  for (const ArgDoc& a : args) {
    bool nested = a.type == ArgType::oneof || a.type == ArgType::block;
    size_t n = 2 + (a.key_spec_index != -1) + (a.token != nullptr) + (a.summary != nullptr) +
               (a.since != nullptr) + (a.deprecated_since != nullptr) + (a.flags != 0) + 1;
    r.map(n);
    r.bulk("name");
    r.bulk(a.name);
    r.bulk("type");
    r.bulk(arg_type_name(a.type));
    if (!nested) {
      r.bulk("display_text");
      r.bulk(a.display_text != nullptr ? a.display_text : a.name);
    }
    if (a.key_spec_index != -1) {
      r.bulk("key_spec_index");
      r.integer(a.key_spec_index);
    }
    if (a.token != nullptr) {
      r.bulk("token");
      r.bulk(a.token);
    }
    if (a.summary != nullptr) {
      r.bulk("summary");
      r.bulk(a.summary);
    }
    if (a.since != nullptr) {
      r.bulk("since");
      r.bulk(a.since);
    }
    if (a.deprecated_since != nullptr) {
      r.bulk("deprecated_since");
      r.bulk(a.deprecated_since);
    }
    if (a.flags != 0) {
      r.bulk("flags");
      reply_flag_set(r, a.flags, k_arg_flag_names);
    }
    if (nested) {
      r.bulk("arguments");
      reply_arg_docs(r, sub_args(a));
    }
  }
}

/// One COMMAND DOCS value (the map after the command's name).
void reply_command_docs(ReplyBuilder& r, const Command& c) {
  static constexpr std::string_view k_doc_flag_names[] = {"deprecated", "syscmd"};
  const CommandDoc* doc = doc_of(c);
  if (doc == nullptr) {
    // A command Valkey does not document: only the group, as for a module command.
    r.map(c.subcommands.empty() ? 1 : 2);
    r.bulk("group");
    r.bulk("module");
  } else {
    size_t n = 1 + (doc->summary != nullptr) + (doc->since != nullptr) +
               (doc->complexity != nullptr) + (doc->doc_flags != 0) +
               (doc->deprecated_since != nullptr) + (doc->replaced_by != nullptr) +
               (doc->history_count != 0) + (doc->args_count != 0) + !c.subcommands.empty();
    r.map(n);
    if (doc->summary != nullptr) {
      r.bulk("summary");
      r.bulk(doc->summary);
    }
    if (doc->since != nullptr) {
      r.bulk("since");
      r.bulk(doc->since);
    }
    r.bulk("group");
    r.bulk(doc->group);
    if (doc->complexity != nullptr) {
      r.bulk("complexity");
      r.bulk(doc->complexity);
    }
    if (doc->doc_flags != 0) {
      r.bulk("doc_flags");
      reply_flag_set(r, doc->doc_flags, k_doc_flag_names);
    }
    if (doc->deprecated_since != nullptr) {
      r.bulk("deprecated_since");
      r.bulk(doc->deprecated_since);
    }
    if (doc->replaced_by != nullptr) {
      r.bulk("replaced_by");
      r.bulk(doc->replaced_by);
    }
    if (doc->history_count != 0) {
      r.bulk("history");
      r.set(doc->history().size());
      for (const HistoryDoc& h : doc->history()) {
        r.array(2);
        r.bulk(h.since);
        r.bulk(h.changes);
      }
    }
    if (doc->args_count != 0) {
      r.bulk("arguments");
      reply_arg_docs(r, doc->args());
    }
  }
  if (!c.subcommands.empty()) {
    r.bulk("subcommands");
    r.map(c.subcommands.size());
    for (const Command* sub : c.subcommands) {
      r.bulk(sub->full_name);
      reply_command_docs(r, *sub);
    }
  }
}

void cmd_command(CmdContext& ctx) {
  const auto& all = ctx.engine().registry().commands();
  ctx.reply().array(all.size());
  for (const Command* c : all) {
    reply_command_info(ctx.reply(), c);
  }
}

void cmd_command_count(CmdContext& ctx) {
  ctx.reply().integer(static_cast<int64_t>(ctx.engine().registry().commands().size()));
}

void cmd_command_info(CmdContext& ctx) {
  if (ctx.argc() == 2) {
    cmd_command(ctx);
    return;
  }
  ctx.reply().array(ctx.argc() - 2);
  for (size_t i = 2; i < ctx.argc(); ++i) {
    reply_command_info(ctx.reply(), lookup_command(ctx.engine().registry(), ctx.arg(i)));
  }
}

void cmd_command_docs(CmdContext& ctx) {
  std::vector<const Command*> cmds;
  if (ctx.argc() == 2) {
    const auto& all = ctx.engine().registry().commands();
    cmds.assign(all.begin(), all.end());
  } else {
    for (size_t i = 2; i < ctx.argc(); ++i) {
      if (const Command* c = lookup_command(ctx.engine().registry(), ctx.arg(i))) {
        cmds.push_back(c);
      }
    }
  }
  ctx.reply().map(cmds.size());
  for (const Command* c : cmds) {
    ctx.reply().bulk(c->full_name);
    reply_command_docs(ctx.reply(), *c);
  }
}

enum class ListFilter : uint8_t { none, module, aclcat, pattern };

void cmd_command_list(CmdContext& ctx) {
  ListFilter filter = ListFilter::none;
  std::string_view arg;
  for (size_t i = 2; i < ctx.argc(); ++i) {
    size_t more = ctx.argc() - 1 - i;
    if (iequals(ctx.arg(i), "filterby") && more == 2) {
      std::string_view type = ctx.arg(i + 1);
      if (iequals(type, "module")) {
        filter = ListFilter::module;
      } else if (iequals(type, "aclcat")) {
        filter = ListFilter::aclcat;
      } else if (iequals(type, "pattern")) {
        filter = ListFilter::pattern;
      } else {
        ctx.reply().error(errors::k_syntax);
        return;
      }
      arg = ctx.arg(i + 2);
      i += 2;
    } else {
      ctx.reply().error(errors::k_syntax);
      return;
    }
  }
  uint32_t category = filter == ListFilter::aclcat ? acl_category_by_name(arg) : 0;
  auto keep = [&](const Command& c) {
    switch (filter) {
      case ListFilter::none:
        return true;
      case ListFilter::module:
        return false;  // keyshift loads no modules
      case ListFilter::aclcat:
        return category != 0 && (acl_bits(c) & category) != 0;
      case ListFilter::pattern:
        return glob_match(arg, c.full_name, GlobCase::insensitive);
    }
    return false;
  };
  ReplyBuilder& r = ctx.reply();
  size_t mark = r.begin_array();
  size_t n = 0;
  for (const Command* c : ctx.engine().registry().commands()) {
    if (keep(*c)) {
      r.bulk(c->full_name);
      ++n;
    }
    for (const Command* sub : c->subcommands) {
      if (keep(*sub)) {
        r.bulk(sub->full_name);
        ++n;
      }
    }
  }
  r.end_array(mark, n);
}

/// A key argument found by COMMAND GETKEYS: its position and key-spec flags.
struct KeyRef {
  size_t pos;
  uint32_t flags;
};

/// Keys of `argv` (the command's own arguments) from Valkey's key specs, as its
/// getKeysUsingKeySpecs(); nullopt when a spec cannot be applied (unknown or incomplete).
std::optional<std::vector<KeyRef>> keys_from_specs(const CommandDoc& doc, const Command& c,
                                                   std::span<const std::string_view> argv) {
  std::vector<KeyRef> keys;
  int argc = static_cast<int>(argv.size());
  for (const KeySpecDoc& spec : doc.key_specs()) {
    if ((spec.flags & k_key_not_key) != 0) {
      continue;
    }
    int first = 0;
    if (spec.begin_search == BeginSearch::index) {
      first = spec.index;
    } else if (spec.begin_search == BeginSearch::keyword) {
      int start = spec.startfrom > 0 ? spec.startfrom : argc + spec.startfrom;
      int end = spec.startfrom > 0 ? argc - 1 : 1;
      for (int i = start; i != end; i = start <= end ? i + 1 : i - 1) {
        if (i >= argc || i < 1) {
          break;
        }
        if (iequals(argv[static_cast<size_t>(i)], spec.keyword)) {
          first = i + 1;
          break;
        }
      }
      if (first == 0) {
        continue;
      }
    } else {
      return std::nullopt;
    }
    int last = 0;
    int step = 1;
    if (spec.find_keys == FindKeys::range) {
      step = spec.b;
      if (spec.a >= 0) {
        last = first + spec.a;
      } else if (spec.c == 0) {
        last = argc + spec.a;
      } else {
        last = first + ((argc - first) / spec.c + spec.a);
      }
    } else if (spec.find_keys == FindKeys::keynum) {
      step = spec.c;
      if (spec.a >= argc || first + spec.a >= argc) {
        return std::nullopt;
      }
      int64_t numkeys = 0;
      if (!parse_i64(argv[static_cast<size_t>(first + spec.a)], numkeys) || numkeys < 0) {
        return std::nullopt;
      }
      first += spec.b;
      last = first + static_cast<int>(numkeys) - 1;
    } else {
      return std::nullopt;
    }
    if (last >= argc || last < first || first >= argc) {
      return std::nullopt;
    }
    for (int i = first; i <= last; i += std::max(step, 1)) {
      if (i >= argc || i < first) {
        if (c.spec.arity < 0) {
          continue;
        }
        break;
      }
      keys.push_back({static_cast<size_t>(i), spec.flags});
    }
    if ((spec.flags & k_key_incomplete) != 0) {
      return std::nullopt;
    }
  }
  return keys;
}

/// Keys of SET and BITFIELD, whose key-spec flags depend on the arguments, and of SORT and
/// SORT_RO, whose STORE/BY/GET specs are incomplete (Valkey decides them in its setGetKeys,
/// bitfieldGetKeys, sortGetKeys and sortROGetKeys); nullopt for other commands.
std::optional<std::vector<KeyRef>> variable_flag_keys(const Command& c,
                                                      std::span<const std::string_view> argv) {
  if (c.full_name == "sort_ro") {
    return std::vector<KeyRef>{{1, k_key_ro | k_key_access}};
  }
  if (c.full_name == "sort") {
    // Only options with arguments are skipped; the last STORE wins, as SORT itself does.
    std::vector<KeyRef> keys{{1, k_key_ro | k_key_access}};
    std::optional<size_t> store;
    for (size_t i = 2; i < argv.size(); ++i) {
      if (iequals(argv[i], "limit")) {
        i += 2;
      } else if (iequals(argv[i], "store") && i + 1 < argv.size()) {
        store = i + 1;
      } else if (iequals(argv[i], "get") || iequals(argv[i], "by")) {
        i += 1;
      }
    }
    if (store) {
      keys.push_back({*store, k_key_ow | k_key_update});
    }
    return keys;
  }
  if (c.full_name == "set") {
    for (size_t i = 3; i < argv.size(); ++i) {
      if (iequals(argv[i], "get")) {
        return std::vector<KeyRef>{{1, k_key_rw | k_key_access | k_key_update}};
      }
    }
    return std::vector<KeyRef>{{1, k_key_ow | k_key_update}};
  }
  if (c.full_name == "bitfield") {
    bool readonly = true;
    for (size_t i = 2; i < argv.size(); ++i) {
      size_t remaining = argv.size() - i - 1;
      if (iequals(argv[i], "get") && remaining >= 2) {
        i += 2;
      } else if ((iequals(argv[i], "set") || iequals(argv[i], "incrby")) && remaining >= 3) {
        readonly = false;
        break;
      } else if (iequals(argv[i], "overflow") && remaining >= 1) {
        i += 1;
      } else {
        readonly = false;
        break;
      }
    }
    return std::vector<KeyRef>{
        {1, readonly ? k_key_ro | k_key_access : k_key_rw | k_key_access | k_key_update}};
  }
  return std::nullopt;
}

void getkeys(CmdContext& ctx, bool with_flags) {
  std::span<const std::string_view> argv = ctx.args().subspan(2);
  CommandRegistry& registry = ctx.engine().registry();
  Command* c = registry.find(argv[0]);
  if (c != nullptr && argv.size() > 1 && !c->subcommands.empty()) {
    c = registry.find_sub(*c, argv[1]);
  }
  if (c == nullptr) {
    ctx.reply().error(errors::k_invalid_command_specified);
    return;
  }
  const CommandDoc* doc = doc_of(*c);
  bool has_keys = false;
  if (doc != nullptr) {
    for (const KeySpecDoc& ks : doc->key_specs()) {
      has_keys = has_keys || (ks.flags & k_key_not_key) == 0;
    }
  } else {
    has_keys = c->spec.first_key != 0;
  }
  if (!has_keys) {
    ctx.reply().error(errors::k_command_has_no_keys);
    return;
  }
  int argc = static_cast<int>(argv.size());
  if ((c->spec.arity > 0 && c->spec.arity != argc) || argc < -c->spec.arity) {
    ctx.reply().error(errors::k_invalid_command_arg_count);
    return;
  }
  std::optional<std::vector<KeyRef>> keys;
  if (doc != nullptr) {
    keys = variable_flag_keys(*c, argv);
    if (!keys) {
      keys = keys_from_specs(*doc, *c, argv);
    }
    if (keys && keys->empty()) {
      keys.reset();
    }
  } else {
    // Not a Valkey command: its registry row's first/last/step range.
    std::vector<KeyRef> found;
    int last = c->spec.last_key < 0 ? argc + c->spec.last_key : c->spec.last_key;
    for (int i = c->spec.first_key; i <= last && i < argc; i += std::max(c->spec.step, 1)) {
      found.push_back({static_cast<size_t>(i), 0});
    }
    if (!found.empty()) {
      keys = std::move(found);
    }
  }
  if (!keys) {
    if ((c->spec.flags & k_cmd_no_mandatory_keys) != 0) {
      ctx.reply().array(0);
    } else {
      ctx.reply().error(errors::k_invalid_command_arguments);
    }
    return;
  }
  ctx.reply().array(keys->size());
  for (const KeyRef& k : *keys) {
    if (with_flags) {
      ctx.reply().array(2);
      ctx.reply().bulk(argv[k.pos]);
      reply_flag_set(ctx.reply(), k.flags, k_key_spec_flag_names);
    } else {
      ctx.reply().bulk(argv[k.pos]);
    }
  }
}

void cmd_command_getkeys(CmdContext& ctx) {
  getkeys(ctx, false);
}
void cmd_command_getkeysandflags(CmdContext& ctx) {
  getkeys(ctx, true);
}

void cmd_command_help(CmdContext& ctx) {
  reply_help(ctx, {
                      "(no subcommand)",
                      "    Return details about all commands.",
                      "COUNT",
                      "    Return the total number of commands in this server.",
                      "LIST",
                      "    Return a list of all commands in this server.",
                      "INFO [<command-name> ...]",
                      "    Return details about multiple commands.",
                      "    If no command names are given, documentation details for all",
                      "    commands are returned.",
                      "DOCS [<command-name> ...]",
                      "    Return documentation details about multiple commands.",
                      "    If no command names are given, documentation details for all",
                      "    commands are returned.",
                      "GETKEYS <full-command>",
                      "    Return the keys from a full command.",
                      "GETKEYSANDFLAGS <full-command>",
                      "    Return the keys and the access flags from a full command.",
                  });
}

// --- CLIENT -----------------------------------------------------------------------------

/// Valkey's rule for names and library attributes: printable ASCII without spaces.
bool valid_client_attr(std::string_view value) {
  return std::all_of(value.begin(), value.end(), [](char c) { return c >= '!' && c <= '~'; });
}

enum class ClientType : uint8_t { normal, replica, pubsub, primary };

std::optional<ClientType> client_type_by_name(std::string_view name) {
  if (iequals(name, "normal")) {
    return ClientType::normal;
  }
  if (iequals(name, "slave") || iequals(name, "replica")) {
    return ClientType::replica;
  }
  if (iequals(name, "pubsub")) {
    return ClientType::pubsub;
  }
  if (iequals(name, "master") || iequals(name, "primary")) {
    return ClientType::primary;
  }
  return std::nullopt;
}

/// keyshift has no replication links, so a session is a pub/sub or a normal client (MONITOR
/// clients count as normal, as in Valkey).
ClientType client_type(const Session& s) {
  return s.has(k_session_pubsub) ? ClientType::pubsub : ClientType::normal;
}

/// Seconds since the session connected, as CLIENT LIST's age= and KILL MAXAGE see it.
int64_t client_age(CmdContext& ctx, const Session& s) {
  return ctx.now_ms() / 1000 - s.created_ms / 1000;
}

/// One CLIENT LIST / CLIENT INFO line (without the newline), in Valkey 8's field order.
std::string client_info_line(CmdContext& ctx, const Session& s) {
  // The reply buffer every Valkey client has (PROTO_REPLY_CHUNK_BYTES); bytes beyond it
  // count as the output list.
  constexpr uint64_t k_reply_buffer = 16 * 1024;
  bool self = &s == &ctx.session();
  std::string flags;
  if (s.has(k_session_monitor)) {
    flags += 'O';
  }
  if (s.has(k_session_pubsub)) {
    flags += 'P';
  }
  if (s.has(k_session_multi)) {
    flags += 'x';
  }
  if (s.has(k_session_blocked)) {
    flags += 'b';
  }
  if (s.has(k_session_close_after_reply)) {
    flags += 'c';
  }
  if (s.has(k_session_close_asap)) {
    flags += 'A';
  }
  if (s.has(k_session_unix_socket)) {
    flags += 'U';
  }
  if (s.has(k_session_no_evict)) {
    flags += 'e';
  }
  if (s.has(k_session_no_touch)) {
    flags += 'T';
  }
  if (flags.empty()) {
    flags = "N";
  }
  uint64_t argv_mem = 0;
  if (self) {
    for (std::string_view a : ctx.args()) {
      argv_mem += a.size();
    }
  }
  uint64_t out = s.out.size();
  uint64_t obl = std::min(out, k_reply_buffer);
  uint64_t omem = out > k_reply_buffer ? out - k_reply_buffer : 0;
  uint64_t tot_mem = sizeof(Session) + k_reply_buffer + s.name.capacity() + s.lib_name.capacity() +
                     s.lib_ver.capacity() + omem + s.query_buffer_bytes + argv_mem;
  std::string_view cmd = self ? std::string_view(ctx.command().full_name) : s.last_command;
  std::string line;
  line.reserve(400);
  line += "id=" + std::to_string(s.id());
  line += " addr=" + s.addr;
  line += " laddr=" + s.laddr;
  line += " fd=" + std::to_string(s.fd);
  line += " name=" + s.name;
  line += " age=" + std::to_string(client_age(ctx, s));
  line += " idle=" + std::to_string(ctx.now_ms() / 1000 - s.last_interaction_ms / 1000);
  line += " flags=" + flags;
  line += " db=" + std::to_string(s.db);
  line += " sub=" + std::to_string(s.sub_count());
  line += " psub=" + std::to_string(s.psub_count());
  line += " ssub=" + std::to_string(s.ssub_count());
  line += " multi=" + std::to_string(s.multi_count());
  line += " watch=" + std::to_string(s.watch_count());
  line += " qbuf=" + std::to_string(s.query_buffer_bytes);
  line += " qbuf-free=0";
  line += " argv-mem=" + std::to_string(argv_mem);
  line += " multi-mem=0";
  line += " rbs=" + std::to_string(k_reply_buffer);
  line += " rbp=" + std::to_string(std::min<uint64_t>(s.out.capacity(), k_reply_buffer));
  line += " obl=" + std::to_string(obl);
  line += " oll=" + std::to_string(omem != 0 ? 1 : 0);
  line += " omem=" + std::to_string(omem);
  line += " tot-mem=" + std::to_string(tot_mem);
  line += s.host() != nullptr ? (out > 0 && !self ? " events=rw" : " events=r") : " events=";
  line += " cmd=";
  line += cmd;
  line += " user=default redir=-1";
  line += " resp=" + std::to_string(s.resp);
  line += " lib-name=" + s.lib_name;
  line += " lib-ver=" + s.lib_ver;
  line += " tot-net-in=" + std::to_string(s.net_input_bytes);
  line += " tot-net-out=" + std::to_string(s.net_output_bytes);
  line += " tot-cmds=" + std::to_string(s.total_commands);
  return line;
}

void cmd_client_id(CmdContext& ctx) {
  ctx.reply().integer(static_cast<int64_t>(ctx.session().id()));
}

void cmd_client_info(CmdContext& ctx) {
  ctx.reply().verbatim(client_info_line(ctx, ctx.session()) + "\n");
}

void cmd_client_list(CmdContext& ctx) {
  std::optional<ClientType> type;
  std::string text;
  Engine& engine = ctx.engine();
  if (ctx.argc() == 4 && iequals(ctx.arg(2), "type")) {
    type = client_type_by_name(ctx.arg(3));
    if (!type) {
      ctx.reply().error(std::string(errors::k_unknown_client_type_prefix) +
                        std::string(ctx.arg(3)) + "'");
      return;
    }
  } else if (ctx.argc() > 3 && iequals(ctx.arg(2), "id")) {
    for (size_t i = 3; i < ctx.argc(); ++i) {
      int64_t id = 0;
      if (!parse_int_arg(ctx, ctx.arg(i), id, errors::k_invalid_client_id)) {
        return;
      }
      auto it = engine.sessions().find(static_cast<uint64_t>(id));
      if (id > 0 && it != engine.sessions().end()) {
        text += client_info_line(ctx, *it->second);
        text += '\n';
      }
    }
    ctx.reply().verbatim(text);
    return;
  } else if (ctx.argc() != 2) {
    ctx.reply().error(errors::k_syntax);
    return;
  }
  for (const auto& [id, s] : engine.sessions()) {
    if (type && client_type(*s) != *type) {
      continue;
    }
    text += client_info_line(ctx, *s);
    text += '\n';
  }
  ctx.reply().verbatim(text);
}

void cmd_client_setname(CmdContext& ctx) {
  std::string_view name = ctx.arg(2);
  if (!valid_client_attr(name)) {
    ctx.reply().error(errors::k_client_name_invalid);
    return;
  }
  ctx.session().name = std::string(name);
  ctx.reply().ok();
}

void cmd_client_getname(CmdContext& ctx) {
  if (ctx.session().name.empty()) {
    ctx.reply().null();
  } else {
    ctx.reply().bulk(ctx.session().name);
  }
}

void cmd_client_setinfo(CmdContext& ctx) {
  std::string_view attr = ctx.arg(2);
  std::string_view value = ctx.arg(3);
  std::string* dest = nullptr;
  if (iequals(attr, "lib-name")) {
    dest = &ctx.session().lib_name;
  } else if (iequals(attr, "lib-ver")) {
    dest = &ctx.session().lib_ver;
  } else {
    ctx.reply().error(std::string(errors::k_unrecognized_option_prefix) + std::string(attr) + "'");
    return;
  }
  if (!valid_client_attr(value)) {
    ctx.reply().error("ERR " + std::string(attr) + std::string(errors::k_attr_invalid_suffix));
    return;
  }
  *dest = std::string(value);
  ctx.reply().ok();
}

/// Closes `victim` as CLIENT KILL does: the caller after its reply, anyone else as soon as
/// its host gets to it.
void kill_session(CmdContext& ctx, Session& victim, bool& close_self) {
  if (&victim == &ctx.session()) {
    close_self = true;
    return;
  }
  victim.set(k_session_close_asap);
  if (victim.host() != nullptr) {
    victim.host()->wake(victim);
  }
}

void cmd_client_kill(CmdContext& ctx) {
  std::optional<std::string_view> addr;
  std::optional<std::string_view> laddr;
  std::optional<ClientType> type;
  uint64_t id = 0;
  int64_t max_age = 0;
  bool skipme = true;
  if (ctx.argc() == 3) {
    addr = ctx.arg(2);
    skipme = false;  // the old form may kill the caller itself
  } else {
    for (size_t i = 2; i < ctx.argc(); i += 2) {
      std::string_view opt = ctx.arg(i);
      bool more = i + 1 < ctx.argc();
      std::string_view value = more ? ctx.arg(i + 1) : std::string_view();
      if (iequals(opt, "id") && more) {
        int64_t v = 0;
        if (!parse_i64(value, v) || v < 1) {
          ctx.reply().error(errors::k_client_id_positive);
          return;
        }
        id = static_cast<uint64_t>(v);
      } else if (iequals(opt, "maxage") && more) {
        int64_t v = 0;
        if (!parse_int_arg(ctx, value, v, errors::k_maxage_not_integer)) {
          return;
        }
        if (v <= 0) {
          ctx.reply().error(errors::k_maxage_positive);
          return;
        }
        max_age = v;
      } else if (iequals(opt, "type") && more) {
        type = client_type_by_name(value);
        if (!type) {
          ctx.reply().error(std::string(errors::k_unknown_client_type_prefix) + std::string(value) +
                            "'");
          return;
        }
      } else if (iequals(opt, "addr") && more) {
        addr = value;
      } else if (iequals(opt, "laddr") && more) {
        laddr = value;
      } else if (iequals(opt, "user") && more) {
        // keyshift has a single ACL user.
        if (value != "default") {
          ctx.reply().error(std::string(errors::k_no_such_user_prefix) + std::string(value) + "'");
          return;
        }
      } else if (iequals(opt, "skipme") && more) {
        if (iequals(value, "yes")) {
          skipme = true;
        } else if (iequals(value, "no")) {
          skipme = false;
        } else {
          ctx.reply().error(errors::k_syntax);
          return;
        }
      } else {
        ctx.reply().error(errors::k_syntax);
        return;
      }
    }
  }
  int64_t killed = 0;
  bool close_self = false;
  for (const auto& [sid, s] : ctx.engine().sessions()) {
    if ((addr && s->addr != *addr) || (laddr && s->laddr != *laddr) ||
        (type && client_type(*s) != *type) || (id != 0 && s->id() != id) ||
        (skipme && s.get() == &ctx.session()) || (max_age != 0 && client_age(ctx, *s) < max_age)) {
      continue;
    }
    kill_session(ctx, *s, close_self);
    ++killed;
  }
  if (ctx.argc() == 3) {
    if (killed == 0) {
      ctx.reply().error(errors::k_no_such_client);
    } else {
      ctx.reply().ok();
    }
  } else {
    ctx.reply().integer(killed);
  }
  if (close_self) {
    ctx.session().set(k_session_close_after_reply);
  }
}

void cmd_client_no_evict(CmdContext& ctx) {
  bool on = false;
  if (!parse_on_off(ctx.arg(2), on)) {
    ctx.reply().error(errors::k_syntax);
    return;
  }
  on ? ctx.session().set(k_session_no_evict) : ctx.session().clear(k_session_no_evict);
  ctx.reply().ok();
}

void cmd_client_no_touch(CmdContext& ctx) {
  bool on = false;
  if (!parse_on_off(ctx.arg(2), on)) {
    ctx.reply().error(errors::k_syntax);
    return;
  }
  on ? ctx.session().set(k_session_no_touch) : ctx.session().clear(k_session_no_touch);
  ctx.reply().ok();
}

void cmd_client_reply(CmdContext& ctx) {
  Session& s = ctx.session();
  std::string_view mode = ctx.arg(2);
  if (iequals(mode, "on")) {
    s.clear(k_session_reply_off);
    s.clear(k_session_reply_skip_current);
    ctx.reply().ok();
  } else if (iequals(mode, "off")) {
    s.set(k_session_reply_off);
  } else if (iequals(mode, "skip")) {
    if (!s.has(k_session_reply_off)) {
      s.set(k_session_reply_skip_next);
    }
  } else {
    ctx.reply().error(errors::k_syntax);
  }
}

void cmd_client_getredir(CmdContext& ctx) {
  ctx.reply().integer(-1);  // no client tracking in keyshift
}

void cmd_client_trackinginfo(CmdContext& ctx) {
  ReplyBuilder& r = ctx.reply();
  r.map(3);
  r.bulk("flags");
  r.set(1);
  r.bulk("off");
  r.bulk("redirect");
  r.integer(-1);
  r.bulk("prefixes");
  r.array(0);
}

void cmd_client_unblock(CmdContext& ctx) {
  if (ctx.argc() > 4) {
    ctx.reply().error(subcommand_syntax_error(ctx));
    return;
  }
  if (ctx.argc() == 4 && !iequals(ctx.arg(3), "timeout") && !iequals(ctx.arg(3), "error")) {
    ctx.reply().error(errors::k_unblock_reason);
    return;
  }
  int64_t id = 0;
  if (!parse_int_arg(ctx, ctx.arg(2), id)) {
    return;
  }
  bool with_error = ctx.argc() == 4 && iequals(ctx.arg(3), "error");
  bool unblocked = id > 0 && ctx.engine().unblock_client(static_cast<uint64_t>(id), with_error);
  ctx.reply().integer(unblocked ? 1 : 0);
}

void cmd_client_capa(CmdContext& ctx) {
  ctx.reply().ok();
}

void cmd_client_help(CmdContext& ctx) {
  reply_help(ctx, {
                      "CAPA <option> [options...]",
                      "    The client claims its some capability options. Options are:",
                      "    * REDIRECT",
                      "      The client can handle redirection during primary and replica "
                      "failover in standalone mode.",
                      "GETREDIR",
                      "    Return the client ID we are redirecting to when tracking is enabled.",
                      "GETNAME",
                      "    Return the name of the current connection.",
                      "ID",
                      "    Return the ID of the current connection.",
                      "INFO",
                      "    Return information about the current client connection.",
                      "KILL <ip:port>",
                      "    Kill connection made from <ip:port>.",
                      "KILL <option> <value> [<option> <value> [...]]",
                      "    Kill connections. Options are:",
                      "    * ADDR (<ip:port>|<unixsocket>:0)",
                      "      Kill connections made from the specified address",
                      "    * LADDR (<ip:port>|<unixsocket>:0)",
                      "      Kill connections made to specified local address",
                      "    * TYPE (NORMAL|PRIMARY|REPLICA|PUBSUB)",
                      "      Kill connections by type.",
                      "    * USER <username>",
                      "      Kill connections authenticated by <username>.",
                      "    * SKIPME (YES|NO)",
                      "      Skip killing current connection (default: yes).",
                      "    * ID <client-id>",
                      "      Kill connections by client id.",
                      "    * MAXAGE <maxage>",
                      "      Kill connections older than the specified age.",
                      "LIST [options ...]",
                      "    Return information about client connections. Options:",
                      "    * TYPE (NORMAL|PRIMARY|REPLICA|PUBSUB)",
                      "      Return clients of specified type.",
                      "REPLY (ON|OFF|SKIP)",
                      "    Control the replies sent to the current connection.",
                      "SETNAME <name>",
                      "    Assign the name <name> to the current connection.",
                      "SETINFO <option> <value>",
                      "    Set client meta attr. Options are:",
                      "    * LIB-NAME: the client lib name.",
                      "    * LIB-VER: the client lib version.",
                      "UNBLOCK <clientid> [TIMEOUT|ERROR]",
                      "    Unblock the specified blocked client.",
                      "TRACKINGINFO",
                      "    Report tracking status for the current connection.",
                      "NO-EVICT (ON|OFF)",
                      "    Protect current client connection from eviction.",
                      "NO-TOUCH (ON|OFF)",
                      "    Will not touch LRU/LFU stats when this mode is on.",
                  });
}

// --- MONITOR ----------------------------------------------------------------------------

void cmd_monitor(CmdContext& ctx) {
  Session& s = ctx.session();
  if (s.has(k_session_monitor)) {
    return;  // already monitoring: Valkey ignores the command without a reply
  }
  s.set(k_session_monitor);
  ctx.engine().monitors().push_back(&s);
  ctx.reply().ok();
}

// --- MEMORY -----------------------------------------------------------------------------

void cmd_memory_usage(CmdContext& ctx) {
  for (size_t i = 3; i < ctx.argc(); ++i) {
    if (iequals(ctx.arg(i), "samples") && i + 1 < ctx.argc()) {
      int64_t samples = 0;
      if (!parse_int_arg(ctx, ctx.arg(i + 1), samples)) {
        return;
      }
      if (samples < 0) {
        ctx.reply().error(errors::k_syntax);
        return;
      }
      ++i;  // keyshift measures values exactly; the sample count changes nothing
    } else {
      ctx.reply().error(errors::k_syntax);
      return;
    }
  }
  Entry* e = find_without_expiry(ctx, ctx.arg(2));
  if (e == nullptr) {
    ctx.reply().null();
    return;
  }
  // The entry (key, value, TTL and header in one allocation, plus any heap value) and its
  // share of the table's bucket array.
  Db& db = ctx.db();
  uint64_t share = db.buckets() * sizeof(void*) / std::max<size_t>(db.size(), 1);
  ctx.reply().integer(static_cast<int64_t>(e->bytes_used() + share));
}

void cmd_memory_stats(CmdContext& ctx) {
  Engine& engine = ctx.engine();
  uint64_t used = engine.used_memory();
  uint64_t peak = std::max(engine.memory().peak(), used);
  uint64_t rss = process_rss_bytes();
  uint64_t clients = 0;
  for (const auto& [id, s] : engine.sessions()) {
    clients += s->out.capacity() + s->query_buffer_bytes;
  }
  struct DbOverhead {
    int id;
    uint64_t main;
    uint64_t expires;
  };
  std::vector<DbOverhead> dbs;
  uint64_t keys = 0;
  uint64_t overhead = 0;
  for (int i = 0; i < engine.db_count(); ++i) {
    Db& db = engine.db(i);
    if (db.size() == 0) {
      continue;
    }
    DbOverhead o{i, db.buckets() * sizeof(void*), db.expires_size() * sizeof(void*)};
    overhead += o.main + o.expires;
    keys += db.size();
    dbs.push_back(o);
  }
  overhead = std::min(overhead, used);
  uint64_t dataset = used - overhead;
  double fused = static_cast<double>(std::max<uint64_t>(used, 1));
  double frag = used != 0 ? static_cast<double>(rss) / fused : 0;
  int64_t frag_bytes = static_cast<int64_t>(rss) - static_cast<int64_t>(used);
  ReplyBuilder& r = ctx.reply();
  r.map(31 + dbs.size());
  auto num = [&](std::string_view name, int64_t v) {
    r.bulk(name);
    r.integer(v);
  };
  auto dbl = [&](std::string_view name, double v) {
    r.bulk(name);
    r.double_value(v);
  };
  num("peak.allocated", static_cast<int64_t>(peak));
  num("total.allocated", static_cast<int64_t>(used));
  num("startup.allocated", 0);
  num("replication.backlog", 0);
  num("clients.slaves", 0);
  num("clients.normal", static_cast<int64_t>(clients));
  num("cluster.links", 0);
  num("aof.buffer", 0);
  num("lua.caches", 0);
  num("functions.caches", 0);
  for (const DbOverhead& o : dbs) {
    r.bulk("db." + std::to_string(o.id));
    r.map(2);
    num("overhead.hashtable.main", static_cast<int64_t>(o.main));
    num("overhead.hashtable.expires", static_cast<int64_t>(o.expires));
  }
  num("overhead.db.hashtable.lut", 0);
  num("overhead.db.hashtable.rehashing", 0);
  num("overhead.total", static_cast<int64_t>(overhead));
  num("db.dict.rehashing.count", 0);
  num("keys.count", static_cast<int64_t>(keys));
  num("keys.bytes-per-key", static_cast<int64_t>(keys != 0 ? used / keys : 0));
  num("dataset.bytes", static_cast<int64_t>(dataset));
  dbl("dataset.percentage", used != 0 ? static_cast<double>(dataset) * 100 / fused : 0);
  dbl("peak.percentage",
      peak != 0 ? static_cast<double>(used) * 100 / static_cast<double>(peak) : 0);
  num("allocator.allocated", static_cast<int64_t>(used));
  num("allocator.active", static_cast<int64_t>(used));
  num("allocator.resident", static_cast<int64_t>(rss));
  num("allocator.muzzy", 0);
  dbl("allocator-fragmentation.ratio", 1.0);
  num("allocator-fragmentation.bytes", 0);
  dbl("allocator-rss.ratio", 1.0);
  num("allocator-rss.bytes", 0);
  dbl("rss-overhead.ratio", frag);
  num("rss-overhead.bytes", frag_bytes);
  dbl("fragmentation", frag);
  num("fragmentation.bytes", frag_bytes);
}

void cmd_memory_doctor(CmdContext& ctx) {
  Engine& engine = ctx.engine();
  uint64_t used = engine.used_memory();
  uint64_t peak = std::max(engine.memory().peak(), used);
  std::string report;
  if (used < 5 * 1024 * 1024) {
    report =
        "Hi Sam, this instance is empty or is using very little memory, my issues detector "
        "can't be used in these conditions. Please, leave for your mission on Earth and fill it "
        "with some data. The new Sam and I will be back to our programming as soon as I "
        "finished rebooting.\n";
  } else if (static_cast<double>(peak) / static_cast<double>(used) > 1.5) {
    report =
        "Sam, I detected a few issues in this Valkey instance memory implants:\n\n"
        " * Peak memory: In the past this instance used more than 150% the memory that is "
        "currently using. The allocator is normally not able to release memory after a peak, so "
        "you can expect to see a big fragmentation ratio, however this is actually harmless and "
        "is only due to the memory peak, and if the Valkey instance Resident Set Size (RSS) is "
        "currently bigger than expected, the memory will be used as soon as you fill the Valkey "
        "instance with more data. If the memory peak was only occasional and you want to try to "
        "reclaim memory, please try the MEMORY PURGE command, otherwise the only other option is "
        "to shutdown and restart the instance.\n\n"
        "I'm here to keep you safe, Sam. I want to help you.\n";
  } else {
    report =
        "Hi Sam, I can't find any memory issue in your instance. I can only account for what "
        "occurs on this base.\n";
  }
  ctx.reply().verbatim(report);
}

void cmd_memory_malloc_stats(CmdContext& ctx) {
  ctx.reply().bulk("Stats not supported for the current allocator");
}

void cmd_memory_purge(CmdContext& ctx) {
  ctx.reply().ok();
}

void cmd_memory_help(CmdContext& ctx) {
  reply_help(ctx, {
                      "DOCTOR",
                      "    Return memory problems reports.",
                      "MALLOC-STATS",
                      "    Return internal statistics report from the memory allocator.",
                      "PURGE",
                      "    Attempt to purge dirty pages for reclamation by the allocator.",
                      "STATS",
                      "    Return information about the memory usage of the server.",
                      "USAGE <key> [SAMPLES <count>]",
                      "    Return memory in bytes used by <key> and its value. Nested values are",
                      "    sampled up to <count> times (default: 5, 0 means sample all).",
                  });
}

// --- DEBUG ------------------------------------------------------------------------------

/// The digest of the value in `e`, seeded with `seed` (Valkey's xorObjectDigest).
Digest value_digest(const Entry* e, const Digest& seed) {
  bool has_expire = e->has_expire();
  switch (e->type()) {
    case ObjType::string: {
      if (e->kind() == Entry::Kind::integer) {
        return digest_string(e->integer(), has_expire, seed);
      }
      IntBuffer buf;
      return digest_string(string_of(e, buf), has_expire, seed);
    }
    case ObjType::set:
      return digest_set(*SetRef(e), has_expire, seed);
    case ObjType::list:
      return digest_list(*static_cast<const ListValue*>(e->object()), has_expire, seed);
    case ObjType::hash:
      return digest_hash(*HashRef(e), has_expire, seed);
    case ObjType::zset:
      return digest_zset(*ZSetRef(e), has_expire, seed);
    case ObjType::stream:
      return digest_stream(*static_cast<const StreamValue*>(e->object()), has_expire, seed);
    default:
      // Collections arrive with their families, which digest through digest.hpp's builders.
      return seed;
  }
}

/// Bytes of an RDB length prefix for `len`.
uint64_t rdb_length_size(uint64_t len) {
  if (len < (1u << 6)) {
    return 1;
  }
  if (len < (1u << 14)) {
    return 2;
  }
  return len <= UINT32_MAX ? 5 : 9;
}

/// Bytes of an RDB integer-encoded string for `v`, 0 when it does not fit 32 bits.
uint64_t rdb_int_size(int64_t v) {
  if (v >= -(1 << 7) && v <= (1 << 7) - 1) {
    return 2;
  }
  if (v >= -(1 << 15) && v <= (1 << 15) - 1) {
    return 3;
  }
  return v >= INT32_MIN && v <= INT32_MAX ? 5 : 0;
}

/// DEBUG OBJECT's serializedlength of a string value: integer encoding when RDB would use
/// it, else length prefix and bytes (RDB's LZF compression of long strings is not modelled).
uint64_t serialized_length(const Entry* e) {
  if (e->type() != ObjType::string) {
    // Collections: their RDB form is not written yet (RDB support comes later), so report
    // the in-memory size as the closest figure rather than misreading them as strings.
    return e->bytes_used() - MemoryCounter::usable_size(e);
  }
  IntBuffer buf;
  std::string_view s = string_of(e, buf);
  int64_t v = 0;
  if (s.size() <= 11 && parse_i64(s, v)) {
    if (uint64_t n = rdb_int_size(v); n != 0) {
      return n;
    }
  }
  return rdb_length_size(s.size()) + s.size();
}

/// Valkey's shared integers (0..9999) are used unless maxmemory evicts by LRU/LFU.
bool uses_shared_integer(const Engine& engine, const Entry* e) {
  if (e->kind() != Entry::Kind::integer || e->integer() < 0 || e->integer() >= 10000) {
    return false;
  }
  EvictionPolicy p = engine.config().maxmemory_policy;
  bool lru_lfu = p == EvictionPolicy::allkeys_lru || p == EvictionPolicy::allkeys_lfu ||
                 p == EvictionPolicy::volatile_lru || p == EvictionPolicy::volatile_lfu;
  return engine.config().maxmemory == 0 || !lru_lfu;
}

void debug_object(CmdContext& ctx) {
  bool fast = ctx.argc() == 4 && iequals(ctx.arg(3), "fast");
  Entry* e = find_without_expiry(ctx, ctx.arg(2));
  if (e == nullptr) {
    ctx.reply().error(errors::k_no_such_key);
    return;
  }
  Engine& engine = ctx.engine();
  int64_t now = ctx.now_ms();
  char buf[512];
  int n = std::snprintf(buf, sizeof(buf), "Value at:%p refcount:%d encoding:%s",
                        static_cast<const void*>(e), uses_shared_integer(engine, e) ? INT32_MAX : 1,
                        encoding_name(e->encoding()));
  std::string line(buf, static_cast<size_t>(n));
  if (!fast) {
    line += " serializedlength:" + std::to_string(serialized_length(e));
  }
  n = std::snprintf(
      buf, sizeof(buf), " lru:%u lru_seconds_idle:%lld lfu_freq:%u lfu_access_time_minutes:%u",
      e->lru(), static_cast<long long>(lru_idle_ms(e->lru(), now) / 1000),
      static_cast<unsigned>(lfu_counter(e->lru(), now, engine.config().lfu_decay_time)),
      e->lru() >> 8);
  line.append(buf, static_cast<size_t>(n));
  ctx.reply().simple(line);
}

void debug_digest(CmdContext& ctx) {
  Engine& engine = ctx.engine();
  DatasetDigest dataset;
  for (int i = 0; i < engine.db_count(); ++i) {
    // Every stored key counts, expired or not, as Valkey iterates its dictionaries.
    engine.db(i).for_each(
        [&](const Entry* e) { dataset.add(i, value_digest(e, key_digest_seed(e->key()))); });
  }
  ctx.reply().simple(dataset.hex());
}

void debug_digest_value(CmdContext& ctx) {
  ctx.reply().array(ctx.argc() - 2);
  for (size_t i = 2; i < ctx.argc(); ++i) {
    Entry* e = find_without_expiry(ctx, ctx.arg(i));
    ctx.reply().simple(e != nullptr ? value_digest(e, Digest{}).hex() : Digest{}.hex());
  }
}

void debug_populate(CmdContext& ctx) {
  int64_t count = 0;
  if (!parse_i64(ctx.arg(2), count) || count < 0) {
    ctx.reply().error(errors::k_must_be_positive);
    return;
  }
  int64_t size = 0;
  if (ctx.argc() == 5 && (!parse_i64(ctx.arg(4), size) || size < 0)) {
    ctx.reply().error(errors::k_must_be_positive);
    return;
  }
  std::string prefix = ctx.argc() >= 4 ? std::string(ctx.arg(3)) : std::string("key");
  Db& db = ctx.db();
  for (int64_t j = 0; j < count; ++j) {
    // Valkey formats names into a 128-byte buffer, so long prefixes are cut.
    std::string key = (prefix + ":" + std::to_string(j)).substr(0, 127);
    if (db.lookup(key, false) != nullptr) {
      continue;
    }
    std::string value = "value:" + std::to_string(j);
    if (size != 0) {
      value.resize(static_cast<size_t>(size), '\0');
    }
    db.add(key, size == 0 ? make_string_spec(value) : make_raw_string_spec(value));
  }
  ctx.reply().ok();
}

void debug_protocol(CmdContext& ctx) {
  ReplyBuilder& r = ctx.reply();
  std::string_view name = ctx.arg(2);
  if (iequals(name, "string")) {
    r.bulk("Hello World");
  } else if (iequals(name, "integer")) {
    r.integer(12345);
  } else if (iequals(name, "double")) {
    r.double_value(3.141);
  } else if (iequals(name, "bignum")) {
    constexpr std::string_view k_big = "1234567999999999999999999999999999999";
    if (r.resp() >= 3) {
      r.raw("(" + std::string(k_big) + "\r\n");
    } else {
      r.bulk(k_big);
    }
  } else if (iequals(name, "null")) {
    r.null();
  } else if (iequals(name, "array") || iequals(name, "set")) {
    iequals(name, "array") ? r.array(3) : r.set(3);
    for (int j = 0; j < 3; ++j) {
      r.integer(j);
    }
  } else if (iequals(name, "map")) {
    r.map(3);
    for (int j = 0; j < 3; ++j) {
      r.integer(j);
      r.boolean(j == 1);
    }
  } else if (iequals(name, "attrib")) {
    if (r.resp() >= 3) {
      r.raw("|1\r\n");
      r.bulk("key-popularity");
      r.array(2);
      r.bulk("key:123");
      r.integer(90);
    }
    r.bulk("Some real reply following the attribute");
  } else if (iequals(name, "push")) {
    if (r.resp() < 3) {
      r.error(errors::k_resp2_not_supported);
      return;
    }
    r.push(2);
    r.bulk("server-cpu-usage");
    r.integer(42);
    r.bulk("Some real reply following the push reply");
  } else if (iequals(name, "true")) {
    r.boolean(true);
  } else if (iequals(name, "false")) {
    r.boolean(false);
  } else if (iequals(name, "verbatim")) {
    r.verbatim("This is a verbatim\nstring");
  } else {
    r.error(errors::k_debug_protocol_type);
  }
}

void debug_help(CmdContext& ctx) {
  // The subcommands keyshift implements, worded as Valkey's DEBUG HELP.
  reply_help(ctx, {
                      "CHANGE-REPL-ID",
                      "    Change the replication IDs of the instance.",
                      "    Dangerous: should be used only for testing the replication subsystem.",
                      "DIGEST",
                      "    Output a hex signature representing the current DB content.",
                      "DIGEST-VALUE <key> [<key> ...]",
                      "    Output a hex signature of the values of all the specified keys.",
                      "ERROR <string>",
                      "    Return a RESP protocol error with <string> as message. Useful for "
                      "clients",
                      "    unit tests to simulate error replies.",
                      "OBJECT <key> [fast]",
                      "    Show low level info about `key` and associated value.",
                      "    Some fields of the default behavior may be time consuming to fetch,",
                      "    and `fast` can be passed to avoid fetching them.",
                      "POPULATE <count> [<prefix>] [<size>]",
                      "    Create <count> string keys named key:<num>. If <prefix> is specified "
                      "then",
                      "    it is used instead of the 'key' prefix. These are not propagated to",
                      "    replicas. Cluster slots are not respected so keys not belonging to the",
                      "    current node can be created in cluster mode.",
                      "PROTOCOL <type>",
                      "    Reply with a test value of the specified type. <type> can be: string,",
                      "    integer, double, bignum, null, array, set, map, attrib, push, verbatim,",
                      "    true, false.",
                      "SET-ACTIVE-EXPIRE <0|1>",
                      "    Setting it to 0 disables expiring keys in background when they are not",
                      "    accessed (otherwise the behavior). Setting it to 1 reenables back the",
                      "    default.",
                      "SLEEP <seconds>",
                      "    Stop the server for <seconds>. Decimals allowed.",
                  });
}

/// DEBUG RELOAD [MERGE] [NOFLUSH] [NOSAVE]: save, empty the dataset and load the snapshot
/// back, proving the data survives a restart.
void debug_reload(CmdContext& ctx) {
  bool merge = false;
  bool flush = true;
  bool save = true;
  for (size_t j = 2; j < ctx.argc(); ++j) {
    if (iequals(ctx.arg(j), "merge")) {
      merge = true;
    } else if (iequals(ctx.arg(j), "noflush")) {
      flush = false;
    } else if (iequals(ctx.arg(j), "nosave")) {
      save = false;
    } else {
      ctx.reply().error(errors::k_debug_reload_options);
      return;
    }
  }
  Engine& engine = ctx.engine();
  if (save && !engine.snapshots().save(engine)) {
    ctx.reply().error(errors::k_generic_err);
    return;
  }
  if (flush) {
    for (int i = 0; i < engine.db_count(); ++i) {
      engine.signal_flushed_db(i);
      engine.db(i).flush();
    }
  }
  auto file = MappedFile::open(Snapshots::path_of(engine));
  RdbLoadOptions options;
  options.replace_existing = merge;
  auto loaded = file ? load_rdb(engine, file->data(), options)
                     : Expected<RdbLoadStats, RdbError>(Unexpected{RdbError{0, file.error()}});
  if (!loaded) {
    ctx.reply().error(errors::k_debug_reload_failed);
    return;
  }
  engine.snapshots().note_load(loaded->keys_loaded, loaded->expired_skipped);
  ctx.reply().ok();
}

void cmd_debug(CmdContext& ctx) {
  std::string_view sub = ctx.arg(1);
  size_t argc = ctx.argc();
  if (argc == 2 && iequals(sub, "help")) {
    debug_help(ctx);
  } else if (iequals(sub, "object") && (argc == 3 || argc == 4)) {
    debug_object(ctx);
  } else if (iequals(sub, "populate") && argc >= 3 && argc <= 5) {
    debug_populate(ctx);
  } else if (iequals(sub, "digest") && argc == 2) {
    debug_digest(ctx);
  } else if (iequals(sub, "digest-value") && argc >= 2) {
    debug_digest_value(ctx);
  } else if (iequals(sub, "reload")) {
    debug_reload(ctx);
  } else if (iequals(sub, "protocol") && argc == 3) {
    debug_protocol(ctx);
  } else if (iequals(sub, "sleep") && argc == 3) {
    // A real sleep: stalling the server is what DEBUG SLEEP is for.
    double seconds = std::strtod(std::string(ctx.arg(2)).c_str(), nullptr);
    int64_t us = static_cast<int64_t>(seconds * 1000000);
    if (us > 0) {
      std::this_thread::sleep_for(std::chrono::microseconds(us));
    }
    ctx.reply().ok();
  } else if (iequals(sub, "set-active-expire") && argc == 3) {
    ctx.engine().config().active_expire = std::atoi(std::string(ctx.arg(2)).c_str()) != 0;
    ctx.reply().ok();
  } else if (iequals(sub, "error") && argc == 3) {
    // Sent as raw protocol, as Valkey does: not counted in errorstats.
    std::string text(ctx.arg(2));
    std::replace(text.begin(), text.end(), '\n', ' ');
    std::replace(text.begin(), text.end(), '\r', ' ');
    ctx.reply().raw("-" + text + "\r\n");
  } else if (iequals(sub, "change-repl-id") && argc == 2) {
    static constexpr char k_hex[] = "0123456789abcdef";
    std::string id(40, '0');
    for (char& c : id) {
      c = k_hex[ctx.engine().rng()() & 15];
    }
    ctx.engine().identity().replid = std::move(id);
    ctx.reply().ok();
  } else {
    ctx.reply().error(subcommand_syntax_error(ctx));
  }
}

// --- Keyspace-wide and server commands --------------------------------------------------

/// FLUSHDB/FLUSHALL take an optional ASYNC or SYNC; keyshift always frees synchronously.
bool check_flush_args(CmdContext& ctx) {
  if (ctx.argc() == 1 ||
      (ctx.argc() == 2 && (iequals(ctx.arg(1), "sync") || iequals(ctx.arg(1), "async")))) {
    return true;
  }
  ctx.reply().error(errors::k_syntax);
  return false;
}

void cmd_flushdb(CmdContext& ctx) {
  if (!check_flush_args(ctx)) {
    return;
  }
  ctx.engine().signal_flushed_db(ctx.session().db);
  ctx.db().flush();
  ctx.reply().ok();
}

void cmd_flushall(CmdContext& ctx) {
  if (!check_flush_args(ctx)) {
    return;
  }
  for (int i = 0; i < ctx.engine().db_count(); ++i) {
    ctx.engine().signal_flushed_db(i);
    ctx.engine().db(i).flush();
  }
  ctx.reply().ok();
}

void cmd_dbsize(CmdContext& ctx) {
  ctx.reply().integer(static_cast<int64_t>(ctx.db().size()));
}

void cmd_time(CmdContext& ctx) {
  int64_t us = ctx.engine().clock().now_us();
  ctx.reply().array(2);
  ctx.reply().bulk(std::to_string(us / 1000000));
  ctx.reply().bulk(std::to_string(us % 1000000));
}

void cmd_shutdown(CmdContext& ctx) {
  bool nosave = false;
  bool save = false;
  bool now = false;
  bool force = false;
  bool abort = false;
  for (size_t i = 1; i < ctx.argc(); ++i) {
    std::string_view a = ctx.arg(i);
    if (iequals(a, "nosave")) {
      nosave = true;
    } else if (iequals(a, "save")) {
      save = true;
    } else if (iequals(a, "now")) {
      now = true;
    } else if (iequals(a, "force")) {
      force = true;
    } else if (iequals(a, "abort")) {
      abort = true;
    } else {
      ctx.reply().error(errors::k_syntax);
      return;
    }
  }
  if ((abort && (nosave || save || now || force)) || (nosave && save)) {
    ctx.reply().error(errors::k_syntax);
    return;
  }
  if (abort) {
    ctx.reply().error(errors::k_no_shutdown_in_progress);
    return;
  }
  (void)now;  // no replicas to wait for: NOW changes nothing
  if (auto failed = ctx.engine().snapshots().save_for_shutdown(ctx.engine(), save, nosave)) {
    if (!force) {
      ctx.reply().error(errors::k_shutdown_errors);
      return;
    }
  }
  // As Valkey's process exit, a successful SHUTDOWN sends no reply.
  ctx.engine().request_shutdown(ctx.session());
}

void cmd_role(CmdContext& ctx) {
  ctx.reply().array(3);
  ctx.reply().bulk("master");
  ctx.reply().integer(0);
  ctx.reply().array(0);
}

void cmd_lolwut(CmdContext& ctx) {
  if (ctx.argc() >= 3 && iequals(ctx.arg(1), "version")) {
    int64_t v = 0;
    if (!parse_int_arg(ctx, ctx.arg(2), v)) {
      return;
    }
  }
  // Valkey 8's own LOLWUT prints the version; the art of VERSION 5/6 is not reproduced.
  ctx.reply().verbatim("Redis ver. 8.0.1\n");
}

// --- LATENCY ----------------------------------------------------------------------------

/// The latency-monitor-threshold setting in milliseconds.
int64_t latency_threshold(const Engine& engine) {
  const DirectiveSpec* spec = find_directive("latency-monitor-threshold");
  int64_t v = 0;
  return spec != nullptr && parse_i64(directive_value(*spec, engine.config()), v) ? v : 0;
}

void cmd_latency_doctor(CmdContext& ctx) {
  // keyshift records no latency events, so the report is one of Valkey's two empty ones.
  if (latency_threshold(ctx.engine()) == 0) {
    ctx.reply().verbatim(
        "I'm sorry, Dave, I can't do that. Latency monitoring is disabled in this Valkey "
        "instance. You may use \"CONFIG SET latency-monitor-threshold <milliseconds>.\" in "
        "order to enable it.\n");
  } else {
    ctx.reply().verbatim(
        "No latency spike was observed during the lifetime of this Valkey instance, not in the "
        "slightest bit.\n");
  }
}

void cmd_latency_graph(CmdContext& ctx) {
  ctx.reply().error(std::string(errors::k_no_latency_samples_prefix) + std::string(ctx.arg(2)) +
                    "'");
}

void cmd_latency_history(CmdContext& ctx) {
  ctx.reply().array(0);
}
void cmd_latency_latest(CmdContext& ctx) {
  ctx.reply().array(0);
}
void cmd_latency_reset(CmdContext& ctx) {
  ctx.reply().integer(0);
}
void cmd_latency_histogram(CmdContext& ctx) {
  ctx.reply().map(0);
}

void cmd_latency_help(CmdContext& ctx) {
  reply_help(ctx, {
                      "DOCTOR",
                      "    Return a human readable latency analysis report.",
                      "GRAPH <event>",
                      "    Return an ASCII latency graph for the <event> class.",
                      "HISTORY <event>",
                      "    Return time-latency samples for the <event> class.",
                      "LATEST",
                      "    Return the latest latency samples for all events.",
                      "RESET [<event> ...]",
                      "    Reset latency data of one or more <event> classes.",
                      "    (default: reset all data for all event classes)",
                      "HISTOGRAM [COMMAND ...]",
                      "    Return a cumulative distribution of latencies in the format of a "
                      "histogram for the specified command names.",
                      "    If no commands are specified then all histograms are replied.",
                  });
}

// --- SLOWLOG ----------------------------------------------------------------------------

void cmd_slowlog_get(CmdContext& ctx) {
  if (ctx.argc() > 3) {
    ctx.reply().error(subcommand_syntax_error(ctx));
    return;
  }
  const auto& log = ctx.engine().slowlog();
  int64_t count = 10;
  if (ctx.argc() == 3) {
    if (!parse_i64(ctx.arg(2), count) || count < -1) {
      ctx.reply().error(errors::k_slowlog_count);
      return;
    }
    if (count == -1) {
      count = static_cast<int64_t>(log.size());
    }
  }
  size_t n = std::min(static_cast<size_t>(count), log.size());
  ReplyBuilder& r = ctx.reply();
  r.array(n);
  for (size_t i = 0; i < n; ++i) {
    const SlowLogEntry& e = log[i];
    r.array(6);
    r.integer(static_cast<int64_t>(e.id));
    r.integer(e.time_sec);
    r.integer(e.duration_us);
    r.array(e.argv.size());
    for (const std::string& a : e.argv) {
      r.bulk(a);
    }
    r.bulk(e.peer);
    r.bulk(e.client_name);
  }
}

void cmd_slowlog_len(CmdContext& ctx) {
  ctx.reply().integer(static_cast<int64_t>(ctx.engine().slowlog().size()));
}

void cmd_slowlog_reset(CmdContext& ctx) {
  ctx.engine().slowlog_reset();
  ctx.reply().ok();
}

void cmd_slowlog_help(CmdContext& ctx) {
  reply_help(ctx, {
                      "GET [<count>]",
                      "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
                      "    Entries are made of:",
                      "    id, timestamp, time in microseconds, arguments array, client IP and "
                      "port,",
                      "    client name",
                      "LEN",
                      "    Return the length of the slowlog.",
                      "RESET",
                      "    Reset the slowlog.",
                  });
}

// --- Registration -----------------------------------------------------------------------

// Rows as Valkey 8.0.1's commands.def has them (tests check every row against the generated
// table). Containers have no handler.
constexpr uint32_t k_ls = k_cmd_loading | k_cmd_stale;
constexpr uint32_t k_admin = k_cmd_admin | k_cmd_noscript | k_ls;
constexpr std::string_view k_admin_acl = "@admin @slow @dangerous";
constexpr std::string_view k_conn_acl = "@slow @connection";

constexpr CommandSpec k_server_commands[] = {
    {"info", -1, k_ls, 0, 0, 0, cmd_info, "@slow @dangerous"},
    {"config", -2, 0, 0, 0, 0, nullptr, "@slow"},
    {"config|get", -3, k_admin, 0, 0, 0, cmd_config_get, k_admin_acl},
    {"config|set", -4, k_admin, 0, 0, 0, cmd_config_set, k_admin_acl},
    {"config|resetstat", 2, k_admin, 0, 0, 0, cmd_config_resetstat, k_admin_acl},
    {"config|rewrite", 2, k_admin, 0, 0, 0, cmd_config_rewrite, k_admin_acl},
    {"config|help", 2, k_ls, 0, 0, 0, cmd_config_help, "@slow"},
    {"command", -1, k_ls, 0, 0, 0, cmd_command, k_conn_acl},
    {"command|count", 2, k_ls, 0, 0, 0, cmd_command_count, k_conn_acl},
    {"command|docs", -2, k_ls, 0, 0, 0, cmd_command_docs, k_conn_acl},
    {"command|getkeys", -3, k_ls, 0, 0, 0, cmd_command_getkeys, k_conn_acl},
    {"command|getkeysandflags", -3, k_ls, 0, 0, 0, cmd_command_getkeysandflags, k_conn_acl},
    {"command|help", 2, k_ls, 0, 0, 0, cmd_command_help, k_conn_acl},
    {"command|info", -2, k_ls, 0, 0, 0, cmd_command_info, k_conn_acl},
    {"command|list", -2, k_ls, 0, 0, 0, cmd_command_list, k_conn_acl},
    {"client", -2, 0, 0, 0, 0, nullptr, "@slow"},
    {"client|capa", -3, k_cmd_noscript | k_ls, 0, 0, 0, cmd_client_capa, k_conn_acl},
    {"client|getname", 2, k_cmd_noscript | k_ls, 0, 0, 0, cmd_client_getname, k_conn_acl},
    {"client|getredir", 2, k_cmd_noscript | k_ls, 0, 0, 0, cmd_client_getredir, k_conn_acl},
    {"client|help", 2, k_ls, 0, 0, 0, cmd_client_help, k_conn_acl},
    {"client|id", 2, k_cmd_noscript | k_ls, 0, 0, 0, cmd_client_id, k_conn_acl},
    {"client|info", 2, k_cmd_noscript | k_ls, 0, 0, 0, cmd_client_info, k_conn_acl},
    {"client|kill", -3, k_admin, 0, 0, 0, cmd_client_kill, "@admin @slow @dangerous @connection"},
    {"client|list", -2, k_admin, 0, 0, 0, cmd_client_list, "@admin @slow @dangerous @connection"},
    {"client|no-evict", 3, k_admin, 0, 0, 0, cmd_client_no_evict,
     "@admin @slow @dangerous @connection"},
    {"client|no-touch", 3, k_cmd_noscript | k_ls, 0, 0, 0, cmd_client_no_touch, k_conn_acl},
    {"client|reply", 3, k_cmd_noscript | k_ls, 0, 0, 0, cmd_client_reply, k_conn_acl},
    {"client|setinfo", 4, k_cmd_noscript | k_ls, 0, 0, 0, cmd_client_setinfo, k_conn_acl},
    {"client|setname", 3, k_cmd_noscript | k_ls, 0, 0, 0, cmd_client_setname, k_conn_acl},
    {"client|trackinginfo", 2, k_cmd_noscript | k_ls, 0, 0, 0, cmd_client_trackinginfo, k_conn_acl},
    {"client|unblock", -3, k_admin, 0, 0, 0, cmd_client_unblock,
     "@admin @slow @dangerous @connection"},
    {"monitor", 1, k_admin, 0, 0, 0, cmd_monitor, k_admin_acl},
    {"memory", -2, 0, 0, 0, 0, nullptr, "@slow"},
    {"memory|doctor", 2, 0, 0, 0, 0, cmd_memory_doctor, "@slow"},
    {"memory|help", 2, k_ls, 0, 0, 0, cmd_memory_help, "@slow"},
    {"memory|malloc-stats", 2, 0, 0, 0, 0, cmd_memory_malloc_stats, "@slow"},
    {"memory|purge", 2, 0, 0, 0, 0, cmd_memory_purge, "@slow"},
    {"memory|stats", 2, 0, 0, 0, 0, cmd_memory_stats, "@slow"},
    {"memory|usage", -3, k_cmd_readonly, 2, 2, 1, cmd_memory_usage, "@read @slow"},
    {"debug", -2, k_admin | k_cmd_protected, 0, 0, 0, cmd_debug, k_admin_acl},
    {"flushdb", -1, k_cmd_write, 0, 0, 0, cmd_flushdb, "@keyspace @write @slow @dangerous"},
    {"flushall", -1, k_cmd_write, 0, 0, 0, cmd_flushall, "@keyspace @write @slow @dangerous"},
    {"dbsize", 1, k_cmd_readonly | k_cmd_fast, 0, 0, 0, cmd_dbsize, "@keyspace @read @fast"},
    {"time", 1, k_ls | k_cmd_fast, 0, 0, 0, cmd_time, "@fast"},
    {"shutdown", -1, k_admin | k_cmd_no_multi | k_cmd_allow_busy, 0, 0, 0, cmd_shutdown,
     k_admin_acl},
    {"latency", -2, 0, 0, 0, 0, nullptr, "@slow"},
    {"latency|doctor", 2, k_admin, 0, 0, 0, cmd_latency_doctor, k_admin_acl},
    {"latency|graph", 3, k_admin, 0, 0, 0, cmd_latency_graph, k_admin_acl},
    {"latency|help", 2, k_ls, 0, 0, 0, cmd_latency_help, "@slow"},
    {"latency|histogram", -2, k_admin, 0, 0, 0, cmd_latency_histogram, k_admin_acl},
    {"latency|history", 3, k_admin, 0, 0, 0, cmd_latency_history, k_admin_acl},
    {"latency|latest", 2, k_admin, 0, 0, 0, cmd_latency_latest, k_admin_acl},
    {"latency|reset", -2, k_admin, 0, 0, 0, cmd_latency_reset, k_admin_acl},
    {"slowlog", -2, 0, 0, 0, 0, nullptr, "@slow"},
    {"slowlog|get", -2, k_cmd_admin | k_ls, 0, 0, 0, cmd_slowlog_get, k_admin_acl},
    {"slowlog|help", 2, k_ls, 0, 0, 0, cmd_slowlog_help, "@slow"},
    {"slowlog|len", 2, k_cmd_admin | k_ls, 0, 0, 0, cmd_slowlog_len, k_admin_acl},
    {"slowlog|reset", 2, k_cmd_admin | k_ls, 0, 0, 0, cmd_slowlog_reset, k_admin_acl},
    {"role", 1, k_cmd_noscript | k_ls | k_cmd_fast, 0, 0, 0, cmd_role, "@admin @fast @dangerous"},
    {"lolwut", -1, k_cmd_readonly | k_cmd_fast, 0, 0, 0, cmd_lolwut, "@read @fast"},
};

}  // namespace

void register_server_family(CommandRegistry& registry) {
  registry.add(k_server_commands);
}

}  // namespace keyshift::engine
