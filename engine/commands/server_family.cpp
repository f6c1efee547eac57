// Server commands: INFO, CONFIG, COMMAND, CLIENT, DEBUG, FLUSH*, DBSIZE, TIME, SHUTDOWN.
#include "engine/commands/context.hpp"
#include "engine/commands/families.hpp"

namespace keyshift::engine {
namespace {

void cmd_dbsize(CmdContext& ctx) { ctx.reply().integer(static_cast<int64_t>(ctx.db().size())); }

void cmd_flushall(CmdContext& ctx) {
  for (int i = 0; i < ctx.engine().db_count(); ++i) {
    ctx.engine().db(i).flush();
  }
  ctx.reply().ok();
}

constexpr CommandSpec k_server_commands[] = {
    {"dbsize", 1, k_cmd_readonly | k_cmd_fast, 0, 0, 0, cmd_dbsize, "@keyspace @read @fast"},
    {"flushall", -1, k_cmd_write, 0, 0, 0, cmd_flushall, "@keyspace @write @slow @dangerous"},
};

}  // namespace

void register_server_family(CommandRegistry& registry) { registry.add(k_server_commands); }

}  // namespace keyshift::engine
