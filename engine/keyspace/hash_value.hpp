#pragma once

// The hash type. Three encodings, named as OBJECT ENCODING reports them:
//
//   listpack    field, value, field, value, ...   (small hashes without field TTLs)
//   listpackex  field, value, ttl triplets         (small hashes once a field TTL was asked
//               for, as Redis 7.4; ttl 0 = none; triplets with a TTL come first, earliest
//               first, then the ones without, in insertion order)
//   hashtable   a ChainedTable of nodes holding field and value in one allocation, plus an
//               expire time for fields that have one, indexed by a min-heap
//
// A hash moves listpack -> listpackex when a field TTL is first requested, and from either
// listpack form to hashtable when it outgrows hash-max-listpack-entries/-value; it never
// moves back (as Valkey and Redis).
//
// Field expiry: an expire time is absolute unix ms; a field whose time is <= now is dead.
// The hash never filters by itself: callers remove due fields first (`expire_due`), so every
// other member sees live fields only.

#include "engine/ds/listpack.hpp"
#include "engine/keyspace/chained_table.hpp"
#include "engine/keyspace/digest.hpp"
#include "engine/keyspace/entry.hpp"
#include "engine/keyspace/object.hpp"
#include "engine/keyspace/value_ref.hpp"
#include "engine/util/hash.hpp"
#include "engine/util/memory.hpp"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <string_view>
#include <vector>

namespace keyshift::engine {

/// When a hash leaves the listpack encodings (hash-max-listpack-entries / -value).
struct HashLimits {
  uint64_t max_listpack_entries = 512;  // Valkey 8's default
  uint64_t max_listpack_value = 64;
};

/// "No TTL" for a field's expire time.
inline constexpr int64_t k_hash_no_expire = INT64_MAX;
/// Largest absolute field expire time in ms: Redis 7.4's HFE_MAX_ABS_TIME_MSEC, i.e. its
/// 48-bit expire field (2^48 - 1) with two bits reserved, 2^46 - 1 (year 4199).
inline constexpr int64_t k_hash_max_expire_ms = (int64_t{1} << 46) - 1;

/// One field as read from a hash; the views are valid until the hash changes (and, for
/// integer listpack entries, while the HashBuf used to read them lives).
struct HashField {
  std::string_view field;
  std::string_view value;
  int64_t expire_ms = k_hash_no_expire;
};

/// Room to print integer listpack entries into while reading them.
struct HashBuf {
  char field[24];
  char value[24];
};

/// HEXPIRE's NX/XX/GT/LT.
enum class HashExpireCond : uint8_t { none, nx, xx, gt, lt };

/// A hashtable-encoded field in one allocation:
///   next (8) | flags (1) | [expire ms (8) | heap slot (4)] | varint field length |
///   varint value length | field bytes | value bytes
/// A HashNode is never constructed: it is a view over bytes made by the hash.
class HashNode {
 public:
  HashNode*& next() { return *reinterpret_cast<HashNode**>(this); }
  bool has_expire() const { return (bytes()[k_flags] & k_has_expire) != 0; }
  int64_t expire_ms() const {
    int64_t v;
    std::memcpy(&v, bytes() + k_expire, 8);
    return v;
  }
  void set_expire_ms(int64_t v) { std::memcpy(bytes() + k_expire, &v, 8); }
  uint32_t slot() const {
    uint32_t v;
    std::memcpy(&v, bytes() + k_slot, 4);
    return v;
  }
  void set_slot(uint32_t v) { std::memcpy(bytes() + k_slot, &v, 4); }
  std::string_view field() const {
    const char* p = lengths();
    uint64_t flen = read_varint(p);
    uint64_t vlen = read_varint(p);
    (void)vlen;
    return {p, static_cast<size_t>(flen)};
  }
  std::string_view value() const {
    const char* p = lengths();
    uint64_t flen = read_varint(p);
    uint64_t vlen = read_varint(p);
    return {p + flen, static_cast<size_t>(vlen)};
  }
  /// Overwrites the value with bytes of the same length.
  void overwrite_value(std::string_view v);

  /// Allocates a node from `mem`.
  static HashNode* make(MemoryCounter& mem, std::string_view field, std::string_view value,
                        bool with_expire, int64_t expire_ms);
  /// Frees a node made by `make`.
  static void destroy(MemoryCounter& mem, HashNode* n) { mem.deallocate(n); }

 private:
  static constexpr size_t k_flags = 8;
  static constexpr size_t k_expire = 9;
  static constexpr size_t k_slot = 17;
  static constexpr size_t k_lengths_plain = 9;
  static constexpr size_t k_lengths_expire = 21;
  static constexpr char k_has_expire = 1;

  const char* bytes() const { return reinterpret_cast<const char*>(this); }
  char* bytes() { return reinterpret_cast<char*>(this); }
  const char* lengths() const {
    return bytes() + (has_expire() ? k_lengths_expire : k_lengths_plain);
  }
  static uint64_t read_varint(const char*& p) {
    uint64_t v = 0;
    int shift = 0;
    while (true) {
      auto b = static_cast<uint8_t>(*p++);
      v |= static_cast<uint64_t>(b & 0x7F) << shift;
      if ((b & 0x80) == 0) {
        return v;
      }
      shift += 7;
    }
  }
};

/// Chain and key access for the hashtable encoding's ChainedTable.
struct HashNodeTraits {
  static HashNode*& next(HashNode* n) { return n->next(); }
  static std::string_view key(const HashNode* n) { return n->field(); }
  static uint64_t hash(std::string_view field, uint64_t seed) { return hash_bytes(field, seed); }
};

/// A hash value. Every member keeps bytes() exact, so callers add the difference of bytes()
/// around a change to the engine's memory count.
class HashValue final : public HeapObject {
 public:
  using Table = ChainedTable<HashNode, HashNodeTraits>;

  /// An empty listpack-encoded hash; `seed` seeds its hashtable if it grows into one.
  explicit HashValue(uint64_t seed);
  ~HashValue() override;
  HashValue(const HashValue&) = delete;
  HashValue& operator=(const HashValue&) = delete;

  size_t bytes() const override;
  HeapObject* clone() const override;

  /// A hash in `encoding` (listpack) over `block`, lent by a small hash's Entry (ValueRef).
  HashValue(ObjEncoding encoding, uint64_t seed, uint8_t* block);
  /// The listpack block (null when empty), for the entry that lent or takes it.
  uint8_t* block() const { return m_lp.block(); }
  /// Gives the block up without freeing it (it stays with its entry).
  void release_block() { (void)m_lp.release(); }
  /// Bytes of the block alone.
  size_t block_bytes() const { return m_lp.bytes(); }
  /// A heap hash that takes over this one's contents (a borrowed hash that outgrew the
  /// listpack moves into its own object); this one is left empty and listpack-encoded.
  HashValue* detach();
  /// True for the encodings an Entry keeps as a bare block.
  static bool is_blob_encoding(ObjEncoding e) { return e == ObjEncoding::listpack; }

  /// listpack, listpack_ex or hashtable.
  ObjEncoding encoding() const { return m_encoding; }
  /// Number of stored fields.
  size_t size() const;
  bool empty() const { return size() == 0; }
  /// True when at least one field has a TTL.
  bool has_field_expires() const;
  /// The earliest field expire time, k_hash_no_expire when no field has one.
  int64_t min_expire() const;

  /// Finds `field`; false when absent.
  bool find(std::string_view field, HashField& out, HashBuf& buf) const;
  /// True when `field` is stored.
  bool contains(std::string_view field) const;
  /// Sets `field` to `value`, converting to hashtable when limits are exceeded. The field's
  /// TTL is dropped unless `keep_ttl` (HINCRBY keeps it). True when the field is new.
  bool set(std::string_view field, std::string_view value, const HashLimits& limits,
           bool keep_ttl = false);
  /// Converts to hashtable ahead of a multi-field write when `args` (fields and values)
  /// could not live in a listpack, as Valkey checks HSET's arguments first.
  void convert_for_write(std::span<const std::string_view> args, const HashLimits& limits);
  /// Removes `field`; true if it was there.
  bool remove(std::string_view field);

  /// Prepares a listpack hash for field TTLs (listpack -> listpackex); HEXPIRE does this
  /// even when it ends up setting nothing, as Redis 7.4.
  void enable_field_expiry();
  /// Applies HEXPIRE's rules to one field at absolute `when_ms`: -2 no such field, 0 the
  /// condition is not met, 1 the TTL was set, 2 the field was deleted (`when_ms` <= `now_ms`).
  int set_expire(std::string_view field, int64_t when_ms, HashExpireCond cond, int64_t now_ms);
  /// Removes the TTL of `field`: -2 no such field, -1 it had none, 1 removed.
  int persist(std::string_view field);
  /// The expire time of `field`: -2 no such field, -1 no TTL, else unix ms.
  int64_t expire_of(std::string_view field) const;
  /// Removes up to `max` fields whose expire time is <= `now_ms`, earliest first, calling
  /// `on_removed(std::string_view field)` before each goes; returns how many were removed.
  template <typename Fn>
  size_t expire_due(int64_t now_ms, size_t max, Fn&& on_removed);

  /// Calls `fn(const HashField&)` for every field (listpack order, or table order).
  template <typename Fn>
  void for_each(Fn&& fn) const;
  /// One HSCAN step: hashtable encoding visits the cursor's buckets and returns the next
  /// cursor; the listpack encodings visit everything and return 0.
  template <typename Fn>
  uint64_t scan(uint64_t cursor, Fn&& fn);
  /// A field chosen at random; the hash must not be empty.
  HashField random(std::mt19937_64& rng, HashBuf& buf);
  /// Releases the listpack's spare capacity (a no-op for the hashtable encoding).
  void shrink_to_fit() {
    if (m_encoding != ObjEncoding::hashtable) {
      m_lp.shrink_to_fit();
    }
  }

 private:
  /// Entries per field in the listpack encodings (2, or 3 with the TTL).
  size_t stride() const { return m_encoding == ObjEncoding::listpack_ex ? 3 : 2; }
  Listpack::Pos lp_find(std::string_view field) const;
  /// The expire time a listpackex TTL entry holds (0 there means none).
  static int64_t ttl_of(const LpValue& v) {
    return v.integer() == 0 ? k_hash_no_expire : v.integer();
  }
  void lp_insert_sorted(std::string_view field, std::string_view value, int64_t expire_ms);
  void convert_to_hashtable();
  HashNode* table_insert(std::string_view field, std::string_view value, int64_t expire_ms);
  void table_erase(HashNode** link);
  /// Replaces the node at `link` by a copy with `value` and `expire_ms`, keeping the heap
  /// pointing at it.
  void table_rewrite(HashNode** link, std::string_view value, int64_t expire_ms);
  void heap_push(HashNode* n);
  void heap_remove(uint32_t slot);
  void heap_fix(uint32_t slot);
  void heap_place(uint32_t slot, HashNode* n) {
    m_large->heap[slot] = n;
    n->set_slot(slot);
  }
  bool heap_less(uint32_t a, uint32_t b) const {
    return m_large->heap[a]->expire_ms() < m_large->heap[b]->expire_ms();
  }

  /// What only the hashtable encoding needs, allocated on conversion, so that a small hash
  /// pays one pointer for it.
  struct Large {
    explicit Large(uint64_t seed) : table(mem, seed) {}
    MemoryCounter mem;  // nodes and buckets of the table
    Table table;
    std::vector<HashNode*> heap;  // nodes with a TTL, min-heap by expire time
  };

  uint32_t m_seed;  // seeds the table (32 random bits suffice); fits beside the encoding
  ObjEncoding m_encoding = ObjEncoding::listpack;
  Listpack m_lp;                   // both listpack encodings (empty in hashtable)
  std::unique_ptr<Large> m_large;  // hashtable encoding only
};

// A small hash is a vtable pointer, seed and encoding, one listpack pointer and one null
// Large pointer: 32 bytes instead of 104, the per-key cost small hashes are measured by.
static_assert(sizeof(HashValue) <= 32, "a small hash's object must stay within 32 bytes");

/// DEBUG DIGEST-VALUE of a hash (every stored field, as Valkey digests stored keys).
Digest digest_hash(const HashValue& hash, bool has_expire, const Digest& seed = {});

/// The hash in a hash-typed Entry (see ValueRef).
using HashRef = ValueRef<HashValue>;

// --- Templates --------------------------------------------------------------------------

template <typename Fn>
size_t HashValue::expire_due(int64_t now_ms, size_t max, Fn&& on_removed) {
  size_t removed = 0;
  if (m_encoding == ObjEncoding::listpack_ex) {
    // Triplets with a TTL come first, earliest first.
    while (removed < max && !m_lp.empty()) {
      Listpack::Pos p = m_lp.first();
      int64_t ttl = ttl_of(m_lp.get(m_lp.next(m_lp.next(p))));
      if (ttl == k_hash_no_expire || ttl > now_ms) {
        break;
      }
      char buf[24];
      on_removed(m_lp.get(p).view(buf));
      m_lp.erase(p, 3);
      ++removed;
    }
  } else if (m_encoding == ObjEncoding::hashtable) {
    while (removed < max && !m_large->heap.empty() &&
           m_large->heap.front()->expire_ms() <= now_ms) {
      HashNode* n = m_large->heap.front();
      on_removed(n->field());
      remove(n->field());
      ++removed;
    }
  }
  return removed;
}

template <typename Fn>
void HashValue::for_each(Fn&& fn) const {
  if (m_encoding == ObjEncoding::hashtable) {
    m_large->table.for_each([&](HashNode* n) {
      fn(HashField{n->field(), n->value(), n->has_expire() ? n->expire_ms() : k_hash_no_expire});
    });
    return;
  }
  HashBuf buf;
  bool with_ttl = m_encoding == ObjEncoding::listpack_ex;
  for (Listpack::Pos p = m_lp.first(); p != Listpack::k_none;) {
    HashField f;
    f.field = m_lp.get(p).view(buf.field);
    p = m_lp.next(p);
    f.value = m_lp.get(p).view(buf.value);
    p = m_lp.next(p);
    if (with_ttl) {
      f.expire_ms = ttl_of(m_lp.get(p));
      p = m_lp.next(p);
    }
    fn(static_cast<const HashField&>(f));
  }
}

template <typename Fn>
uint64_t HashValue::scan(uint64_t cursor, Fn&& fn) {
  if (m_encoding != ObjEncoding::hashtable) {
    for_each(fn);
    return 0;
  }
  return m_large->table.scan(cursor, [&](HashNode* n) {
    fn(HashField{n->field(), n->value(), n->has_expire() ? n->expire_ms() : k_hash_no_expire});
  });
}

}  // namespace keyshift::engine
