#pragma once

#include "engine/server/config_file.hpp"
#include "engine/util/expected.hpp"
#include "migrate/rewrite/layout.hpp"
#include "migrate/rewrite/plan.hpp"
#include "migrate/rewrite/target_table.hpp"

#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

// `keyshift rewrite server`: a redis.conf (and the files it includes) rewritten for a target
// server, line by line, keeping everything the target accepts as written.
namespace keyshift::migrate {

/// What to rewrite and for which target.
struct ServerRewriteOptions {
  std::string source;            ///< the Redis config file
  std::string out;               ///< the result; empty: the layout's path for it
  std::optional<Layout> layout;  ///< nullopt: detected from the file (else debian)
  std::vector<std::pair<std::string, std::string>> path_maps;  ///< extra FROM=TO prefixes
  std::string socket;       ///< unixsocket to write; empty: mapped
  std::optional<int> port;  ///< port to write (0: no TCP); nullopt: the source's
  std::optional<std::set<std::string>> probed;           ///< directive names a live target listed
  std::optional<std::set<std::string>> probed_commands;  ///< its COMMAND LIST, upper-cased
};

/// A server rewrite's plan and the endpoints before and after.
struct ServerRewrite {
  RewritePlan plan;
  Layout layout = Layout::debian;
  KnownEndpoint before;  ///< unixsocket/port/requirepass of the Redis config
  KnownEndpoint after;   ///< unixsocket/port/requirepass of the result
};

/// Where and why a config cannot be rewritten.
struct RewriteFailure {
  std::string file;
  int line = 0;
  std::string message;
};

/// Reads `options.source` and its includes through `fs` and plans the rewrite for `target`.
engine::Expected<ServerRewrite, RewriteFailure> rewrite_server_config(
    engine::ConfigFilesystem& fs, const ServerRewriteOptions& options, const TargetTable& target,
    const RedisFacts& redis);

/// Loads the planned files the way `keyshift serve --test-config` does, from memory;
/// returns the engine's error ("file:line: message") or nothing, and its warnings.
std::optional<std::string> check_with_engine(const RewritePlan& plan, const std::string& main,
                                             std::string_view cwd,
                                             std::vector<std::string>& warnings);

/// The comment marker of lines a rewrite disabled.
inline constexpr std::string_view k_rewrite_marker = "# keyshift rewrite";

}  // namespace keyshift::migrate
