#include "engine/ds/skiplist.hpp"

#include <cassert>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>

namespace keyshift::engine {

// --- Ranges -----------------------------------------------------------------------------

int ZLexRange::compare(std::string_view v, const ZLexBound& b) {
  switch (b.kind) {
    case ZLexBound::Kind::minus:
      return 1;
    case ZLexBound::Kind::plus:
      return -1;
    case ZLexBound::Kind::value:
      break;
  }
  int c = v.compare(b.text);
  return c < 0 ? -1 : (c > 0 ? 1 : 0);
}

bool ZLexRange::empty() const {
  int c = 0;
  if (min.kind == max.kind && min.kind != ZLexBound::Kind::value) {
    c = 0;
  } else if (min.kind == ZLexBound::Kind::minus || max.kind == ZLexBound::Kind::plus) {
    c = -1;
  } else if (min.kind == ZLexBound::Kind::plus || max.kind == ZLexBound::Kind::minus) {
    c = 1;
  } else {
    c = min.text.compare(max.text);
  }
  return c > 0 || (c == 0 && (minex || maxex));
}

namespace {

// One end of a score range, read as Valkey does: strtod over the C string, so leading blanks
// and an empty text (0) pass, trailing bytes and NaN do not.
bool parse_score_bound(std::string_view arg, double& value, bool& exclusive) {
  std::string text(arg);
  const char* p = text.c_str();
  exclusive = false;
  if (*p == '(') {
    exclusive = true;
    ++p;
  }
  char* end = nullptr;
  value = std::strtod(p, &end);
  return *end == '\0' && !std::isnan(value);
}

bool parse_lex_bound(std::string_view arg, ZLexBound& bound, bool& exclusive) {
  if (arg.empty()) {
    return false;
  }
  switch (arg[0]) {
    case '+':
    case '-':
      // Valkey reads the argument as a C string: "+" must end right there.
      if (arg.size() > 1 && arg[1] != '\0') {
        return false;
      }
      bound.kind = arg[0] == '+' ? ZLexBound::Kind::plus : ZLexBound::Kind::minus;
      exclusive = true;
      return true;
    case '(':
    case '[':
      bound.kind = ZLexBound::Kind::value;
      bound.text.assign(arg.substr(1));
      exclusive = arg[0] == '(';
      return true;
    default:
      return false;
  }
}

}  // namespace

bool parse_score_range(std::string_view min, std::string_view max, ZScoreRange& out) {
  return parse_score_bound(min, out.min, out.minex) && parse_score_bound(max, out.max, out.maxex);
}

bool parse_lex_range(std::string_view min, std::string_view max, ZLexRange& out) {
  return parse_lex_bound(min, out.min, out.minex) && parse_lex_bound(max, out.max, out.maxex);
}

// --- Skiplist ---------------------------------------------------------------------------

ZSkiplist::ZSkiplist(MemoryCounter& mem, uint64_t seed) : m_mem(&mem), m_rng(seed | 1) {
  m_header = make_node(k_max_level, 0, {});
}

ZSkiplist::~ZSkiplist() {
  clear([this](ZNode* n) { free_node(n); });
  free_node(m_header);
}

ZNode* ZSkiplist::make_node(int level, double score, std::string_view member) {
  size_t size = sizeof(ZNode) + static_cast<size_t>(level) * sizeof(ZLevel) + member.size();
  auto* n = static_cast<ZNode*>(m_mem->allocate(size));
  n->m_bucket_next = nullptr;
  n->m_backward = nullptr;
  n->m_score = score;
  n->m_member_size = static_cast<uint32_t>(member.size());
  n->m_level_count = static_cast<uint8_t>(level);
  for (int i = 0; i < level; ++i) {
    n->levels()[i] = ZLevel{nullptr, 0};
  }
  if (!member.empty()) {
    std::memcpy(reinterpret_cast<char*>(n->levels() + level), member.data(), member.size());
  }
  return n;
}

// Each extra level with probability 1/4, as Valkey's ZSKIPLIST_P.
int ZSkiplist::random_level() {
  int level = 1;
  for (;;) {
    // xorshift64*
    m_rng ^= m_rng >> 12;
    m_rng ^= m_rng << 25;
    m_rng ^= m_rng >> 27;
    uint64_t r = m_rng * 0x2545F4914F6CDD1Dull;
    for (int bits = 0; bits < 32; ++bits) {
      if ((r & 3) != 0 || level >= k_max_level) {
        return level;
      }
      ++level;
      r >>= 2;
    }
  }
}

void ZSkiplist::find_update(double score, std::string_view member, ZNode** update,
                            uint64_t* rank) const {
  ZNode* x = m_header;
  for (int i = m_level - 1; i >= 0; --i) {
    if (rank != nullptr) {
      rank[i] = i == m_level - 1 ? 0 : rank[i + 1];
    }
    while (
        x->levels()[i].forward != nullptr &&
        zless(x->levels()[i].forward->score(), x->levels()[i].forward->member(), score, member)) {
      if (rank != nullptr) {
        rank[i] += x->levels()[i].span;
      }
      x = x->levels()[i].forward;
    }
    update[i] = x;
  }
}

void ZSkiplist::link(ZNode* x, ZNode** update, const uint64_t* rank_in) {
  uint64_t rank[k_max_level];
  for (int i = 0; i < m_level; ++i) {
    rank[i] = rank_in[i];
  }
  int level = x->level_count();
  if (level > m_level) {
    for (int i = m_level; i < level; ++i) {
      rank[i] = 0;
      update[i] = m_header;
      update[i]->levels()[i].span = m_length;
    }
    m_level = level;
  }
  for (int i = 0; i < level; ++i) {
    ZLevel& up = update[i]->levels()[i];
    x->levels()[i].forward = up.forward;
    up.forward = x;
    x->levels()[i].span = up.span - (rank[0] - rank[i]);
    up.span = (rank[0] - rank[i]) + 1;
  }
  for (int i = level; i < m_level; ++i) {
    update[i]->levels()[i].span++;
  }
  x->m_backward = update[0] == m_header ? nullptr : update[0];
  if (x->levels()[0].forward != nullptr) {
    x->levels()[0].forward->m_backward = x;
  } else {
    m_tail = x;
  }
  ++m_length;
}

ZNode* ZSkiplist::insert(double score, std::string_view member) {
  assert(!std::isnan(score));
  ZNode* update[k_max_level];
  uint64_t rank[k_max_level];
  find_update(score, member, update, rank);
  ZNode* x = make_node(random_level(), score, member);
  link(x, update, rank);
  return x;
}

void ZSkiplist::unlink_with(ZNode* x, ZNode** update) {
  for (int i = 0; i < m_level; ++i) {
    ZLevel& up = update[i]->levels()[i];
    if (up.forward == x) {
      up.span += x->levels()[i].span - 1;
      up.forward = x->levels()[i].forward;
    } else {
      up.span -= 1;
    }
  }
  if (x->levels()[0].forward != nullptr) {
    x->levels()[0].forward->m_backward = x->m_backward;
  } else {
    m_tail = x->m_backward;
  }
  while (m_level > 1 && m_header->levels()[m_level - 1].forward == nullptr) {
    --m_level;
  }
  --m_length;
  x->m_backward = nullptr;
}

void ZSkiplist::unlink(ZNode* node) {
  ZNode* update[k_max_level];
  find_update(node->score(), node->member(), update, nullptr);
  assert(update[0]->levels()[0].forward == node);
  unlink_with(node, update);
}

void ZSkiplist::update_score(ZNode* x, double new_score) {
  // Stays in place when still strictly between its neighbours' scores.
  ZNode* next = x->levels()[0].forward;
  if ((x->m_backward == nullptr || x->m_backward->score() < new_score) &&
      (next == nullptr || next->score() > new_score)) {
    x->m_score = new_score;
    return;
  }
  unlink(x);
  x->m_score = new_score;
  ZNode* update[k_max_level];
  uint64_t rank[k_max_level];
  find_update(new_score, x->member(), update, rank);
  for (int i = 0; i < x->level_count(); ++i) {
    x->levels()[i] = ZLevel{nullptr, 0};
  }
  link(x, update, rank);
}

uint64_t ZSkiplist::rank(double score, std::string_view member) const {
  ZNode* x = m_header;
  uint64_t rank = 0;
  for (int i = m_level - 1; i >= 0; --i) {
    while (x->levels()[i].forward != nullptr) {
      ZNode* f = x->levels()[i].forward;
      if (!(f->score() < score || (f->score() == score && f->member() <= member))) {
        break;
      }
      rank += x->levels()[i].span;
      x = f;
    }
    if (x != m_header && x->score() == score && x->member() == member) {
      return rank;
    }
  }
  return 0;
}

ZNode* ZSkiplist::at_rank(uint64_t rank) const {
  if (rank == 0 || rank > m_length) {
    return nullptr;
  }
  ZNode* x = m_header;
  uint64_t traversed = 0;
  for (int i = m_level - 1; i >= 0; --i) {
    while (x->levels()[i].forward != nullptr && traversed + x->levels()[i].span <= rank) {
      traversed += x->levels()[i].span;
      x = x->levels()[i].forward;
    }
    if (traversed == rank) {
      return x;
    }
  }
  return nullptr;
}

template <typename Pred>
ZNode* ZSkiplist::nth_matching(int64_t n, Pred&& below_min, Pred&& within_max,
                               bool empty_or_outside) const {
  if (empty_or_outside) {
    return nullptr;
  }
  ZNode* x = m_header;
  uint64_t edge = 0;
  if (n >= 0) {
    // The last node below the range, and its rank.
    for (int i = m_level - 1; i >= 0; --i) {
      while (x->levels()[i].forward != nullptr && below_min(x->levels()[i].forward)) {
        edge += x->levels()[i].span;
        x = x->levels()[i].forward;
      }
    }
    if (edge + static_cast<uint64_t>(n) >= m_length) {
      return nullptr;
    }
    ZNode* target = at_rank(edge + static_cast<uint64_t>(n) + 1);
    return target != nullptr && within_max(target) ? target : nullptr;
  }
  // The last node inside the upper end, and its rank.
  for (int i = m_level - 1; i >= 0; --i) {
    while (x->levels()[i].forward != nullptr && within_max(x->levels()[i].forward)) {
      edge += x->levels()[i].span;
      x = x->levels()[i].forward;
    }
  }
  // -n - 1 written as ~n so that INT64_MIN does not overflow.
  uint64_t back = static_cast<uint64_t>(~n);
  if (edge <= back) {
    return nullptr;
  }
  ZNode* target = at_rank(edge - back);
  return target != nullptr && !below_min(target) ? target : nullptr;
}

ZNode* ZSkiplist::nth_in_range(const ZScoreRange& range, int64_t n) const {
  bool outside = range.empty() || m_tail == nullptr || !range.gte_min(m_tail->score()) ||
                 !range.lte_max(first()->score());
  // One predicate type for both ends: "below the min" and "within the max".
  struct Pred {
    const ZScoreRange* r;
    bool min_side;
    bool operator()(const ZNode* x) const {
      return min_side ? !r->gte_min(x->score()) : r->lte_max(x->score());
    }
  };
  return nth_matching(n, Pred{&range, true}, Pred{&range, false}, outside);
}

ZNode* ZSkiplist::nth_in_lex_range(const ZLexRange& range, int64_t n) const {
  bool outside = range.empty() || m_tail == nullptr || !range.gte_min(m_tail->member()) ||
                 !range.lte_max(first()->member());
  struct Pred {
    const ZLexRange* r;
    bool min_side;
    bool operator()(const ZNode* x) const {
      return min_side ? !r->gte_min(x->member()) : r->lte_max(x->member());
    }
  };
  return nth_matching(n, Pred{&range, true}, Pred{&range, false}, outside);
}

}  // namespace keyshift::engine
