#pragma once

#include <cstring>
#include <string>

namespace keyshift::engine {

/// Why a file operation failed: what was being done (or the file), and the reason.
struct FileError {
  std::string what;      ///< e.g. "cannot rename /srv/.a.conf.tmp-12 to /srv/a.conf"
  int error_number = 0;  ///< errno; 0 when `detail` says why instead
  std::string detail;    ///< the reason when it is not a system error

  /// The reason alone: strerror(error_number), or `detail`.
  std::string reason() const { return error_number != 0 ? std::strerror(error_number) : detail; }
  /// "what: reason".
  std::string message() const { return what + ": " + reason(); }
};

}  // namespace keyshift::engine
