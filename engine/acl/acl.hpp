#pragma once

#include "engine/commands/registry.hpp"

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

// Valkey 8.0.1's ACL users: the rule language of ACL SETUSER and `user` lines, the users of
// one engine, the permission checks dispatch and scripts ask, and the ACL log.
namespace keyshift::engine::acl {

/// Why a rule could not be applied (Valkey's errno values of ACLSetUser).
enum class RuleError : uint8_t {
  none,
  syntax,                ///< EINVAL
  unknown_command,       ///< ENOENT: command or category not found
  keys_after_all,        ///< EEXIST
  channels_after_all,    ///< EISDIR
  no_such_password,      ///< ENODEV
  bad_hash,              ///< EBADMSG
  duplicate_user,        ///< EALREADY
  subcommand_first_arg,  ///< ECHILD
};

/// Valkey's ACLSetUserStringError() text for `error`.
std::string_view rule_error_text(RuleError error);

/// Key permission bits of a key pattern (%R~, %W~, ~ is both).
enum KeyPermission : uint8_t { k_perm_read = 1, k_perm_write = 2, k_perm_all = 3 };

/// A key pattern and the access it grants.
struct KeyPattern {
  std::string pattern;
  uint8_t flags = k_perm_all;
};

/// One set of permissions; a user has a root selector and any number of `(...)` ones.
struct Selector {
  bool root = false;
  bool all_keys = false;
  bool all_channels = false;
  bool all_commands = false;
  bool future_commands = false;  // +@all was applied last: new commands would be allowed
  std::vector<bool> allowed;     // by Command::id
  std::map<uint32_t, std::vector<std::string>> first_args;  // +select|0 style allowances
  std::vector<KeyPattern> patterns;
  std::vector<std::string> channels;
  std::string command_rules;  // the ordered +/- rules since the last +@all / -@all
};

/// One ACL user.
struct User {
  std::string name;
  bool enabled = false;
  bool nopass = false;
  bool skip_sanitize_payload = false;
  std::vector<std::string> passwords;  // SHA-256 hex digests
  std::vector<Selector> selectors;     // [0] is the root selector
};

/// Why a command was refused, in Valkey's numeric order (the most relevant one of several
/// selectors wins by this order).
enum class Denial : uint8_t { none = 0, command = 1, key = 2, auth = 3, channel = 4 };

/// Where a refused command ran, for the ACL log.
enum class LogContext : uint8_t { toplevel, multi, lua, module };

/// One ACL LOG entry.
struct LogEntry {
  uint64_t count = 1;
  Denial reason = Denial::none;
  LogContext context = LogContext::toplevel;
  std::string object;
  std::string username;
  int64_t updated_ms = 0;
  std::string client_info;
  uint64_t entry_id = 0;
  int64_t created_ms = 0;
};

/// The SHA-256 of `password` in lowercase hex, as ACL stores passwords.
std::string hash_password(std::string_view password);

/// Valkey's ACLMergeSelectorArguments: joins a selector spread over several arguments
/// ("(~a" "+get)") into one; nullopt when a '(' is never closed, `invalid` set to its index.
std::optional<std::vector<std::string>> merge_selector_arguments(std::span<const std::string> args,
                                                                 size_t* invalid = nullptr);

/// The users of one engine, their rules and the ACL log.
class Users {
 public:
  /// Users judged against `registry`'s commands (which must outlive this). The default user
  /// starts as Valkey's: on, nopass, ~* &* +@all.
  explicit Users(const CommandRegistry& registry);
  ~Users();
  Users(const Users&) = delete;
  Users& operator=(const Users&) = delete;

  /// The user named `name`, or nullptr.
  User* find(std::string_view name) const;
  /// The default user (never removed).
  User& default_user() const { return *m_default; }
  /// Every user, sorted by name.
  const std::map<std::string, std::unique_ptr<User>, std::less<>>& all() const { return m_users; }

  /// A fresh user (off, no passwords, no permissions), not in the table.
  User make_user(std::string_view name) const;
  /// Applies one rule to `user` (ACLSetUser).
  RuleError apply_rule(User& user, std::string_view op) const;
  /// ACLStringSetUser: applies `rules` to a copy of `name` (created when absent) and stores
  /// it only when all apply; Valkey's error text otherwise.
  std::optional<std::string> set_user(std::string_view name, std::span<const std::string> rules);
  /// Removes `name`; false when it does not exist. The default user cannot be removed.
  bool remove(std::string_view name);
  /// Replaces every user but keeps the default user's object (its rules replaced).
  void replace_all(std::map<std::string, std::unique_ptr<User>, std::less<>> users);
  /// requirepass: the default user gets exactly this password, or nopass when empty.
  void set_default_password(std::string_view password);
  /// acl-pubsub-default: new selectors start with every channel.
  void set_pubsub_default_all(bool all) { m_pubsub_all = all; }

  /// The user's ACL LIST / ACL SAVE description (flags, passwords, selectors).
  std::string describe(const User& user) const;
  /// The command rules of a selector as GETUSER shows them ("+@all -get").
  std::string describe_commands(const Selector& selector) const;
  /// GETUSER's "keys" field of a selector.
  static std::string describe_keys(const Selector& selector);
  /// GETUSER's "channels" field of a selector.
  static std::string describe_channels(const Selector& selector);
  /// User flags in Valkey's order (on/off, nopass, sanitize-payload ...).
  static std::vector<std::string_view> flag_names(const User& user);

  /// Checks `user`'s credentials (ACLCheckUserCredentials).
  bool check_credentials(std::string_view name, std::string_view password) const;
  /// ACLCheckAllUserCommandPerm: may `user` run `cmd` with `argv`? On refusal `errpos` is the
  /// argument that caused it (0 for the command itself).
  Denial check_command(const User& user, const Command& cmd, std::span<const std::string_view> argv,
                       size_t& errpos) const;
  /// True when `user` can run everything without looking at arguments (the fast path).
  static bool unrestricted(const User& user);
  /// ACLUserCheckChannelPerm for one channel (a pattern when `is_pattern`).
  static bool channel_allowed(const User& user, std::string_view channel, bool is_pattern);

  /// getAclErrorMessage (not verbose unless `verbose`): the text after "-NOPERM ".
  static std::string denial_message(Denial denial, const User& user, const Command& cmd,
                                    std::string_view object, bool verbose);
  /// addACLLogEntry.
  void log(Denial reason, LogContext context, std::string object, std::string username,
           std::string client_info, int64_t now_ms);
  /// The ACL log, newest first.
  const std::deque<LogEntry>& log_entries() const { return m_log; }
  void log_reset() { m_log.clear(); }
  /// acllog-max-len.
  void set_log_max_len(uint64_t len);
  /// Counters for INFO stats (acl_access_denied_*).
  uint64_t denied_auth = 0;
  uint64_t denied_cmd = 0;
  uint64_t denied_key = 0;
  uint64_t denied_channel = 0;

  /// The AclCategory bits of the command with id `id`.
  uint32_t categories_of(uint32_t id) const { return m_categories[id]; }
  const CommandRegistry& registry() const { return m_registry; }

 private:
  Selector make_selector(bool root) const;
  RuleError apply_selector_rule(Selector& s, std::string_view op) const;
  void change_perm(Selector& s, const Command& cmd, bool allow) const;
  void set_category(Selector& s, uint32_t category, bool allow) const;
  const Command* lookup(std::string_view name) const;

  const CommandRegistry& m_registry;
  std::vector<uint32_t> m_categories;  // by Command::id
  std::map<std::string, std::unique_ptr<User>, std::less<>> m_users;
  User* m_default = nullptr;
  bool m_pubsub_all = false;
  std::deque<LogEntry> m_log;
  uint64_t m_log_max_len = 128;
  uint64_t m_log_next_id = 0;
};

/// Valkey's ACLAppendUserForLoading check of a `user` line (`args`: the user name, then its
/// rules): the index into the line's words ("user" is 0) Valkey names and why, or nullopt
/// when it may be loaded. Unknown commands are not judged here (they fail at start).
std::optional<std::pair<size_t, RuleError>> check_user_line(std::span<const std::string> args);

/// Reads an ACL file's text into a user table built on `users`' rules (ACLLoadFromFile):
/// the new users, or Valkey's one-line error text naming `filename` and the lines.
std::optional<std::map<std::string, std::unique_ptr<User>, std::less<>>> parse_acl_file(
    const Users& users, std::string_view text, std::string_view filename, std::string& errors);

}  // namespace keyshift::engine::acl
