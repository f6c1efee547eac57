#include "engine/commands/info.hpp"

#include "engine/acl/acl.hpp"
#include "engine/blocking.hpp"
#include "engine/engine.hpp"
#include "engine/memory_usage.hpp"
#include "engine/persistence/aof.hpp"
#include "engine/persistence/snapshots.hpp"
#include "engine/pubsub.hpp"
#include "engine/repl/primary.hpp"
#include "engine/repl/replication_state.hpp"
#include "engine/scripting/script_engine.hpp"
#include "engine/server/config_table.hpp"
#include "engine/tracking.hpp"
#include "engine/util/net_address.hpp"
#include "engine/util/strings.hpp"
#include "engine/watch.hpp"

#include <fmt/format.h>

#include <sys/resource.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <set>

#ifndef KEYSHIFT_VERSION
#  define KEYSHIFT_VERSION "0.0.0"
#endif

namespace keyshift::engine {
namespace {

// The function library bookkeeping of an idle Valkey 8 (dict overheads keyshift lacks).
constexpr uint64_t k_functions_caches = 184;

/// Appends "# Title" sections separated by blank lines, and "name:value" lines.
class InfoWriter {
 public:
  void section(std::string_view title) {
    if (m_sections++ != 0) {
      m_out += "\r\n";
    }
    m_out += "# ";
    m_out += title;
    m_out += "\r\n";
  }
  void field(std::string_view name, std::string_view value) {
    m_out += name;
    m_out += ':';
    m_out += value;
    m_out += "\r\n";
  }
  void field(std::string_view name, uint64_t value) { field(name, std::to_string(value)); }
  void field(std::string_view name, int64_t value) { field(name, std::to_string(value)); }
  void field(std::string_view name, int value) { field(name, std::to_string(value)); }
  /// A value printed with "%.2f" (`suffix` is "%" for the *_perc fields).
  void fixed2(std::string_view name, double value, std::string_view suffix = "") {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%.2f", value);
    field(name, std::string(buf) + std::string(suffix));
  }
  void raw(std::string_view text) { m_out += text; }
  std::string take() { return std::move(m_out); }

 private:
  std::string m_out;
  int m_sections = 0;
};

/// Valkey replaces the characters that would break INFO's format in names it prints.
std::string safe_info_string(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c == '#' || c == ':' || c == '\n' || c == '\r') {
      c = '_';
    }
  }
  return out;
}

std::string cpu_time(const timeval& tv) {
  char buf[48];
  std::snprintf(buf, sizeof(buf), "%ld.%06ld", static_cast<long>(tv.tv_sec),
                static_cast<long>(tv.tv_usec));
  return buf;
}

std::string_view eviction_policy_name(EvictionPolicy p) {
  switch (p) {
    case EvictionPolicy::noeviction:
      return "noeviction";
    case EvictionPolicy::allkeys_lru:
      return "allkeys-lru";
    case EvictionPolicy::allkeys_lfu:
      return "allkeys-lfu";
    case EvictionPolicy::allkeys_random:
      return "allkeys-random";
    case EvictionPolicy::volatile_lru:
      return "volatile-lru";
    case EvictionPolicy::volatile_lfu:
      return "volatile-lfu";
    case EvictionPolicy::volatile_random:
      return "volatile-random";
    case EvictionPolicy::volatile_ttl:
      return "volatile-ttl";
  }
  return "noeviction";
}

std::string setting(const Engine& engine, std::string_view name, std::string_view fallback) {
  const DirectiveSpec* spec = find_directive(name);
  return spec != nullptr ? directive_value(*spec, engine.config()) : std::string(fallback);
}

uint64_t total_system_memory() {
  long pages = sysconf(_SC_PHYS_PAGES);
  long page_size = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page_size > 0
             ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size)
             : 0;
}

/// A stable pseudo build id for this keyshift version (Valkey prints a hash of its build).
std::string build_id() {
  uint64_t h = 1469598103934665603ull;
  for (char c : std::string_view("keyshift-" KEYSHIFT_VERSION)) {
    h = (h ^ static_cast<uint8_t>(c)) * 1099511628211ull;
  }
  char buf[24];
  std::snprintf(buf, sizeof(buf), "%llx", static_cast<unsigned long long>(h));
  return buf;
}

std::string gcc_version() {
#if defined(__GNUC__) && defined(__GNUC_MINOR__) && defined(__GNUC_PATCHLEVEL__)
  return std::to_string(__GNUC__) + "." + std::to_string(__GNUC_MINOR__) + "." +
         std::to_string(__GNUC_PATCHLEVEL__);
#else
  return "0.0.0";
#endif
}

/// Memory figures derived from what the engine counts.
struct MemoryFigures {
  uint64_t used = 0;
  uint64_t rss = 0;
  uint64_t peak = 0;
  uint64_t overhead = 0;
  uint64_t dataset = 0;
  uint64_t clients = 0;
  uint64_t startup = 0;
  uint64_t keys = 0;
};

MemoryFigures memory_figures(Engine& engine) {
  MemoryFigures m;
  m.used = engine.used_memory();
  m.rss = process_rss_bytes();
  m.peak = peak_memory(engine);
  uint64_t tables = 0;
  for (int i = 0; i < engine.db_count(); ++i) {
    Db& db = engine.db(i);
    tables += db.buckets() * sizeof(void*) + db.expires_size() * sizeof(void*);
    m.keys += db.size();
  }
  m.clients = clients_memory(engine);
  m.startup = startup_memory(engine);
  // As Valkey: the overhead is startup + clients + table structures, the dataset the rest.
  m.overhead = std::min(m.used, m.startup + clients_state_memory(engine) + tables);
  m.dataset = m.used - m.overhead;
  return m;
}

void server_section(Engine& engine, InfoWriter& w) {
  static const utsname k_uname = [] {
    utsname u{};
    uname(&u);
    return u;
  }();
  const EngineConfig& cfg = engine.config();
  const ServerIdentity& id = engine.identity();
  int64_t now_us = engine.clock().now_us();
  int64_t uptime = (engine.clock().now_ms() - id.start_time_ms) / 1000;
  w.section("Server");
  w.field("redis_version", k_redis_version);
  w.field("server_name", k_server_name);
  w.field("valkey_version", k_valkey_version);
  w.field("keyshift_version", KEYSHIFT_VERSION);
  w.field("redis_git_sha1", "00000000");
  w.field("redis_git_dirty", 0);
  w.field("redis_build_id", build_id());
  // extended-redis-compatibility renames the field as Valkey 8 does, for tools that parse it.
  w.field(cfg.extended_redis_compatibility ? "redis_mode" : "server_mode", "standalone");
  w.field("os", std::string(k_uname.sysname) + " " + k_uname.release + " " + k_uname.machine);
  w.field("arch_bits", static_cast<int>(sizeof(void*) * 8));
  w.field("monotonic_clock", "POSIX clock_gettime");
  w.field("multiplexing_api", id.multiplexing_api);
  w.field("gcc_version", gcc_version());
  w.field("process_id", static_cast<int64_t>(getpid()));
  w.field("process_supervised", engine.service_notifier() != nullptr
                                    ? engine.service_notifier()->supervisor()
                                    : std::string_view("no"));
  w.field("run_id", id.run_id);
  w.field("tcp_port", id.tcp_port);
  w.field("server_time_usec", now_us);
  w.field("uptime_in_seconds", uptime);
  w.field("uptime_in_days", uptime / (3600 * 24));
  w.field("hz", cfg.hz);
  w.field("configured_hz", cfg.hz);
  w.field("lru_clock", static_cast<uint64_t>(lru_clock(engine.clock().now_ms())));
  w.field("executable", id.executable);
  w.field("config_file", id.config_file);
  w.field("io_threads_active", 0);
  w.field("availability_zone", setting(engine, "availability-zone", ""));
  // Listener lines: index 0 is TCP and 1 the unix socket, as in Valkey's connection types.
  if (cfg.port != 0) {
    std::string line = "listener0:name=tcp";
    for (const std::string& b : cfg.bind) {
      line += ",bind=" + b;
    }
    line += ",port=" + std::to_string(cfg.port) + "\r\n";
    w.raw(line);
  }
  if (!cfg.unixsocket.empty()) {
    w.raw("listener1:name=unix,bind=" + cfg.unixsocket + "\r\n");
  }
}

void clients_section(Engine& engine, InfoWriter& w) {
  uint64_t max_in = 0;
  uint64_t max_out = 0;
  int blocked = 0;
  int timeout_table = 0;
  int pubsub = 0;
  for (const auto& [id, s] : engine.sessions()) {
    max_in = std::max<uint64_t>(max_in, s->query_buffer_bytes);
    max_out = std::max<uint64_t>(max_out, s->out.size());
    blocked += s->has(k_session_blocked) || s->has(k_session_postponed) ? 1 : 0;
    timeout_table += s->has(k_session_blocked) && s->block.deadline_ms != 0 ? 1 : 0;
    pubsub += s->has(k_session_pubsub) ? 1 : 0;
  }
  w.section("Clients");
  w.field("connected_clients", static_cast<uint64_t>(engine.sessions().size()));
  w.field("cluster_connections", 0);
  w.field("maxclients", engine.config().maxclients);
  w.field("client_recent_max_input_buffer", max_in);
  w.field("client_recent_max_output_buffer", max_out);
  w.field("blocked_clients", blocked);
  w.field("tracking_clients", engine.tracking().clients());
  w.field("pubsub_clients", pubsub);
  w.field("watching_clients", static_cast<uint64_t>(engine.watches().watching_clients()));
  w.field("clients_in_timeout_table", timeout_table);
  w.field("total_watched_keys", static_cast<uint64_t>(engine.watches().watched_keys()));
  w.field("total_blocking_keys", static_cast<uint64_t>(engine.blocking().blocking_keys()));
  w.field("total_blocking_keys_on_nokey",
          static_cast<uint64_t>(engine.blocking().blocking_keys_on_nokey()));
}

void memory_section(Engine& engine, InfoWriter& w) {
  MemoryFigures m = memory_figures(engine);
  uint64_t system = total_system_memory();
  double used = static_cast<double>(std::max<uint64_t>(m.used, 1));
  double rss_ratio = m.used != 0 ? static_cast<double>(m.rss) / used : 0;
  int64_t rss_extra = static_cast<int64_t>(m.rss) - static_cast<int64_t>(m.used);
  w.section("Memory");
  w.field("used_memory", m.used);
  w.field("used_memory_human", bytes_to_human(m.used));
  w.field("used_memory_rss", m.rss);
  w.field("used_memory_rss_human", bytes_to_human(m.rss));
  w.field("used_memory_peak", m.peak);
  w.field("used_memory_peak_human", bytes_to_human(m.peak));
  w.fixed2("used_memory_peak_perc",
           m.peak != 0 ? static_cast<double>(m.used) * 100 / static_cast<double>(m.peak) : 0, "%");
  w.field("used_memory_overhead", m.overhead);
  w.field("used_memory_startup", m.startup);
  w.field("used_memory_dataset", m.dataset);
  w.fixed2("used_memory_dataset_perc",
           m.used != 0 ? static_cast<double>(m.dataset) * 100 / used : 0, "%");
  w.field("allocator_allocated", m.used);
  w.field("allocator_active", m.used);
  w.field("allocator_resident", m.rss);
  w.field("allocator_muzzy", 0);
  w.field("total_system_memory", system);
  w.field("total_system_memory_human", bytes_to_human(system));
  ScriptEngine& scripts = engine.scripting();
  uint64_t lua_memory = scripts.eval_memory();
  uint64_t functions_memory = scripts.functions_memory();
  w.field("used_memory_lua", lua_memory);
  w.field("used_memory_vm_eval", lua_memory);
  w.field("used_memory_lua_human", bytes_to_human(lua_memory));
  w.field("used_memory_scripts_eval", 0);
  w.field("number_of_cached_scripts", static_cast<uint64_t>(scripts.script_count()));
  w.field("number_of_functions", static_cast<uint64_t>(scripts.function_count()));
  w.field("number_of_libraries", static_cast<uint64_t>(scripts.libraries().size()));
  w.field("used_memory_vm_functions", functions_memory);
  w.field("used_memory_vm_total", functions_memory + lua_memory);
  w.field("used_memory_vm_total_human", bytes_to_human(functions_memory + lua_memory));
  w.field("used_memory_functions", k_functions_caches);
  w.field("used_memory_scripts", k_functions_caches);
  w.field("used_memory_scripts_human", bytes_to_human(k_functions_caches));
  w.field("maxmemory", engine.config().maxmemory);
  w.field("maxmemory_human", bytes_to_human(engine.config().maxmemory));
  w.field("maxmemory_policy", eviction_policy_name(engine.config().maxmemory_policy));
  w.fixed2("allocator_frag_ratio", 1.0);
  w.field("allocator_frag_bytes", 0);
  w.fixed2("allocator_rss_ratio", 1.0);
  w.field("allocator_rss_bytes", 0);
  w.fixed2("rss_overhead_ratio", rss_ratio);
  w.field("rss_overhead_bytes", rss_extra);
  w.fixed2("mem_fragmentation_ratio", rss_ratio);
  w.field("mem_fragmentation_bytes", rss_extra);
  w.field("mem_not_counted_for_evict", 0);
  w.field("mem_replication_backlog", 0);
  w.field("mem_total_replication_buffers", 0);
  w.field("mem_clients_slaves", 0);
  w.field("mem_clients_normal", m.clients);
  w.field("mem_cluster_links", 0);
  w.field("mem_aof_buffer", engine.aof().buffer_length());
#ifdef KEYSHIFT_HAVE_MIMALLOC
  w.field("mem_allocator", "mimalloc");
#else
  w.field("mem_allocator", "libc");
#endif
  w.field("mem_overhead_db_hashtable_rehashing", 0);
  w.field("active_defrag_running", 0);
  w.field("lazyfree_pending_objects", 0);
  w.field("lazyfreed_objects", 0);
}

void persistence_section(Engine& engine, InfoWriter& w) {
  const Snapshots& snaps = engine.snapshots();
  int64_t now_s = engine.clock().now_ms() / 1000;
  w.section("Persistence");
  w.field("loading", 0);
  w.field("async_loading", 0);
  w.field("current_cow_peak", 0);
  w.field("current_cow_size", 0);
  w.field("current_cow_size_age", 0);
  w.fixed2("current_fork_perc", 0);
  w.field("current_save_keys_processed", 0);
  w.field("current_save_keys_total", 0);
  w.field("rdb_changes_since_last_save", snaps.dirty());
  w.field("rdb_bgsave_in_progress", snaps.bgsave_in_progress() ? 1 : 0);
  w.field("rdb_last_save_time", snaps.last_save_s());
  w.field("rdb_last_bgsave_status", snaps.last_bgsave_ok() ? "ok" : "err");
  w.field("rdb_last_bgsave_time_sec", snaps.last_bgsave_duration_s());
  w.field("rdb_current_bgsave_time_sec", snaps.current_bgsave_s(now_s));
  w.field("rdb_saves", snaps.saves());
  w.field("rdb_last_cow_size", 0);
  w.field("rdb_last_load_keys_expired", snaps.last_load_keys_expired());
  w.field("rdb_last_load_keys_loaded", snaps.last_load_keys_loaded());
  const Aof& aof = engine.aof();
  w.field("aof_enabled", aof.on() ? 1 : 0);
  w.field("aof_rewrite_in_progress", aof.rewrite_in_progress() ? 1 : 0);
  w.field("aof_rewrite_scheduled", aof.rewrite_scheduled() ? 1 : 0);
  w.field("aof_last_rewrite_time_sec", aof.last_rewrite_time_s());
  w.field("aof_current_rewrite_time_sec", aof.current_rewrite_time_s(now_s));
  w.field("aof_last_bgrewrite_status", aof.last_rewrite_ok() ? "ok" : "err");
  w.field("aof_rewrites", aof.rewrites());
  w.field("aof_rewrites_consecutive_failures", aof.rewrites_consecutive_failures());
  w.field("aof_last_write_status", aof.last_write_ok() ? "ok" : "err");
  w.field("aof_last_cow_size", 0);
  w.field("module_fork_in_progress", 0);
  w.field("module_fork_last_cow_size", 0);
  if (engine.config().appendonly) {
    w.field("aof_current_size", aof.current_size());
    w.field("aof_base_size", aof.base_size());
    w.field("aof_pending_rewrite", aof.rewrite_scheduled() ? 1 : 0);
    w.field("aof_buffer_length", aof.buffer_length());
    w.field("aof_pending_bio_fsync", aof.fsync_in_progress() ? 1 : 0);
    w.field("aof_delayed_fsync", aof.delayed_fsync());
  }
}

void stats_section(Engine& engine, InfoWriter& w) {
  const EngineStats& st = engine.stats();
  KeyspaceShared& ks = engine.keyspace();
  uint64_t command_usec = 0;
  for (const Command* c : engine.registry().commands()) {
    command_usec += c->stats.usec;
    for (const Command* sub : c->subcommands) {
      command_usec += sub->stats.usec;
    }
  }
  w.section("Stats");
  w.field("total_connections_received", st.total_connections_received);
  w.field("total_commands_processed", st.total_commands_processed);
  w.field("instantaneous_ops_per_sec", engine.instantaneous_ops_per_sec());
  w.field("total_net_input_bytes", st.total_net_input_bytes);
  w.field("total_net_output_bytes", st.total_net_output_bytes);
  w.field("total_net_repl_input_bytes", 0);
  w.field("total_net_repl_output_bytes", 0);
  w.fixed2(
      "instantaneous_input_kbps",
      static_cast<double>(static_cast<float>(engine.instantaneous_input_bytes_per_sec()) / 1024));
  w.fixed2(
      "instantaneous_output_kbps",
      static_cast<double>(static_cast<float>(engine.instantaneous_output_bytes_per_sec()) / 1024));
  w.fixed2("instantaneous_input_repl_kbps", 0);
  w.fixed2("instantaneous_output_repl_kbps", 0);
  w.field("rejected_connections", st.rejected_connections);
  w.field("sync_full", engine.primary().sync_full());
  w.field("sync_partial_ok", engine.primary().sync_partial_ok());
  w.field("sync_partial_err", engine.primary().sync_partial_err());
  w.field("expired_keys", ks.expired_keys);
  w.fixed2("expired_stale_perc", static_cast<double>(ks.expired_stale_perc_permille) / 10.0);
  w.field("expired_time_cap_reached_count", st.expired_time_cap_reached_count);
  w.field("expire_cycle_cpu_milliseconds", ks.expire_cycle_time_used_us / 1000);
  w.field("evicted_keys", st.evicted_keys);
  w.field("evicted_clients", st.evicted_clients);
  w.field("evicted_scripts", engine.scripting().evicted_scripts());
  w.field("total_eviction_exceeded_time", st.total_eviction_exceeded_time_us / 1000);
  w.field("current_eviction_exceeded_time", 0);
  w.field("keyspace_hits", ks.keyspace_hits);
  w.field("keyspace_misses", ks.keyspace_misses);
  w.field("pubsub_channels", static_cast<uint64_t>(engine.pubsub().channel_count()));
  w.field("pubsub_patterns", static_cast<uint64_t>(engine.pubsub().pattern_count()));
  w.field("pubsubshard_channels", static_cast<uint64_t>(engine.pubsub().shard_channel_count()));
  w.field("latest_fork_usec", 0);
  w.field("total_forks", 0);
  w.field("migrate_cached_sockets", 0);
  w.field("slave_expires_tracked_keys", 0);
  w.field("active_defrag_hits", 0);
  w.field("active_defrag_misses", 0);
  w.field("active_defrag_key_hits", 0);
  w.field("active_defrag_key_misses", 0);
  w.field("total_active_defrag_time", 0);
  w.field("current_active_defrag_time", 0);
  w.field("tracking_total_keys", engine.tracking().total_keys());
  w.field("tracking_total_items", engine.tracking().total_items());
  w.field("tracking_total_prefixes", engine.tracking().total_prefixes());
  w.field("unexpected_error_replies", st.unexpected_error_replies);
  w.field("total_error_replies", st.total_error_replies);
  w.field("dump_payload_sanitizations", 0);
  w.field("total_reads_processed", 0);
  w.field("total_writes_processed", 0);
  w.field("io_threaded_reads_processed", 0);
  w.field("io_threaded_writes_processed", 0);
  w.field("io_threaded_freed_objects", 0);
  w.field("io_threaded_poll_processed", 0);
  w.field("io_threaded_total_prefetch_batches", 0);
  w.field("io_threaded_total_prefetch_entries", 0);
  w.field("client_query_buffer_limit_disconnections", st.client_query_buffer_limit_disconnections);
  w.field("client_output_buffer_limit_disconnections",
          st.client_output_buffer_limit_disconnections);
  w.field("reply_buffer_shrinks", 0);
  w.field("reply_buffer_expands", 0);
  w.field("eventloop_cycles", 0);
  w.field("eventloop_duration_sum", 0);
  w.field("eventloop_duration_cmd_sum", command_usec);
  w.field("instantaneous_eventloop_cycles_per_sec", 0);
  w.field("instantaneous_eventloop_duration_usec", 0);
  const acl::Users& users = engine.users();
  w.field("acl_access_denied_auth", users.denied_auth);
  w.field("acl_access_denied_cmd", users.denied_cmd);
  w.field("acl_access_denied_key", users.denied_key);
  w.field("acl_access_denied_channel", users.denied_channel);
}

void replication_section(Engine& engine, InfoWriter& w) {
  w.section("Replication");
  const ReplicationState& repl = engine.replication();
  w.field("role", repl.is_replica() ? "slave" : "master");
  if (repl.is_replica()) {
    // Offsets of the link's client, or 1 before there was one (Valkey's server.primary or
    // cached_primary).
    bool linked = repl.state() == ReplLinkState::sync || repl.state() == ReplLinkState::connected;
    bool known = linked || repl.has_history();
    int64_t now_s = engine.clock().now_ms() / 1000;
    w.field("master_host", repl.primary_host());
    w.field("master_port", repl.primary_port());
    w.field("master_link_status", repl.state() == ReplLinkState::connected ? "up" : "down");
    w.field("master_last_io_seconds_ago", linked ? now_s - repl.last_io_ms() / 1000 : -1);
    w.field("master_sync_in_progress", repl.state() == ReplLinkState::sync ? 1 : 0);
    w.field("slave_read_repl_offset", known ? static_cast<int64_t>(repl.read_offset()) : 1);
    w.field("slave_repl_offset", known ? static_cast<int64_t>(repl.offset()) : 1);
    w.field("replicas_repl_buffer_size", 0);
    w.field("replicas_repl_buffer_peak", 0);
    if (repl.state() == ReplLinkState::sync) {
      // A diskless payload's size is unknown: Valkey shows -1 total.
      int64_t total = repl.sync_total();
      int64_t read = static_cast<int64_t>(repl.sync_read());
      double perc = total > 0 ? static_cast<double>(read) / static_cast<double>(total) * 100 : 0.0;
      w.field("master_sync_total_bytes", total);
      w.field("master_sync_read_bytes", read);
      w.field("master_sync_left_bytes", total - read);
      w.field("master_sync_perc", fmt::format("{:.2f}", perc));
      w.field("master_sync_last_io_seconds_ago", now_s - repl.last_io_ms() / 1000);
    }
    if (repl.state() != ReplLinkState::connected) {
      w.field("master_link_down_since_seconds",
              repl.down_since_ms() != 0 ? now_s - repl.down_since_ms() / 1000 : -1);
    }
    w.field("slave_priority", setting(engine, "replica-priority", "100"));
    w.field("slave_read_only", setting(engine, "replica-read-only", "yes") == "yes" ? 1 : 0);
    w.field("replica_announced", setting(engine, "replica-announced", "yes") == "yes" ? 1 : 0);
  }
  const ReplicationPrimary& primary = engine.primary();
  std::vector<const ReplicaPeer*> replicas = primary.replicas();
  w.field("connected_slaves", static_cast<int64_t>(replicas.size()));
  if (setting(engine, "min-replicas-to-write", "0") != "0" &&
      setting(engine, "min-replicas-max-lag", "10") != "0") {
    w.field("min_slaves_good_slaves", primary.good_replicas());
  }
  int64_t now_s = engine.clock().now_ms() / 1000;
  int index = 0;
  for (const ReplicaPeer* p : replicas) {
    auto it = engine.sessions().find(p->session_id);
    if (it == engine.sessions().end()) {
      continue;
    }
    std::string ip = p->ip.empty() ? std::string(addr_ip(it->second->addr)) : p->ip;
    bool online = p->state == ReplicaState::online;
    std::string_view state = online                                ? "online"
                             : p->state == ReplicaState::send_bulk ? "send_bulk"
                                                                   : "wait_bgsave";
    w.field(
        "slave" + std::to_string(index++),
        fmt::format("ip={},port={},state={},offset={},lag={},type=replica", ip, p->listening_port,
                    state, p->ack_offset, online ? now_s - p->ack_time_s : 0));
  }
  w.field("replicas_waiting_psync", 0);
  w.field("master_failover_state", "no-failover");
  w.field("master_replid", repl.replid());
  w.field("master_replid2", repl.replid2());
  w.field("master_repl_offset", static_cast<int64_t>(repl.offset()));
  w.field("second_repl_offset", repl.second_offset());
  const ReplBacklog* backlog = primary.backlog();
  w.field("repl_backlog_active", backlog != nullptr ? 1 : 0);
  w.field("repl_backlog_size", setting(engine, "repl-backlog-size", "1048576"));
  w.field("repl_backlog_first_byte_offset",
          backlog != nullptr ? static_cast<int64_t>(backlog->first_byte_offset()) : 0);
  w.field("repl_backlog_histlen",
          backlog != nullptr ? static_cast<int64_t>(backlog->histlen()) : 0);
}

void cpu_section(InfoWriter& w) {
  rusage self{};
  rusage children{};
  rusage thread{};
  getrusage(RUSAGE_SELF, &self);
  getrusage(RUSAGE_CHILDREN, &children);
  getrusage(RUSAGE_THREAD, &thread);
  w.section("CPU");
  w.field("used_cpu_sys", cpu_time(self.ru_stime));
  w.field("used_cpu_user", cpu_time(self.ru_utime));
  w.field("used_cpu_sys_children", cpu_time(children.ru_stime));
  w.field("used_cpu_user_children", cpu_time(children.ru_utime));
  w.field("used_cpu_sys_main_thread", cpu_time(thread.ru_stime));
  w.field("used_cpu_user_main_thread", cpu_time(thread.ru_utime));
}

void command_stats_line(const Command& c, InfoWriter& w) {
  const CommandStats& s = c.stats;
  if (s.calls == 0 && s.failed_calls == 0 && s.rejected_calls == 0) {
    return;
  }
  // Valkey divides as float, then prints with two decimals.
  float per_call = s.calls == 0 ? 0.0f : static_cast<float>(s.usec) / static_cast<float>(s.calls);
  char buf[256];
  std::snprintf(
      buf, sizeof(buf),
      ":calls=%llu,usec=%llu,usec_per_call=%.2f,rejected_calls=%llu,failed_calls=%llu\r\n",
      static_cast<unsigned long long>(s.calls), static_cast<unsigned long long>(s.usec),
      static_cast<double>(per_call), static_cast<unsigned long long>(s.rejected_calls),
      static_cast<unsigned long long>(s.failed_calls));
  w.raw("cmdstat_" + safe_info_string(c.full_name) + buf);
}

void commandstats_section(Engine& engine, InfoWriter& w) {
  w.section("Commandstats");
  for (const Command* c : engine.registry().live_commands()) {
    command_stats_line(*c, w);
    for (const Command* sub : c->subcommands) {
      command_stats_line(*sub, w);
    }
  }
}

void errorstats_section(Engine& engine, InfoWriter& w) {
  w.section("Errorstats");
  for (const auto& [code, count] : engine.stats().error_counts) {
    w.raw("errorstat_" + safe_info_string(code) + ":count=" + std::to_string(count) + "\r\n");
  }
}

void keyspace_section(Engine& engine, InfoWriter& w) {
  w.section("Keyspace");
  for (int i = 0; i < engine.db_count(); ++i) {
    Db& db = engine.db(i);
    if (db.size() == 0 && db.expires_size() == 0) {
      continue;
    }
    w.raw("db" + std::to_string(i) + ":keys=" + std::to_string(db.size()) + ",expires=" +
          std::to_string(db.expires_size()) + ",avg_ttl=" + std::to_string(db.avg_ttl()) + "\r\n");
  }
}

}  // namespace

std::string bytes_to_human(uint64_t n) {
  static constexpr const char* k_units = "KMGTP";
  char buf[64];
  if (n < 1024) {
    std::snprintf(buf, sizeof(buf), "%lluB", static_cast<unsigned long long>(n));
    return buf;
  }
  double d = static_cast<double>(n);
  uint64_t scale = 1024;
  for (int i = 0; i < 5; ++i) {
    if (i == 4 || n < scale * 1024) {
      std::snprintf(buf, sizeof(buf), "%.2f%c", d / static_cast<double>(scale), k_units[i]);
      return buf;
    }
    scale *= 1024;
  }
  return buf;
}

std::string generate_info(Engine& engine, std::span<const std::string_view> sections) {
  static constexpr std::string_view k_default[] = {
      "server", "clients",     "memory",     "persistence", "stats",   "replication",
      "cpu",    "module_list", "errorstats", "cluster",     "keyspace"};
  std::set<std::string> wanted;
  bool all = false;
  if (sections.empty()) {
    wanted.insert(std::begin(k_default), std::end(k_default));
  }
  for (std::string_view s : sections) {
    std::string name = to_lower(s);
    if (name == "default") {
      wanted.insert(std::begin(k_default), std::end(k_default));
    } else if (name == "all" || name == "everything") {
      all = true;
    } else {
      wanted.insert(std::move(name));
    }
  }
  auto want = [&](std::string_view name) { return all || wanted.count(std::string(name)) != 0; };

  InfoWriter w;
  if (want("server")) {
    server_section(engine, w);
  }
  if (want("clients")) {
    clients_section(engine, w);
  }
  if (want("memory")) {
    memory_section(engine, w);
  }
  if (want("persistence")) {
    persistence_section(engine, w);
  }
  if (want("stats")) {
    stats_section(engine, w);
  }
  if (want("replication")) {
    replication_section(engine, w);
  }
  if (want("cpu")) {
    cpu_section(w);
  }
  if (want("module_list") || want("modules")) {
    w.section("Modules");
  }
  if (want("commandstats")) {
    commandstats_section(engine, w);
  }
  if (want("errorstats")) {
    errorstats_section(engine, w);
  }
  if (want("latencystats")) {
    // keyshift keeps no latency histograms, which reads as latency-tracking off.
    w.section("Latencystats");
  }
  if (want("cluster")) {
    w.section("Cluster");
    w.field("cluster_enabled", 0);
  }
  if (want("keyspace")) {
    keyspace_section(engine, w);
  }
  if (wanted.count("debug") != 0) {
    w.section("Debug");
    w.field("eventloop_duration_aof_sum", 0);
    w.field("eventloop_duration_cron_sum", 0);
    w.field("eventloop_duration_max", 0);
    w.field("eventloop_cmd_per_cycle_max", 0);
  }
  return w.take();
}

}  // namespace keyshift::engine
