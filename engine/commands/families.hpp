#pragma once

namespace keyshift::engine {

class CommandRegistry;

// One registration function per command family; each family file ends with its table.
void register_connection_family(CommandRegistry& registry);
void register_string_family(CommandRegistry& registry);
void register_list_family(CommandRegistry& registry);
void register_bitmap_family(CommandRegistry& registry);
void register_generic_family(CommandRegistry& registry);
void register_hash_family(CommandRegistry& registry);
void register_zset_family(CommandRegistry& registry);
void register_set_family(CommandRegistry& registry);
void register_sort_family(CommandRegistry& registry);
void register_server_family(CommandRegistry& registry);
void register_command_family(CommandRegistry& registry);
void register_client_family(CommandRegistry& registry);
void register_debug_family(CommandRegistry& registry);
void register_persistence_family(CommandRegistry& registry);
void register_transaction_family(CommandRegistry& registry);
void register_pubsub_family(CommandRegistry& registry);
void register_blocking_family(CommandRegistry& registry);
void register_scripting_family(CommandRegistry& registry);
void register_stream_family(CommandRegistry& registry);
void register_replication_family(CommandRegistry& registry);
void register_migrate_family(CommandRegistry& registry);
void register_cluster_family(CommandRegistry& registry);
void register_geo_family(CommandRegistry& registry);
void register_hyperloglog_family(CommandRegistry& registry);
void register_function_family(CommandRegistry& registry);
void register_module_family(CommandRegistry& registry);
void register_acl_family(CommandRegistry& registry);

}  // namespace keyshift::engine
