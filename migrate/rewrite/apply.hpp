#pragma once

#include "migrate/rewrite/plan.hpp"

#include <functional>
#include <optional>
#include <string>
#include <vector>

// Writing a plan safely: every file backed up into a run directory with a manifest first,
// then written atomically (temp file, same owner and mode, rename), then validated; a failed
// validation puts every file back. `rollback_run` undoes a run from its manifest.
namespace keyshift::migrate {

/// Checks one written file in place; returns why it is bad, or nothing.
using FileValidator = std::function<std::optional<std::string>(const PlannedFile& file)>;

/// Where backups go and who owns new files.
struct ApplyOptions {
  std::string backup_root;  ///< run directories are made under it
  std::string run_name;     ///< e.g. "rewrite-20261130T172400Z"; made unique under the root
  FileValidator validate;   ///< may be empty
};

/// What an apply did.
struct ApplyResult {
  bool ok = true;
  std::string error;    ///< why it failed (files restored)
  std::string run_dir;  ///< empty when nothing needed writing
  std::vector<std::string> written;
  std::vector<std::string> warnings;
};

/// Backs up and writes every changed file of `plan`; nothing is written when nothing changed.
ApplyResult apply_plan(const RewritePlan& plan, const ApplyOptions& options);

/// What a rollback did or would do.
struct RollbackResult {
  bool ok = true;
  std::string error;
  std::vector<std::string> restored;      ///< files put back (or removed, when the run made them)
  std::vector<std::string> unchanged;     ///< files already as they were before the run
  std::vector<std::string> removed_dirs;  ///< directories the run created, removed (or to be)
  std::vector<std::string> warnings;
  RewritePlan plan;  ///< the same as a plan, for diffs and the report
};

/// Restores the files of the run in `run_dir` from its manifest and removes the directories
/// the run created (when they hold nothing else). A file changed since the run is left alone
/// and reported unless `force`. With `check`, only plans.
RollbackResult rollback_run(const std::string& run_dir, bool check, bool force);

/// The SHA-1 of `bytes` in hex (the manifest's fingerprint of a file's contents).
std::string content_hash(std::string_view bytes);

/// The manifest file's name inside a run directory.
inline constexpr std::string_view k_manifest_name = "manifest.toml";

}  // namespace keyshift::migrate
