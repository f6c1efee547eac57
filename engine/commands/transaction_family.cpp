// Transactions: MULTI, EXEC, DISCARD, WATCH, UNWATCH. Queueing itself happens in the
// engine's dispatch, after the checks Valkey makes before it queues.
#include "engine/acl/acl.hpp"
#include "engine/commands/context.hpp"
#include "engine/commands/families.hpp"
#include "engine/watch.hpp"

#include <vector>

namespace keyshift::engine {
namespace {

void cmd_multi(CmdContext& ctx) {
  // MULTI inside MULTI never gets here: it is a no-multi command.
  ctx.session().set(k_session_multi);
  ctx.reply().ok();
}

void cmd_discard(CmdContext& ctx) {
  if (!ctx.session().has(k_session_multi)) {
    ctx.reply().error(errors::k_discard_without_multi);
    return;
  }
  ctx.engine().discard_transaction(ctx.session());
  ctx.reply().ok();
}

void cmd_exec(CmdContext& ctx) {
  Session& s = ctx.session();
  Engine& engine = ctx.engine();
  if (!s.has(k_session_multi)) {
    ctx.reply().error(errors::k_exec_without_multi);
    return;
  }
  // A watched key that expired since WATCH counts as changed, even if nothing reclaimed it.
  if (engine.watches().any_expired(s)) {
    s.set(k_session_dirty_cas);
  }
  if (s.has(k_session_dirty_cas) || s.has(k_session_dirty_exec)) {
    if (s.has(k_session_dirty_exec)) {
      ctx.reply().error(errors::k_execabort);
    } else {
      ctx.reply().null_array();
    }
    engine.discard_transaction(s);
    return;
  }
  // Blocking commands answer at once inside a transaction.
  bool could_block = !s.has(k_session_deny_blocking);
  s.set(k_session_deny_blocking);
  engine.watches().unwatch_all(s);
  std::vector<QueuedCommand> queue;
  queue.swap(s.multi_queue);
  ctx.reply().array(queue.size());
  std::vector<std::string_view> argv;
  for (QueuedCommand& q : queue) {
    argv.assign(q.argv.begin(), q.argv.end());
    // The rules may have changed since the command was queued (Valkey checks again).
    if (s.user != nullptr && !acl::Users::unrestricted(*s.user)) {
      size_t pos = 0;
      acl::Denial d = engine.users().check_command(*s.user, *q.cmd, argv, pos);
      if (d != acl::Denial::none) {
        engine.acl_check(s, *q.cmd, argv, acl::LogContext::multi);
        std::string_view why =
            d == acl::Denial::command ? "no permission to execute the command or subcommand"
            : d == acl::Denial::key
                ? "no permission to touch the specified keys"
                : "no permission to access one of the channels used as arguments";
        ctx.reply().error(
            "NOPERM ACLs rules changed between the moment the transaction was accumulated and "
            "the EXEC call. This command is no longer allowed for the following reason: " +
            std::string(why));
        continue;
      }
    }
    engine.call(s, *q.cmd, argv);
  }
  if (could_block) {
    s.clear(k_session_deny_blocking);
  }
  engine.discard_transaction(s);
}

void cmd_watch(CmdContext& ctx) {
  Session& s = ctx.session();
  // Once a watched key changed the transaction fails anyway: nothing more to watch.
  if (!s.has(k_session_dirty_cas)) {
    for (size_t i = 1; i < ctx.argc(); ++i) {
      ctx.engine().watches().watch(s, s.db, ctx.arg(i));
    }
  }
  ctx.reply().ok();
}

void cmd_unwatch(CmdContext& ctx) {
  ctx.engine().watches().unwatch_all(ctx.session());
  ctx.session().clear(k_session_dirty_cas);
  ctx.reply().ok();
}

constexpr uint32_t k_txn = k_cmd_noscript | k_cmd_loading | k_cmd_stale;

constexpr CommandSpec k_transaction_commands[] = {
    {"multi", 1, k_txn | k_cmd_fast | k_cmd_no_multi | k_cmd_allow_busy, 0, 0, 0, cmd_multi,
     "@fast @transaction"},
    {"exec", 1, k_txn | k_cmd_skip_slowlog, 0, 0, 0, cmd_exec, "@slow @transaction"},
    {"discard", 1, k_txn | k_cmd_fast | k_cmd_allow_busy, 0, 0, 0, cmd_discard,
     "@fast @transaction"},
    {"watch", -2, k_txn | k_cmd_fast | k_cmd_no_multi | k_cmd_allow_busy, 1, -1, 1, cmd_watch,
     "@fast @transaction"},
    {"unwatch", 1, k_txn | k_cmd_fast | k_cmd_allow_busy, 0, 0, 0, cmd_unwatch,
     "@fast @transaction"},
};

}  // namespace

void register_transaction_family(CommandRegistry& registry) {
  registry.add(k_transaction_commands);
}

}  // namespace keyshift::engine
