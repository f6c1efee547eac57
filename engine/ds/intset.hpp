#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace keyshift::engine {

/// A sorted set of distinct 64-bit integers stored in Valkey's intset byte format, so that
/// RDB code can take and produce the blob unchanged:
///
///   encoding (u32 LE: 2, 4 or 8) | length (u32 LE) | length integers of `encoding` bytes,
///   little-endian, strictly ascending
///
/// Every integer uses the width of the widest one ever inserted: inserting a wider value
/// upgrades the whole blob, and removals never downgrade it (as Valkey).
///
/// The holder is one pointer to the heap blob, so a small set pays 8 bytes for it; the
/// capacity is the allocator's usable size. An empty set holds no blob (and reads as a
/// 2-byte encoding).
class Intset {
 public:
  /// Size of the blob header.
  static constexpr size_t k_header_size = 8;
  /// Most members an intset may hold (Valkey limits intsets to 2^30 entries).
  static constexpr size_t k_max_entries = size_t{1} << 30;

  /// An empty set with 2-byte encoding (no blob).
  Intset() = default;
  ~Intset();
  /// A deep copy of the blob, sized exactly.
  Intset(const Intset& other);
  Intset& operator=(const Intset& other);
  /// Takes the blob; `other` becomes empty.
  Intset(Intset&& other) noexcept : m_blob(other.m_blob) { other.m_blob = nullptr; }
  Intset& operator=(Intset&& other) noexcept;

  /// Adopts a blob (from RDB) after checking it; nullopt if malformed. With `deep` the
  /// ordering and uniqueness of the integers are checked too.
  static std::optional<Intset> from_blob(std::string_view blob, bool deep = true);
  /// True when `blob` is a well-formed intset (see from_blob).
  static bool validate(std::string_view blob, bool deep);
  /// Width in bytes (2, 4 or 8) that `value` needs.
  static uint32_t width_for(int64_t value);

  /// Takes a blob another holder owned (an Entry's value slot lends it); null is empty.
  static Intset from_block(uint8_t* block) {
    Intset is;
    is.m_blob = block;
    return is;
  }
  /// Gives the blob back without freeing it, leaving this set empty.
  uint8_t* release() {
    uint8_t* b = m_blob;
    m_blob = nullptr;
    return b;
  }
  /// The blob (null when empty), for the holder that lent it.
  uint8_t* block() const { return m_blob; }

  /// The blob in Valkey's format.
  std::string_view blob() const;
  /// Number of integers.
  uint32_t size() const { return m_blob == nullptr ? 0 : read_u32(4); }
  bool empty() const { return size() == 0; }
  /// Current width of each integer in bytes (2, 4 or 8).
  uint32_t encoding() const { return m_blob == nullptr ? 2 : read_u32(0); }

  /// Inserts `value`; false if it was already present.
  bool insert(int64_t value);
  /// Removes `value`; false if it was absent.
  bool erase(int64_t value);
  /// True if `value` is present.
  bool contains(int64_t value) const;
  /// The integer at sorted position `pos` (< size()).
  int64_t at(uint32_t pos) const { return read_at(pos, encoding()); }
  /// Smallest and largest integers (the set must not be empty).
  int64_t min() const { return at(0); }
  int64_t max() const { return at(size() - 1); }

  /// Bytes allocated for the blob (for memory accounting): its usable size.
  size_t bytes() const;
  /// Releases spare capacity.
  void shrink_to_fit();
  /// Reserves room for `n` integers of the current width.
  void reserve(size_t n);

 private:
  uint32_t read_u32(size_t offset) const;
  void write_u32(size_t offset, uint32_t v);
  int64_t read_at(uint32_t pos, uint32_t width) const;
  void write_at(uint32_t pos, uint32_t width, int64_t value);
  /// Binary search: true and the position if found, else false and the insert position.
  bool search(int64_t value, uint32_t& pos) const;
  /// Rewrites every integer at `width` and adds `value` at the front or back.
  void upgrade_and_add(int64_t value, uint32_t width);
  /// Byte size of the blob's contents (header and integers).
  size_t blob_size() const { return k_header_size + size_t{size()} * encoding(); }
  /// Makes the block hold at least `n` bytes, growing with modest headroom; creates an
  /// empty 2-byte header first when there is no blob.
  void grow_to(size_t n);

  uint8_t* m_blob = nullptr;  // Valkey-format blob, or null when empty
};

}  // namespace keyshift::engine
