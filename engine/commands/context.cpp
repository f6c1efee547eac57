#include "engine/commands/context.hpp"

#include "engine/util/net_address.hpp"
#include "engine/util/strconv.hpp"
#include "engine/util/strings.hpp"

namespace keyshift::engine {

void CmdContext::reply_arity_error() {
  std::string msg = "ERR wrong number of arguments for '";
  msg += m_command.full_name;
  msg += "' command";
  m_reply.error(msg);
}

bool is_local(const Session& session) {
  return session.has(k_session_unix_socket) || session.has(k_session_in_process) ||
         is_local_ip(addr_ip(session.addr));
}

void reply_help(CmdContext& ctx, std::initializer_list<std::string_view> lines) {
  std::string heading = to_upper(ctx.arg(0));
  ReplyBuilder& r = ctx.reply();
  r.array(lines.size() + 3);
  r.simple(heading + " <subcommand> [<arg> [value] [opt] ...]. Subcommands are:");
  for (std::string_view line : lines) {
    r.simple(line);
  }
  r.simple("HELP");
  r.simple("    Print this help.");
}

std::string subcommand_syntax_error(CmdContext& ctx) {
  return "ERR unknown subcommand or wrong number of arguments for '" +
         std::string(ctx.arg(1).substr(0, 128)) + "'. Try " + to_upper(ctx.arg(0)) + " HELP.";
}

bool parse_int_arg(CmdContext& ctx, std::string_view text, int64_t& out, std::string_view error) {
  if (!parse_i64(text, out)) {
    ctx.reply().error(error);
    return false;
  }
  return true;
}

}  // namespace keyshift::engine
