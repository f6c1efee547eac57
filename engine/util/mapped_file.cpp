#include "engine/util/mapped_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

namespace keyshift::engine {

Expected<MappedFile, FileError> MappedFile::open(const std::string& path, Access access) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return Unexpected{FileError{path, errno, {}}};
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    FileError err{path, errno, {}};
    ::close(fd);
    return Unexpected{err};
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return Unexpected{FileError{path, S_ISDIR(st.st_mode) ? EISDIR : 0, "not a regular file"}};
  }
  auto size = static_cast<size_t>(st.st_size);
  if (size == 0) {
    ::close(fd);
    return MappedFile(nullptr, 0);  // mmap refuses empty files; an empty view is enough
  }
  int flags = MAP_PRIVATE | (access == Access::whole ? MAP_POPULATE : 0);
  void* addr = ::mmap(nullptr, size, PROT_READ, flags, fd, 0);
  int saved = errno;
  ::close(fd);
  if (addr == MAP_FAILED) {
    return Unexpected{FileError{path, saved, {}}};
  }
  ::madvise(addr, size, MADV_SEQUENTIAL);
  return MappedFile(addr, size);
}

void MappedFile::drop(size_t begin, size_t end) const {
  static const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  size_t first = (begin + page - 1) / page * page;
  size_t last = std::min(end, m_size) / page * page;
  if (last > first) {
    ::madvise(static_cast<char*>(m_addr) + first, last - first, MADV_DONTNEED);
  }
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : m_addr(std::exchange(other.m_addr, nullptr)), m_size(std::exchange(other.m_size, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    this->~MappedFile();
    m_addr = std::exchange(other.m_addr, nullptr);
    m_size = std::exchange(other.m_size, 0);
  }
  return *this;
}

MappedFile::~MappedFile() {
  if (m_addr != nullptr && m_size != 0) {
    ::munmap(m_addr, m_size);
  }
}

}  // namespace keyshift::engine
