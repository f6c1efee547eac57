#pragma once

#include "engine/util/expected.hpp"
#include "engine/util/file_error.hpp"

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>

// Replacing a file so that a crash at any point leaves either the old file or the new one,
// never half of either: the bytes go to a temporary file in the same directory (a rename
// is only atomic within one file system), which is fsync'ed, renamed over the target, and
// then the directory is fsync'ed so the rename itself survives a power loss.
namespace keyshift::engine {

/// The temporary file a writer with process id `writer` uses for `path`: hidden (so a glob
/// such as `include *.conf` never picks it up) and named after the writer, so a parent can
/// remove the file of a child it killed.
std::string atomic_temp_path(const std::string& path, pid_t writer);

/// Removes the temporary files of `path` left by writers that no longer run (a crash or a
/// kill -9 in the middle of a write); those of living processes are theirs and stay.
void remove_stale_temps(const std::string& path);

/// Whether process `pid` is gone (so a file named after it is nobody's).
bool process_is_gone(pid_t pid);

/// A new version of a file being written beside it. Nothing is visible at the target path
/// until commit(); destroyed without a successful commit, the temporary file is removed.
class AtomicFile {
 public:
  /// Creates the temporary file for `path` (its directory must exist) with `mode`, after
  /// removing the stale temporary files of `path` a killed writer left.
  static Expected<AtomicFile, FileError> create(const std::string& path, mode_t mode = 0644);

  AtomicFile(AtomicFile&& other) noexcept;
  AtomicFile& operator=(AtomicFile&& other) noexcept;
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  ~AtomicFile();

  /// The temporary file's descriptor, for writers that stream or set an owner themselves.
  int fd() const { return m_fd; }
  /// The temporary file's path.
  const std::string& temp_path() const { return m_temp; }

  /// Appends all of `bytes`, retrying short and interrupted writes.
  std::optional<FileError> write(std::string_view bytes);
  /// fsync, close, rename over the target, fsync the directory. After a failure before the
  /// rename the target is untouched and the temporary file is gone.
  std::optional<FileError> commit();

 private:
  AtomicFile(std::string path, std::string temp, int fd)
      : m_path(std::move(path)), m_temp(std::move(temp)), m_fd(fd) {}
  void discard();

  std::string m_path;
  std::string m_temp;
  int m_fd = -1;
};

/// Replaces `path` with `bytes` through an AtomicFile.
std::optional<FileError> write_file_atomically(const std::string& path, std::string_view bytes,
                                               mode_t mode = 0644);

}  // namespace keyshift::engine
