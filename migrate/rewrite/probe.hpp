#pragma once

#include "engine/util/expected.hpp"

#include <chrono>
#include <optional>
#include <set>
#include <string>
#include <vector>

// --probe: ask the target itself what it accepts (CONFIG GET *, COMMAND LIST) instead of
// trusting the table alone, either a running server (URL) or a binary started on a
// throw-away unix socket and directory; and dry-start a binary with a rewritten config.
namespace keyshift::migrate {

/// What a target said about itself.
struct ProbeResult {
  std::string server;                ///< e.g. "valkey 8.0.1" (from INFO server)
  std::set<std::string> directives;  ///< CONFIG GET * names (hidden configs are not listed)
  std::set<std::string> commands;    ///< COMMAND LIST, upper-cased
};

/// True when `target` names a server URL rather than a binary.
bool is_probe_url(const std::string& target);

/// Connects to the server at `url` (redis://, unix://) and asks it.
engine::Expected<ProbeResult, std::string> probe_url(const std::string& url);

/// Starts `binary` with no config on a unix socket in a temp directory, asks it, stops it.
engine::Expected<ProbeResult, std::string> probe_binary(const std::string& binary);

/// Starts `binary CONFIG` with the port, socket, dir, logfile, pidfile and persistence moved
/// to a temp directory by command-line options (which win over the file), waits until it
/// answers PING or exits, and stops it. Returns the server's own error output on failure.
std::optional<std::string> dry_start(const std::string& binary, const std::string& config,
                                     std::chrono::milliseconds timeout = std::chrono::seconds(10));

}  // namespace keyshift::migrate
