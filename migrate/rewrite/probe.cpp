#include "migrate/rewrite/probe.hpp"

#include "compat/process/server_process.hpp"
#include "engine/resp/connection.hpp"
#include "engine/util/strings.hpp"
#include "migrate/rewrite/validate.hpp"

#include <fmt/format.h>

#include <memory>
#include <optional>
#include <sstream>

namespace keyshift::migrate {
namespace {

using engine::Unexpected;

engine::Expected<ProbeResult, std::string> ask(engine::RespConnection& conn) {
  ProbeResult result;
  auto config = conn.call({"CONFIG", "GET", "*"});
  if (!config) {
    return Unexpected{config.error()};
  }
  if (config->is_error()) {
    return Unexpected{fmt::format("{}: CONFIG GET *: {}", conn.endpoint().describe(), config->str)};
  }
  const auto& items = config->elements;
  for (size_t i = 0; i + 1 < items.size(); i += 2) {
    result.directives.insert(items[i].str);
  }
  auto commands = conn.call({"COMMAND", "LIST"});
  if (commands && !commands->is_error()) {
    for (const auto& name : commands->elements) {
      result.commands.insert(engine::to_upper(name.str));
    }
  }
  auto info = conn.call({"INFO", "server"});
  if (info && !info->is_error()) {
    std::string name = "redis";
    std::string version;
    std::string valkey_version;
    std::istringstream lines(info->str);
    for (std::string line; std::getline(lines, line);) {
      if (!line.empty() && line.back() == '\r') {
        line.pop_back();
      }
      if (line.starts_with("server_name:")) {
        name = line.substr(12);
      } else if (line.starts_with("valkey_version:")) {
        valkey_version = line.substr(15);
      } else if (line.starts_with("redis_version:")) {
        version = line.substr(14);
      }
    }
    // Valkey reports redis_version:7.2.4 for old clients; its own version is valkey_version.
    result.server = name + " " + (valkey_version.empty() ? version : valkey_version);
  }
  if (result.directives.empty()) {
    return Unexpected{fmt::format("{}: CONFIG GET * listed nothing", conn.endpoint().describe())};
  }
  return result;
}

// Starts `launch` and connects to it; the connection or "exited ..."/"did not answer ...".
engine::Expected<engine::RespConnection, std::string> start_and_connect(
    const compat::ServerLaunch& launch, std::unique_ptr<compat::ServerProcess>& server) {
  auto started = compat::ServerProcess::start(launch);
  if (!started) {
    return Unexpected{started.error()};
  }
  server = std::move(*started);
  return engine::RespConnection::connect(server->endpoint(), std::chrono::milliseconds(2000));
}

}  // namespace

bool is_probe_url(const std::string& target) {
  return target.find("://") != std::string::npos;
}

engine::Expected<ProbeResult, std::string> probe_url(const std::string& url) {
  auto endpoint = engine::parse_redis_url(url);
  if (!endpoint) {
    return Unexpected{endpoint.error()};
  }
  auto conn = engine::RespConnection::connect(*endpoint);
  if (!conn) {
    return Unexpected{conn.error()};
  }
  return ask(*conn);
}

engine::Expected<ProbeResult, std::string> probe_binary(const std::string& binary) {
  compat::ServerLaunch launch{binary, {}, {}};
  launch.scratch_prefix = "keyshift-probe-";
  std::unique_ptr<compat::ServerProcess> server;
  auto conn = start_and_connect(launch, server);
  if (!conn) {
    return Unexpected{fmt::format("{}: {}", binary, conn.error())};
  }
  return ask(*conn);
}

std::optional<std::string> dry_start(const std::string& binary, const std::string& config,
                                     std::chrono::milliseconds timeout) {
  compat::ServerLaunch launch{binary, {config}, {}};
  launch.scratch_prefix = "keyshift-probe-";
  launch.timeout = timeout;
  std::unique_ptr<compat::ServerProcess> server;
  auto conn = start_and_connect(launch, server);
  if (!conn) {
    return fmt::format("{} {}: {}", binary, config, conn.error());
  }
  return std::nullopt;
}

}  // namespace keyshift::migrate
