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
