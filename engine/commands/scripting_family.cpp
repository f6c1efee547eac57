// Scripting commands. keyshift holds no scripts or functions yet, so only the flushes exist:
// flushing an empty library is exact, and test harnesses (Valkey's Tcl suite) send
// FUNCTION FLUSH before every unit.
#include "engine/commands/context.hpp"
#include "engine/commands/families.hpp"

namespace keyshift::engine {
namespace {

void cmd_flush_scripts(CmdContext& ctx) {
  if (ctx.argc() > 3 ||
      (ctx.argc() == 3 && !iequals(ctx.arg(2), "ASYNC") && !iequals(ctx.arg(2), "SYNC"))) {
    ctx.reply().error(errors::k_syntax);
    return;
  }
  ctx.reply().ok();
}

constexpr CommandSpec k_scripting_commands[] = {
    {"function", -2, 0, 0, 0, 0, nullptr, "@slow"},
    {"function|flush", -2, k_cmd_write | k_cmd_noscript, 0, 0, 0, cmd_flush_scripts,
     "@write @slow @scripting"},
    {"script", -2, 0, 0, 0, 0, nullptr, "@slow"},
    {"script|flush", -2, k_cmd_noscript, 0, 0, 0, cmd_flush_scripts, "@slow @scripting"},
};

}  // namespace

void register_scripting_family(CommandRegistry& registry) {
  registry.add(k_scripting_commands);
}

}  // namespace keyshift::engine
