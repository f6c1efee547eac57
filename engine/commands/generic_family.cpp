// Key-space commands: DEL, EXISTS, TYPE, RENAME, KEYS, SCAN, RANDOMKEY, TOUCH, expiry,
// OBJECT, MOVE, COPY, SWAPDB.
#include "engine/commands/context.hpp"
#include "engine/commands/expire_args.hpp"
#include "engine/commands/families.hpp"
#include "engine/util/glob.hpp"
#include "engine/util/status.hpp"
#include "engine/util/strconv.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace keyshift::engine {
namespace {

// Valkey hands out one shared object for small integer strings (0..9999), and OBJECT
// REFCOUNT reports its "never freed" count for them.
constexpr int64_t k_shared_integers = 10000;
constexpr int64_t k_shared_refcount = INT32_MAX;

/// False when the session asked for CLIENT NO-TOUCH (lookups then leave LRU/LFU alone).
bool may_touch(CmdContext& ctx) {
  return !ctx.session().has(k_session_no_touch);
}

/// Tells WATCH and keyspace notifications that `key` in database `db` changed by a generic
/// command, as event `event`.
void signal_generic(CmdContext& ctx, int db, std::string_view key, std::string_view event) {
  ctx.engine().signal_modified_key(db, key);
  ctx.engine().notify_keyspace_event(k_notify_generic, event, key, db);
}

bool is_lfu_policy(EvictionPolicy p) {
  return p == EvictionPolicy::allkeys_lfu || p == EvictionPolicy::volatile_lfu;
}

bool is_lru_policy(EvictionPolicy p) {
  return p == EvictionPolicy::allkeys_lru || p == EvictionPolicy::volatile_lru;
}

/// Valkey stops sharing integer values once LRU/LFU eviction needs a private access time
/// per value.
bool shared_integers_allowed(const EngineConfig& cfg) {
  return cfg.maxmemory == 0 ||
         !(is_lru_policy(cfg.maxmemory_policy) || is_lfu_policy(cfg.maxmemory_policy));
}

std::string unsupported_option_error(std::string_view option) {
  std::string e(errors::k_unsupported_option_prefix);
  e += c_string(option);
  return e;
}

std::string unknown_type_error(std::string_view name) {
  std::string e(errors::k_unknown_type_name_prefix);
  e += c_string(name);
  e += '\'';
  return e;
}

/// Parses a 32-bit integer argument as Valkey's getIntFromObjectOrReply: on failure replies
/// with `error` when given, else with the generic integer/range errors.
bool parse_int_arg(CmdContext& ctx, std::string_view arg, std::string_view error, int& out) {
  int64_t v = 0;
  if (!parse_i64(arg, v)) {
    ctx.reply().error(error.empty() ? errors::k_not_integer : error);
    return false;
  }
  if (v < INT32_MIN || v > INT32_MAX) {
    ctx.reply().error(error.empty() ? errors::k_int_out_of_range : error);
    return false;
  }
  out = static_cast<int>(v);
  return true;
}

/// Parses a database number for MOVE and COPY: an int, then a valid index.
bool parse_db_arg(CmdContext& ctx, std::string_view arg, int& out) {
  if (!parse_int_arg(ctx, arg, {}, out)) {
    return false;
  }
  if (out < 0 || out >= ctx.engine().db_count()) {
    ctx.reply().error(errors::k_db_index_out_of_range);
    return false;
  }
  return true;
}

// --- Operations -------------------------------------------------------------------------

/// Removes `key`; true if it was live (an expired one is reclaimed but not counted).
bool op_del(Db& db, std::string_view key) {
  return db.remove(key);
}

/// Number of keys that are live, counting a repeated key each time it appears.
int64_t op_exists(Db& db, std::span<const std::string_view> keys) {
  int64_t n = 0;
  for (std::string_view k : keys) {
    n += db.lookup_read(k, false) != nullptr ? 1 : 0;
  }
  return n;
}

enum class RenameOutcome : uint8_t { renamed, same_key, target_exists };

/// Renames `from` to `to` keeping value, TTL and access time; key_not_found when `from` is
/// missing. With `nx` an existing `to` is left alone.
Result<RenameOutcome> op_rename(Db& db, std::string_view from, std::string_view to, bool nx,
                                bool touch) {
  if (db.lookup(from, touch) == nullptr) {
    return OpStatus::key_not_found;
  }
  if (from == to) {
    return RenameOutcome::same_key;
  }
  if (db.lookup(to, touch) != nullptr) {
    if (nx) {
      return RenameOutcome::target_exists;
    }
    db.remove(to);
  }
  db.attach_renamed(db.detach(from), to);
  return RenameOutcome::renamed;
}

/// Moves `key` from `src` to `dst` unless it is missing or `dst` already has it.
bool op_move(Db& src, Db& dst, std::string_view key, bool touch) {
  if (src.lookup(key, touch) == nullptr || dst.lookup(key, touch) != nullptr) {
    return false;
  }
  dst.attach(src.detach(key));
  return true;
}

/// Stores a deep copy of `key` (value and TTL) from `src` as `new_key` in `dst`; false when
/// the source is missing or the target exists without `replace`.
bool op_copy(Db& src, Db& dst, std::string_view key, std::string_view new_key, bool replace,
             bool touch) {
  Entry* e = src.lookup_read(key, touch);
  if (e == nullptr) {
    return false;
  }
  bool target_exists = dst.lookup(new_key, touch) != nullptr;
  if (target_exists && !replace) {
    return false;
  }
  int64_t expire = e->has_expire() ? e->expire_ms() : -1;
  // The clone's inline bytes point into `e`, which no step below frees: the target is a
  // different key or a different database.
  Entry::ValueSpec spec = clone_value(e);
  if (target_exists) {
    dst.remove(new_key);
  }
  dst.add(new_key, spec, expire);
  return true;
}

enum ExpireCondition : uint8_t {
  k_expire_nx = 1,
  k_expire_xx = 2,
  k_expire_gt = 4,
  k_expire_lt = 8,
};

enum class ExpireOutcome : uint8_t { unchanged, set, deleted };

/// Applies an absolute expire time under NX/XX/GT/LT; a time not after `now_ms` deletes the
/// key.
ExpireOutcome op_expire(Db& db, std::string_view key, int64_t when_ms, uint8_t conditions,
                        int64_t now_ms, bool touch) {
  Entry* e = db.lookup(key, touch);
  if (e == nullptr) {
    return ExpireOutcome::unchanged;
  }
  int64_t current = e->has_expire() ? e->expire_ms() : -1;
  bool has_ttl = e->has_expire();
  if ((conditions & k_expire_nx) && has_ttl) {
    return ExpireOutcome::unchanged;
  }
  if ((conditions & k_expire_xx) && !has_ttl) {
    return ExpireOutcome::unchanged;
  }
  // No TTL counts as an infinite one: never smaller, never exceeded.
  if ((conditions & k_expire_gt) && (!has_ttl || when_ms <= current)) {
    return ExpireOutcome::unchanged;
  }
  if ((conditions & k_expire_lt) && has_ttl && when_ms >= current) {
    return ExpireOutcome::unchanged;
  }
  if (when_ms <= now_ms) {
    db.remove(key);
    return ExpireOutcome::deleted;
  }
  db.set_expire(e, when_ms);
  return ExpireOutcome::set;
}

/// Remaining TTL (or absolute expire time) in ms: -2 missing, -1 no TTL.
int64_t op_ttl_ms(Db& db, std::string_view key, bool absolute, int64_t now_ms) {
  Entry* e = db.lookup_read(key, false);
  if (e == nullptr) {
    return -2;
  }
  if (!e->has_expire()) {
    return -1;
  }
  int64_t t = absolute ? e->expire_ms() : e->expire_ms() - now_ms;
  return t < 0 ? 0 : t;
}

/// Removes the TTL of `key`; true if it had one.
bool op_persist(Db& db, std::string_view key, bool touch) {
  Entry* e = db.lookup(key, touch);
  if (e == nullptr || !e->has_expire()) {
    return false;
  }
  db.persist(e);
  return true;
}

/// A random live key, reclaiming expired keys met on the way; nullopt when empty.
std::optional<std::string> op_random_key(Db& db) {
  while (true) {
    Entry* e = db.random_entry();
    if (e == nullptr) {
      return std::nullopt;
    }
    std::string key(e->key());
    if (!db.is_expired(e)) {
      return key;
    }
    db.exists(key);  // reclaims it
  }
}

struct ScanFilter {
  int64_t count = 10;
  std::optional<std::string_view> pattern;
  std::optional<ObjType> type;
};

/// One SCAN step from `cursor`: visits buckets until about `count` keys were sampled (at
/// most ten times `count` bucket steps), keeps the keys that pass the filter and are live.
uint64_t op_scan(Db& db, uint64_t cursor, const ScanFilter& f, std::vector<std::string>& out) {
  int64_t sampled = 0;
  int64_t budget = f.count > INT64_MAX / 10 ? INT64_MAX : f.count * 10;
  auto visit = [&](Entry* e) {
    ++sampled;
    if (f.type && e->type() != *f.type) {
      return;
    }
    if (f.pattern && !glob_match(*f.pattern, e->key())) {
      return;
    }
    out.emplace_back(e->key());
  };
  do {
    cursor = db.scan(cursor, visit);
  } while (cursor != 0 && budget-- != 0 && sampled < f.count);
  // Keys are checked only after the table walk: reclaiming one changes the table.
  std::erase_if(out, [&](const std::string& k) { return !db.exists(k); });
  return cursor;
}

// --- Handlers ---------------------------------------------------------------------------

void cmd_del(CmdContext& ctx) {
  int64_t n = 0;
  for (size_t i = 1; i < ctx.argc(); ++i) {
    if (op_del(ctx.db(), ctx.arg(i))) {
      signal_generic(ctx, ctx.session().db, ctx.arg(i), "del");
      ++n;
    }
  }
  ctx.reply().integer(n);
}

void cmd_exists(CmdContext& ctx) {
  ctx.reply().integer(op_exists(ctx.db(), ctx.args().subspan(1)));
}

void cmd_type(CmdContext& ctx) {
  Entry* e = ctx.db().lookup_read(ctx.arg(1), false);
  ctx.reply().simple(e == nullptr ? "none" : type_name(e->type()));
}

void rename_generic(CmdContext& ctx, bool nx) {
  auto r = op_rename(ctx.db(), ctx.arg(1), ctx.arg(2), nx, may_touch(ctx));
  if (!r) {
    ctx.reply().error(errors::k_no_such_key);
    return;
  }
  bool renamed = *r == RenameOutcome::renamed;
  if (renamed) {
    int db = ctx.session().db;
    ctx.engine().signal_modified_key(db, ctx.arg(1));
    ctx.engine().signal_modified_key(db, ctx.arg(2), 0);  // one change for both, as Valkey
    ctx.engine().notify_keyspace_event(k_notify_generic, "rename_from", ctx.arg(1), db);
    ctx.engine().notify_keyspace_event(k_notify_generic, "rename_to", ctx.arg(2), db);
    ctx.engine().signal_key_as_ready(db, ctx.arg(2));  // a list may serve blocked clients
  }
  if (nx) {
    ctx.reply().integer(renamed ? 1 : 0);
  } else {
    ctx.reply().ok();
  }
}

void cmd_rename(CmdContext& ctx) {
  rename_generic(ctx, false);
}
void cmd_renamenx(CmdContext& ctx) {
  rename_generic(ctx, true);
}

void cmd_keys(CmdContext& ctx) {
  std::string_view pattern = ctx.arg(1);
  bool all = pattern == "*";
  Db& db = ctx.db();
  ReplyBuilder& rb = ctx.reply();
  size_t mark = rb.begin_array();
  size_t n = 0;
  // Expired keys are skipped but not reclaimed: the walk must not change the table.
  db.for_each([&](Entry* e) {
    if ((all || glob_match(pattern, e->key())) && !db.is_expired(e)) {
      rb.bulk(e->key());
      ++n;
    }
  });
  rb.end_array(mark, n);
}

void cmd_scan(CmdContext& ctx) {
  uint64_t cursor = 0;
  if (!parse_scan_cursor(ctx.arg(1), cursor)) {
    ctx.reply().error(errors::k_cursor_invalid);
    return;
  }
  ScanFilter f;
  for (size_t i = 2; i < ctx.argc();) {
    std::string_view opt = ctx.arg(i);
    bool has_value = ctx.argc() - i >= 2;
    if (is_keyword(opt, "count") && has_value) {
      if (!parse_i64(ctx.arg(i + 1), f.count)) {
        ctx.reply().error(errors::k_not_integer);
        return;
      }
      if (f.count < 1) {
        ctx.reply().error(errors::k_syntax);
        return;
      }
      i += 2;
    } else if (is_keyword(opt, "match") && has_value) {
      std::string_view p = ctx.arg(i + 1);
      // A lone "*" matches everything, so it filters nothing.
      f.pattern = p == "*" ? std::nullopt : std::optional<std::string_view>(p);
      i += 2;
    } else if (is_keyword(opt, "type") && has_value) {
      std::string_view name = c_string(ctx.arg(i + 1));
      f.type.reset();
      for (ObjType t : {ObjType::string, ObjType::list, ObjType::set, ObjType::zset, ObjType::hash,
                        ObjType::stream}) {
        if (iequals(name, type_name(t))) {
          f.type = t;
        }
      }
      if (!f.type) {
        ctx.reply().error(unknown_type_error(ctx.arg(i + 1)));
        return;
      }
      i += 2;
    } else if (is_keyword(opt, "novalues")) {
      ctx.reply().error(errors::k_novalues_hscan_only);
      return;
    } else if (is_keyword(opt, "noscores")) {
      ctx.reply().error(errors::k_noscores_zscan_only);
      return;
    } else {
      ctx.reply().error(errors::k_syntax);
      return;
    }
  }
  std::vector<std::string> keys;
  uint64_t next = op_scan(ctx.db(), cursor, f, keys);
  ReplyBuilder& rb = ctx.reply();
  rb.array(2);
  // Valkey prints the cursor as a signed 64-bit number.
  rb.bulk(i64_to_string(static_cast<int64_t>(next)));
  rb.array(keys.size());
  for (const std::string& k : keys) {
    rb.bulk(k);
  }
}

void cmd_randomkey(CmdContext& ctx) {
  auto key = op_random_key(ctx.db());
  if (!key) {
    ctx.reply().null();
    return;
  }
  ctx.reply().bulk(*key);
}

void cmd_touch(CmdContext& ctx) {
  // TOUCH updates access times even for CLIENT NO-TOUCH sessions: that is its purpose.
  int64_t n = 0;
  for (size_t i = 1; i < ctx.argc(); ++i) {
    n += ctx.db().lookup_read(ctx.arg(i), true) != nullptr ? 1 : 0;
  }
  ctx.reply().integer(n);
}

void expire_generic(CmdContext& ctx, TtlUnit unit, bool absolute) {
  uint8_t conditions = 0;
  for (size_t i = 3; i < ctx.argc(); ++i) {
    std::string_view opt = ctx.arg(i);
    if (is_keyword(opt, "nx")) {
      conditions |= k_expire_nx;
    } else if (is_keyword(opt, "xx")) {
      conditions |= k_expire_xx;
    } else if (is_keyword(opt, "gt")) {
      conditions |= k_expire_gt;
    } else if (is_keyword(opt, "lt")) {
      conditions |= k_expire_lt;
    } else {
      ctx.reply().error(unsupported_option_error(opt));
      return;
    }
  }
  if ((conditions & k_expire_nx) && (conditions & (k_expire_xx | k_expire_gt | k_expire_lt))) {
    ctx.reply().error(errors::k_nx_xx_gt_lt);
    return;
  }
  if ((conditions & k_expire_gt) && (conditions & k_expire_lt)) {
    ctx.reply().error(errors::k_gt_and_lt);
    return;
  }
  int64_t value = 0;
  if (!parse_i64(ctx.arg(2), value)) {
    ctx.reply().error(errors::k_not_integer);
    return;
  }
  int64_t when = 0;
  if (!to_absolute_ms(value, unit, absolute, ctx.now_ms(), when, true)) {
    ctx.reply().error(invalid_expire_error(ctx.command().full_name));
    return;
  }
  ExpireOutcome outcome =
      op_expire(ctx.db(), ctx.arg(1), when, conditions, ctx.now_ms(), may_touch(ctx));
  if (outcome != ExpireOutcome::unchanged) {
    // A time in the past removes the key, which watchers see as a DEL.
    signal_generic(ctx, ctx.session().db, ctx.arg(1),
                   outcome == ExpireOutcome::deleted ? "del" : "expire");
  }
  ctx.reply().integer(outcome != ExpireOutcome::unchanged ? 1 : 0);
}

void cmd_expire(CmdContext& ctx) {
  expire_generic(ctx, TtlUnit::seconds, false);
}
void cmd_pexpire(CmdContext& ctx) {
  expire_generic(ctx, TtlUnit::milliseconds, false);
}
void cmd_expireat(CmdContext& ctx) {
  expire_generic(ctx, TtlUnit::seconds, true);
}
void cmd_pexpireat(CmdContext& ctx) {
  expire_generic(ctx, TtlUnit::milliseconds, true);
}

void ttl_generic(CmdContext& ctx, bool in_ms, bool absolute) {
  int64_t t = op_ttl_ms(ctx.db(), ctx.arg(1), absolute, ctx.now_ms());
  if (t < 0 || in_ms) {
    ctx.reply().integer(t);
    return;
  }
  // Rounded to the nearest second. `t` is never negative here, and the rounding must not
  // overflow near INT64_MAX: Valkey's build replies the unsigned result there.
  ctx.reply().integer(static_cast<int64_t>((static_cast<uint64_t>(t) + 500) / 1000));
}

void cmd_ttl(CmdContext& ctx) {
  ttl_generic(ctx, false, false);
}
void cmd_pttl(CmdContext& ctx) {
  ttl_generic(ctx, true, false);
}
void cmd_expiretime(CmdContext& ctx) {
  ttl_generic(ctx, false, true);
}
void cmd_pexpiretime(CmdContext& ctx) {
  ttl_generic(ctx, true, true);
}

void cmd_persist(CmdContext& ctx) {
  bool removed = op_persist(ctx.db(), ctx.arg(1), may_touch(ctx));
  if (removed) {
    signal_generic(ctx, ctx.session().db, ctx.arg(1), "persist");
  }
  ctx.reply().integer(removed ? 1 : 0);
}

/// The OBJECT subcommands' key (argument 2), read without touching; replies null if missing.
Entry* object_lookup(CmdContext& ctx) {
  Entry* e = ctx.db().lookup_read(ctx.arg(2), false);
  if (e == nullptr) {
    ctx.reply().null();
  }
  return e;
}

void cmd_object_encoding(CmdContext& ctx) {
  if (Entry* e = object_lookup(ctx)) {
    ctx.reply().bulk(encoding_name(e->encoding()));
  }
}

void cmd_object_refcount(CmdContext& ctx) {
  Entry* e = object_lookup(ctx);
  if (e == nullptr) {
    return;
  }
  bool shared = e->type() == ObjType::string && e->kind() == Entry::Kind::integer &&
                e->integer() >= 0 && e->integer() < k_shared_integers &&
                shared_integers_allowed(ctx.engine().config());
  ctx.reply().integer(shared ? k_shared_refcount : 1);
}

void cmd_object_idletime(CmdContext& ctx) {
  Entry* e = object_lookup(ctx);
  if (e == nullptr) {
    return;
  }
  if (is_lfu_policy(ctx.engine().config().maxmemory_policy)) {
    ctx.reply().error(errors::k_lfu_selected);
    return;
  }
  ctx.reply().integer(lru_idle_ms(e->lru(), ctx.now_ms()) / 1000);
}

void cmd_object_freq(CmdContext& ctx) {
  Entry* e = object_lookup(ctx);
  if (e == nullptr) {
    return;
  }
  const EngineConfig& cfg = ctx.engine().config();
  if (!is_lfu_policy(cfg.maxmemory_policy)) {
    ctx.reply().error(errors::k_lfu_not_selected);
    return;
  }
  ctx.reply().integer(lfu_counter(e->lru(), ctx.now_ms(), cfg.lfu_decay_time));
}

void cmd_object_help(CmdContext& ctx) {
  reply_help(ctx,
             {
                 "ENCODING <key>",
                 "    Return the kind of internal representation used in order to store the value",
                 "    associated with a <key>.",
                 "FREQ <key>",
                 "    Return the access frequency index of the <key>. The returned integer is",
                 "    proportional to the logarithm of the recent access frequency of the key.",
                 "IDLETIME <key>",
                 "    Return the idle time of the <key>, that is the approximated number of",
                 "    seconds elapsed since the last access to the key.",
                 "REFCOUNT <key>",
                 "    Return the number of references of the value associated with the specified",
                 "    <key>.",
             });
}

void cmd_move(CmdContext& ctx) {
  int target = 0;
  if (!parse_db_arg(ctx, ctx.arg(2), target)) {
    return;
  }
  if (target == ctx.session().db) {
    ctx.reply().error(errors::k_same_object);
    return;
  }
  bool moved = op_move(ctx.db(), ctx.engine().db(target), ctx.arg(1), may_touch(ctx));
  if (moved) {
    int source = ctx.session().db;
    ctx.engine().signal_modified_key(source, ctx.arg(1));
    ctx.engine().signal_modified_key(target, ctx.arg(1), 0);  // one change for both, as Valkey
    ctx.engine().notify_keyspace_event(k_notify_generic, "move_from", ctx.arg(1), source);
    ctx.engine().notify_keyspace_event(k_notify_generic, "move_to", ctx.arg(1), target);
    ctx.engine().signal_key_as_ready(target, ctx.arg(1));
  }
  ctx.reply().integer(moved ? 1 : 0);
}

void cmd_copy(CmdContext& ctx) {
  int target = ctx.session().db;
  bool replace = false;
  for (size_t i = 3; i < ctx.argc(); ++i) {
    std::string_view opt = ctx.arg(i);
    if (is_keyword(opt, "replace")) {
      replace = true;
    } else if (is_keyword(opt, "db") && i + 1 < ctx.argc()) {
      if (!parse_db_arg(ctx, ctx.arg(i + 1), target)) {
        return;
      }
      ++i;
    } else {
      ctx.reply().error(errors::k_syntax);
      return;
    }
  }
  if (target == ctx.session().db && ctx.arg(1) == ctx.arg(2)) {
    ctx.reply().error(errors::k_same_object);
    return;
  }
  bool copied =
      op_copy(ctx.db(), ctx.engine().db(target), ctx.arg(1), ctx.arg(2), replace, may_touch(ctx));
  if (copied) {
    signal_generic(ctx, target, ctx.arg(2), "copy_to");
    ctx.engine().signal_key_as_ready(target, ctx.arg(2));
  }
  ctx.reply().integer(copied ? 1 : 0);
}

void cmd_swapdb(CmdContext& ctx) {
  int first = 0;
  int second = 0;
  if (!parse_int_arg(ctx, ctx.arg(1), errors::k_invalid_first_db_index, first) ||
      !parse_int_arg(ctx, ctx.arg(2), errors::k_invalid_second_db_index, second)) {
    return;
  }
  int n = ctx.engine().db_count();
  if (first < 0 || first >= n || second < 0 || second >= n) {
    ctx.reply().error(errors::k_db_index_out_of_range);
    return;
  }
  ctx.engine().swap_databases(first, second);
  ctx.reply().ok();
}

constexpr CommandSpec k_generic_commands[] = {
    {"del", -2, k_cmd_write, 1, -1, 1, cmd_del, "@keyspace @write @slow"},
    {"unlink", -2, k_cmd_write | k_cmd_fast, 1, -1, 1, cmd_del, "@keyspace @write @fast"},
    {"exists", -2, k_cmd_readonly | k_cmd_fast, 1, -1, 1, cmd_exists, "@keyspace @read @fast"},
    {"type", 2, k_cmd_readonly | k_cmd_fast, 1, 1, 1, cmd_type, "@keyspace @read @fast"},
    {"rename", 3, k_cmd_write, 1, 2, 1, cmd_rename, "@keyspace @write @slow"},
    {"renamenx", 3, k_cmd_write | k_cmd_fast, 1, 2, 1, cmd_renamenx, "@keyspace @write @fast"},
    {"keys", 2, k_cmd_readonly, 0, 0, 0, cmd_keys, "@keyspace @read @slow @dangerous"},
    {"scan", -2, k_cmd_readonly, 0, 0, 0, cmd_scan, "@keyspace @read @slow"},
    {"randomkey", 1, k_cmd_readonly, 0, 0, 0, cmd_randomkey, "@keyspace @read @slow"},
    {"touch", -2, k_cmd_readonly | k_cmd_fast, 1, -1, 1, cmd_touch, "@keyspace @read @fast"},
    {"expire", -3, k_cmd_write | k_cmd_fast, 1, 1, 1, cmd_expire, "@keyspace @write @fast"},
    {"pexpire", -3, k_cmd_write | k_cmd_fast, 1, 1, 1, cmd_pexpire, "@keyspace @write @fast"},
    {"expireat", -3, k_cmd_write | k_cmd_fast, 1, 1, 1, cmd_expireat, "@keyspace @write @fast"},
    {"pexpireat", -3, k_cmd_write | k_cmd_fast, 1, 1, 1, cmd_pexpireat, "@keyspace @write @fast"},
    {"ttl", 2, k_cmd_readonly | k_cmd_fast, 1, 1, 1, cmd_ttl, "@keyspace @read @fast"},
    {"pttl", 2, k_cmd_readonly | k_cmd_fast, 1, 1, 1, cmd_pttl, "@keyspace @read @fast"},
    {"expiretime", 2, k_cmd_readonly | k_cmd_fast, 1, 1, 1, cmd_expiretime,
     "@keyspace @read @fast"},
    {"pexpiretime", 2, k_cmd_readonly | k_cmd_fast, 1, 1, 1, cmd_pexpiretime,
     "@keyspace @read @fast"},
    {"persist", 2, k_cmd_write | k_cmd_fast, 1, 1, 1, cmd_persist, "@keyspace @write @fast"},
    {"object", -2, 0, 0, 0, 0, nullptr, "@slow"},
    {"object|encoding", 3, k_cmd_readonly, 2, 2, 1, cmd_object_encoding, "@keyspace @read @slow"},
    {"object|freq", 3, k_cmd_readonly, 2, 2, 1, cmd_object_freq, "@keyspace @read @slow"},
    {"object|help", 2, k_cmd_loading | k_cmd_stale, 0, 0, 0, cmd_object_help, "@keyspace @slow"},
    {"object|idletime", 3, k_cmd_readonly, 2, 2, 1, cmd_object_idletime, "@keyspace @read @slow"},
    {"object|refcount", 3, k_cmd_readonly, 2, 2, 1, cmd_object_refcount, "@keyspace @read @slow"},
    {"move", 3, k_cmd_write | k_cmd_fast, 1, 1, 1, cmd_move, "@keyspace @write @fast"},
    {"copy", -3, k_cmd_write | k_cmd_denyoom, 1, 2, 1, cmd_copy, "@keyspace @write @slow"},
    {"swapdb", 3, k_cmd_write | k_cmd_fast, 0, 0, 0, cmd_swapdb,
     "@keyspace @write @fast @dangerous"},
};

}  // namespace

void register_generic_family(CommandRegistry& registry) {
  registry.add(k_generic_commands);
}

}  // namespace keyshift::engine
