// Hash commands: HSET and friends, counters, iteration, random fields and field expiry
// (HEXPIRE & co., with Redis 7.4's replies: Valkey 8.0 has no field TTLs).
//
// Field expiry choices:
// - Exact, never lazy-counted: every command first removes the hash's due fields (emitting
//   hexpired, and del when none is left), so no reply ever shows or counts a dead field;
//   Redis 7.4's HLEN may still count them. Cron removes due fields of registered hashes.
// - A field is dead once its time is <= now (as keys here, and as HEXPIRE's "2").
// - Limits and errors as Redis 7.4: absolute times up to 2^46 - 1 ms (its 48-bit field
//   with two bits reserved), a negative time is "invalid expire time, must be >= 0", a word
//   other than one NX/XX/GT/LT before FIELDS is "Mandatory argument FIELDS is missing...".
// - Encodings as Redis 7.4: listpack becomes listpackex at the first HEXPIRE on the hash.
#include "engine/commands/hash_family.hpp"

#include "engine/commands/context.hpp"
#include "engine/commands/expire_args.hpp"
#include "engine/commands/families.hpp"
#include "engine/keyspace/hash_value.hpp"
#include "engine/util/glob.hpp"
#include "engine/util/strconv.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

namespace keyshift::engine {
namespace {

// Fields one cron pass may expire across a database, so a burst of due fields cannot
// stall the server (Redis 7.4 bounds its pass the same way).
constexpr size_t k_active_expire_fields_quota = 1000;
// HRANDFIELD draws unique fields by removing from a full copy while the hash is no more
// than this many times larger than the count (Valkey's HRANDFIELD_SUB_STRATEGY_MUL).
constexpr uint64_t k_hrandfield_sub_strategy_mul = 3;

/// Read access to the hash in `e` (nothing read converts a hash, so no seed is needed).
HashRef hash_of(const Entry* e) {
  return HashRef(e);
}

/// Write access to the hash in `e` of `db`; every change is followed by `account`.
HashRef hash_for_write(Db& db, Entry* e) {
  return HashRef(e, db.value_seed(e->key()));
}

HashLimits limits_of(const Engine& engine) {
  return {engine.config().hash_max_listpack_entries, engine.config().hash_max_listpack_value};
}

/// Books a change of the hash in `e`: the engine's memory count moves by the change of
/// bytes() since `before`, and the entry reports the hash's encoding.
void account(Engine& engine, HashRef& h, size_t before) {
  h.sync();
  engine.memory().add(static_cast<int64_t>(h.bytes()) - static_cast<int64_t>(before));
  engine.memory().note_peak();
}

/// Removes up to `max` due fields of the hash in `e` (emitting hexpired), deleting the key
/// with a del event when no field is left. Returns the entry, or nullptr once deleted.
Entry* expire_due_fields(Engine& engine, Db& db, Entry* e, int64_t now_ms, size_t max,
                         size_t* removed_out = nullptr) {
  HashRef h = hash_for_write(db, e);
  if (h->min_expire() > now_ms) {
    return e;
  }
  std::string key(e->key());
  size_t before = h.bytes();
  size_t removed = h->expire_due(now_ms, max, [](std::string_view) {});
  account(engine, h, before);
  if (removed_out != nullptr) {
    *removed_out += removed;
  }
  engine.notify_keyspace_event(k_notify_hash, "hexpired", key, db.id());
  if (h->empty()) {
    db.remove(key);
    engine.notify_keyspace_event(k_notify_generic, "del", key, db.id());
    e = nullptr;
  }
  engine.signal_modified_key(db.id(), key);
  return e;
}

/// False when the session asked for CLIENT NO-TOUCH.
bool may_touch(CmdContext& ctx) {
  return !ctx.session().has(k_session_no_touch);
}

/// The hash at `key` with its due fields gone; nullptr when there is none (replying
/// WRONGTYPE and setting `failed` when the key holds another type). Reads count keyspace
/// hits and misses.
Entry* lookup_hash(CmdContext& ctx, std::string_view key, bool read, bool& failed) {
  Db& db = ctx.db();
  Entry* e = read ? db.lookup_read(key, may_touch(ctx)) : db.lookup(key, may_touch(ctx));
  failed = false;
  if (e == nullptr) {
    return nullptr;
  }
  if (e->type() != ObjType::hash) {
    ctx.reply().error(errors::k_wrong_type);
    failed = true;
    return nullptr;
  }
  return expire_due_fields(ctx.engine(), db, e, ctx.now_ms(), SIZE_MAX);
}

/// Stores a new empty hash at `key` (which must be missing) and returns its entry.
Entry* create_hash(CmdContext& ctx, std::string_view key) {
  Entry::ValueSpec spec;
  spec.kind = Entry::Kind::blob;  // filled by the caller (an empty listpack has no block)
  spec.type = ObjType::hash;
  spec.encoding = ObjEncoding::listpack;
  return ctx.db().add(key, spec);
}

/// Signals a write to `key` counting `changes` (see Engine::signal_modified_key) and emits
/// hash event `event`.
void notify_write(CmdContext& ctx, std::string_view event, std::string_view key,
                  uint64_t changes = 1) {
  ctx.engine().signal_modified_key(ctx.session().db, key, changes);
  ctx.engine().notify_keyspace_event(k_notify_hash, event, key, ctx.session().db);
}

// --- Writes -----------------------------------------------------------------------------

/// HSET and HMSET: sets every pair; returns the number of new fields, or -1 after replying
/// with an error.
int64_t hset_pairs(CmdContext& ctx) {
  if (ctx.argc() % 2 == 1) {
    ctx.reply_arity_error();
    return -1;
  }
  bool failed = false;
  std::string_view key = ctx.arg(1);
  Entry* e = lookup_hash(ctx, key, false, failed);
  if (failed) {
    return -1;
  }
  bool fresh = e == nullptr;
  if (fresh) {
    e = create_hash(ctx, key);
  }
  HashRef h = hash_for_write(ctx.db(), e);
  HashLimits limits = limits_of(ctx.engine());
  size_t before = h.bytes();
  h->convert_for_write(ctx.args().subspan(2), limits);
  int64_t created = 0;
  for (size_t i = 2; i + 1 < ctx.argc(); i += 2) {
    created += h->set(ctx.arg(i), ctx.arg(i + 1), limits) ? 1 : 0;
  }
  if (fresh) {
    // A hash written whole in one command keeps no growth headroom (Valkey sizes its
    // listpacks exactly too): small hashes are often never written again.
    h->shrink_to_fit();
  }
  account(ctx.engine(), h, before);
  notify_write(ctx, "hset", key, (ctx.argc() - 2) / 2);
  return created;
}

void cmd_hset(CmdContext& ctx) {
  int64_t created = hset_pairs(ctx);
  if (created >= 0) {
    ctx.reply().integer(created);
  }
}

void cmd_hmset(CmdContext& ctx) {
  if (hset_pairs(ctx) >= 0) {
    ctx.reply().ok();
  }
}

void cmd_hsetnx(CmdContext& ctx) {
  bool failed = false;
  std::string_view key = ctx.arg(1);
  Entry* e = lookup_hash(ctx, key, false, failed);
  if (failed) {
    return;
  }
  if (e != nullptr && hash_of(e)->contains(ctx.arg(2))) {
    ctx.reply().integer(0);
    return;
  }
  if (e == nullptr) {
    e = create_hash(ctx, key);
  }
  HashRef h = hash_for_write(ctx.db(), e);
  size_t before = h.bytes();
  HashLimits limits = limits_of(ctx.engine());
  h->convert_for_write(ctx.args().subspan(2, 2), limits);
  h->set(ctx.arg(2), ctx.arg(3), limits);
  account(ctx.engine(), h, before);
  ctx.reply().integer(1);
  notify_write(ctx, "hset", key);
}

void cmd_hdel(CmdContext& ctx) {
  bool failed = false;
  std::string_view key = ctx.arg(1);
  Entry* e = lookup_hash(ctx, key, false, failed);
  if (failed) {
    return;
  }
  if (e == nullptr) {
    ctx.reply().integer(0);
    return;
  }
  HashRef h = hash_for_write(ctx.db(), e);
  size_t before = h.bytes();
  int64_t deleted = 0;
  bool key_removed = false;
  for (size_t i = 2; i < ctx.argc(); ++i) {
    if (h->remove(ctx.arg(i))) {
      ++deleted;
      if (h->empty()) {
        key_removed = true;
        break;
      }
    }
  }
  account(ctx.engine(), h, before);
  if (key_removed) {
    ctx.db().remove(key);
  }
  if (deleted > 0) {
    notify_write(ctx, "hdel", key, static_cast<uint64_t>(deleted));
    if (key_removed) {
      ctx.engine().notify_keyspace_event(k_notify_generic, "del", key, ctx.session().db);
    }
  }
  ctx.reply().integer(deleted);
}

/// The value of `field` for an increment: nullopt-like `found` false when absent.
bool current_value(HashValue* h, std::string_view field, std::string& out) {
  HashField f;
  HashBuf buf;
  if (!h->find(field, f, buf)) {
    return false;
  }
  out.assign(f.value);
  return true;
}

void cmd_hincrby(CmdContext& ctx) {
  int64_t incr = 0;
  if (!parse_i64(ctx.arg(3), incr)) {
    ctx.reply().error(errors::k_not_integer);
    return;
  }
  bool failed = false;
  std::string_view key = ctx.arg(1);
  Entry* e = lookup_hash(ctx, key, false, failed);
  if (failed) {
    return;
  }
  int64_t value = 0;
  std::string current;
  if (e != nullptr && current_value(&*hash_of(e), ctx.arg(2), current)) {
    if (!parse_i64(current, value)) {
      ctx.reply().error(errors::k_hash_not_integer);
      return;
    }
  }
  if ((incr < 0 && value < 0 && incr < INT64_MIN - value) ||
      (incr > 0 && value > 0 && incr > INT64_MAX - value)) {
    ctx.reply().error(errors::k_overflow);
    return;
  }
  value += incr;
  if (e == nullptr) {
    e = create_hash(ctx, key);
  }
  HashRef h = hash_for_write(ctx.db(), e);
  size_t before = h.bytes();
  // Counters keep the field's TTL, as Redis 7.4.
  h->set(ctx.arg(2), i64_to_string(value), limits_of(ctx.engine()), true);
  account(ctx.engine(), h, before);
  ctx.reply().integer(value);
  notify_write(ctx, "hincrby", key);
}

void cmd_hincrbyfloat(CmdContext& ctx) {
  long double incr = 0;
  if (!parse_long_double(ctx.arg(3), incr)) {
    ctx.reply().error(errors::k_not_float);
    return;
  }
  if (std::isnan(incr) || std::isinf(incr)) {
    ctx.reply().error(errors::k_value_nan_or_inf);
    return;
  }
  bool failed = false;
  std::string_view key = ctx.arg(1);
  Entry* e = lookup_hash(ctx, key, false, failed);
  if (failed) {
    return;
  }
  long double value = 0;
  std::string current;
  if (e != nullptr && current_value(&*hash_of(e), ctx.arg(2), current)) {
    if (!parse_long_double(current, value)) {
      ctx.reply().error(errors::k_hash_not_float);
      return;
    }
  }
  value += incr;
  std::string text;
  if (std::isnan(value) || std::isinf(value) || !format_long_double_human(value, text)) {
    ctx.reply().error(errors::k_incr_float_nan);
    return;
  }
  if (e == nullptr) {
    e = create_hash(ctx, key);
  }
  HashRef h = hash_for_write(ctx.db(), e);
  size_t before = h.bytes();
  h->set(ctx.arg(2), text, limits_of(ctx.engine()), true);
  account(ctx.engine(), h, before);
  ctx.reply().bulk(text);
  notify_write(ctx, "hincrbyfloat", key);
}

// --- Reads ------------------------------------------------------------------------------

void cmd_hget(CmdContext& ctx) {
  bool failed = false;
  Entry* e = lookup_hash(ctx, ctx.arg(1), true, failed);
  if (failed) {
    return;
  }
  HashField f;
  HashBuf buf;
  if (e == nullptr || !hash_of(e)->find(ctx.arg(2), f, buf)) {
    ctx.reply().null();
    return;
  }
  ctx.reply().bulk(f.value);
}

void cmd_hmget(CmdContext& ctx) {
  bool failed = false;
  Entry* e = lookup_hash(ctx, ctx.arg(1), true, failed);
  if (failed) {
    return;
  }
  ctx.reply().array(ctx.argc() - 2);
  for (size_t i = 2; i < ctx.argc(); ++i) {
    HashField f;
    HashBuf buf;
    if (e != nullptr && hash_of(e)->find(ctx.arg(i), f, buf)) {
      ctx.reply().bulk(f.value);
    } else {
      ctx.reply().null();
    }
  }
}

void cmd_hlen(CmdContext& ctx) {
  bool failed = false;
  Entry* e = lookup_hash(ctx, ctx.arg(1), true, failed);
  if (failed) {
    return;
  }
  ctx.reply().integer(e == nullptr ? 0 : static_cast<int64_t>(hash_of(e)->size()));
}

void cmd_hstrlen(CmdContext& ctx) {
  bool failed = false;
  Entry* e = lookup_hash(ctx, ctx.arg(1), true, failed);
  if (failed) {
    return;
  }
  HashField f;
  HashBuf buf;
  bool found = e != nullptr && hash_of(e)->find(ctx.arg(2), f, buf);
  ctx.reply().integer(found ? static_cast<int64_t>(f.value.size()) : 0);
}

void cmd_hexists(CmdContext& ctx) {
  bool failed = false;
  Entry* e = lookup_hash(ctx, ctx.arg(1), true, failed);
  if (failed) {
    return;
  }
  ctx.reply().integer(e != nullptr && hash_of(e)->contains(ctx.arg(2)) ? 1 : 0);
}

enum HashPart : uint8_t { k_part_fields = 1, k_part_values = 2 };

void hgetall_generic(CmdContext& ctx, uint8_t parts) {
  bool failed = false;
  Entry* e = lookup_hash(ctx, ctx.arg(1), true, failed);
  if (failed) {
    return;
  }
  bool both = parts == (k_part_fields | k_part_values);
  size_t n = e == nullptr ? 0 : hash_of(e)->size();
  if (both) {
    ctx.reply().map(n);
  } else {
    ctx.reply().array(n);
  }
  if (e == nullptr) {
    return;
  }
  ReplyBuilder& rb = ctx.reply();
  hash_of(e)->for_each([&](const HashField& f) {
    if (parts & k_part_fields) {
      rb.bulk(f.field);
    }
    if (parts & k_part_values) {
      rb.bulk(f.value);
    }
  });
}

void cmd_hgetall(CmdContext& ctx) {
  hgetall_generic(ctx, k_part_fields | k_part_values);
}
void cmd_hkeys(CmdContext& ctx) {
  hgetall_generic(ctx, k_part_fields);
}
void cmd_hvals(CmdContext& ctx) {
  hgetall_generic(ctx, k_part_values);
}

void cmd_hscan(CmdContext& ctx) {
  uint64_t cursor = 0;
  if (!parse_scan_cursor(ctx.arg(2), cursor)) {
    ctx.reply().error(errors::k_cursor_invalid);
    return;
  }
  bool failed = false;
  Entry* e = lookup_hash(ctx, ctx.arg(1), true, failed);
  if (failed) {
    return;
  }
  ReplyBuilder& rb = ctx.reply();
  if (e == nullptr) {
    rb.array(2);
    rb.bulk("0");
    rb.array(0);
    return;
  }
  // Options are read only once the key is known to be a hash, as Valkey does.
  int64_t count = 10;
  std::string_view pattern;
  bool use_pattern = false;
  bool no_values = false;
  for (size_t i = 3; i < ctx.argc();) {
    std::string_view opt = ctx.arg(i);
    bool has_value = ctx.argc() - i >= 2;
    if (is_keyword(opt, "count") && has_value) {
      if (!parse_i64(ctx.arg(i + 1), count)) {
        rb.error(errors::k_not_integer);
        return;
      }
      if (count < 1) {
        rb.error(errors::k_syntax);
        return;
      }
      i += 2;
    } else if (is_keyword(opt, "match") && has_value) {
      pattern = ctx.arg(i + 1);
      use_pattern = pattern != "*";
      i += 2;
    } else if (is_keyword(opt, "novalues")) {
      no_values = true;
      ++i;
    } else if (is_keyword(opt, "noscores")) {
      rb.error(errors::k_noscores_zscan_only);
      return;
    } else {
      rb.error(errors::k_syntax);
      return;
    }
  }
  std::vector<std::string> out;
  int64_t sampled = 0;
  auto visit = [&](const HashField& f) {
    ++sampled;
    if (use_pattern && !glob_match(pattern, f.field)) {
      return;
    }
    out.emplace_back(f.field);
    if (!no_values) {
      out.emplace_back(f.value);
    }
  };
  HashRef h = hash_of(e);
  if (h->encoding() != ObjEncoding::hashtable) {
    cursor = h->scan(cursor, visit);
  } else {
    // At most ten bucket steps per COUNT, so a sparse table cannot block for long.
    int64_t budget = count > INT64_MAX / 10 ? INT64_MAX : count * 10;
    do {
      cursor = h->scan(cursor, visit);
    } while (cursor != 0 && budget-- != 0 && sampled < count);
  }
  rb.array(2);
  rb.bulk(i64_to_string(static_cast<int64_t>(cursor)));
  rb.array(out.size());
  for (const std::string& s : out) {
    rb.bulk(s);
  }
}

// --- HRANDFIELD -------------------------------------------------------------------------

struct FieldPair {
  std::string field;
  std::string value;
};

std::vector<FieldPair> all_pairs(const HashValue& h) {
  std::vector<FieldPair> pairs;
  pairs.reserve(h.size());
  h.for_each([&](const HashField& f) {
    pairs.push_back({std::string(f.field), std::string(f.value)});
  });
  return pairs;
}

void reply_pair(CmdContext& ctx, std::string_view field, std::string_view value, bool with_values) {
  if (with_values && ctx.session().resp >= 3) {
    ctx.reply().array(2);
  }
  ctx.reply().bulk(field);
  if (with_values) {
    ctx.reply().bulk(value);
  }
}

void hrandfield_with_count(CmdContext& ctx, int64_t requested, bool with_values) {
  bool failed = false;
  Entry* e = lookup_hash(ctx, ctx.arg(1), true, failed);
  if (failed) {
    return;
  }
  if (e == nullptr) {
    ctx.reply().array(0);
    return;
  }
  HashRef h = hash_of(e);
  uint64_t size = h->size();
  bool unique = requested >= 0;
  uint64_t count = unique ? static_cast<uint64_t>(requested) : 0 - static_cast<uint64_t>(requested);
  if (count == 0) {
    ctx.reply().array(0);
    return;
  }
  bool resp2_flat = with_values && ctx.session().resp < 3;
  std::mt19937_64& rng = ctx.engine().rng();

  // Repeats allowed (negative count) or a single field: independent draws, in draw order.
  if (!unique || count == 1) {
    ctx.reply().array(resp2_flat ? count * 2 : count);
    if (h->encoding() == ObjEncoding::hashtable) {
      HashBuf buf;
      for (uint64_t i = 0; i < count; ++i) {
        HashField f = h->random(rng, buf);
        reply_pair(ctx, f.field, f.value, with_values);
      }
      return;
    }
    std::vector<FieldPair> pairs = all_pairs(*h);
    for (uint64_t i = 0; i < count; ++i) {
      const FieldPair& p = pairs[rng() % pairs.size()];
      reply_pair(ctx, p.field, p.value, with_values);
    }
    return;
  }

  uint64_t n = std::min(count, size);
  ctx.reply().array(resp2_flat ? n * 2 : n);
  // Asking for at least everything: the whole hash, in its order.
  if (count >= size) {
    h->for_each([&](const HashField& f) { reply_pair(ctx, f.field, f.value, with_values); });
    return;
  }
  // Small hashes: a uniform sample of `count` fields keeping the listpack's order.
  if (h->encoding() != ObjEncoding::hashtable) {
    uint64_t needed = count;
    uint64_t left = size;
    h->for_each([&](const HashField& f) {
      if (needed > 0 && rng() % left < needed) {
        reply_pair(ctx, f.field, f.value, with_values);
        --needed;
      }
      --left;
    });
    return;
  }
  // Close to the whole hash: copy everything, then drop random fields.
  if (count * k_hrandfield_sub_strategy_mul > size) {
    std::vector<FieldPair> pairs = all_pairs(*h);
    while (pairs.size() > count) {
      size_t drop = rng() % pairs.size();
      pairs[drop] = std::move(pairs.back());
      pairs.pop_back();
    }
    for (const FieldPair& p : pairs) {
      reply_pair(ctx, p.field, p.value, with_values);
    }
    return;
  }
  // Much larger than the count: draw until enough distinct fields were seen.
  std::unordered_set<std::string> seen;
  HashBuf buf;
  while (seen.size() < count) {
    HashField f = h->random(rng, buf);
    if (!seen.emplace(f.field).second) {
      continue;
    }
    reply_pair(ctx, f.field, f.value, with_values);
  }
}

void cmd_hrandfield(CmdContext& ctx) {
  if (ctx.argc() >= 3) {
    int64_t count = 0;
    if (!parse_i64(ctx.arg(2), count)) {
      ctx.reply().error(errors::k_not_integer);
      return;
    }
    if (count == INT64_MIN) {
      ctx.reply().error(errors::k_hrandfield_count_range);
      return;
    }
    bool with_values = false;
    if (ctx.argc() > 4 || (ctx.argc() == 4 && !is_keyword(ctx.arg(3), "withvalues"))) {
      ctx.reply().error(errors::k_syntax);
      return;
    }
    if (ctx.argc() == 4) {
      with_values = true;
      // Field and value doubles the reply; the count must stay countable.
      if (count < -(INT64_MAX / 2) || count > INT64_MAX / 2) {
        ctx.reply().error(errors::k_value_out_of_range);
        return;
      }
    }
    hrandfield_with_count(ctx, count, with_values);
    return;
  }
  bool failed = false;
  Entry* e = lookup_hash(ctx, ctx.arg(1), true, failed);
  if (failed) {
    return;
  }
  if (e == nullptr) {
    ctx.reply().null();
    return;
  }
  HashBuf buf;
  ctx.reply().bulk(hash_of(e)->random(ctx.engine().rng(), buf).field);
}

// --- Field expiry -----------------------------------------------------------------------

/// Reads "FIELDS numfields field..." with the count at `count_at`; `count_error` is the
/// text for a count that is not a positive integer. Returns the count, or 0 after replying.
size_t parse_fields_block(CmdContext& ctx, size_t count_at, std::string_view count_error) {
  if (!is_keyword(ctx.arg(count_at - 1), "fields")) {
    ctx.reply().error(errors::k_hfe_fields_missing);
    return 0;
  }
  int64_t n = 0;
  if (!parse_i64(ctx.arg(count_at), n) || n < 1) {
    ctx.reply().error(count_error);
    return 0;
  }
  if (static_cast<uint64_t>(n) != ctx.argc() - count_at - 1) {
    ctx.reply().error(errors::k_hfe_numfields_mismatch);
    return 0;
  }
  return static_cast<size_t>(n);
}

void reply_all(CmdContext& ctx, size_t n, int64_t code) {
  ctx.reply().array(n);
  for (size_t i = 0; i < n; ++i) {
    ctx.reply().integer(code);
  }
}

void hexpire_generic(CmdContext& ctx, TtlUnit unit, bool absolute) {
  bool failed = false;
  std::string_view key = ctx.arg(1);
  Entry* e = lookup_hash(ctx, key, false, failed);
  if (failed) {
    return;
  }
  int64_t when = 0;
  if (!parse_i64(ctx.arg(2), when)) {
    ctx.reply().error(errors::k_not_integer);
    return;
  }
  if (when < 0) {
    ctx.reply().error(errors::k_hfe_expire_negative);
    return;
  }
  if (unit == TtlUnit::seconds) {
    if (when > k_hash_max_expire_ms / 1000) {
      ctx.reply().error(invalid_expire_error(ctx.command().full_name));
      return;
    }
    when *= 1000;
  }
  int64_t base = absolute ? 0 : ctx.now_ms();
  if (when > k_hash_max_expire_ms - base) {
    ctx.reply().error(invalid_expire_error(ctx.command().full_name));
    return;
  }
  when += base;
  HashExpireCond cond = HashExpireCond::none;
  std::string_view opt = ctx.arg(3);
  if (is_keyword(opt, "nx")) {
    cond = HashExpireCond::nx;
  } else if (is_keyword(opt, "xx")) {
    cond = HashExpireCond::xx;
  } else if (is_keyword(opt, "gt")) {
    cond = HashExpireCond::gt;
  } else if (is_keyword(opt, "lt")) {
    cond = HashExpireCond::lt;
  }
  size_t count_at = cond == HashExpireCond::none ? 4 : 5;
  size_t n = parse_fields_block(ctx, count_at, errors::k_hfe_numfields_positive);
  if (n == 0) {
    return;
  }
  if (e == nullptr) {
    reply_all(ctx, n, -2);
    return;
  }
  HashRef h = hash_for_write(ctx.db(), e);
  int64_t now = ctx.now_ms();
  size_t before = h.bytes();
  h->enable_field_expiry();
  size_t updated = 0;
  size_t deleted = 0;
  ctx.reply().array(n);
  for (size_t i = count_at + 1; i < ctx.argc(); ++i) {
    int code = h->set_expire(ctx.arg(i), when, cond, now);
    updated += code == 1 ? 1 : 0;
    deleted += code == 2 ? 1 : 0;
    ctx.reply().integer(code);
  }
  account(ctx.engine(), h, before);
  if (updated + deleted == 0) {
    return;
  }
  if (h->empty()) {
    ctx.db().remove(key);
    notify_write(ctx, "hdel", key);
    ctx.engine().notify_keyspace_event(k_notify_generic, "del", key, ctx.session().db);
    return;
  }
  // One event per command: hdel when any field went, else hexpire (as Redis 7.4).
  notify_write(ctx, deleted > 0 ? "hdel" : "hexpire", key);
  if (h->has_field_expires()) {
    ctx.db().register_field_expiry(key, h->min_expire());
  }
}

void cmd_hexpire(CmdContext& ctx) {
  hexpire_generic(ctx, TtlUnit::seconds, false);
}
void cmd_hpexpire(CmdContext& ctx) {
  hexpire_generic(ctx, TtlUnit::milliseconds, false);
}
void cmd_hexpireat(CmdContext& ctx) {
  hexpire_generic(ctx, TtlUnit::seconds, true);
}
void cmd_hpexpireat(CmdContext& ctx) {
  hexpire_generic(ctx, TtlUnit::milliseconds, true);
}

void httl_generic(CmdContext& ctx, TtlUnit unit, bool absolute) {
  bool failed = false;
  Entry* e = lookup_hash(ctx, ctx.arg(1), true, failed);
  if (failed) {
    return;
  }
  size_t n = parse_fields_block(ctx, 3, errors::k_hfe_fields_count_positive);
  if (n == 0) {
    return;
  }
  if (e == nullptr) {
    reply_all(ctx, n, -2);
    return;
  }
  HashRef h = hash_of(e);
  int64_t base = absolute ? 0 : ctx.now_ms();
  ctx.reply().array(n);
  for (size_t i = 4; i < ctx.argc(); ++i) {
    int64_t t = h->expire_of(ctx.arg(i));
    if (t < 0) {
      ctx.reply().integer(t);
    } else if (unit == TtlUnit::seconds) {
      // Rounded up, as Redis 7.4 reports field TTLs in seconds.
      ctx.reply().integer((t + 999 - base) / 1000);
    } else {
      ctx.reply().integer(t - base);
    }
  }
}

void cmd_httl(CmdContext& ctx) {
  httl_generic(ctx, TtlUnit::seconds, false);
}
void cmd_hpttl(CmdContext& ctx) {
  httl_generic(ctx, TtlUnit::milliseconds, false);
}
void cmd_hexpiretime(CmdContext& ctx) {
  httl_generic(ctx, TtlUnit::seconds, true);
}
void cmd_hpexpiretime(CmdContext& ctx) {
  httl_generic(ctx, TtlUnit::milliseconds, true);
}

void cmd_hpersist(CmdContext& ctx) {
  bool failed = false;
  std::string_view key = ctx.arg(1);
  Entry* e = lookup_hash(ctx, key, false, failed);
  if (failed) {
    return;
  }
  size_t n = parse_fields_block(ctx, 3, errors::k_hfe_fields_count_positive);
  if (n == 0) {
    return;
  }
  if (e == nullptr) {
    reply_all(ctx, n, -2);
    return;
  }
  HashRef h = hash_for_write(ctx.db(), e);
  size_t before = h.bytes();
  bool changed = false;
  ctx.reply().array(n);
  for (size_t i = 4; i < ctx.argc(); ++i) {
    int code = h->persist(ctx.arg(i));
    changed = changed || code == 1;
    ctx.reply().integer(code);
  }
  account(ctx.engine(), h, before);
  if (changed) {
    notify_write(ctx, "hpersist", key);
  }
}

constexpr CommandSpec k_hash_commands[] = {
    {"hset", -4, k_cmd_write | k_cmd_denyoom | k_cmd_fast, 1, 1, 1, cmd_hset, "@write @hash @fast"},
    {"hsetnx", 4, k_cmd_write | k_cmd_denyoom | k_cmd_fast, 1, 1, 1, cmd_hsetnx,
     "@write @hash @fast"},
    {"hmset", -4, k_cmd_write | k_cmd_denyoom | k_cmd_fast, 1, 1, 1, cmd_hmset,
     "@write @hash @fast"},
    {"hget", 3, k_cmd_readonly | k_cmd_fast, 1, 1, 1, cmd_hget, "@read @hash @fast"},
    {"hmget", -3, k_cmd_readonly | k_cmd_fast, 1, 1, 1, cmd_hmget, "@read @hash @fast"},
    {"hgetall", 2, k_cmd_readonly, 1, 1, 1, cmd_hgetall, "@read @hash @slow"},
    {"hkeys", 2, k_cmd_readonly, 1, 1, 1, cmd_hkeys, "@read @hash @slow"},
    {"hvals", 2, k_cmd_readonly, 1, 1, 1, cmd_hvals, "@read @hash @slow"},
    {"hdel", -3, k_cmd_write | k_cmd_fast, 1, 1, 1, cmd_hdel, "@write @hash @fast"},
    {"hexists", 3, k_cmd_readonly | k_cmd_fast, 1, 1, 1, cmd_hexists, "@read @hash @fast"},
    {"hlen", 2, k_cmd_readonly | k_cmd_fast, 1, 1, 1, cmd_hlen, "@read @hash @fast"},
    {"hstrlen", 3, k_cmd_readonly | k_cmd_fast, 1, 1, 1, cmd_hstrlen, "@read @hash @fast"},
    {"hincrby", 4, k_cmd_write | k_cmd_denyoom | k_cmd_fast, 1, 1, 1, cmd_hincrby,
     "@write @hash @fast"},
    {"hincrbyfloat", 4, k_cmd_write | k_cmd_denyoom | k_cmd_fast, 1, 1, 1, cmd_hincrbyfloat,
     "@write @hash @fast"},
    {"hrandfield", -2, k_cmd_readonly, 1, 1, 1, cmd_hrandfield, "@read @hash @slow"},
    {"hscan", -3, k_cmd_readonly, 1, 1, 1, cmd_hscan, "@read @hash @slow"},
    // Field expiry: names, arities and flags of Redis 7.4.
    {"hexpire", -6, k_cmd_write | k_cmd_denyoom | k_cmd_fast, 1, 1, 1, cmd_hexpire,
     "@write @hash @fast"},
    {"hpexpire", -6, k_cmd_write | k_cmd_denyoom | k_cmd_fast, 1, 1, 1, cmd_hpexpire,
     "@write @hash @fast"},
    {"hexpireat", -6, k_cmd_write | k_cmd_denyoom | k_cmd_fast, 1, 1, 1, cmd_hexpireat,
     "@write @hash @fast"},
    {"hpexpireat", -6, k_cmd_write | k_cmd_denyoom | k_cmd_fast, 1, 1, 1, cmd_hpexpireat,
     "@write @hash @fast"},
    {"httl", -5, k_cmd_readonly | k_cmd_fast, 1, 1, 1, cmd_httl, "@read @hash @fast"},
    {"hpttl", -5, k_cmd_readonly | k_cmd_fast, 1, 1, 1, cmd_hpttl, "@read @hash @fast"},
    {"hexpiretime", -5, k_cmd_readonly | k_cmd_fast, 1, 1, 1, cmd_hexpiretime, "@read @hash @fast"},
    {"hpexpiretime", -5, k_cmd_readonly | k_cmd_fast, 1, 1, 1, cmd_hpexpiretime,
     "@read @hash @fast"},
    {"hpersist", -5, k_cmd_write | k_cmd_fast, 1, 1, 1, cmd_hpersist, "@write @hash @fast"},
};

}  // namespace

size_t active_expire_hash_fields(Engine& engine, Db& db, int64_t deadline_us) {
  int64_t now = engine.keyspace().now_ms();
  size_t removed = 0;
  std::string key;
  while (removed < k_active_expire_fields_quota && db.pop_due_field_expiry(now, key)) {
    // A registration is only a hint: the key may be gone, renamed or rewritten since.
    Entry* e = db.lookup(key, false);
    if (e == nullptr || e->type() != ObjType::hash || e->kind() != Entry::Kind::object) {
      continue;
    }
    e = expire_due_fields(engine, db, e, now, k_active_expire_fields_quota - removed, &removed);
    if (e != nullptr && hash_of(e)->has_field_expires()) {
      db.register_field_expiry(key, hash_of(e)->min_expire());
    }
    if (engine.clock().monotonic_us() > deadline_us) {
      break;
    }
  }
  return removed;
}

void register_hash_family(CommandRegistry& registry) {
  registry.add(k_hash_commands);
}

}  // namespace keyshift::engine
