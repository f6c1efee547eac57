#pragma once

#include "migrate/rewrite/plan.hpp"

#include <chrono>
#include <optional>
#include <string>
#include <vector>

// Checking rewritten files with the real programs that will read them: the target server
// (`keyshift serve --test-config`, or a throw-away start of a target binary), `nginx -t` and
// `php -l`.
namespace keyshift::migrate {

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

/// The full path of `program` on PATH, or empty.
std::string find_program(const std::string& program);

/// Which programs check which files.
struct Validators {
  std::string keyshift;  ///< this binary, for server configs of target keyshift
  bool server_is_keyshift = false;
  std::string server_binary;  ///< a target binary (--probe BINARY) to dry-start server configs
  std::string nginx = "nginx";
  std::string php = "php";
  std::string python = "/usr/bin/python3";
  std::string ruby = "ruby";
};

/// Checks the file at `path` (which holds `file.after`); returns why it is bad, or nothing.
/// A checker that is not installed adds a note to `notes` and passes.
std::optional<std::string> validate_file(const PlannedFile& file, const std::string& path,
                                         const Validators& validators,
                                         std::vector<std::string>& notes);

/// Writes each changed file's `after` to a temp directory and validates the copies (for dry
/// runs); returns "path: why" for each failure.
std::vector<std::string> validate_copies(const RewritePlan& plan, const Validators& validators,
                                         std::vector<std::string>& notes);

}  // namespace keyshift::migrate
