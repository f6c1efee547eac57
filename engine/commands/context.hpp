#pragma once

#include "engine/commands/errors.hpp"
#include "engine/engine.hpp"
#include "engine/resp/reply_builder.hpp"

#include <initializer_list>
#include <span>
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

/// Reads typed arguments in order and keeps the first error, so a handler parses first and
/// checks once:
///   ArgParser p(ctx.args(), 2); int64_t n = p.next_int(); if (!p.ok()) return p.reply(ctx);
class ArgParser {
 public:
  ArgParser(std::span<const std::string_view> args, size_t start) : m_args(args), m_pos(start) {}

  /// True if arguments remain.
  bool has_next() const { return m_pos < m_args.size(); }
  /// Number of arguments left.
  size_t remaining() const { return m_pos < m_args.size() ? m_args.size() - m_pos : 0; }
  /// The next raw argument (syntax error if none).
  std::string_view next();
  /// The next argument without consuming it ("" if none).
  std::string_view peek() const { return has_next() ? m_args[m_pos] : std::string_view(); }
  /// Consumes the next argument if it equals `keyword` case-insensitively.
  bool accept(std::string_view keyword);
  /// The next argument as an integer (not-an-integer error otherwise).
  int64_t next_int();
  /// The next argument as a double (not-a-float error otherwise).
  double next_double();
  /// Records `error` unless an earlier error is kept.
  void fail(std::string_view error);
  /// True while no error was recorded.
  bool ok() const { return m_error.empty(); }
  /// The first error.
  std::string_view error() const { return m_error; }
  /// Writes the first error as the reply.
  void reply_error(CmdContext& ctx) const { ctx.reply().error(m_error); }

 private:
  std::span<const std::string_view> m_args;
  size_t m_pos;
  std::string m_error;
};

/// Case-insensitive ASCII comparison.
bool iequals(std::string_view a, std::string_view b);

/// Valkey's addReplyHelp(): a heading naming the command, the subcommand `lines`, then HELP
/// itself.
void reply_help(CmdContext& ctx, std::initializer_list<std::string_view> lines);

}  // namespace keyshift::engine
