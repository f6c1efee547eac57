#pragma once

#include "engine/commands/errors.hpp"
#include "engine/engine.hpp"
#include "engine/resp/reply_builder.hpp"
#include "engine/util/strings.hpp"

#include <initializer_list>
#include <span>
#include <string>
#include <string_view>

namespace keyshift::engine {

/// Everything a command handler sees: its arguments, the session, the engine and the
/// reply being written.
class CmdContext {
 public:
  CmdContext(Engine& engine, Session& session, Command& command,
             std::span<const std::string_view> args)
      : m_engine(engine),
        m_session(session),
        m_command(command),
        m_args(args),
        m_reply(session.out, session.resp) {}

  /// All arguments; args()[0] is the command name.
  std::span<const std::string_view> args() const { return m_args; }
  /// Argument `i`.
  std::string_view arg(size_t i) const { return m_args[i]; }
  size_t argc() const { return m_args.size(); }
  Engine& engine() { return m_engine; }
  Session& session() { return m_session; }
  Command& command() { return m_command; }
  ReplyBuilder& reply() { return m_reply; }
  /// The session's selected database.
  Db& db() { return m_engine.db(m_session.db); }
  /// Time of this command in unix ms (one value for the whole command).
  int64_t now_ms() const { return m_engine.keyspace().now_ms(); }
  /// Writes the "wrong number of arguments" error for this command.
  void reply_arity_error();

 private:
  Engine& m_engine;
  Session& m_session;
  Command& m_command;
  std::span<const std::string_view> m_args;
  ReplyBuilder m_reply;
};

/// Valkey's connIsLocal(): a unix-socket or in-process client, or a TCP peer on a loopback
/// address (is_local_ip). Protected commands and protected configs in `local` mode ask this.
bool is_local(const Session& session);

/// One CLIENT LIST / CLIENT INFO line (without the newline), in Valkey 8's field order;
/// `s` is described as running ctx's command when it is ctx's session.
std::string client_info_line(CmdContext& ctx, const Session& s);

/// Valkey's addReplySubcommandSyntaxError() text: an unknown subcommand (or a wrong count of
/// arguments for one) of the container command in `ctx.arg(0)`.
std::string subcommand_syntax_error(CmdContext& ctx);

/// A strict integer argument, as Valkey's getLongLongFromObjectOrReply(): false after
/// replying `error` when `text` is not one.
bool parse_int_arg(CmdContext& ctx, std::string_view text, int64_t& out,
                   std::string_view error = errors::k_not_integer);

/// Valkey's addReplyHelp(): a heading naming the command, the subcommand `lines`, then HELP
/// itself.
void reply_help(CmdContext& ctx, std::initializer_list<std::string_view> lines);

}  // namespace keyshift::engine
