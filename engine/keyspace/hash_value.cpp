#include "engine/keyspace/hash_value.hpp"

#include <string>
#include <utility>

namespace keyshift::engine {
namespace {

// Valkey refuses to grow a listpack past 1 GiB (lpSafeToAdd); such writes go to hashtable.
constexpr size_t k_listpack_safety_size = size_t{1} << 30;

size_t varint_bytes(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

char* write_varint(char* p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = static_cast<char>((v & 0x7F) | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<char>(v);
  return p;
}

/// The TTL entry a listpackex triplet stores for `expire_ms` (0 for none).
int64_t lp_ttl_entry(int64_t expire_ms) {
  return expire_ms == k_hash_no_expire ? 0 : expire_ms;
}

}  // namespace

// --- HashNode ---------------------------------------------------------------------------

HashNode* HashNode::make(MemoryCounter& mem, std::string_view field, std::string_view value,
                         bool with_expire, int64_t expire_ms) {
  size_t head = with_expire ? k_lengths_expire : k_lengths_plain;
  size_t size =
      head + varint_bytes(field.size()) + varint_bytes(value.size()) + field.size() + value.size();
  char* p = static_cast<char*>(mem.allocate(size));
  std::memset(p, 0, head);
  p[k_flags] = with_expire ? k_has_expire : 0;
  if (with_expire) {
    std::memcpy(p + k_expire, &expire_ms, 8);
  }
  char* q = write_varint(p + head, field.size());
  q = write_varint(q, value.size());
  if (!field.empty()) {
    std::memcpy(q, field.data(), field.size());
  }
  if (!value.empty()) {
    std::memcpy(q + field.size(), value.data(), value.size());
  }
  return reinterpret_cast<HashNode*>(p);
}

void HashNode::overwrite_value(std::string_view v) {
  std::string_view current = value();
  std::memcpy(const_cast<char*>(current.data()), v.data(), v.size());
}

// --- HashValue --------------------------------------------------------------------------

HashValue::HashValue(uint64_t seed) : m_seed(static_cast<uint32_t>(seed)) {}

HashValue::HashValue(ObjEncoding encoding, uint64_t seed, uint8_t* block)
    : m_seed(static_cast<uint32_t>(seed)),
      m_encoding(encoding),
      m_lp(Listpack::from_block(block)) {}

HashValue* HashValue::detach() {
  auto* h = new HashValue(m_seed);
  h->m_encoding = m_encoding;
  h->m_lp = std::move(m_lp);
  h->m_large = std::move(m_large);
  m_encoding = ObjEncoding::listpack;
  return h;
}

HashValue::~HashValue() {
  if (m_large) {
    m_large->table.clear([this](HashNode* n) { HashNode::destroy(m_large->mem, n); });
    m_large.reset();
  }
}

size_t HashValue::bytes() const {
  size_t n = sizeof(*this) + m_lp.bytes();
  if (m_large) {
    n += sizeof(Large) + m_large->mem.used() + m_large->heap.capacity() * sizeof(HashNode*);
  }
  return n;
}

HeapObject* HashValue::clone() const {
  auto* copy = new HashValue(m_seed);
  copy->m_encoding = m_encoding;
  if (m_encoding == ObjEncoding::hashtable) {
    copy->m_large = std::make_unique<Large>(m_seed);
    for_each([&](const HashField& f) { copy->table_insert(f.field, f.value, f.expire_ms); });
  } else {
    copy->m_lp = m_lp;
  }
  return copy;
}

size_t HashValue::size() const {
  if (m_encoding == ObjEncoding::hashtable) {
    return m_large->table.size();
  }
  return m_lp.size() / stride();
}

bool HashValue::has_field_expires() const {
  return min_expire() != k_hash_no_expire;
}

int64_t HashValue::min_expire() const {
  if (m_encoding == ObjEncoding::hashtable) {
    return m_large->heap.empty() ? k_hash_no_expire : m_large->heap.front()->expire_ms();
  }
  if (m_encoding == ObjEncoding::listpack_ex && !m_lp.empty()) {
    return ttl_of(m_lp.get(m_lp.next(m_lp.next(m_lp.first()))));
  }
  return k_hash_no_expire;
}

Listpack::Pos HashValue::lp_find(std::string_view field) const {
  Listpack::Pos p = m_lp.first();
  if (p == Listpack::k_none) {
    return p;
  }
  return m_lp.find(field, p, stride() - 1);
}

bool HashValue::find(std::string_view field, HashField& out, HashBuf& buf) const {
  if (m_encoding == ObjEncoding::hashtable) {
    HashNode* n = m_large->table.find(field);
    if (n == nullptr) {
      return false;
    }
    out = HashField{n->field(), n->value(), n->has_expire() ? n->expire_ms() : k_hash_no_expire};
    return true;
  }
  Listpack::Pos p = lp_find(field);
  if (p == Listpack::k_none) {
    return false;
  }
  out.field = m_lp.get(p).view(buf.field);
  p = m_lp.next(p);
  out.value = m_lp.get(p).view(buf.value);
  out.expire_ms =
      m_encoding == ObjEncoding::listpack_ex ? ttl_of(m_lp.get(m_lp.next(p))) : k_hash_no_expire;
  return true;
}

bool HashValue::contains(std::string_view field) const {
  if (m_encoding == ObjEncoding::hashtable) {
    return m_large->table.find(field) != nullptr;
  }
  return lp_find(field) != Listpack::k_none;
}

bool HashValue::set(std::string_view field, std::string_view value, const HashLimits& limits,
                    bool keep_ttl) {
  if (m_encoding != ObjEncoding::hashtable &&
      (field.size() > limits.max_listpack_value || value.size() > limits.max_listpack_value)) {
    convert_to_hashtable();
  }
  if (m_encoding == ObjEncoding::hashtable) {
    HashNode** link = m_large->table.find_link(field, m_large->table.hash(field));
    if (link == nullptr) {
      table_insert(field, value, k_hash_no_expire);
      return true;
    }
    HashNode* n = *link;
    bool drop_ttl = n->has_expire() && !keep_ttl;
    if (!drop_ttl && n->value().size() == value.size()) {
      n->overwrite_value(value);
    } else {
      table_rewrite(link, value, drop_ttl || !n->has_expire() ? k_hash_no_expire : n->expire_ms());
    }
    return false;
  }
  bool created = false;
  Listpack::Pos p = lp_find(field);
  if (p == Listpack::k_none) {
    m_lp.append(field);
    m_lp.append(value);
    if (m_encoding == ObjEncoding::listpack_ex) {
      m_lp.append(int64_t{0});
    }
    created = true;
  } else if (m_encoding == ObjEncoding::listpack) {
    m_lp.replace(m_lp.next(p), value);
  } else {
    Listpack::Pos v = m_lp.replace(m_lp.next(p), value);
    if (!keep_ttl && ttl_of(m_lp.get(m_lp.next(v))) != k_hash_no_expire) {
      // A field that loses its TTL moves behind the ones that keep one, as Redis 7.4.
      std::string f(field);
      std::string val(value);
      m_lp.erase(m_lp.prev(v), 3);
      lp_insert_sorted(f, val, k_hash_no_expire);
    }
  }
  if (size() > limits.max_listpack_entries) {
    convert_to_hashtable();
  }
  return created;
}

void HashValue::convert_for_write(std::span<const std::string_view> args,
                                  const HashLimits& limits) {
  if (m_encoding == ObjEncoding::hashtable) {
    return;
  }
  if (args.size() / 2 > limits.max_listpack_entries) {
    convert_to_hashtable();
    return;
  }
  size_t sum = 0;
  for (std::string_view a : args) {
    if (a.size() > limits.max_listpack_value) {
      convert_to_hashtable();
      return;
    }
    sum += a.size();
  }
  if (m_lp.byte_size() + sum > k_listpack_safety_size) {
    convert_to_hashtable();
  }
}

bool HashValue::remove(std::string_view field) {
  if (m_encoding == ObjEncoding::hashtable) {
    HashNode** link = m_large->table.find_link(field, m_large->table.hash(field));
    if (link == nullptr) {
      return false;
    }
    table_erase(link);
    return true;
  }
  Listpack::Pos p = lp_find(field);
  if (p == Listpack::k_none) {
    return false;
  }
  m_lp.erase(p, stride());
  return true;
}

void HashValue::enable_field_expiry() {
  if (m_encoding != ObjEncoding::listpack) {
    return;
  }
  Listpack lp;
  for (Listpack::Pos p = m_lp.first(); p != Listpack::k_none; p = m_lp.next(p)) {
    lp.append(m_lp.get(p));
    p = m_lp.next(p);
    lp.append(m_lp.get(p));
    lp.append(int64_t{0});
  }
  m_lp = std::move(lp);
  m_encoding = ObjEncoding::listpack_ex;
}

int HashValue::set_expire(std::string_view field, int64_t when_ms, HashExpireCond cond,
                          int64_t now_ms) {
  enable_field_expiry();
  HashNode** link = nullptr;
  Listpack::Pos p = Listpack::k_none;
  int64_t prev = k_hash_no_expire;
  if (m_encoding == ObjEncoding::hashtable) {
    link = m_large->table.find_link(field, m_large->table.hash(field));
    if (link == nullptr) {
      return -2;
    }
    prev = (*link)->has_expire() ? (*link)->expire_ms() : k_hash_no_expire;
  } else {
    p = lp_find(field);
    if (p == Listpack::k_none) {
      return -2;
    }
    prev = ttl_of(m_lp.get(m_lp.next(m_lp.next(p))));
  }
  // A field without a TTL counts as never expiring: GT can never beat it, LT always does.
  if (prev == k_hash_no_expire) {
    if (cond == HashExpireCond::xx || cond == HashExpireCond::gt) {
      return 0;
    }
  } else if (cond == HashExpireCond::nx || (cond == HashExpireCond::gt && prev >= when_ms) ||
             (cond == HashExpireCond::lt && prev <= when_ms)) {
    return 0;
  }
  if (when_ms <= now_ms) {
    remove(field);
    return 2;
  }
  if (m_encoding == ObjEncoding::hashtable) {
    HashNode* n = *link;
    if (n->has_expire()) {
      n->set_expire_ms(when_ms);
      heap_fix(n->slot());
    } else {
      table_rewrite(link, n->value(), when_ms);
    }
    return 1;
  }
  std::string f = m_lp.get(p).to_string();
  std::string value = m_lp.get(m_lp.next(p)).to_string();
  m_lp.erase(p, 3);
  lp_insert_sorted(f, value, when_ms);
  return 1;
}

int HashValue::persist(std::string_view field) {
  if (m_encoding == ObjEncoding::hashtable) {
    HashNode** link = m_large->table.find_link(field, m_large->table.hash(field));
    if (link == nullptr) {
      return -2;
    }
    if (!(*link)->has_expire()) {
      return -1;
    }
    table_rewrite(link, (*link)->value(), k_hash_no_expire);
    return 1;
  }
  Listpack::Pos p = lp_find(field);
  if (p == Listpack::k_none) {
    return -2;
  }
  if (m_encoding == ObjEncoding::listpack ||
      ttl_of(m_lp.get(m_lp.next(m_lp.next(p)))) == k_hash_no_expire) {
    return -1;
  }
  std::string f = m_lp.get(p).to_string();
  std::string value = m_lp.get(m_lp.next(p)).to_string();
  m_lp.erase(p, 3);
  lp_insert_sorted(f, value, k_hash_no_expire);
  return 1;
}

int64_t HashValue::expire_of(std::string_view field) const {
  HashField f;
  HashBuf buf;
  if (!find(field, f, buf)) {
    return -2;
  }
  return f.expire_ms == k_hash_no_expire ? -1 : f.expire_ms;
}

HashField HashValue::random(std::mt19937_64& rng, HashBuf& buf) {
  if (m_encoding == ObjEncoding::hashtable) {
    HashNode* n = m_large->table.random(rng);
    return HashField{n->field(), n->value(), n->has_expire() ? n->expire_ms() : k_hash_no_expire};
  }
  size_t index = static_cast<size_t>(rng() % size());
  Listpack::Pos p = m_lp.seek(static_cast<int64_t>(index * stride()));
  HashField f;
  f.field = m_lp.get(p).view(buf.field);
  p = m_lp.next(p);
  f.value = m_lp.get(p).view(buf.value);
  if (m_encoding == ObjEncoding::listpack_ex) {
    f.expire_ms = ttl_of(m_lp.get(m_lp.next(p)));
  }
  return f;
}

void HashValue::lp_insert_sorted(std::string_view field, std::string_view value,
                                 int64_t expire_ms) {
  // Fields without a TTL go last; the others before the first triplet that expires later
  // (or never), so the earliest expiry is always the first triplet.
  Listpack::Pos p = Listpack::k_none;
  if (expire_ms != k_hash_no_expire) {
    for (p = m_lp.first(); p != Listpack::k_none;) {
      Listpack::Pos t = m_lp.next(m_lp.next(p));
      int64_t ttl = ttl_of(m_lp.get(t));
      if (ttl == k_hash_no_expire || ttl > expire_ms) {
        break;
      }
      p = m_lp.next(t);
    }
  }
  if (p == Listpack::k_none) {
    m_lp.append(field);
    m_lp.append(value);
    m_lp.append(lp_ttl_entry(expire_ms));
    return;
  }
  Listpack::Pos f = m_lp.insert_before(p, field);
  Listpack::Pos v = m_lp.insert_after(f, value);
  m_lp.insert_after(v, LpValue::of_int(lp_ttl_entry(expire_ms)));
}

void HashValue::convert_to_hashtable() {
  if (m_encoding == ObjEncoding::hashtable) {
    return;
  }
  m_large = std::make_unique<Large>(m_seed);
  // Iterate with the old encoding still in place, then switch.
  for_each([this](const HashField& f) { table_insert(f.field, f.value, f.expire_ms); });
  m_lp = Listpack();
  m_encoding = ObjEncoding::hashtable;
}

HashNode* HashValue::table_insert(std::string_view field, std::string_view value,
                                  int64_t expire_ms) {
  bool with_expire = expire_ms != k_hash_no_expire;
  HashNode* n = HashNode::make(m_large->mem, field, value, with_expire, expire_ms);
  m_large->table.insert(n, m_large->table.hash(field));
  if (with_expire) {
    heap_push(n);
  }
  return n;
}

void HashValue::table_erase(HashNode** link) {
  HashNode* n = m_large->table.unlink(link);
  if (n->has_expire()) {
    heap_remove(n->slot());
  }
  HashNode::destroy(m_large->mem, n);
}

void HashValue::table_rewrite(HashNode** link, std::string_view value, int64_t expire_ms) {
  HashNode* old = *link;
  bool with_expire = expire_ms != k_hash_no_expire;
  HashNode* n = HashNode::make(m_large->mem, old->field(), value, with_expire, expire_ms);
  m_large->table.replace(link, n);
  if (old->has_expire() && with_expire) {
    uint32_t slot = old->slot();
    heap_place(slot, n);
    heap_fix(slot);
  } else if (old->has_expire()) {
    heap_remove(old->slot());
  } else if (with_expire) {
    heap_push(n);
  }
  HashNode::destroy(m_large->mem, old);
}

void HashValue::heap_push(HashNode* n) {
  m_large->heap.push_back(n);
  uint32_t slot = static_cast<uint32_t>(m_large->heap.size() - 1);
  n->set_slot(slot);
  heap_fix(slot);
}

void HashValue::heap_remove(uint32_t slot) {
  uint32_t last = static_cast<uint32_t>(m_large->heap.size() - 1);
  if (slot != last) {
    heap_place(slot, m_large->heap[last]);
  }
  m_large->heap.pop_back();
  if (slot < m_large->heap.size()) {
    heap_fix(slot);
  }
}

void HashValue::heap_fix(uint32_t slot) {
  // Up while smaller than the parent, else down while larger than a child.
  uint32_t i = slot;
  while (i > 0) {
    uint32_t parent = (i - 1) / 2;
    if (!heap_less(i, parent)) {
      break;
    }
    HashNode* a = m_large->heap[i];
    heap_place(i, m_large->heap[parent]);
    heap_place(parent, a);
    i = parent;
  }
  if (i != slot) {
    return;
  }
  auto n = static_cast<uint32_t>(m_large->heap.size());
  while (true) {
    uint32_t smallest = i;
    uint32_t left = 2 * i + 1;
    uint32_t right = left + 1;
    if (left < n && heap_less(left, smallest)) {
      smallest = left;
    }
    if (right < n && heap_less(right, smallest)) {
      smallest = right;
    }
    if (smallest == i) {
      return;
    }
    HashNode* a = m_large->heap[i];
    heap_place(i, m_large->heap[smallest]);
    heap_place(smallest, a);
    i = smallest;
  }
}

Digest digest_hash(const HashValue& hash, bool has_expire, const Digest& seed) {
  HashDigestBuilder builder(seed);
  hash.for_each(
      [&](const HashField& f) { builder.add(f.field, f.value, f.expire_ms != k_hash_no_expire); });
  return builder.finish(has_expire);
}

}  // namespace keyshift::engine
