#include "engine/commands/context.hpp"

#include "engine/util/net_address.hpp"

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

}  // namespace keyshift::engine
