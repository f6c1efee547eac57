#include "engine/util/memory.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <new>

#if defined(KEYSHIFT_HAVE_MIMALLOC)
#  include <mimalloc.h>
#else
#  include <malloc.h>
#endif
#include <sys/mman.h>
#if defined(__linux__)
#  include <sys/prctl.h>
#endif
#include <unistd.h>

namespace keyshift::engine {

namespace {

// Takes a non-const pointer: GCC 12 under ASan treats a fresh block passed as `const void*`
// as a read of uninitialised memory (-Wmaybe-uninitialized).
size_t block_size(void* block) {
#if defined(KEYSHIFT_HAVE_MIMALLOC)
  return mi_usable_size(block);
#else
  return malloc_usable_size(block);
#endif
}

}  // namespace

void* MemoryCounter::allocate(size_t size) {
#if defined(KEYSHIFT_HAVE_MIMALLOC)
  void* p = mi_malloc(size);
#else
  void* p = std::malloc(size);
#endif
  if (p == nullptr) {
    throw std::bad_alloc();
  }
  m_used += block_size(p);
  return p;
}

void* MemoryCounter::reallocate(void* block, size_t size) {
  size_t old = block != nullptr ? usable_size(block) : 0;
#if defined(KEYSHIFT_HAVE_MIMALLOC)
  void* p = mi_realloc(block, size);
#else
  void* p = std::realloc(block, size);
#endif
  if (p == nullptr) {
    throw std::bad_alloc();
  }
  m_used = m_used - old + block_size(p);
  return p;
}

void MemoryCounter::deallocate(void* block) {
  if (block == nullptr) {
    return;
  }
  m_used -= usable_size(block);
#if defined(KEYSHIFT_HAVE_MIMALLOC)
  mi_free(block);
#else
  std::free(block);
#endif
}

size_t MemoryCounter::usable_size(const void* block) {
  return block_size(const_cast<void*>(block));
}

void* MemoryCounter::raw_allocate(size_t size) {
#if defined(KEYSHIFT_HAVE_MIMALLOC)
  void* p = mi_malloc(size);
#else
  void* p = std::malloc(size);
#endif
  if (p == nullptr) {
    throw std::bad_alloc();
  }
  return p;
}

void* MemoryCounter::raw_reallocate(void* block, size_t size) {
#if defined(KEYSHIFT_HAVE_MIMALLOC)
  void* p = mi_realloc(block, size);
#else
  void* p = std::realloc(block, size);
#endif
  if (p == nullptr) {
    throw std::bad_alloc();
  }
  return p;
}

void MemoryCounter::raw_deallocate(void* block) {
#if defined(KEYSHIFT_HAVE_MIMALLOC)
  mi_free(block);
#else
  std::free(block);
#endif
}

ThpMode parse_thp_mode(std::string_view text) {
  if (text.find("[always]") != std::string_view::npos) {
    return ThpMode::always;
  }
  if (text.find("[madvise]") != std::string_view::npos) {
    return ThpMode::madvise;
  }
  if (text.find("[never]") != std::string_view::npos) {
    return ThpMode::never;
  }
  return ThpMode::unknown;
}

ThpMode system_thp_mode() {
  FILE* f = std::fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
  if (f == nullptr) {
    return ThpMode::unknown;
  }
  char buf[128] = {};
  size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
  std::fclose(f);
  return parse_thp_mode(std::string_view(buf, n));
}

HeapSetup set_up_heap(bool huge_page_heap, bool disable_thp, ThpMode mode) {
  HeapSetup out;
#if defined(__linux__) && defined(PR_SET_THP_DISABLE)
  if (disable_thp && mode == ThpMode::always) {
    out.thp_disabled = prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0) == 0;
    out.detail = out.thp_disabled ? "transparent huge pages disabled for this process (disable-thp)"
                                  : "could not disable transparent huge pages (disable-thp)";
    return out;
  }
#else
  (void)disable_thp;
#endif
  if (!huge_page_heap) {
    out.detail = "huge-page heap off (huge-page-heap no)";
    return out;
  }
  if (mode != ThpMode::always && mode != ThpMode::madvise) {
    out.detail = "huge-page heap off: the kernel offers no transparent huge pages";
    return out;
  }
#if defined(KEYSHIFT_HAVE_MIMALLOC) && defined(MADV_HUGEPAGE)
  // The arena is address space only (MAP_NORESERVE): pages exist once touched. It spans
  // the machine's memory; the allocator goes to the OS for more only beyond that.
  long pages = sysconf(_SC_PHYS_PAGES);
  long page_size = sysconf(_SC_PAGESIZE);
  size_t bytes = pages > 0 && page_size > 0
                     ? static_cast<size_t>(pages) * static_cast<size_t>(page_size)
                     : size_t{8} << 30;
  // mimalloc finds a block's segment by masking its address: the arena is aligned to it.
  constexpr size_t k_segment = size_t{32} << 20;
  bytes = std::max(bytes, 2 * k_segment) & ~(k_segment - 1);
  void* raw = mmap(nullptr, bytes + k_segment, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (raw == MAP_FAILED) {
    out.detail = "huge-page heap off: no address space for it";
    return out;
  }
  auto base = reinterpret_cast<uintptr_t>(raw);
  auto start = (base + k_segment - 1) & ~(k_segment - 1);
  void* arena = reinterpret_cast<void*>(start);
  if (madvise(arena, bytes, MADV_HUGEPAGE) != 0 ||
      !mi_manage_os_memory(arena, bytes, true, false, true, -1)) {
    munmap(raw, bytes + k_segment);
    out.detail = "huge-page heap off: the kernel or allocator refused it";
    return out;
  }
  // This thread already allocates from a segment it got before the arena existed; what
  // it has not touched yet takes huge pages too.
  void* probe = mi_malloc(16);
  madvise(reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(probe) & ~(k_segment - 1)), k_segment,
          MADV_HUGEPAGE);
  mi_free(probe);
  out.huge_pages = true;
  out.detail = "keyspace heap on transparent huge pages";
#else
  out.detail = "huge-page heap off: built without mimalloc";
#endif
  return out;
}

uint64_t process_rss_bytes() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) {
    return 0;
  }
  unsigned long size = 0;
  unsigned long resident = 0;
  int n = std::fscanf(f, "%lu %lu", &size, &resident);
  std::fclose(f);
  if (n != 2) {
    return 0;
  }
  return static_cast<uint64_t>(resident) * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

}  // namespace keyshift::engine
