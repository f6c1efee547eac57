// keyshift rewrite server|apps|rollback: move redis.conf and application settings to the
// target server, as a dry run by default. Planning, writing and reporting live in
// migrate/rewrite; this file maps flags, walks directories and picks the exit code.
#include "cli/subcommands.hpp"
#include "cli/user_error.hpp"
#include "engine/server/config_file.hpp"
#include "migrate/json_text.hpp"
#include "migrate/rewrite/apply.hpp"
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
/// Files bigger than this are not application settings; a walk skips them.
constexpr uintmax_t k_max_app_file = 2U << 20;
/// Directories a walk never enters (version control, dependencies, caches, uploads).
constexpr std::string_view k_skipped_dirs[] = {".git",  "node_modules", "vendor", "wp-content",
                                               "cache", "storage",      "tmp"};

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
    const migrate::RewriteFailure& f = rewritten.error();
    fail_early(o.common, f.line > 0 ? fmt::format("{}:{}: {}", f.file, f.line, f.message)
                                    : fmt::format("{}: {}", f.file, f.message));
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
    // Access rules keyshift cannot enforce (user, aclfile, rename-command) are errors of
    // the engine's loader itself, so they fail above with their file and line.
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
  migrate::append_json_string(extra, target->name);
  extra += ", \"layout\": ";
  migrate::append_json_string(extra, migrate::layout_name(rewritten->layout));
  extra += ", \"socket\": {\"before\": ";
  migrate::append_json_bytes(extra, rewritten->before.socket);
  extra += ", \"after\": ";
  migrate::append_json_bytes(extra, rewritten->after.socket);
  extra += "}";
  if (probed) {
    extra += ", \"probe\": {\"server\": ";
    migrate::append_json_bytes(extra, probed->server);
    extra += fmt::format(", \"directives\": {}, \"commands\": {}}}", probed->directives.size(),
                         probed->commands.size());
  }
  report.extra_json = extra;
  finish(o.common, report);
}

// --- apps ---

/// Parses --from-url/--to-url (see migrate::parse_endpoint_url).
migrate::Endpoint parse_endpoint(const std::string& flag, const std::string& text) {
  auto e = migrate::parse_endpoint_url(text);
  if (!e) {
    throw UserError(fmt::format("keyshift: {} {}: expected redis://[:PASSWORD@]HOST:PORT[/DB], "
                                "HOST:PORT, unix:///PATH[?db=N&password=P] or /PATH",
                                flag, text),
                    2);
  }
  return *e;
}

std::vector<std::string> default_app_paths(const std::string& profile) {
  if (profile == "wordops") {
    return {"/etc/nginx/conf.d", "/var/www", "/etc/php"};
  }
  if (profile == "wordpress") {
    return {"/var/www"};
  }
  if (profile == "php") {
    return {"/etc/php"};
  }
  if (profile == "nextcloud") {
    return {"/var/www/nextcloud/config", "/etc/php"};
  }
  return {};
}

void walk(const fs::path& dir, int depth, std::vector<std::string>& out) {
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::directory_entry& entry = *it;
    std::string name = entry.path().filename().string();
    if (entry.is_directory(ec) && !entry.is_symlink(ec)) {
      bool skip = std::find(std::begin(k_skipped_dirs), std::end(k_skipped_dirs), name) !=
                  std::end(k_skipped_dirs);
      if (!skip && depth < 6) {
        walk(entry.path(), depth + 1, out);
      }
    } else if (entry.is_regular_file(ec) && migrate::is_app_candidate(entry.path().string()) &&
               entry.file_size(ec) <= k_max_app_file) {
      out.push_back(entry.path().string());
    }
  }
}

/// Reads a server config's socket, port and requirepass the way `rewrite server` sees them.
migrate::ServerRewrite read_server_endpoints(const CommonOptions& common, const std::string& path,
                                             std::optional<migrate::Layout> layout,
                                             const std::string& socket) {
  // The endpoints do not depend on the target; any table entry serves.
  migrate::TargetCatalog catalog = load_catalog(common, "");
  migrate::ServerRewriteOptions server;
  server.source = path;
  server.layout = layout;
  server.socket = socket;
  server.out = "/dev/null/unused";
  engine::RealConfigFilesystem filesystem;
  auto rewritten = migrate::rewrite_server_config(filesystem, server, *catalog.find("valkey-8.1"),
                                                  catalog.redis);
  if (!rewritten) {
    const migrate::RewriteFailure& f = rewritten.error();
    fail_early(common, f.line > 0 ? fmt::format("{}:{}: {}", f.file, f.line, f.message)
                                  : fmt::format("{}: {}", f.file, f.message));
  }
  return std::move(*rewritten);
}

/// The mapping of the server rewrite: the Redis config's socket, port and requirepass before,
/// and after either as `rewrite server` plans them or as the config it wrote (--server-out)
/// says, edits included.
void map_server_endpoints(const AppsOptions& o, std::optional<migrate::Layout> layout,
                          migrate::AppsRewriteOptions& options,
                          std::vector<std::string>& warnings) {
  migrate::ServerRewrite planned =
      read_server_endpoints(o.common, o.server_config, layout, options.to.socket);
  migrate::Endpoint before = planned.before;
  migrate::Endpoint after = planned.after;
  // Only a config named with --server-out: the layout's path may hold the target package's
  // stock file, whose socket and password are not the ones `rewrite server` would write.
  if (!o.server_out.empty()) {
    std::error_code ec;
    if (!fs::exists(o.server_out, ec)) {
      fail_early(o.common, fmt::format("--server-out {}: no such file", o.server_out));
    }
    after = read_server_endpoints(o.common, o.server_out, migrate::Layout::custom, "").before;
  }
  if (!before.socket.empty()) {
    options.from_sockets.push_back(before.socket);
  }
  if (!after.socket.empty()) {
    options.to.socket = after.socket;
  } else if (!before.socket.empty()) {
    options.to.host = "127.0.0.1";
    options.to.port = after.port;
  }
  migrate::Endpoint old_tcp{"", "127.0.0.1", before.port, std::nullopt, std::nullopt};
  migrate::Endpoint new_tcp{"", "127.0.0.1", after.port, std::nullopt, std::nullopt};
  if (before.port != 0 && after.port != 0 && before.port != after.port) {
    options.from.host = old_tcp.host;
    options.from.port = old_tcp.port;
    if (options.to.socket.empty()) {
      options.to.host = new_tcp.host;
      options.to.port = new_tcp.port;
    } else {
      options.tcp_to = new_tcp;
    }
  } else if (after.port != 0) {
    options.same_server.push_back(new_tcp);
  }
  options.from.password = before.password.value_or("");
  if (after.password && after.password != before.password) {
    options.to.password = after.password;
  } else if (before.password && !after.password) {
    warnings.push_back(
        "requirepass was removed on the new server; apps still send their password, which it "
        "answers with an AUTH error: remove it from them by hand");
  }
}

/// The mapping a run used, for scripts: endpoints, whether a password changes (never the
/// password itself) and the database move.
std::string mapping_json(const migrate::AppsRewriteOptions& options) {
  auto endpoint = [](const migrate::Endpoint& e) {
    std::string out;
    if (!e.socket.empty()) {
      migrate::append_json_bytes(out, "unix://" + e.socket);
    } else if (!e.host.empty()) {
      migrate::append_json_bytes(out, fmt::format("{}:{}", e.host, e.port));
    } else {
      out = "null";
    }
    return out;
  };
  std::string out = "\"mapping\": {\"from_sockets\": [";
  for (size_t i = 0; i < options.from_sockets.size(); ++i) {
    out += i == 0 ? "" : ", ";
    migrate::append_json_bytes(out, options.from_sockets[i]);
  }
  out += "], \"from\": " + endpoint(options.from) + ", \"to\": " + endpoint(options.to);
  out += ", \"tcp_to\": " + (options.tcp_to ? endpoint(*options.tcp_to) : std::string("null"));
  out += fmt::format(", \"password_changes\": {}", options.to.password ? "true" : "false");
  out += options.to.db ? fmt::format(", \"db\": {{\"from\": {}, \"to\": {}}}",
                                     options.from.db.value_or(0), *options.to.db)
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
  options.to.socket = o.to_socket.empty() ? o.socket : o.to_socket;
  if (!o.server_config.empty()) {
    map_server_endpoints(o, layout, options, server_warnings);
  }
  if (!o.from_url.empty()) {
    migrate::Endpoint from = parse_endpoint("--from-url", o.from_url);
    if (!from.socket.empty()) {
      options.from_sockets.push_back(from.socket);
    } else {
      options.from.host = from.host;
      options.from.port = from.port;
    }
    options.from.password = from.password ? from.password : options.from.password;
    options.from.db = from.db ? from.db : options.from.db;
  }
  if (!o.to_url.empty()) {
    migrate::Endpoint to = parse_endpoint("--to-url", o.to_url);
    to.password = to.password ? to.password : options.to.password;
    options.to = to;
    options.tcp_to.reset();
  }
  if (options.to.password && options.to.password->empty()) {
    throw UserError(
        "keyshift: --to-url: an empty password; apps that send one would fail "
        "AUTH, remove it from them by hand",
        2);
  }
  if (options.from_sockets.empty() && options.from.host.empty()) {
    // Every socket path the Redis packages use; they all move to the layout's socket.
    options.from_sockets = {"/run/redis/redis-server.sock", "/var/run/redis/redis-server.sock",
                            "/run/redis/redis.sock", "/var/run/redis/redis.sock"};
  }
  if (options.to.empty()) {
    options.to.socket = mapper.map(
        layout == migrate::Layout::rhel ? "/run/redis/redis.sock" : "/run/redis/redis-server.sock");
  }
  if (!options.from.host.empty() && options.to.empty()) {
    throw UserError("keyshift: --from-url HOST:PORT needs --to-url or --to-socket", 2);
  }
  std::vector<std::string> paths = o.paths.empty() ? default_app_paths(o.profile) : o.paths;
  if (paths.empty()) {
    throw UserError(fmt::format("keyshift: rewrite apps --profile {}: name the files or "
                                "directories to look at",
                                o.profile),
                    2);
  }
  std::vector<std::string> names;
  for (const std::string& p : paths) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      walk(p, 0, names);
    } else if (fs::exists(p, ec)) {
      names.push_back(p);
    } else if (!o.paths.empty()) {
      fail_early(o.common, fmt::format("{}: no such file or directory", p));
    }
  }
  std::sort(names.begin(), names.end());
  std::vector<migrate::AppFile> files;
  for (const std::string& name : names) {
    std::ifstream in(name, std::ios::binary);
    if (!in) {
      fail_early(o.common, fmt::format("{}: cannot read", name));
    }
    std::ostringstream buffer;
    buffer << in.rdbuf();
    files.push_back(migrate::AppFile{fs::absolute(name).lexically_normal().string(), buffer.str()});
  }
  migrate::AppsRewrite rewritten = migrate::rewrite_apps(files, *profile, options);
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
      migrate::append_json_bytes(line, r.file);
      line += ", \"from_prefix\": ";
      migrate::append_json_bytes(line, r.from);
      line += ", \"to_prefix\": ";
      migrate::append_json_bytes(line, r.to);
      line += ", \"exclude_prefixes\": [";
      for (size_t i = 0; i < r.exclude.size(); ++i) {
        line += i == 0 ? "" : ", ";
        migrate::append_json_bytes(line, r.exclude[i]);
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
    migrate::append_json_bytes(extra, c.file);
    extra += ", \"prefix\": ";
    migrate::append_json_bytes(extra, c.prefix);
    extra += ", \"other_file\": ";
    migrate::append_json_bytes(extra, c.other_file);
    extra += ", \"other_prefix\": ";
    migrate::append_json_bytes(extra, c.other_prefix);
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
