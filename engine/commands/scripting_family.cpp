// EVAL scripts: EVAL, EVALSHA, their _RO forms and SCRIPT. The Lua side lives in
// engine/scripting/.
#include "engine/commands/context.hpp"
#include "engine/commands/families.hpp"
#include "engine/scripting/script_engine.hpp"

namespace keyshift::engine {
namespace {

void cmd_eval(CmdContext& ctx) {
  ctx.engine().scripting().eval(ctx, false, false);
}
void cmd_eval_ro(CmdContext& ctx) {
  ctx.engine().scripting().eval(ctx, false, true);
}
void cmd_evalsha(CmdContext& ctx) {
  ctx.engine().scripting().eval(ctx, true, false);
}
void cmd_evalsha_ro(CmdContext& ctx) {
  ctx.engine().scripting().eval(ctx, true, true);
}

void cmd_script_load(CmdContext& ctx) {
  std::string out;
  if (!ctx.engine().scripting().load_script(ctx.arg(2), true, out)) {
    ctx.reply().error(out);
    return;
  }
  ctx.reply().bulk(out);
}

void cmd_script_exists(CmdContext& ctx) {
  ScriptEngine& scripts = ctx.engine().scripting();
  ctx.reply().array(ctx.argc() - 2);
  for (size_t i = 2; i < ctx.argc(); ++i) {
    ctx.reply().integer(scripts.script_exists(ctx.arg(i)) ? 1 : 0);
  }
}

void cmd_script_show(CmdContext& ctx) {
  const std::string* body =
      ctx.arg(2).size() == 40 ? ctx.engine().scripting().script_body(ctx.arg(2)) : nullptr;
  if (body == nullptr) {
    ctx.reply().error("NOSCRIPT No matching script.");
    return;
  }
  ctx.reply().bulk(*body);
}

void cmd_script_flush(CmdContext& ctx) {
  if (ctx.argc() > 3 ||
      (ctx.argc() == 3 && !iequals(ctx.arg(2), "ASYNC") && !iequals(ctx.arg(2), "SYNC"))) {
    ctx.reply().error("ERR SCRIPT FLUSH only support SYNC|ASYNC option");
    return;
  }
  ctx.engine().scripting().flush_scripts();
  ctx.reply().ok();
}

void cmd_script_kill(CmdContext& ctx) {
  std::string error = ctx.engine().scripting().kill(true);
  if (!error.empty()) {
    ctx.reply().error(error);
    return;
  }
  ctx.reply().ok();
}

void cmd_script_debug(CmdContext& ctx) {
  if (iequals(ctx.arg(2), "no")) {
    ctx.reply().ok();
    return;
  }
  ctx.reply().error("ERR SCRIPT DEBUG is not supported by keyshift");
}

void cmd_script_help(CmdContext& ctx) {
  reply_help(ctx, {
                      "DEBUG (YES|SYNC|NO)",
                      "    Set the debug mode for subsequent scripts executed.",
                      "EXISTS <sha1> [<sha1> ...]",
                      "    Return information about the existence of the scripts in the script "
                      "cache.",
                      "FLUSH [ASYNC|SYNC]",
                      "    Flush the Lua scripts cache. Very dangerous on replicas.",
                      "    When called without the optional mode argument, the behavior is "
                      "determined",
                      "     by the lazyfree-lazy-user-flush configuration directive. Valid modes "
                      "are:",
                      "    * ASYNC: Asynchronously flush the scripts cache.",
                      "    * SYNC: Synchronously flush the scripts cache.",
                      "KILL",
                      "    Kill the currently executing Lua script.",
                      "LOAD <script>",
                      "    Load a script into the scripts cache without executing it.",
                      "SHOW <sha1>",
                      "    Show a script from the scripts cache.",
                  });
}

constexpr uint32_t k_eval_flags = k_cmd_noscript | k_cmd_skip_monitor | k_cmd_may_replicate |
                                  k_cmd_no_mandatory_keys | k_cmd_stale | k_cmd_movablekeys;
constexpr uint32_t k_eval_ro_flags = k_cmd_noscript | k_cmd_skip_monitor | k_cmd_no_mandatory_keys |
                                     k_cmd_stale | k_cmd_readonly | k_cmd_movablekeys;

constexpr CommandSpec k_scripting_commands[] = {
    {"eval", -3, k_eval_flags, 0, 0, 0, cmd_eval, "@slow @scripting"},
    {"eval_ro", -3, k_eval_ro_flags, 0, 0, 0, cmd_eval_ro, "@slow @scripting"},
    {"evalsha", -3, k_eval_flags, 0, 0, 0, cmd_evalsha, "@slow @scripting"},
    {"evalsha_ro", -3, k_eval_ro_flags, 0, 0, 0, cmd_evalsha_ro, "@slow @scripting"},
    {"script", -2, 0, 0, 0, 0, nullptr, "@slow"},
    {"script|debug", 3, k_cmd_noscript, 0, 0, 0, cmd_script_debug, "@slow @scripting"},
    {"script|exists", -3, k_cmd_noscript, 0, 0, 0, cmd_script_exists, "@slow @scripting"},
    {"script|flush", -2, k_cmd_noscript, 0, 0, 0, cmd_script_flush, "@slow @scripting"},
    {"script|help", 2, k_cmd_loading | k_cmd_stale, 0, 0, 0, cmd_script_help, "@slow @scripting"},
    {"script|kill", 2, k_cmd_noscript | k_cmd_allow_busy, 0, 0, 0, cmd_script_kill,
     "@slow @scripting"},
    {"script|load", 3, k_cmd_noscript | k_cmd_stale, 0, 0, 0, cmd_script_load, "@slow @scripting"},
    {"script|show", 3, k_cmd_noscript, 0, 0, 0, cmd_script_show, "@slow @scripting"},
};

}  // namespace

void register_scripting_family(CommandRegistry& registry) {
  registry.add(k_scripting_commands);
}

}  // namespace keyshift::engine
