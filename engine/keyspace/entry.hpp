#pragma once

#include "engine/keyspace/object.hpp"
#include "engine/util/memory.hpp"

#include <cstdint>
#include <cstring>
#include <string_view>

namespace keyshift::engine {

/// One key and its value in a single allocation, laid out to keep small keys cheap:
///
///   next (8) | meta (4: lru/lfu 24 bits, type 4, encoding 4) | flags (1)
///   [expire ms (8) | expire slot (4)]    when flags has k_has_expire
///   key length (varint) | key bytes
///   value: int64 (8) | length (varint) + bytes | HeapObject* (8) | block* (8)
///
/// A small hash, set or sorted set keeps its listpack or intset block straight in the value
/// slot (Kind::blob), so it pays no C++ object; its type and encoding say how to read it.
///
/// An Entry is never constructed: it is a view over bytes made by `Entry::make`.
class Entry {
 public:
  /// How the value is stored in the entry.
  enum class Kind : uint8_t { inline_bytes = 0, integer = 1, object = 2, blob = 3 };

  /// The shape of a new entry's value.
  struct ValueSpec {
    Kind kind = Kind::inline_bytes;
    std::string_view bytes;        // inline_bytes
    int64_t integer = 0;           // integer
    HeapObject* object = nullptr;  // object (ownership moves into the entry)
    uint8_t* blob = nullptr;       // blob: listpack/intset block (ownership moves in)
    ObjType type = ObjType::string;
    ObjEncoding encoding = ObjEncoding::embstr;
  };

  /// Allocates an entry for `key` with `value`; `expire_ms` < 0 means no TTL.
  static Entry* make(MemoryCounter& mem, std::string_view key, const ValueSpec& value,
                     int64_t expire_ms);
  /// Frees `e` and the heap object it owns.
  static void destroy(MemoryCounter& mem, Entry* e);
  /// Frees `e` but not its heap object (the object moved elsewhere).
  static void destroy_shell(MemoryCounter& mem, Entry* e);

  /// A copy of `src` (same key, value, meta) with or without room for a TTL; the heap
  /// object moves to the copy. The caller frees `src` with `destroy_shell`.
  static Entry* relayout(MemoryCounter& mem, const Entry* src, bool with_expire);

  /// The key.
  std::string_view key() const;
  /// Chain pointer used by the owning table.
  Entry*& next() { return *reinterpret_cast<Entry**>(this); }
  Entry* next() const { return *reinterpret_cast<Entry* const*>(this); }

  ObjType type() const { return static_cast<ObjType>((meta() >> 24) & 0xF); }
  ObjEncoding encoding() const { return static_cast<ObjEncoding>(meta() >> 28); }
  void set_encoding(ObjEncoding enc) {
    set_meta((meta() & 0x0FFFFFFFu) | (static_cast<uint32_t>(enc) << 28));
  }
  /// LRU clock (seconds, 24 bits) or LFU counter and decrement time, per policy.
  uint32_t lru() const { return meta() & 0xFFFFFF; }
  void set_lru(uint32_t v) { set_meta((meta() & 0xFF000000u) | (v & 0xFFFFFF)); }

  bool has_expire() const { return (flags() & k_has_expire) != 0; }
  /// Expire time in unix ms; only valid with has_expire().
  int64_t expire_ms() const {
    int64_t v;
    std::memcpy(&v, bytes() + k_expire_offset, 8);
    return v;
  }
  void set_expire_ms(int64_t v) { std::memcpy(bytes() + k_expire_offset, &v, 8); }
  /// Position of this entry in its database's TTL index.
  uint32_t expire_slot() const {
    uint32_t v;
    std::memcpy(&v, bytes() + k_expire_offset + 8, 4);
    return v;
  }
  void set_expire_slot(uint32_t v) { std::memcpy(bytes() + k_expire_offset + 8, &v, 4); }

  Kind kind() const { return static_cast<Kind>(flags() & k_kind_mask); }
  /// The integer value (Kind::integer).
  int64_t integer() const {
    int64_t v;
    std::memcpy(&v, value_ptr(), 8);
    return v;
  }
  /// Overwrites the integer value in place (Kind::integer).
  void set_integer(int64_t v) { std::memcpy(value_ptr(), &v, 8); }
  /// The inline bytes (Kind::inline_bytes).
  std::string_view inline_bytes() const;
  /// The heap object (Kind::object).
  HeapObject* object() const {
    HeapObject* o;
    std::memcpy(&o, value_ptr(), sizeof(o));
    return o;
  }
  /// Replaces the heap object pointer without freeing the old one.
  void set_object(HeapObject* o) { std::memcpy(value_ptr(), &o, sizeof(o)); }
  /// The listpack or intset block (Kind::blob; null only while a new key is being filled).
  uint8_t* blob() const {
    uint8_t* b;
    std::memcpy(&b, value_ptr(), sizeof(b));
    return b;
  }
  /// Replaces the block pointer without freeing the old one (the block was reallocated).
  void set_blob(uint8_t* b) { std::memcpy(value_ptr(), &b, sizeof(b)); }
  /// Switches an object or blob value to `kind` holding `ptr` in place (both are 8-byte
  /// slots, so the entry does not move); the old value is not freed.
  void switch_slot(Kind kind, void* ptr, ObjEncoding enc);
  /// Bytes the block's contents take (Kind::blob): what a copy must duplicate.
  size_t blob_size() const;

  /// True when a new value of this shape fits in this allocation (so it can be
  /// rewritten in place without moving the entry).
  bool fits(MemoryCounter& mem, const ValueSpec& value) const;
  /// Rewrites the value in place; requires `fits`. Frees the old heap object.
  void assign(MemoryCounter& mem, const ValueSpec& value);
  /// Bytes this entry holds including its heap object.
  size_t bytes_used() const;

 private:
  static constexpr uint8_t k_kind_mask = 0x3;
  static constexpr uint8_t k_has_expire = 0x4;
  static constexpr size_t k_meta_offset = 8;
  static constexpr size_t k_flags_offset = 12;
  static constexpr size_t k_expire_offset = 13;
  static constexpr size_t k_expire_size = 12;

  char* bytes() { return reinterpret_cast<char*>(this); }
  const char* bytes() const { return reinterpret_cast<const char*>(this); }
  uint32_t meta() const {
    uint32_t v;
    std::memcpy(&v, bytes() + k_meta_offset, 4);
    return v;
  }
  void set_meta(uint32_t v) { std::memcpy(bytes() + k_meta_offset, &v, 4); }
  uint8_t flags() const { return static_cast<uint8_t>(bytes()[k_flags_offset]); }
  void set_flags(uint8_t f) { bytes()[k_flags_offset] = static_cast<char>(f); }
  size_t key_offset() const { return k_expire_offset + (has_expire() ? k_expire_size : 0); }
  const char* value_ptr() const;
  char* value_ptr() { return const_cast<char*>(static_cast<const Entry*>(this)->value_ptr()); }
  static size_t value_size(const ValueSpec& value);
  static void write_value(char* p, const ValueSpec& value);
};

/// Size of a varint-encoded length (used by the entry layout).
size_t varint_size(uint64_t v);

}  // namespace keyshift::engine
