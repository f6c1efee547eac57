#include "engine/acl/acl.hpp"

#include "engine/commands/command_docs.hpp"
#include "engine/commands/command_keys.hpp"
#include "engine/util/glob.hpp"
#include "engine/util/split_args.hpp"
#include "engine/util/strings.hpp"

#include <fmt/format.h>

#include <openssl/evp.h>

#include <algorithm>
#include <cctype>

namespace keyshift::engine::acl {
namespace {

constexpr size_t k_hash_len = 64;
constexpr int64_t k_log_grouping_ms = 60000;

bool has_spaces(std::string_view s) {
  for (char c : s) {
    if (std::isspace(static_cast<unsigned char>(c)) != 0 || c == '\0') {
      return true;
    }
  }
  return false;
}

bool valid_hash(std::string_view h) {
  if (h.size() != k_hash_len) {
    return false;
  }
  return std::all_of(h.begin(), h.end(),
                     [](char c) { return (c >= 'a' && c <= 'f') || (c >= '0' && c <= '9'); });
}

// The key-spec flags of one key as the read/write permission it needs.
uint8_t needed_permission(uint32_t keyspec_flags) {
  uint8_t need = 0;
  if ((keyspec_flags & k_key_access) != 0) {
    need |= k_perm_read;
  }
  if ((keyspec_flags & (k_key_insert | k_key_delete_ | k_key_update)) != 0) {
    need |= k_perm_write;
  }
  return need;
}

bool key_allowed(const Selector& s, std::string_view key, uint32_t keyspec_flags) {
  if (s.all_keys) {
    return true;
  }
  uint8_t need = needed_permission(keyspec_flags);
  for (const KeyPattern& p : s.patterns) {
    if ((p.flags & need) == need && glob_match(p.pattern, key)) {
      return true;
    }
  }
  return false;
}

/// True when `cmd`'s keys are its table's first/last/step range and every pattern of `s`
/// grants both read and write: then key positions need no key-spec lookup.
bool simple_keys(const Selector& s, const Command& cmd) {
  if ((cmd.spec.flags & k_cmd_movablekeys) != 0) {
    return false;
  }
  for (const KeyPattern& p : s.patterns) {
    if (p.flags != k_perm_all) {
      return false;
    }
  }
  return true;
}

bool channel_in_list(const std::vector<std::string>& list, std::string_view channel,
                     bool is_pattern) {
  for (const std::string& p : list) {
    if (is_pattern ? p == channel : glob_match(p, channel)) {
      return true;
    }
  }
  return false;
}

// Channel flags of the pub/sub commands (Valkey's getChannelsFromCommand table).
enum ChannelUse : uint8_t { k_ch_none, k_ch_publish_first, k_ch_subscribe_all, k_ch_pattern_all };

ChannelUse channel_use(const Command& cmd) {
  std::string_view n = cmd.full_name;
  if (n == "publish" || n == "spublish") {
    return k_ch_publish_first;
  }
  if (n == "subscribe" || n == "ssubscribe") {
    return k_ch_subscribe_all;
  }
  if (n == "psubscribe") {
    return k_ch_pattern_all;
  }
  return k_ch_none;
}

std::string pattern_string(const KeyPattern& p) {
  std::string_view prefix = p.flags == k_perm_all ? "~" : p.flags == k_perm_read ? "%R~" : "%W~";
  return std::string(prefix) + p.pattern;
}

// ACLSelectorRemoveCommandRule: drops earlier rules naming the same command (or its
// subcommands when the whole command is named). A first argument may hold spaces (Valkey
// does not refuse them), so a word here can be empty or lack its +/-: it is no rule then.
void remove_command_rule(std::string& rules, std::string_view rule) {
  std::vector<std::string> kept;
  size_t pos = 0;
  while (pos < rules.size()) {
    size_t end = rules.find(' ', pos);
    if (end == std::string::npos) {
      end = rules.size();
    }
    std::string_view existing = std::string_view(rules).substr(pos, end - pos);
    pos = end + 1;
    if (existing.empty()) {
      continue;
    }
    std::string_view body = existing.substr(1);
    bool same = body == rule ||
                (body.size() > rule.size() && body.starts_with(rule) && body[rule.size()] == '|');
    if (!same) {
      kept.emplace_back(existing);
    }
  }
  rules.clear();
  for (const std::string& k : kept) {
    if (!rules.empty()) {
      rules += ' ';
    }
    rules += k;
  }
}

void update_command_rules(Selector& s, std::string_view rule, bool allow) {
  std::string lower = to_lower(rule);
  remove_command_rule(s.command_rules, lower);
  if (!s.command_rules.empty()) {
    s.command_rules += ' ';
  }
  s.command_rules += allow ? '+' : '-';
  s.command_rules += lower;
}

void set_bit(Selector& s, uint32_t id, bool value) {
  if (id >= s.allowed.size()) {
    return;
  }
  s.allowed[id] = value;
  if (!value) {
    s.all_commands = false;
  }
}

}  // namespace

std::string_view rule_error_text(RuleError error) {
  switch (error) {
    case RuleError::unknown_command:
      return "Unknown command or category name in ACL";
    case RuleError::syntax:
      return "Syntax error";
    case RuleError::keys_after_all:
      return "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and "
             "does not have any effect. Try 'resetkeys' to start with an empty list of patterns";
    case RuleError::channels_after_all:
      return "Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid "
             "and does not have any effect. Try 'resetchannels' to start with an empty list of "
             "channels";
    case RuleError::no_such_password:
      return "The password you are trying to remove from the user does not exist";
    case RuleError::bad_hash:
      return "The password hash must be exactly 64 characters and contain only lowercase "
             "hexadecimal characters";
    case RuleError::duplicate_user:
      return "Duplicate user found. A user can only be defined once in config files";
    case RuleError::subcommand_first_arg:
      return "Allowing first-arg of a subcommand is not supported";
    case RuleError::none:
      break;
  }
  return "Wrong format";
}

std::string hash_password(std::string_view password) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(password.data(), password.size(), digest, &len, EVP_sha256(), nullptr);
  static constexpr char k_hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(static_cast<size_t>(len) * 2);
  for (unsigned int i = 0; i < len; ++i) {
    out += k_hex[digest[i] >> 4];
    out += k_hex[digest[i] & 0xf];
  }
  return out;
}

std::optional<std::vector<std::string>> merge_selector_arguments(std::span<const std::string> args,
                                                                 size_t* invalid) {
  std::vector<std::string> out;
  std::optional<size_t> open;
  std::string selector;
  for (size_t j = 0; j < args.size(); ++j) {
    const std::string& op = args[j];
    if (!open && !op.empty() && op.front() == '(' && op.back() != ')') {
      selector = op;
      open = j;
      continue;
    }
    if (open) {
      selector += ' ';
      selector += op;
      if (!op.empty() && op.back() == ')') {
        open.reset();
        out.push_back(std::move(selector));
        selector.clear();
      }
      continue;
    }
    out.push_back(op);
  }
  if (open) {
    if (invalid != nullptr) {
      *invalid = *open;
    }
    return std::nullopt;
  }
  return out;
}

Users::Users(const CommandRegistry& registry) : m_registry(registry) {
  for (const Command* top : registry.commands()) {
    auto note = [&](const Command& c) {
      if (m_categories.size() <= c.id) {
        m_categories.resize(c.id + 1, 0);
      }
      m_categories[c.id] = command_acl_categories(c);
    };
    note(*top);
    for (const Command* sub : top->subcommands) {
      note(*sub);
    }
  }
  auto user = std::make_unique<User>(make_user("default"));
  for (std::string_view rule : {"+@all", "~*", "&*", "on", "nopass"}) {
    apply_rule(*user, rule);
  }
  m_default = user.get();
  m_users.emplace("default", std::move(user));
}

Users::~Users() = default;

User* Users::find(std::string_view name) const {
  auto it = m_users.find(name);
  return it == m_users.end() ? nullptr : it->second.get();
}

Selector Users::make_selector(bool root) const {
  Selector s;
  s.root = root;
  s.all_channels = m_pubsub_all;
  s.allowed.assign(m_categories.size(), false);
  return s;
}

User Users::make_user(std::string_view name) const {
  User u;
  u.name = std::string(name);
  u.selectors.push_back(make_selector(true));
  return u;
}

const Command* Users::lookup(std::string_view name) const {
  size_t bar = name.find('|');
  if (bar == std::string_view::npos) {
    return m_registry.find_original(name);
  }
  std::string_view rest = name.substr(bar + 1);
  if (rest.find('|') != std::string_view::npos) {
    return nullptr;
  }
  const Command* top = m_registry.find_original(name.substr(0, bar));
  if (top == nullptr) {
    return nullptr;
  }
  return m_registry.find_sub(*top, rest);
}

void Users::change_perm(Selector& s, const Command& cmd, bool allow) const {
  set_bit(s, cmd.id, allow);
  s.first_args.erase(cmd.id);
  for (const Command* sub : cmd.subcommands) {
    set_bit(s, sub->id, allow);
  }
}

void Users::set_category(Selector& s, uint32_t category, bool allow) const {
  for (const Command* top : m_registry.commands()) {
    if ((m_categories[top->id] & category) != 0) {
      change_perm(s, *top, allow);
    }
    for (const Command* sub : top->subcommands) {
      if ((m_categories[sub->id] & category) != 0) {
        change_perm(s, *sub, allow);
      }
    }
  }
}

RuleError Users::apply_selector_rule(Selector& s, std::string_view op) const {
  if (iequals(op, "allkeys") || op == "~*") {
    s.all_keys = true;
    s.patterns.clear();
  } else if (iequals(op, "resetkeys")) {
    s.all_keys = false;
    s.patterns.clear();
  } else if (iequals(op, "allchannels") || op == "&*") {
    s.all_channels = true;
    s.channels.clear();
  } else if (iequals(op, "resetchannels")) {
    s.all_channels = false;
    s.channels.clear();
  } else if (iequals(op, "allcommands") || iequals(op, "+@all")) {
    s.allowed.assign(s.allowed.size(), true);
    s.all_commands = true;
    s.future_commands = true;
    s.command_rules.clear();
    s.first_args.clear();
  } else if (iequals(op, "nocommands") || iequals(op, "-@all")) {
    s.allowed.assign(s.allowed.size(), false);
    s.all_commands = false;
    s.future_commands = false;
    s.command_rules.clear();
    s.first_args.clear();
  } else if (op[0] == '~' || op[0] == '%') {
    if (s.all_keys) {
      return RuleError::keys_after_all;
    }
    uint8_t flags = 0;
    size_t offset = 1;
    if (op[0] == '%') {
      bool closed = false;
      for (; offset < op.size(); ++offset) {
        char c = static_cast<char>(std::toupper(static_cast<unsigned char>(op[offset])));
        if (c == 'R' && (flags & k_perm_read) == 0) {
          flags |= k_perm_read;
        } else if (c == 'W' && (flags & k_perm_write) == 0) {
          flags |= k_perm_write;
        } else if (op[offset] == '~' && flags != 0) {
          ++offset;
          closed = true;
          break;
        } else {
          return RuleError::syntax;
        }
      }
      (void)closed;
    } else {
      flags = k_perm_all;
    }
    std::string_view pattern = op.substr(std::min(offset, op.size()));
    if (has_spaces(pattern)) {
      return RuleError::syntax;
    }
    auto it = std::find_if(s.patterns.begin(), s.patterns.end(),
                           [&](const KeyPattern& p) { return p.pattern == pattern; });
    if (it == s.patterns.end()) {
      s.patterns.push_back({std::string(pattern), flags});
    } else {
      it->flags |= flags;
    }
    s.all_keys = false;
  } else if (op[0] == '&') {
    if (s.all_channels) {
      return RuleError::channels_after_all;
    }
    std::string_view pattern = op.substr(1);
    if (has_spaces(pattern)) {
      return RuleError::syntax;
    }
    if (std::find(s.channels.begin(), s.channels.end(), pattern) == s.channels.end()) {
      s.channels.emplace_back(pattern);
    }
    s.all_channels = false;
  } else if (op[0] == '+' && (op.size() < 2 || op[1] != '@')) {
    std::string_view name = op.substr(1);
    size_t bar = name.rfind('|');
    if (bar == std::string_view::npos) {
      const Command* cmd = lookup(name);
      if (cmd == nullptr) {
        return RuleError::unknown_command;
      }
      change_perm(s, *cmd, true);
      update_command_rules(s, cmd->full_name, true);
    } else {
      std::string_view base = name.substr(0, bar);
      std::string_view sub = name.substr(bar + 1);
      const Command* cmd = lookup(base);
      if (cmd == nullptr) {
        return RuleError::unknown_command;
      }
      if (cmd->parent != nullptr) {
        return RuleError::subcommand_first_arg;
      }
      if (sub.empty()) {
        return RuleError::syntax;
      }
      if (!cmd->subcommands.empty() || cmd->is_container()) {
        const Command* subcmd = lookup(name);
        if (subcmd == nullptr) {
          return RuleError::unknown_command;
        }
        change_perm(s, *subcmd, true);
      } else {
        std::vector<std::string>& args = s.first_args[cmd->id];
        bool present = std::any_of(args.begin(), args.end(),
                                   [&](const std::string& a) { return iequals(a, sub); });
        if (!present) {
          args.emplace_back(sub);
        }
      }
      update_command_rules(s, name, true);
    }
  } else if (op[0] == '-' && (op.size() < 2 || op[1] != '@')) {
    const Command* cmd = lookup(op.substr(1));
    if (cmd == nullptr) {
      return RuleError::unknown_command;
    }
    change_perm(s, *cmd, false);
    update_command_rules(s, cmd->full_name, false);
  } else if ((op[0] == '+' || op[0] == '-') && op.size() >= 2 && op[1] == '@') {
    uint32_t category = acl_category_by_name(op.substr(2));
    if (category == 0) {
      return RuleError::unknown_command;
    }
    update_command_rules(s, op.substr(1), op[0] == '+');
    set_category(s, category, op[0] == '+');
  } else {
    return RuleError::syntax;
  }
  return RuleError::none;
}

RuleError Users::apply_rule(User& u, std::string_view op) const {
  if (op.empty()) {
    return RuleError::none;
  }
  if (iequals(op, "on")) {
    u.enabled = true;
  } else if (iequals(op, "off")) {
    u.enabled = false;
  } else if (iequals(op, "skip-sanitize-payload")) {
    u.skip_sanitize_payload = true;
  } else if (iequals(op, "sanitize-payload")) {
    u.skip_sanitize_payload = false;
  } else if (iequals(op, "nopass")) {
    u.nopass = true;
    u.passwords.clear();
  } else if (iequals(op, "resetpass")) {
    u.nopass = false;
    u.passwords.clear();
  } else if (op[0] == '>' || op[0] == '#') {
    std::string hash;
    if (op[0] == '>') {
      hash = hash_password(op.substr(1));
    } else {
      if (!valid_hash(op.substr(1))) {
        return RuleError::bad_hash;
      }
      hash = std::string(op.substr(1));
    }
    if (std::find(u.passwords.begin(), u.passwords.end(), hash) == u.passwords.end()) {
      u.passwords.push_back(std::move(hash));
    }
    u.nopass = false;
  } else if (op[0] == '<' || op[0] == '!') {
    std::string hash;
    if (op[0] == '<') {
      hash = hash_password(op.substr(1));
    } else {
      if (!valid_hash(op.substr(1))) {
        return RuleError::bad_hash;
      }
      hash = std::string(op.substr(1));
    }
    auto it = std::find(u.passwords.begin(), u.passwords.end(), hash);
    if (it == u.passwords.end()) {
      return RuleError::no_such_password;
    }
    u.passwords.erase(it);
  } else if (op[0] == '(' && op.back() == ')') {
    Selector s = make_selector(false);
    std::vector<std::string> words;
    if (!split_args(op.substr(1, op.size() - 2), words)) {
      words.clear();
    }
    for (const std::string& w : words) {
      if (RuleError e = apply_selector_rule(s, w); e != RuleError::none) {
        return e;
      }
    }
    u.selectors.push_back(std::move(s));
  } else if (iequals(op, "clearselectors")) {
    u.selectors.resize(1);
  } else if (iequals(op, "reset")) {
    for (std::string_view r : {"resetpass", "resetkeys", "resetchannels"}) {
      apply_rule(u, r);
    }
    if (m_pubsub_all) {
      apply_rule(u, "allchannels");
    }
    for (std::string_view r : {"off", "sanitize-payload", "clearselectors", "-@all"}) {
      apply_rule(u, r);
    }
  } else {
    return apply_selector_rule(u.selectors[0], op);
  }
  return RuleError::none;
}

std::optional<std::string> Users::set_user(std::string_view name,
                                           std::span<const std::string> rules) {
  size_t invalid = 0;
  auto merged = merge_selector_arguments(rules, &invalid);
  if (!merged) {
    return fmt::format("Unmatched parenthesis in acl selector starting at '{}'.",
                       c_string(rules[invalid]));
  }
  User* existing = find(name);
  User temp = existing != nullptr ? *existing : make_user(name);
  for (const std::string& op : *merged) {
    if (RuleError e = apply_rule(temp, op); e != RuleError::none) {
      return fmt::format("Error in ACL SETUSER modifier '{}': {}", c_string(op),
                         rule_error_text(e));
    }
  }
  if (existing != nullptr) {
    *existing = std::move(temp);
  } else {
    m_users.emplace(std::string(name), std::make_unique<User>(std::move(temp)));
  }
  return std::nullopt;
}

bool Users::remove(std::string_view name) {
  auto it = m_users.find(name);
  if (it == m_users.end() || it->second.get() == m_default) {
    return false;
  }
  m_users.erase(it);
  return true;
}

void Users::replace_all(std::map<std::string, std::unique_ptr<User>, std::less<>> users) {
  auto it = users.find("default");
  User fresh = it != users.end() ? *it->second : User{};
  if (it == users.end()) {
    fresh = make_user("default");
    for (std::string_view rule : {"+@all", "~*", "&*", "on", "nopass"}) {
      apply_rule(fresh, rule);
    }
  } else {
    users.erase(it);
  }
  auto keep = std::move(m_users.find("default")->second);
  *keep = std::move(fresh);
  m_users = std::move(users);
  m_default = keep.get();
  m_users.emplace("default", std::move(keep));
}

void Users::set_default_password(std::string_view password) {
  apply_rule(*m_default, "resetpass");
  if (password.empty()) {
    apply_rule(*m_default, "nopass");
  } else {
    apply_rule(*m_default, ">" + std::string(password));
  }
}

std::vector<std::string_view> Users::flag_names(const User& u) {
  std::vector<std::string_view> out;
  out.push_back(u.enabled ? "on" : "off");
  if (u.nopass) {
    out.push_back("nopass");
  }
  out.push_back(u.skip_sanitize_payload ? "skip-sanitize-payload" : "sanitize-payload");
  return out;
}

std::string Users::describe_commands(const Selector& s) const {
  std::string out = s.future_commands ? "+@all" : "-@all";
  if (!s.command_rules.empty()) {
    out += ' ';
    out += s.command_rules;
  }
  return out;
}

std::string Users::describe_keys(const Selector& s) {
  if (s.all_keys) {
    return "~*";
  }
  std::string out;
  for (const KeyPattern& p : s.patterns) {
    if (!out.empty()) {
      out += ' ';
    }
    out += pattern_string(p);
  }
  return out;
}

std::string Users::describe_channels(const Selector& s) {
  if (s.all_channels) {
    return "&*";
  }
  std::string out;
  for (const std::string& c : s.channels) {
    if (!out.empty()) {
      out += ' ';
    }
    out += '&';
    out += c;
  }
  return out;
}

std::string Users::describe(const User& u) const {
  std::string out;
  for (std::string_view f : flag_names(u)) {
    out += f;
    out += ' ';
  }
  for (const std::string& p : u.passwords) {
    out += '#';
    out += p;
    out += ' ';
  }
  for (const Selector& s : u.selectors) {
    std::string d;
    if (s.all_keys) {
      d += "~* ";
    } else {
      for (const KeyPattern& p : s.patterns) {
        d += pattern_string(p);
        d += ' ';
      }
    }
    if (s.all_channels) {
      d += "&* ";
    } else {
      d += "resetchannels ";
      for (const std::string& c : s.channels) {
        d += '&';
        d += c;
        d += ' ';
      }
    }
    d += describe_commands(s);
    if (s.root) {
      out += d;
    } else {
      out += " (" + d + ")";
    }
  }
  return out;
}

bool Users::check_credentials(std::string_view name, std::string_view password) const {
  const User* u = find(name);
  if (u == nullptr || !u->enabled) {
    return false;
  }
  if (u->nopass) {
    return true;
  }
  std::string hashed = hash_password(password);
  bool ok = false;
  for (const std::string& p : u->passwords) {
    int diff = 0;
    for (size_t i = 0; i < k_hash_len && i < p.size(); ++i) {
      diff |= hashed[i] ^ p[i];
    }
    ok = ok || diff == 0;
  }
  return ok;
}

bool Users::unrestricted(const User& user) {
  for (const Selector& s : user.selectors) {
    if (s.all_commands && s.all_keys && s.all_channels) {
      return true;
    }
  }
  return false;
}

bool Users::channel_allowed(const User& user, std::string_view channel, bool is_pattern) {
  for (const Selector& s : user.selectors) {
    if (s.all_channels || channel_in_list(s.channels, channel, is_pattern)) {
      return true;
    }
  }
  return false;
}

Denial Users::check_command(const User& user, const Command& cmd,
                            std::span<const std::string_view> argv, size_t& errpos) const {
  Denial relevant = Denial::command;
  size_t last_idx = 0;
  std::optional<CommandKeys> keys;
  for (const Selector& s : user.selectors) {
    Denial d = Denial::none;
    size_t idx = 0;
    if (!s.all_commands && (cmd.spec.flags & k_cmd_no_auth) == 0 &&
        (cmd.id >= s.allowed.size() || !s.allowed[cmd.id])) {
      d = Denial::command;
      auto fa = s.first_args.find(cmd.id);
      if (argv.size() >= 2 && fa != s.first_args.end()) {
        size_t at = cmd.parent != nullptr ? 2 : 1;
        for (const std::string& a : fa->second) {
          if (at < argv.size() && iequals(argv[at], a)) {
            d = Denial::none;
            break;
          }
        }
      }
    }
    if (d == Denial::none && !s.all_keys && simple_keys(s, cmd)) {
      // The common case costs no lookup and no allocation: the table's key range, and
      // patterns that grant read and write alike, so the key specs' flags do not matter.
      const CommandSpec& spec = cmd.spec;
      int argc = static_cast<int>(argv.size());
      int last = spec.last_key < 0 ? argc + spec.last_key : std::min(spec.last_key, argc - 1);
      for (int pos = spec.first_key; spec.first_key > 0 && pos <= last && pos < argc;
           pos += std::max(spec.step, 1)) {
        if (!key_allowed(s, argv[static_cast<size_t>(pos)], 0)) {
          d = Denial::key;
          idx = static_cast<size_t>(pos);
          break;
        }
      }
    } else if (d == Denial::none && !s.all_keys) {
      if (!keys) {
        keys = command_key_positions(m_registry, argv);
      }
      for (size_t j = 0; j < keys->positions.size(); ++j) {
        size_t pos = keys->positions[j];
        uint32_t flags = j < keys->flags.size() ? keys->flags[j] : 0;
        if (!key_allowed(s, argv[pos], flags)) {
          d = Denial::key;
          idx = pos;
          break;
        }
      }
    }
    ChannelUse use = channel_use(cmd);
    if (d == Denial::none && !s.all_channels && use != k_ch_none) {
      size_t end = use == k_ch_publish_first ? std::min<size_t>(argv.size(), 2) : argv.size();
      for (size_t i = 1; i < end; ++i) {
        if (!channel_in_list(s.channels, argv[i], use == k_ch_pattern_all)) {
          d = Denial::channel;
          idx = i;
          break;
        }
      }
    }
    if (d == Denial::none) {
      return Denial::none;
    }
    if (d > relevant || (d == relevant && idx > last_idx)) {
      relevant = d;
      last_idx = idx;
    }
  }
  errpos = last_idx;
  return relevant;
}

std::string Users::denial_message(Denial denial, const User& user, const Command& cmd,
                                  std::string_view object, bool verbose) {
  switch (denial) {
    case Denial::key:
      return verbose ? fmt::format("User {} has no permissions to access the '{}' key", user.name,
                                   object)
                     : std::string("No permissions to access a key");
    case Denial::channel:
      return verbose ? fmt::format("User {} has no permissions to access the '{}' channel",
                                   user.name, object)
                     : std::string("No permissions to access a channel");
    default:
      return fmt::format("User {} has no permissions to run the '{}' command", user.name,
                         cmd.full_name);
  }
}

void Users::set_log_max_len(uint64_t len) {
  m_log_max_len = len;
  while (m_log.size() > m_log_max_len) {
    m_log.pop_back();
  }
}

void Users::log(Denial reason, LogContext context, std::string object, std::string username,
                std::string client_info, int64_t now_ms) {
  switch (reason) {
    case Denial::auth:
      ++denied_auth;
      break;
    case Denial::command:
      ++denied_cmd;
      break;
    case Denial::key:
      ++denied_key;
      break;
    case Denial::channel:
      ++denied_channel;
      break;
    case Denial::none:
      break;
  }
  if (m_log_max_len == 0) {
    m_log.clear();
    return;
  }
  size_t scan = std::min<size_t>(10, m_log.size());
  for (size_t i = 0; i < scan; ++i) {
    LogEntry& e = m_log[i];
    int64_t delta = e.updated_ms - now_ms;
    if (delta < 0) {
      delta = -delta;
    }
    if (e.reason == reason && e.context == context && delta <= k_log_grouping_ms &&
        e.object == object && e.username == username) {
      LogEntry match = std::move(e);
      m_log.erase(m_log.begin() + static_cast<std::ptrdiff_t>(i));
      match.client_info = std::move(client_info);
      match.updated_ms = now_ms;
      ++match.count;
      m_log.push_front(std::move(match));
      return;
    }
  }
  LogEntry e;
  e.reason = reason;
  e.context = context;
  e.object = std::move(object);
  e.username = std::move(username);
  e.updated_ms = now_ms;
  e.created_ms = now_ms;
  e.client_info = std::move(client_info);
  e.entry_id = m_log_next_id++;
  m_log.push_front(std::move(e));
  while (m_log.size() > m_log_max_len) {
    m_log.pop_back();
  }
}

std::optional<std::pair<size_t, RuleError>> check_user_line(std::span<const std::string> args) {
  if (args.empty()) {
    return std::pair<size_t, RuleError>{0, RuleError::syntax};
  }
  size_t invalid = 0;
  auto merged = merge_selector_arguments(args.subspan(1), &invalid);
  if (!merged) {
    return std::pair<size_t, RuleError>{invalid, RuleError::syntax};
  }
  CommandRegistry none;
  Users users(none);
  User fake = users.make_user("__fakeuser__");
  for (size_t j = 0; j < merged->size(); ++j) {
    RuleError e = users.apply_rule(fake, (*merged)[j]);
    if (e != RuleError::none && e != RuleError::unknown_command) {
      return std::pair<size_t, RuleError>{j, e};
    }
  }
  return std::nullopt;
}

std::optional<std::map<std::string, std::unique_ptr<User>, std::less<>>> parse_acl_file(
    const Users& users, std::string_view text, std::string_view filename, std::string& errors) {
  std::map<std::string, std::unique_ptr<User>, std::less<>> out;
  size_t linenum = 0;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) {
      end = text.size();
    }
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++linenum;
    while (!line.empty() &&
           std::string_view(" \t\r\n").find(line.front()) != std::string_view::npos) {
      line.remove_prefix(1);
    }
    while (!line.empty() &&
           std::string_view(" \t\r\n").find(line.back()) != std::string_view::npos) {
      line.remove_suffix(1);
    }
    if (line.empty()) {
      if (end == text.size()) {
        break;
      }
      continue;
    }
    // Valkey splits ACL file lines on single spaces, without quoting.
    std::vector<std::string> argv;
    size_t p = 0;
    while (p <= line.size()) {
      size_t sp = line.find(' ', p);
      if (sp == std::string_view::npos) {
        sp = line.size();
      }
      argv.emplace_back(line.substr(p, sp - p));
      p = sp + 1;
    }
    if (argv[0] != "user" || argv.size() < 2) {
      errors += fmt::format("{}:{} should start with user keyword followed by the username. ",
                            filename, linenum);
      continue;
    }
    if (has_spaces(argv[1])) {
      errors += fmt::format("'{}:{}: username '{}' contains invalid characters. ", filename,
                            linenum, argv[1]);
      continue;
    }
    if (out.contains(argv[1])) {
      errors += fmt::format("WARNING: Duplicate user '{}' found on line {}. ", argv[1], linenum);
      continue;
    }
    auto user = std::make_unique<User>(users.make_user(argv[1]));
    auto merged = merge_selector_arguments(std::span<const std::string>(argv).subspan(2));
    if (!merged) {
      errors +=
          fmt::format("{}:{}: Unmatched parenthesis in selector definition.", filename, linenum);
      merged.emplace();
    }
    bool syntax_error = false;
    for (std::string& op : *merged) {
      while (!op.empty() && std::string_view("\t\r\n").find(op.back()) != std::string_view::npos) {
        op.pop_back();
      }
      RuleError e = users.apply_rule(*user, op);
      if (e == RuleError::unknown_command) {
        errors += fmt::format("{}:{}: Error in applying operation '{}': {}. ", filename, linenum,
                              op, rule_error_text(e));
      } else if (e != RuleError::none && !syntax_error) {
        errors += fmt::format("{}:{}: {}. ", filename, linenum, rule_error_text(e));
        syntax_error = true;
      }
    }
    out.emplace(argv[1], std::move(user));
    if (end == text.size()) {
      break;
    }
  }
  if (!errors.empty()) {
    errors +=
        "WARNING: ACL errors detected, no change to the previously active ACL rules was "
        "performed";
    return std::nullopt;
  }
  return out;
}

}  // namespace keyshift::engine::acl
