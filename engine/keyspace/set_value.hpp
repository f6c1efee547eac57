#pragma once

// The set type. Three encodings, named as OBJECT ENCODING reports them:
//
//   intset     every member a canonical int64, at most set-max-intset-entries of them
//   listpack   small sets: at most set-max-listpack-entries members of at most
//              set-max-listpack-value bytes (canonical integers stored int-encoded)
//   hashtable  a ChainedTable of nodes holding the member bytes inline
//
// Conversions follow Valkey 8: intset -> listpack (a non-integer arrives and the set stays
// small) or hashtable; listpack -> hashtable. A set never moves back by itself; only
// callers that build a fresh result (SINTERSTORE, SPOP's rebuild) pick a smaller encoding.
//
// Memory: bytes() is exact and O(1). Every mutating member changes it; callers add the
// difference of bytes() around a change to the engine's memory count. Read members never
// change it (the hashtable does not rehash on reads).

#include "engine/ds/intset.hpp"
#include "engine/ds/listpack.hpp"
#include "engine/keyspace/chained_table.hpp"
#include "engine/keyspace/digest.hpp"
#include "engine/keyspace/object.hpp"
#include "engine/keyspace/settings.hpp"
#include "engine/keyspace/value_ref.hpp"
#include "engine/util/hash.hpp"
#include "engine/util/memory.hpp"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <string_view>

namespace keyshift::engine {

/// The encoding thresholds (set-max-intset-entries, set-max-listpack-entries/-value).
struct SetLimits {
  uint64_t max_intset_entries = 512;
  uint64_t max_listpack_entries = 128;
  uint64_t max_listpack_value = 64;

  /// The limits `config` sets.
  static SetLimits from(const KeyspaceSettings& config);
};

/// One member as a set hands it out: an integer (intset, listpack integer entries) or bytes
/// viewing the set (valid until the set changes).
using SetMember = LpValue;

/// A hashtable-encoded member in one allocation: next (8) | length (4) | bytes.
/// A SetNode is never constructed: it is a view over bytes made by `make`.
class SetNode {
 public:
  SetNode*& next() { return *reinterpret_cast<SetNode**>(this); }
  std::string_view member() const {
    uint32_t len;
    std::memcpy(&len, bytes() + k_len_offset, 4);
    return {bytes() + k_data_offset, len};
  }
  /// Allocates a node for `member` from `mem`.
  static SetNode* make(MemoryCounter& mem, std::string_view member);
  /// Frees a node made by `make`.
  static void destroy(MemoryCounter& mem, SetNode* n) { mem.deallocate(n); }

 private:
  static constexpr size_t k_len_offset = sizeof(void*);
  static constexpr size_t k_data_offset = k_len_offset + 4;
  const char* bytes() const { return reinterpret_cast<const char*>(this); }
};

/// Chain and key access for the hashtable encoding's ChainedTable.
struct SetNodeTraits {
  static SetNode*& next(SetNode* n) { return n->next(); }
  static std::string_view key(const SetNode* n) { return n->member(); }
  static uint64_t hash(std::string_view member, uint64_t seed) { return hash_bytes(member, seed); }
};

/// A set value.
class SetValue final : public HeapObject {
 public:
  using Table = ChainedTable<SetNode, SetNodeTraits>;

  /// An empty set in `encoding` (intset, listpack or hashtable); `seed` seeds its
  /// hashtable.
  SetValue(ObjEncoding encoding, uint64_t seed);
  ~SetValue() override;
  SetValue(const SetValue&) = delete;
  SetValue& operator=(const SetValue&) = delete;

  /// The empty set Valkey creates for a write of about `size_hint` members whose first
  /// member is `first` (its setTypeCreate): intset when `first` is an integer and the hint
  /// fits an intset, else listpack when the hint fits one, else hashtable.
  static SetValue* create(std::string_view first, size_t size_hint, const SetLimits& limits,
                          uint64_t seed);
  /// Adopts an intset blob (RDB); the set takes the intset's encoding.
  static SetValue* adopt(Intset members, uint64_t seed);
  /// Adopts a listpack of members (RDB).
  static SetValue* adopt(Listpack members, uint64_t seed);

  size_t bytes() const override;
  HeapObject* clone() const override;

  /// A set in `encoding` (intset or listpack) over `block`, lent by a small set's Entry
  /// (ValueRef).
  SetValue(ObjEncoding encoding, uint64_t seed, uint8_t* block);
  /// The intset/listpack block (null when empty), for the entry that lent or takes it.
  uint8_t* block() const {
    return m_encoding == ObjEncoding::intset ? m_intset.block() : m_lp.block();
  }
  /// Gives the block up without freeing it (it stays with its entry).
  void release_block() {
    (void)(m_encoding == ObjEncoding::intset ? m_intset.release() : m_lp.release());
  }
  /// Bytes of the block alone.
  size_t block_bytes() const {
    return m_encoding == ObjEncoding::intset ? m_intset.bytes() : m_lp.bytes();
  }
  /// A heap set that takes over this hashtable-encoded set's contents (a borrowed set that
  /// outgrew its block moves into its own object); this one is left empty.
  SetValue* detach();
  /// True for the encodings an Entry keeps as a bare block.
  static bool is_blob_encoding(ObjEncoding e) {
    return e == ObjEncoding::intset || e == ObjEncoding::listpack;
  }

  /// intset, listpack or hashtable.
  ObjEncoding encoding() const { return m_encoding; }
  /// Number of members.
  size_t size() const;
  bool empty() const { return size() == 0; }

  /// Adds `member`, converting when the limits require; true when it was new.
  bool add(std::string_view member, const SetLimits& limits);
  bool add(const SetMember& member, const SetLimits& limits);
  /// Removes `member`; true when it was there.
  bool remove(std::string_view member);
  bool remove(const SetMember& member);
  /// True when `member` is in the set.
  bool contains(std::string_view member) const;
  bool contains(const SetMember& member) const;

  /// Converts to hashtable ahead of a write of `size_hint` members that would not fit the
  /// current encoding (Valkey's setTypeMaybeConvert).
  void maybe_convert(size_t size_hint, const SetLimits& limits);
  /// Converts to intset when every member is an integer and the set fits one; the caller
  /// knows the members are integers (Valkey's maybeConvertToIntset).
  void maybe_convert_to_intset(const SetLimits& limits);
  /// Converts to `encoding`; `to` must hold every member (intset: integers only).
  void convert(ObjEncoding to);
  /// Releases spare capacity of the listpack or intset.
  void shrink_to_fit();

  /// Calls `fn(const SetMember&)` for every member: intset ascending, listpack in insertion
  /// order, hashtable in table order.
  template <typename Fn>
  void for_each(Fn&& fn) const;
  /// One SSCAN step over the hashtable encoding's buckets: `fn(std::string_view)` per
  /// member, returns the next cursor. The other encodings visit everything and return 0.
  template <typename Fn>
  uint64_t scan(uint64_t cursor, Fn&& fn) const;
  /// A member picked at random (the set must not be empty).
  SetMember random(std::mt19937_64& rng) const;
  /// The member at listpack position `index` (listpack encoding, index < size()).
  SetMember listpack_at(size_t index) const;
  /// Removes and returns a random member (the set must not be empty).
  std::string pop_random(std::mt19937_64& rng);

  /// The intset, for RDB and tests; only in the intset encoding (it shares its storage with
  /// the listpack).
  const Intset& intset() const { return m_intset; }
  /// The listpack, for RDB and tests; not in the intset encoding.
  const Listpack& listpack() const { return m_lp; }

 private:
  bool add_string(std::string_view member, const SetLimits& limits);
  bool table_insert(std::string_view member);
  bool table_contains(std::string_view member) const;
  bool table_erase(std::string_view member);
  void release_table();
  /// Converts an intset that outgrew its limit to hashtable.
  void maybe_convert_intset(const SetLimits& limits);
  /// A node of the hashtable encoding chosen close to uniformly (the set must not be empty).
  SetNode* fair_random_node(std::mt19937_64& rng) const;

  /// Nodes gathered per fair random pick (Valkey's GETFAIR_NUM_ENTRIES).
  static constexpr size_t k_fair_sample = 20;

  /// Destroys the active small holder and makes the one `to` uses active, empty.
  void switch_small(ObjEncoding to);

  /// What only the hashtable encoding needs, allocated on conversion, so that a small set
  /// pays one pointer for it.
  struct Large {
    explicit Large(uint64_t seed) : table(mem, seed) {}
    MemoryCounter mem;  // nodes and buckets of the table
    Table table;
  };

  ObjEncoding m_encoding;
  uint32_t m_seed;  // seeds the table (32 random bits suffice); fits beside the encoding
  union {
    Intset m_intset;  // active in the intset encoding
    Listpack m_lp;    // active in the others (empty in hashtable)
  };
  std::unique_ptr<Large> m_large;  // hashtable encoding only
};

// A small set is a vtable pointer, the encoding and seed, one blob pointer and one null
// Large pointer: 32 bytes, one allocator size class below the 40 that two blob holders need.
static_assert(sizeof(SetValue) <= 32, "a small set's object must stay within 32 bytes");

/// DEBUG DIGEST-VALUE of a set (Valkey's xorObjectDigest for sets).
Digest digest_set(const SetValue& set, bool has_expire, const Digest& seed = {});

// --- Templates --------------------------------------------------------------------------

template <typename Fn>
void SetValue::for_each(Fn&& fn) const {
  switch (m_encoding) {
    case ObjEncoding::intset:
      for (uint32_t i = 0; i < m_intset.size(); ++i) {
        fn(SetMember::of_int(m_intset.at(i)));
      }
      return;
    case ObjEncoding::listpack:
      for (Listpack::Pos p = m_lp.first(); p != Listpack::k_none; p = m_lp.next(p)) {
        fn(static_cast<const SetMember&>(m_lp.get(p)));
      }
      return;
    default:
      m_large->table.for_each([&](SetNode* n) { fn(SetMember::of_str(n->member())); });
      return;
  }
}

template <typename Fn>
uint64_t SetValue::scan(uint64_t cursor, Fn&& fn) const {
  if (m_encoding != ObjEncoding::hashtable) {
    char buf[24];
    for_each([&](const SetMember& m) { fn(m.view(buf)); });
    return 0;
  }
  return m_large->table.scan(cursor, [&](SetNode* n) { fn(n->member()); });
}

/// The set in a set-typed Entry (see ValueRef).
using SetRef = ValueRef<SetValue>;

}  // namespace keyshift::engine
