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
#include <vector>

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

/// An owning listpack. Positions are byte offsets of entries; every mutation invalidates
/// positions other than the one it returns.
class Listpack {
 public:
  /// A position: the byte offset of an entry, or k_none.
  using Pos = size_t;
  static constexpr Pos k_none = static_cast<Pos>(-1);
  static constexpr size_t k_header_size = 6;
  static constexpr uint16_t k_count_unknown = 65535;

  /// An empty listpack (7 bytes).
  Listpack();
  /// Adopts serialized bytes after a deep validation; false (and `*check` tells why) when
  /// invalid, leaving `out` unchanged.
  static bool adopt(std::string_view bytes, Listpack& out, LpCheck* check = nullptr);

  /// Adopts bytes known to be a valid listpack holding `count` elements (bytes this
  /// process produced, e.g. a node it compressed); no validation.
  static Listpack from_trusted(std::string_view bytes, size_t count);

  /// Number of elements (O(1)).
  size_t size() const { return m_count; }
  bool empty() const { return m_count == 0; }
  /// Serialized size in bytes (header, entries, terminator).
  size_t byte_size() const { return m_buf.size(); }
  /// The serialized bytes.
  std::string_view data() const {
    return {reinterpret_cast<const char*>(m_buf.data()), m_buf.size()};
  }
  /// Memory held, for accounting (the object's own size excluded: it lives in its owner).
  size_t bytes() const { return m_buf.capacity(); }
  /// Releases spare capacity.
  void shrink_to_fit() { m_buf.shrink_to_fit(); }

  /// First / last entry, or k_none when empty.
  Pos first() const { return m_count == 0 ? k_none : k_header_size; }
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
  /// Inserts a new entry at byte offset `at`.
  Pos insert_at(Pos at, const LpValue& v);
  /// Makes room for `extra` more bytes with modest headroom.
  void grow(size_t extra);
  /// Rewrites the header after a change (and trims a mostly unused buffer).
  void set_header();

  std::vector<uint8_t> m_buf;
  size_t m_count = 0;
};

}  // namespace keyshift::engine
