#include "engine/commands/families.hpp"

#include "engine/commands/registry.hpp"

namespace keyshift::engine {

void register_all_families(CommandRegistry& registry) {
  register_connection_family(registry);
  register_string_family(registry);
  register_list_family(registry);
  register_bitmap_family(registry);
  register_generic_family(registry);
  register_hash_family(registry);
  register_zset_family(registry);
  register_geo_family(registry);
  register_set_family(registry);
  register_sort_family(registry);
  register_server_family(registry);
  register_command_family(registry);
  register_client_family(registry);
  register_debug_family(registry);
  register_persistence_family(registry);
  register_transaction_family(registry);
  register_pubsub_family(registry);
  register_stream_family(registry);
  register_blocking_family(registry);
  register_scripting_family(registry);
  register_replication_family(registry);
  register_migrate_family(registry);
  register_cluster_family(registry);
  register_hyperloglog_family(registry);
  register_function_family(registry);
  register_module_family(registry);
  register_acl_family(registry);
}

}  // namespace keyshift::engine
