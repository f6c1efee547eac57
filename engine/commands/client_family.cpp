// Connection administration: CLIENT and its subcommands, and MONITOR.
#include "engine/acl/acl.hpp"
#include "engine/commands/context.hpp"
#include "engine/commands/families.hpp"
#include "engine/commands/info.hpp"
#include "engine/pause.hpp"
#include "engine/tracking.hpp"
#include "engine/util/glob.hpp"
#include "engine/util/strconv.hpp"
#include "engine/util/strings.hpp"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

namespace keyshift::engine {
namespace {

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

/// A session is this replica's primary link, a replica of this server, a pub/sub or a normal
/// client (MONITOR clients count as normal, as in Valkey).
ClientType client_type(const Session& s) {
  if (s.has(k_session_primary)) {
    return ClientType::primary;
  }
  if (s.has(k_session_replica)) {
    return ClientType::replica;
  }
  return s.has(k_session_pubsub) ? ClientType::pubsub : ClientType::normal;
}

/// Seconds since the session connected, as CLIENT LIST's age= and KILL MAXAGE see it.
int64_t client_age(CmdContext& ctx, const Session& s) {
  return ctx.now_ms() / 1000 - s.created_ms / 1000;
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
  const acl::User* user = nullptr;
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
        user = ctx.engine().users().find(value);
        if (user == nullptr) {
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
        (user != nullptr &&
         (s->user != nullptr ? s->user : &ctx.engine().users().default_user()) != user) ||
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

void cmd_client_tracking(CmdContext& ctx) {
  Session& s = ctx.session();
  TrackingOptions options;
  for (size_t j = 3; j < ctx.argc(); ++j) {
    bool more = j + 1 < ctx.argc();
    std::string_view opt = ctx.arg(j);
    if (iequals(opt, "redirect") && more) {
      ++j;
      if (options.redirect != 0) {
        ctx.reply().error(errors::k_tracking_single_redirect);
        return;
      }
      int64_t id = 0;
      if (!parse_int_arg(ctx, ctx.arg(j), id)) {
        return;
      }
      if (id <= 0 || !ctx.engine().sessions().contains(static_cast<uint64_t>(id))) {
        ctx.reply().error(errors::k_tracking_redirect_missing);
        return;
      }
      options.redirect = static_cast<uint64_t>(id);
    } else if (iequals(opt, "bcast")) {
      options.bcast = true;
    } else if (iequals(opt, "optin")) {
      options.optin = true;
    } else if (iequals(opt, "optout")) {
      options.optout = true;
    } else if (iequals(opt, "noloop")) {
      options.noloop = true;
    } else if (iequals(opt, "prefix") && more) {
      ++j;
      options.prefixes.emplace_back(ctx.arg(j));
    } else {
      ctx.reply().error(errors::k_syntax);
      return;
    }
  }
  Tracking& tracking = ctx.engine().tracking();
  if (iequals(ctx.arg(2), "on")) {
    // Valkey's checks, in its order.
    std::string_view error;
    if (!options.bcast && !options.prefixes.empty()) {
      error = errors::k_tracking_prefix_needs_bcast;
    } else if (s.has(k_session_tracking) && s.has(k_session_tracking_bcast) != options.bcast) {
      error = errors::k_tracking_bcast_switch;
    } else if (options.bcast && (options.optin || options.optout)) {
      error = errors::k_tracking_optin_bcast;
    } else if (options.optin && options.optout) {
      error = errors::k_tracking_optin_optout;
    } else if ((options.optin && s.has(k_session_tracking_optout)) ||
               (options.optout && s.has(k_session_tracking_optin))) {
      error = errors::k_tracking_optin_switch;
    }
    if (!error.empty()) {
      ctx.reply().error(error);
      return;
    }
    if (options.bcast) {
      if (std::string collision = tracking.prefix_collision(s, options.prefixes);
          !collision.empty()) {
        ctx.reply().error(collision);
        return;
      }
    }
    tracking.enable(s, options);
  } else if (iequals(ctx.arg(2), "off")) {
    tracking.disable(s);
  } else {
    ctx.reply().error(errors::k_syntax);
    return;
  }
  ctx.reply().ok();
}

void cmd_client_caching(CmdContext& ctx) {
  Session& s = ctx.session();
  if (!s.has(k_session_tracking)) {
    ctx.reply().error(errors::k_caching_not_tracking);
    return;
  }
  std::string_view opt = ctx.arg(2);
  if (iequals(opt, "yes")) {
    if (!s.has(k_session_tracking_optin)) {
      ctx.reply().error(errors::k_caching_yes_needs_optin);
      return;
    }
  } else if (iequals(opt, "no")) {
    if (!s.has(k_session_tracking_optout)) {
      ctx.reply().error(errors::k_caching_no_needs_optout);
      return;
    }
  } else {
    ctx.reply().error(errors::k_syntax);
    return;
  }
  s.set(k_session_tracking_caching);
  ctx.reply().ok();
}

void cmd_client_getredir(CmdContext& ctx) {
  const Session& s = ctx.session();
  ctx.reply().integer(s.has(k_session_tracking) ? static_cast<int64_t>(s.tracking_redirect) : -1);
}

void cmd_client_trackinginfo(CmdContext& ctx) {
  const Session& s = ctx.session();
  std::vector<std::string_view> flags{s.has(k_session_tracking) ? "on" : "off"};
  bool caching = s.has(k_session_tracking_caching);
  if (s.has(k_session_tracking_bcast)) {
    flags.emplace_back("bcast");
  }
  if (s.has(k_session_tracking_optin)) {
    flags.emplace_back("optin");
    if (caching) {
      flags.emplace_back("caching-yes");
    }
  }
  if (s.has(k_session_tracking_optout)) {
    flags.emplace_back("optout");
    if (caching) {
      flags.emplace_back("caching-no");
    }
  }
  if (s.has(k_session_tracking_noloop)) {
    flags.emplace_back("noloop");
  }
  if (s.has(k_session_tracking_broken_redir)) {
    flags.emplace_back("broken_redirect");
  }
  ReplyBuilder& r = ctx.reply();
  r.map(3);
  r.bulk("flags");
  r.set(flags.size());
  for (std::string_view f : flags) {
    r.bulk(f);
  }
  r.bulk("redirect");
  r.integer(s.has(k_session_tracking) ? static_cast<int64_t>(s.tracking_redirect) : -1);
  r.bulk("prefixes");
  r.array(s.tracking_prefixes.size());
  for (const std::string& p : s.tracking_prefixes) {
    r.bulk(p);
  }
}

void cmd_client_pause(CmdContext& ctx) {
  bool all = true;
  if (ctx.argc() == 4) {
    if (iequals(ctx.arg(3), "write")) {
      all = false;
    } else if (!iequals(ctx.arg(3), "all")) {
      ctx.reply().error(errors::k_pause_mode);
      return;
    }
  } else if (ctx.argc() > 4) {
    ctx.reply().error(subcommand_syntax_error(ctx));
    return;
  }
  // Valkey's getTimeoutFromObjectOrReply in milliseconds: 0 is no pause at all.
  int64_t ms = 0;
  if (!parse_i64(ctx.arg(2), ms)) {
    ctx.reply().error(errors::k_timeout_not_integer);
    return;
  }
  if (ms < 0) {
    ctx.reply().error(errors::k_timeout_negative);
    return;
  }
  int64_t end = 0;
  if (ms > 0) {
    int64_t now = ctx.engine().clock().now_ms();
    if (ms > INT64_MAX - now) {
      ctx.reply().error(errors::k_timeout_out_of_range);
      return;
    }
    end = now + ms;
  }
  ctx.engine().pauses().pause_by_client(end, all);
  ctx.reply().ok();
}

void cmd_client_unpause(CmdContext& ctx) {
  ctx.engine().pauses().unpause_by_client();
  ctx.reply().ok();
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
                      "CACHING (YES|NO)",
                      "    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT "
                      "modes.",
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
                      "UNPAUSE",
                      "    Stop the current client pause, resuming traffic.",
                      "PAUSE <timeout> [WRITE|ALL]",
                      "    Suspend all, or just write, clients for <timeout> milliseconds.",
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
                      "TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]",
                      "         [OPTIN] [OPTOUT] [NOLOOP]",
                      "    Control server assisted client side caching.",
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

// --- Registration -----------------------------------------------------------------------

// Rows as Valkey 8.0.1's commands.def has them (tests check every row against the generated
// table). Containers have no handler.
constexpr uint32_t k_ls = k_cmd_loading | k_cmd_stale;
constexpr uint32_t k_admin = k_cmd_admin | k_cmd_noscript | k_ls;
constexpr std::string_view k_admin_acl = "@admin @slow @dangerous";
constexpr std::string_view k_conn_acl = "@slow @connection";

constexpr CommandSpec k_client_commands[] = {
    {"client", -2, 0, 0, 0, 0, nullptr, "@slow"},
    {"client|caching", 3, k_cmd_noscript | k_ls, 0, 0, 0, cmd_client_caching, k_conn_acl},
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
    {"client|pause", -3, k_admin, 0, 0, 0, cmd_client_pause, "@admin @slow @dangerous @connection"},
    {"client|reply", 3, k_cmd_noscript | k_ls, 0, 0, 0, cmd_client_reply, k_conn_acl},
    {"client|setinfo", 4, k_cmd_noscript | k_ls, 0, 0, 0, cmd_client_setinfo, k_conn_acl},
    {"client|setname", 3, k_cmd_noscript | k_ls, 0, 0, 0, cmd_client_setname, k_conn_acl},
    {"client|tracking", -3, k_cmd_noscript | k_ls, 0, 0, 0, cmd_client_tracking, k_conn_acl},
    {"client|trackinginfo", 2, k_cmd_noscript | k_ls, 0, 0, 0, cmd_client_trackinginfo, k_conn_acl},
    {"client|unblock", -3, k_admin, 0, 0, 0, cmd_client_unblock,
     "@admin @slow @dangerous @connection"},
    {"client|unpause", 2, k_admin, 0, 0, 0, cmd_client_unpause,
     "@admin @slow @dangerous @connection"},
    {"monitor", 1, k_admin, 0, 0, 0, cmd_monitor, k_admin_acl},
};

}  // namespace

std::string client_info_line(CmdContext& ctx, const Session& s) {
  // The reply buffer every Valkey client has (PROTO_REPLY_CHUNK_BYTES); bytes beyond it
  // count as the output list.
  constexpr uint64_t k_reply_buffer = 16 * 1024;
  bool self = &s == &ctx.session();
  std::string flags;
  if (s.has(k_session_monitor)) {
    flags += 'O';
  }
  if (s.has(k_session_replica)) {
    flags += 'S';
  }
  if (s.has(k_session_pubsub)) {
    flags += 'P';
  }
  if (s.has(k_session_multi)) {
    flags += 'x';
  }
  if (s.has(k_session_blocked) || s.has(k_session_postponed)) {
    flags += 'b';
  }
  if (s.has(k_session_tracking)) {
    flags += 't';
  }
  if (s.has(k_session_tracking_broken_redir)) {
    flags += 'R';
  }
  if (s.has(k_session_tracking_bcast)) {
    flags += 'B';
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
  line += " user=";
  line += s.user != nullptr ? std::string_view(s.user->name) : std::string_view("default");
  line += " redir=";
  line += s.has(k_session_tracking) ? std::to_string(s.tracking_redirect) : "-1";
  line += " resp=" + std::to_string(s.resp);
  line += " lib-name=" + s.lib_name;
  line += " lib-ver=" + s.lib_ver;
  line += " tot-net-in=" + std::to_string(s.net_input_bytes);
  line += " tot-net-out=" + std::to_string(s.net_output_bytes);
  line += " tot-cmds=" + std::to_string(s.total_commands);
  return line;
}

void register_client_family(CommandRegistry& registry) {
  registry.add(k_client_commands);
}

}  // namespace keyshift::engine
