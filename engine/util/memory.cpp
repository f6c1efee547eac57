#include "engine/util/memory.hpp"

#include <cstdio>
#include <cstdlib>
#include <new>

#if defined(KEYSHIFT_HAVE_MIMALLOC)
#  include <mimalloc.h>
#else
#  include <malloc.h>
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
