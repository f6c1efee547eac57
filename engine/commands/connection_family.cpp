// Connection commands: PING, ECHO, QUIT, RESET, HELLO, AUTH, SELECT.
#include "engine/acl/acl.hpp"
#include "engine/commands/context.hpp"
#include "engine/commands/families.hpp"
#include "engine/commands/info.hpp"
#include "engine/util/strconv.hpp"

#include <optional>

namespace keyshift::engine {
namespace {

void cmd_ping(CmdContext& ctx) {
  if (ctx.argc() > 2) {
    ctx.reply_arity_error();
    return;
  }
  if (ctx.session().has(k_session_pubsub) && ctx.session().resp == 2) {
    ctx.reply().array(2);
    ctx.reply().bulk("pong");
    ctx.reply().bulk(ctx.argc() == 2 ? ctx.arg(1) : "");
    return;
  }
  if (ctx.argc() == 1) {
    ctx.reply().simple("PONG");
  } else {
    ctx.reply().bulk(ctx.arg(1));
  }
}

void cmd_echo(CmdContext& ctx) {
  ctx.reply().bulk(ctx.arg(1));
}

void cmd_quit(CmdContext& ctx) {
  ctx.session().set(k_session_close_after_reply);
  ctx.reply().ok();
}

void cmd_reset(CmdContext& ctx) {
  Session& s = ctx.session();
  ctx.engine().reset_connection_state(s);  // MULTI, WATCH and subscriptions end
  s.db = 0;
  s.resp = 2;
  s.name.clear();
  ctx.engine().set_default_auth(s);
  s.clear(k_session_no_evict);
  s.clear(k_session_no_touch);
  if (s.has(k_session_monitor)) {
    s.clear(k_session_monitor);
    std::erase(ctx.engine().monitors(), &s);
  }
  ctx.reply().set_resp(2);
  ctx.reply().simple("RESET");
}

bool check_password(CmdContext& ctx, std::string_view user, std::string_view pass) {
  if (!ctx.engine().authenticate(ctx.session(), user, pass, ctx.arg(0))) {
    ctx.reply().error(errors::k_wrongpass);
    return false;
  }
  return true;
}

void cmd_auth(CmdContext& ctx) {
  if (ctx.argc() > 3) {
    ctx.reply().error(errors::k_syntax);
    return;
  }
  if (ctx.argc() == 2) {
    if (ctx.engine().users().default_user().nopass) {
      ctx.reply().error(errors::k_auth_no_password);
      return;
    }
    if (check_password(ctx, "default", ctx.arg(1))) {
      ctx.reply().ok();
    }
    return;
  }
  if (check_password(ctx, ctx.arg(1), ctx.arg(2))) {
    ctx.reply().ok();
  }
}

/// Valkey's rule for client names: printable ASCII without spaces.
bool valid_client_name(std::string_view name) {
  for (char c : name) {
    if (c < '!' || c > '~') {
      return false;
    }
  }
  return true;
}

void cmd_hello(CmdContext& ctx) {
  int64_t ver = 0;
  size_t next = 1;
  if (ctx.argc() >= 2) {
    if (!parse_i64(ctx.arg(1), ver)) {
      ctx.reply().error("ERR Protocol version is not an integer or out of range");
      return;
    }
    ++next;
    if (ver < 2 || ver > 3) {
      ctx.reply().error(errors::k_noproto);
      return;
    }
  }
  std::string_view user;
  std::string_view pass;
  bool have_auth = false;
  std::optional<std::string_view> name;
  for (size_t j = next; j < ctx.argc(); ++j) {
    size_t more = ctx.argc() - 1 - j;
    if (iequals(ctx.arg(j), "AUTH") && more >= 2) {
      user = ctx.arg(j + 1);
      pass = ctx.arg(j + 2);
      have_auth = true;
      j += 2;
    } else if (iequals(ctx.arg(j), "SETNAME") && more >= 1) {
      if (!valid_client_name(ctx.arg(j + 1))) {
        ctx.reply().error(
            "ERR Client names cannot contain spaces, newlines or special characters.");
        return;
      }
      name = ctx.arg(j + 1);
      ++j;
    } else {
      ctx.reply().error("ERR Syntax error in HELLO option '" + std::string(ctx.arg(j)) + "'");
      return;
    }
  }
  if (have_auth && !check_password(ctx, user, pass)) {
    return;
  }
  Session& s = ctx.session();
  if (!s.authenticated) {
    ctx.reply().error(
        "NOAUTH HELLO must be called with the client already authenticated, otherwise the "
        "HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and "
        "select the RESP protocol version at the same time");
    return;
  }
  if (name) {
    s.name = std::string(*name);
  }
  if (ver != 0) {
    s.resp = static_cast<int>(ver);
    ctx.reply().set_resp(s.resp);
  }
  ReplyBuilder& r = ctx.reply();
  r.map(7);
  // extended-redis-compatibility: Valkey 8 then claims to be Redis 7.2.4 to old clients.
  bool as_redis = ctx.engine().config().extended_redis_compatibility;
  r.bulk("server");
  r.bulk(as_redis ? "redis" : k_server_name);
  r.bulk("version");
  r.bulk(as_redis ? k_redis_version : k_valkey_version);
  r.bulk("proto");
  r.integer(s.resp);
  r.bulk("id");
  r.integer(static_cast<int64_t>(s.id()));
  r.bulk("mode");
  r.bulk("standalone");
  r.bulk("role");
  r.bulk("master");
  r.bulk("modules");
  r.array(0);
}

void cmd_select(CmdContext& ctx) {
  int64_t index = 0;
  if (!parse_i64(ctx.arg(1), index)) {
    ctx.reply().error(errors::k_not_integer);
    return;
  }
  if (index < INT32_MIN || index > INT32_MAX) {
    ctx.reply().error(errors::k_int_out_of_range);
    return;
  }
  if (index < 0 || index >= ctx.engine().db_count()) {
    ctx.reply().error(errors::k_db_index_out_of_range);
    return;
  }
  ctx.session().db = static_cast<int>(index);
  ctx.reply().ok();
}

constexpr uint32_t k_conn = k_cmd_loading | k_cmd_stale;

constexpr CommandSpec k_connection_commands[] = {
    {"ping", -1, k_cmd_fast, 0, 0, 0, cmd_ping, "@fast @connection"},
    {"echo", 2, k_cmd_fast | k_conn, 0, 0, 0, cmd_echo, "@fast @connection"},
    {"quit", -1, k_cmd_allow_busy | k_cmd_noscript | k_cmd_no_auth | k_conn | k_cmd_fast, 0, 0, 0,
     cmd_quit, "@fast @connection"},
    {"reset", 1, k_cmd_noscript | k_cmd_no_auth | k_conn | k_cmd_fast | k_cmd_allow_busy, 0, 0, 0,
     cmd_reset, "@fast @connection"},
    {"auth", -2, k_cmd_noscript | k_conn | k_cmd_fast | k_cmd_no_auth | k_cmd_allow_busy, 0, 0, 0,
     cmd_auth, "@fast @connection"},
    {"hello", -1, k_cmd_noscript | k_conn | k_cmd_fast | k_cmd_no_auth | k_cmd_allow_busy, 0, 0, 0,
     cmd_hello, "@fast @connection"},
    {"select", 2, k_cmd_loading | k_cmd_stale | k_cmd_fast, 0, 0, 0, cmd_select,
     "@fast @connection"},
};

}  // namespace

void register_connection_family(CommandRegistry& registry) {
  registry.add(k_connection_commands);
}

}  // namespace keyshift::engine
