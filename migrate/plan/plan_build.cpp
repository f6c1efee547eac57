#include "migrate/plan/plan_build.hpp"

#include "compat/process/child_process.hpp"
#include "engine/resp/connection.hpp"
#include "engine/util/mapped_file.hpp"
#include "migrate/rdb_inspect.hpp"

#include <fmt/format.h>

#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

namespace keyshift::migrate {
namespace {

namespace fs = std::filesystem;

/// What the source said about itself.
struct SourceFacts {
  std::map<std::string, std::string> info;    ///< INFO server and persistence fields
  std::map<std::string, std::string> config;  ///< CONFIG GET answers
};

engine::Expected<SourceFacts, std::string> discover(const std::string& url) {
  auto endpoint = engine::parse_redis_url(url);
  if (!endpoint) {
    return engine::Unexpected{fmt::format("--from {}: {}", url, endpoint.error())};
  }
  auto conn = engine::RespConnection::connect(*endpoint, std::chrono::seconds(5));
  if (!conn) {
    return engine::Unexpected{fmt::format("--from {}: {}", url, conn.error())};
  }
  SourceFacts facts;
  for (const char* section : {"server", "persistence", "memory"}) {
    auto reply = conn->call({"INFO", section});
    if (!reply || reply->is_error()) {
      return engine::Unexpected{
          fmt::format("--from {}: INFO {}: {}", url, section, reply ? reply->str : reply.error())};
    }
    size_t at = 0;
    const std::string& text = reply->str;
    while (at < text.size()) {
      size_t end = text.find('\n', at);
      std::string line = text.substr(at, end == std::string::npos ? std::string::npos : end - at);
      at = end == std::string::npos ? text.size() : end + 1;
      if (!line.empty() && line.back() == '\r') {
        line.pop_back();
      }
      size_t colon = line.find(':');
      if (colon != std::string::npos && line[0] != '#') {
        facts.info[line.substr(0, colon)] = line.substr(colon + 1);
      }
    }
  }
  for (const char* name :
       {"dir", "dbfilename", "unixsocket", "port", "requirepass", "appendonly", "bind"}) {
    auto reply = conn->call({"CONFIG", "GET", name});
    if (!reply || reply->is_error()) {
      return engine::Unexpected{fmt::format("--from {}: CONFIG GET {}: {}", url, name,
                                            reply ? reply->str : reply.error())};
    }
    if (reply->elements.size() >= 2) {
      facts.config[name] = reply->elements[1].str;
    }
  }
  return facts;
}

// The Debian convention for the target's paths: the last "redis" of a path becomes "valkey"
// (/etc/redis/redis.conf -> /etc/valkey/valkey.conf), every one in the file name too.
std::string valkey_path(const std::string& path) {
  fs::path p(path);
  std::string dir = p.parent_path().string();
  std::string name = p.filename().string();
  for (size_t at = name.find("redis"); at != std::string::npos; at = name.find("redis", at)) {
    name.replace(at, 5, "valkey");
  }
  size_t at = dir.rfind("redis");
  if (at != std::string::npos) {
    dir.replace(at, 5, "valkey");
  }
  return (fs::path(dir) / name).string();
}

std::string join(const std::string& a, const std::string& b) {
  return (fs::path(a) / b).string();
}

std::string now_text() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

PlanAction shell(const std::string& command, const std::string& when_endpoint,
                 const std::string& when) {
  return PlanAction{
      .kind = ActionKind::shell, .argv = {command}, .endpoint = when_endpoint, .when = when};
}

PlanAction wait_action(ActionKind kind, const std::string& endpoint, int timeout_s) {
  return PlanAction{.kind = kind, .endpoint = endpoint, .timeout_s = timeout_s};
}

PlanAction call(const std::string& endpoint, std::vector<std::string> argv,
                const std::string& when) {
  return PlanAction{
      .kind = ActionKind::call, .argv = std::move(argv), .endpoint = endpoint, .when = when};
}

PlanAction exec(std::vector<std::string> argv, std::string out_path = {}, int timeout_s = 60) {
  return PlanAction{.kind = ActionKind::exec,
                    .argv = std::move(argv),
                    .path = std::move(out_path),
                    .timeout_s = timeout_s};
}

PlanAction path_action(ActionKind kind, const std::string& path) {
  return PlanAction{.kind = kind, .path = path};
}

// The nearest existing directory at or above `path`, for statvfs.
std::string existing_ancestor(fs::path path) {
  std::error_code ec;
  while (!path.empty() && !fs::exists(path, ec)) {
    path = path.parent_path();
  }
  return path.empty() ? "/" : path.string();
}

// Service commands: given ones in command mode, systemctl with the packages' unit names else.
struct Services {
  std::string source_start, source_stop, target_start, target_stop;
};

engine::Expected<Services, std::string> services(const PlanOptions& o) {
  if (o.service_manager == "command") {
    for (const auto& [flag, value] :
         {std::pair{"--source-start", o.source_start}, std::pair{"--source-stop", o.source_stop},
          std::pair{"--target-start", o.target_start}, std::pair{"--target-stop", o.target_stop}}) {
      if (value.empty()) {
        return engine::Unexpected{
            fmt::format("--service-manager command needs {} (a shell command)", flag)};
      }
    }
    return Services{o.source_start, o.source_stop, o.target_start, o.target_stop};
  }
  if (o.service_manager != "systemd") {
    return engine::Unexpected{
        fmt::format("--service-manager {}: systemd or command", o.service_manager)};
  }
  std::string unit = o.to == "keyshift" ? "keyshift.service" : "valkey-server.service";
  return Services{"systemctl enable --now redis-server.service",
                  "systemctl disable --now redis-server.service", "systemctl enable --now " + unit,
                  "systemctl disable --now " + unit};
}

std::string first_line(const std::string& text) {
  return text.substr(0, text.find('\n'));
}

// The lines of rewrite's output that say why it failed (after its diffs), on one line.
std::string failure_text(const std::string& output) {
  size_t at = output.find("validation failed");
  if (at == std::string::npos) {
    at = output.rfind("keyshift:");
  }
  std::string text = at == std::string::npos ? output : output.substr(at);
  for (char& c : text) {
    c = c == '\n' ? ' ' : c;
  }
  return text.size() > 600 ? text.substr(0, 600) : text;
}

// Preflight: the RDB file judged for the target by rdb inspect's own reader.
PreflightCheck inspect_check(const std::string& rdb_path, const std::string& rdb_target) {
  PreflightCheck c{"rdb-inspect", "ok", ""};
  auto mapped = engine::MappedFile::open(rdb_path);
  if (!mapped) {
    return {"rdb-inspect", "warn",
            fmt::format("{}: {} (the SAVE step writes it)", rdb_path, mapped.error().message())};
  }
  RdbInspectOptions options;
  options.now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  options.target = parse_rdb_target(rdb_target);
  auto report = inspect_rdb(mapped->data(), options);
  if (!report) {
    return {
        "rdb-inspect", "fail",
        fmt::format("{}: offset {}: {}", rdb_path, report.error().offset, report.error().message)};
  }
  std::string verdict = "loads as is";
  if (report->target && report->target->verdict == RdbVerdict::needs_conversion) {
    verdict = "needs conversion (import converts it)";
  } else if (report->target && report->target->verdict == RdbVerdict::cannot_move) {
    c.verdict = "fail";
    verdict = "cannot move";
    for (const std::string& b : report->target->blockers) {
      verdict += "; " + b;
    }
  }
  c.detail = fmt::format("{}: {} keys, {} bytes; {}: {}", rdb_path, report->total_keys,
                         report->size_bytes, rdb_target, verdict);
  return c;
}

// Why the target cannot follow the source by REPLICAOF, or nullopt when it can: REPLICAOF
// takes a host and port, and a Valkey before 8.1 refuses the RDB 12 full sync of a Redis 7.4
// or later (keyshift serve reads it). keyshift import then follows instead.
std::optional<std::string> replica_refusal(const PlanServer& src, const PlanServer& dst) {
  if (src.port == 0) {
    return std::string("the source listens on no TCP port, and REPLICAOF needs one");
  }
  auto major_minor = [](const std::string& v) {
    int major = std::atoi(v.c_str());
    size_t dot = v.find('.');
    return std::pair{major, dot == std::string::npos ? 0 : std::atoi(v.c_str() + dot + 1)};
  };
  if (src.kind == "redis-server" && dst.kind == "valkey-server" &&
      major_minor(src.version) >= std::pair{7, 4} && major_minor(dst.version) < std::pair{8, 1}) {
    return fmt::format(
        "redis-server {} sends an RDB 12 full sync, which valkey-server {} refuses (keyshift "
        "import converts it)",
        src.version, dst.version);
  }
  return std::nullopt;
}

// Replica strategy: once the stopped source has freed its TCP port the running target takes
// it over (CONFIG SET port rebinds the listener and keeps the connections), and its config
// file gets that port for restarts, so apps on host:port reconnect with no file changed.
// Setting the port the target already has changes nothing, so a rerun after a kill is safe;
// a port held by anything else fails the CONFIG SET and leaves the target where it was.
PlanStep take_over_port(int src_port, int dst_port, const std::string& t_url,
                        std::vector<std::string> rewrite_server, const std::string& state) {
  const std::string port = std::to_string(src_port);
  auto at = std::find(rewrite_server.begin(), rewrite_server.end(), "--port");
  if (at != rewrite_server.end()) {
    rewrite_server.erase(at, at + 2);
  }
  const std::string backups = state + "/backups/target-port";
  rewrite_server.insert(rewrite_server.end(), {"--port", port, "--apply", "--backup-dir", backups});
  return PlanStep{
      .name = "take-over-port",
      // Its own stage: a port held by something else fails this step alone, which undoes
      // nothing before it (restarting the source could not bind that port either), so the
      // operator frees the port and runs apply again.
      .stage = "port",
      .what = "the target takes over the source's port " + port + " (CONFIG SET port " + port +
              ") and its config file gets it",
      .why =
          "apps that connect over TCP (host:port) reconnect to the same address, now the "
          "target's, with no file changed; fails while anything else holds the port",
      .run = {call(t_url, {"CONFIG", "SET", "port", port}, ""), exec(rewrite_server)},
      .undo = {call(t_url, {"CONFIG", "SET", "port", std::to_string(dst_port)}, "endpoint_up"),
               path_action(ActionKind::rollback_runs, backups)},
  };
}

}  // namespace

engine::Expected<MigrationPlan, std::string> make_plan(const PlanOptions& o) {
  if (o.strategy != "snapshot" && o.strategy != "replica") {
    return engine::Unexpected{fmt::format("--strategy {}: snapshot or replica", o.strategy)};
  }
  if (o.to != "keyshift" && o.to != "valkey-server") {
    return engine::Unexpected{fmt::format("--to {}: keyshift or valkey-server", o.to)};
  }
  auto svc = services(o);
  if (!svc) {
    return engine::Unexpected{svc.error()};
  }
  auto facts = discover(o.from);
  if (!facts) {
    return engine::Unexpected{facts.error()};
  }
  auto info = [&](const std::string& k) {
    auto it = facts->info.find(k);
    return it == facts->info.end() ? std::string() : it->second;
  };
  auto conf = [&](const std::string& k) {
    auto it = facts->config.find(k);
    return it == facts->config.end() ? std::string() : it->second;
  };

  MigrationPlan plan;
  plan.created = now_text();
  plan.keyshift = o.keyshift;
  plan.strategy = o.strategy;
  plan.service_manager = o.service_manager;
  plan.state_dir = o.state_dir.empty() ? "/var/lib/keyshift/migrate" : o.state_dir;
  plan.apps = o.apps;

  PlanServer& src = plan.source;
  src.kind = "redis-server";
  src.version = info("redis_version");
  if (!info("valkey_version").empty()) {
    src.kind = "valkey-server";
    src.version = info("valkey_version");
  }
  src.config_file = o.source_config.empty() ? info("config_file") : o.source_config;
  if (src.config_file.empty()) {
    return engine::Unexpected{fmt::format(
        "{} runs without a config file (INFO server config_file is empty): give --source-config",
        o.from)};
  }
  src.unix_socket = conf("unixsocket");
  src.port = std::atoi(conf("port").c_str());
  std::string password = conf("requirepass");
  std::string auth = password.empty() ? "" : ":" + password + "@";
  src.url = src.unix_socket.empty() ? o.from : fmt::format("unix://{}{}", auth, src.unix_socket);
  if (src.port != 0) {
    src.tcp_url = fmt::format("redis://{}127.0.0.1:{}", auth, src.port);
  }
  src.data_file = join(conf("dir"), conf("dbfilename"));
  src.start = svc->source_start;
  src.stop = svc->source_stop;

  PlanServer& dst = plan.target;
  dst.kind = o.to;
  std::string binary =
      o.to == "keyshift"
          ? o.keyshift
          : (o.target_binary.empty() ? compat::find_program("valkey-server") : o.target_binary);
  if (binary.empty()) {
    return engine::Unexpected{
        std::string("--to valkey-server: no valkey-server on PATH; give --target-binary")};
  }
  auto version = compat::run_process({binary, "--version"}, std::chrono::seconds(10));
  // "keyshift 0.1.0", or valkey-server's "Valkey server v=8.0.1 sha=...": the number alone.
  dst.version = first_line(version.output);
  if (size_t v = dst.version.find("v="); v != std::string::npos) {
    dst.version = dst.version.substr(v + 2, dst.version.find(' ', v) - v - 2);
  } else if (size_t sp = dst.version.rfind(' '); sp != std::string::npos) {
    dst.version = dst.version.substr(sp + 1);
  }
  std::string rewrite_target = "keyshift";
  std::string rdb_target = "valkey-8.0";
  if (o.to == "valkey-server") {
    const std::string& ver = dst.version;
    size_t second_dot = ver.find('.', ver.find('.') + 1);
    rewrite_target = "valkey-" + ver.substr(0, second_dot);
    rdb_target = rewrite_target;
  }
  dst.config_file = o.target_config.empty() ? valkey_path(src.config_file) : o.target_config;
  dst.unix_socket = o.target_socket;
  if (dst.unix_socket.empty() && !src.unix_socket.empty()) {
    dst.unix_socket = valkey_path(src.unix_socket);
  }
  if (dst.unix_socket.empty()) {
    return engine::Unexpected{std::string("the source has no unix socket: give --target-socket")};
  }
  std::string target_dir = o.target_dir.empty() ? valkey_path(conf("dir")) : o.target_dir;
  dst.data_file = join(target_dir, conf("dbfilename"));
  const bool replica = o.strategy == "replica";
  dst.port = o.target_port >= 0 ? o.target_port : (replica ? 0 : src.port);
  dst.url = fmt::format("unix://{}{}", auth, dst.unix_socket);
  if (dst.port != 0) {
    dst.tcp_url = fmt::format("redis://{}127.0.0.1:{}", auth, dst.port);
  }
  // Why REPLICAOF cannot be used, so keyshift import follows the source instead.
  std::optional<std::string> by_import = replica ? replica_refusal(src, dst) : std::nullopt;
  dst.start = svc->target_start;
  dst.stop = svc->target_stop;

  // Preflight, recorded so the operator reads the verdicts with the plan.
  std::vector<std::string> rewrite_server = {
      "{keyshift}",   "rewrite", "server",        src.config_file, "--target",
      rewrite_target, "--out",   dst.config_file, "--socket",      dst.unix_socket};
  if (conf("dir") != target_dir) {
    rewrite_server.push_back("--map-path");
    rewrite_server.push_back(conf("dir") + "=" + target_dir);
  }
  for (const std::string& m : o.map_paths) {
    rewrite_server.push_back("--map-path");
    rewrite_server.push_back(m);
  }
  if (!o.layout.empty()) {
    rewrite_server.push_back("--layout");
    rewrite_server.push_back(o.layout);
  }
  if (dst.port != src.port) {
    rewrite_server.push_back("--port");
    rewrite_server.push_back(std::to_string(dst.port));
  }
  {
    std::vector<std::string> dry = rewrite_server;
    dry[0] = o.keyshift;
    if (o.to == "valkey-server") {
      dry.push_back("--probe");
      dry.push_back(binary);
    }
    dry.push_back("--detailed-exitcode");
    auto r = compat::run_process(dry, std::chrono::seconds(60));
    bool ok = r.status == 0 || r.status == 2;  // 2: changes to make, none refused
    plan.preflight.push_back(
        {"target-config", ok ? "ok" : "fail",
         ok ? fmt::format("rewrite server {} -> {} for {} passes{}", src.config_file,
                          dst.config_file, rewrite_target,
                          o.to == "valkey-server" ? " (dry start of " + binary + ")" : "")
            : fmt::format("rewrite server exits {}: {}", r.status, failure_text(r.output))});
  }
  {
    std::error_code ec;
    bool in_use = fs::exists(dst.unix_socket, ec) &&
                  engine::RespConnection::connect(*engine::parse_redis_url(dst.url),
                                                  std::chrono::milliseconds(500))
                      .has_value();
    plan.preflight.push_back({"target-socket", in_use ? "fail" : "ok",
                              fmt::format("{} {}", dst.unix_socket,
                                          in_use ? "is in use by a running server" : "is free")});
    if (!replica) {
      plan.preflight.push_back(
          {"target-port", "ok",
           fmt::format("port {}: the target takes it over once the source stops", dst.port)});
    } else if (dst.port == 0) {
      plan.preflight.push_back(
          {"target-port", "ok", "the target listens on its unix socket only (--target-port 0)"});
    } else {
      bool taken = engine::RespConnection::connect(*engine::parse_redis_url(dst.tcp_url),
                                                   std::chrono::milliseconds(500))
                       .has_value();
      plan.preflight.push_back(
          {"target-port", taken ? "fail" : "ok",
           fmt::format("port {} {}", dst.port,
                       taken ? "is in use by a running server" : "is free beside the source")});
    }
  }
  {
    std::error_code ec;
    uint64_t need = fs::file_size(src.data_file, ec);
    if (ec) {
      need = std::strtoull(info("used_memory").c_str(), nullptr, 10);
    }
    struct statvfs vfs {};
    std::string where = existing_ancestor(target_dir);
    uint64_t avail = ::statvfs(where.c_str(), &vfs) == 0
                         ? static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize
                         : 0;
    bool ok = avail > need * 2;
    plan.preflight.push_back(
        {"disk-space", ok ? "ok" : "fail",
         fmt::format("{} has {} bytes free; the snapshot needs about {} (twice for the "
                     "temporary file)",
                     where, avail, need)});
  }
  {
    std::ifstream in("/proc/meminfo");
    std::ostringstream meminfo;
    meminfo << in.rdbuf();
    plan.preflight.push_back(
        memory_check(std::strtoull(info("used_memory").c_str(), nullptr, 10), meminfo.str()));
    plan.preflight.push_back(socket_group_check(
        socket_dir_access(fs::path(dst.unix_socket).parent_path().string(), o.web_user)));
  }
  plan.preflight.push_back(inspect_check(src.data_file, rdb_target));
  if (info("aof_enabled") == "1" || conf("appendonly") == "yes") {
    plan.preflight.push_back(
        {"persistence", "warn",
         "the source has appendonly yes: the SAVE step's RDB is what moves; the target config "
         "keeps appendonly and writes its own AOF"});
  }

  const std::string state = "{state_dir}";
  const std::string s_url = src.url;
  const std::string t_url = dst.url;
  auto bench = [&](const std::string& name, const std::string& stage, const std::string& socket,
                   const std::string& side) {
    std::vector<std::string> argv = {
        "{keyshift}", "bench", "-s",       socket, "-n",     std::to_string(o.bench_requests), "-c",
        "4",          "-t",    "ping,get", "-q",   "--json", state + "/" + name + ".json"};
    if (!password.empty()) {
      argv.insert(argv.begin() + 4, {"-a", password});
    }
    return PlanStep{
        .name = name,
        .stage = stage,
        .what = "benchmark the " + side + " (PING and GET, read-only)",
        .why =
            "the report compares requests/s and p50 before and after; GET of absent keys "
            "changes no data",
        .run = {exec(argv, {}, 300)},
        .check = {path_action(ActionKind::file_exists, state + "/" + name + ".json")},
    };
  };
  if (o.bench_requests > 0) {
    plan.steps.push_back(bench("bench-before", "measure", src.unix_socket, "source"));
  }

  std::vector<std::string> rewrite_server_apply = rewrite_server;
  rewrite_server_apply.insert(rewrite_server_apply.end(),
                              {"--apply", "--backup-dir", state + "/backups/target-config"});
  PlanStep target_config{
      .name = "write-target-config",
      .stage = "cutover",
      .what = "write the target's config " + dst.config_file + " from " + src.config_file,
      .why =
          "the same settings, socket and data dir in the target's own terms, validated "
          "before it is kept",
      .run = {exec(rewrite_server_apply)},
      .check = {path_action(ActionKind::file_exists, dst.config_file)},
      .undo = {path_action(ActionKind::rollback_runs, state + "/backups/target-config")},
  };
  PlanStep start_target{
      .name = "start-target",
      .stage = "cutover",
      .what = "start the target (" + dst.start + ")",
      .why = "it loads the data file and listens on " + dst.unix_socket,
      .run = {path_action(ActionKind::make_dir, fs::path(dst.unix_socket).parent_path().string()),
              shell(dst.start, t_url, "endpoint_down")},
      .check = {wait_action(ActionKind::wait_up, t_url, 120)},
      .done_if = {wait_action(ActionKind::wait_up, t_url, 0)},
      .undo = {shell(dst.stop, t_url, "endpoint_up"),
               wait_action(ActionKind::wait_down, t_url, 60)},
  };
  // The source's own RDB line, so the synced-back file is one it loads.
  std::string source_line = src.kind == "valkey-server" ? "valkey-" : "redis-";
  source_line += src.version.substr(0, src.version.find('.', src.version.find('.') + 1));
  PlanAction import_back =
      exec({"{keyshift}", "import", t_url, "--mode", "scan", "--dir", conf("dir"), "--dbfilename",
            conf("dbfilename"), "--target", source_line, "--no-checkpoint"},
           {}, 3600);
  import_back.endpoint = t_url;
  import_back.when = "endpoint_up";
  PlanStep open_target{
      .name = "open-target",
      .stage = "cutover",
      .what = "from here on clients may write to the target",
      .why =
          "its undo is what makes a rollback lose nothing: the target is paused for writes "
          "and its whole dataset written into the source's data file, which the source "
          "loads when it starts again (deletes included; the two may share a port)",
      .undo = {call(t_url, {"CLIENT", "PAUSE", "300000", "WRITE"}, "endpoint_up"), import_back},
  };
  // Both strategies' cutover begins so: the source acknowledges no more writes.
  auto pause_source = [&](const char* why) {
    return PlanStep{
        .name = "pause-source",
        .stage = "cutover",
        .what = "pause writes on the source (CLIENT PAUSE WRITE)",
        .why = why,
        .run = {call(s_url, {"CLIENT", "PAUSE", "300000", "WRITE"}, "")},
        .undo = {call(s_url, {"CLIENT", "UNPAUSE"}, "endpoint_up")},
    };
  };
  std::vector<std::string> apps_argv = {"{keyshift}", "rewrite", "apps"};
  apps_argv.insert(apps_argv.end(), o.apps.begin(), o.apps.end());
  // The sockets are named, not read from --server-out: that file exists only once
  // write-target-config has run, and --check --diff shows this step before it.
  apps_argv.insert(apps_argv.end(),
                   {"--server-config", src.config_file, "--to-socket", dst.unix_socket});
  if (!src.unix_socket.empty()) {
    apps_argv.insert(apps_argv.end(), {"--from-socket", src.unix_socket});
  }
  if (!o.apps_profile.empty()) {
    apps_argv.insert(apps_argv.end(), {"--profile", o.apps_profile});
  }
  apps_argv.insert(apps_argv.end(), {"--apply", "--backup-dir", state + "/backups/apps"});
  PlanStep apps_step{
      .name = "rewrite-apps",
      .stage = "apps",
      .what = "point the applications at " + dst.unix_socket,
      .why =
          "rewrite apps edits each file in its own syntax, validates it (nginx -t, php -l) "
          "and keeps a backup for the rollback",
      .run = {exec(apps_argv)},
      .undo = {path_action(ActionKind::rollback_runs, state + "/backups/apps")},
  };

  const PlanStep verify_live{
      .name = "verify-data",
      .stage = "cutover",
      .what = "compare every key of the paused source with the target",
      .why = "proof before the switch that nothing was lost or changed: types, TTLs and values",
      .run = {exec(
          {"{keyshift}", "verify", "data", s_url, t_url, "--format", "json", "--no-progress"},
          state + "/verify.json", 3600)},
  };
  if (replica) {  // the target runs beside the source from the start
    start_target.stage = "follow";
    start_target.run.insert(start_target.run.begin() + 1,
                            path_action(ActionKind::make_dir, target_dir));
    target_config.stage = "follow";
    plan.steps.push_back(target_config);
    plan.steps.push_back(start_target);
  }
  if (replica && by_import) {
    plan.strategy_why = fmt::format(
        "replica, followed by keyshift import --mode sync ({}): the target starts beside the "
        "source on {}; import copies the dataset as a replica of the source and streams its "
        "commands until caught up, keeping replid and offset in a checkpoint; writes pause "
        "(CLIENT PAUSE WRITE) while a second import continues by PSYNC from that checkpoint to "
        "the final offset, the data is verified and the source stops",
        *by_import, dst.unix_socket);
    const std::string checkpoint = state + "/follow.checkpoint";
    PlanAction follow =
        exec({"{keyshift}", "import", s_url, "--mode", "sync", "--to", t_url, "--until",
              "caught-up", "--checkpoint", checkpoint, "--target", rdb_target},
             {}, 3600);
    plan.steps.push_back(PlanStep{
        .name = "follow-source",
        .stage = "follow",
        .what = "copy the source into the target as its replica (keyshift import --mode sync)",
        .why = "the full sync copies the dataset while the source keeps serving, then the "
               "stream until the offset of its start; the checkpoint lets the cutover continue "
               "by PSYNC",
        .run = {follow},
        .undo = {path_action(ActionKind::remove_file, checkpoint)},
    });
    plan.steps.push_back(pause_source(
        "from here no write is acknowledged by the source, so the target can catch up to its "
        "final offset; paused clients wait, none is refused yet"));
    follow.timeout_s = 600;
    plan.steps.push_back(PlanStep{
        .name = "wait-caught-up",
        .stage = "cutover",
        .what = "continue the import by PSYNC until the source's final offset (lag 0 bytes)",
        .why = "the paused source's offset no longer moves, so caught-up is every write it "
               "acknowledged",
        .run = {follow},
    });
    plan.steps.push_back(verify_live);
  } else if (replica) {
    plan.strategy_why = fmt::format(
        "replica: the target starts beside the source on {} and follows it by REPLICAOF until "
        "it is caught up; writes pause (CLIENT PAUSE WRITE) only while the last bytes of the "
        "stream are applied, the data is verified, the target is promoted and the source "
        "stops, so the downtime is that short gap, not a SAVE and a load",
        dst.unix_socket);
    const std::string host_port = std::to_string(src.port);
    std::vector<PlanAction> follow;
    if (!password.empty()) {
      follow.push_back(call(t_url, {"CONFIG", "SET", "primaryauth", password}, ""));
    }
    follow.push_back(call(t_url, {"REPLICAOF", "127.0.0.1", host_port}, ""));
    PlanAction synced{.kind = ActionKind::wait_synced,
                      .endpoint = t_url,
                      .timeout_s = 3600,
                      .peer = s_url,
                      .max_lag = 1 << 20};
    plan.steps.push_back(PlanStep{
        .name = "follow-source",
        .stage = "follow",
        .what = "make the target a replica of the source (REPLICAOF 127.0.0.1 " + host_port + ")",
        .why = "the full sync copies the dataset while the source keeps serving; the stream "
               "keeps the target current",
        .run = follow,
        .check = {synced},
        .undo = {call(t_url, {"REPLICAOF", "NO", "ONE"}, "endpoint_up")},
    });
    synced.max_lag = 0;
    synced.timeout_s = 120;
    plan.steps.push_back(pause_source(
        "from here no write is acknowledged by the source, so the target can catch up to its "
        "final offset; paused clients wait, none is refused yet"));
    plan.steps.push_back(PlanStep{
        .name = "wait-caught-up",
        .stage = "cutover",
        .what = "wait until the target has applied the source's final offset (lag 0 bytes)",
        .why = "every write the source acknowledged is then on the target",
        .run = {synced},
    });
    plan.steps.push_back(verify_live);
    plan.steps.push_back(PlanStep{
        .name = "promote-target",
        .stage = "cutover",
        .what = "promote the target (REPLICAOF NO ONE)",
        .why = "it stops following and takes writes",
        .run = {call(t_url, {"REPLICAOF", "NO", "ONE"}, "")},
        .undo = follow,
    });
    for (PlanAction& a : plan.steps.back().undo) {
      a.when = "endpoint_up";  // a rollback after the target stopped has nothing to undo here
    }
  }
  if (replica) {
    plan.steps.push_back(PlanStep{
        .name = "stop-source",
        .stage = "cutover",
        .what = "stop the source while it is paused (" + src.stop + ")",
        .why = "the writes it holds paused are never applied there: their clients see the "
               "connection close, unacknowledged, and write again to the target",
        .run = {shell(src.stop, s_url, "endpoint_up")},
        .check = {wait_action(ActionKind::wait_down, s_url, 60)},
        .done_if = {wait_action(ActionKind::wait_down, s_url, 0)},
        .undo = {shell(src.start, s_url, "endpoint_down"),
                 wait_action(ActionKind::wait_up, s_url, 120)},
    });
    if (src.port != 0 && dst.port != src.port) {
      plan.steps.push_back(take_over_port(src.port, dst.port, t_url, rewrite_server, state));
    }
    plan.steps.push_back(open_target);
  } else {
    plan.strategy_why =
        "snapshot: writes are paused, the source saves and stops, its RDB is converted into the "
        "target's data dir and the target starts; simple and exact, with downtime as long as "
        "SAVE + conversion + start";
    plan.steps.push_back(pause_source(
        "no write may land after the snapshot; paused clients are not acknowledged, so none is "
        "lost"));
    plan.steps.push_back(PlanStep{
        .name = "save-source",
        .stage = "cutover",
        .what = "SAVE on the source into " + src.data_file,
        .why = "the RDB file is what moves to the target",
        .run = {call(s_url, {"SAVE"}, "")},
        .check = {path_action(ActionKind::file_exists, src.data_file)},
    });
    plan.steps.push_back(PlanStep{
        .name = "stop-source",
        .stage = "cutover",
        .what = "stop the source (" + src.stop + ")",
        .why = "two servers must not own the data; it frees port " + std::to_string(src.port),
        .run = {shell(src.stop, s_url, "endpoint_up")},
        .check = {wait_action(ActionKind::wait_down, s_url, 60)},
        .done_if = {wait_action(ActionKind::wait_down, s_url, 0)},
        .undo = {shell(src.start, s_url, "endpoint_down"),
                 wait_action(ActionKind::wait_up, s_url, 120)},
    });
    plan.steps.push_back(PlanStep{
        .name = "import-data",
        .stage = "cutover",
        .what = "convert " + src.data_file + " into " + dst.data_file,
        .why = "keyshift import checks the whole file first and writes the target's RDB "
               "atomically, converting what " +
               rdb_target + " would not read",
        .run = {path_action(ActionKind::make_dir, target_dir),
                exec({"{keyshift}", "import", src.data_file, "--dir", target_dir, "--dbfilename",
                      fs::path(dst.data_file).filename().string(), "--target", rdb_target,
                      "--no-checkpoint"},
                     {}, 3600)},
        .check = {path_action(ActionKind::file_exists, dst.data_file)},
        .undo = {path_action(ActionKind::remove_file, dst.data_file)},
    });
    plan.steps.push_back(target_config);
    plan.steps.push_back(start_target);
    plan.steps.push_back(PlanStep{
        .name = "verify-data",
        .stage = "cutover",
        .what = "compare every key of " + src.data_file + " with the target",
        .why = "proof that nothing was lost or changed: types, TTLs and values",
        .run = {exec({"{keyshift}", "verify", "data", src.data_file, t_url, "--format", "json",
                      "--no-progress"},
                     state + "/verify.json", 3600)},
    });
    plan.steps.push_back(open_target);
  }
  plan.steps.push_back(apps_step);
  if (o.bench_requests > 0) {
    plan.steps.push_back(bench("bench-after", "measure-after", dst.unix_socket, "target"));
  }
  return plan;
}

PreflightCheck memory_check(uint64_t used_memory, std::string_view meminfo) {
  constexpr std::string_view k_field = "MemAvailable:";
  size_t at = meminfo.find(k_field);
  uint64_t kib = 0;
  if (at != std::string_view::npos) {
    size_t from = meminfo.find_first_not_of(' ', at + k_field.size());
    if (from != std::string_view::npos) {
      std::from_chars(meminfo.data() + from, meminfo.data() + meminfo.size(), kib);
    }
  }
  if (kib == 0) {
    return {"memory", "warn",
            fmt::format("the dataset uses {} bytes; MemAvailable is not in /proc/meminfo, so "
                        "whether the target fits is unknown",
                        used_memory)};
  }
  uint64_t avail = kib * 1024;
  bool fits = avail > used_memory;
  return {"memory", fits ? "ok" : "warn",
          fmt::format("the dataset uses {} bytes (used_memory), {} bytes available "
                      "(MemAvailable){}",
                      used_memory, avail,
                      fits ? ""
                           : ": the target only fits once the source has stopped, and a "
                             "rollback's sync needs both up; free memory first")};
}

PreflightCheck socket_group_check(const SocketDirAccess& a) {
  std::string where =
      fmt::format("{}{} is {}:{}", a.dir, a.exists ? "" : " (the socket's nearest existing parent)",
                  a.owner, a.group);
  if (!a.web_user_exists) {
    return {"socket-group", "ok",
            fmt::format("{}; no user {} on this host (--web-user names the web server's)", where,
                        a.web_user)};
  }
  if (a.in_group) {
    return {"socket-group", "ok", fmt::format("{}; {} is in group {}", where, a.web_user, a.group)};
  }
  return {"socket-group", "warn",
          fmt::format("{}; {} is not in group {}, so the web server may not reach the socket: "
                      "usermod -aG {} {} (then restart the web server)",
                      where, a.web_user, a.group, a.group, a.web_user)};
}

SocketDirAccess socket_dir_access(const std::string& socket_dir, const std::string& web_user) {
  SocketDirAccess a{.dir = existing_ancestor(socket_dir), .web_user = web_user};
  a.exists = a.dir == socket_dir;
  struct stat st {};
  if (::stat(a.dir.c_str(), &st) != 0) {
    a.owner = a.group = "?";
    return a;
  }
  const passwd* owner = ::getpwuid(st.st_uid);
  a.owner = owner ? owner->pw_name : std::to_string(st.st_uid);
  const group* g = ::getgrgid(st.st_gid);
  a.group = g ? g->gr_name : std::to_string(st.st_gid);
  const passwd* user = ::getpwnam(web_user.c_str());
  a.web_user_exists = user != nullptr;
  if (user == nullptr) {
    return a;
  }
  a.in_group = user->pw_gid == st.st_gid;
  g = ::getgrgid(st.st_gid);  // getpwnam may have reused the buffer getgrgid filled
  for (char** m = g ? g->gr_mem : nullptr; m != nullptr && *m != nullptr; ++m) {
    a.in_group = a.in_group || web_user == *m;
  }
  return a;
}

}  // namespace keyshift::migrate
