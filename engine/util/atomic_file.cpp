#include "engine/util/atomic_file.hpp"

#include "engine/util/crash_point.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace keyshift::engine {
namespace {

/// The directory part of `path` ("." for a bare name).
std::string directory_of(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) {
    return ".";
  }
  return slash == 0 ? "/" : path.substr(0, slash);
}

FileError error_now(std::string what) {
  return FileError{std::move(what), errno, {}};
}

}  // namespace

std::string atomic_temp_path(const std::string& path, pid_t writer) {
  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  return dir + "." + name + ".tmp-" + std::to_string(static_cast<long>(writer));
}

bool process_is_gone(pid_t pid) {
  return pid > 0 && pid != ::getpid() && ::kill(pid, 0) != 0 && errno == ESRCH;
}

void remove_stale_temps(const std::string& path) {
  size_t slash = path.rfind('/');
  std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  std::string prefix = "." + name + ".tmp-";
  std::string dir = directory_of(path);
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) {
    return;
  }
  while (const dirent* e = ::readdir(d)) {
    std::string_view entry(e->d_name);
    if (!entry.starts_with(prefix) || entry.size() == prefix.size()) {
      continue;
    }
    std::string_view digits = entry.substr(prefix.size());
    if (digits.find_first_not_of("0123456789") != std::string_view::npos || digits.size() > 9) {
      continue;
    }
    if (process_is_gone(static_cast<pid_t>(std::stol(std::string(digits))))) {
      ::unlink((dir + "/" + std::string(entry)).c_str());
    }
  }
  ::closedir(d);
}

Expected<AtomicFile, FileError> AtomicFile::create(const std::string& path, mode_t mode) {
  remove_stale_temps(path);
  std::string temp = atomic_temp_path(path, ::getpid());
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) {
    return Unexpected{error_now("cannot create " + temp)};
  }
  // The umask may have narrowed the mode; the caller asked for this one.
  if (::fchmod(fd, mode) != 0) {
    FileError e = error_now("cannot chmod " + temp);
    ::close(fd);
    ::unlink(temp.c_str());
    return Unexpected{e};
  }
  return AtomicFile(path, std::move(temp), fd);
}

AtomicFile::AtomicFile(AtomicFile&& other) noexcept
    : m_path(std::move(other.m_path)),
      m_temp(std::move(other.m_temp)),
      m_fd(std::exchange(other.m_fd, -1)) {}

AtomicFile& AtomicFile::operator=(AtomicFile&& other) noexcept {
  if (this != &other) {
    discard();
    m_path = std::move(other.m_path);
    m_temp = std::move(other.m_temp);
    m_fd = std::exchange(other.m_fd, -1);
  }
  return *this;
}

AtomicFile::~AtomicFile() {
  discard();
}

void AtomicFile::discard() {
  if (m_fd >= 0) {
    ::close(m_fd);
    ::unlink(m_temp.c_str());
    m_fd = -1;
  }
}

std::optional<FileError> AtomicFile::write(std::string_view bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = counted_write(m_fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      return error_now("cannot write " + m_temp);
    }
    done += static_cast<size_t>(n);
  }
  return std::nullopt;
}

std::optional<FileError> AtomicFile::commit() {
  sync_point();
  if (::fsync(m_fd) != 0) {
    FileError e = error_now("cannot fsync " + m_temp);
    discard();
    return e;
  }
  int fd = std::exchange(m_fd, -1);
  if (::close(fd) != 0) {
    FileError e = error_now("cannot close " + m_temp);
    ::unlink(m_temp.c_str());
    return e;
  }
  sync_point();
  if (::rename(m_temp.c_str(), m_path.c_str()) != 0) {
    FileError e = error_now("cannot rename " + m_temp + " to " + m_path);
    ::unlink(m_temp.c_str());
    return e;
  }
  // The new name lives in the directory: without this a power loss may bring the old back.
  std::string dir = directory_of(m_path);
  int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) {
    return error_now("cannot open directory " + dir);
  }
  std::optional<FileError> result;
  sync_point();
  if (::fsync(dir_fd) != 0) {
    result = error_now("cannot fsync directory " + dir);
  }
  ::close(dir_fd);
  return result;
}

std::optional<FileError> write_file_atomically(const std::string& path, std::string_view bytes,
                                               mode_t mode) {
  auto file = AtomicFile::create(path, mode);
  if (!file) {
    return file.error();
  }
  if (auto e = file->write(bytes)) {
    return e;
  }
  return file->commit();
}

}  // namespace keyshift::engine
