#pragma once

// A listpack in Valkey's exact byte format, so RDB code can adopt and emit the blobs as-is.
//
//   total bytes (u32 LE) | element count (u16 LE, 65535 = unknown) | entries... | 0xFF
//   entry = encoding (+ data) | backlen (length of encoding+data, 1-5 bytes, read backwards)
//
// Strings that are canonical integers ("12", "-7", never "012", "+1", "-0") are stored
// int-encoded, as Valkey does; reading them back yields the integer.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace keyshift::engine {

/// One element read from a listpack: an integer or a string viewing the listpack's bytes
/// (valid until the listpack changes).
class LpValue {
 public:
  LpValue() = default;
  /// An integer element.
  static LpValue of_int(int64_t v) {
    LpValue r;
    r.m_is_int = true;
    r.m_int = v;
    return r;
  }
  /// A string element (not converted: use the listpack's insert functions for that).
  static LpValue of_str(std::string_view s) {
    LpValue r;
    r.m_str = s;
    return r;
  }

  bool is_int() const { return m_is_int; }
  /// The integer (is_int()).
  int64_t integer() const { return m_int; }
  /// The string bytes (!is_int()).
  std::string_view str() const { return m_str; }
  /// The element as text (integers in decimal).
  std::string to_string() const;
  /// The element as text, printing integers into `buf` (at least 21 bytes).
  std::string_view view(char* buf) const;
  /// True when the element's text equals `s`.
  bool equals(std::string_view s) const;
  /// True when both elements have the same text.
  bool operator==(const LpValue& o) const;

 private:
  std::string_view m_str;
  int64_t m_int = 0;
  bool m_is_int = false;
};

/// Outcome of validating serialized listpack bytes.
struct LpCheck {
  bool ok = true;
  size_t offset = 0;         // where the first problem is (when !ok)
  const char* problem = "";  // what is wrong there (static text)
  size_t count = 0;          // elements found (when ok and deep)
};

/// Checks `bytes` as a listpack without trusting any length in it: header, terminator and,
/// when `deep`, every entry's encoding, bounds and backlen, and the element count.
LpCheck validate_listpack(std::string_view bytes, bool deep = true);

/// True when `s` is a canonical decimal int64 that a listpack stores int-encoded.
bool lp_string_to_int(std::string_view s, int64_t& out);

/// An owning listpack held as one pointer to a heap block with Valkey's exact bytes, so a
/// small collection pays 8 bytes for its holder. The block's capacity is the allocator's
/// usable size and the element count is the header's (walked when it says "unknown"), so
/// nothing is cached beside the pointer. An empty listpack holds no block at all. Positions
/// are byte offsets of entries; every mutation invalidates positions other than the one it
/// returns.
class Listpack {
 public:
  /// A position: the byte offset of an entry, or k_none.
  using Pos = size_t;
  static constexpr Pos k_none = static_cast<Pos>(-1);
  static constexpr size_t k_header_size = 6;
  static constexpr uint16_t k_count_unknown = 65535;

  /// An empty listpack (no block).
  Listpack() = default;
  ~Listpack();
  /// A deep copy of the bytes, sized exactly.
  Listpack(const Listpack& other);
  Listpack& operator=(const Listpack& other);
  /// Takes the block; `other` becomes empty.
  Listpack(Listpack&& other) noexcept : m_lp(other.m_lp) { other.m_lp = nullptr; }
  Listpack& operator=(Listpack&& other) noexcept;

  /// Adopts serialized bytes after a deep validation; false (and `*check` tells why) when
  /// invalid, leaving `out` unchanged.
  static bool adopt(std::string_view bytes, Listpack& out, LpCheck* check = nullptr);

  /// Adopts bytes known to be a valid listpack holding `count` elements (bytes this
  /// process produced, e.g. a node it compressed); no validation.
  static Listpack from_trusted(std::string_view bytes, size_t count);

  /// Takes a block another holder owned (an Entry's value slot lends it); null is empty.
  static Listpack from_block(uint8_t* block) {
    Listpack lp;
    lp.m_lp = block;
    return lp;
  }
  /// Gives the block back without freeing it, leaving this listpack empty.
  uint8_t* release() {
    uint8_t* b = m_lp;
    m_lp = nullptr;
    return b;
  }
  /// The block (null when empty), for the holder that lent it.
  uint8_t* block() const { return m_lp; }

  /// Number of elements: O(1) from the header, a walk when it holds 65535 or more.
  size_t size() const;
  bool empty() const { return m_lp == nullptr; }
  /// Serialized size in bytes (header, entries, terminator; 7 when empty).
  size_t byte_size() const { return m_lp == nullptr ? k_header_size + 1 : total(); }
  /// The serialized bytes (an empty listpack's 7 bytes when empty).
  std::string_view data() const;
  /// Memory held, for accounting: the block's usable size (the holder lives in its owner).
  size_t bytes() const;
  /// Releases spare capacity.
  void shrink_to_fit();

  /// First / last entry, or k_none when empty.
  Pos first() const { return m_lp == nullptr ? k_none : k_header_size; }
  Pos last() const;
  /// The entry after / before `p`, or k_none.
  Pos next(Pos p) const;
  Pos prev(Pos p) const;
  /// The entry at `index` (negative counts from the tail: -1 is the last), or k_none.
  Pos seek(int64_t index) const;
  /// The element at `p`.
  LpValue get(Pos p) const;
  /// Bytes of the entry at `p` (encoding, data and backlen).
  size_t entry_size(Pos p) const;

  /// Adds an element at the tail / head; returns its position.
  Pos append(std::string_view s);
  Pos append(int64_t v);
  Pos append(const LpValue& v);
  Pos prepend(std::string_view s);
  Pos prepend(const LpValue& v);
  /// Inserts before / after the entry at `p`; returns the new entry's position.
  Pos insert_before(Pos p, const LpValue& v);
  Pos insert_before(Pos p, std::string_view s) { return insert_before(p, encode_arg(s)); }
  Pos insert_after(Pos p, const LpValue& v);
  Pos insert_after(Pos p, std::string_view s) { return insert_after(p, encode_arg(s)); }
  /// Replaces the element at `p`; returns its (same) position.
  Pos replace(Pos p, const LpValue& v);
  Pos replace(Pos p, std::string_view s) { return replace(p, encode_arg(s)); }
  /// Removes the entry at `p`; returns the position of the entry that followed, or k_none.
  Pos erase(Pos p);
  /// Removes up to `count` entries starting at `p`; returns the following position or k_none.
  Pos erase(Pos p, size_t count);
  /// Removes `count` entries starting at element `index` (negative from the tail), clamped.
  void erase_range(int64_t index, size_t count);
  /// Removes every element.
  void clear();
  /// Appends / prepends every element of `other`, in order (merging two listpacks).
  void append_all(const Listpack& other);
  void prepend_all(const Listpack& other);

  /// The first entry at or after `start` whose text equals `value`, comparing one entry and
  /// then skipping `skip` (1 for field/value pairs: compare fields only); k_none if absent.
  Pos find(std::string_view value, Pos start, size_t skip = 0) const;

  /// Bytes an element would take as an entry (encoding, data, backlen).
  static size_t encoded_entry_size(const LpValue& v);
  static size_t encoded_entry_size(std::string_view s) { return encoded_entry_size(encode_arg(s)); }

 private:
  /// `s` as an integer value when canonical, else as a string value.
  static LpValue encode_arg(std::string_view s);
  /// Writes an entry for `v` into `dst` (room from encoded_entry_size).
  static void write_entry(uint8_t* dst, const LpValue& v, size_t payload);
  /// The total bytes the header records (the block must exist).
  size_t total() const;
  /// The header's element count field.
  uint16_t header_count() const;
  /// Gives an empty listpack its 7-byte block so entries can be inserted.
  void materialize();
  /// Sets the block to `new_total` bytes (growing with modest headroom, shrinking once
  /// mostly unused); the contents up to the smaller size are kept, the header is not touched.
  void resize(size_t new_total);
  /// Rewrites the header's total and count after `delta` elements were added (or removed),
  /// and frees the block once no element is left.
  void update_header(size_t new_total, int64_t delta);
  /// Inserts a new entry at byte offset `at`.
  Pos insert_at(Pos at, const LpValue& v);
  /// Inserts `n` raw entry bytes holding `count` elements at byte offset `at`.
  void insert_raw(Pos at, const uint8_t* src, size_t n, size_t count);

  uint8_t* m_lp = nullptr;  // Valkey-format block, or null when empty
};

}  // namespace keyshift::engine
