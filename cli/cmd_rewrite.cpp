// keyshift rewrite server|apps|rollback: move redis.conf and application settings to the
// target server, as a dry run by default. Planning, finding the files, writing and reporting
// live in migrate/rewrite; this file maps flags and picks the exit code.
#include "cli/subcommands.hpp"
#include "cli/user_error.hpp"
#include "compat/report/json_text.hpp"
#include "engine/resp/server_url.hpp"
#include "engine/server/config_file.hpp"
#include "migrate/rewrite/apply.hpp"
#include "migrate/rewrite/apps_inputs.hpp"
#include "migrate/rewrite/apps_rewrite.hpp"
#include "migrate/rewrite/layout.hpp"
#include "migrate/rewrite/probe.hpp"
#include "migrate/rewrite/report.hpp"
#include "migrate/rewrite/server_rewrite.hpp"
#include "migrate/rewrite/target_table.hpp"
#include "migrate/rewrite/validate.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace keyshift::cli {
namespace {

namespace fs = std::filesystem;

/// Where run directories go unless --backup-dir says otherwise.
constexpr std::string_view k_default_backup_root = "/var/backups/keyshift";
struct CommonOptions {
  bool apply = false;
  bool check = false;
  std::string format = "text";
  bool detailed_exitcode = false;
  std::string backup_dir = std::string(k_default_backup_root);
  bool no_validate = false;
};

struct ServerOptions {
  CommonOptions common;
  std::string source;
  std::string out;
  std::string target;
  std::string layout;
  std::vector<std::string> map_paths;
  std::string socket;
  int port = -1;  ///< --port; -1: the source's
  std::string table;
  std::string probe;
};

struct AppsOptions {
  CommonOptions common;
  std::vector<std::string> paths;
  std::string profile = "generic";
  std::string server_config;
  std::string server_out;
  std::string layout = "debian";
  std::string socket;
  std::vector<std::string> from_sockets;
  std::string to_socket;
  std::string from_url;
  std::string to_url;
  bool check_prefixes = false;
  bool fix_prefixes = false;
  std::string rename_keys;
};

struct RollbackOptions {
  CommonOptions common;
  std::string run_dir;
  bool force = false;
};

std::string self_path() {
  std::error_code ec;
  fs::path p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("keyshift") : p.string();
}

std::string run_name() {
  std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  ::gmtime_r(&now, &utc);
  char buffer[32];
  std::strftime(buffer, sizeof(buffer), "rewrite-%Y%m%dT%H%M%SZ", &utc);
  return buffer;
}

bool writes(const CommonOptions& o) {
  return o.apply && !o.check;
}

/// Prints the report and leaves with the exit code the contract promises.
void finish(const CommonOptions& o, migrate::RewriteReport& report) {
  if (report.failed) {
    report.rc = 1;
  } else if (o.detailed_exitcode && report.changed) {
    report.rc = 2;
  } else {
    report.rc = 0;
  }
  std::string out = o.format == "json" ? migrate::render_rewrite_json(report)
                                       : migrate::render_rewrite_text(report, true);
  std::fputs(out.c_str(), report.failed && o.format != "json" ? stderr : stdout);
  std::fflush(stdout);
  if (report.rc != 0) {
    throw UserError("", report.rc);
  }
}

/// A failure before any plan exists: JSON callers still get one object.
[[noreturn]] void fail_early(const CommonOptions& o, const std::string& message) {
  if (o.format == "json") {
    migrate::RewritePlan empty;
    migrate::RewriteReport report;
    report.plan = &empty;
    report.failed = true;
    report.check_mode = !writes(o);
    report.msg = message;
    report.rc = 1;
    std::fputs(migrate::render_rewrite_json(report).c_str(), stdout);
    std::fflush(stdout);
    throw UserError("", 1);
  }
  throw UserError("keyshift: " + message, 1);
}

migrate::TargetCatalog load_catalog(const CommonOptions& o, const std::string& table) {
  std::string text;
  std::string source = "built-in targets table";
  if (!table.empty()) {
    std::ifstream in(table, std::ios::binary);
    if (!in) {
      fail_early(o, fmt::format("--table {}: cannot read the file", table));
    }
    std::ostringstream buffer;
    buffer << in.rdbuf();
    text = buffer.str();
    source = table;
  } else {
    text = std::string(migrate::builtin_target_toml());
  }
  auto catalog = migrate::parse_target_catalog(text, source);
  if (!catalog) {
    fail_early(o, catalog.error());
  }
  return std::move(*catalog);
}

std::vector<std::pair<std::string, std::string>> parse_maps(const std::vector<std::string>& maps) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const std::string& m : maps) {
    size_t eq = m.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == m.size() || m[0] != '/' ||
        m[eq + 1] != '/') {
      throw UserError(fmt::format("keyshift: --map-path {}: expected /FROM=/TO", m), 2);
    }
    out.emplace_back(m.substr(0, eq), m.substr(eq + 1));
  }
  return out;
}

/// Runs the plan through validation and, with --apply, writes it; fills the report.
void execute(const CommonOptions& o, const migrate::RewritePlan& plan,
             const migrate::Validators& validators, migrate::RewriteReport& report) {
  report.plan = &plan;
  report.check_mode = !writes(o);
  report.changed = plan.changed();
  report.warnings.insert(report.warnings.end(), plan.warnings.begin(), plan.warnings.end());
  size_t count = 0;
  for (const auto& f : plan.files) {
    count += f.changed() ? 1 : 0;
  }
  if (!report.failed && !o.no_validate && !writes(o)) {
    std::vector<std::string> failures = migrate::validate_copies(plan, validators, report.warnings);
    if (!failures.empty()) {
      report.failed = true;
      report.msg = fmt::format("validation failed: {}", fmt::join(failures, "; "));
      return;
    }
  }
  if (report.failed) {
    return;
  }
  if (!writes(o)) {
    report.msg = count == 0
                     ? "nothing to change"
                     : fmt::format("{} file(s) would change (dry run; --apply writes)", count);
    return;
  }
  migrate::ApplyOptions options;
  options.backup_root = o.backup_dir;
  options.run_name = run_name();
  if (!o.no_validate) {
    options.validate = [&validators, &report](const migrate::PlannedFile& file) {
      return migrate::validate_file(file, file.path, validators, report.warnings);
    };
  }
  migrate::ApplyResult applied = migrate::apply_plan(plan, options);
  report.warnings.insert(report.warnings.end(), applied.warnings.begin(), applied.warnings.end());
  report.written = applied.written;
  report.backup_dir = applied.run_dir;
  if (!applied.ok) {
    report.failed = true;
    report.msg = applied.error;
    return;
  }
  report.msg = count == 0 ? "nothing to change: already rewritten"
                          : fmt::format("{} file(s) changed", count);
}

// --- server ---

void run_server(const ServerOptions& o) {
  migrate::TargetCatalog catalog = load_catalog(o.common, o.table);
  const migrate::TargetTable* target = catalog.find(o.target);
  if (target == nullptr) {
    throw UserError(fmt::format("keyshift: --target {}: unknown; known: {}", o.target,
                                fmt::join(catalog.names(), ", ")),
                    2);
  }
  migrate::ServerRewriteOptions options;
  options.source = o.source;
  options.out = o.out;
  if (!o.layout.empty()) {
    options.layout = migrate::parse_layout(o.layout);
  }
  options.path_maps = parse_maps(o.map_paths);
  options.socket = o.socket;
  if (o.port >= 0) {
    options.port = o.port;
  }
  std::optional<migrate::ProbeResult> probed;
  if (!o.probe.empty()) {
    auto result = migrate::is_probe_url(o.probe) ? migrate::probe_url(o.probe)
                                                 : migrate::probe_binary(o.probe);
    if (!result) {
      fail_early(o.common, fmt::format("--probe {}: {}", o.probe, result.error()));
    }
    probed = std::move(*result);
    options.probed = probed->directives;
    options.probed_commands = probed->commands;
  }
  engine::RealConfigFilesystem filesystem;
  auto rewritten = migrate::rewrite_server_config(filesystem, options, *target, catalog.redis);
  if (!rewritten) {
    fail_early(o.common, migrate::rewrite_failure_text(rewritten.error()));
  }
  migrate::RewriteReport report;
  report.plan = &rewritten->plan;
  if (!rewritten->plan.files.empty() &&
      rewritten->plan.files.front().path == rewritten->plan.files.front().source) {
    report.warnings.push_back(fmt::format(
        "{} is rewritten in place: the {} layout has no other path for it (--out names one)",
        o.source, migrate::layout_name(rewritten->layout)));
  }
  bool keyshift_target = target->server == "keyshift";
  if (keyshift_target) {
    // Loaded in memory from the planned files, so a dry run checks what --apply would write.
    std::vector<std::string> engine_warnings;
    const std::string& main = rewritten->plan.files.front().path;
    if (auto error = migrate::check_with_engine(rewritten->plan, main,
                                                filesystem.current_directory(), engine_warnings)) {
      report.failed = true;
      report.msg = fmt::format("keyshift serve would refuse the result: {}", *error);
    }
    // Directives keyshift serve refuses are errors of the engine's loader itself, so they
    // fail above with their file and line.
    for (const std::string& w : engine_warnings) {
      report.warnings.push_back("keyshift serve: " + w);
    }
  } else if (!o.common.no_validate && o.probe.empty()) {
    report.warnings.push_back(fmt::format(
        "the result was checked against the {} table only; --probe BINARY also starts the "
        "target with it",
        target->name));
  }
  migrate::Validators validators;
  validators.keyshift = self_path();
  validators.server_is_keyshift = keyshift_target;
  if (probed && !migrate::is_probe_url(o.probe)) {
    validators.server_binary = o.probe;
  }
  if (probed) {
    report.warnings.push_back(fmt::format(
        "probed {} ({}): {} directives, {} commands; accepted = the table plus what it listed",
        o.probe, probed->server, probed->directives.size(), probed->commands.size()));
  }
  execute(o.common, rewritten->plan, validators, report);
  std::string extra = "\"target\": ";
  compat::append_json_string(extra, target->name);
  extra += ", \"layout\": ";
  compat::append_json_string(extra, migrate::layout_name(rewritten->layout));
  extra += ", \"socket\": {\"before\": ";
  compat::append_json_bytes(extra, rewritten->before.address.unix_path);
  extra += ", \"after\": ";
  compat::append_json_bytes(extra, rewritten->after.address.unix_path);
  extra += "}";
  if (probed) {
    extra += ", \"probe\": {\"server\": ";
    compat::append_json_bytes(extra, probed->server);
    extra += fmt::format(", \"directives\": {}, \"commands\": {}}}", probed->directives.size(),
                         probed->commands.size());
  }
  report.extra_json = extra;
  finish(o.common, report);
}

// --- apps ---

/// Parses --from-url/--to-url (see migrate::parse_endpoint_url).
migrate::KnownEndpoint parse_endpoint(const std::string& flag, const std::string& text) {
  auto e = migrate::parse_endpoint_url(text);
  if (!e) {
    throw UserError(fmt::format("keyshift: {} {}: expected redis://[:PASSWORD@]HOST:PORT[/DB], "
                                "HOST:PORT, unix:///PATH[?db=N&password=P] or /PATH",
                                flag, text),
                    2);
  }
  return *e;
}

/// The mapping a run used, for scripts: endpoints, whether a password changes (never the
/// password itself) and the database move.
std::string mapping_json(const migrate::AppsRewriteOptions& options) {
  auto endpoint = [](const migrate::KnownEndpoint& e) {
    std::string out;
    if (e.empty()) {
      return std::string("null");
    }
    compat::append_json_bytes(out, engine::render_endpoint(e.address));
    return out;
  };
  std::string out = "\"mapping\": {\"from_sockets\": [";
  for (size_t i = 0; i < options.from_sockets.size(); ++i) {
    out += i == 0 ? "" : ", ";
    compat::append_json_bytes(out, options.from_sockets[i]);
  }
  out += "], \"from\": " + endpoint(options.from) + ", \"to\": " + endpoint(options.to);
  out += ", \"tcp_to\": " + (options.tcp_to ? endpoint(*options.tcp_to) : std::string("null"));
  out += fmt::format(", \"password_changes\": {}", options.to.password() ? "true" : "false");
  out += options.to.db() ? fmt::format(", \"db\": {{\"from\": {}, \"to\": {}}}",
                                       options.from.db().value_or(0), *options.to.db())
                         : std::string(", \"db\": null");
  return out + "}";
}

void run_apps(const AppsOptions& o) {
  const migrate::AppProfile* profile = migrate::find_app_profile(o.profile);
  if (profile == nullptr) {
    throw UserError(fmt::format("keyshift: --profile {}: unknown", o.profile), 2);
  }
  auto layout = migrate::parse_layout(o.layout);
  migrate::PathMapper mapper(layout.value_or(migrate::Layout::debian));
  migrate::AppsRewriteOptions options;
  std::vector<std::string> server_warnings;
  options.fix_prefixes = o.fix_prefixes;
  options.from_sockets = o.from_sockets;
  options.to.address.unix_path = o.to_socket.empty() ? o.socket : o.to_socket;
  if (!o.server_config.empty()) {
    engine::RealConfigFilesystem filesystem;
    auto mapped = migrate::map_server_endpoints(filesystem, load_catalog(o.common, ""),
                                                o.server_config, o.server_out, layout, options);
    if (!mapped) {
      fail_early(o.common, mapped.error());
    }
    server_warnings = std::move(*mapped);
  }
  if (!o.from_url.empty()) {
    migrate::KnownEndpoint from = parse_endpoint("--from-url", o.from_url);
    if (!from.address.unix_path.empty()) {
      options.from_sockets.push_back(from.address.unix_path);
    } else {
      options.from.address.host = from.address.host;
      options.from.address.port = from.address.port;
    }
    if (from.password()) {
      options.from.set_password(from.password());
    }
    if (from.db()) {
      options.from.set_db(from.db());
    }
  }
  if (!o.to_url.empty()) {
    migrate::KnownEndpoint to = parse_endpoint("--to-url", o.to_url);
    if (!to.password()) {
      to.set_password(options.to.password());
    }
    options.to = to;
    options.tcp_to.reset();
  }
  if (options.to.password() && options.to.password()->empty()) {
    throw UserError(
        "keyshift: --to-url: an empty password; apps that send one would fail "
        "AUTH, remove it from them by hand",
        2);
  }
  if (options.from_sockets.empty() && options.from.address.host.empty()) {
    // Every socket path the Redis packages use; they all move to the layout's socket.
    options.from_sockets = {"/run/redis/redis-server.sock", "/var/run/redis/redis-server.sock",
                            "/run/redis/redis.sock", "/var/run/redis/redis.sock"};
  }
  if (options.to.empty()) {
    options.to.address.unix_path = mapper.map(
        layout == migrate::Layout::rhel ? "/run/redis/redis.sock" : "/run/redis/redis-server.sock");
  }
  if (!options.from.address.host.empty() && options.to.empty()) {
    throw UserError("keyshift: --from-url HOST:PORT needs --to-url or --to-socket", 2);
  }
  std::vector<std::string> paths =
      o.paths.empty() ? migrate::default_app_paths(o.profile) : o.paths;
  if (paths.empty()) {
    throw UserError(fmt::format("keyshift: rewrite apps --profile {}: name the files or "
                                "directories to look at",
                                o.profile),
                    2);
  }
  auto names = migrate::find_app_files(paths, !o.paths.empty());
  if (!names) {
    fail_early(o.common, names.error());
  }
  auto files = migrate::read_app_files(*names);
  if (!files) {
    fail_early(o.common, files.error());
  }
  migrate::AppsRewrite rewritten = migrate::rewrite_apps(*files, *profile, options);
  rewritten.plan.warnings.insert(rewritten.plan.warnings.begin(), server_warnings.begin(),
                                 server_warnings.end());
  migrate::RewriteReport report;
  if (o.check_prefixes && !rewritten.collisions.empty() && !o.fix_prefixes) {
    report.failed = true;
    report.msg = fmt::format("{} key prefix collision(s); --fix-prefixes adds the ':'",
                             rewritten.collisions.size());
  }
  if (!o.rename_keys.empty() && !rewritten.renames.empty() && writes(o.common)) {
    std::string lines;
    for (const auto& r : rewritten.renames) {
      std::string line = "{\"db\": " + std::to_string(r.db) + ", \"file\": ";
      compat::append_json_bytes(line, r.file);
      line += ", \"from_prefix\": ";
      compat::append_json_bytes(line, r.from);
      line += ", \"to_prefix\": ";
      compat::append_json_bytes(line, r.to);
      line += ", \"exclude_prefixes\": [";
      for (size_t i = 0; i < r.exclude.size(); ++i) {
        line += i == 0 ? "" : ", ";
        compat::append_json_bytes(line, r.exclude[i]);
      }
      lines += line + "]}\n";
    }
    std::ofstream out(o.rename_keys, std::ios::binary | std::ios::trunc);
    out << lines;
    if (!out) {
      fail_early(o.common, fmt::format("--rename-keys {}: cannot write", o.rename_keys));
    }
  }
  migrate::Validators validators;
  validators.keyshift = self_path();
  execute(o.common, rewritten.plan, validators, report);
  std::string extra = mapping_json(options) + ", \"prefix_collisions\": [";
  for (size_t i = 0; i < rewritten.collisions.size(); ++i) {
    const auto& c = rewritten.collisions[i];
    extra += i == 0 ? "{\"file\": " : ", {\"file\": ";
    compat::append_json_bytes(extra, c.file);
    extra += ", \"prefix\": ";
    compat::append_json_bytes(extra, c.prefix);
    extra += ", \"other_file\": ";
    compat::append_json_bytes(extra, c.other_file);
    extra += ", \"other_prefix\": ";
    compat::append_json_bytes(extra, c.other_prefix);
    extra += fmt::format(", \"db\": {}}}", c.db);
  }
  extra += "]";
  report.extra_json = extra;
  finish(o.common, report);
}

// --- rollback ---

void run_rollback(const RollbackOptions& o) {
  bool check = !o.common.apply || o.common.check;
  migrate::RollbackResult result = migrate::rollback_run(o.run_dir, check, o.force);
  migrate::RewriteReport report;
  report.plan = &result.plan;
  report.check_mode = check;
  report.changed = !result.restored.empty() || !result.removed_dirs.empty();
  report.warnings = result.warnings;
  if (!result.ok) {
    report.failed = true;
    report.msg = result.error;
  } else if (!report.changed) {
    report.msg = "nothing to restore: every file is as it was before the run";
  } else {
    std::string dirs =
        result.removed_dirs.empty()
            ? ""
            : fmt::format(", {} directory(ies) the run created {}", result.removed_dirs.size(),
                          check ? "would be removed" : "removed");
    report.msg = fmt::format("{} file(s) {}{}{}", result.restored.size(),
                             check ? "would be restored" : "restored", dirs,
                             check ? " (dry run; --apply restores)" : "");
    if (!check) {
      report.written = result.restored;
    }
  }
  finish(o.common, report);
}

void add_common(CLI::App* sub, CommonOptions& o) {
  sub->add_flag("--apply", o.apply, "Write the changes (default: dry run printing diffs)");
  sub->add_flag("--check", o.check, "Write nothing, not even backups (wins over --apply)");
  sub->add_option("--format", o.format, "Output: text (diffs and a change table) or json")
      ->check(CLI::IsMember({"text", "json"}));
  sub->add_flag("--detailed-exitcode", o.detailed_exitcode,
                "Exit 2 when something changed or would change (0 when nothing did)");
  sub->add_option("--backup-dir", o.backup_dir,
                  "Where run directories with backups go (default /var/backups/keyshift)");
  sub->add_flag("--no-validate", o.no_validate,
                "Skip nginx -t, php -l and keyshift serve --test-config");
}

}  // namespace

void add_rewrite(CLI::App& app) {
  CLI::App* rewrite = app.add_subcommand(
      "rewrite", "Rewrite redis.conf and application settings for Valkey or keyshift");
  rewrite->require_subcommand(1);
  rewrite->footer(
      "Usage:\n"
      "  keyshift rewrite server SRC --target T [--out DST] [--layout debian|rhel|custom]\n"
      "                          [--socket PATH] [--map-path /FROM=/TO]... [--table FILE]\n"
      "                          [--probe redis://HOST:PORT|unix:///PATH|/path/to/valkey-server]\n"
      "  keyshift rewrite apps [PATH...] [--profile P] [--server-config SRC [--server-out DST]]\n"
      "                        [--from-socket A] [--to-socket B] [--from-url U] [--to-url U]\n"
      "                        [--check-prefixes] [--fix-prefixes] [--rename-keys FILE]\n"
      "  keyshift rewrite rollback RUN_DIR [--force]\n"
      "Every form is a dry run printing unified diffs unless --apply; --check never writes.\n"
      "--format json prints one object for Ansible; exit 0 ok, 1 error, 2 usage (or, with\n"
      "--detailed-exitcode, 2 when something changed). See man keyshift-rewrite.\n");

  auto server = std::make_shared<ServerOptions>();
  CLI::App* s = rewrite->add_subcommand("server", "Rewrite a redis.conf for a target server");
  s->add_option("src", server->source, "The Redis config file (read only)")->required();
  s->add_option("--out", server->out,
                "Where the result goes (default: the layout's path, e.g. /etc/valkey/valkey.conf)");
  s->add_option("--target", server->target,
                "valkey-7.2, valkey-8.0, valkey-8.1, valkey-9.0 or keyshift")
      ->required();
  s->add_option("--layout", server->layout, "debian, rhel or custom (default: detected)")
      ->check(CLI::IsMember({"debian", "rhel", "custom"}));
  s->add_option("--map-path", server->map_paths, "Also move paths under /FROM to /TO")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  s->add_option("--socket", server->socket, "The unix socket the target listens on");
  s->add_option("--port", server->port, "The TCP port the target listens on (0: none)")
      ->check(CLI::Range(0, 65535));
  s->add_option("--table", server->table, "Read the targets table from FILE (TOML)");
  s->add_option("--probe", server->probe, "Ask a running target (URL) or a target binary");
  add_common(s, server->common);
  s->callback([server]() { run_server(*server); });

  auto apps = std::make_shared<AppsOptions>();
  CLI::App* a = rewrite->add_subcommand("apps", "Point application settings at the new server");
  a->add_option("paths", apps->paths, "Files or directories to look at");
  a->add_option("--profile", apps->profile,
                "wordops, wordpress, php, laravel, django, rails, nextcloud or generic")
      ->check(CLI::IsMember(migrate::app_profile_names()));
  a->add_option("--server-config", apps->server_config,
                "Take the old and new socket from this Redis config and the layout");
  a->add_option("--server-out", apps->server_out,
                "The config rewrite server wrote from --server-config; its socket, port and "
                "requirepass are the new server's (default: as rewrite server plans them)");
  a->add_option("--layout", apps->layout, "debian, rhel or custom (default debian)")
      ->check(CLI::IsMember({"debian", "rhel", "custom"}));
  a->add_option("--socket", apps->socket, "The new server's unix socket (as rewrite server)");
  a->add_option("--from-socket", apps->from_sockets, "An old socket path to replace")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  a->add_option("--to-socket", apps->to_socket, "The new socket path");
  a->add_option("--from-url", apps->from_url,
                "The old server: redis://[:PASSWORD@]HOST:PORT[/DB] or "
                "unix:///PATH[?db=N&password=P]; its password and db select the settings that "
                "change");
  a->add_option("--to-url", apps->to_url,
                "The new server, same forms; a password or db in it is written to every "
                "setting of the server");
  a->add_flag("--check-prefixes", apps->check_prefixes,
              "Fail when WordPress key prefixes collide (always reported as warnings)");
  a->add_flag("--fix-prefixes", apps->fix_prefixes, "Add a trailing ':' to colliding prefixes");
  a->add_option("--rename-keys", apps->rename_keys,
                "With --fix-prefixes --apply: write the old->new prefix map (JSON Lines)");
  add_common(a, apps->common);
  a->callback([apps]() { run_apps(*apps); });

  auto rollback = std::make_shared<RollbackOptions>();
  CLI::App* r = rewrite->add_subcommand("rollback", "Restore the files of a rewrite run");
  r->add_option("run_dir", rollback->run_dir, "The run directory (holds manifest.toml)")
      ->required();
  r->add_flag("--force", rollback->force, "Restore files that changed since the run too");
  add_common(r, rollback->common);
  r->callback([rollback]() { run_rollback(*rollback); });
}

}  // namespace keyshift::cli
