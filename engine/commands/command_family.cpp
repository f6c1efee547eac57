// COMMAND and its subcommands: the command table as clients and tools see it (COUNT, INFO,
// DOCS, LIST, GETKEYS, GETKEYSANDFLAGS).
#include "engine/commands/command_docs.hpp"
#include "engine/commands/command_keys.hpp"
#include "engine/commands/context.hpp"
#include "engine/commands/families.hpp"
#include "engine/util/glob.hpp"
#include "engine/util/strconv.hpp"
#include "engine/util/strings.hpp"

#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace keyshift::engine {
namespace {

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

/// The group as COMMAND DOCS names it: the command files say "sorted_set", the server's
/// group table (COMMAND_GROUP_STR) answers "sorted-set".
std::string_view reply_group(std::string_view group) {
  return group == "sorted_set" ? std::string_view("sorted-set") : group;
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
    r.bulk(reply_group(doc->group));
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
  const auto& all = ctx.engine().registry().live_commands();
  ctx.reply().array(all.size());
  for (const Command* c : all) {
    reply_command_info(ctx.reply(), c);
  }
}

void cmd_command_count(CmdContext& ctx) {
  ctx.reply().integer(static_cast<int64_t>(ctx.engine().registry().live_commands().size()));
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
    const auto& all = ctx.engine().registry().live_commands();
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
  for (const Command* c : ctx.engine().registry().live_commands()) {
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

/// MIGRATE's keys when its incomplete KEYS spec matched (Valkey's migrateGetKeys, which
/// getKeysFromCommandWithSpecs falls back on): what follows KEYS, options before it skipped
/// with their arguments; none when the key argument is not empty.
std::vector<KeyRef> migrate_keys(std::span<const std::string_view> argv) {
  constexpr uint32_t k_flags = k_key_rw | k_key_access | k_key_delete_;
  for (size_t i = 6; i < argv.size(); ++i) {
    if (iequals(argv[i], "keys")) {
      std::vector<KeyRef> keys;
      for (size_t j = i + 1; argv[3].empty() && j < argv.size(); ++j) {
        keys.push_back({j, k_flags});
      }
      return keys;
    }
    i += iequals(argv[i], "auth") ? 1 : iequals(argv[i], "auth2") ? 2 : 0;
  }
  return {{3, k_flags}};
}

/// The keys of `argv` for command `c`, as COMMAND GETKEYS finds them; nullopt when none
/// can be found.
std::optional<std::vector<KeyRef>> keys_of(const Command& cmd, const CommandDoc* doc,
                                           std::span<const std::string_view> argv) {
  const Command* c = &cmd;
  int argc = static_cast<int>(argv.size());
  std::optional<std::vector<KeyRef>> keys;
  if (doc != nullptr) {
    keys = variable_flag_keys(*c, argv);
    if (!keys) {
      keys = keys_from_specs(*doc, *c, argv);
    }
    if (!keys && c->full_name == "migrate") {
      keys = migrate_keys(argv);
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
  return keys;
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
  std::optional<std::vector<KeyRef>> keys = keys_of(*c, doc, argv);
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

// --- Registration -----------------------------------------------------------------------

// Rows as Valkey 8.0.1's commands.def has them (tests check every row against the generated
// table). Containers have no handler.
constexpr uint32_t k_ls = k_cmd_loading | k_cmd_stale;
constexpr uint32_t k_admin = k_cmd_admin | k_cmd_noscript | k_ls;
constexpr std::string_view k_admin_acl = "@admin @slow @dangerous";
constexpr std::string_view k_conn_acl = "@slow @connection";

constexpr CommandSpec k_command_commands[] = {
    {"command", -1, k_ls, 0, 0, 0, cmd_command, k_conn_acl},
    {"command|count", 2, k_ls, 0, 0, 0, cmd_command_count, k_conn_acl},
    {"command|docs", -2, k_ls, 0, 0, 0, cmd_command_docs, k_conn_acl},
    {"command|getkeys", -3, k_ls, 0, 0, 0, cmd_command_getkeys, k_conn_acl},
    {"command|getkeysandflags", -3, k_ls, 0, 0, 0, cmd_command_getkeysandflags, k_conn_acl},
    {"command|help", 2, k_ls, 0, 0, 0, cmd_command_help, k_conn_acl},
    {"command|info", -2, k_ls, 0, 0, 0, cmd_command_info, k_conn_acl},
    {"command|list", -2, k_ls, 0, 0, 0, cmd_command_list, k_conn_acl},
};

}  // namespace

void register_command_family(CommandRegistry& registry) {
  registry.add(k_command_commands);
}

CommandKeys command_key_positions(const CommandRegistry& registry,
                                  std::span<const std::string_view> argv) {
  CommandKeys out;
  if (argv.empty()) {
    return out;
  }
  const Command* c = registry.find(argv[0]);
  if (c != nullptr && argv.size() > 1 && !c->subcommands.empty()) {
    c = registry.find_sub(*c, argv[1]);
  }
  if (c == nullptr) {
    return out;
  }
  out.known = true;
  out.movable = (c->spec.flags & k_cmd_movablekeys) != 0;
  auto keys = keys_of(*c, doc_of(*c), argv);
  if (keys) {
    for (const KeyRef& k : *keys) {
      out.positions.push_back(k.pos);
      out.flags.push_back(k.flags);
    }
  } else {
    out.found =
        (c->spec.first_key == 0 && !out.movable) || (c->spec.flags & k_cmd_no_mandatory_keys) != 0;
    return out;
  }
  out.found = true;
  return out;
}

uint32_t command_acl_categories(const Command& c) {
  return acl_bits(c);
}

}  // namespace keyshift::engine
