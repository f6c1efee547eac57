#pragma once

#include "engine/util/expected.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

// keyshift-migrate-plan(5): a migration as a list of steps, each saying what it does, why,
// how its success is checked and how it is undone. `migrate plan` writes one, `migrate apply`
// runs it; the file is the whole contract between the two, so an operator can read and edit it.
namespace keyshift::migrate {

/// What an action does; every step's run, check, skip test and undo is a list of these.
enum class ActionKind {
  exec,           ///< argv run directly; exit 0 is success (stdout to `path` when set)
  shell,          ///< argv[0] run by /bin/sh -c (service commands given on the command line)
  call,           ///< argv sent as one command to `endpoint`; an error reply fails
  wait_up,        ///< `endpoint` answers PING within `timeout_s`
  wait_down,      ///< `endpoint` stops accepting connections within `timeout_s`
  file_exists,    ///< `path` exists
  rollback_runs,  ///< every rewrite run under the directory `path` rolled back, newest first
  remove_file,    ///< `path` removed (no error when absent)
  make_dir,       ///< the directory `path` made with its parents
  /// `endpoint`, a replica, has applied the stream of `peer`, its primary, to within `max_lag`
  /// bytes (the primary's master_repl_offset read first) within `timeout_s`
  wait_synced,
};

/// One thing a step does or tests.
struct PlanAction {
  ActionKind kind = ActionKind::exec;
  std::vector<std::string> argv;
  std::string endpoint;  ///< server URL (call, wait_up, wait_down; the `when` test)
  std::string path;      ///< file or directory (exec's stdout, file_exists, ...)
  int timeout_s = 60;
  std::string peer;     ///< wait_synced: the primary's URL
  int64_t max_lag = 0;  ///< wait_synced: bytes the replica may be behind
  /// "" always; "endpoint_up" / "endpoint_down": only when `endpoint` is (not) answering, so
  /// a start or stop given as a plain command is not run twice.
  std::string when;
};

/// One step of the plan.
struct PlanStep {
  std::string name;   ///< unique; what --step/--until and the journal name
  std::string stage;  ///< a failed check undoes the steps of its stage done so far
  std::string what;
  std::string why;
  std::vector<PlanAction> run;
  std::vector<PlanAction> check;    ///< all must pass after `run`
  std::vector<PlanAction> done_if;  ///< when all pass before `run`, the step is already done
  std::vector<PlanAction> undo;
};

/// A preflight finding recorded when the plan was made.
struct PreflightCheck {
  std::string name;
  std::string verdict;  ///< "ok", "warn" or "fail"
  std::string detail;
};

/// One side of the move as discovered.
struct PlanServer {
  std::string kind;         ///< "redis-server", "keyshift", "valkey-server"
  std::string version;      ///< from INFO server, or the binary's --version
  std::string url;          ///< how apply reaches it (unix:// preferred)
  std::string tcp_url;      ///< its TCP address, when it has one
  std::string config_file;  ///< the config it runs with
  std::string data_file;    ///< dir + dbfilename
  std::string unix_socket;
  int port = 0;
  std::string start;  ///< service start command (command mode) or unit
  std::string stop;
};

/// The whole plan.
struct MigrationPlan {
  int format = 1;
  std::string created;
  std::string keyshift;  ///< the binary steps run (`keyshift rewrite ...`)
  std::string strategy;  ///< "snapshot" or "replica"
  std::string strategy_why;
  std::string service_manager;  ///< "systemd" or "command"
  std::string state_dir;        ///< default journal and backup directory
  PlanServer source;
  PlanServer target;
  std::vector<std::string> apps;
  std::vector<PreflightCheck> preflight;
  std::vector<PlanStep> steps;

  /// The step named `name`, or nullptr.
  const PlanStep* find(std::string_view name) const;
};

/// The current format number written in the header.
inline constexpr int k_plan_format = 1;

/// The plan as TOML, in step order, with comments an operator can follow.
std::string render_plan_toml(const MigrationPlan& plan);

/// Reads a plan; the error names `file`, the line and the member.
engine::Expected<MigrationPlan, std::string> parse_plan_toml(std::string_view text,
                                                             const std::string& file);

/// `text` as a TOML basic string (double quotes; quotes, backslashes and control bytes escaped).
std::string toml_quote(std::string_view text);

/// The name of an action kind as the TOML writes it.
std::string_view action_kind_name(ActionKind kind);

/// One line saying what an action does, for --check output and status.
std::string describe_action(const PlanAction& action);

}  // namespace keyshift::migrate
