// Key-space commands: DEL, EXISTS, TYPE, expiry, SCAN, RENAME, MOVE, COPY, OBJECT.
#include "engine/commands/context.hpp"
#include "engine/commands/families.hpp"

namespace keyshift::engine {
namespace {

void cmd_del(CmdContext& ctx) {
  int64_t n = 0;
  for (size_t i = 1; i < ctx.argc(); ++i) {
    n += ctx.db().remove(ctx.arg(i)) ? 1 : 0;
  }
  ctx.reply().integer(n);
}

void cmd_exists(CmdContext& ctx) {
  int64_t n = 0;
  for (size_t i = 1; i < ctx.argc(); ++i) {
    n += ctx.db().exists(ctx.arg(i)) ? 1 : 0;
  }
  ctx.reply().integer(n);
}

constexpr CommandSpec k_generic_commands[] = {
    {"del", -2, k_cmd_write, 1, -1, 1, cmd_del, "@keyspace @write @slow"},
    {"exists", -2, k_cmd_readonly | k_cmd_fast, 1, -1, 1, cmd_exists, "@keyspace @read @fast"},
};

}  // namespace

void register_generic_family(CommandRegistry& registry) { registry.add(k_generic_commands); }

}  // namespace keyshift::engine
