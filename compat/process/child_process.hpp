#pragma once

#include <chrono>
#include <string>
#include <vector>

// Running other programs: checkers (nginx -t, php -l) that run to completion, and the
// pieces ServerProcess starts servers with.
namespace keyshift::compat {

/// The output and exit status of a finished program.
struct ProcessResult {
  int status = -1;     ///< exit code; -1 when it could not run or was killed
  std::string output;  ///< stdout and stderr, interleaved
  bool timed_out = false;
};

/// Runs `argv` (argv[0] looked up in PATH) with stdin closed and waits at most `timeout`.
ProcessResult run_process(const std::vector<std::string>& argv,
                          std::chrono::milliseconds timeout = std::chrono::seconds(30));

/// A fresh directory under the system temp dir, removed with everything in it when this
/// goes out of scope; `path()` is empty when it could not be made.
class ScratchDir {
 public:
  /// Makes `<tmp>/<prefix>XXXXXX`.
  explicit ScratchDir(const std::string& prefix);
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  /// The directory, or empty.
  const std::string& path() const { return m_path; }

 private:
  std::string m_path;
};

/// In a forked child: stdin from /dev/null, stdout and stderr to `output_fd`, then
/// `program` with `argv` (argv[0] included); exits 127 when it cannot be run.
[[noreturn]] void exec_child(const std::string& program, const std::vector<std::string>& argv,
                             int output_fd);

/// The full path of `program` on PATH, or `program` itself when it has a slash and can be
/// run; empty when not found.
std::string find_program(const std::string& program);

}  // namespace keyshift::compat
