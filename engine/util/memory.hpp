#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

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

/// The kernel's transparent huge page mode (/sys/kernel/mm/transparent_hugepage/enabled).
enum class ThpMode : uint8_t { unknown, always, madvise, never };

/// The selected mode of a THP "enabled" file's text ("always [madvise] never").
ThpMode parse_thp_mode(std::string_view sysfs_text);
/// The running kernel's THP mode; unknown when the file cannot be read.
ThpMode system_thp_mode();

/// How the process heap was set up for the keyspace, for the log.
struct HeapSetup {
  bool huge_pages = false;    // the allocator's arena is backed by transparent huge pages
  bool thp_disabled = false;  // PR_SET_THP_DISABLE was set (disable-thp, kernel in "always")
  std::string detail;
};

/// Sets the process heap up before a keyspace grows (call once, from the thread that will
/// run the engine). As Valkey, `disable_thp` turns THP off for the process when the kernel
/// forces it on every mapping ("always"). Otherwise, with `huge_page_heap` and a kernel
/// that offers THP, the allocator gets a first arena marked MADV_HUGEPAGE: every 4 KiB
/// first-touch fault costs a trap, which dominates an RDB load on virtual machines, while
/// copy-on-write after fork() splits huge pages and still copies 4 KiB at a time
/// (Linux 5.8+), so a background save costs what it did.
HeapSetup set_up_heap(bool huge_page_heap, bool disable_thp, ThpMode mode);

/// Resident set size of this process in bytes (from /proc), 0 if unknown.
uint64_t process_rss_bytes();

}  // namespace keyshift::engine
