#pragma once

// The ordered half of a skiplist-encoded sorted set: nodes ordered by (score, member bytes),
// each level link carrying its span so that ranks are O(log N), and a backward link on level
// 0 for reverse walks. A node also carries a chain pointer so that the same allocation can
// be linked into the member index (a ChainedTable) of its sorted set: one allocation per
// member for both structures.
//
// Score and lex ranges follow Valkey's rules: "(" makes a bound exclusive, "-"/"+" are the
// lex infinities, and a range whose min is above its max (or equal with an exclusive end)
// holds nothing.

#include "engine/util/memory.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace keyshift::engine {

class ZNode;

/// One level link of a node: the next node on that level and how many level-0 steps away
/// it is.
struct ZLevel {
  ZNode* forward;
  uint64_t span;
};

/// A skiplist node: score, member and 1..32 level links in one allocation made by ZSkiplist.
/// Never constructed directly.
class ZNode {
 public:
  /// The member index's chain pointer (owned by the ChainedTable that links the node).
  ZNode*& bucket_next() { return m_bucket_next; }
  ZNode* backward() const { return m_backward; }
  double score() const { return m_score; }
  std::string_view member() const {
    return {reinterpret_cast<const char*>(levels() + m_level_count), m_member_size};
  }
  int level_count() const { return m_level_count; }
  ZLevel* levels() { return reinterpret_cast<ZLevel*>(this + 1); }
  const ZLevel* levels() const { return reinterpret_cast<const ZLevel*>(this + 1); }
  /// The next node on level 0, or nullptr.
  ZNode* next() const { return levels()[0].forward; }

 private:
  friend class ZSkiplist;
  ZNode* m_bucket_next;
  ZNode* m_backward;
  double m_score;
  uint32_t m_member_size;
  uint8_t m_level_count;
};

/// A score interval; `minex`/`maxex` make an end exclusive.
struct ZScoreRange {
  double min = 0;
  double max = 0;
  bool minex = false;
  bool maxex = false;
  bool gte_min(double v) const { return minex ? v > min : v >= min; }
  bool lte_max(double v) const { return maxex ? v < max : v <= max; }
  /// True when no score can be inside.
  bool empty() const { return min > max || (min == max && (minex || maxex)); }
};

/// One end of a lex range: a member text, or "-" (below everything) / "+" (above).
struct ZLexBound {
  enum class Kind : uint8_t { value, minus, plus };
  Kind kind = Kind::value;
  std::string text;
};

/// A lex interval over members (meaningful when all scores are equal).
struct ZLexRange {
  ZLexBound min;
  ZLexBound max;
  bool minex = false;
  bool maxex = false;
  bool gte_min(std::string_view v) const {
    int c = compare(v, min);
    return minex ? c > 0 : c >= 0;
  }
  bool lte_max(std::string_view v) const {
    int c = compare(v, max);
    return maxex ? c < 0 : c <= 0;
  }
  /// True when no member can be inside.
  bool empty() const;
  /// Order of a member against a bound.
  static int compare(std::string_view v, const ZLexBound& b);
};

/// Parses Valkey's score range arguments ("1.5", "(1.5", "-inf", "+inf"); false when one is
/// not a number (strtod rules: leading blanks and hex are accepted, NaN is not).
bool parse_score_range(std::string_view min, std::string_view max, ZScoreRange& out);
/// Parses Valkey's lex range arguments ("[a", "(a", "-", "+"); false when one is invalid.
bool parse_lex_range(std::string_view min, std::string_view max, ZLexRange& out);

/// The skiplist. Nodes are allocated from `mem`; erase functions unlink nodes and hand
/// them to the caller, who frees them with `free_node` once they are out of any index.
class ZSkiplist {
 public:
  static constexpr int k_max_level = 32;

  ZSkiplist(MemoryCounter& mem, uint64_t seed);
  ~ZSkiplist();
  ZSkiplist(const ZSkiplist&) = delete;
  ZSkiplist& operator=(const ZSkiplist&) = delete;

  /// Number of nodes.
  size_t size() const { return m_length; }
  /// Lowest / highest node, or nullptr.
  ZNode* first() const { return m_header->levels()[0].forward; }
  ZNode* last() const { return m_tail; }

  /// Inserts a new node; (score, member) must not be present. NaN is not a valid score.
  ZNode* insert(double score, std::string_view member);
  /// Unlinks `node` (which must be in this list) without freeing it.
  void unlink(ZNode* node);
  /// Moves `node` to `new_score`, keeping the same allocation (its index link stays valid).
  void update_score(ZNode* node, double new_score);
  /// Frees a node that is linked nowhere.
  void free_node(ZNode* node) { m_mem->deallocate(node); }

  /// 1-based rank of the node with (score, member), 0 when absent.
  uint64_t rank(double score, std::string_view member) const;
  /// The node at 1-based `rank`, or nullptr when out of range.
  ZNode* at_rank(uint64_t rank) const;

  /// The `n`-th node (0-based; negative counts back from the last, -1 being the last) among
  /// those in `range`, or nullptr.
  ZNode* nth_in_range(const ZScoreRange& range, int64_t n) const;
  ZNode* nth_in_lex_range(const ZLexRange& range, int64_t n) const;

  /// Unlinks every node in the range, in order, calling `fn(ZNode*)` on each (which must
  /// free it); returns how many.
  template <typename Fn>
  size_t erase_score_range(const ZScoreRange& range, Fn&& fn);
  template <typename Fn>
  size_t erase_lex_range(const ZLexRange& range, Fn&& fn);
  /// Same for 1-based ranks `start`..`end` (inclusive, within 1..size()).
  template <typename Fn>
  size_t erase_rank_range(uint64_t start, uint64_t end, Fn&& fn);

  /// Unlinks and hands every node to `fn`, leaving the list empty.
  template <typename Fn>
  void clear(Fn&& fn);

 private:
  /// Finds, per level, the last node before the first node >= (score, member).
  void find_update(double score, std::string_view member, ZNode** update, uint64_t* rank) const;
  void link(ZNode* node, ZNode** update, const uint64_t* rank);
  void unlink_with(ZNode* node, ZNode** update);
  int random_level();
  ZNode* make_node(int level, double score, std::string_view member);
  template <typename Pred>
  ZNode* nth_matching(int64_t n, Pred&& below_min, Pred&& within_max, bool empty_or_outside) const;

  MemoryCounter* m_mem;
  ZNode* m_header;
  ZNode* m_tail = nullptr;
  size_t m_length = 0;
  int m_level = 1;
  uint64_t m_rng;
};

/// Orders (score, member) pairs as the skiplist does.
inline bool zless(double a_score, std::string_view a_member, double b_score,
                  std::string_view b_member) {
  return a_score < b_score || (a_score == b_score && a_member < b_member);
}

// --- Templates --------------------------------------------------------------------------

template <typename Fn>
size_t ZSkiplist::erase_score_range(const ZScoreRange& range, Fn&& fn) {
  ZNode* update[k_max_level];
  ZNode* x = m_header;
  for (int i = m_level - 1; i >= 0; --i) {
    while (x->levels()[i].forward != nullptr && !range.gte_min(x->levels()[i].forward->score())) {
      x = x->levels()[i].forward;
    }
    update[i] = x;
  }
  x = x->levels()[0].forward;
  size_t removed = 0;
  while (x != nullptr && range.lte_max(x->score())) {
    ZNode* next = x->levels()[0].forward;
    unlink_with(x, update);
    fn(x);
    ++removed;
    x = next;
  }
  return removed;
}

template <typename Fn>
size_t ZSkiplist::erase_lex_range(const ZLexRange& range, Fn&& fn) {
  ZNode* update[k_max_level];
  ZNode* x = m_header;
  for (int i = m_level - 1; i >= 0; --i) {
    while (x->levels()[i].forward != nullptr && !range.gte_min(x->levels()[i].forward->member())) {
      x = x->levels()[i].forward;
    }
    update[i] = x;
  }
  x = x->levels()[0].forward;
  size_t removed = 0;
  while (x != nullptr && range.lte_max(x->member())) {
    ZNode* next = x->levels()[0].forward;
    unlink_with(x, update);
    fn(x);
    ++removed;
    x = next;
  }
  return removed;
}

template <typename Fn>
size_t ZSkiplist::erase_rank_range(uint64_t start, uint64_t end, Fn&& fn) {
  ZNode* update[k_max_level];
  ZNode* x = m_header;
  uint64_t traversed = 0;
  for (int i = m_level - 1; i >= 0; --i) {
    while (x->levels()[i].forward != nullptr && traversed + x->levels()[i].span < start) {
      traversed += x->levels()[i].span;
      x = x->levels()[i].forward;
    }
    update[i] = x;
  }
  ++traversed;
  x = x->levels()[0].forward;
  size_t removed = 0;
  while (x != nullptr && traversed <= end) {
    ZNode* next = x->levels()[0].forward;
    unlink_with(x, update);
    fn(x);
    ++removed;
    ++traversed;
    x = next;
  }
  return removed;
}

template <typename Fn>
void ZSkiplist::clear(Fn&& fn) {
  ZNode* x = first();
  while (x != nullptr) {
    ZNode* next = x->levels()[0].forward;
    fn(x);
    x = next;
  }
  for (int i = 0; i < k_max_level; ++i) {
    m_header->levels()[i] = ZLevel{nullptr, 0};
  }
  m_header->m_backward = nullptr;
  m_tail = nullptr;
  m_length = 0;
  m_level = 1;
}

}  // namespace keyshift::engine
