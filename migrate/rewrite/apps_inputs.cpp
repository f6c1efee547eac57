#include "migrate/rewrite/apps_inputs.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

namespace keyshift::migrate {
namespace {

namespace fs = std::filesystem;
using engine::Unexpected;

/// Files bigger than this are not application settings; a walk skips them.
constexpr uintmax_t k_max_app_file = 2U << 20;
/// How deep a walk goes below a named directory.
constexpr int k_max_walk_depth = 6;
/// Directories a walk never enters (version control, dependencies, caches, uploads).
constexpr std::string_view k_skipped_dirs[] = {".git",  "node_modules", "vendor", "wp-content",
                                               "cache", "storage",      "tmp"};

void walk(const fs::path& dir, int depth, std::vector<std::string>& out) {
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::directory_entry& entry = *it;
    std::string name = entry.path().filename().string();
    if (entry.is_directory(ec) && !entry.is_symlink(ec)) {
      bool skip = std::find(std::begin(k_skipped_dirs), std::end(k_skipped_dirs), name) !=
                  std::end(k_skipped_dirs);
      if (!skip && depth < k_max_walk_depth) {
        walk(entry.path(), depth + 1, out);
      }
    } else if (entry.is_regular_file(ec) && is_app_candidate(entry.path().string()) &&
               entry.file_size(ec) <= k_max_app_file) {
      out.push_back(entry.path().string());
    }
  }
}

}  // namespace

std::string rewrite_failure_text(const RewriteFailure& f) {
  return f.line > 0 ? fmt::format("{}:{}: {}", f.file, f.line, f.message)
                    : fmt::format("{}: {}", f.file, f.message);
}

std::vector<std::string> default_app_paths(std::string_view profile) {
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

engine::Expected<std::vector<std::string>, std::string> find_app_files(
    const std::vector<std::string>& paths, bool named) {
  std::vector<std::string> names;
  for (const std::string& p : paths) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      walk(p, 0, names);
    } else if (fs::exists(p, ec)) {
      names.push_back(p);
    } else if (named) {
      return Unexpected{fmt::format("{}: no such file or directory", p)};
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

engine::Expected<std::vector<AppFile>, std::string> read_app_files(
    const std::vector<std::string>& names) {
  std::vector<AppFile> files;
  for (const std::string& name : names) {
    std::ifstream in(name, std::ios::binary);
    if (!in) {
      return Unexpected{fmt::format("{}: cannot read", name)};
    }
    std::ostringstream buffer;
    buffer << in.rdbuf();
    files.push_back(AppFile{fs::absolute(name).lexically_normal().string(), buffer.str()});
  }
  return files;
}

engine::Expected<ServerRewrite, std::string> read_server_endpoints(engine::ConfigFilesystem& fs,
                                                                   const TargetCatalog& catalog,
                                                                   const std::string& path,
                                                                   std::optional<Layout> layout,
                                                                   const std::string& socket) {
  // The endpoints do not depend on the target; any table entry serves.
  const TargetTable* target = catalog.find("valkey-8.1");
  if (target == nullptr) {
    return Unexpected{std::string("the targets table has no valkey-8.1 entry")};
  }
  ServerRewriteOptions server;
  server.source = path;
  server.layout = layout;
  server.socket = socket;
  server.out = "/dev/null/unused";
  auto rewritten = rewrite_server_config(fs, server, *target, catalog.redis);
  if (!rewritten) {
    return Unexpected{rewrite_failure_text(rewritten.error())};
  }
  return std::move(*rewritten);
}

engine::Expected<std::vector<std::string>, std::string> map_server_endpoints(
    engine::ConfigFilesystem& fs, const TargetCatalog& catalog, const std::string& server_config,
    const std::string& server_out, std::optional<Layout> layout, AppsRewriteOptions& options) {
  std::vector<std::string> warnings;
  auto planned =
      read_server_endpoints(fs, catalog, server_config, layout, options.to.address.unix_path);
  if (!planned) {
    return Unexpected{planned.error()};
  }
  KnownEndpoint before = planned->before;
  KnownEndpoint after = planned->after;
  // Only a config named with --server-out: the layout's path may hold the target package's
  // stock file, whose socket and password are not the ones `rewrite server` would write.
  if (!server_out.empty()) {
    if (!fs.read_file(server_out)) {
      return Unexpected{fmt::format("--server-out {}: no such file", server_out)};
    }
    auto written = read_server_endpoints(fs, catalog, server_out, Layout::custom, "");
    if (!written) {
      return Unexpected{written.error()};
    }
    after = written->before;
  }
  const std::string& before_socket = before.address.unix_path;
  const std::string& after_socket = after.address.unix_path;
  int before_port = before.address.port;
  int after_port = after.address.port;
  if (!before_socket.empty()) {
    options.from_sockets.push_back(before_socket);
  }
  if (!after_socket.empty()) {
    options.to.address.unix_path = after_socket;
  } else if (!before_socket.empty()) {
    options.to.address.host = "127.0.0.1";
    options.to.address.port = after_port;
  }
  KnownEndpoint new_tcp = KnownEndpoint::tcp("127.0.0.1", after_port);
  if (before_port != 0 && after_port != 0 && before_port != after_port) {
    options.from.address.host = "127.0.0.1";
    options.from.address.port = before_port;
    if (options.to.address.unix_path.empty()) {
      options.to.address.host = new_tcp.address.host;
      options.to.address.port = new_tcp.address.port;
    } else {
      options.tcp_to = new_tcp;
    }
  } else if (after_port != 0) {
    options.same_server.push_back(new_tcp);
  }
  options.from.set_password(before.password().value_or(""));
  if (after.password() && after.password() != before.password()) {
    options.to.set_password(after.password());
  } else if (before.password() && !after.password()) {
    warnings.push_back(
        "requirepass was removed on the new server; apps still send their password, which it "
        "answers with an AUTH error: remove it from them by hand");
  }
  return warnings;
}

}  // namespace keyshift::migrate
