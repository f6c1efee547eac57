#pragma once

#include "engine/util/expected.hpp"
#include "engine/util/file_error.hpp"

#include <cstddef>
#include <string>
#include <string_view>

namespace keyshift::engine {

/// A whole file mapped read-only into memory (RDB files are read in place: the page cache
/// holds them, not the heap). The mapping outlives a rename over the file, so a file can be
/// read and replaced in one pass.
class MappedFile {
 public:
  /// How to map.
  enum class Access : unsigned char {
    whole,      ///< faulted in at once (MAP_POPULATE): the fastest whole-file read
    streaming,  ///< faulted in as read; drop() gives pages back (bounded memory)
  };

  /// Maps `path`; the error's `what` is the path. An empty file is an empty view.
  static Expected<MappedFile, FileError> open(const std::string& path,
                                              Access access = Access::whole);

  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  /// The file's bytes.
  std::string_view data() const { return {static_cast<const char*>(m_addr), m_size}; }
  /// Gives back the memory of the whole pages in [begin, end), which a streaming reader has
  /// passed (reading them again faults them in again).
  void drop(size_t begin, size_t end) const;

 private:
  MappedFile(void* addr, size_t size) : m_addr(addr), m_size(size) {}
  void* m_addr = nullptr;
  size_t m_size = 0;
};

}  // namespace keyshift::engine
