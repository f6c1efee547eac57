// CLUSTER: keyshift runs standalone only (cluster-enabled is immutably "no"), so every
// subcommand answers as a standalone Valkey does, with the cluster-disabled error. The
// subcommands are still registered with Valkey 8's arities and flags so COMMAND, ACL
// categories, arity errors and "unknown subcommand" match Valkey's.
#include "engine/commands/context.hpp"
#include "engine/commands/families.hpp"

namespace keyshift::engine {
namespace {

void cmd_cluster(CmdContext& ctx) {
  ctx.reply().error(errors::k_cluster_disabled);
}

/// READONLY and READWRITE only set a connection flag that a standalone server never reads
/// (src/cluster.c readonlyCommand): they answer OK.
void cmd_ok(CmdContext& ctx) {
  ctx.reply().ok();
}

constexpr uint32_t k_ls = k_cmd_loading | k_cmd_stale;
constexpr uint32_t k_admin = k_cmd_admin | k_cmd_stale;
constexpr std::string_view k_admin_acl = "@admin @slow @dangerous";

constexpr CommandSpec k_cluster_commands[] = {
    {"asking", 1, k_cmd_fast, 0, 0, 0, cmd_cluster, "@fast @connection"},
    {"readonly", 1, k_cmd_fast | k_cmd_loading | k_cmd_stale, 0, 0, 0, cmd_ok, "@fast @connection"},
    {"readwrite", 1, k_cmd_fast | k_cmd_loading | k_cmd_stale, 0, 0, 0, cmd_ok,
     "@fast @connection"},
    {"cluster", -2, 0, 0, 0, 0, nullptr, "@slow"},
    {"cluster|addslots", -3, k_admin, 0, 0, 0, cmd_cluster, k_admin_acl},
    {"cluster|addslotsrange", -4, k_admin, 0, 0, 0, cmd_cluster, k_admin_acl},
    {"cluster|bumpepoch", 2, k_admin, 0, 0, 0, cmd_cluster, k_admin_acl},
    {"cluster|count-failure-reports", 3, k_admin, 0, 0, 0, cmd_cluster, k_admin_acl},
    {"cluster|countkeysinslot", 3, k_cmd_stale, 0, 0, 0, cmd_cluster, "@slow"},
    {"cluster|delslots", -3, k_admin, 0, 0, 0, cmd_cluster, k_admin_acl},
    {"cluster|delslotsrange", -4, k_admin, 0, 0, 0, cmd_cluster, k_admin_acl},
    {"cluster|failover", -2, k_admin, 0, 0, 0, cmd_cluster, k_admin_acl},
    {"cluster|flushslots", 2, k_admin, 0, 0, 0, cmd_cluster, k_admin_acl},
    {"cluster|forget", 3, k_admin, 0, 0, 0, cmd_cluster, k_admin_acl},
    {"cluster|getkeysinslot", 4, k_cmd_stale, 0, 0, 0, cmd_cluster, "@slow"},
    {"cluster|help", 2, k_ls, 0, 0, 0, cmd_cluster, "@slow"},
    {"cluster|info", 2, k_ls, 0, 0, 0, cmd_cluster, "@slow"},
    {"cluster|keyslot", 3, k_cmd_stale, 0, 0, 0, cmd_cluster, "@slow"},
    {"cluster|links", 2, k_cmd_stale, 0, 0, 0, cmd_cluster, "@slow"},
    {"cluster|meet", -4, k_admin, 0, 0, 0, cmd_cluster, k_admin_acl},
    {"cluster|myid", 2, k_ls, 0, 0, 0, cmd_cluster, "@slow"},
    {"cluster|myshardid", 2, k_ls, 0, 0, 0, cmd_cluster, "@slow"},
    {"cluster|nodes", 2, k_ls, 0, 0, 0, cmd_cluster, "@slow"},
    {"cluster|replicas", 3, k_admin, 0, 0, 0, cmd_cluster, k_admin_acl},
    {"cluster|replicate", 3, k_admin, 0, 0, 0, cmd_cluster, k_admin_acl},
    {"cluster|reset", -2, k_admin | k_cmd_noscript, 0, 0, 0, cmd_cluster, k_admin_acl},
    {"cluster|saveconfig", 2, k_admin, 0, 0, 0, cmd_cluster, k_admin_acl},
    {"cluster|set-config-epoch", 3, k_admin, 0, 0, 0, cmd_cluster, k_admin_acl},
    {"cluster|setslot", -4, k_admin | k_cmd_may_replicate, 0, 0, 0, cmd_cluster, k_admin_acl},
    {"cluster|shards", 2, k_ls, 0, 0, 0, cmd_cluster, "@slow"},
    {"cluster|slaves", 3, k_admin, 0, 0, 0, cmd_cluster, k_admin_acl},
    {"cluster|slot-stats", -4, k_ls, 0, 0, 0, cmd_cluster, "@slow"},
    {"cluster|slots", 2, k_ls, 0, 0, 0, cmd_cluster, "@slow"},
};

}  // namespace

void register_cluster_family(CommandRegistry& registry) {
  registry.add(k_cluster_commands);
}

}  // namespace keyshift::engine
