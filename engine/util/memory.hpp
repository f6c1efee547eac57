#pragma once

#include <cstddef>
#include <cstdint>

namespace keyshift::engine {

/// Counts the bytes one engine's keyspace holds, so that maxmemory and INFO see that
/// engine alone (two engines in one process keep separate counts).
class MemoryCounter {
 public:
  /// Allocates `size` bytes and counts the block's real (usable) size.
  void* allocate(size_t size);
  /// Grows or shrinks a block from `allocate`, keeping the count right.
  void* reallocate(void* block, size_t size);
  /// Frees a block from `allocate`.
  void deallocate(void* block);
  /// Real size of a block from `allocate`.
  static size_t usable_size(const void* block);
  /// Allocates an uncounted block from the same allocator: for blobs whose owner reports
  /// usable_size() through its own bytes() (listpacks, intsets).
  static void* raw_allocate(size_t size);
  /// Grows or shrinks a block from raw_allocate (null allocates).
  static void* raw_reallocate(void* block, size_t size);
  /// Frees a block from raw_allocate (null is ignored).
  static void raw_deallocate(void* block);
  /// Adds bytes held outside `allocate` (tables, containers).
  void add(int64_t bytes) { m_used = static_cast<uint64_t>(static_cast<int64_t>(m_used) + bytes); }
  /// Bytes currently held.
  uint64_t used() const { return m_used; }
  /// Highest `used()` seen.
  uint64_t peak() const { return m_peak; }
  /// Records the peak after growth.
  void note_peak() {
    if (m_used > m_peak) {
      m_peak = m_used;
    }
  }

 private:
  uint64_t m_used = 0;
  uint64_t m_peak = 0;
};

/// Resident set size of this process in bytes (from /proc), 0 if unknown.
uint64_t process_rss_bytes();

}  // namespace keyshift::engine
