#pragma once

// The sorted-set type. Two encodings, named as OBJECT ENCODING reports them:
//
//   listpack  member, score, member, score, ... ordered by (score, member bytes); a score
//             that is integral within +-2^62 is stored as an integer entry (so -0 becomes 0,
//             as in Valkey), any other as its Valkey reply text ("0.1", "1e+300", "inf")
//   skiplist  a ZSkiplist for order and ranks, plus a ChainedTable member index over the
//             same nodes (one allocation per member)
//
// Conversion follows Valkey 8: a sorted set is created as a listpack unless the write that
// creates it already exceeds zset-max-listpack-entries/-value, and moves to skiplist when a
// write would exceed them; only stores of computed results (ZRANGESTORE, ZUNIONSTORE, ...)
// go back to listpack when the result fits.
//
// Every member keeps bytes() exact: callers add the difference of bytes() around a change
// to the engine's memory count.

#include "engine/ds/listpack.hpp"
#include "engine/ds/skiplist.hpp"
#include "engine/keyspace/chained_table.hpp"
#include "engine/keyspace/digest.hpp"
#include "engine/keyspace/object.hpp"
#include "engine/keyspace/value_ref.hpp"
#include "engine/util/double_format.hpp"
#include "engine/util/hash.hpp"
#include "engine/util/memory.hpp"

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <string_view>

namespace keyshift::engine {

/// When a sorted set leaves the listpack encoding (zset-max-listpack-entries / -value).
struct ZSetLimits {
  uint64_t max_listpack_entries = 128;  // Valkey 8's defaults
  uint64_t max_listpack_value = 64;
};

/// ZADD's input conditions.
enum ZAddFlag : uint32_t {
  k_zadd_incr = 1u << 0,
  k_zadd_nx = 1u << 1,
  k_zadd_xx = 1u << 2,
  k_zadd_gt = 1u << 3,
  k_zadd_lt = 1u << 4,
};

/// What one ZADD element did.
enum class ZAddOutcome : uint8_t {
  added,      // a new member
  updated,    // an existing member got a new score
  unchanged,  // an existing member kept its score (same score, or a zero increment)
  skipped,    // NX/XX/GT/LT said no
  nan,        // the increment produced NaN: nothing changed
};

/// Chain and key access for the skiplist encoding's member index.
struct ZNodeTraits {
  static ZNode*& next(ZNode* n) { return n->bucket_next(); }
  static std::string_view key(const ZNode* n) { return n->member(); }
  static uint64_t hash(std::string_view member, uint64_t seed) { return hash_bytes(member, seed); }
};

/// A sorted-set value.
class ZSetValue final : public HeapObject {
 public:
  using Table = ChainedTable<ZNode, ZNodeTraits>;

  /// An empty listpack-encoded sorted set; `seed` seeds its index and skiplist levels if it
  /// grows into the skiplist encoding.
  explicit ZSetValue(uint64_t seed);
  ~ZSetValue() override;
  ZSetValue(const ZSetValue&) = delete;
  ZSetValue& operator=(const ZSetValue&) = delete;

  /// An empty sorted set in the encoding Valkey picks for a write of `size_hint` elements
  /// whose longest member has `len_hint` bytes (its zsetTypeCreate).
  static std::unique_ptr<ZSetValue> create(size_t size_hint, size_t len_hint,
                                           const ZSetLimits& limits, uint64_t seed);

  /// A listpack-encoded sorted set over `block`, lent by a small sorted set's Entry
  /// (Entry::Kind::blob; see value_ref.hpp); it never frees the block it was lent.
  ZSetValue(ObjEncoding encoding, uint64_t seed, uint8_t* block);
  size_t bytes() const override;
  HeapObject* clone() const override;

  /// The listpack block (null in the skiplist encoding), for the entry that lent or takes it.
  uint8_t* block() const { return m_lp.block(); }
  /// Gives the block up without freeing it (it stays with its entry).
  void release_block() { (void)m_lp.release(); }
  /// Bytes of the block alone.
  size_t block_bytes() const { return m_lp.bytes(); }
  /// A heap sorted set that takes over this skiplist-encoded one (a borrowed listpack that
  /// grew into a skiplist moves into its own object); this one is left empty.
  ZSetValue* detach();
  /// True for the encodings an Entry keeps as a bare block.
  static bool is_blob_encoding(ObjEncoding e) { return e == ObjEncoding::listpack; }

  /// listpack or skiplist.
  ObjEncoding encoding() const { return m_large ? ObjEncoding::skiplist : ObjEncoding::listpack; }
  /// Number of members.
  size_t size() const { return m_large ? m_large->list.size() : m_lp.size() / 2; }
  bool empty() const { return size() == 0; }
  /// Releases the listpack's spare capacity (a no-op for the skiplist encoding).
  void shrink_to_fit() {
    if (!m_large) {
      m_lp.shrink_to_fit();
    }
  }

  // --- Member lookups ----------------------------------------------------------------------
  /// The score of `member`; false when absent.
  bool score(std::string_view member, double& out) const;
  /// 0-based rank of `member` (from the highest score when `reverse`), -1 when absent;
  /// `score` (optional) receives its score.
  int64_t rank(std::string_view member, bool reverse, double* score) const;

  // --- Writes ------------------------------------------------------------------------------
  /// Valkey's zsetAdd: adds or updates one member under `flags` (ZAddFlag). `new_score`
  /// receives the resulting score unless the outcome is skipped or nan. May convert to
  /// skiplist. NaN `score` must be rejected by the caller.
  ZAddOutcome add(double score, std::string_view member, uint32_t flags, double& new_score,
                  const ZSetLimits& limits);
  /// Removes `member`; true if it was there.
  bool remove(std::string_view member);
  /// Converts a listpack to skiplist ahead of a write of `size_hint` elements with members
  /// up to `len_hint` bytes that could not fit (Valkey's zsetTypeMaybeConvert).
  void maybe_convert(size_t size_hint, size_t len_hint, const ZSetLimits& limits);
  /// Converts to skiplist (no-op when already).
  void convert_to_skiplist();
  /// Converts a skiplist to listpack when the members fit the limits: `max_len` is the
  /// longest member, `total_len` all member bytes (Valkey's zsetConvertToListpackIfNeeded).
  void convert_to_listpack_if_fits(size_t max_len, size_t total_len, const ZSetLimits& limits);
  /// Removes 0-based ranks `start`..`end` (inclusive, within bounds); returns how many.
  size_t remove_rank_range(size_t start, size_t end);
  /// Removes every member whose score is in `range`; returns how many.
  size_t remove_score_range(const ZScoreRange& range);
  /// Removes every member in the lex `range`; returns how many.
  size_t remove_lex_range(const ZLexRange& range);
  /// Removes the lowest (or highest when `max`) member into `member`/`score`; false when
  /// empty.
  bool pop(bool max, std::string& member, double& score);

  // --- Reads: `fn(std::string_view member, double score)`; views last until the next write.
  /// Every member in ascending order (the read interface SORT uses).
  template <typename Fn>
  void for_each(Fn&& fn) const;
  /// Every member in descending order.
  template <typename Fn>
  void for_each_reverse(Fn&& fn) const;
  /// Members at 0-based ranks `start`..`end` (inclusive, within bounds), from the highest
  /// score when `reverse`.
  template <typename Fn>
  void range_by_rank(size_t start, size_t end, bool reverse, Fn&& fn) const;
  /// Members whose score is in `range`, skipping `offset` and stopping after `limit` (< 0:
  /// no limit), as ZRANGEBYSCORE walks them; returns how many were emitted.
  template <typename Fn>
  size_t range_by_score(const ZScoreRange& range, int64_t offset, int64_t limit, bool reverse,
                        Fn&& fn) const;
  /// Same over a lex range.
  template <typename Fn>
  size_t range_by_lex(const ZLexRange& range, int64_t offset, int64_t limit, bool reverse,
                      Fn&& fn) const;
  /// Number of members whose score is in `range`.
  size_t count_in_range(const ZScoreRange& range) const;
  /// Number of members in the lex `range`.
  size_t count_in_lex_range(const ZLexRange& range) const;
  /// One ZSCAN step: `fn(std::string_view member, std::string_view score_text)` with the
  /// score text ZSCAN replies (the stored listpack text, or "%.17g" for skiplists).
  /// Listpacks yield everything and return 0; skiplists visit the cursor's buckets.
  template <typename Fn>
  uint64_t scan(uint64_t cursor, Fn&& fn) const;
  /// A member picked at random (the set must not be empty).
  void random_member(std::mt19937_64& rng, std::string& member, double& score) const;

  /// Bytes of the longest member and of all members (for the listpack limits).
  void member_lengths(size_t& max_len, size_t& total_len) const;

  /// A listpack score entry as a double (a listpack from a file: checked by the reader).
  static double lp_score(const LpValue& v);

 private:
  /// Position of the member entry of `member`, or k_none.
  Listpack::Pos lp_find(std::string_view member) const;
  void lp_insert(double score, std::string_view member);
  /// Valkey's zzlIsInLexRange: the range is not empty and reaches the first and last members.
  bool lp_lex_touches(const ZLexRange& range) const;
  ZNode* table_find(std::string_view member) const;
  void sl_insert(double score, std::string_view member);
  /// Unlinks `n` from the index and frees it (after the skiplist unlinked it).
  void sl_drop(ZNode* n);

  /// What only the skiplist encoding needs, allocated on conversion, so that a small sorted
  /// set pays one pointer for it.
  struct Large {
    explicit Large(uint64_t seed) : list(mem, seed), table(mem, seed) {}
    MemoryCounter mem;  // nodes and buckets of the skiplist encoding
    ZSkiplist list;
    Table table;  // declared last: destroyed first, while the nodes it links still exist
  };

  uint32_t m_seed;                 // seeds the index and levels (32 random bits suffice)
  Listpack m_lp;                   // listpack encoding (empty in skiplist)
  std::unique_ptr<Large> m_large;  // skiplist encoding only
};

// A small sorted set is a vtable pointer, the seed, one listpack pointer and one null Large
// pointer: 32 bytes instead of 80.
static_assert(sizeof(ZSetValue) <= 32, "a small sorted set's object must stay within 32 bytes");

/// DEBUG DIGEST-VALUE of a sorted set (Valkey's xorObjectDigest for zsets).
Digest digest_zset(const ZSetValue& zset, bool has_expire, const Digest& seed = {});

/// The sorted set in a zset-typed Entry (see ValueRef).
using ZSetRef = ValueRef<ZSetValue>;

// --- Templates --------------------------------------------------------------------------

inline double ZSetValue::lp_score(const LpValue& v) {
  if (v.is_int()) {
    return static_cast<double>(v.integer());
  }
  double d = 0;
  std::string_view s = v.str();
  std::from_chars(s.data(), s.data() + s.size(), d);
  return d;
}

template <typename Fn>
void ZSetValue::for_each(Fn&& fn) const {
  if (m_large) {
    for (ZNode* n = m_large->list.first(); n != nullptr; n = n->next()) {
      fn(n->member(), n->score());
    }
    return;
  }
  char buf[24];
  for (Listpack::Pos p = m_lp.first(); p != Listpack::k_none;) {
    std::string_view member = m_lp.get(p).view(buf);
    Listpack::Pos s = m_lp.next(p);
    fn(member, lp_score(m_lp.get(s)));
    p = m_lp.next(s);
  }
}

template <typename Fn>
void ZSetValue::for_each_reverse(Fn&& fn) const {
  if (m_large) {
    for (ZNode* n = m_large->list.last(); n != nullptr; n = n->backward()) {
      fn(n->member(), n->score());
    }
    return;
  }
  char buf[24];
  for (Listpack::Pos s = m_lp.last(); s != Listpack::k_none;) {
    Listpack::Pos p = m_lp.prev(s);
    fn(m_lp.get(p).view(buf), lp_score(m_lp.get(s)));
    s = m_lp.prev(p);
  }
}

template <typename Fn>
void ZSetValue::range_by_rank(size_t start, size_t end, bool reverse, Fn&& fn) const {
  size_t n = end - start + 1;
  if (m_large) {
    ZNode* x = reverse ? m_large->list.at_rank(m_large->list.size() - start)
                       : m_large->list.at_rank(start + 1);
    while (n-- > 0 && x != nullptr) {
      fn(x->member(), x->score());
      x = reverse ? x->backward() : x->next();
    }
    return;
  }
  char buf[24];
  Listpack::Pos p = reverse ? m_lp.seek(-2 - 2 * static_cast<int64_t>(start))
                            : m_lp.seek(2 * static_cast<int64_t>(start));
  while (n-- > 0 && p != Listpack::k_none) {
    Listpack::Pos s = m_lp.next(p);
    fn(m_lp.get(p).view(buf), lp_score(m_lp.get(s)));
    if (reverse) {
      Listpack::Pos prev_score = m_lp.prev(p);
      p = prev_score == Listpack::k_none ? Listpack::k_none : m_lp.prev(prev_score);
    } else {
      p = m_lp.next(s);
    }
  }
}

template <typename Fn>
size_t ZSetValue::range_by_score(const ZScoreRange& range, int64_t offset, int64_t limit,
                                 bool reverse, Fn&& fn) const {
  size_t emitted = 0;
  if (offset > 0 && static_cast<uint64_t>(offset) >= size()) {
    return 0;
  }
  if (m_large) {
    // A negative offset counts from the other end here, as Valkey 8.0's zslNthInRange does
    // (its listpack walk returns nothing for one instead).
    ZNode* x = reverse ? m_large->list.nth_in_range(range, ~offset)
                       : m_large->list.nth_in_range(range, offset);
    while (x != nullptr && limit-- != 0) {
      if (reverse ? !range.gte_min(x->score()) : !range.lte_max(x->score())) {
        break;
      }
      ++emitted;
      fn(x->member(), x->score());
      x = reverse ? x->backward() : x->next();
    }
    return emitted;
  }
  if (range.empty() || m_lp.empty()) {
    return 0;
  }
  // Listpack: the pairs as (member pos, score pos), walked from the matching end.
  char buf[24];
  auto step = [&](Listpack::Pos& p, Listpack::Pos& s) {
    if (reverse) {
      s = m_lp.prev(p);
      p = s == Listpack::k_none ? Listpack::k_none : m_lp.prev(s);
    } else {
      p = m_lp.next(s);
      s = p == Listpack::k_none ? Listpack::k_none : m_lp.next(p);
    }
  };
  Listpack::Pos s = reverse ? m_lp.last() : m_lp.next(m_lp.first());
  Listpack::Pos p = reverse ? m_lp.prev(s) : m_lp.first();
  // Valkey first checks that the range touches the set at all, then finds its edge.
  double last_score = lp_score(m_lp.get(m_lp.last()));
  double first_score = lp_score(m_lp.get(m_lp.next(m_lp.first())));
  if (!range.gte_min(last_score) || !range.lte_max(first_score)) {
    return 0;
  }
  while (p != Listpack::k_none) {
    double sc = lp_score(m_lp.get(s));
    if (reverse ? range.lte_max(sc) : range.gte_min(sc)) {
      if (reverse ? !range.gte_min(sc) : !range.lte_max(sc)) {
        return 0;
      }
      break;
    }
    step(p, s);
  }
  while (p != Listpack::k_none && offset-- != 0) {
    step(p, s);
  }
  while (p != Listpack::k_none && limit-- != 0) {
    double sc = lp_score(m_lp.get(s));
    if (reverse ? !range.gte_min(sc) : !range.lte_max(sc)) {
      break;
    }
    ++emitted;
    fn(m_lp.get(p).view(buf), sc);
    step(p, s);
  }
  return emitted;
}

template <typename Fn>
size_t ZSetValue::range_by_lex(const ZLexRange& range, int64_t offset, int64_t limit, bool reverse,
                               Fn&& fn) const {
  size_t emitted = 0;
  if (m_large) {
    ZNode* x = reverse ? m_large->list.nth_in_lex_range(range, ~offset)
                       : m_large->list.nth_in_lex_range(range, offset);
    while (x != nullptr && limit-- != 0) {
      if (reverse ? !range.gte_min(x->member()) : !range.lte_max(x->member())) {
        break;
      }
      ++emitted;
      fn(x->member(), x->score());
      x = reverse ? x->backward() : x->next();
    }
    return emitted;
  }
  if (range.empty() || m_lp.empty()) {
    return 0;
  }
  char buf[24];
  auto step = [&](Listpack::Pos& p, Listpack::Pos& s) {
    if (reverse) {
      s = m_lp.prev(p);
      p = s == Listpack::k_none ? Listpack::k_none : m_lp.prev(s);
    } else {
      p = m_lp.next(s);
      s = p == Listpack::k_none ? Listpack::k_none : m_lp.next(p);
    }
  };
  if (!lp_lex_touches(range)) {
    return 0;
  }
  Listpack::Pos s = reverse ? m_lp.last() : m_lp.next(m_lp.first());
  Listpack::Pos p = reverse ? m_lp.prev(s) : m_lp.first();
  while (p != Listpack::k_none) {
    std::string_view m = m_lp.get(p).view(buf);
    if (reverse ? range.lte_max(m) : range.gte_min(m)) {
      if (reverse ? !range.gte_min(m) : !range.lte_max(m)) {
        return 0;
      }
      break;
    }
    step(p, s);
  }
  while (p != Listpack::k_none && offset-- != 0) {
    step(p, s);
  }
  while (p != Listpack::k_none && limit-- != 0) {
    std::string_view m = m_lp.get(p).view(buf);
    if (reverse ? !range.gte_min(m) : !range.lte_max(m)) {
      break;
    }
    ++emitted;
    fn(m, lp_score(m_lp.get(s)));
    step(p, s);
  }
  return emitted;
}

template <typename Fn>
uint64_t ZSetValue::scan(uint64_t cursor, Fn&& fn) const {
  if (!m_large) {
    char mbuf[24];
    char sbuf[24];
    for (Listpack::Pos p = m_lp.first(); p != Listpack::k_none;) {
      Listpack::Pos s = m_lp.next(p);
      fn(m_lp.get(p).view(mbuf), m_lp.get(s).view(sbuf));
      p = m_lp.next(s);
    }
    return 0;
  }
  return m_large->table.scan(cursor,
                             [&](ZNode* n) { fn(n->member(), double_17g_text(n->score())); });
}

}  // namespace keyshift::engine
