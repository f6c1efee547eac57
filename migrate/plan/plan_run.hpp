#pragma once

#include "migrate/plan/plan_model.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

// Running a migration plan: each step journaled in the state directory (the whole journal
// rewritten through a temp file, fsync and rename after every change), so a run killed at any
// point goes on from the first step not done; a failed run or check undoes the steps of its
// stage; rollback undoes every done step, newest first.
namespace keyshift::migrate {

/// A step's state in the journal.
enum class StepState { pending, running, done, failed, undone };

/// One step as the journal knows it.
struct JournalEntry {
  std::string name;
  StepState state = StepState::pending;
  int64_t started_ms = 0;  ///< Unix time in ms of the last start
  int64_t finished_ms = 0;
  std::string message;  ///< why it failed, or "already done"
};

/// The journal of one plan's runs.
struct Journal {
  std::string plan_file;
  std::string plan_sha1;
  std::vector<JournalEntry> steps;

  /// The entry of `name`, added as pending when missing.
  JournalEntry& entry(const std::string& name);
  /// The entry of `name`, or nullptr.
  const JournalEntry* find(const std::string& name) const;
};

/// Where a run's journal and files go, and what it does.
struct RunOptions {
  std::string plan_file;
  std::string state_dir;  ///< empty: the plan's state_dir
  std::string step;       ///< only this step
  std::string until;      ///< stop after this step
  bool check = false;     ///< say what would run, change nothing
  bool diff = false;      ///< with check: the file diffs of rewrite steps (their dry runs)
  std::function<void(const std::string&)> print;  ///< progress lines
  /// Test-only (KEYSHIFT_TEST_KILL_AT_STEP): "NAME" makes apply SIGKILL itself right after
  /// journaling step NAME as running, "NAME/ran" once its run list succeeded (before its check
  /// and the journal's done), so tests can crash a run inside every step without a race.
  std::string kill_at_step;
};

/// One rewrite step's dry-run diff (apply --check --diff).
struct StepDiff {
  std::string step;
  std::string diff;
};

/// What a run did.
struct RunResult {
  bool ok = true;
  std::string error;
  std::vector<std::string> ran;      ///< steps run (or, with check, that would run)
  std::vector<std::string> skipped;  ///< already done
  std::vector<std::string> undone;
  std::vector<StepDiff> diffs;
};

/// The state directory a run uses for `plan`.
std::string state_dir_of(const MigrationPlan& plan, const RunOptions& options);

/// Reads the journal in `state_dir` (empty when there is none); the error names the file.
engine::Expected<Journal, std::string> read_journal(const std::string& state_dir);

/// Runs the plan's steps not yet done (migrate apply).
RunResult apply_migration(const MigrationPlan& plan, const RunOptions& options);

/// Undoes every done step, newest first (migrate rollback); with check, only says so.
RunResult rollback_migration(const MigrationPlan& plan, const RunOptions& options);

/// The name of a step state as the journal writes it.
std::string_view step_state_name(StepState state);

/// The text or JSON of `migrate status`; `lag` is follow_lag's answer.
std::string render_status(const MigrationPlan& plan, const Journal& journal, bool json,
                          std::optional<int64_t> lag = std::nullopt);

/// Bytes the target is behind the source while a replica plan has it following by REPLICAOF
/// (follow-source done, promote-target not); nullopt otherwise or when either cannot be asked.
std::optional<int64_t> follow_lag(const MigrationPlan& plan, const Journal& journal);

/// `migrate apply|rollback --format json`: one object an Ansible module can hand back as is
/// (changed, failed, msg, the run's step lists, every step's journal state, the diffs).
std::string render_run_json(const MigrationPlan& plan, const Journal& journal,
                            const RunResult& result, std::string_view action, bool check);

/// The journal file's name inside the state directory.
inline constexpr std::string_view k_journal_name = "journal.toml";

}  // namespace keyshift::migrate
