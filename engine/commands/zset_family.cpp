// Sorted-set commands: ZADD and friends, ranges by rank/score/lex, range removal, pops
// (blocking ones through engine/blocking.hpp), set algebra (ZUNION/ZINTER/ZDIFF and their
// STORE forms), ZRANDMEMBER and ZSCAN.
#include "engine/blocking.hpp"
#include "engine/commands/context.hpp"
#include "engine/commands/families.hpp"
#include "engine/keyspace/set_value.hpp"
#include "engine/keyspace/zset_value.hpp"
#include "engine/util/double_format.hpp"
#include "engine/util/glob.hpp"
#include "engine/util/strconv.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace keyshift::engine {
namespace {

// --- Helpers ----------------------------------------------------------------------------

ZSetLimits limits_of(CmdContext& ctx) {
  const EngineConfig& c = ctx.engine().config();
  return ZSetLimits{c.zset_max_listpack_entries, c.zset_max_listpack_value};
}

/// Read access to the sorted set in `e` (a bare listpack block or an object).
ZSetRef zset_of(const Entry* e) {
  return ZSetRef(e);
}

/// A score in a reply: RESP3 double, RESP2 bulk string, both with Valkey 8's text.
void reply_score(ReplyBuilder& rb, double score) {
  char text[k_double_text_max + 3];
  if (rb.resp() >= 3) {
    text[0] = ',';
    size_t n = 1 + format_double_reply(score, text + 1);
    text[n++] = '\r';
    text[n++] = '\n';
    rb.raw(std::string_view(text, n));
    return;
  }
  rb.bulk(std::string_view(text, format_double_reply(score, text)));
}

/// The sorted set in `e` opened for a change: on commit it stores the value back into the
/// entry (ZSetRef::sync: a reallocated listpack, or a skiplist that left the block) and adds
/// the change in its size to the engine's memory count.
class ZSetEdit {
 public:
  ZSetEdit(CmdContext& ctx, Entry* e)
      : m_mem(ctx.engine().memory()),
        m_ref(std::in_place, e, ctx.db().value_seed(e->key())),
        m_before(m_ref->bytes()) {}
  ZSetEdit(const ZSetEdit&) = delete;
  ZSetEdit& operator=(const ZSetEdit&) = delete;
  ~ZSetEdit() { commit(); }

  ZSetValue* operator->() const { return &**m_ref; }
  ZSetValue& operator*() const { return **m_ref; }
  /// Stores the value back and accounts the change so far.
  void commit() {
    if (!m_ref) {
      return;
    }
    m_ref->sync();
    size_t after = m_ref->bytes();
    m_mem.add(static_cast<int64_t>(after) - static_cast<int64_t>(m_before));
    m_before = after;
  }
  /// Commits and closes the value (before the entry may be removed).
  void release() {
    commit();
    m_ref.reset();
  }

 private:
  MemoryCounter& m_mem;
  std::optional<ZSetRef> m_ref;
  size_t m_before;
};

/// The ValueSpec storing `z` (owned): its bare listpack block when small, else the object.
Entry::ValueSpec zset_spec(ZSetValue* z) {
  return value_spec(z, ObjType::zset);
}

/// Looks `key` up for writing: nullptr when missing; `wrong` is set (and the error
/// replied) when it holds another type.
Entry* lookup_write(CmdContext& ctx, std::string_view key, bool& wrong) {
  Entry* e = ctx.db().lookup(key);
  wrong = e != nullptr && e->type() != ObjType::zset;
  if (wrong) {
    ctx.reply().error(errors::k_wrong_type);
  }
  return e;
}

/// Read lookup with the same contract.
Entry* lookup_read(CmdContext& ctx, std::string_view key, bool& wrong) {
  Entry* e = ctx.db().lookup_read(key);
  wrong = e != nullptr && e->type() != ObjType::zset;
  if (wrong) {
    ctx.reply().error(errors::k_wrong_type);
  }
  return e;
}

int db_id(CmdContext& ctx) {
  return ctx.session().db;
}

void notify_zset(CmdContext& ctx, std::string_view event, std::string_view key) {
  ctx.engine().notify_keyspace_event(k_notify_zset, event, key, db_id(ctx));
}

/// After removals from the sorted set at `key`: deletes the key when it became empty and
/// sends `event` (plus "del"). `delta` must not be used after this.
void finish_removal(CmdContext& ctx, std::string_view key, ZSetEdit& z, size_t removed,
                    std::string_view event) {
  bool key_removed = z->empty();
  z.release();
  if (key_removed) {
    ctx.db().remove(key);
  }
  if (removed > 0) {
    ctx.engine().signal_modified_key(db_id(ctx), key, removed);
    notify_zset(ctx, event, key);
    if (key_removed) {
      ctx.engine().notify_keyspace_event(k_notify_generic, "del", key, db_id(ctx));
    }
  }
}

/// Stores the computed sorted set `z` at `key` (replacing any value and TTL), or deletes
/// `key` when `z` is empty; replies with the stored size and sends `event`.
void store_result(CmdContext& ctx, std::string_view key, std::unique_ptr<ZSetValue> z,
                  std::string_view event) {
  int db = db_id(ctx);
  if (z->empty()) {
    ctx.reply().integer(0);
    if (ctx.db().remove(key)) {
      ctx.engine().signal_modified_key(db, key);
      ctx.engine().notify_keyspace_event(k_notify_generic, "del", key, db);
    }
    return;
  }
  auto n = static_cast<int64_t>(z->size());
  ctx.db().set(key, zset_spec(z.release()), -1, false);
  ctx.reply().integer(n);
  ctx.engine().signal_modified_key(db, key);
  notify_zset(ctx, event, key);
  ctx.engine().signal_key_as_ready(db, key);
}

/// Parses a long argument as getLongFromObjectOrReply; replies the error on failure.
bool parse_long_arg(CmdContext& ctx, std::string_view arg, int64_t& out) {
  if (!parse_i64(arg, out)) {
    ctx.reply().error(errors::k_not_integer);
    return false;
  }
  return true;
}

// --- ZADD / ZINCRBY ---------------------------------------------------------------------

void zadd_generic(CmdContext& ctx, uint32_t flags) {
  size_t idx = 2;
  bool ch = false;
  for (; idx < ctx.argc(); ++idx) {
    std::string_view opt = ctx.arg(idx);
    if (is_keyword(opt, "nx")) {
      flags |= k_zadd_nx;
    } else if (is_keyword(opt, "xx")) {
      flags |= k_zadd_xx;
    } else if (is_keyword(opt, "ch")) {
      ch = true;
    } else if (is_keyword(opt, "incr")) {
      flags |= k_zadd_incr;
    } else if (is_keyword(opt, "gt")) {
      flags |= k_zadd_gt;
    } else if (is_keyword(opt, "lt")) {
      flags |= k_zadd_lt;
    } else {
      break;
    }
  }
  const bool incr = (flags & k_zadd_incr) != 0;
  const bool nx = (flags & k_zadd_nx) != 0;
  const bool xx = (flags & k_zadd_xx) != 0;
  const bool gt = (flags & k_zadd_gt) != 0;
  const bool lt = (flags & k_zadd_lt) != 0;
  size_t elements = ctx.argc() - idx;
  if (elements % 2 != 0 || elements == 0) {
    ctx.reply().error(errors::k_syntax);
    return;
  }
  elements /= 2;
  if (nx && xx) {
    ctx.reply().error(errors::k_zadd_xx_nx);
    return;
  }
  if ((gt && nx) || (lt && nx) || (gt && lt)) {
    ctx.reply().error(errors::k_gt_lt_nx);
    return;
  }
  if (incr && elements > 1) {
    ctx.reply().error(errors::k_zadd_incr_single);
    return;
  }
  // Every score is checked before anything changes: the command runs fully or not at all.
  std::vector<double> scores(elements);
  size_t max_len = 0;
  for (size_t j = 0; j < elements; ++j) {
    if (!parse_string2d(ctx.arg(idx + 2 * j), scores[j])) {
      ctx.reply().error(errors::k_not_float);
      return;
    }
    max_len = std::max(max_len, ctx.arg(idx + 2 * j + 1).size());
  }
  std::string_view key = ctx.arg(1);
  bool wrong = false;
  Entry* e = lookup_write(ctx, key, wrong);
  if (wrong) {
    return;
  }
  ZSetLimits limits = limits_of(ctx);
  bool fresh = e == nullptr;
  if (fresh) {
    if (xx) {
      if (incr) {
        ctx.reply().null();
      } else {
        ctx.reply().integer(0);
      }
      return;
    }
    auto z = ZSetValue::create(elements, max_len, limits, ctx.engine().rng()());
    e = ctx.db().add(key, zset_spec(z.release()));
  }
  size_t added = 0;
  size_t updated = 0;
  size_t processed = 0;
  double score = 0;
  bool nan = false;
  bool emptied = false;
  {
    ZSetEdit z(ctx, e);
    if (!fresh) {
      z->maybe_convert(elements, max_len, limits);
    }
    for (size_t j = 0; j < elements; ++j) {
      double new_score = 0;
      ZAddOutcome r = z->add(scores[j], ctx.arg(idx + 2 * j + 1), flags, new_score, limits);
      if (r == ZAddOutcome::nan) {
        nan = true;
        break;
      }
      added += r == ZAddOutcome::added;
      updated += r == ZAddOutcome::updated;
      processed += r != ZAddOutcome::skipped;
      score = new_score;
    }
    if (fresh) {
      // A sorted set written whole in one command keeps no growth headroom.
      z->shrink_to_fit();
    }
    emptied = z->empty();
  }
  if (nan) {
    ctx.reply().error(errors::k_zadd_nan);
  } else if (incr) {
    if (processed > 0) {
      reply_score(ctx.reply(), score);
    } else {
      ctx.reply().null();
    }
  } else {
    ctx.reply().integer(static_cast<int64_t>(ch ? added + updated : added));
  }
  if (emptied) {
    ctx.db().remove(key);  // defensive: a created key always receives its first element
  }
  if (added > 0 || updated > 0) {
    ctx.engine().signal_modified_key(db_id(ctx), key, added + updated);
    notify_zset(ctx, incr ? "zincr" : "zadd", key);
    if (added > 0) {
      ctx.engine().signal_key_as_ready(db_id(ctx), key);
    }
  }
}

void cmd_zadd(CmdContext& ctx) {
  zadd_generic(ctx, 0);
}

void cmd_zincrby(CmdContext& ctx) {
  zadd_generic(ctx, k_zadd_incr);
}

// --- ZREM and range removal -------------------------------------------------------------

void cmd_zrem(CmdContext& ctx) {
  std::string_view key = ctx.arg(1);
  bool wrong = false;
  Entry* e = lookup_write(ctx, key, wrong);
  if (wrong) {
    return;
  }
  if (e == nullptr) {
    ctx.reply().integer(0);
    return;
  }
  ZSetEdit z(ctx, e);
  size_t deleted = 0;
  for (size_t j = 2; j < ctx.argc(); ++j) {
    deleted += z->remove(ctx.arg(j));
    if (z->empty()) {
      break;
    }
  }
  finish_removal(ctx, key, z, deleted, "zrem");
  ctx.reply().integer(static_cast<int64_t>(deleted));
}

enum class RangeType : uint8_t { automatic, rank, score, lex };

void zremrange_generic(CmdContext& ctx, RangeType type) {
  int64_t start = 0;
  int64_t end = 0;
  ZScoreRange range;
  ZLexRange lex;
  std::string_view event;
  if (type == RangeType::rank) {
    event = "zremrangebyrank";
    if (!parse_long_arg(ctx, ctx.arg(2), start) || !parse_long_arg(ctx, ctx.arg(3), end)) {
      return;
    }
  } else if (type == RangeType::score) {
    event = "zremrangebyscore";
    if (!parse_score_range(ctx.arg(2), ctx.arg(3), range)) {
      ctx.reply().error(errors::k_zrange_not_float);
      return;
    }
  } else {
    event = "zremrangebylex";
    if (!parse_lex_range(ctx.arg(2), ctx.arg(3), lex)) {
      ctx.reply().error(errors::k_zrange_not_lex);
      return;
    }
  }
  std::string_view key = ctx.arg(1);
  bool wrong = false;
  Entry* e = lookup_write(ctx, key, wrong);
  if (wrong) {
    return;
  }
  if (e == nullptr) {
    ctx.reply().integer(0);
    return;
  }
  if (type == RangeType::rank) {
    auto len = static_cast<int64_t>(zset_of(e)->size());
    if (start < 0) {
      start += len;
    }
    if (end < 0) {
      end += len;
    }
    if (start < 0) {
      start = 0;
    }
    if (start > end || start >= len) {
      ctx.reply().integer(0);
      return;
    }
    if (end >= len) {
      end = len - 1;
    }
  }
  ZSetEdit z(ctx, e);
  size_t deleted = 0;
  switch (type) {
    case RangeType::rank:
      deleted = z->remove_rank_range(static_cast<size_t>(start), static_cast<size_t>(end));
      break;
    case RangeType::score:
      deleted = z->remove_score_range(range);
      break;
    default:
      deleted = z->remove_lex_range(lex);
      break;
  }
  finish_removal(ctx, key, z, deleted, event);
  ctx.reply().integer(static_cast<int64_t>(deleted));
}

void cmd_zremrangebyrank(CmdContext& ctx) {
  zremrange_generic(ctx, RangeType::rank);
}
void cmd_zremrangebyscore(CmdContext& ctx) {
  zremrange_generic(ctx, RangeType::score);
}
void cmd_zremrangebylex(CmdContext& ctx) {
  zremrange_generic(ctx, RangeType::lex);
}

// --- Point reads ------------------------------------------------------------------------

void cmd_zcard(CmdContext& ctx) {
  bool wrong = false;
  Entry* e = lookup_read(ctx, ctx.arg(1), wrong);
  if (wrong) {
    return;
  }
  ctx.reply().integer(e == nullptr ? 0 : static_cast<int64_t>(zset_of(e)->size()));
}

void cmd_zscore(CmdContext& ctx) {
  bool wrong = false;
  Entry* e = lookup_read(ctx, ctx.arg(1), wrong);
  if (wrong) {
    return;
  }
  double score = 0;
  if (e == nullptr || !zset_of(e)->score(ctx.arg(2), score)) {
    ctx.reply().null();
    return;
  }
  reply_score(ctx.reply(), score);
}

void cmd_zmscore(CmdContext& ctx) {
  bool wrong = false;
  Entry* e = lookup_read(ctx, ctx.arg(1), wrong);
  if (wrong) {
    return;
  }
  ctx.reply().array(ctx.argc() - 2);
  for (size_t j = 2; j < ctx.argc(); ++j) {
    double score = 0;
    if (e == nullptr || !zset_of(e)->score(ctx.arg(j), score)) {
      ctx.reply().null();
    } else {
      reply_score(ctx.reply(), score);
    }
  }
}

void zrank_generic(CmdContext& ctx, bool reverse) {
  if (ctx.argc() > 4) {
    ctx.reply_arity_error();
    return;
  }
  bool with_score = false;
  if (ctx.argc() > 3) {
    if (!is_keyword(ctx.arg(3), "withscore")) {
      ctx.reply().error(errors::k_syntax);
      return;
    }
    with_score = true;
  }
  bool wrong = false;
  Entry* e = lookup_read(ctx, ctx.arg(1), wrong);
  if (wrong) {
    return;
  }
  double score = 0;
  int64_t rank = e == nullptr ? -1 : zset_of(e)->rank(ctx.arg(2), reverse, &score);
  if (rank < 0) {
    if (with_score) {
      ctx.reply().null_array();
    } else {
      ctx.reply().null();
    }
    return;
  }
  if (with_score) {
    ctx.reply().array(2);
  }
  ctx.reply().integer(rank);
  if (with_score) {
    reply_score(ctx.reply(), score);
  }
}

void cmd_zrank(CmdContext& ctx) {
  zrank_generic(ctx, false);
}
void cmd_zrevrank(CmdContext& ctx) {
  zrank_generic(ctx, true);
}

void cmd_zcount(CmdContext& ctx) {
  ZScoreRange range;
  if (!parse_score_range(ctx.arg(2), ctx.arg(3), range)) {
    ctx.reply().error(errors::k_zrange_not_float);
    return;
  }
  bool wrong = false;
  Entry* e = lookup_read(ctx, ctx.arg(1), wrong);
  if (wrong) {
    return;
  }
  ctx.reply().integer(e == nullptr ? 0 : static_cast<int64_t>(zset_of(e)->count_in_range(range)));
}

void cmd_zlexcount(CmdContext& ctx) {
  ZLexRange range;
  if (!parse_lex_range(ctx.arg(2), ctx.arg(3), range)) {
    ctx.reply().error(errors::k_zrange_not_lex);
    return;
  }
  bool wrong = false;
  Entry* e = lookup_read(ctx, ctx.arg(1), wrong);
  if (wrong) {
    return;
  }
  ctx.reply().integer(e == nullptr ? 0
                                   : static_cast<int64_t>(zset_of(e)->count_in_lex_range(range)));
}

// --- ZRANGE and friends -----------------------------------------------------------------

enum class Direction : uint8_t { automatic, forward, reverse };

/// Where a range goes: to the client, or into a new sorted set (ZRANGESTORE).
class RangeSink {
 public:
  RangeSink(CmdContext& ctx, bool store) : m_ctx(ctx), m_store(store), m_limits(limits_of(ctx)) {}

  void enable_scores() {
    m_with_scores = true;
    m_nested = m_ctx.reply().resp() > 2;
  }
  /// Starts the result; `length` < 0 when unknown.
  void begin(int64_t length) {
    if (m_store) {
      m_dst = ZSetValue::create(length >= 0 ? static_cast<size_t>(length) : 0, 0, m_limits,
                                m_ctx.engine().rng()());
      return;
    }
    if (length >= 0) {
      m_ctx.reply().array(static_cast<size_t>(length) * (m_with_scores && !m_nested ? 2 : 1));
      m_deferred = false;
    } else {
      m_mark = m_ctx.reply().begin_array();
      m_deferred = true;
    }
  }
  void emit(std::string_view member, double score) {
    if (m_store) {
      double ignored = 0;
      m_dst->add(score, member, 0, ignored, m_limits);
      return;
    }
    ReplyBuilder& rb = m_ctx.reply();
    if (m_nested) {
      rb.array(2);
    }
    rb.bulk(member);
    if (m_with_scores) {
      reply_score(rb, score);
    }
  }
  void finish(size_t count, std::string_view dst_key) {
    if (m_store) {
      store_result(m_ctx, dst_key, std::move(m_dst), "zrangestore");
      return;
    }
    if (m_deferred) {
      m_ctx.reply().end_array(m_mark, count * (m_with_scores && !m_nested ? 2 : 1));
    }
  }

 private:
  CmdContext& m_ctx;
  bool m_store;
  ZSetLimits m_limits;
  bool m_with_scores = false;
  bool m_nested = false;
  bool m_deferred = false;
  size_t m_mark = 0;
  std::unique_ptr<ZSetValue> m_dst;
};

/// ZRANGE, ZRANGESTORE and the older Z[REV]RANGE[BYSCORE|BYLEX]: `start` is the position of
/// the source key.
void zrange_generic(CmdContext& ctx, size_t start, bool store, RangeType type, Direction dir) {
  size_t min_idx = start + 1;
  size_t max_idx = start + 2;
  bool with_scores = false;
  int64_t offset = 0;
  int64_t limit = -1;
  for (size_t j = start + 3; j < ctx.argc(); ++j) {
    size_t left = ctx.argc() - j - 1;
    std::string_view opt = ctx.arg(j);
    if (!store && is_keyword(opt, "withscores")) {
      with_scores = true;
    } else if (is_keyword(opt, "limit") && left >= 2) {
      if (!parse_long_arg(ctx, ctx.arg(j + 1), offset) ||
          !parse_long_arg(ctx, ctx.arg(j + 2), limit)) {
        return;
      }
      j += 2;
    } else if (dir == Direction::automatic && is_keyword(opt, "rev")) {
      dir = Direction::reverse;
    } else if (type == RangeType::automatic && is_keyword(opt, "bylex")) {
      type = RangeType::lex;
    } else if (type == RangeType::automatic && is_keyword(opt, "byscore")) {
      type = RangeType::score;
    } else {
      ctx.reply().error(errors::k_syntax);
      return;
    }
  }
  if (dir == Direction::automatic) {
    dir = Direction::forward;
  }
  if (type == RangeType::automatic) {
    type = RangeType::rank;
  }
  // As Valkey, "LIMIT x -1" is the same as no LIMIT, so it passes with a rank range.
  if (limit != -1 && type == RangeType::rank) {
    ctx.reply().error(errors::k_zrange_limit_needs_by);
    return;
  }
  if (with_scores && type == RangeType::lex) {
    ctx.reply().error(errors::k_zrange_withscores_bylex);
    return;
  }
  const bool reverse = dir == Direction::reverse;
  if (reverse && (type == RangeType::score || type == RangeType::lex)) {
    std::swap(min_idx, max_idx);
  }
  int64_t rank_start = 0;
  int64_t rank_end = 0;
  ZScoreRange range;
  ZLexRange lex;
  switch (type) {
    case RangeType::score:
      if (!parse_score_range(ctx.arg(min_idx), ctx.arg(max_idx), range)) {
        ctx.reply().error(errors::k_zrange_not_float);
        return;
      }
      break;
    case RangeType::lex:
      if (!parse_lex_range(ctx.arg(min_idx), ctx.arg(max_idx), lex)) {
        ctx.reply().error(errors::k_zrange_not_lex);
        return;
      }
      break;
    default:
      if (!parse_long_arg(ctx, ctx.arg(min_idx), rank_start) ||
          !parse_long_arg(ctx, ctx.arg(max_idx), rank_end)) {
        return;
      }
      break;
  }
  RangeSink sink(ctx, store);
  if (with_scores || store) {
    sink.enable_scores();
  }
  std::string_view dst_key = store ? ctx.arg(1) : std::string_view();
  Entry* e = ctx.db().lookup_read(ctx.arg(start));
  if (e == nullptr) {
    if (store) {
      sink.begin(-1);
      sink.finish(0, dst_key);
    } else {
      ctx.reply().array(0);
    }
    return;
  }
  if (e->type() != ObjType::zset) {
    ctx.reply().error(errors::k_wrong_type);
    return;
  }
  ZSetRef z = zset_of(e);
  auto emit = [&](std::string_view m, double s) { sink.emit(m, s); };
  if (type == RangeType::rank) {
    auto len = static_cast<int64_t>(z->size());
    if (rank_start < 0) {
      rank_start += len;
    }
    if (rank_end < 0) {
      rank_end += len;
    }
    if (rank_start < 0) {
      rank_start = 0;
    }
    if (rank_start > rank_end || rank_start >= len) {
      sink.begin(0);
      sink.finish(0, dst_key);
      return;
    }
    if (rank_end >= len) {
      rank_end = len - 1;
    }
    int64_t n = rank_end - rank_start + 1;
    sink.begin(n);
    z->range_by_rank(static_cast<size_t>(rank_start), static_cast<size_t>(rank_end), reverse, emit);
    sink.finish(static_cast<size_t>(n), dst_key);
    return;
  }
  sink.begin(-1);
  size_t n = type == RangeType::score ? z->range_by_score(range, offset, limit, reverse, emit)
                                      : z->range_by_lex(lex, offset, limit, reverse, emit);
  sink.finish(n, dst_key);
}

void cmd_zrange(CmdContext& ctx) {
  zrange_generic(ctx, 1, false, RangeType::automatic, Direction::automatic);
}
void cmd_zrangestore(CmdContext& ctx) {
  zrange_generic(ctx, 2, true, RangeType::automatic, Direction::automatic);
}
void cmd_zrevrange(CmdContext& ctx) {
  zrange_generic(ctx, 1, false, RangeType::rank, Direction::reverse);
}
void cmd_zrangebyscore(CmdContext& ctx) {
  zrange_generic(ctx, 1, false, RangeType::score, Direction::forward);
}
void cmd_zrevrangebyscore(CmdContext& ctx) {
  zrange_generic(ctx, 1, false, RangeType::score, Direction::reverse);
}
void cmd_zrangebylex(CmdContext& ctx) {
  zrange_generic(ctx, 1, false, RangeType::lex, Direction::forward);
}
void cmd_zrevrangebylex(CmdContext& ctx) {
  zrange_generic(ctx, 1, false, RangeType::lex, Direction::reverse);
}

// --- Pops -------------------------------------------------------------------------------

/// Valkey's genericZpopCommand: pops up to `count` members from the first existing key of
/// `keys`. `emit_key` puts the key name in the reply (BZPOP*, ZMPOP), `nested` makes each
/// pair its own array, `nil_when_empty` replies a null array when no key exists.
void zpop_generic(CmdContext& ctx, std::span<const std::string_view> keys, bool max, bool emit_key,
                  int64_t count, bool nested, bool nil_when_empty) {
  Entry* e = nullptr;
  std::string_view key;
  for (std::string_view k : keys) {
    bool wrong = false;
    e = lookup_write(ctx, k, wrong);
    if (wrong) {
      return;
    }
    if (e != nullptr) {
      key = k;
      break;
    }
  }
  ReplyBuilder& rb = ctx.reply();
  if (e == nullptr) {
    if (nil_when_empty) {
      rb.null_array();
    } else {
      rb.array(0);
    }
    return;
  }
  if (count == 0) {
    rb.array(0);
    return;
  }
  if (count == -1) {
    count = 1;
  }
  ZSetEdit z(ctx, e);
  auto n = std::min(static_cast<size_t>(count), z->size());
  if (!nested && !emit_key) {
    rb.array(n * 2);
  } else if (nested && !emit_key) {
    rb.array(n);
  } else if (!nested && emit_key) {
    rb.array(n * 2 + 1);
    rb.bulk(key);
  } else {
    rb.array(2);
    rb.bulk(key);
    rb.array(n);
  }
  std::string member;
  double score = 0;
  for (size_t i = 0; i < n; ++i) {
    z->pop(max, member, score);
    if (nested) {
      rb.array(2);
    }
    rb.bulk(member);
    reply_score(rb, score);
  }
  finish_removal(ctx, key, z, n, max ? "zpopmax" : "zpopmin");
}

void zpop_minmax(CmdContext& ctx, bool max) {
  if (ctx.argc() > 3) {
    ctx.reply().error(errors::k_syntax);
    return;
  }
  int64_t count = -1;
  if (ctx.argc() == 3) {
    if (!parse_i64(ctx.arg(2), count) || count < 0) {
      ctx.reply().error(errors::k_must_be_positive);
      return;
    }
  }
  bool nested = ctx.reply().resp() > 2 && count != -1;
  zpop_generic(ctx, ctx.args().subspan(1, 1), max, false, count, nested, false);
}

void cmd_zpopmin(CmdContext& ctx) {
  zpop_minmax(ctx, false);
}
void cmd_zpopmax(CmdContext& ctx) {
  zpop_minmax(ctx, true);
}

/// Parses ZMPOP/BZMPOP's "numkeys key... MIN|MAX [COUNT n]" from `numkeys_idx`.
bool parse_mpop(CmdContext& ctx, size_t numkeys_idx, size_t& numkeys, bool& max, int64_t& count) {
  int64_t n = 0;
  if (!parse_i64(ctx.arg(numkeys_idx), n) || n < 1) {
    ctx.reply().error(errors::k_zmpop_numkeys);
    return false;
  }
  if (static_cast<uint64_t>(n) >= ctx.argc() - numkeys_idx - 1) {
    ctx.reply().error(errors::k_syntax);
    return false;
  }
  numkeys = static_cast<size_t>(n);
  size_t where_idx = numkeys_idx + numkeys + 1;
  if (is_keyword(ctx.arg(where_idx), "min")) {
    max = false;
  } else if (is_keyword(ctx.arg(where_idx), "max")) {
    max = true;
  } else {
    ctx.reply().error(errors::k_syntax);
    return false;
  }
  count = -1;
  for (size_t j = where_idx + 1; j < ctx.argc(); ++j) {
    bool more = j + 1 < ctx.argc();
    if (count == -1 && is_keyword(ctx.arg(j), "count") && more) {
      ++j;
      if (!parse_i64(ctx.arg(j), count) || count < 1) {
        ctx.reply().error(errors::k_zmpop_count);
        return false;
      }
    } else {
      ctx.reply().error(errors::k_syntax);
      return false;
    }
  }
  if (count == -1) {
    count = 1;
  }
  return true;
}

void cmd_zmpop(CmdContext& ctx) {
  size_t numkeys = 0;
  bool max = false;
  int64_t count = 0;
  if (!parse_mpop(ctx, 1, numkeys, max, count)) {
    return;
  }
  zpop_generic(ctx, ctx.args().subspan(2, numkeys), max, true, count, true, true);
}

/// BZPOPMIN/BZPOPMAX (`count` -1, flat [key, member, score]) and BZMPOP (nested): pops from
/// the first non-empty sorted set among `keys`, else blocks until one gets members. The
/// command runs again from the start when a key becomes ready.
void blocking_zpop(CmdContext& ctx, std::span<const std::string_view> keys, bool max,
                   std::string_view timeout, int64_t count, bool nested) {
  int64_t deadline = 0;
  if (!parse_block_timeout(ctx, timeout, deadline)) {
    return;
  }
  for (size_t i = 0; i < keys.size(); ++i) {
    bool wrong = false;
    Entry* e = lookup_write(ctx, keys[i], wrong);
    if (wrong) {
      return;
    }
    if (e == nullptr || zset_of(e)->empty()) {
      continue;
    }
    zpop_generic(ctx, keys.subspan(i, 1), max, true, count, nested, nested);
    return;
  }
  // Inside MULTI/EXEC the wait is over at once, as a timeout.
  if (!may_block(ctx)) {
    ctx.reply().null_array();
    return;
  }
  block_for_keys(ctx, keys, BlockType::zset, deadline);
}

void cmd_bzpopmin(CmdContext& ctx) {
  blocking_zpop(ctx, ctx.args().subspan(1, ctx.argc() - 2), false, ctx.arg(ctx.argc() - 1), -1,
                false);
}

void cmd_bzpopmax(CmdContext& ctx) {
  blocking_zpop(ctx, ctx.args().subspan(1, ctx.argc() - 2), true, ctx.arg(ctx.argc() - 1), -1,
                false);
}

void cmd_bzmpop(CmdContext& ctx) {
  // Valkey checks numkeys, MIN|MAX and COUNT before the timeout.
  size_t numkeys = 0;
  bool max = false;
  int64_t count = 0;
  if (!parse_mpop(ctx, 2, numkeys, max, count)) {
    return;
  }
  blocking_zpop(ctx, ctx.args().subspan(3, numkeys), max, ctx.arg(1), count, true);
}

// --- ZRANDMEMBER ------------------------------------------------------------------------

void zrandmember_with_count(CmdContext& ctx, int64_t l, bool with_scores) {
  bool wrong = false;
  Entry* e = lookup_read(ctx, ctx.arg(1), wrong);
  if (wrong) {
    return;
  }
  ReplyBuilder& rb = ctx.reply();
  if (e == nullptr) {
    rb.array(0);
    return;
  }
  ZSetRef z = zset_of(e);
  const size_t size = z->size();
  const bool unique = l >= 0;
  const uint64_t count = l >= 0 ? static_cast<uint64_t>(l) : 0 - static_cast<uint64_t>(l);
  if (count == 0) {
    rb.array(0);
    return;
  }
  const bool nested = with_scores && rb.resp() > 2;
  auto emit = [&](std::string_view m, double s) {
    if (nested) {
      rb.array(2);
    }
    rb.bulk(m);
    if (with_scores) {
      reply_score(rb, s);
    }
  };
  std::mt19937_64& rng = ctx.engine().rng();
  // Repeats allowed (negative count), or a single member: sample with replacement.
  if (!unique || count == 1) {
    rb.array(with_scores && rb.resp() == 2 ? count * 2 : count);
    std::string m;
    double s = 0;
    for (uint64_t i = 0; i < count; ++i) {
      z->random_member(rng, m, s);
      emit(m, s);
    }
    return;
  }
  uint64_t reply_size = std::min<uint64_t>(count, size);
  rb.array(with_scores && rb.resp() == 2 ? reply_size * 2 : reply_size);
  // Everything, in Valkey's iteration order (highest score first).
  if (count >= size) {
    z->for_each_reverse(emit);
    return;
  }
  // A small set: a selection sample, which keeps the stored order.
  if (z->encoding() == ObjEncoding::listpack) {
    uint64_t needed = count;
    uint64_t left = size;
    z->for_each([&](std::string_view m, double s) {
      if (needed > 0 && rng() % left < needed) {
        emit(m, s);
        --needed;
      }
      --left;
    });
    return;
  }
  std::vector<std::pair<std::string, double>> picked;
  if (count * 3 > size) {
    // Most of the set: copy it and drop random members until `count` remain.
    picked.reserve(size);
    z->for_each_reverse([&](std::string_view m, double s) { picked.emplace_back(m, s); });
    while (picked.size() > count) {
      size_t i = rng() % picked.size();
      std::swap(picked[i], picked.back());
      picked.pop_back();
    }
  } else {
    // Few of many: draw until `count` distinct members came up.
    std::unordered_set<std::string> seen;
    std::string m;
    double s = 0;
    while (picked.size() < count) {
      z->random_member(rng, m, s);
      if (seen.insert(m).second) {
        picked.emplace_back(m, s);
      }
    }
  }
  for (const auto& [m, s] : picked) {
    emit(m, s);
  }
}

void cmd_zrandmember(CmdContext& ctx) {
  if (ctx.argc() >= 3) {
    int64_t l = 0;
    if (!parse_long_arg(ctx, ctx.arg(2), l)) {
      return;
    }
    if (l == INT64_MIN) {
      ctx.reply().error(errors::k_zrandmember_count_range);
      return;
    }
    bool with_scores = false;
    if (ctx.argc() > 4 || (ctx.argc() == 4 && !is_keyword(ctx.arg(3), "withscores"))) {
      ctx.reply().error(errors::k_syntax);
      return;
    }
    if (ctx.argc() == 4) {
      with_scores = true;
      if (l < -INT64_MAX / 2 || l > INT64_MAX / 2) {
        ctx.reply().error(errors::k_zrandmember_out_of_range);
        return;
      }
    }
    zrandmember_with_count(ctx, l, with_scores);
    return;
  }
  bool wrong = false;
  Entry* e = lookup_read(ctx, ctx.arg(1), wrong);
  if (wrong) {
    return;
  }
  if (e == nullptr) {
    ctx.reply().null();
    return;
  }
  std::string m;
  double s = 0;
  zset_of(e)->random_member(ctx.engine().rng(), m, s);
  ctx.reply().bulk(m);
}

// --- ZUNION / ZINTER / ZDIFF ------------------------------------------------------------

enum class SetOp : uint8_t { union_, inter, diff };

/// One input of the set algebra: a sorted set, or a set whose members all score 1 (visited
/// in the set's own order).
struct Source {
  const Entry* entry = nullptr;  // nullptr for a missing key
  double weight = 1.0;

  /// True when this input is a sorted set.
  bool is_zset() const { return entry != nullptr && entry->type() == ObjType::zset; }
  /// True when this input is a plain set (read through a SetRef: it may be a bare block).
  bool is_set() const { return entry != nullptr && entry->type() == ObjType::set; }
  size_t size() const;
  /// Calls fn(member, score) over every member, sorted sets from the highest score down
  /// (Valkey's iteration order, which decides how equal sums are accumulated).
  template <typename Fn>
  void for_each(Fn&& fn) const;
  /// The member's score in this input; false when absent.
  bool find(std::string_view member, double& score) const;
};

size_t Source::size() const {
  if (is_zset()) {
    return ZSetRef(entry)->size();
  }
  return is_set() ? SetRef(entry)->size() : 0;
}

template <typename Fn>
void Source::for_each(Fn&& fn) const {
  if (is_zset()) {
    ZSetRef(entry)->for_each_reverse(fn);
  } else if (is_set()) {
    char buf[24];
    SetRef(entry)->for_each([&](const SetMember& m) { fn(m.view(buf), 1.0); });
  }
}

bool Source::find(std::string_view member, double& score) const {
  if (is_zset()) {
    return ZSetRef(entry)->score(member, score);
  }
  if (is_set() && SetRef(entry)->contains(member)) {
    score = 1.0;
    return true;
  }
  return false;
}

void aggregate(double& target, double value, int mode) {
  if (mode == 0) {
    target += value;
    // inf + -inf is NaN: Valkey settles it as 0.
    if (std::isnan(target)) {
      target = 0.0;
    }
  } else if (mode == 1) {
    target = value < target ? value : target;
  } else {
    target = value > target ? value : target;
  }
}

void zsetop_generic(CmdContext& ctx, std::optional<std::string_view> dst, size_t numkeys_idx,
                    SetOp op, bool cardinality_only) {
  int64_t setnum = 0;
  if (!parse_long_arg(ctx, ctx.arg(numkeys_idx), setnum)) {
    return;
  }
  if (setnum < 1) {
    std::string err(errors::k_zsetop_no_keys_prefix);
    err += ctx.command().full_name;
    err += "' command";
    ctx.reply().error(err);
    return;
  }
  if (static_cast<uint64_t>(setnum) > ctx.argc() - (numkeys_idx + 1)) {
    ctx.reply().error(errors::k_syntax);
    return;
  }
  const auto n = static_cast<size_t>(setnum);
  std::vector<Source> src(n);
  size_t j = numkeys_idx + 1;
  for (size_t i = 0; i < n; ++i, ++j) {
    Entry* e = ctx.db().lookup_read(ctx.arg(j));
    if (e != nullptr && e->type() != ObjType::zset && e->type() != ObjType::set) {
      ctx.reply().error(errors::k_wrong_type);
      return;
    }
    src[i].entry = e;
  }
  int mode = 0;  // 0 sum, 1 min, 2 max
  bool with_scores = false;
  int64_t limit = 0;
  while (j < ctx.argc()) {
    size_t remaining = ctx.argc() - j;
    std::string_view opt = ctx.arg(j);
    if (op != SetOp::diff && !cardinality_only && remaining >= n + 1 &&
        is_keyword(opt, "weights")) {
      ++j;
      for (size_t i = 0; i < n; ++i, ++j) {
        if (!parse_string2d(ctx.arg(j), src[i].weight)) {
          ctx.reply().error(errors::k_zsetop_weight_not_float);
          return;
        }
      }
    } else if (op != SetOp::diff && !cardinality_only && remaining >= 2 &&
               is_keyword(opt, "aggregate")) {
      std::string_view a = ctx.arg(j + 1);
      if (is_keyword(a, "sum")) {
        mode = 0;
      } else if (is_keyword(a, "min")) {
        mode = 1;
      } else if (is_keyword(a, "max")) {
        mode = 2;
      } else {
        ctx.reply().error(errors::k_syntax);
        return;
      }
      j += 2;
    } else if (!dst && !cardinality_only && is_keyword(opt, "withscores")) {
      with_scores = true;
      ++j;
    } else if (cardinality_only && remaining >= 2 && is_keyword(opt, "limit")) {
      if (!parse_i64(ctx.arg(j + 1), limit) || limit < 0) {
        ctx.reply().error(errors::k_zintercard_limit_negative);
        return;
      }
      j += 2;
    } else {
      ctx.reply().error(errors::k_syntax);
      return;
    }
  }
  if (op != SetOp::diff) {
    std::stable_sort(src.begin(), src.end(),
                     [](const Source& a, const Source& b) { return a.size() < b.size(); });
  }

  auto result = std::make_unique<ZSetValue>(ctx.engine().rng()());
  result->convert_to_skiplist();
  const ZSetLimits limits = limits_of(ctx);
  uint64_t cardinality = 0;
  auto insert = [&](std::string_view m, double s) {
    double ignored = 0;
    result->add(s, m, 0, ignored, limits);
  };

  if (op == SetOp::inter) {
    if (src[0].size() > 0) {
      bool stop = false;
      src[0].for_each([&](std::string_view m, double s) {
        if (stop) {
          return;
        }
        double score = src[0].weight * s;
        if (std::isnan(score)) {
          score = 0;
        }
        size_t k = 1;
        for (; k < n; ++k) {
          double value = 0;
          if (src[k].entry == src[0].entry) {
            value = s * src[k].weight;
          } else if (src[k].find(m, value)) {
            value *= src[k].weight;
          } else {
            break;
          }
          aggregate(score, value, mode);
        }
        if (k != n) {
          return;
        }
        if (cardinality_only) {
          ++cardinality;
          if (limit != 0 && cardinality >= static_cast<uint64_t>(limit)) {
            stop = true;
          }
        } else {
          insert(m, score);
        }
      });
    }
  } else if (op == SetOp::union_) {
    std::unordered_map<std::string, double> acc;
    for (const Source& s : src) {
      if (s.size() == 0) {
        continue;
      }
      s.for_each([&](std::string_view m, double sc) {
        double score = s.weight * sc;
        if (std::isnan(score)) {
          score = 0;
        }
        auto [it, fresh] = acc.try_emplace(std::string(m), score);
        if (!fresh) {
          aggregate(it->second, score, mode);
        }
      });
    }
    for (const auto& [m, s] : acc) {
      insert(m, s);
    }
  } else if (src[0].size() > 0) {
    bool same = false;
    for (size_t k = 1; k < n; ++k) {
      same = same || src[k].entry == src[0].entry;
    }
    if (!same) {
      src[0].for_each([&](std::string_view m, double s) {
        double ignored = 0;
        for (size_t k = 1; k < n; ++k) {
          if (src[k].find(m, ignored)) {
            return;
          }
        }
        insert(m, s);
      });
    }
  }

  if (dst) {
    size_t max_len = 0;
    size_t total_len = 0;
    result->member_lengths(max_len, total_len);
    result->convert_to_listpack_if_fits(max_len, total_len, limits);
    std::string_view event = op == SetOp::union_  ? "zunionstore"
                             : op == SetOp::inter ? "zinterstore"
                                                  : "zdiffstore";
    store_result(ctx, *dst, std::move(result), event);
    return;
  }
  if (cardinality_only) {
    ctx.reply().integer(static_cast<int64_t>(cardinality));
    return;
  }
  ReplyBuilder& rb = ctx.reply();
  size_t len = result->size();
  rb.array(with_scores && rb.resp() == 2 ? len * 2 : len);
  result->for_each([&](std::string_view m, double s) {
    if (with_scores && rb.resp() > 2) {
      rb.array(2);
    }
    rb.bulk(m);
    if (with_scores) {
      reply_score(rb, s);
    }
  });
}

void cmd_zunionstore(CmdContext& ctx) {
  zsetop_generic(ctx, ctx.arg(1), 2, SetOp::union_, false);
}
void cmd_zinterstore(CmdContext& ctx) {
  zsetop_generic(ctx, ctx.arg(1), 2, SetOp::inter, false);
}
void cmd_zdiffstore(CmdContext& ctx) {
  zsetop_generic(ctx, ctx.arg(1), 2, SetOp::diff, false);
}
void cmd_zunion(CmdContext& ctx) {
  zsetop_generic(ctx, std::nullopt, 1, SetOp::union_, false);
}
void cmd_zinter(CmdContext& ctx) {
  zsetop_generic(ctx, std::nullopt, 1, SetOp::inter, false);
}
void cmd_zintercard(CmdContext& ctx) {
  zsetop_generic(ctx, std::nullopt, 1, SetOp::inter, true);
}
void cmd_zdiff(CmdContext& ctx) {
  zsetop_generic(ctx, std::nullopt, 1, SetOp::diff, false);
}

// --- ZSCAN ------------------------------------------------------------------------------

void cmd_zscan(CmdContext& ctx) {
  uint64_t cursor = 0;
  if (!parse_scan_cursor(ctx.arg(2), cursor)) {
    ctx.reply().error(errors::k_cursor_invalid);
    return;
  }
  bool wrong = false;
  Entry* e = lookup_read(ctx, ctx.arg(1), wrong);
  if (wrong) {
    return;
  }
  ReplyBuilder& rb = ctx.reply();
  if (e == nullptr) {
    rb.array(2);
    rb.bulk("0");
    rb.array(0);
    return;
  }
  int64_t count = 10;
  std::optional<std::string_view> pattern;
  bool no_scores = false;
  for (size_t i = 3; i < ctx.argc();) {
    std::string_view opt = ctx.arg(i);
    bool has_value = ctx.argc() - i >= 2;
    if (is_keyword(opt, "count") && has_value) {
      if (!parse_long_arg(ctx, ctx.arg(i + 1), count)) {
        return;
      }
      if (count < 1) {
        rb.error(errors::k_syntax);
        return;
      }
      i += 2;
    } else if (is_keyword(opt, "match") && has_value) {
      std::string_view p = ctx.arg(i + 1);
      pattern = p == "*" ? std::nullopt : std::optional<std::string_view>(p);
      i += 2;
    } else if (is_keyword(opt, "novalues")) {
      rb.error(errors::k_novalues_hscan_only);
      return;
    } else if (is_keyword(opt, "noscores")) {
      no_scores = true;
      ++i;
    } else {
      rb.error(errors::k_syntax);
      return;
    }
  }
  ZSetRef z = zset_of(e);
  std::vector<std::string> out;
  int64_t sampled = 0;
  auto visit = [&](std::string_view member, std::string_view score_text) {
    ++sampled;
    if (pattern && !glob_match(*pattern, member)) {
      return;
    }
    out.emplace_back(member);
    if (!no_scores) {
      out.emplace_back(score_text);
    }
  };
  if (z->encoding() == ObjEncoding::listpack) {
    cursor = z->scan(0, visit);
  } else {
    int64_t budget = count > INT64_MAX / 10 ? INT64_MAX : count * 10;
    do {
      cursor = z->scan(cursor, visit);
    } while (cursor != 0 && budget-- != 0 && sampled < count);
  }
  rb.array(2);
  rb.bulk(i64_to_string(static_cast<int64_t>(cursor)));
  rb.array(out.size());
  for (const std::string& s : out) {
    rb.bulk(s);
  }
}

constexpr CommandSpec k_zset_commands[] = {
    {"zadd", -4, k_cmd_write | k_cmd_denyoom | k_cmd_fast, 1, 1, 1, cmd_zadd,
     "@write @sortedset @fast"},
    {"zincrby", 4, k_cmd_write | k_cmd_denyoom | k_cmd_fast, 1, 1, 1, cmd_zincrby,
     "@write @sortedset @fast"},
    {"zrem", -3, k_cmd_write | k_cmd_fast, 1, 1, 1, cmd_zrem, "@write @sortedset @fast"},
    {"zremrangebyrank", 4, k_cmd_write, 1, 1, 1, cmd_zremrangebyrank, "@write @sortedset @slow"},
    {"zremrangebyscore", 4, k_cmd_write, 1, 1, 1, cmd_zremrangebyscore, "@write @sortedset @slow"},
    {"zremrangebylex", 4, k_cmd_write, 1, 1, 1, cmd_zremrangebylex, "@write @sortedset @slow"},
    {"zcard", 2, k_cmd_readonly | k_cmd_fast, 1, 1, 1, cmd_zcard, "@read @sortedset @fast"},
    {"zscore", 3, k_cmd_readonly | k_cmd_fast, 1, 1, 1, cmd_zscore, "@read @sortedset @fast"},
    {"zmscore", -3, k_cmd_readonly | k_cmd_fast, 1, 1, 1, cmd_zmscore, "@read @sortedset @fast"},
    {"zrank", -3, k_cmd_readonly | k_cmd_fast, 1, 1, 1, cmd_zrank, "@read @sortedset @fast"},
    {"zrevrank", -3, k_cmd_readonly | k_cmd_fast, 1, 1, 1, cmd_zrevrank, "@read @sortedset @fast"},
    {"zcount", 4, k_cmd_readonly | k_cmd_fast, 1, 1, 1, cmd_zcount, "@read @sortedset @fast"},
    {"zlexcount", 4, k_cmd_readonly | k_cmd_fast, 1, 1, 1, cmd_zlexcount, "@read @sortedset @fast"},
    {"zrange", -4, k_cmd_readonly, 1, 1, 1, cmd_zrange, "@read @sortedset @slow"},
    {"zrangestore", -5, k_cmd_write | k_cmd_denyoom, 1, 2, 1, cmd_zrangestore,
     "@write @sortedset @slow"},
    {"zrevrange", -4, k_cmd_readonly, 1, 1, 1, cmd_zrevrange, "@read @sortedset @slow"},
    {"zrangebyscore", -4, k_cmd_readonly, 1, 1, 1, cmd_zrangebyscore, "@read @sortedset @slow"},
    {"zrevrangebyscore", -4, k_cmd_readonly, 1, 1, 1, cmd_zrevrangebyscore,
     "@read @sortedset @slow"},
    {"zrangebylex", -4, k_cmd_readonly, 1, 1, 1, cmd_zrangebylex, "@read @sortedset @slow"},
    {"zrevrangebylex", -4, k_cmd_readonly, 1, 1, 1, cmd_zrevrangebylex, "@read @sortedset @slow"},
    {"zpopmin", -2, k_cmd_write | k_cmd_fast, 1, 1, 1, cmd_zpopmin, "@write @sortedset @fast"},
    {"zpopmax", -2, k_cmd_write | k_cmd_fast, 1, 1, 1, cmd_zpopmax, "@write @sortedset @fast"},
    {"zmpop", -4, k_cmd_write | k_cmd_movablekeys, 0, 0, 0, cmd_zmpop, "@write @sortedset @slow"},
    {"bzpopmin", -3, k_cmd_write | k_cmd_fast | k_cmd_blocking, 1, -2, 1, cmd_bzpopmin,
     "@write @sortedset @fast @blocking"},
    {"bzpopmax", -3, k_cmd_write | k_cmd_fast | k_cmd_blocking, 1, -2, 1, cmd_bzpopmax,
     "@write @sortedset @fast @blocking"},
    {"bzmpop", -5, k_cmd_write | k_cmd_blocking | k_cmd_movablekeys, 0, 0, 0, cmd_bzmpop,
     "@write @sortedset @slow @blocking"},
    {"zrandmember", -2, k_cmd_readonly, 1, 1, 1, cmd_zrandmember, "@read @sortedset @slow"},
    {"zunion", -3, k_cmd_readonly | k_cmd_movablekeys, 0, 0, 0, cmd_zunion,
     "@read @sortedset @slow"},
    {"zinter", -3, k_cmd_readonly | k_cmd_movablekeys, 0, 0, 0, cmd_zinter,
     "@read @sortedset @slow"},
    {"zintercard", -3, k_cmd_readonly | k_cmd_movablekeys, 0, 0, 0, cmd_zintercard,
     "@read @sortedset @slow"},
    {"zdiff", -3, k_cmd_readonly | k_cmd_movablekeys, 0, 0, 0, cmd_zdiff, "@read @sortedset @slow"},
    {"zunionstore", -4, k_cmd_write | k_cmd_denyoom | k_cmd_movablekeys, 1, 1, 1, cmd_zunionstore,
     "@write @sortedset @slow"},
    {"zinterstore", -4, k_cmd_write | k_cmd_denyoom | k_cmd_movablekeys, 1, 1, 1, cmd_zinterstore,
     "@write @sortedset @slow"},
    {"zdiffstore", -4, k_cmd_write | k_cmd_denyoom | k_cmd_movablekeys, 1, 1, 1, cmd_zdiffstore,
     "@write @sortedset @slow"},
    {"zscan", -3, k_cmd_readonly, 1, 1, 1, cmd_zscan, "@read @sortedset @slow"},
};

}  // namespace

void register_zset_family(CommandRegistry& registry) {
  registry.add(k_zset_commands);
}

}  // namespace keyshift::engine
