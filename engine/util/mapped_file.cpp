#include "engine/util/mapped_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace keyshift::engine {

Expected<MappedFile, FileError> MappedFile::open(const std::string& path) {
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
  void* addr = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
  int saved = errno;
  ::close(fd);
  if (addr == MAP_FAILED) {
    return Unexpected{FileError{path, saved, {}}};
  }
  ::madvise(addr, size, MADV_SEQUENTIAL);
  return MappedFile(addr, size);
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
