#include "engine/keyspace/set_value.hpp"

#include "engine/util/strconv.hpp"

#include <algorithm>
#include <new>
#include <vector>

namespace keyshift::engine {
namespace {

// A listpack is never allowed to grow past this (Valkey's LISTPACK_MAX_SAFETY_SIZE).
constexpr size_t k_listpack_max_safe_bytes = size_t{1} << 30;

/// Characters of the decimal text of `v` (Valkey's sdigits10).
size_t decimal_length(int64_t v) {
  char buf[24];
  return format_i64(v, buf);
}

/// Most members an intset may hold under `limits` (Valkey caps it at 2^30).
uint64_t intset_max_entries(const SetLimits& limits) {
  return std::min<uint64_t>(limits.max_intset_entries, Intset::k_max_entries);
}

}  // namespace

SetLimits SetLimits::from(const KeyspaceSettings& config) {
  return {config.set_max_intset_entries, config.set_max_listpack_entries,
          config.set_max_listpack_value};
}

SetNode* SetNode::make(MemoryCounter& mem, std::string_view member) {
  auto* p = static_cast<char*>(mem.allocate(k_data_offset + member.size()));
  std::memset(p, 0, sizeof(void*));
  auto len = static_cast<uint32_t>(member.size());
  std::memcpy(p + k_len_offset, &len, 4);
  if (!member.empty()) {
    std::memcpy(p + k_data_offset, member.data(), member.size());
  }
  return reinterpret_cast<SetNode*>(p);
}

SetValue::SetValue(ObjEncoding encoding, uint64_t seed)
    : m_encoding(encoding), m_seed(static_cast<uint32_t>(seed)) {
  if (encoding == ObjEncoding::intset) {
    new (&m_intset) Intset();
  } else {
    new (&m_lp) Listpack();
  }
  if (encoding == ObjEncoding::hashtable) {
    m_large = std::make_unique<Large>(m_seed);
  }
}

SetValue::SetValue(ObjEncoding encoding, uint64_t seed, uint8_t* block)
    : m_encoding(encoding), m_seed(static_cast<uint32_t>(seed)) {
  if (encoding == ObjEncoding::intset) {
    new (&m_intset) Intset(Intset::from_block(block));
  } else {
    new (&m_lp) Listpack(Listpack::from_block(block));
  }
}

SetValue* SetValue::detach() {
  auto* s = new SetValue(m_encoding, m_seed);
  // Only the hashtable encoding is detached: its listpack holder is empty.
  s->release_table();
  s->m_large = std::move(m_large);
  return s;
}

SetValue::~SetValue() {
  release_table();
  if (m_encoding == ObjEncoding::intset) {
    m_intset.~Intset();
  } else {
    m_lp.~Listpack();
  }
}

void SetValue::release_table() {
  if (m_large) {
    m_large->table.clear([&](SetNode* n) { SetNode::destroy(m_large->mem, n); });
    m_large.reset();
  }
}

void SetValue::switch_small(ObjEncoding to) {
  if (m_encoding == ObjEncoding::intset) {
    m_intset.~Intset();
  } else {
    m_lp.~Listpack();
  }
  if (to == ObjEncoding::intset) {
    new (&m_intset) Intset();
  } else {
    new (&m_lp) Listpack();
  }
}

SetValue* SetValue::create(std::string_view first, size_t size_hint, const SetLimits& limits,
                           uint64_t seed) {
  int64_t v = 0;
  if (parse_i64(first, v) && size_hint <= limits.max_intset_entries) {
    return new SetValue(ObjEncoding::intset, seed);
  }
  if (size_hint <= limits.max_listpack_entries) {
    return new SetValue(ObjEncoding::listpack, seed);
  }
  return new SetValue(ObjEncoding::hashtable, seed);
}

SetValue* SetValue::adopt(Intset members, uint64_t seed) {
  auto* s = new SetValue(ObjEncoding::intset, seed);
  s->m_intset = std::move(members);
  return s;
}

SetValue* SetValue::adopt(Listpack members, uint64_t seed) {
  auto* s = new SetValue(ObjEncoding::listpack, seed);
  s->m_lp = std::move(members);
  return s;
}

size_t SetValue::bytes() const {
  size_t n = sizeof(*this) + (m_encoding == ObjEncoding::intset ? m_intset.bytes() : m_lp.bytes());
  if (m_large) {
    n += sizeof(Large) + m_large->mem.used();
  }
  return n;
}

HeapObject* SetValue::clone() const {
  auto* c = new SetValue(m_encoding, m_seed);
  switch (m_encoding) {
    case ObjEncoding::intset:
      c->m_intset = m_intset;
      c->m_intset.shrink_to_fit();
      break;
    case ObjEncoding::listpack:
      c->m_lp = m_lp;
      c->m_lp.shrink_to_fit();
      break;
    default:
      m_large->table.for_each([&](SetNode* n) { c->table_insert(n->member()); });
      break;
  }
  return c;
}

size_t SetValue::size() const {
  switch (m_encoding) {
    case ObjEncoding::intset:
      return m_intset.size();
    case ObjEncoding::listpack:
      return m_lp.size();
    default:
      return m_large->table.size();
  }
}

bool SetValue::table_insert(std::string_view member) {
  uint64_t h = m_large->table.hash(member);
  if (m_large->table.find_link(member, h) != nullptr) {
    return false;
  }
  m_large->table.insert(SetNode::make(m_large->mem, member), h);
  return true;
}

bool SetValue::table_contains(std::string_view member) const {
  return m_large->table.find(member) != nullptr;
}

bool SetValue::table_erase(std::string_view member) {
  SetNode** link = m_large->table.find_link(member, m_large->table.hash(member));
  if (link == nullptr) {
    return false;
  }
  SetNode::destroy(m_large->mem, m_large->table.unlink(link));
  return true;
}

void SetValue::maybe_convert_intset(const SetLimits& limits) {
  if (m_intset.size() > intset_max_entries(limits)) {
    convert(ObjEncoding::hashtable);
  }
}

bool SetValue::add(const SetMember& member, const SetLimits& limits) {
  if (!member.is_int()) {
    return add_string(member.str(), limits);
  }
  if (m_encoding == ObjEncoding::intset) {
    if (!m_intset.insert(member.integer())) {
      return false;
    }
    maybe_convert_intset(limits);
    return true;
  }
  char buf[24];
  return add_string(member.view(buf), limits);
}

bool SetValue::add(std::string_view member, const SetLimits& limits) {
  return add_string(member, limits);
}

bool SetValue::add_string(std::string_view member, const SetLimits& limits) {
  switch (m_encoding) {
    case ObjEncoding::hashtable:
      return table_insert(member);
    case ObjEncoding::listpack: {
      if (!m_lp.empty() && m_lp.find(member, m_lp.first()) != Listpack::k_none) {
        return false;
      }
      if (m_lp.size() < limits.max_listpack_entries && member.size() <= limits.max_listpack_value &&
          m_lp.byte_size() + member.size() <= k_listpack_max_safe_bytes) {
        m_lp.append(member);
        return true;
      }
      // The listpack is full: move to a hashtable and add there.
      convert(ObjEncoding::hashtable);
      table_insert(member);
      return true;
    }
    default:
      break;
  }
  int64_t v = 0;
  if (parse_i64(member, v)) {
    if (!m_intset.insert(v)) {
      return false;
    }
    maybe_convert_intset(limits);
    return true;
  }
  // A non-integer joins an intset: a listpack when every member (sized by the longest
  // integer text) and the newcomer fit its limits, else a hashtable.
  size_t n = m_intset.size();
  size_t longest = 0;
  size_t estimate = 0;
  if (n != 0) {
    longest = std::max(decimal_length(m_intset.min()), decimal_length(m_intset.max()));
    estimate = std::max(Listpack::encoded_entry_size(SetMember::of_int(m_intset.min())),
                        Listpack::encoded_entry_size(SetMember::of_int(m_intset.max()))) *
               n;
  }
  if (n < limits.max_listpack_entries && member.size() <= limits.max_listpack_value &&
      longest <= limits.max_listpack_value &&
      Listpack::k_header_size + 1 + estimate + member.size() <= k_listpack_max_safe_bytes) {
    convert(ObjEncoding::listpack);
    m_lp.append(member);
    m_lp.shrink_to_fit();
    return true;
  }
  convert(ObjEncoding::hashtable);
  table_insert(member);
  return true;
}

bool SetValue::remove(const SetMember& member) {
  if (!member.is_int()) {
    return remove(member.str());
  }
  if (m_encoding == ObjEncoding::intset) {
    return m_intset.erase(member.integer());
  }
  char buf[24];
  return remove(member.view(buf));
}

bool SetValue::remove(std::string_view member) {
  switch (m_encoding) {
    case ObjEncoding::hashtable:
      return table_erase(member);
    case ObjEncoding::listpack: {
      if (m_lp.empty()) {
        return false;
      }
      Listpack::Pos p = m_lp.find(member, m_lp.first());
      if (p == Listpack::k_none) {
        return false;
      }
      m_lp.erase(p);
      return true;
    }
    default: {
      int64_t v = 0;
      return parse_i64(member, v) && m_intset.erase(v);
    }
  }
}

bool SetValue::contains(const SetMember& member) const {
  if (!member.is_int()) {
    return contains(member.str());
  }
  if (m_encoding == ObjEncoding::intset) {
    return m_intset.contains(member.integer());
  }
  char buf[24];
  return contains(member.view(buf));
}

bool SetValue::contains(std::string_view member) const {
  switch (m_encoding) {
    case ObjEncoding::hashtable:
      return table_contains(member);
    case ObjEncoding::listpack:
      return !m_lp.empty() && m_lp.find(member, m_lp.first()) != Listpack::k_none;
    default: {
      int64_t v = 0;
      return parse_i64(member, v) && m_intset.contains(v);
    }
  }
}

void SetValue::maybe_convert(size_t size_hint, const SetLimits& limits) {
  if ((m_encoding == ObjEncoding::listpack && size_hint > limits.max_listpack_entries) ||
      (m_encoding == ObjEncoding::intset && size_hint > limits.max_intset_entries)) {
    convert(ObjEncoding::hashtable);
  }
}

void SetValue::maybe_convert_to_intset(const SetLimits& limits) {
  if (m_encoding == ObjEncoding::intset || size() > intset_max_entries(limits)) {
    return;
  }
  Intset members;
  for_each([&](const SetMember& m) {
    int64_t v = m.is_int() ? m.integer() : 0;
    if (!m.is_int()) {
      parse_i64(m.str(), v);
    }
    members.insert(v);
  });
  release_table();
  switch_small(ObjEncoding::intset);
  m_intset = std::move(members);
  m_encoding = ObjEncoding::intset;
}

void SetValue::convert(ObjEncoding to) {
  if (to == m_encoding) {
    return;
  }
  if (to == ObjEncoding::intset) {
    maybe_convert_to_intset(SetLimits{UINT64_MAX, 0, 0});
    return;
  }
  if (to == ObjEncoding::hashtable) {
    m_large = std::make_unique<Large>(m_seed);
    char buf[24];
    for_each([&](const SetMember& m) { table_insert(m.view(buf)); });
    switch_small(ObjEncoding::hashtable);
    m_encoding = ObjEncoding::hashtable;
    return;
  }
  Listpack lp;
  for_each([&](const SetMember& m) { lp.append(m); });
  release_table();
  switch_small(ObjEncoding::listpack);
  m_lp = std::move(lp);
  m_encoding = ObjEncoding::listpack;
}

void SetValue::shrink_to_fit() {
  if (m_encoding == ObjEncoding::intset) {
    m_intset.shrink_to_fit();
  } else {
    m_lp.shrink_to_fit();
  }
}

SetMember SetValue::listpack_at(size_t index) const {
  return m_lp.get(m_lp.seek(static_cast<int64_t>(index)));
}

SetMember SetValue::random(std::mt19937_64& rng) const {
  switch (m_encoding) {
    case ObjEncoding::intset:
      return SetMember::of_int(m_intset.at(static_cast<uint32_t>(rng() % m_intset.size())));
    case ObjEncoding::listpack:
      return listpack_at(rng() % m_lp.size());
    default:
      return SetMember::of_str(fair_random_node(rng)->member());
  }
}

SetNode* SetValue::fair_random_node(std::mt19937_64& rng) const {
  // Picking a random bucket and then a random node of its chain favours nodes in short
  // chains. Like Valkey's dictGetFairRandomKey, gather about k_fair_sample nodes from the
  // buckets after a random one and pick among them: exactly uniform for small sets, and
  // close to it for large ones.
  std::vector<SetNode*> sample;
  sample.reserve(k_fair_sample * 2);
  uint64_t cursor = rng();
  for (size_t steps = 0; sample.size() < k_fair_sample && steps < k_fair_sample * 10; ++steps) {
    cursor = m_large->table.scan(cursor, [&](SetNode* n) { sample.push_back(n); });
  }
  if (sample.empty()) {
    return m_large->table.random(rng);
  }
  return sample[rng() % sample.size()];
}

std::string SetValue::pop_random(std::mt19937_64& rng) {
  if (m_encoding == ObjEncoding::listpack) {
    Listpack::Pos p = m_lp.seek(static_cast<int64_t>(rng() % m_lp.size()));
    std::string out = m_lp.get(p).to_string();
    m_lp.erase(p);
    return out;
  }
  std::string out = random(rng).to_string();
  remove(std::string_view(out));
  return out;
}

Digest digest_set(const SetValue& set, bool has_expire, const Digest& seed) {
  SetDigestBuilder b(seed);
  set.for_each([&](const SetMember& m) {
    if (m.is_int()) {
      b.add(m.integer());
    } else {
      b.add(m.str());
    }
  });
  return b.finish(has_expire);
}

}  // namespace keyshift::engine
