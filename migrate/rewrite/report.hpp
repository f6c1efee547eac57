#pragma once

#include "migrate/rewrite/plan.hpp"

#include <optional>
#include <string>
#include <vector>

// The result of a rewrite run as people read it (diffs and a change table) and as Ansible
// reads it (one JSON object: changed, failed, msg, diff, warnings, backup_dir, rc). Secrets
// are redacted in both.
namespace keyshift::migrate {

/// Everything a run reports.
struct RewriteReport {
  const RewritePlan* plan = nullptr;
  bool check_mode = true;  ///< nothing was written
  bool changed = false;    ///< something changed or would change
  bool failed = false;
  std::string msg;
  std::vector<std::string> warnings;  ///< plan warnings and run notes
  std::string backup_dir;             ///< the run directory, when files were written
  std::vector<std::string> written;
  int rc = 0;
  std::string extra_json;  ///< more members, already JSON ("\"key\": value, ..."), or empty
};

/// Unified diffs of every changed file, then the change table, warnings and `msg`.
std::string render_rewrite_text(const RewriteReport& report, bool show_diff);

/// One JSON object, newline-terminated.
std::string render_rewrite_json(const RewriteReport& report);

}  // namespace keyshift::migrate
