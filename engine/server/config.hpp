#pragma once

#include "engine/keyspace/settings.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace keyshift::engine {

/// Whether `enable-debug-command` / `enable-protected-configs` style settings allow use.
enum class EnableMode : uint8_t { no, yes, local };

/// Client classes of `client-output-buffer-limit`, in the order Valkey prints them.
enum class ClientClass : uint8_t { normal, replica, pubsub };
inline constexpr size_t k_client_class_count = 3;

/// One class's output buffer limits; 0 disables a limit. A client is closed at the hard
/// limit, or once it stays at the soft limit for more than `soft_seconds`.
struct OutputBufferLimit {
  uint64_t hard_bytes = 0;
  uint64_t soft_bytes = 0;
  int64_t soft_seconds = 0;
};

/// One `user` line of a config file: the user name, then its rules (selectors merged), and
/// where it was read, for the errors of loading it at start.
struct AclUserLine {
  std::vector<std::string> args;
  std::string file;
  int line = 0;
};

/// A `rename-command FROM TO` directive (TO empty: the command is disabled), where it was read.
struct CommandRenameLine {
  std::string from;
  std::string to;
  std::string file;
  int line = 0;
};

/// Every setting the engine and its server read; filled from a config file, flags or
/// CONFIG SET. Plain data so that the engine never depends on a parser library. The
/// keyspace's own settings (notify-keyspace-events, set encodings, maxmemory-policy, LFU)
/// are the KeyspaceSettings base, which the databases point at.
struct EngineConfig : KeyspaceSettings {
  // Network.
  // Loopback by default, as the stock valkey.conf has it (valkey-server without a file binds
  // every interface; a migration tool should not expose a cache by surprise).
  std::vector<std::string> bind{"127.0.0.1", "-::1"};
  int port = 6379;
  int tcp_backlog = 511;
  std::string unixsocket;
  uint32_t unixsocketperm = 0;  // 0: leave the umask's mode
  std::string unixsocketgroup;  // group the unix socket is given to; empty: the process's
  int timeout = 0;              // idle client timeout in seconds, 0 = never
  int tcp_keepalive = 300;
  bool protected_mode = true;
  int maxclients = 10000;

  // Security.
  std::string requirepass;
  /// `user` lines in file order; the engine loads them after requirepass, as Valkey does.
  std::vector<AclUserLine> acl_users;
  /// `rename-command` lines in file order, applied to the command table when the engine
  /// starts (checked against it when the file was read).
  std::vector<CommandRenameLine> renamed_commands;
  /// The ACL file (ACL LOAD/SAVE, loaded at start); empty: users come from `user` lines.
  std::string aclfile;

  // TLS (the tls-* directives): `serve` listens on tls_port too, with a context built from
  // these (engine/net/tls.hpp); tls_auth_clients is a TlsAuthClients value.
  int tls_port = 0;
  std::string tls_cert_file;
  std::string tls_key_file;
  std::string tls_key_file_pass;
  std::string tls_client_cert_file;  // outgoing connections (replication), when set
  std::string tls_client_key_file;
  std::string tls_client_key_file_pass;
  std::string tls_dh_params_file;
  std::string tls_ca_cert_file;
  std::string tls_ca_cert_dir;
  std::string tls_protocols;
  std::string tls_ciphers;
  std::string tls_ciphersuites;
  int tls_auth_clients = 1;
  bool tls_replication = false;  // a replica's link to its primary runs over TLS
  bool tls_prefer_server_ciphers = false;
  bool tls_session_caching = true;
  int tls_session_cache_size = 20480;
  int tls_session_cache_timeout = 300;

  // Keyspace.
  int databases = 16;
  int hz = 10;
  bool active_expire = true;  // DEBUG SET-ACTIVE-EXPIRE

  // Encodings of small hashes (the hash-max-ziplist-* names are aliases).
  uint64_t hash_max_listpack_entries = 512;
  uint64_t hash_max_listpack_value = 64;

  // Encodings of lists: list-max-listpack-size (negative: -1..-5 = 4..64 KB per node,
  // positive: entries per node) and list-compress-depth (0 = no compression).
  int list_max_listpack_size = -2;
  int list_compress_depth = 0;

  // Encodings of small sorted sets (the zset-max-ziplist-* names are aliases).
  uint64_t zset_max_listpack_entries = 128;
  uint64_t zset_max_listpack_value = 64;

  // Stream nodes: a node listpack closes at this many bytes or entries (0 = no limit).
  uint64_t stream_node_max_bytes = 4096;
  uint64_t stream_node_max_entries = 100;

  // Memory.
  uint64_t maxmemory = 0;
  int maxmemory_samples = 5;
  int maxmemory_eviction_tenacity = 10;

  // Protocol limits.
  uint64_t proto_max_bulk_len = 512ull * 1024 * 1024;
  uint64_t client_query_buffer_limit = 1024ull * 1024 * 1024;
  /// client-output-buffer-limit, indexed by ClientClass.
  std::array<OutputBufferLimit, k_client_class_count> client_output_buffer_limits{{
      {0, 0, 0},
      {256ull * 1024 * 1024, 64ull * 1024 * 1024, 60},
      {32ull * 1024 * 1024, 8ull * 1024 * 1024, 60},
  }};

  // Persistence (RDB snapshots).
  std::string dir = ".";
  std::string dbfilename = "dump.rdb";
  std::string save = "3600 1 300 100 60 10000";  // "seconds changes" pairs; "" disables
  bool rdbcompression = true;
  bool rdbchecksum = true;
  /// Refuse writes while the last background save failed (and save rules exist).
  bool stop_writes_on_bgsave_error = true;
  /// What SIGINT / SIGTERM do, as CONFIG GET prints it: "default" or words among save,
  /// nosave, now, force.
  std::string shutdown_on_sigint = "default";
  std::string shutdown_on_sigterm = "default";

  // Persistence (append-only file, Valkey's multi-part AOF in dir/appenddirname).
  bool appendonly = false;
  std::string appendfilename = "appendonly.aof";
  std::string appenddirname = "appendonlydir";
  std::string appendfsync = "everysec";  // always, everysec or no
  bool aof_load_truncated = true;
  bool aof_use_rdb_preamble = true;
  bool no_appendfsync_on_rewrite = false;
  bool aof_disable_auto_gc = false;
  int auto_aof_rewrite_percentage = 100;  // 0 disables automatic rewrites
  uint64_t auto_aof_rewrite_min_size = 64ull * 1024 * 1024;

  // Administration.
  EnableMode enable_debug_command = EnableMode::no;
  EnableMode enable_module_command = EnableMode::no;
  std::string logfile;
  std::string loglevel = "notice";
  std::string pidfile;
  bool daemonize = false;
  /// no, upstart, systemd or auto: how `keyshift serve` tells its service manager it is
  /// ready (server/supervision); CONFIG GET shows it as set, INFO what it resolved to.
  std::string supervised = "no";
  /// As Valkey: turn THP off for the process when the kernel forces it ("always").
  bool disable_thp = true;
  /// keyshift's own: back the keyspace heap with transparent huge pages (see set_up_heap).
  bool huge_page_heap = true;
  /// HELLO and INFO present the server as Redis 7.2.4 (Valkey 8's compatibility switch).
  bool extended_redis_compatibility = false;
  std::string config_file;  // absolute path of the file this came from, if any

  // Directives Valkey knows but keyshift does not act on (activedefrag, io-threads, ...), by
  // primary name, in CONFIG GET form. Kept so CONFIG GET/REWRITE show what the operator set; a
  // missing name means Valkey's default.
  std::map<std::string, std::string, std::less<>> unimplemented_settings;
};

}  // namespace keyshift::engine
