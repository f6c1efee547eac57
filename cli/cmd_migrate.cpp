// keyshift migrate plan|apply|status|rollback|report: the whole move as one plan file that is
// run step by step, journaled, resumable and reversible. The work lives in migrate/plan; this
// file maps flags to its options and picks exit codes.
#include "cli/subcommands.hpp"
#include "cli/user_error.hpp"
#include "engine/util/atomic_file.hpp"
#include "migrate/plan/plan_build.hpp"
#include "migrate/plan/plan_report.hpp"
#include "migrate/plan/plan_run.hpp"

#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

namespace keyshift::cli {
namespace {

struct MigrateCliOptions {
  migrate::PlanOptions plan;
  std::string out;
  std::string plan_file;
  migrate::RunOptions run;
  bool json = false;
  std::string format = "text";
  std::string report_out;
};

void print(const std::string& text) {
  std::fputs(text.c_str(), stdout);
  std::fflush(stdout);
}

std::string self_path() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("keyshift") : p.string();
}

migrate::MigrationPlan load_plan(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    throw UserError(fmt::format("keyshift: migrate: {}: cannot be read", file), 2);
  }
  std::ostringstream text;
  text << in.rdbuf();
  auto plan = migrate::parse_plan_toml(text.str(), file);
  if (!plan) {
    throw UserError("keyshift: migrate: " + plan.error(), 2);
  }
  return *plan;
}

void run_plan(MigrateCliOptions& o) {
  o.plan.keyshift = self_path();
  auto plan = migrate::make_plan(o.plan);
  if (!plan) {
    throw UserError("keyshift: migrate plan: " + plan.error(), 2);
  }
  std::string text = migrate::render_plan_toml(*plan);
  if (o.out.empty()) {
    print(text);
  } else if (auto error = engine::write_file_atomically(o.out, text, 0600)) {
    throw UserError(fmt::format("keyshift: migrate plan: {}: {}", o.out, error->message()), 2);
  } else {
    print(fmt::format("wrote {} ({} steps, {} strategy)\n", o.out, plan->steps.size(),
                      plan->strategy));
  }
  bool failed = false;
  for (const migrate::PreflightCheck& p : plan->preflight) {
    fmt::print(stderr, "preflight {:<14} {:<4} {}\n", p.name, p.verdict, p.detail);
    failed = failed || p.verdict == "fail";
  }
  if (failed) {
    throw UserError("keyshift: migrate plan: a preflight check failed (see above)", 1);
  }
}

migrate::Journal load_journal(const migrate::MigrationPlan& plan, const MigrateCliOptions& o) {
  auto journal = migrate::read_journal(migrate::state_dir_of(plan, o.run));
  if (!journal) {
    throw UserError("keyshift: migrate: " + journal.error(), 2);
  }
  return *journal;
}

void run_steps(MigrateCliOptions& o, bool rollback) {
  migrate::MigrationPlan plan = load_plan(o.plan_file);
  o.run.plan_file = o.plan_file;
  bool json = o.format == "json";
  if (json) {
    o.run.print = nullptr;  // stdout carries the one object only
  } else {
    o.run.print = [](const std::string& line) { print(line + (line.ends_with('\n') ? "" : "\n")); };
  }
  if (const char* step = std::getenv("KEYSHIFT_TEST_KILL_AT_STEP")) {
    o.run.kill_at_step = step;
  }
  migrate::RunResult r =
      rollback ? migrate::rollback_migration(plan, o.run) : migrate::apply_migration(plan, o.run);
  std::string_view action = rollback ? "rollback" : "apply";
  if (json) {
    print(migrate::render_run_json(plan, load_journal(plan, o), r, action, o.run.check));
  }
  if (!r.ok) {
    throw UserError(fmt::format("keyshift: migrate {}: {}", action, r.error), 1);
  }
  if (json) {
    return;
  }
  if (rollback) {
    print(fmt::format("{} {} step(s)\n", o.run.check ? "would undo" : "undid", r.undone.size()));
  } else {
    print(fmt::format("{} {} step(s), {} already done\n", o.run.check ? "would run" : "ran",
                      r.ran.size(), r.skipped.size()));
  }
}

}  // namespace

void add_migrate(CLI::App& app) {
  CLI::App* m = app.add_subcommand(
      "migrate", "Move a Redis server to Valkey or keyshift as one resumable, reversible plan");
  m->require_subcommand(1);
  m->footer(
      "Usage:\n"
      "  keyshift migrate plan --from URL [--to keyshift|valkey-server] [--strategy "
      "snapshot|replica]\n"
      "       [--service-manager systemd|command --source-start CMD ...] [--apps PATH...] --out "
      "PLAN.toml\n"
      "  keyshift migrate apply PLAN [--state-dir D] [--step NAME] [--until NAME] [--check] "
      "[--diff]\n"
      "       [--format text|json]\n"
      "  keyshift migrate status PLAN [--json | --format text|json]\n"
      "  keyshift migrate rollback PLAN [--check] [--format text|json]\n"
      "  keyshift migrate report PLAN [--format text|markdown|html] [--out FILE]\n"
      "See man keyshift-migrate and keyshift-migrate-plan(5).\n");
  auto o = std::make_shared<MigrateCliOptions>();

  CLI::App* plan = m->add_subcommand("plan", "Discover the source and write a migration plan");
  plan->add_option("--from", o->plan.from, "The running source: unix:///path or redis://host:port")
      ->required();
  plan->add_option("--to", o->plan.to, "keyshift (this binary's serve) or valkey-server")
      ->check(CLI::IsMember({"keyshift", "valkey-server"}));
  plan->add_option("--target-binary", o->plan.target_binary, "valkey-server's path");
  plan->add_option("--strategy", o->plan.strategy,
                   "snapshot (SAVE, stop, convert, start) or replica (the target follows the "
                   "source live, cut over at lag 0 under CLIENT PAUSE WRITE)")
      ->check(CLI::IsMember({"snapshot", "replica"}));
  plan->add_option("--service-manager", o->plan.service_manager,
                   "systemd (systemctl and the packages' units) or command (the commands below)")
      ->check(CLI::IsMember({"systemd", "command"}));
  plan->add_option("--source-start", o->plan.source_start, "Shell command starting the source");
  plan->add_option("--source-stop", o->plan.source_stop, "Shell command stopping the source");
  plan->add_option("--target-start", o->plan.target_start, "Shell command starting the target");
  plan->add_option("--target-stop", o->plan.target_stop, "Shell command stopping the target");
  plan->add_option("--source-config", o->plan.source_config,
                   "The source's config file (default: INFO server's config_file)");
  plan->add_option("--target-config", o->plan.target_config,
                   "Where the target's config goes (default: redis -> valkey in the path)");
  plan->add_option("--target-socket", o->plan.target_socket, "The target's unix socket");
  plan->add_option("--target-dir", o->plan.target_dir, "The target's data directory");
  plan->add_option("--target-port", o->plan.target_port,
                   "The target's TCP port (replica: default 0, none, since both run at once; "
                   "snapshot: default the source's)")
      ->check(CLI::Range(0, 65535));
  plan->add_option("--layout", o->plan.layout, "debian, rhel or custom (rewrite server)");
  plan->add_option("--map-path", o->plan.map_paths, "More /FROM=/TO moves for rewrite server");
  plan->add_option("--apps", o->plan.apps, "Application files or directories to repoint")
      ->expected(1, -1);
  plan->add_option("--apps-profile", o->plan.apps_profile, "rewrite apps --profile");
  plan->add_option("--state-dir", o->plan.state_dir,
                   "Journal, backups and reports (default /var/lib/keyshift/migrate)");
  plan->add_option("--bench-requests", o->plan.bench_requests,
                   "Requests per bench test before and after (0: no benches; default 2000)")
      ->check(CLI::NonNegativeNumber);
  plan->add_option("--web-user", o->plan.web_user,
                   "The web server's user, who must reach the target's socket (default www-data)");
  plan->add_option("--out", o->out, "Write the plan here (mode 0600) instead of stdout");
  plan->callback([o]() { run_plan(*o); });

  auto add_plan_file = [&](CLI::App* sub) {
    sub->add_option("plan", o->plan_file, "The plan file")->required();
    sub->add_option("--state-dir", o->run.state_dir,
                    "The journal's directory (default: the plan's)");
  };
  auto add_format = [&](CLI::App* sub) {
    sub->add_option("--format", o->format, "text, or json (one object: changed, failed, msg, ...)")
        ->check(CLI::IsMember({"text", "json"}));
  };
  CLI::App* apply = m->add_subcommand("apply", "Run the plan's steps not done yet");
  add_plan_file(apply);
  apply->add_option("--step", o->run.step, "Run only this step");
  apply->add_option("--until", o->run.until, "Stop after this step");
  apply->add_flag("--check", o->run.check, "Say what would run; change nothing");
  apply->add_flag("--diff", o->run.diff, "With --check: the file diffs of the rewrite steps");
  add_format(apply);
  apply->callback([o]() { run_steps(*o, false); });

  CLI::App* rollback = m->add_subcommand("rollback", "Undo every done step, newest first");
  add_plan_file(rollback);
  rollback->add_flag("--check", o->run.check, "Say what would be undone; change nothing");
  add_format(rollback);
  rollback->callback([o]() { run_steps(*o, true); });

  CLI::App* status = m->add_subcommand("status", "Show each step's state");
  add_plan_file(status);
  status->add_flag("--json", o->json, "Same as --format json");
  add_format(status);
  status->callback([o]() {
    migrate::MigrationPlan p = load_plan(o->plan_file);
    migrate::Journal journal = load_journal(p, *o);
    print(migrate::render_status(p, journal, o->json || o->format == "json",
                                 migrate::follow_lag(p, journal)));
  });

  CLI::App* report = m->add_subcommand("report", "Report what the migration did, with proof");
  add_plan_file(report);
  report->add_option("--format", o->format, "text, markdown or html")
      ->check(CLI::IsMember({"text", "markdown", "html"}));
  report->add_option("--out", o->report_out, "Write the report to this file (atomically)");
  report->callback([o]() {
    migrate::MigrationPlan p = load_plan(o->plan_file);
    std::string text =
        migrate::render_migration_report(p, load_journal(p, *o), migrate::state_dir_of(p, o->run),
                                         *migrate::parse_report_format(o->format));
    if (o->report_out.empty()) {
      print(text);
    } else if (auto error = engine::write_file_atomically(o->report_out, text)) {
      throw UserError(
          fmt::format("keyshift: migrate report: {}: {}", o->report_out, error->message()), 2);
    }
  });
}

}  // namespace keyshift::cli
