// MODULE: keyshift loads no modules (it has no module API), so it answers as a Valkey 8.0.1
// whose every module load fails (src/module.c moduleCommand): LIST is empty, LOAD and
// LOADEX fail with Valkey's text, UNLOAD finds no such module. LOAD, LOADEX and UNLOAD are
// protected commands: dispatch refuses them unless enable-module-command allows the client.
#include "engine/commands/context.hpp"
#include "engine/commands/families.hpp"

namespace keyshift::engine {
namespace {

constexpr std::string_view k_load_failed =
    "ERR Error loading the extension. Please check the server logs.";
constexpr std::string_view k_no_such_module =
    "ERR Error unloading module: no such module with that name";

void cmd_module_help(CmdContext& ctx) {
  reply_help(ctx, {"LIST", "    Return a list of loaded modules.", "LOAD <path> [<arg> ...]",
                   "    Load a module library from <path>, passing to it any optional arguments.",
                   "LOADEX <path> [[CONFIG NAME VALUE] [CONFIG NAME VALUE]] [ARGS ...]",
                   "    Load a module library from <path>, while passing it module "
                   "configurations and optional arguments.",
                   "UNLOAD <name>", "    Unload a module."});
}

void cmd_module_list(CmdContext& ctx) {
  ctx.reply().array(0);
}

void cmd_module_load(CmdContext& ctx) {
  ctx.reply().error(k_load_failed);
}

void cmd_module_unload(CmdContext& ctx) {
  ctx.reply().error(k_no_such_module);
}

constexpr uint32_t k_load_flags = k_cmd_admin | k_cmd_noscript | k_cmd_protected;

constexpr CommandSpec k_module_commands[] = {
    {"module", -2, 0, 0, 0, 0, nullptr, "@slow"},
    {"module|help", 2, k_cmd_loading | k_cmd_stale, 0, 0, 0, cmd_module_help, "@slow"},
    {"module|list", 2, k_cmd_admin | k_cmd_noscript, 0, 0, 0, cmd_module_list,
     "@admin @slow @dangerous"},
    {"module|load", -3, k_load_flags, 0, 0, 0, cmd_module_load, "@admin @slow @dangerous"},
    {"module|loadex", -3, k_load_flags, 0, 0, 0, cmd_module_load, "@admin @slow @dangerous"},
    {"module|unload", 3, k_load_flags, 0, 0, 0, cmd_module_unload, "@admin @slow @dangerous"},
};

}  // namespace

void register_module_family(CommandRegistry& registry) {
  registry.add(k_module_commands);
}

}  // namespace keyshift::engine
