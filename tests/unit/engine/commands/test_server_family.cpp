#include "engine/commands/command_docs.hpp"
#include "engine/commands/errors.hpp"
#include "engine/commands/info.hpp"
#include "engine/engine.hpp"
#include "engine/server/config_file.hpp"
#include "engine/server/config_table.hpp"
#include "engine/util/clock.hpp"

#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace {

using keyshift::engine::Engine;
using keyshift::engine::EngineConfig;
using keyshift::engine::ManualClock;
using keyshift::engine::RespValue;
using keyshift::engine::Session;
namespace ks = keyshift::engine;
namespace errors = keyshift::engine::errors;
using Type = RespValue::Type;

/// An engine on a manual clock with one client session `me`.
struct Fixture {
  explicit Fixture(EngineConfig config = {}) : engine(std::move(config), clock) {}

  RespValue run(std::initializer_list<std::string_view> argv) { return run_on(me, argv); }
  RespValue run_on(Session& s, std::initializer_list<std::string_view> argv) {
    std::vector<std::string_view> v(argv);
    return engine.run(s, v);
  }
  RespValue run_vec(const std::vector<std::string>& argv) {
    std::vector<std::string_view> v(argv.begin(), argv.end());
    return engine.run(me, v);
  }
  /// INFO's text for `sections`.
  std::string info(std::initializer_list<std::string_view> sections = {}) {
    std::vector<std::string_view> v{"INFO"};
    v.insert(v.end(), sections.begin(), sections.end());
    RespValue r = engine.run(me, v);
    REQUIRE(r.type == Type::bulk);
    return r.str;
  }

  ManualClock clock;
  Engine engine;
  Session& me = engine.open_session(nullptr);
};

/// The settings valkey.conf at `path` gives, as `keyshift serve` would read them.
EngineConfig load_config_file(const std::string& path) {
  ks::RealConfigFilesystem real;
  auto directives = ks::read_config_file(real, path);
  REQUIRE(directives);
  EngineConfig loaded;
  std::vector<std::string> warnings;
  CHECK_FALSE(ks::apply_directives(*directives, loaded, warnings).has_value());
  return loaded;
}

EngineConfig debug_enabled() {
  EngineConfig c;
  c.enable_debug_command = ks::EnableMode::yes;
  return c;
}

bool is_ok(const RespValue& v) {
  return v.type == Type::simple && v.str == "OK";
}
bool is_nil(const RespValue& v) {
  return v.type == Type::null;
}
bool is_int(const RespValue& v, int64_t n) {
  return v.type == Type::integer && v.integer == n;
}
bool is_bulk(const RespValue& v, std::string_view s) {
  return v.type == Type::bulk && v.str == s;
}
bool is_simple(const RespValue& v, std::string_view s) {
  return v.type == Type::simple && v.str == s;
}
bool is_err(const RespValue& v, std::string_view s) {
  return v.is_error() && v.str == s;
}

/// The strings of an array of bulk or simple strings.
std::vector<std::string> strings(const RespValue& v) {
  std::vector<std::string> out;
  for (const RespValue& e : v.elements) {
    out.push_back(e.str);
  }
  return out;
}

/// The value of `key` in a RESP2 map reply (a flat array), or nullptr.
const RespValue* field(const RespValue& map, std::string_view key) {
  for (size_t i = 0; i + 1 < map.elements.size(); i += 2) {
    if (map.elements[i].str == key) {
      return &map.elements[i + 1];
    }
  }
  return nullptr;
}

/// The keys of a RESP2 map reply, in order.
std::vector<std::string> map_keys(const RespValue& map) {
  std::vector<std::string> out;
  for (size_t i = 0; i < map.elements.size(); i += 2) {
    out.push_back(map.elements[i].str);
  }
  return out;
}

/// INFO text as its "# Section" headers and "name:value" pairs, in order.
struct InfoText {
  std::vector<std::string> sections;
  std::vector<std::pair<std::string, std::string>> fields;

  explicit InfoText(const std::string& text) {
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
      REQUIRE(!line.empty());
      REQUIRE(line.back() == '\r');
      line.pop_back();
      if (line.empty()) {
        continue;
      }
      if (line.starts_with("# ")) {
        sections.push_back(line.substr(2));
        continue;
      }
      size_t colon = line.find(':');
      REQUIRE(colon != std::string::npos);
      fields.emplace_back(line.substr(0, colon), line.substr(colon + 1));
    }
  }
  std::string get(std::string_view name) const {
    for (const auto& [k, v] : fields) {
      if (k == name) {
        return v;
      }
    }
    return "<missing " + std::string(name) + ">";
  }
  bool has(std::string_view name) const {
    for (const auto& [k, v] : fields) {
      if (k == name) {
        return true;
      }
    }
    return false;
  }
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& [k, v] : fields) {
      out.push_back(k);
    }
    return out;
  }
};

/// The field names of a CLIENT LIST line, in order.
std::vector<std::string> client_line_keys(std::string_view line) {
  std::vector<std::string> keys;
  std::istringstream in{std::string(line)};
  std::string token;
  while (in >> token) {
    keys.push_back(token.substr(0, token.find('=')));
  }
  return keys;
}

/// The value of `name=` in a CLIENT LIST line.
std::string client_field(std::string_view line, std::string_view name) {
  std::istringstream in{std::string(line)};
  std::string token;
  std::string prefix = std::string(name) + "=";
  while (in >> token) {
    if (token.starts_with(prefix)) {
      return token.substr(prefix.size());
    }
  }
  return "<missing>";
}

/// The lines of a CLIENT LIST reply.
std::vector<std::string> client_lines(const RespValue& v) {
  std::vector<std::string> out;
  std::istringstream in(v.str);
  std::string line;
  while (std::getline(in, line)) {
    out.push_back(line);
  }
  return out;
}

}  // namespace

TEST_SUITE("engine::server_family") {
  // --- INFO -----------------------------------------------------------------------------

  TEST_CASE("INFO without arguments returns Valkey's default sections in order") {
    Fixture f;
    InfoText info(f.info());
    CHECK(info.sections == std::vector<std::string>{"Server", "Clients", "Memory", "Persistence",
                                                    "Stats", "Replication", "CPU", "Modules",
                                                    "Errorstats", "Cluster", "Keyspace"});
    CHECK(InfoText(f.info({"default"})).sections == info.sections);
  }

  TEST_CASE("INFO sections are separated by one blank line and every line ends in CRLF") {
    Fixture f;
    std::string text = f.info({"cpu", "cluster"});
    CHECK(text.starts_with("# CPU\r\nused_cpu_sys:"));
    CHECK(text.find("\r\n\r\n# Cluster\r\ncluster_enabled:0\r\n") != std::string::npos);
    CHECK(text.ends_with("cluster_enabled:0\r\n"));
  }

  TEST_CASE("INFO server names Valkey 8, the Redis version it claims and keyshift's version") {
    Fixture f;
    InfoText info(f.info({"server"}));
    CHECK(info.get("redis_version") == "7.2.4");
    CHECK(info.get("server_name") == "valkey");
    CHECK(info.get("valkey_version") == "8.0.1");
    CHECK(info.get("keyshift_version") == KEYSHIFT_VERSION);
    CHECK(info.get("server_mode") == "standalone");
    CHECK(info.get("process_id") == std::to_string(getpid()));
    CHECK(info.get("run_id").size() == 40);
    CHECK(info.get("tcp_port") == "6379");
    CHECK(info.get("listener0") == "name=tcp,bind=127.0.0.1,bind=-::1,port=6379");
  }

  TEST_CASE("extended-redis-compatibility makes HELLO and INFO present Redis 7.2.4") {
    Fixture f;
    REQUIRE(is_ok(f.run({"CONFIG", "SET", "extended-redis-compatibility", "yes"})));
    InfoText info(f.info({"server"}));
    CHECK(info.get("redis_mode") == "standalone");
    CHECK_FALSE(info.has("server_mode"));
    RespValue hello = f.run({"HELLO", "3"});
    CHECK(is_bulk(*field(hello, "server"), "redis"));
    CHECK(is_bulk(*field(hello, "version"), "7.2.4"));
    REQUIRE(is_ok(f.run({"CONFIG", "SET", "extended-redis-compatibility", "no"})));
    hello = f.run({"HELLO", "2"});
    CHECK(is_bulk(*field(hello, "server"), "valkey"));
    CHECK(is_bulk(*field(hello, "version"), "8.0.1"));
    InfoText plain(f.info({"server"}));
    CHECK(plain.get("server_mode") == "standalone");
    CHECK_FALSE(plain.has("redis_mode"));
  }

  TEST_CASE("INFO server lists its fields in Valkey 8's order") {
    Fixture f;
    std::vector<std::string> expected{"redis_version",
                                      "server_name",
                                      "valkey_version",
                                      "keyshift_version",
                                      "redis_git_sha1",
                                      "redis_git_dirty",
                                      "redis_build_id",
                                      "server_mode",
                                      "os",
                                      "arch_bits",
                                      "monotonic_clock",
                                      "multiplexing_api",
                                      "gcc_version",
                                      "process_id",
                                      "process_supervised",
                                      "run_id",
                                      "tcp_port",
                                      "server_time_usec",
                                      "uptime_in_seconds",
                                      "uptime_in_days",
                                      "hz",
                                      "configured_hz",
                                      "lru_clock",
                                      "executable",
                                      "config_file",
                                      "io_threads_active",
                                      "availability_zone",
                                      "listener0"};
    CHECK(InfoText(f.info({"server"})).names() == expected);
  }

  TEST_CASE("INFO clients, persistence and replication list Valkey 8's fields in order") {
    Fixture f;
    CHECK(InfoText(f.info({"clients"})).names() ==
          std::vector<std::string>{"connected_clients", "cluster_connections", "maxclients",
                                   "client_recent_max_input_buffer",
                                   "client_recent_max_output_buffer", "blocked_clients",
                                   "tracking_clients", "pubsub_clients", "watching_clients",
                                   "clients_in_timeout_table", "total_watched_keys",
                                   "total_blocking_keys", "total_blocking_keys_on_nokey"});
    InfoText persistence(f.info({"persistence"}));
    CHECK(persistence.names().front() == "loading");
    CHECK(persistence.names().back() == "module_fork_last_cow_size");
    CHECK(persistence.names().size() == 30);
    CHECK(persistence.get("rdb_last_save_time") == "1700000000");
    CHECK(InfoText(f.info({"replication"})).names() ==
          std::vector<std::string>{"role", "connected_slaves", "replicas_waiting_psync",
                                   "master_failover_state", "master_replid", "master_replid2",
                                   "master_repl_offset", "second_repl_offset",
                                   "repl_backlog_active", "repl_backlog_size",
                                   "repl_backlog_first_byte_offset", "repl_backlog_histlen"});
  }

  TEST_CASE("INFO stats and memory list Valkey 8's fields in order") {
    Fixture f;
    CHECK(InfoText(f.info({"stats"})).names() ==
          std::vector<std::string>{"total_connections_received",
                                   "total_commands_processed",
                                   "instantaneous_ops_per_sec",
                                   "total_net_input_bytes",
                                   "total_net_output_bytes",
                                   "total_net_repl_input_bytes",
                                   "total_net_repl_output_bytes",
                                   "instantaneous_input_kbps",
                                   "instantaneous_output_kbps",
                                   "instantaneous_input_repl_kbps",
                                   "instantaneous_output_repl_kbps",
                                   "rejected_connections",
                                   "sync_full",
                                   "sync_partial_ok",
                                   "sync_partial_err",
                                   "expired_keys",
                                   "expired_stale_perc",
                                   "expired_time_cap_reached_count",
                                   "expire_cycle_cpu_milliseconds",
                                   "evicted_keys",
                                   "evicted_clients",
                                   "evicted_scripts",
                                   "total_eviction_exceeded_time",
                                   "current_eviction_exceeded_time",
                                   "keyspace_hits",
                                   "keyspace_misses",
                                   "pubsub_channels",
                                   "pubsub_patterns",
                                   "pubsubshard_channels",
                                   "latest_fork_usec",
                                   "total_forks",
                                   "migrate_cached_sockets",
                                   "slave_expires_tracked_keys",
                                   "active_defrag_hits",
                                   "active_defrag_misses",
                                   "active_defrag_key_hits",
                                   "active_defrag_key_misses",
                                   "total_active_defrag_time",
                                   "current_active_defrag_time",
                                   "tracking_total_keys",
                                   "tracking_total_items",
                                   "tracking_total_prefixes",
                                   "unexpected_error_replies",
                                   "total_error_replies",
                                   "dump_payload_sanitizations",
                                   "total_reads_processed",
                                   "total_writes_processed",
                                   "io_threaded_reads_processed",
                                   "io_threaded_writes_processed",
                                   "io_threaded_freed_objects",
                                   "io_threaded_poll_processed",
                                   "io_threaded_total_prefetch_batches",
                                   "io_threaded_total_prefetch_entries",
                                   "client_query_buffer_limit_disconnections",
                                   "client_output_buffer_limit_disconnections",
                                   "reply_buffer_shrinks",
                                   "reply_buffer_expands",
                                   "eventloop_cycles",
                                   "eventloop_duration_sum",
                                   "eventloop_duration_cmd_sum",
                                   "instantaneous_eventloop_cycles_per_sec",
                                   "instantaneous_eventloop_duration_usec",
                                   "acl_access_denied_auth",
                                   "acl_access_denied_cmd",
                                   "acl_access_denied_key",
                                   "acl_access_denied_channel"});
    InfoText memory(f.info({"memory"}));
    CHECK(memory.names() == std::vector<std::string>{"used_memory",
                                                     "used_memory_human",
                                                     "used_memory_rss",
                                                     "used_memory_rss_human",
                                                     "used_memory_peak",
                                                     "used_memory_peak_human",
                                                     "used_memory_peak_perc",
                                                     "used_memory_overhead",
                                                     "used_memory_startup",
                                                     "used_memory_dataset",
                                                     "used_memory_dataset_perc",
                                                     "allocator_allocated",
                                                     "allocator_active",
                                                     "allocator_resident",
                                                     "allocator_muzzy",
                                                     "total_system_memory",
                                                     "total_system_memory_human",
                                                     "used_memory_lua",
                                                     "used_memory_vm_eval",
                                                     "used_memory_lua_human",
                                                     "used_memory_scripts_eval",
                                                     "number_of_cached_scripts",
                                                     "number_of_functions",
                                                     "number_of_libraries",
                                                     "used_memory_vm_functions",
                                                     "used_memory_vm_total",
                                                     "used_memory_vm_total_human",
                                                     "used_memory_functions",
                                                     "used_memory_scripts",
                                                     "used_memory_scripts_human",
                                                     "maxmemory",
                                                     "maxmemory_human",
                                                     "maxmemory_policy",
                                                     "allocator_frag_ratio",
                                                     "allocator_frag_bytes",
                                                     "allocator_rss_ratio",
                                                     "allocator_rss_bytes",
                                                     "rss_overhead_ratio",
                                                     "rss_overhead_bytes",
                                                     "mem_fragmentation_ratio",
                                                     "mem_fragmentation_bytes",
                                                     "mem_not_counted_for_evict",
                                                     "mem_replication_backlog",
                                                     "mem_total_replication_buffers",
                                                     "mem_clients_slaves",
                                                     "mem_clients_normal",
                                                     "mem_cluster_links",
                                                     "mem_aof_buffer",
                                                     "mem_allocator",
                                                     "mem_overhead_db_hashtable_rehashing",
                                                     "active_defrag_running",
                                                     "lazyfree_pending_objects",
                                                     "lazyfreed_objects"});
    CHECK(memory.get("maxmemory_policy") == "noeviction");
  }

  TEST_CASE("INFO takes several section names in any case and prints them in Valkey's order") {
    Fixture f;
    InfoText info(f.info({"KEYSPACE", "Cpu", "cpu"}));
    CHECK(info.sections == std::vector<std::string>{"CPU", "Keyspace"});
  }

  TEST_CASE("INFO all adds commandstats and latencystats, everything too, debug only by name") {
    Fixture f;
    std::vector<std::string> all{"Server",       "Clients", "Memory",  "Persistence",  "Stats",
                                 "Replication",  "CPU",     "Modules", "Commandstats", "Errorstats",
                                 "Latencystats", "Cluster", "Keyspace"};
    CHECK(InfoText(f.info({"all"})).sections == all);
    CHECK(InfoText(f.info({"everything"})).sections == all);
    CHECK(InfoText(f.info({"debug"})).sections == std::vector<std::string>{"Debug"});
    CHECK(InfoText(f.info({"modules"})).sections == std::vector<std::string>{"Modules"});
  }

  TEST_CASE("INFO of an unknown section is an empty text") {
    Fixture f;
    CHECK(f.info({"nosuchsection"}).empty());
  }

  TEST_CASE("INFO keyspace shows one line per non-empty database") {
    Fixture f;
    CHECK(InfoText(f.info({"keyspace"})).fields.empty());
    f.run({"SET", "a", "1"});
    f.run({"SET", "b", "2", "EX", "100"});
    f.run({"SELECT", "3"});
    f.run({"SET", "c", "3"});
    InfoText info(f.info({"keyspace"}));
    CHECK(info.names() == std::vector<std::string>{"db0", "db3"});
    CHECK(info.get("db0").starts_with("keys=2,expires=1,avg_ttl="));
    CHECK(info.get("db3") == "keys=1,expires=0,avg_ttl=0");
  }

  TEST_CASE("INFO keyspace avg_ttl stays positive when keys expire near the end of time") {
    // The active cycle sums the sampled TTLs: a few keys at PEXPIREAT 2^63 - 2 overflowed it
    // (UBSan stopped the server on a replayed MONITOR log).
    Fixture f;
    for (int i = 0; i < 30; ++i) {
      f.run({"SET", "k" + std::to_string(i), "v"});
      f.run({"PEXPIREAT", "k" + std::to_string(i), "9223372036854775806"});
    }
    for (int round = 0; round < 5; ++round) {
      f.clock.advance_ms(100);
      f.engine.cron();
    }
    std::string db0 = InfoText(f.info({"keyspace"})).get("db0");
    auto at = db0.find("avg_ttl=");
    REQUIRE(at != std::string::npos);
    CHECK(std::stoll(db0.substr(at + 8)) > 0);
  }

  TEST_CASE("INFO stats counts commands that ran, keyspace hits and misses, expired keys") {
    Fixture f;
    f.run({"SET", "k", "v", "PX", "10"});
    f.run({"GET", "k"});
    f.run({"GET", "missing"});
    f.run({"NOSUCHCOMMAND"});
    f.run({"GET"});
    f.clock.advance_ms(20);
    f.run({"GET", "k"});
    InfoText info(f.info({"stats"}));
    // Rejected commands and the INFO asking are not counted, as in Valkey.
    CHECK(info.get("total_commands_processed") == "4");
    CHECK(info.get("keyspace_hits") == "1");
    CHECK(info.get("keyspace_misses") == "2");
    CHECK(info.get("expired_keys") == "1");
    CHECK(info.get("total_error_replies") == "2");
  }

  TEST_CASE("INFO server uptime follows the clock") {
    Fixture f;
    f.clock.advance_ms(2 * 86400 * 1000 + 5000);
    InfoText info(f.info({"server"}));
    CHECK(info.get("uptime_in_seconds") == std::to_string(2 * 86400 + 5));
    CHECK(info.get("uptime_in_days") == "2");
    CHECK(info.get("server_time_usec") == std::to_string(f.clock.now_us()));
  }

  TEST_CASE("INFO instantaneous_ops_per_sec averages the samples cron takes every 100 ms") {
    Fixture f;
    f.engine.cron();
    for (int sample = 0; sample < 16; ++sample) {
      for (int i = 0; i < 50; ++i) {
        f.run({"PING"});
      }
      f.clock.advance_ms(100);
      f.engine.cron();
    }
    CHECK(InfoText(f.info({"stats"})).get("instantaneous_ops_per_sec") == "500");
  }

  TEST_CASE("INFO commandstats shows calls, time, rejected and failed calls per command") {
    Fixture f;
    f.run({"SET", "k", "v"});
    f.run({"GET", "k"});
    f.run({"GET"});
    f.run({"CONFIG", "GET", "hz"});
    InfoText info(f.info({"commandstats"}));
    CHECK(info.get("cmdstat_set") ==
          "calls=1,usec=0,usec_per_call=0.00,rejected_calls=0,failed_calls=0");
    CHECK(info.get("cmdstat_get") ==
          "calls=1,usec=0,usec_per_call=0.00,rejected_calls=1,failed_calls=0");
    CHECK(info.get("cmdstat_config|get") ==
          "calls=1,usec=0,usec_per_call=0.00,rejected_calls=0,failed_calls=0");
    CHECK_FALSE(info.has("cmdstat_dbsize"));
  }

  TEST_CASE("a GEOADD that fails inside its ZADD is a failed GEOADD call, and no ZADD call") {
    Fixture f;
    f.run({"SET", "foo", "1"});
    f.run({"CONFIG", "RESETSTAT"});
    f.run({"GEOADD", "foo", "0", "0", "bar"});
    InfoText info(f.info({"commandstats"}));
    CHECK(info.get("cmdstat_geoadd") ==
          "calls=1,usec=0,usec_per_call=0.00,rejected_calls=0,failed_calls=1");
    CHECK_FALSE(info.has("cmdstat_zadd"));
    CHECK(InfoText(f.info({"errorstats"})).get("errorstat_WRONGTYPE") == "count=1");
  }

  TEST_CASE("INFO errorstats counts error replies by their code") {
    Fixture f;
    f.run({"NOSUCHCOMMAND"});
    f.run({"CONFIG", "SET", "nosuch", "1"});
    InfoText info(f.info({"errorstats"}));
    CHECK(info.get("errorstat_ERR") == "count=2");
  }

  TEST_CASE("INFO memory reports the engine's used memory and maxmemory settings") {
    Fixture f;
    f.run({"SET", "k", std::string(1000, 'x')});
    f.run({"CONFIG", "SET", "maxmemory", "10mb", "maxmemory-policy", "allkeys-lru"});
    InfoText info(f.info({"memory"}));
    CHECK(info.get("used_memory") == std::to_string(f.engine.used_memory()));
    CHECK(info.get("maxmemory") == "10485760");
    CHECK(info.get("maxmemory_human") == "10.00M");
    CHECK(info.get("maxmemory_policy") == "allkeys-lru");
  }

  TEST_CASE("INFO memory counts a startup overhead in used_memory, as Valkey, even when empty") {
    Fixture f;
    InfoText info(f.info({"memory"}));
    uint64_t startup = std::stoull(info.get("used_memory_startup"));
    uint64_t used = std::stoull(info.get("used_memory"));
    CHECK(startup > 0);
    CHECK(used >= startup);
    CHECK(std::stoull(info.get("used_memory_overhead")) >= startup);
    CHECK(std::stoull(info.get("used_memory_dataset")) ==
          used - std::stoull(info.get("used_memory_overhead")));
  }

  TEST_CASE("bytes_to_human formats as Valkey does") {
    CHECK(ks::bytes_to_human(0) == "0B");
    CHECK(ks::bytes_to_human(1023) == "1023B");
    CHECK(ks::bytes_to_human(1536) == "1.50K");
    CHECK(ks::bytes_to_human(3ull << 30) == "3.00G");
  }

  // --- CONFIG ---------------------------------------------------------------------------

  TEST_CASE("CONFIG GET returns name/value pairs for patterns and CONFIG SET changes them") {
    Fixture f;
    RespValue v = f.run({"CONFIG", "GET", "maxmemory"});
    CHECK(strings(v) == std::vector<std::string>{"maxmemory", "0"});
    CHECK(is_ok(f.run({"CONFIG", "SET", "maxmemory", "1kb", "hz", "20"})));
    CHECK(strings(f.run({"CONFIG", "GET", "maxmemory", "hz"})) ==
          std::vector<std::string>{"maxmemory", "1024", "hz", "20"});
    CHECK(f.engine.config().hz == 20);
    CHECK(f.run({"CONFIG", "GET", "nosuch*"}).elements.empty());
  }

  TEST_CASE("CONFIG SET errors use Valkey's words") {
    Fixture f;
    CHECK(is_err(f.run({"CONFIG", "SET", "nosuch", "1"}),
                 "ERR Unknown option or number of arguments for CONFIG SET - 'nosuch'"));
    CHECK(is_err(f.run({"CONFIG", "SET", "databases", "4"}),
                 "ERR CONFIG SET failed (possibly related to argument 'databases') - can't set "
                 "immutable config"));
    CHECK(is_err(f.run({"CONFIG", "SET", "hz", "1", "maxmemory"}), "ERR syntax error"));
    CHECK(is_err(f.run({"CONFIG", "SET", "hz"}),
                 "ERR wrong number of arguments for 'config|set' command"));
    CHECK(
        is_err(f.run({"CONFIG", "GET"}), "ERR wrong number of arguments for 'config|get' command"));
    CHECK(is_err(f.run({"CONFIG", "NOSUCH"}), "ERR unknown subcommand 'NOSUCH'. Try CONFIG HELP."));
    CHECK(is_err(f.run({"CONFIG"}), "ERR wrong number of arguments for 'config' command"));
  }

  TEST_CASE("CONFIG SET maxmemory below the usage evicts keys right away") {
    Fixture f;
    for (int i = 0; i < 200; ++i) {
      std::string key = "key:" + std::to_string(i);
      f.run({"SET", key, std::string(100, 'v')});
    }
    CHECK(is_ok(f.run({"CONFIG", "SET", "maxmemory-policy", "allkeys-random"})));
    // Half the dataset, above the fixed startup and client part eviction cannot free.
    uint64_t floor = f.engine.used_memory() - f.engine.memory().used();
    uint64_t limit = floor + f.engine.memory().used() / 2;
    CHECK(is_ok(f.run_vec({"CONFIG", "SET", "maxmemory", std::to_string(limit)})));
    CHECK(f.engine.used_memory() <= limit);
    InfoText info(f.info({"stats"}));
    CHECK(info.get("evicted_keys") != "0");
    CHECK(f.engine.db(0).size() < 200);
  }

  TEST_CASE("CONFIG RESETSTAT clears command, error and keyspace statistics") {
    Fixture f;
    f.run({"GET", "missing"});
    f.run({"NOSUCHCOMMAND"});
    CHECK(is_ok(f.run({"CONFIG", "RESETSTAT"})));
    InfoText info(f.info({"stats", "commandstats", "errorstats"}));
    CHECK(info.get("keyspace_misses") == "0");
    CHECK(info.get("total_error_replies") == "0");
    CHECK(info.get("total_commands_processed") == "1");  // CONFIG RESETSTAT itself
    CHECK_FALSE(info.has("cmdstat_get"));
    CHECK_FALSE(info.has("errorstat_ERR"));
  }

  TEST_CASE("CONFIG REWRITE without a config file is refused with Valkey's error") {
    Fixture f;
    CHECK(is_err(f.run({"CONFIG", "REWRITE"}), errors::k_no_config_file));
  }

  TEST_CASE("CONFIG REWRITE updates the file in place and the result loads back") {
    namespace fs = std::filesystem;
    fs::path dir = fs::temp_directory_path() / ("keyshift-rewrite-" + std::to_string(getpid()));
    fs::create_directories(dir);
    fs::path path = dir / "valkey.conf";
    {
      std::ofstream out(path);
      out << "# my settings\n"
             "port 6379\n"
             "maxmemory 1mb\n"
             "\n"
             "maxmemory 2mb\n"
             "someoldoption yes\n"
             "hz 15\n";
    }
    EngineConfig config;
    config.config_file = path.string();
    config.hz = 15;
    config.maxmemory = 2 * 1024 * 1024;
    Fixture f(config);
    CHECK(is_ok(f.run(
        {"CONFIG", "SET", "maxmemory", "3mb", "maxmemory-policy", "allkeys-lru", "hz", "10"})));
    CHECK(is_ok(f.run({"CONFIG", "REWRITE"})));
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    std::string text = ss.str();
    CHECK(text.starts_with("# my settings\nport 6379\nmaxmemory 3145728\n\n"));
    CHECK(text.find("# ??? someoldoption yes\n") != std::string::npos);
    CHECK(text.find("hz 10\n") != std::string::npos);  // default now, but the line stays
    CHECK(text.find("\n# Generated by CONFIG REWRITE\n") != std::string::npos);
    CHECK(text.find("maxmemory-policy allkeys-lru\n") != std::string::npos);
    CHECK(text.find("maxmemory 2mb") == std::string::npos);

    EngineConfig loaded = load_config_file(path.string());
    CHECK(loaded.maxmemory == 3ull * 1024 * 1024);
    CHECK(loaded.maxmemory_policy == ks::EvictionPolicy::allkeys_lru);
    CHECK(loaded.bind == f.engine.config().bind);

    // A second rewrite changes nothing.
    CHECK(is_ok(f.run({"CONFIG", "REWRITE"})));
    std::ifstream again(path);
    std::stringstream ss2;
    ss2 << again.rdbuf();
    CHECK(ss2.str() == text);
    fs::remove_all(dir);
  }

  TEST_CASE("CONFIG REWRITE writes any byte of a value so that the file reads it back") {
    namespace fs = std::filesystem;
    fs::path dir =
        fs::temp_directory_path() / ("keyshift-rewrite-bytes-" + std::to_string(getpid()));
    fs::create_directories(dir);
    fs::path path = dir / "valkey.conf";
    { std::ofstream out(path); }
    EngineConfig config;
    config.config_file = path.string();
    Fixture f(config);
    const std::string secret = "caf\xc3\xa9 \"q\" \\ \x01\xff";
    CHECK(is_ok(f.run({"CONFIG", "SET", "requirepass", secret})));
    CHECK(is_ok(f.run({"CONFIG", "REWRITE"})));
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    CHECK(ss.str().find("requirepass \"caf\\xc3\\xa9 \\\"q\\\" \\\\ \\x01\\xff\"\n") !=
          std::string::npos);
    EngineConfig loaded = load_config_file(path.string());
    CHECK(loaded.requirepass == secret);
    fs::remove_all(dir);
  }

  TEST_CASE("CONFIG HELP lists the subcommands under Valkey's heading") {
    Fixture f;
    std::vector<std::string> help = strings(f.run({"CONFIG", "HELP"}));
    REQUIRE(help.size() == 11);
    CHECK(help.front() == "CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:");
    CHECK(help[1] == "GET <pattern>");
    CHECK(help[9] == "HELP");
    CHECK(help[10] == "    Print this help.");
  }

  // --- COMMAND --------------------------------------------------------------------------

  TEST_CASE("COMMAND COUNT and COMMAND list every registered top-level command") {
    Fixture f;
    size_t n = f.engine.registry().commands().size();
    CHECK(is_int(f.run({"COMMAND", "COUNT"}), static_cast<int64_t>(n)));
    CHECK(f.run({"COMMAND"}).elements.size() == n);
    CHECK(f.run({"COMMAND", "INFO"}).elements.size() == n);
  }

  TEST_CASE("COMMAND INFO GET has Valkey 8's ten fields, key spec included") {
    Fixture f;
    RespValue v = f.run({"COMMAND", "INFO", "get"});
    REQUIRE(v.elements.size() == 1);
    const RespValue& get = v.elements[0];
    REQUIRE(get.elements.size() == 10);
    CHECK(is_bulk(get.elements[0], "get"));
    CHECK(is_int(get.elements[1], 2));
    CHECK(strings(get.elements[2]) == std::vector<std::string>{"readonly", "fast"});
    CHECK(is_int(get.elements[3], 1));
    CHECK(is_int(get.elements[4], 1));
    CHECK(is_int(get.elements[5], 1));
    CHECK(strings(get.elements[6]) == std::vector<std::string>{"@read", "@string", "@fast"});
    CHECK(get.elements[7].elements.empty());
    REQUIRE(get.elements[8].elements.size() == 1);
    const RespValue& spec = get.elements[8].elements[0];
    CHECK(map_keys(spec) == std::vector<std::string>{"flags", "begin_search", "find_keys"});
    CHECK(strings(*field(spec, "flags")) == std::vector<std::string>{"RO", "access"});
    const RespValue& bs = *field(spec, "begin_search");
    CHECK(is_bulk(*field(bs, "type"), "index"));
    CHECK(is_int(*field(*field(bs, "spec"), "index"), 1));
    const RespValue& fk = *field(spec, "find_keys");
    CHECK(is_bulk(*field(fk, "type"), "range"));
    CHECK(strings(*field(fk, "spec")) ==
          std::vector<std::string>{"lastkey", "", "keystep", "", "limit", ""});
    CHECK(is_int(*field(*field(fk, "spec"), "keystep"), 1));
    CHECK(get.elements[9].elements.empty());
  }

  TEST_CASE("COMMAND INFO shows containers with their subcommands and nil for unknown names") {
    Fixture f;
    RespValue v = f.run({"COMMAND", "INFO", "CONFIG", "config|get", "nosuch", "config|nosuch"});
    REQUIRE(v.elements.size() == 4);
    const RespValue& config = v.elements[0];
    CHECK(is_bulk(config.elements[0], "config"));
    CHECK(is_int(config.elements[1], -2));
    CHECK(config.elements[2].elements.empty());
    CHECK(strings(config.elements[6]) == std::vector<std::string>{"@slow"});
    std::set<std::string> subs;
    for (const RespValue& sub : config.elements[9].elements) {
      subs.insert(sub.elements[0].str);
    }
    CHECK(subs == std::set<std::string>{"config|get", "config|set", "config|resetstat",
                                        "config|rewrite", "config|help"});
    const RespValue& get = v.elements[1];
    CHECK(is_bulk(get.elements[0], "config|get"));
    CHECK(strings(get.elements[2]) ==
          std::vector<std::string>{"admin", "noscript", "loading", "stale"});
    CHECK(strings(get.elements[6]) == std::vector<std::string>{"@admin", "@slow", "@dangerous"});
    CHECK(is_nil(v.elements[2]));
    CHECK(is_nil(v.elements[3]));
  }

  TEST_CASE("COMMAND INFO hides the protected and may_replicate flags as Valkey does") {
    Fixture f;
    RespValue debug = f.run({"COMMAND", "INFO", "debug"}).elements[0];
    CHECK(strings(debug.elements[2]) ==
          std::vector<std::string>{"admin", "noscript", "loading", "stale"});
    RespValue client_list = f.run({"COMMAND", "INFO", "client|list"}).elements[0];
    CHECK(strings(client_list.elements[7]) == std::vector<std::string>{"nondeterministic_output"});
  }

  TEST_CASE("COMMAND DOCS gives summary, since, group, complexity and arguments") {
    Fixture f;
    RespValue v = f.run({"COMMAND", "DOCS", "get", "nosuch"});
    CHECK(map_keys(v) == std::vector<std::string>{"get"});
    const RespValue& get = *field(v, "get");
    CHECK(map_keys(get) ==
          std::vector<std::string>{"summary", "since", "group", "complexity", "arguments"});
    CHECK(is_bulk(*field(get, "summary"), "Returns the string value of a key."));
    CHECK(is_bulk(*field(get, "since"), "1.0.0"));
    CHECK(is_bulk(*field(get, "group"), "string"));
    CHECK(is_bulk(*field(get, "complexity"), "O(1)"));
    const RespValue& args = *field(get, "arguments");
    REQUIRE(args.elements.size() == 1);
    CHECK(strings(args.elements[0]) == std::vector<std::string>{"name", "key", "type", "key",
                                                                "display_text", "key",
                                                                "key_spec_index", ""});
  }

  TEST_CASE("COMMAND DOCS reports deprecation, history and nested arguments") {
    Fixture f;
    RespValue substr_docs = f.run({"COMMAND", "DOCS", "substr"});
    const RespValue& substr = *field(substr_docs, "substr");
    CHECK(strings(*field(substr, "doc_flags")) == std::vector<std::string>{"deprecated"});
    CHECK(is_bulk(*field(substr, "deprecated_since"), "2.0.0"));
    CHECK(is_bulk(*field(substr, "replaced_by"), "`GETRANGE`"));
    RespValue set_docs = f.run({"COMMAND", "DOCS", "set"});
    const RespValue& set = *field(set_docs, "set");
    CHECK(field(set, "history") != nullptr);
    const RespValue* condition = nullptr;
    for (const RespValue& arg : field(set, "arguments")->elements) {
      if (field(arg, "name")->str == "condition") {
        condition = &arg;
      }
    }
    REQUIRE(condition != nullptr);
    CHECK(is_bulk(*field(*condition, "type"), "oneof"));
    CHECK(field(*condition, "display_text") == nullptr);
    CHECK(strings(*field(*condition, "flags")) == std::vector<std::string>{"optional"});
    CHECK(field(*condition, "arguments")->elements.size() == 2);
  }

  TEST_CASE("COMMAND DOCS of a container includes its registered subcommands") {
    Fixture f;
    RespValue docs = f.run({"COMMAND", "DOCS", "slowlog"});
    const RespValue& slowlog = *field(docs, "slowlog");
    const RespValue& subs = *field(slowlog, "subcommands");
    std::set<std::string> names;
    for (const std::string& k : map_keys(subs)) {
      names.insert(k);
    }
    CHECK(names ==
          std::set<std::string>{"slowlog|get", "slowlog|len", "slowlog|reset", "slowlog|help"});
  }

  TEST_CASE("COMMAND LIST lists commands and subcommands, optionally filtered") {
    Fixture f;
    std::vector<std::string> all = strings(f.run({"COMMAND", "LIST"}));
    std::set<std::string> names(all.begin(), all.end());
    CHECK(names.count("get") == 1);
    CHECK(names.count("config|get") == 1);
    std::vector<std::string> cfg =
        strings(f.run({"COMMAND", "LIST", "FILTERBY", "PATTERN", "config*"}));
    CHECK(std::set<std::string>(cfg.begin(), cfg.end()) ==
          std::set<std::string>{"config", "config|get", "config|set", "config|resetstat",
                                "config|rewrite", "config|help"});
    std::vector<std::string> strs =
        strings(f.run({"COMMAND", "LIST", "FILTERBY", "ACLCAT", "string"}));
    CHECK(std::count(strs.begin(), strs.end(), "get") == 1);
    CHECK(std::count(strs.begin(), strs.end(), "config|get") == 0);
    CHECK(f.run({"COMMAND", "LIST", "FILTERBY", "ACLCAT", "nosuchcat"}).elements.empty());
    CHECK(f.run({"COMMAND", "LIST", "FILTERBY", "MODULE", "json"}).elements.empty());
    CHECK(is_err(f.run({"COMMAND", "LIST", "FILTERBY", "NAME", "x"}), "ERR syntax error"));
    CHECK(is_err(f.run({"COMMAND", "LIST", "extra"}), "ERR syntax error"));
  }

  TEST_CASE("COMMAND GETKEYS finds keys from Valkey's key specs") {
    Fixture f;
    CHECK(strings(f.run({"COMMAND", "GETKEYS", "GET", "k"})) == std::vector<std::string>{"k"});
    CHECK(strings(f.run({"COMMAND", "GETKEYS", "MSET", "a", "1", "b", "2"})) ==
          std::vector<std::string>{"a", "b"});
    CHECK(strings(f.run({"COMMAND", "GETKEYS", "MEMORY", "USAGE", "k"})) ==
          std::vector<std::string>{"k"});
    CHECK(strings(f.run({"COMMAND", "GETKEYS", "DEL", "a", "b", "c"})) ==
          std::vector<std::string>{"a", "b", "c"});
  }

  TEST_CASE("COMMAND GETKEYSANDFLAGS reports the access flags, SET's depending on GET") {
    Fixture f;
    RespValue v = f.run({"COMMAND", "GETKEYSANDFLAGS", "SET", "k", "v"});
    REQUIRE(v.elements.size() == 1);
    CHECK(is_bulk(v.elements[0].elements[0], "k"));
    CHECK(strings(v.elements[0].elements[1]) == std::vector<std::string>{"OW", "update"});
    v = f.run({"COMMAND", "GETKEYSANDFLAGS", "SET", "k", "v", "GET"});
    CHECK(strings(v.elements[0].elements[1]) == std::vector<std::string>{"RW", "access", "update"});
    v = f.run({"COMMAND", "GETKEYSANDFLAGS", "GET", "k"});
    CHECK(strings(v.elements[0].elements[1]) == std::vector<std::string>{"RO", "access"});
  }

  TEST_CASE("COMMAND GETKEYS finds SORT's last STORE key and skips option arguments") {
    Fixture f;
    using V = std::vector<std::string>;
    CHECK(strings(f.run({"COMMAND", "GETKEYS", "SORT", "abc"})) == V{"abc"});
    CHECK(strings(f.run({"COMMAND", "GETKEYS", "SORT", "abc", "STORE", "def"})) == V{"abc", "def"});
    CHECK(strings(f.run({"COMMAND", "GETKEYS", "SORT", "abc", "store", "invalid", "store",
                         "stillbad", "store", "def"})) == V{"abc", "def"});
    CHECK(strings(f.run({"COMMAND", "GETKEYS", "SORT", "abc", "BY", "store", "GET", "store",
                         "LIMIT", "store", "store"})) == V{"abc"});
    CHECK(strings(f.run({"COMMAND", "GETKEYS", "SORT_RO", "abc", "BY", "x"})) == V{"abc"});
    RespValue v = f.run({"COMMAND", "GETKEYSANDFLAGS", "SORT", "a", "STORE", "b"});
    REQUIRE(v.elements.size() == 2);
    CHECK(strings(v.elements[0].elements[1]) == V{"RO", "access"});
    CHECK(strings(v.elements[1].elements[1]) == V{"OW", "update"});
  }

  TEST_CASE("COMMAND GETKEYS errors use Valkey's words") {
    Fixture f;
    CHECK(
        is_err(f.run({"COMMAND", "GETKEYS", "NOSUCH", "k"}), errors::k_invalid_command_specified));
    CHECK(is_err(f.run({"COMMAND", "GETKEYS", "CONFIG", "NOSUCH"}),
                 errors::k_invalid_command_specified));
    CHECK(is_err(f.run({"COMMAND", "GETKEYS", "PING"}), errors::k_command_has_no_keys));
    CHECK(is_err(f.run({"COMMAND", "GETKEYS", "GET"}), errors::k_invalid_command_arg_count));
    CHECK(is_err(f.run({"COMMAND", "GETKEYS", "GET", "a", "b"}),
                 errors::k_invalid_command_arg_count));
    CHECK(is_err(f.run({"COMMAND", "GETKEYS"}),
                 "ERR wrong number of arguments for 'command|getkeys' command"));
  }

  TEST_CASE("COMMAND with an unknown subcommand points at COMMAND HELP") {
    Fixture f;
    CHECK(
        is_err(f.run({"COMMAND", "NOSUCH"}), "ERR unknown subcommand 'NOSUCH'. Try COMMAND HELP."));
    std::vector<std::string> help = strings(f.run({"COMMAND", "HELP"}));
    CHECK(help.front() == "COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:");
    CHECK(help.back() == "    Print this help.");
  }

  // --- CLIENT ---------------------------------------------------------------------------

  TEST_CASE("CLIENT ID is the session's id and differs between sessions") {
    Fixture f;
    Session& other = f.engine.open_session(nullptr);
    CHECK(is_int(f.run({"CLIENT", "ID"}), static_cast<int64_t>(f.me.id())));
    CHECK(is_int(f.run_on(other, {"CLIENT", "ID"}), static_cast<int64_t>(other.id())));
    CHECK(f.me.id() != other.id());
  }

  TEST_CASE("CLIENT SETNAME and GETNAME name the connection, an empty name clears it") {
    Fixture f;
    CHECK(is_nil(f.run({"CLIENT", "GETNAME"})));
    CHECK(is_ok(f.run({"CLIENT", "SETNAME", "worker-1"})));
    CHECK(is_bulk(f.run({"CLIENT", "GETNAME"}), "worker-1"));
    CHECK(is_err(f.run({"CLIENT", "SETNAME", "has space"}), errors::k_client_name_invalid));
    CHECK(is_err(f.run({"CLIENT", "SETNAME", "new\nline"}), errors::k_client_name_invalid));
    CHECK(is_bulk(f.run({"CLIENT", "GETNAME"}), "worker-1"));
    CHECK(is_ok(f.run({"CLIENT", "SETNAME", ""})));
    CHECK(is_nil(f.run({"CLIENT", "GETNAME"})));
    CHECK(is_err(f.run({"CLIENT", "SETNAME"}),
                 "ERR wrong number of arguments for 'client|setname' command"));
  }

  TEST_CASE("CLIENT LIST lines have Valkey 8's fields in order") {
    Fixture f;
    f.run({"CLIENT", "SETNAME", "me"});
    std::vector<std::string> lines = client_lines(f.run({"CLIENT", "LIST"}));
    REQUIRE(lines.size() == 1);
    CHECK(client_line_keys(lines[0]) ==
          std::vector<std::string>{
              "id",    "addr",      "laddr",    "fd",         "name",        "age",     "idle",
              "flags", "db",        "sub",      "psub",       "ssub",        "multi",   "watch",
              "qbuf",  "qbuf-free", "argv-mem", "multi-mem",  "rbs",         "rbp",     "obl",
              "oll",   "omem",      "tot-mem",  "events",     "cmd",         "user",    "redir",
              "resp",  "lib-name",  "lib-ver",  "tot-net-in", "tot-net-out", "tot-cmds"});
    CHECK(client_field(lines[0], "id") == std::to_string(f.me.id()));
    CHECK(client_field(lines[0], "name") == "me");
    CHECK(client_field(lines[0], "flags") == "N");
    CHECK(client_field(lines[0], "cmd") == "client|list");
    CHECK(client_field(lines[0], "user") == "default");
    CHECK(client_field(lines[0], "multi") == "-1");
    CHECK(client_field(lines[0], "argv-mem") == "10");
    CHECK(client_field(lines[0], "tot-cmds") == "1");
    CHECK(client_field(lines[0], "resp") == "2");
  }

  TEST_CASE("tot-cmds counts a script's calls for the client that ran the script") {
    Fixture f;
    f.run({"EVAL", "server.call('ping') server.call('ping')", "0"});
    std::vector<std::string> lines = client_lines(f.run({"CLIENT", "LIST"}));
    REQUIRE(lines.size() == 1);
    CHECK(client_field(lines[0], "tot-cmds") == "3");  // EVAL, its two PINGs (not yet this one)
  }

  TEST_CASE("CLIENT LIST shows age and idle time in seconds and the other client's last command") {
    Fixture f;
    Session& other = f.engine.open_session(nullptr);
    f.run_on(other, {"SELECT", "2"});
    f.clock.advance_ms(5000);
    std::vector<std::string> lines =
        client_lines(f.run({"CLIENT", "LIST", "ID", std::to_string(other.id())}));
    REQUIRE(lines.size() == 1);
    CHECK(client_field(lines[0], "age") == "5");
    CHECK(client_field(lines[0], "idle") == "5");
    CHECK(client_field(lines[0], "db") == "2");
    CHECK(client_field(lines[0], "cmd") == "select");
  }

  TEST_CASE("CLIENT LIST filters by TYPE and ID and rejects bad arguments") {
    Fixture f;
    Session& other = f.engine.open_session(nullptr);
    CHECK(client_lines(f.run({"CLIENT", "LIST"})).size() == 2);
    CHECK(client_lines(f.run({"CLIENT", "LIST", "TYPE", "normal"})).size() == 2);
    CHECK(client_lines(f.run({"CLIENT", "LIST", "TYPE", "pubsub"})).empty());
    CHECK(client_lines(f.run({"CLIENT", "LIST", "TYPE", "replica"})).empty());
    CHECK(is_err(f.run({"CLIENT", "LIST", "TYPE", "bogus"}), "ERR Unknown client type 'bogus'"));
    std::vector<std::string> one =
        client_lines(f.run({"CLIENT", "LIST", "ID", std::to_string(other.id()), "999"}));
    REQUIRE(one.size() == 1);
    CHECK(client_field(one[0], "id") == std::to_string(other.id()));
    CHECK(is_err(f.run({"CLIENT", "LIST", "ID", "abc"}), errors::k_invalid_client_id));
    CHECK(is_err(f.run({"CLIENT", "LIST", "foo"}), "ERR syntax error"));
  }

  TEST_CASE("CLIENT INFO is the caller's own line with a trailing newline") {
    Fixture f;
    RespValue v = f.run({"CLIENT", "INFO"});
    REQUIRE(v.type == Type::bulk);
    CHECK(v.str.ends_with("\n"));
    CHECK(v.str.find('\n') == v.str.size() - 1);
    CHECK(client_field(v.str, "cmd") == "client|info");
  }

  TEST_CASE("CLIENT SETINFO sets the library name and version shown by CLIENT LIST") {
    Fixture f;
    CHECK(is_ok(f.run({"CLIENT", "SETINFO", "LIB-NAME", "redis-py"})));
    CHECK(is_ok(f.run({"CLIENT", "SETINFO", "lib-ver", "5.0.1"})));
    std::string line = f.run({"CLIENT", "INFO"}).str;
    CHECK(client_field(line, "lib-name") == "redis-py");
    CHECK(client_field(line, "lib-ver") == "5.0.1");
    CHECK(is_err(f.run({"CLIENT", "SETINFO", "foo", "x"}), "ERR Unrecognized option 'foo'"));
    CHECK(is_err(f.run({"CLIENT", "SETINFO", "lib-name", "a b"}),
                 "ERR lib-name cannot contain spaces, newlines or special characters."));
  }

  TEST_CASE("CLIENT KILL by ID flags the other session to be closed and counts it") {
    Fixture f;
    Session& other = f.engine.open_session(nullptr);
    CHECK(is_int(f.run({"CLIENT", "KILL", "ID", std::to_string(other.id())}), 1));
    CHECK(other.has(ks::k_session_close_asap));
    CHECK_FALSE(f.me.has(ks::k_session_close_asap));
    CHECK(is_int(f.run({"CLIENT", "KILL", "ID", "12345"}), 0));
  }

  TEST_CASE("CLIENT KILL skips the caller unless SKIPME no") {
    Fixture f;
    Session& other = f.engine.open_session(nullptr);
    CHECK(is_int(f.run({"CLIENT", "KILL", "TYPE", "normal"}), 1));
    CHECK(other.has(ks::k_session_close_asap));
    CHECK_FALSE(f.me.has(ks::k_session_close_after_reply));
    CHECK(is_int(f.run({"CLIENT", "KILL", "ID", std::to_string(f.me.id()), "SKIPME", "no"}), 1));
    CHECK(f.me.has(ks::k_session_close_after_reply));
  }

  TEST_CASE("CLIENT KILL old form matches the address and may kill the caller") {
    Fixture f;
    Session& other = f.engine.open_session(nullptr);
    other.addr = "10.0.0.7:5000";
    f.me.addr = "10.0.0.8:6000";
    CHECK(is_err(f.run({"CLIENT", "KILL", "10.0.0.9:1"}), errors::k_no_such_client));
    CHECK(is_ok(f.run({"CLIENT", "KILL", "10.0.0.7:5000"})));
    CHECK(other.has(ks::k_session_close_asap));
    CHECK(is_ok(f.run({"CLIENT", "KILL", "10.0.0.8:6000"})));
    CHECK(f.me.has(ks::k_session_close_after_reply));
  }

  TEST_CASE("CLIENT KILL filters by ADDR, LADDR, USER and MAXAGE") {
    Fixture f;
    Session& old = f.engine.open_session(nullptr);
    old.laddr = "127.0.0.1:6379";
    f.clock.advance_ms(10000);
    Session& young = f.engine.open_session(nullptr);
    young.addr = "10.1.1.1:1";
    CHECK(is_int(f.run({"CLIENT", "KILL", "MAXAGE", "5"}), 1));
    CHECK(old.has(ks::k_session_close_asap));
    CHECK_FALSE(young.has(ks::k_session_close_asap));
    CHECK(is_int(f.run({"CLIENT", "KILL", "LADDR", "127.0.0.1:6379", "USER", "default"}), 1));
    CHECK(is_int(f.run({"CLIENT", "KILL", "ADDR", "10.1.1.1:1"}), 1));
    CHECK(young.has(ks::k_session_close_asap));
  }

  TEST_CASE("CLIENT KILL option errors use Valkey's words") {
    Fixture f;
    CHECK(is_err(f.run({"CLIENT", "KILL", "ID", "0"}), errors::k_client_id_positive));
    CHECK(is_err(f.run({"CLIENT", "KILL", "ID", "x"}), errors::k_client_id_positive));
    CHECK(is_err(f.run({"CLIENT", "KILL", "MAXAGE", "x"}), errors::k_maxage_not_integer));
    CHECK(is_err(f.run({"CLIENT", "KILL", "MAXAGE", "0"}), errors::k_maxage_positive));
    CHECK(is_err(f.run({"CLIENT", "KILL", "TYPE", "x"}), "ERR Unknown client type 'x'"));
    CHECK(is_err(f.run({"CLIENT", "KILL", "USER", "bob"}), "ERR No such user 'bob'"));
    CHECK(is_err(f.run({"CLIENT", "KILL", "SKIPME", "maybe"}), "ERR syntax error"));
    CHECK(is_err(f.run({"CLIENT", "KILL", "ID", "1", "ADDR"}), "ERR syntax error"));
    CHECK(is_err(f.run({"CLIENT", "KILL", "NOSUCH", "1"}), "ERR syntax error"));
  }

  TEST_CASE("CLIENT NO-EVICT and NO-TOUCH set the e and T flags") {
    Fixture f;
    CHECK(is_ok(f.run({"CLIENT", "NO-EVICT", "on"})));
    CHECK(is_ok(f.run({"CLIENT", "NO-TOUCH", "ON"})));
    CHECK(client_field(f.run({"CLIENT", "INFO"}).str, "flags") == "eT");
    CHECK(is_ok(f.run({"CLIENT", "NO-EVICT", "off"})));
    CHECK(is_ok(f.run({"CLIENT", "NO-TOUCH", "off"})));
    CHECK(client_field(f.run({"CLIENT", "INFO"}).str, "flags") == "N");
    CHECK(is_err(f.run({"CLIENT", "NO-EVICT", "maybe"}), "ERR syntax error"));
    CHECK(is_err(f.run({"CLIENT", "NO-TOUCH", "maybe"}), "ERR syntax error"));
  }

  TEST_CASE("CLIENT REPLY OFF silences replies until ON, SKIP silences the next one") {
    Fixture f;
    f.run({"CLIENT", "REPLY", "OFF"});
    size_t before = f.me.out.size();
    CHECK(is_nil(f.run({"SET", "k", "v"})));
    CHECK(f.me.out.size() == before);
    CHECK(is_ok(f.run({"CLIENT", "REPLY", "ON"})));
    CHECK(is_bulk(f.run({"GET", "k"}), "v"));
    f.run({"CLIENT", "REPLY", "SKIP"});
    CHECK(is_nil(f.run({"GET", "k"})));
    CHECK(is_bulk(f.run({"GET", "k"}), "v"));
    CHECK(is_err(f.run({"CLIENT", "REPLY", "maybe"}), "ERR syntax error"));
  }

  TEST_CASE("CLIENT REPLY ON right after SKIP is answered and ends the skip") {
    Fixture f;
    f.run({"SET", "k", "v"});
    f.run({"CLIENT", "REPLY", "SKIP"});
    CHECK(is_ok(f.run({"CLIENT", "REPLY", "ON"})));
    CHECK(is_bulk(f.run({"GET", "k"}), "v"));
  }

  TEST_CASE("CLIENT tracking queries report tracking as off and UNBLOCK finds nobody") {
    Fixture f;
    CHECK(is_int(f.run({"CLIENT", "GETREDIR"}), -1));
    RespValue info = f.run({"CLIENT", "TRACKINGINFO"});
    CHECK(strings(*field(info, "flags")) == std::vector<std::string>{"off"});
    CHECK(is_int(*field(info, "redirect"), -1));
    CHECK(is_int(f.run({"CLIENT", "UNBLOCK", "1"}), 0));
    CHECK(is_int(f.run({"CLIENT", "UNBLOCK", "1", "ERROR"}), 0));
    CHECK(is_err(f.run({"CLIENT", "UNBLOCK", "1", "LATER"}), errors::k_unblock_reason));
    CHECK(is_err(f.run({"CLIENT", "UNBLOCK", "x"}), errors::k_not_integer));
    CHECK(is_ok(f.run({"CLIENT", "CAPA", "redirect"})));
  }

  TEST_CASE("CLIENT HELP and unknown CLIENT subcommands follow Valkey") {
    Fixture f;
    std::vector<std::string> help = strings(f.run({"CLIENT", "HELP"}));
    CHECK(help.front() == "CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:");
    CHECK(help.back() == "    Print this help.");
    CHECK(is_err(f.run({"CLIENT", "FOO"}), "ERR unknown subcommand 'FOO'. Try CLIENT HELP."));
    CHECK(is_err(f.run({"CLIENT"}), "ERR wrong number of arguments for 'client' command"));
  }

  // --- MONITOR --------------------------------------------------------------------------

  TEST_CASE("MONITOR streams each executed command in Valkey's line format") {
    Fixture f;
    Session& monitor = f.engine.open_session(nullptr);
    CHECK(is_ok(f.run_on(monitor, {"MONITOR"})));
    CHECK(monitor.has(ks::k_session_monitor));
    monitor.out.clear();
    f.run({"SET", "k", "a\nb\"\x01"});
    CHECK(monitor.out == "+1700000000.000000 [0 lua] \"SET\" \"k\" \"a\\nb\\\"\\x01\"\r\n");
    monitor.out.clear();
    f.run({"CONFIG", "GET", "hz"});  // admin commands are not shown
    f.run({"NOSUCHCOMMAND"});        // neither are rejected ones
    CHECK(monitor.out.empty());
    f.run({"SELECT", "4"});
    CHECK(monitor.out == "+1700000000.000000 [4 lua] \"SELECT\" \"4\"\r\n");
  }

  TEST_CASE("MONITOR names TCP clients by address and unix clients by the socket path") {
    EngineConfig config;
    config.unixsocket = "/tmp/ks.sock";
    Fixture f(config);
    Session& monitor = f.engine.open_session(nullptr);
    f.run_on(monitor, {"MONITOR"});
    monitor.out.clear();
    f.me.clear(ks::k_session_in_process);
    f.me.addr = "10.0.0.1:4242";
    f.run({"PING"});
    CHECK(monitor.out == "+1700000000.000000 [0 10.0.0.1:4242] \"PING\"\r\n");
    monitor.out.clear();
    f.me.set(ks::k_session_unix_socket);
    f.run({"PING"});
    CHECK(monitor.out == "+1700000000.000000 [0 unix:/tmp/ks.sock] \"PING\"\r\n");
  }

  TEST_CASE("MONITOR shows FCALL before the commands its function calls") {
    Fixture f;
    f.run({"FUNCTION", "LOAD",
           "#!lua name=lib\nserver.register_function('f', function() "
           "return server.call('set', 'foo', 'bar') end)"});
    Session& monitor = f.engine.open_session(nullptr);
    f.run_on(monitor, {"MONITOR"});
    monitor.out.clear();
    f.run({"FCALL", "f", "0"});
    CHECK(monitor.out ==
          "+1700000000.000000 [0 lua] \"FCALL\" \"f\" \"0\"\r\n"
          "+1700000000.000000 [0 lua] \"set\" \"foo\" \"bar\"\r\n");
  }

  TEST_CASE("MONITOR a second time is ignored without a reply") {
    Fixture f;
    CHECK(is_ok(f.run({"MONITOR"})));
    size_t before = f.me.out.size();
    CHECK(is_nil(f.run({"MONITOR"})));
    CHECK(f.me.out.size() == before);
    CHECK(f.engine.monitors().size() == 1);
  }

  // --- MEMORY ---------------------------------------------------------------------------

  TEST_CASE("MEMORY USAGE reports the bytes a key uses, nil for a missing key") {
    Fixture f;
    f.run({"SET", "small", "v"});
    f.run({"SET", "big", std::string(5000, 'x')});
    RespValue small = f.run({"MEMORY", "USAGE", "small"});
    RespValue big = f.run({"MEMORY", "USAGE", "big", "SAMPLES", "0"});
    REQUIRE(small.type == Type::integer);
    REQUIRE(big.type == Type::integer);
    CHECK(small.integer > 5);
    CHECK(big.integer > 5000);
    CHECK(big.integer < 5000 + 512);
    CHECK(is_nil(f.run({"MEMORY", "USAGE", "missing"})));
  }

  TEST_CASE("MEMORY USAGE counts a logically expired key, as Valkey's dbFind does") {
    Fixture f;
    f.run({"SET", "k", "v", "PX", "5"});
    f.clock.advance_ms(10);
    CHECK(f.run({"MEMORY", "USAGE", "k"}).type == Type::integer);
    CHECK(f.engine.db(0).size() == 1);
  }

  TEST_CASE("MEMORY USAGE option errors") {
    Fixture f;
    f.run({"SET", "k", "v"});
    CHECK(is_err(f.run({"MEMORY", "USAGE", "k", "SAMPLES", "-1"}), "ERR syntax error"));
    CHECK(is_err(f.run({"MEMORY", "USAGE", "k", "SAMPLES", "x"}), errors::k_not_integer));
    CHECK(is_err(f.run({"MEMORY", "USAGE", "k", "SAMPLES"}), "ERR syntax error"));
    CHECK(is_err(f.run({"MEMORY", "USAGE", "k", "FOO", "1"}), "ERR syntax error"));
  }

  TEST_CASE("MEMORY STATS, DOCTOR, MALLOC-STATS, PURGE and HELP reply in Valkey's shapes") {
    Fixture f;
    f.run({"SET", "k", "v"});
    RespValue stats = f.run({"MEMORY", "STATS"});
    std::vector<std::string> keys = map_keys(stats);
    REQUIRE(keys.size() == 32);
    CHECK(keys.front() == "peak.allocated");
    CHECK(keys[10] == "db.0");
    CHECK(keys.back() == "fragmentation.bytes");
    CHECK(map_keys(*field(stats, "db.0")) ==
          std::vector<std::string>{"overhead.hashtable.main", "overhead.hashtable.expires"});
    CHECK(is_int(*field(stats, "keys.count"), 1));
    RespValue doctor = f.run({"MEMORY", "DOCTOR"});
    CHECK(doctor.str.starts_with("Hi Sam, this instance is empty"));
    CHECK(is_bulk(f.run({"MEMORY", "MALLOC-STATS"}),
                  "Stats not supported for the current allocator"));
    CHECK(is_ok(f.run({"MEMORY", "PURGE"})));
    CHECK(strings(f.run({"MEMORY", "HELP"})).front() ==
          "MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:");
  }

  // --- DEBUG ----------------------------------------------------------------------------

  TEST_CASE("DEBUG is refused unless enable-debug-command allows it") {
    Fixture f;
    CHECK(is_err(f.run({"DEBUG", "DIGEST"}), errors::k_debug_not_allowed));
    EngineConfig local;
    local.enable_debug_command = ks::EnableMode::local;
    Fixture g(local);
    CHECK(g.run({"DEBUG", "DIGEST"}).type == Type::simple);
  }

  TEST_CASE("DEBUG DIGEST and DIGEST-VALUE match Valkey's values") {
    // Values taken from a live server for the same dataset.
    Fixture f(debug_enabled());
    CHECK(is_simple(f.run({"DEBUG", "DIGEST"}), std::string(40, '0')));
    f.run({"SET", "foo", "bar"});
    f.run({"SET", "n", "12345"});
    CHECK(is_simple(f.run({"DEBUG", "DIGEST"}), "cd5a02343543db03481294f2a80f5609dd27c72b"));
    RespValue v = f.run({"DEBUG", "DIGEST-VALUE", "foo", "n", "missing"});
    CHECK(strings(v) == std::vector<std::string>{"68467c70ae30376e7ce005bcc8827f5ba7fd67dc",
                                                 "e1cf90774e995ae03de66e8109dc5cb9d9c2dc83",
                                                 std::string(40, '0')});
    CHECK(f.run({"DEBUG", "DIGEST-VALUE"}).elements.empty());
  }

  TEST_CASE("DEBUG DIGEST changes with the database a key is in and with TTLs") {
    Fixture f(debug_enabled());
    f.run({"SET", "foo", "bar"});
    std::string db0 = f.run({"DEBUG", "DIGEST"}).str;
    f.run({"FLUSHALL"});
    f.run({"SELECT", "1"});
    f.run({"SET", "foo", "bar"});
    std::string db1 = f.run({"DEBUG", "DIGEST"}).str;
    CHECK(db0 != db1);
    f.run({"SET", "foo", "bar", "EX", "100"});
    CHECK(f.run({"DEBUG", "DIGEST"}).str != db1);
  }

  TEST_CASE("DEBUG OBJECT prints Valkey's line for a key") {
    Fixture f(debug_enabled());
    f.run({"SET", "foo", "bar"});
    f.run({"SET", "n", "12345"});
    f.run({"SET", "small", "5"});
    std::string line = f.run({"DEBUG", "OBJECT", "foo"}).str;
    CHECK(line.starts_with("Value at:0x"));
    CHECK(line.find(" refcount:1 encoding:embstr serializedlength:4 lru:") != std::string::npos);
    CHECK(line.find(" lru_seconds_idle:0 lfu_freq:") != std::string::npos);
    CHECK(line.find(" lfu_access_time_minutes:") != std::string::npos);
    CHECK(f.run({"DEBUG", "OBJECT", "n"}).str.find(" encoding:int serializedlength:3 ") !=
          std::string::npos);
    CHECK(f.run({"DEBUG", "OBJECT", "small"}).str.find(" refcount:2147483647 ") !=
          std::string::npos);
    CHECK(f.run({"DEBUG", "OBJECT", "foo", "fast"}).str.find("serializedlength") ==
          std::string::npos);
    f.clock.advance_ms(3000);
    CHECK(f.run({"DEBUG", "OBJECT", "foo"}).str.find(" lru_seconds_idle:3 ") != std::string::npos);
    CHECK(is_err(f.run({"DEBUG", "OBJECT", "missing"}), errors::k_no_such_key));
  }

  TEST_CASE("DEBUG SLEEP, SET-ACTIVE-EXPIRE and CHANGE-REPL-ID") {
    Fixture f(debug_enabled());
    CHECK(is_ok(f.run({"DEBUG", "SLEEP", "0"})));
    CHECK(is_ok(f.run({"DEBUG", "SLEEP", "0.001"})));
    CHECK(is_ok(f.run({"DEBUG", "SET-ACTIVE-EXPIRE", "0"})));
    CHECK_FALSE(f.engine.config().active_expire);
    CHECK(is_ok(f.run({"DEBUG", "SET-ACTIVE-EXPIRE", "1"})));
    CHECK(f.engine.config().active_expire);
    std::string before = InfoText(f.info({"replication"})).get("master_replid");
    CHECK(is_ok(f.run({"DEBUG", "CHANGE-REPL-ID"})));
    std::string after = InfoText(f.info({"replication"})).get("master_replid");
    CHECK(after.size() == 40);
    CHECK(after != before);
  }

  TEST_CASE("DEBUG POPULATE creates key:N strings and skips existing keys") {
    Fixture f(debug_enabled());
    f.run({"SET", "key:1", "mine"});
    CHECK(is_ok(f.run({"DEBUG", "POPULATE", "3"})));
    CHECK(is_int(f.run({"DBSIZE"}), 3));
    CHECK(is_bulk(f.run({"GET", "key:0"}), "value:0"));
    CHECK(is_bulk(f.run({"GET", "key:1"}), "mine"));
    CHECK(is_ok(f.run({"DEBUG", "POPULATE", "1", "p", "10"})));
    CHECK(is_bulk(f.run({"GET", "p:0"}), std::string("value:0\0\0\0", 10)));
    CHECK(is_err(f.run({"DEBUG", "POPULATE", "-1"}), errors::k_must_be_positive));
  }

  TEST_CASE("DEBUG PROTOCOL and DEBUG ERROR produce the requested replies") {
    Fixture f(debug_enabled());
    CHECK(is_bulk(f.run({"DEBUG", "PROTOCOL", "string"}), "Hello World"));
    CHECK(is_int(f.run({"DEBUG", "PROTOCOL", "integer"}), 12345));
    CHECK(strings(f.run({"DEBUG", "PROTOCOL", "array"})).size() == 3);
    CHECK(is_err(f.run({"DEBUG", "PROTOCOL", "push"}), errors::k_resp2_not_supported));
    CHECK(is_err(f.run({"DEBUG", "PROTOCOL", "nosuch"}), errors::k_debug_protocol_type));
    CHECK(is_err(f.run({"DEBUG", "ERROR", "MYERR went\nwrong"}), "MYERR went wrong"));
    CHECK_FALSE(InfoText(f.info({"errorstats"})).has("errorstat_MYERR"));
  }

  TEST_CASE("DEBUG HELP and unknown DEBUG subcommands follow Valkey") {
    Fixture f(debug_enabled());
    std::vector<std::string> help = strings(f.run({"DEBUG", "HELP"}));
    CHECK(help.front() == "DEBUG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:");
    CHECK(std::count(help.begin(), help.end(), "DIGEST") == 1);
    CHECK(is_err(f.run({"DEBUG", "NOSUCH"}),
                 "ERR unknown subcommand or wrong number of arguments for 'NOSUCH'. Try DEBUG "
                 "HELP."));
    CHECK(is_err(f.run({"DEBUG", "SLEEP"}),
                 "ERR unknown subcommand or wrong number of arguments for 'SLEEP'. Try DEBUG "
                 "HELP."));
  }

  // --- FLUSHDB / FLUSHALL / DBSIZE / TIME / LASTSAVE / ROLE / LOLWUT --------------------

  TEST_CASE("FLUSHDB empties the selected database and FLUSHALL every database") {
    Fixture f;
    f.run({"SET", "a", "1"});
    f.run({"SELECT", "1"});
    f.run({"SET", "b", "1"});
    CHECK(is_int(f.run({"DBSIZE"}), 1));
    CHECK(is_ok(f.run({"FLUSHDB"})));
    CHECK(is_int(f.run({"DBSIZE"}), 0));
    CHECK(f.engine.db(0).size() == 1);
    f.run({"SET", "b", "1"});
    CHECK(is_ok(f.run({"FLUSHALL", "ASYNC"})));
    CHECK(f.engine.db(0).size() == 0);
    CHECK(f.engine.db(1).size() == 0);
    CHECK(is_ok(f.run({"FLUSHDB", "sync"})));
  }

  TEST_CASE("FLUSHDB and FLUSHALL accept only ASYNC or SYNC") {
    Fixture f;
    CHECK(is_err(f.run({"FLUSHALL", "NOW"}), "ERR syntax error"));
    CHECK(is_err(f.run({"FLUSHDB", "ASYNC", "SYNC"}), "ERR syntax error"));
  }

  TEST_CASE("TIME returns seconds and microseconds as bulk strings") {
    Fixture f;
    f.clock.advance_ms(1500);
    RespValue v = f.run({"TIME"});
    CHECK(strings(v) == std::vector<std::string>{"1700000001", "500000"});
    CHECK(v.elements[0].type == Type::bulk);
  }

  TEST_CASE("LASTSAVE is the start time until keyshift saves, ROLE is a master's") {
    Fixture f;
    f.clock.advance_ms(60000);
    CHECK(is_int(f.run({"LASTSAVE"}), 1700000000));
    RespValue role = f.run({"ROLE"});
    REQUIRE(role.elements.size() == 3);
    CHECK(is_bulk(role.elements[0], "master"));
    CHECK(is_int(role.elements[1], 0));
    CHECK(role.elements[2].elements.empty());
  }

  TEST_CASE("LOLWUT prints the Valkey version") {
    Fixture f;
    CHECK(is_bulk(f.run({"LOLWUT"}), "Redis ver. 8.0.1\n"));
    CHECK(is_bulk(f.run({"LOLWUT", "VERSION", "5"}), "Redis ver. 8.0.1\n"));
    CHECK(is_err(f.run({"LOLWUT", "VERSION", "x"}), errors::k_not_integer));
  }

  // --- SHUTDOWN -------------------------------------------------------------------------

  TEST_CASE("SHUTDOWN asks the engine to stop and sends no reply") {
    Fixture f;
    size_t before = f.me.out.size();
    CHECK(is_nil(f.run({"SHUTDOWN", "NOSAVE", "NOW", "FORCE"})));
    CHECK(f.me.out.size() == before);
    CHECK(f.engine.shutdown_requested());
  }

  TEST_CASE("SHUTDOWN rejects bad option combinations and has nothing to ABORT") {
    Fixture f;
    CHECK(is_err(f.run({"SHUTDOWN", "ABORT"}), errors::k_no_shutdown_in_progress));
    CHECK(is_err(f.run({"SHUTDOWN", "SAVE", "NOSAVE"}), "ERR syntax error"));
    CHECK(is_err(f.run({"SHUTDOWN", "ABORT", "NOW"}), "ERR syntax error"));
    CHECK(is_err(f.run({"SHUTDOWN", "LATER"}), "ERR syntax error"));
    CHECK_FALSE(f.engine.shutdown_requested());
  }

  // --- LATENCY / SLOWLOG ----------------------------------------------------------------

  TEST_CASE("LATENCY reports no events") {
    Fixture f;
    CHECK(f.run({"LATENCY", "LATEST"}).elements.empty());
    CHECK(f.run({"LATENCY", "HISTORY", "command"}).elements.empty());
    CHECK(is_int(f.run({"LATENCY", "RESET"}), 0));
    CHECK(f.run({"LATENCY", "HISTOGRAM"}).elements.empty());
    CHECK(is_err(f.run({"LATENCY", "GRAPH", "command"}),
                 "ERR No samples available for event 'command'"));
    CHECK(f.run({"LATENCY", "DOCTOR"}).str.starts_with("I'm sorry, Dave, I can't do that."));
    f.run({"CONFIG", "SET", "latency-monitor-threshold", "100"});
    CHECK(f.run({"LATENCY", "DOCTOR"}).str.starts_with("No latency spike was observed"));
    CHECK(strings(f.run({"LATENCY", "HELP"})).front() ==
          "LATENCY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:");
  }

  TEST_CASE("SLOWLOG stays empty for commands faster than slowlog-log-slower-than") {
    Fixture f;
    f.run({"SET", "k", "v"});
    CHECK(is_int(f.run({"SLOWLOG", "LEN"}), 0));
    CHECK(f.run({"SLOWLOG", "GET"}).elements.empty());
  }

  TEST_CASE("SLOWLOG records commands at or over the threshold, newest first") {
    Fixture f;
    CHECK(is_ok(f.run({"CONFIG", "SET", "slowlog-log-slower-than", "0"})));
    f.run({"CLIENT", "SETNAME", "app"});
    f.run({"SET", "k", "v"});
    RespValue v = f.run({"SLOWLOG", "GET", "2"});
    REQUIRE(v.elements.size() == 2);
    const RespValue& newest = v.elements[0];
    REQUIRE(newest.elements.size() == 6);
    CHECK(is_int(newest.elements[1], 1700000000));
    CHECK(is_int(newest.elements[2], 0));
    CHECK(strings(newest.elements[3]) == std::vector<std::string>{"SET", "k", "v"});
    CHECK(is_bulk(newest.elements[5], "app"));
    CHECK(newest.elements[0].integer == v.elements[1].elements[0].integer + 1);
    CHECK(strings(v.elements[1].elements[3]) ==
          std::vector<std::string>{"CLIENT", "SETNAME", "app"});
    CHECK(is_ok(f.run({"SLOWLOG", "RESET"})));
    CHECK(is_int(f.run({"SLOWLOG", "LEN"}), 1));  // SLOWLOG RESET itself
  }

  TEST_CASE("SLOWLOG trims long argument lists and strings as Valkey does") {
    Fixture f;
    f.run({"CONFIG", "SET", "slowlog-log-slower-than", "0"});
    std::vector<std::string> argv{"DEL"};
    for (int i = 0; i < 40; ++i) {
      argv.push_back(i == 0 ? std::string(200, 'x') : "k" + std::to_string(i));
    }
    f.run_vec(argv);
    RespValue v = f.run({"SLOWLOG", "GET", "1"});
    std::vector<std::string> logged = strings(v.elements[0].elements[3]);
    REQUIRE(logged.size() == 32);
    CHECK(logged[1] == std::string(128, 'x') + "... (72 more bytes)");
    CHECK(logged[31] == "... (10 more arguments)");
  }

  TEST_CASE("SLOWLOG keeps slowlog-max-len entries and can be disabled") {
    Fixture f;
    f.run({"CONFIG", "SET", "slowlog-log-slower-than", "0", "slowlog-max-len", "2"});
    for (int i = 0; i < 5; ++i) {
      f.run({"PING"});
    }
    CHECK(is_int(f.run({"SLOWLOG", "LEN"}), 2));
    CHECK(f.run({"SLOWLOG", "GET", "-1"}).elements.size() == 2);
    f.run({"CONFIG", "SET", "slowlog-log-slower-than", "-1"});
    f.run({"SLOWLOG", "RESET"});
    f.run({"PING"});
    CHECK(is_int(f.run({"SLOWLOG", "LEN"}), 0));
  }

  TEST_CASE("SLOWLOG GET argument errors") {
    Fixture f;
    CHECK(is_err(f.run({"SLOWLOG", "GET", "-2"}), errors::k_slowlog_count));
    CHECK(is_err(f.run({"SLOWLOG", "GET", "x"}), errors::k_slowlog_count));
    CHECK(is_err(f.run({"SLOWLOG", "GET", "1", "2"}),
                 "ERR unknown subcommand or wrong number of arguments for 'GET'. Try SLOWLOG "
                 "HELP."));
    CHECK(strings(f.run({"SLOWLOG", "HELP"})).size() == 12);
  }
}
