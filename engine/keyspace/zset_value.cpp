#include "engine/keyspace/zset_value.hpp"

#include "engine/util/double_format.hpp"

#include <cmath>

namespace keyshift::engine {

namespace {

// Valkey's lpSafeToAdd: a listpack stays below 1 GiB.
constexpr size_t k_listpack_safety_size = size_t{1} << 30;

}  // namespace

ZSetValue::ZSetValue(uint64_t seed) : m_seed(static_cast<uint32_t>(seed)) {}

ZSetValue::ZSetValue(ObjEncoding /*encoding*/, uint64_t seed, uint8_t* block)
    : m_seed(static_cast<uint32_t>(seed)), m_lp(Listpack::from_block(block)) {}

ZSetValue* ZSetValue::detach() {
  auto* z = new ZSetValue(m_seed);
  z->m_large = std::move(m_large);
  return z;
}

// The index only links the skiplist's nodes; Large drops its buckets (declared last) before
// the nodes go.
ZSetValue::~ZSetValue() = default;

std::unique_ptr<ZSetValue> ZSetValue::create(size_t size_hint, size_t len_hint,
                                             const ZSetLimits& limits, uint64_t seed) {
  auto z = std::make_unique<ZSetValue>(seed);
  if (size_hint > limits.max_listpack_entries || len_hint > limits.max_listpack_value) {
    z->convert_to_skiplist();
  }
  return z;
}

size_t ZSetValue::bytes() const {
  size_t n = sizeof(*this) + m_lp.bytes();
  if (m_large) {
    n += sizeof(Large) + m_large->mem.used();
  }
  return n;
}

HeapObject* ZSetValue::clone() const {
  auto* z = new ZSetValue(m_seed);
  if (!m_large) {
    z->m_lp = m_lp;
    return z;
  }
  z->convert_to_skiplist();
  // Highest first, so every insert lands at the head of the copy.
  for (ZNode* n = m_large->list.last(); n != nullptr; n = n->backward()) {
    z->sl_insert(n->score(), n->member());
  }
  return z;
}

// --- Lookups ----------------------------------------------------------------------------

Listpack::Pos ZSetValue::lp_find(std::string_view member) const {
  return m_lp.find(member, m_lp.first(), 1);
}

ZNode* ZSetValue::table_find(std::string_view member) const {
  return m_large->table.find(member);
}

bool ZSetValue::score(std::string_view member, double& out) const {
  if (m_large) {
    ZNode* n = table_find(member);
    if (n == nullptr) {
      return false;
    }
    out = n->score();
    return true;
  }
  Listpack::Pos p = lp_find(member);
  if (p == Listpack::k_none) {
    return false;
  }
  out = lp_score(m_lp.get(m_lp.next(p)));
  return true;
}

int64_t ZSetValue::rank(std::string_view member, bool reverse, double* score) const {
  const auto len = static_cast<int64_t>(size());
  if (m_large) {
    ZNode* n = table_find(member);
    if (n == nullptr) {
      return -1;
    }
    auto r = static_cast<int64_t>(m_large->list.rank(n->score(), n->member()));
    if (score != nullptr) {
      *score = n->score();
    }
    return reverse ? len - r : r - 1;
  }
  int64_t r = 0;
  for (Listpack::Pos p = m_lp.first(); p != Listpack::k_none; ++r) {
    Listpack::Pos s = m_lp.next(p);
    if (m_lp.get(p).equals(member)) {
      if (score != nullptr) {
        *score = lp_score(m_lp.get(s));
      }
      return reverse ? len - 1 - r : r;
    }
    p = m_lp.next(s);
  }
  return -1;
}

// --- Writes -----------------------------------------------------------------------------

void ZSetValue::lp_insert(double score, std::string_view member) {
  char buf[24];
  Listpack::Pos at = Listpack::k_none;
  for (Listpack::Pos p = m_lp.first(); p != Listpack::k_none;) {
    Listpack::Pos s = m_lp.next(p);
    double sc = lp_score(m_lp.get(s));
    if (sc > score || (sc == score && m_lp.get(p).view(buf) > member)) {
      at = p;
      break;
    }
    p = m_lp.next(s);
  }
  long long as_int = 0;
  bool integral = double_to_int_exact(score, as_int);
  char text[k_double_text_max];
  std::string_view score_text;
  if (!integral) {
    score_text = std::string_view(text, format_double_reply(score, text));
  }
  if (at == Listpack::k_none) {
    m_lp.append(member);
    if (integral) {
      m_lp.append(static_cast<int64_t>(as_int));
    } else {
      m_lp.append(score_text);
    }
    return;
  }
  Listpack::Pos m = m_lp.insert_before(at, member);
  if (integral) {
    m_lp.insert_after(m, LpValue::of_int(as_int));
  } else {
    m_lp.insert_after(m, score_text);
  }
}

bool ZSetValue::lp_lex_touches(const ZLexRange& range) const {
  if (range.empty() || m_lp.empty()) {
    return false;
  }
  char buf[24];
  return range.gte_min(m_lp.get(m_lp.prev(m_lp.last())).view(buf)) &&
         range.lte_max(m_lp.get(m_lp.first()).view(buf));
}

void ZSetValue::sl_insert(double score, std::string_view member) {
  ZNode* n = m_large->list.insert(score, member);
  m_large->table.insert(n, m_large->table.hash(member));
}

void ZSetValue::sl_drop(ZNode* n) {
  ZNode** link = m_large->table.find_link(n->member(), m_large->table.hash(n->member()));
  m_large->table.unlink(link);
  m_large->list.free_node(n);
}

ZAddOutcome ZSetValue::add(double score, std::string_view member, uint32_t flags, double& new_score,
                           const ZSetLimits& limits) {
  const bool incr = (flags & k_zadd_incr) != 0;
  const bool nx = (flags & k_zadd_nx) != 0;
  const bool xx = (flags & k_zadd_xx) != 0;
  const bool gt = (flags & k_zadd_gt) != 0;
  const bool lt = (flags & k_zadd_lt) != 0;
  // The rules for an existing member, shared by both encodings; false when nothing changes.
  auto apply = [&](double current, ZAddOutcome& outcome) {
    if (nx) {
      outcome = ZAddOutcome::skipped;
      return false;
    }
    if (incr) {
      score += current;
      if (std::isnan(score)) {
        outcome = ZAddOutcome::nan;
        return false;
      }
    }
    if ((lt && score >= current) || (gt && score <= current)) {
      outcome = ZAddOutcome::skipped;
      return false;
    }
    new_score = score;
    if (score == current) {
      outcome = ZAddOutcome::unchanged;
      return false;
    }
    outcome = ZAddOutcome::updated;
    return true;
  };

  ZAddOutcome outcome = ZAddOutcome::added;
  if (!m_large) {
    Listpack::Pos p = lp_find(member);
    if (p != Listpack::k_none) {
      if (apply(lp_score(m_lp.get(m_lp.next(p))), outcome)) {
        m_lp.erase(p, 2);
        lp_insert(score, member);
      }
      return outcome;
    }
    if (xx) {
      return ZAddOutcome::skipped;
    }
    if (size() + 1 <= limits.max_listpack_entries && member.size() <= limits.max_listpack_value &&
        m_lp.byte_size() + member.size() <= k_listpack_safety_size) {
      lp_insert(score, member);
      new_score = score;
      return ZAddOutcome::added;
    }
    convert_to_skiplist();
  }
  ZNode* n = table_find(member);
  if (n != nullptr) {
    if (apply(n->score(), outcome)) {
      m_large->list.update_score(n, score);
    }
    return outcome;
  }
  if (xx) {
    return ZAddOutcome::skipped;
  }
  sl_insert(score, member);
  new_score = score;
  return ZAddOutcome::added;
}

bool ZSetValue::remove(std::string_view member) {
  if (m_large) {
    ZNode** link = m_large->table.find_link(member, m_large->table.hash(member));
    if (link == nullptr) {
      return false;
    }
    ZNode* n = m_large->table.unlink(link);
    m_large->list.unlink(n);
    m_large->list.free_node(n);
    return true;
  }
  Listpack::Pos p = lp_find(member);
  if (p == Listpack::k_none) {
    return false;
  }
  m_lp.erase(p, 2);
  return true;
}

void ZSetValue::maybe_convert(size_t size_hint, size_t len_hint, const ZSetLimits& limits) {
  if (!m_large &&
      (size_hint > limits.max_listpack_entries || len_hint > limits.max_listpack_value)) {
    convert_to_skiplist();
  }
}

void ZSetValue::convert_to_skiplist() {
  if (m_large) {
    return;
  }
  m_large = std::make_unique<Large>(m_seed);
  char buf[24];
  for (Listpack::Pos p = m_lp.first(); p != Listpack::k_none;) {
    Listpack::Pos s = m_lp.next(p);
    sl_insert(lp_score(m_lp.get(s)), m_lp.get(p).view(buf));
    p = m_lp.next(s);
  }
  m_lp = Listpack();
  m_lp.shrink_to_fit();
}

void ZSetValue::convert_to_listpack_if_fits(size_t max_len, size_t total_len,
                                            const ZSetLimits& limits) {
  if (!m_large || m_large->list.size() > limits.max_listpack_entries ||
      max_len > limits.max_listpack_value || total_len > k_listpack_safety_size) {
    return;
  }
  Listpack lp;
  for (ZNode* n = m_large->list.first(); n != nullptr; n = n->next()) {
    lp.append(n->member());
    long long as_int = 0;
    if (double_to_int_exact(n->score(), as_int)) {
      lp.append(static_cast<int64_t>(as_int));
    } else {
      char text[k_double_text_max];
      lp.append(std::string_view(text, format_double_reply(n->score(), text)));
    }
  }
  m_large.reset();
  lp.shrink_to_fit();
  m_lp = std::move(lp);
}

size_t ZSetValue::remove_rank_range(size_t start, size_t end) {
  if (m_large) {
    return m_large->list.erase_rank_range(start + 1, end + 1, [this](ZNode* n) { sl_drop(n); });
  }
  size_t n = end - start + 1;
  m_lp.erase_range(2 * static_cast<int64_t>(start), 2 * n);
  return n;
}

size_t ZSetValue::remove_score_range(const ZScoreRange& range) {
  if (m_large) {
    return m_large->list.erase_score_range(range, [this](ZNode* n) { sl_drop(n); });
  }
  if (range.empty()) {
    return 0;
  }
  Listpack::Pos p = m_lp.first();
  while (p != Listpack::k_none && !range.gte_min(lp_score(m_lp.get(m_lp.next(p))))) {
    p = m_lp.next(m_lp.next(p));
  }
  size_t removed = 0;
  while (p != Listpack::k_none && range.lte_max(lp_score(m_lp.get(m_lp.next(p))))) {
    p = m_lp.erase(p, 2);
    ++removed;
  }
  return removed;
}

size_t ZSetValue::remove_lex_range(const ZLexRange& range) {
  if (m_large) {
    return m_large->list.erase_lex_range(range, [this](ZNode* n) { sl_drop(n); });
  }
  if (!lp_lex_touches(range)) {
    return 0;
  }
  char buf[24];
  Listpack::Pos p = m_lp.first();
  while (p != Listpack::k_none && !range.gte_min(m_lp.get(p).view(buf))) {
    p = m_lp.next(m_lp.next(p));
  }
  size_t removed = 0;
  while (p != Listpack::k_none && range.lte_max(m_lp.get(p).view(buf))) {
    p = m_lp.erase(p, 2);
    ++removed;
  }
  return removed;
}

bool ZSetValue::pop(bool max, std::string& member, double& score) {
  if (empty()) {
    return false;
  }
  if (m_large) {
    ZNode* n = max ? m_large->list.last() : m_large->list.first();
    member.assign(n->member());
    score = n->score();
    m_large->list.unlink(n);
    sl_drop(n);
    return true;
  }
  Listpack::Pos p = max ? m_lp.prev(m_lp.last()) : m_lp.first();
  member = m_lp.get(p).to_string();
  score = lp_score(m_lp.get(m_lp.next(p)));
  m_lp.erase(p, 2);
  return true;
}

// --- Reads ------------------------------------------------------------------------------

size_t ZSetValue::count_in_range(const ZScoreRange& range) const {
  if (m_large) {
    ZNode* first = m_large->list.nth_in_range(range, 0);
    if (first == nullptr) {
      return 0;
    }
    ZNode* last = m_large->list.nth_in_range(range, -1);
    return m_large->list.rank(last->score(), last->member()) -
           m_large->list.rank(first->score(), first->member()) + 1;
  }
  size_t n = 0;
  for_each([&](std::string_view, double s) { n += range.gte_min(s) && range.lte_max(s); });
  return n;
}

size_t ZSetValue::count_in_lex_range(const ZLexRange& range) const {
  if (m_large) {
    ZNode* first = m_large->list.nth_in_lex_range(range, 0);
    if (first == nullptr) {
      return 0;
    }
    ZNode* last = m_large->list.nth_in_lex_range(range, -1);
    return m_large->list.rank(last->score(), last->member()) -
           m_large->list.rank(first->score(), first->member()) + 1;
  }
  // Valkey counts from the first member in range while members stay below the max.
  size_t n = 0;
  bool started = false;
  bool done = !lp_lex_touches(range);
  for_each([&](std::string_view m, double) {
    if (done) {
      return;
    }
    if (!started) {
      if (!range.gte_min(m)) {
        return;
      }
      started = true;
    }
    if (!range.lte_max(m)) {
      done = true;
      return;
    }
    ++n;
  });
  return n;
}

void ZSetValue::random_member(std::mt19937_64& rng, std::string& member, double& score) const {
  if (m_large) {
    ZNode* n = m_large->table.random(rng);
    member.assign(n->member());
    score = n->score();
    return;
  }
  auto i = static_cast<int64_t>(rng() % size());
  Listpack::Pos p = m_lp.seek(2 * i);
  member = m_lp.get(p).to_string();
  score = lp_score(m_lp.get(m_lp.next(p)));
}

void ZSetValue::member_lengths(size_t& max_len, size_t& total_len) const {
  max_len = 0;
  total_len = 0;
  for_each([&](std::string_view m, double) {
    max_len = std::max(max_len, m.size());
    total_len += m.size();
  });
}

Digest digest_zset(const ZSetValue& zset, bool has_expire, const Digest& seed) {
  ZSetDigestBuilder b(seed);
  zset.for_each([&](std::string_view member, double score) { b.add(member, score); });
  return b.finish(has_expire);
}

}  // namespace keyshift::engine
