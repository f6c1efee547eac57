// ACL and its subcommands (Valkey 8.0.1's aclCommand): users, rules, the log, DRYRUN, and
// the ACL file.
#include "engine/acl/acl.hpp"
#include "engine/commands/command_docs.hpp"
#include "engine/commands/context.hpp"
#include "engine/commands/families.hpp"

#include <fmt/format.h>

#include <openssl/rand.h>

namespace keyshift::engine {
namespace {

constexpr int64_t k_genpass_max_bits = 4096;

bool has_spaces(std::string_view s) {
  return s.find_first_of(std::string_view(" \t\n\r\v\f\0", 7)) != std::string_view::npos;
}

/// Closes the user's subscribed sessions that its new rules no longer allow
/// (ACLKillPubsubClientsIfNeeded).
void kill_revoked_subscribers(CmdContext& ctx, const acl::User& user) {
  for (const auto& [id, s] : ctx.engine().sessions()) {
    if (s->user != &user || ctx.engine().subscriptions_allowed(*s)) {
      continue;
    }
    if (s.get() == &ctx.session()) {
      s->set(k_session_close_after_reply);
    } else {
      s->set(k_session_close_asap);
      if (s->host() != nullptr) {
        s->host()->wake(*s);
      }
    }
  }
}

void cmd_acl_setuser(CmdContext& ctx) {
  std::string_view name = ctx.arg(2);
  if (has_spaces(name)) {
    ctx.reply().error("ERR Usernames can't contain spaces or null characters");
    return;
  }
  std::vector<std::string> rules(ctx.args().begin() + 3, ctx.args().end());
  acl::Users& users = ctx.engine().users();
  if (auto err = users.set_user(name, rules)) {
    ctx.reply().error("ERR " + *err);
    return;
  }
  kill_revoked_subscribers(ctx, *users.find(name));
  ctx.reply().ok();
}

void cmd_acl_deluser(CmdContext& ctx) {
  for (size_t j = 2; j < ctx.argc(); ++j) {
    if (ctx.arg(j) == "default") {
      ctx.reply().error("ERR The 'default' user cannot be removed");
      return;
    }
  }
  acl::Users& users = ctx.engine().users();
  int64_t deleted = 0;
  for (size_t j = 2; j < ctx.argc(); ++j) {
    acl::User* user = users.find(ctx.arg(j));
    if (user == nullptr) {
      continue;
    }
    ctx.engine().drop_user_sessions(user, &ctx.session());
    users.remove(ctx.arg(j));
    ++deleted;
  }
  ctx.reply().integer(deleted);
}

void reply_selector(CmdContext& ctx, const acl::Selector& s) {
  const acl::Users& users = ctx.engine().users();
  ReplyBuilder& r = ctx.reply();
  r.bulk("commands");
  r.bulk(users.describe_commands(s));
  r.bulk("keys");
  r.bulk(acl::Users::describe_keys(s));
  r.bulk("channels");
  r.bulk(acl::Users::describe_channels(s));
}

void cmd_acl_getuser(CmdContext& ctx) {
  const acl::User* u = ctx.engine().users().find(ctx.arg(2));
  ReplyBuilder& r = ctx.reply();
  if (u == nullptr) {
    r.null();
    return;
  }
  r.map(6);
  r.bulk("flags");
  std::vector<std::string_view> flags = acl::Users::flag_names(*u);
  r.set(flags.size());
  for (std::string_view f : flags) {
    r.bulk(f);
  }
  r.bulk("passwords");
  r.array(u->passwords.size());
  for (const std::string& p : u->passwords) {
    r.bulk(p);
  }
  reply_selector(ctx, u->selectors[0]);
  r.bulk("selectors");
  r.array(u->selectors.size() - 1);
  for (size_t i = 1; i < u->selectors.size(); ++i) {
    r.map(3);
    reply_selector(ctx, u->selectors[i]);
  }
}

void list_users(CmdContext& ctx, bool names_only) {
  const acl::Users& users = ctx.engine().users();
  ctx.reply().array(users.all().size());
  for (const auto& [name, user] : users.all()) {
    ctx.reply().bulk(names_only ? name : "user " + name + " " + users.describe(*user));
  }
}

void cmd_acl_list(CmdContext& ctx) {
  list_users(ctx, false);
}

void cmd_acl_users(CmdContext& ctx) {
  list_users(ctx, true);
}

void cmd_acl_whoami(CmdContext& ctx) {
  const acl::User* u = ctx.session().user;
  if (u == nullptr) {
    ctx.reply().null();
  } else {
    ctx.reply().bulk(u->name);
  }
}

constexpr std::string_view k_no_aclfile =
    "ERR This instance is not configured to use an ACL file. You may want to specify users via "
    "the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a configuration "
    "file set) in order to store users in the configuration.";

void cmd_acl_load(CmdContext& ctx) {
  if (ctx.engine().config().aclfile.empty()) {
    ctx.reply().error(k_no_aclfile);
    return;
  }
  if (auto err = ctx.engine().acl_load(&ctx.session())) {
    ctx.reply().error("ERR " + *err);
    return;
  }
  ctx.reply().ok();
}

void cmd_acl_save(CmdContext& ctx) {
  if (ctx.engine().config().aclfile.empty()) {
    ctx.reply().error(k_no_aclfile);
    return;
  }
  std::string error;
  if (!ctx.engine().acl_save(error)) {
    ctx.reply().error(
        "ERR There was an error trying to save the ACLs. Please check the server logs for more "
        "information");
    return;
  }
  ctx.reply().ok();
}

void cmd_acl_cat(CmdContext& ctx) {
  if (ctx.argc() > 3) {
    ctx.reply().error(subcommand_syntax_error(ctx));
    return;
  }
  if (ctx.argc() == 2) {
    ctx.reply().array(std::size(k_acl_category_names));
    for (std::string_view name : k_acl_category_names) {
      ctx.reply().bulk(name);
    }
    return;
  }
  uint32_t category = acl_category_by_name(ctx.arg(2));
  if (category == 0) {
    ctx.reply().error(fmt::format("ERR Unknown category '{}'", ctx.arg(2).substr(0, 128)));
    return;
  }
  const acl::Users& users = ctx.engine().users();
  std::vector<std::string_view> names;
  for (const Command* top : ctx.engine().registry().commands()) {
    if ((users.categories_of(top->id) & category) != 0) {
      names.push_back(top->full_name);
    }
    for (const Command* sub : top->subcommands) {
      if ((users.categories_of(sub->id) & category) != 0) {
        names.push_back(sub->full_name);
      }
    }
  }
  ctx.reply().array(names.size());
  for (std::string_view n : names) {
    ctx.reply().bulk(n);
  }
}

void cmd_acl_genpass(CmdContext& ctx) {
  if (ctx.argc() > 3) {
    ctx.reply().error(subcommand_syntax_error(ctx));
    return;
  }
  int64_t bits = 256;
  if (ctx.argc() == 3 && !parse_int_arg(ctx, ctx.arg(2), bits)) {
    return;
  }
  if (bits <= 0 || bits > k_genpass_max_bits) {
    ctx.reply().error(fmt::format(
        "ERR ACL GENPASS argument must be the number of bits for the output password, a "
        "positive number up to {}",
        k_genpass_max_bits));
    return;
  }
  size_t chars = static_cast<size_t>((bits + 3) / 4);
  std::vector<unsigned char> bytes((chars + 1) / 2);
  RAND_bytes(bytes.data(), static_cast<int>(bytes.size()));
  static constexpr char k_hex[] = "0123456789abcdef";
  std::string pass;
  for (unsigned char b : bytes) {
    pass += k_hex[b >> 4];
    pass += k_hex[b & 0xf];
  }
  pass.resize(chars);
  ctx.reply().bulk(pass);
}

std::string_view reason_name(acl::Denial d) {
  switch (d) {
    case acl::Denial::command:
      return "command";
    case acl::Denial::key:
      return "key";
    case acl::Denial::channel:
      return "channel";
    case acl::Denial::auth:
      return "auth";
    case acl::Denial::none:
      break;
  }
  return "unknown";
}

std::string_view context_name(acl::LogContext c) {
  switch (c) {
    case acl::LogContext::toplevel:
      return "toplevel";
    case acl::LogContext::multi:
      return "multi";
    case acl::LogContext::lua:
      return "lua";
    case acl::LogContext::module:
      return "module";
  }
  return "unknown";
}

void cmd_acl_log(CmdContext& ctx) {
  if (ctx.argc() > 3) {
    ctx.reply().error(subcommand_syntax_error(ctx));
    return;
  }
  acl::Users& users = ctx.engine().users();
  int64_t count = 10;
  if (ctx.argc() == 3) {
    if (iequals(ctx.arg(2), "reset")) {
      users.log_reset();
      ctx.reply().ok();
      return;
    }
    if (!parse_int_arg(ctx, ctx.arg(2), count)) {
      return;
    }
    count = std::max<int64_t>(count, 0);
  }
  const auto& entries = users.log_entries();
  size_t n = std::min(entries.size(), static_cast<size_t>(count));
  int64_t now = ctx.now_ms();
  ReplyBuilder& r = ctx.reply();
  r.array(n);
  for (size_t i = 0; i < n; ++i) {
    const acl::LogEntry& e = entries[i];
    r.map(10);
    r.bulk("count");
    r.integer(static_cast<int64_t>(e.count));
    r.bulk("reason");
    r.bulk(reason_name(e.reason));
    r.bulk("context");
    r.bulk(context_name(e.context));
    r.bulk("object");
    r.bulk(e.object);
    r.bulk("username");
    r.bulk(e.username);
    r.bulk("age-seconds");
    r.double_value(static_cast<double>(now - e.updated_ms) / 1000);
    r.bulk("client-info");
    r.bulk(e.client_info);
    r.bulk("entry-id");
    r.integer(static_cast<int64_t>(e.entry_id));
    r.bulk("timestamp-created");
    r.integer(e.created_ms);
    r.bulk("timestamp-last-updated");
    r.integer(e.updated_ms);
  }
}

void cmd_acl_dryrun(CmdContext& ctx) {
  acl::Users& users = ctx.engine().users();
  const acl::User* u = users.find(ctx.arg(2));
  if (u == nullptr) {
    ctx.reply().error(fmt::format("ERR User '{}' not found", c_string(ctx.arg(2))));
    return;
  }
  std::span<const std::string_view> argv = ctx.args().subspan(3);
  CommandRegistry& registry = ctx.engine().registry();
  const Command* cmd = registry.find(argv[0]);
  if (cmd != nullptr && argv.size() >= 2 && !cmd->subcommands.empty()) {
    cmd = registry.find_sub(*cmd, argv[1]);
  }
  if (cmd == nullptr) {
    ctx.reply().error(fmt::format("ERR Command '{}' not found", c_string(argv[0])));
    return;
  }
  int argc = static_cast<int>(argv.size());
  if ((cmd->spec.arity > 0 && cmd->spec.arity != argc) || argc < -cmd->spec.arity) {
    ctx.reply().error(
        fmt::format("ERR wrong number of arguments for '{}' command", cmd->full_name));
    return;
  }
  size_t pos = 0;
  acl::Denial d = users.check_command(*u, *cmd, argv, pos);
  if (d != acl::Denial::none) {
    ctx.reply().bulk(acl::Users::denial_message(d, *u, *cmd, argv[pos], true));
    return;
  }
  ctx.reply().ok();
}

void cmd_acl_help(CmdContext& ctx) {
  reply_help(ctx, {
                      "CAT [<category>]",
                      "    List all commands that belong to <category>, or all command categories",
                      "    when no category is specified.",
                      "DELUSER <username> [<username> ...]",
                      "    Delete a list of users.",
                      "DRYRUN <username> <command> [<arg> ...]",
                      "    Returns whether the user can execute the given command without "
                      "executing the command.",
                      "GETUSER <username>",
                      "    Get the user's details.",
                      "GENPASS [<bits>]",
                      "    Generate a secure 256-bit user password. The optional `bits` argument "
                      "can",
                      "    be used to specify a different size.",
                      "LIST",
                      "    Show users details in config file format.",
                      "LOAD",
                      "    Reload users from the ACL file.",
                      "LOG [<count> | RESET]",
                      "    Show the ACL log entries.",
                      "SAVE",
                      "    Save the current config to the ACL file.",
                      "SETUSER <username> <attribute> [<attribute> ...]",
                      "    Create or modify a user with the specified attributes.",
                      "USERS",
                      "    List all the registered usernames.",
                      "WHOAMI",
                      "    Return the current connection username.",
                  });
}

// Rows as Valkey 8.0.1's commands.def has them.
constexpr uint32_t k_ls = k_cmd_loading | k_cmd_stale;
constexpr uint32_t k_admin = k_cmd_admin | k_cmd_noscript | k_ls;
constexpr std::string_view k_slow = "@slow";
constexpr std::string_view k_admin_acl = "@admin @slow @dangerous";

constexpr CommandSpec k_acl_commands[] = {
    {"acl", -2, 0, 0, 0, 0, nullptr, k_slow},
    {"acl|cat", -2, k_cmd_noscript | k_ls, 0, 0, 0, cmd_acl_cat, k_slow},
    {"acl|deluser", -3, k_admin, 0, 0, 0, cmd_acl_deluser, k_admin_acl},
    {"acl|dryrun", -4, k_admin, 0, 0, 0, cmd_acl_dryrun, k_admin_acl},
    {"acl|genpass", -2, k_cmd_noscript | k_ls, 0, 0, 0, cmd_acl_genpass, k_slow},
    {"acl|getuser", 3, k_admin, 0, 0, 0, cmd_acl_getuser, k_admin_acl},
    {"acl|help", 2, k_ls, 0, 0, 0, cmd_acl_help, k_slow},
    {"acl|list", 2, k_admin, 0, 0, 0, cmd_acl_list, k_admin_acl},
    {"acl|load", 2, k_admin, 0, 0, 0, cmd_acl_load, k_admin_acl},
    {"acl|log", -2, k_admin, 0, 0, 0, cmd_acl_log, k_admin_acl},
    {"acl|save", 2, k_admin, 0, 0, 0, cmd_acl_save, k_admin_acl},
    {"acl|setuser", -3, k_admin, 0, 0, 0, cmd_acl_setuser, k_admin_acl},
    {"acl|users", 2, k_admin, 0, 0, 0, cmd_acl_users, k_admin_acl},
    {"acl|whoami", 2, k_cmd_noscript | k_ls, 0, 0, 0, cmd_acl_whoami, k_slow},
};

}  // namespace

void register_acl_family(CommandRegistry& registry) {
  registry.add(k_acl_commands);
}

}  // namespace keyshift::engine
