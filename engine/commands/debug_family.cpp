// Introspection of the keyspace and the process: DEBUG and MEMORY.
#include "engine/commands/context.hpp"
#include "engine/commands/families.hpp"
#include "engine/commands/info.hpp"
#include "engine/keyspace/digest.hpp"
#include "engine/keyspace/entry_digest.hpp"
#include "engine/keyspace/hash_value.hpp"
#include "engine/keyspace/list_value.hpp"
#include "engine/keyspace/set_value.hpp"
#include "engine/keyspace/stream_value.hpp"
#include "engine/keyspace/string_value.hpp"
#include "engine/keyspace/zset_value.hpp"
#include "engine/memory_usage.hpp"
#include "engine/persistence/aof.hpp"
#include "engine/persistence/rdb_load.hpp"
#include "engine/persistence/snapshots.hpp"
#include "engine/repl/replication_state.hpp"
#include "engine/tracking.hpp"
#include "engine/util/mapped_file.hpp"
#include "engine/util/strconv.hpp"
#include "engine/util/strings.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace keyshift::engine {
namespace {

/// The entry for `key` even if its TTL has passed (Valkey's dbFind: DEBUG and MEMORY look at
/// logically expired keys without deleting them), without touching its access time.
Entry* find_without_expiry(CmdContext& ctx, std::string_view key) {
  KeyspaceShared& ks = ctx.engine().keyspace();
  int64_t saved = ks.command_time_ms;
  ks.command_time_ms = 1;  // a time before every TTL, so nothing counts as expired
  Entry* e = ctx.db().lookup(key, false);
  ks.command_time_ms = saved;
  return e;
}

// --- MEMORY -----------------------------------------------------------------------------

void cmd_memory_usage(CmdContext& ctx) {
  for (size_t i = 3; i < ctx.argc(); ++i) {
    if (iequals(ctx.arg(i), "samples") && i + 1 < ctx.argc()) {
      int64_t samples = 0;
      if (!parse_int_arg(ctx, ctx.arg(i + 1), samples)) {
        return;
      }
      if (samples < 0) {
        ctx.reply().error(errors::k_syntax);
        return;
      }
      ++i;  // keyshift measures values exactly; the sample count changes nothing
    } else {
      ctx.reply().error(errors::k_syntax);
      return;
    }
  }
  Entry* e = find_without_expiry(ctx, ctx.arg(2));
  if (e == nullptr) {
    ctx.reply().null();
    return;
  }
  // The entry (key, value, TTL and header in one allocation, plus any heap value) and its
  // share of the table's bucket array.
  Db& db = ctx.db();
  uint64_t share = db.buckets() * sizeof(void*) / std::max<size_t>(db.size(), 1);
  ctx.reply().integer(static_cast<int64_t>(e->bytes_used() + share));
}

void cmd_memory_stats(CmdContext& ctx) {
  Engine& engine = ctx.engine();
  uint64_t used = engine.used_memory();
  uint64_t peak = peak_memory(engine);
  uint64_t rss = process_rss_bytes();
  uint64_t clients = clients_memory(engine);
  uint64_t startup = startup_memory(engine);
  struct DbOverhead {
    int id;
    uint64_t main;
    uint64_t expires;
  };
  std::vector<DbOverhead> dbs;
  uint64_t keys = 0;
  uint64_t overhead = 0;
  for (int i = 0; i < engine.db_count(); ++i) {
    Db& db = engine.db(i);
    if (db.size() == 0) {
      continue;
    }
    DbOverhead o{i, db.buckets() * sizeof(void*), db.expires_size() * sizeof(void*)};
    overhead += o.main + o.expires;
    keys += db.size();
    dbs.push_back(o);
  }
  overhead = std::min(overhead + startup + clients_state_memory(engine), used);
  uint64_t dataset = used - overhead;
  double fused = static_cast<double>(std::max<uint64_t>(used, 1));
  double frag = used != 0 ? static_cast<double>(rss) / fused : 0;
  int64_t frag_bytes = static_cast<int64_t>(rss) - static_cast<int64_t>(used);
  ReplyBuilder& r = ctx.reply();
  r.map(31 + dbs.size());
  auto num = [&](std::string_view name, int64_t v) {
    r.bulk(name);
    r.integer(v);
  };
  auto dbl = [&](std::string_view name, double v) {
    r.bulk(name);
    r.double_value(v);
  };
  num("peak.allocated", static_cast<int64_t>(peak));
  num("total.allocated", static_cast<int64_t>(used));
  num("startup.allocated", static_cast<int64_t>(startup));
  num("replication.backlog", 0);
  num("clients.slaves", 0);
  num("clients.normal", static_cast<int64_t>(clients));
  num("cluster.links", 0);
  num("aof.buffer", 0);
  num("lua.caches", 0);
  num("functions.caches", 0);
  for (const DbOverhead& o : dbs) {
    r.bulk("db." + std::to_string(o.id));
    r.map(2);
    num("overhead.hashtable.main", static_cast<int64_t>(o.main));
    num("overhead.hashtable.expires", static_cast<int64_t>(o.expires));
  }
  num("overhead.db.hashtable.lut", 0);
  num("overhead.db.hashtable.rehashing", 0);
  num("overhead.total", static_cast<int64_t>(overhead));
  num("db.dict.rehashing.count", 0);
  num("keys.count", static_cast<int64_t>(keys));
  num("keys.bytes-per-key", static_cast<int64_t>(keys != 0 ? used / keys : 0));
  num("dataset.bytes", static_cast<int64_t>(dataset));
  dbl("dataset.percentage", used != 0 ? static_cast<double>(dataset) * 100 / fused : 0);
  dbl("peak.percentage",
      peak != 0 ? static_cast<double>(used) * 100 / static_cast<double>(peak) : 0);
  num("allocator.allocated", static_cast<int64_t>(used));
  num("allocator.active", static_cast<int64_t>(used));
  num("allocator.resident", static_cast<int64_t>(rss));
  num("allocator.muzzy", 0);
  dbl("allocator-fragmentation.ratio", 1.0);
  num("allocator-fragmentation.bytes", 0);
  dbl("allocator-rss.ratio", 1.0);
  num("allocator-rss.bytes", 0);
  dbl("rss-overhead.ratio", frag);
  num("rss-overhead.bytes", frag_bytes);
  dbl("fragmentation", frag);
  num("fragmentation.bytes", frag_bytes);
}

void cmd_memory_doctor(CmdContext& ctx) {
  Engine& engine = ctx.engine();
  uint64_t used = engine.used_memory();
  uint64_t peak = peak_memory(engine);
  std::string report;
  if (used < 5 * 1024 * 1024) {
    report =
        "Hi Sam, this instance is empty or is using very little memory, my issues detector "
        "can't be used in these conditions. Please, leave for your mission on Earth and fill it "
        "with some data. The new Sam and I will be back to our programming as soon as I "
        "finished rebooting.\n";
  } else if (static_cast<double>(peak) / static_cast<double>(used) > 1.5) {
    report =
        "Sam, I detected a few issues in this Valkey instance memory implants:\n\n"
        " * Peak memory: In the past this instance used more than 150% the memory that is "
        "currently using. The allocator is normally not able to release memory after a peak, so "
        "you can expect to see a big fragmentation ratio, however this is actually harmless and "
        "is only due to the memory peak, and if the Valkey instance Resident Set Size (RSS) is "
        "currently bigger than expected, the memory will be used as soon as you fill the Valkey "
        "instance with more data. If the memory peak was only occasional and you want to try to "
        "reclaim memory, please try the MEMORY PURGE command, otherwise the only other option is "
        "to shutdown and restart the instance.\n\n"
        "I'm here to keep you safe, Sam. I want to help you.\n";
  } else {
    report =
        "Hi Sam, I can't find any memory issue in your instance. I can only account for what "
        "occurs on this base.\n";
  }
  ctx.reply().verbatim(report);
}

void cmd_memory_malloc_stats(CmdContext& ctx) {
  ctx.reply().bulk("Stats not supported for the current allocator");
}

void cmd_memory_purge(CmdContext& ctx) {
  ctx.reply().ok();
}

void cmd_memory_help(CmdContext& ctx) {
  reply_help(ctx, {
                      "DOCTOR",
                      "    Return memory problems reports.",
                      "MALLOC-STATS",
                      "    Return internal statistics report from the memory allocator.",
                      "PURGE",
                      "    Attempt to purge dirty pages for reclamation by the allocator.",
                      "STATS",
                      "    Return information about the memory usage of the server.",
                      "USAGE <key> [SAMPLES <count>]",
                      "    Return memory in bytes used by <key> and its value. Nested values are",
                      "    sampled up to <count> times (default: 5, 0 means sample all).",
                  });
}

// --- DEBUG ------------------------------------------------------------------------------

/// Bytes of an RDB length prefix for `len`.
uint64_t rdb_length_size(uint64_t len) {
  if (len < (1u << 6)) {
    return 1;
  }
  if (len < (1u << 14)) {
    return 2;
  }
  return len <= UINT32_MAX ? 5 : 9;
}

/// Bytes of an RDB integer-encoded string for `v`, 0 when it does not fit 32 bits.
uint64_t rdb_int_size(int64_t v) {
  if (v >= -(1 << 7) && v <= (1 << 7) - 1) {
    return 2;
  }
  if (v >= -(1 << 15) && v <= (1 << 15) - 1) {
    return 3;
  }
  return v >= INT32_MIN && v <= INT32_MAX ? 5 : 0;
}

/// DEBUG OBJECT's serializedlength of a string value: integer encoding when RDB would use
/// it, else length prefix and bytes (RDB's LZF compression of long strings is not modelled).
uint64_t serialized_length(const Entry* e) {
  if (e->type() != ObjType::string) {
    // Collections: their RDB form is not written yet (RDB support comes later), so report
    // the in-memory size as the closest figure rather than misreading them as strings.
    return e->bytes_used() - MemoryCounter::usable_size(e);
  }
  IntBuffer buf;
  std::string_view s = string_of(e, buf);
  int64_t v = 0;
  if (s.size() <= 11 && parse_i64(s, v)) {
    if (uint64_t n = rdb_int_size(v); n != 0) {
      return n;
    }
  }
  return rdb_length_size(s.size()) + s.size();
}

/// Valkey's shared integers (0..9999) are used unless maxmemory evicts by LRU/LFU.
bool uses_shared_integer(const Engine& engine, const Entry* e) {
  if (e->kind() != Entry::Kind::integer || e->integer() < 0 || e->integer() >= 10000) {
    return false;
  }
  EvictionPolicy p = engine.config().maxmemory_policy;
  bool lru_lfu = p == EvictionPolicy::allkeys_lru || p == EvictionPolicy::allkeys_lfu ||
                 p == EvictionPolicy::volatile_lru || p == EvictionPolicy::volatile_lfu;
  return engine.config().maxmemory == 0 || !lru_lfu;
}

void debug_object(CmdContext& ctx) {
  bool fast = ctx.argc() == 4 && iequals(ctx.arg(3), "fast");
  Entry* e = find_without_expiry(ctx, ctx.arg(2));
  if (e == nullptr) {
    ctx.reply().error(errors::k_no_such_key);
    return;
  }
  Engine& engine = ctx.engine();
  int64_t now = ctx.now_ms();
  char buf[512];
  int n = std::snprintf(buf, sizeof(buf), "Value at:%p refcount:%d encoding:%s",
                        static_cast<const void*>(e), uses_shared_integer(engine, e) ? INT32_MAX : 1,
                        encoding_name(e->encoding()));
  std::string line(buf, static_cast<size_t>(n));
  if (!fast) {
    line += " serializedlength:" + std::to_string(serialized_length(e));
  }
  n = std::snprintf(
      buf, sizeof(buf), " lru:%u lru_seconds_idle:%lld lfu_freq:%u lfu_access_time_minutes:%u",
      e->lru(), static_cast<long long>(lru_idle_ms(e->lru(), now) / 1000),
      static_cast<unsigned>(lfu_counter(e->lru(), now, engine.config().lfu_decay_time)),
      e->lru() >> 8);
  line.append(buf, static_cast<size_t>(n));
  ctx.reply().simple(line);
}

void debug_digest(CmdContext& ctx) {
  Engine& engine = ctx.engine();
  DatasetDigest dataset;
  for (int i = 0; i < engine.db_count(); ++i) {
    // Every stored key counts, expired or not, as Valkey iterates its dictionaries.
    engine.db(i).for_each(
        [&](const Entry* e) { dataset.add(i, value_digest(e, key_digest_seed(e->key()))); });
  }
  ctx.reply().simple(dataset.hex());
}

void debug_digest_value(CmdContext& ctx) {
  ctx.reply().array(ctx.argc() - 2);
  for (size_t i = 2; i < ctx.argc(); ++i) {
    Entry* e = find_without_expiry(ctx, ctx.arg(i));
    ctx.reply().simple(e != nullptr ? value_digest(e, Digest{}).hex() : Digest{}.hex());
  }
}

void debug_populate(CmdContext& ctx) {
  int64_t count = 0;
  if (!parse_i64(ctx.arg(2), count) || count < 0) {
    ctx.reply().error(errors::k_must_be_positive);
    return;
  }
  int64_t size = 0;
  if (ctx.argc() == 5 && (!parse_i64(ctx.arg(4), size) || size < 0)) {
    ctx.reply().error(errors::k_must_be_positive);
    return;
  }
  std::string prefix = ctx.argc() >= 4 ? std::string(ctx.arg(3)) : std::string("key");
  Db& db = ctx.db();
  for (int64_t j = 0; j < count; ++j) {
    // Valkey formats names into a 128-byte buffer, so long prefixes are cut.
    std::string key = (prefix + ":" + std::to_string(j)).substr(0, 127);
    if (db.lookup(key, false) != nullptr) {
      continue;
    }
    std::string value = "value:" + std::to_string(j);
    if (size != 0) {
      value.resize(static_cast<size_t>(size), '\0');
    }
    db.add(key, size == 0 ? make_string_spec(value) : make_raw_string_spec(value));
  }
  ctx.reply().ok();
}

void debug_protocol(CmdContext& ctx) {
  ReplyBuilder& r = ctx.reply();
  std::string_view name = ctx.arg(2);
  if (iequals(name, "string")) {
    r.bulk("Hello World");
  } else if (iequals(name, "integer")) {
    r.integer(12345);
  } else if (iequals(name, "double")) {
    r.double_value(3.141);
  } else if (iequals(name, "bignum")) {
    constexpr std::string_view k_big = "1234567999999999999999999999999999999";
    if (r.resp() >= 3) {
      r.raw("(" + std::string(k_big) + "\r\n");
    } else {
      r.bulk(k_big);
    }
  } else if (iequals(name, "null")) {
    r.null();
  } else if (iequals(name, "array") || iequals(name, "set")) {
    iequals(name, "array") ? r.array(3) : r.set(3);
    for (int j = 0; j < 3; ++j) {
      r.integer(j);
    }
  } else if (iequals(name, "map")) {
    r.map(3);
    for (int j = 0; j < 3; ++j) {
      r.integer(j);
      r.boolean(j == 1);
    }
  } else if (iequals(name, "attrib")) {
    if (r.resp() >= 3) {
      r.raw("|1\r\n");
      r.bulk("key-popularity");
      r.array(2);
      r.bulk("key:123");
      r.integer(90);
    }
    r.bulk("Some real reply following the attribute");
  } else if (iequals(name, "push")) {
    if (r.resp() < 3) {
      r.error(errors::k_resp2_not_supported);
      return;
    }
    r.push(2);
    r.bulk("server-cpu-usage");
    r.integer(42);
    r.bulk("Some real reply following the push reply");
  } else if (iequals(name, "true")) {
    r.boolean(true);
  } else if (iequals(name, "false")) {
    r.boolean(false);
  } else if (iequals(name, "verbatim")) {
    r.verbatim("This is a verbatim\nstring");
  } else {
    r.error(errors::k_debug_protocol_type);
  }
}

void debug_help(CmdContext& ctx) {
  // The subcommands keyshift implements, worded as Valkey's DEBUG HELP.
  reply_help(ctx, {
                      "CHANGE-REPL-ID",
                      "    Change the replication IDs of the instance.",
                      "    Dangerous: should be used only for testing the replication subsystem.",
                      "DIGEST",
                      "    Output a hex signature representing the current DB content.",
                      "DIGEST-VALUE <key> [<key> ...]",
                      "    Output a hex signature of the values of all the specified keys.",
                      "ERROR <string>",
                      "    Return a RESP protocol error with <string> as message. Useful for "
                      "clients",
                      "    unit tests to simulate error replies.",
                      "OBJECT <key> [fast]",
                      "    Show low level info about `key` and associated value.",
                      "    Some fields of the default behavior may be time consuming to fetch,",
                      "    and `fast` can be passed to avoid fetching them.",
                      "POPULATE <count> [<prefix>] [<size>]",
                      "    Create <count> string keys named key:<num>. If <prefix> is specified "
                      "then",
                      "    it is used instead of the 'key' prefix. These are not propagated to",
                      "    replicas. Cluster slots are not respected so keys not belonging to the",
                      "    current node can be created in cluster mode.",
                      "PROTOCOL <type>",
                      "    Reply with a test value of the specified type. <type> can be: string,",
                      "    integer, double, bignum, null, array, set, map, attrib, push, verbatim,",
                      "    true, false.",
                      "SET-ACTIVE-EXPIRE <0|1>",
                      "    Setting it to 0 disables expiring keys in background when they are not",
                      "    accessed (otherwise the behavior). Setting it to 1 reenables back the",
                      "    default.",
                      "SLEEP <seconds>",
                      "    Stop the server for <seconds>. Decimals allowed.",
                  });
}

/// DEBUG RELOAD [MERGE] [NOFLUSH] [NOSAVE]: save, empty the dataset and load the snapshot
/// back, proving the data survives a restart.
void debug_reload(CmdContext& ctx) {
  bool merge = false;
  bool flush = true;
  bool save = true;
  for (size_t j = 2; j < ctx.argc(); ++j) {
    if (iequals(ctx.arg(j), "merge")) {
      merge = true;
    } else if (iequals(ctx.arg(j), "noflush")) {
      flush = false;
    } else if (iequals(ctx.arg(j), "nosave")) {
      save = false;
    } else {
      ctx.reply().error(errors::k_debug_reload_options);
      return;
    }
  }
  Engine& engine = ctx.engine();
  if (save && !engine.snapshots().save(engine)) {
    ctx.reply().error(errors::k_generic_err);
    return;
  }
  if (flush) {
    for (int i = 0; i < engine.db_count(); ++i) {
      engine.signal_flushed_db(i);
      engine.db(i).flush();
    }
    engine.tracking().invalidate_all();
  }
  auto file = MappedFile::open(Snapshots::path_of(engine));
  RdbLoadOptions options;
  options.replace_existing = merge;
  auto loaded =
      file ? load_rdb(engine, file->data(), options)
           : Expected<RdbLoadStats, RdbError>(Unexpected{RdbError{0, file.error().message()}});
  if (!loaded) {
    ctx.reply().error(errors::k_debug_reload_failed);
    return;
  }
  engine.snapshots().note_load(loaded->keys_loaded, loaded->expired_skipped);
  ctx.reply().ok();
}

// Valkey's reply when DEBUG LOADAOF finds no AOF or cannot load it. (Kept here rather
// than in errors.hpp only to spare every family a rebuild; move it there on a merge.)
constexpr std::string_view k_debug_loadaof_failed =
    "ERR Error trying to load the AOF files, check server logs.";

/// DEBUG LOADAOF: writes the AOF buffer, empties every database and loads the AOF again
/// (Valkey's debug.c), which proves what the AOF holds.
void debug_loadaof(CmdContext& ctx) {
  Engine& engine = ctx.engine();
  Aof& aof = engine.aof();
  if (aof.on()) {
    aof.flush(true);
  }
  for (int i = 0; i < engine.db_count(); ++i) {
    engine.signal_flushed_db(i);
    engine.db(i).flush();
  }
  engine.tracking().invalidate_all();
  auto report = aof.load();
  if (!report || !report->found) {
    ctx.reply().error(k_debug_loadaof_failed);
    return;
  }
  ctx.reply().ok();
}

void cmd_debug(CmdContext& ctx) {
  std::string_view sub = ctx.arg(1);
  size_t argc = ctx.argc();
  if (argc == 2 && iequals(sub, "help")) {
    debug_help(ctx);
  } else if (iequals(sub, "object") && (argc == 3 || argc == 4)) {
    debug_object(ctx);
  } else if (iequals(sub, "populate") && argc >= 3 && argc <= 5) {
    debug_populate(ctx);
  } else if (iequals(sub, "digest") && argc == 2) {
    debug_digest(ctx);
  } else if (iequals(sub, "digest-value") && argc >= 2) {
    debug_digest_value(ctx);
  } else if (iequals(sub, "reload")) {
    debug_reload(ctx);
  } else if (iequals(sub, "loadaof") && argc == 2) {
    debug_loadaof(ctx);
  } else if (iequals(sub, "protocol") && argc == 3) {
    debug_protocol(ctx);
  } else if (iequals(sub, "sleep") && argc == 3) {
    // A real sleep: stalling the server is what DEBUG SLEEP is for.
    double seconds = std::strtod(std::string(ctx.arg(2)).c_str(), nullptr);
    int64_t us = static_cast<int64_t>(seconds * 1000000);
    if (us > 0) {
      std::this_thread::sleep_for(std::chrono::microseconds(us));
    }
    ctx.reply().ok();
  } else if (iequals(sub, "set-active-expire") && argc == 3) {
    ctx.engine().config().active_expire = std::atoi(std::string(ctx.arg(2)).c_str()) != 0;
    ctx.reply().ok();
  } else if (iequals(sub, "error") && argc == 3) {
    // Sent as raw protocol, as Valkey does: not counted in errorstats.
    std::string text(ctx.arg(2));
    std::replace(text.begin(), text.end(), '\n', ' ');
    std::replace(text.begin(), text.end(), '\r', ' ');
    ctx.reply().raw("-" + text + "\r\n");
  } else if (iequals(sub, "change-repl-id") && argc == 2) {
    static constexpr char k_hex[] = "0123456789abcdef";
    std::string id(40, '0');
    for (char& c : id) {
      c = k_hex[ctx.engine().rng()() & 15];
    }
    ctx.engine().replication().set_replid(std::move(id));
    ctx.reply().ok();
  } else {
    ctx.reply().error(subcommand_syntax_error(ctx));
  }
}

// --- Registration -----------------------------------------------------------------------

// Rows as Valkey 8.0.1's commands.def has them (tests check every row against the generated
// table). Containers have no handler.
constexpr uint32_t k_ls = k_cmd_loading | k_cmd_stale;
constexpr uint32_t k_admin = k_cmd_admin | k_cmd_noscript | k_ls;
constexpr std::string_view k_admin_acl = "@admin @slow @dangerous";
constexpr std::string_view k_conn_acl = "@slow @connection";

constexpr CommandSpec k_debug_commands[] = {
    {"memory", -2, 0, 0, 0, 0, nullptr, "@slow"},
    {"memory|doctor", 2, 0, 0, 0, 0, cmd_memory_doctor, "@slow"},
    {"memory|help", 2, k_ls, 0, 0, 0, cmd_memory_help, "@slow"},
    {"memory|malloc-stats", 2, 0, 0, 0, 0, cmd_memory_malloc_stats, "@slow"},
    {"memory|purge", 2, 0, 0, 0, 0, cmd_memory_purge, "@slow"},
    {"memory|stats", 2, 0, 0, 0, 0, cmd_memory_stats, "@slow"},
    {"memory|usage", -3, k_cmd_readonly, 2, 2, 1, cmd_memory_usage, "@read @slow"},
    {"debug", -2, k_admin | k_cmd_protected, 0, 0, 0, cmd_debug, k_admin_acl},
};

}  // namespace

void register_debug_family(CommandRegistry& registry) {
  registry.add(k_debug_commands);
}

}  // namespace keyshift::engine
