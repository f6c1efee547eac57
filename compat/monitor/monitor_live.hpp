#pragma once

#include "compat/monitor/monitor_log.hpp"
#include "engine/resp/connection.hpp"
#include "engine/util/expected.hpp"

#include <chrono>
#include <cstdint>
#include <map>
#include <string>

// Sampling a live server's traffic for a while: by MONITOR (every command with its client,
// at the server's cost), or by INFO commandstats deltas (counts only, nearly free).
namespace keyshift::compat {

/// Runs MONITOR on `endpoint` for `duration`, handing each command to `handler`. The end is
/// marked in the stream itself (a second connection sends an ECHO of a random word when the
/// time is up), so an idle server ends the sample on time and nothing depends on read
/// timeouts.
engine::Expected<MonitorSummary, std::string> sample_monitor(const engine::RespEndpoint& endpoint,
                                                             std::chrono::milliseconds duration,
                                                             const MonitorHandler& handler);

/// Calls per command ("get", "client|setinfo") that `endpoint` served during `duration`,
/// from INFO commandstats before and after.
engine::Expected<std::map<std::string, uint64_t>, std::string> sample_commandstats(
    const engine::RespEndpoint& endpoint, std::chrono::milliseconds duration);

/// INFO commandstats' text as calls per command.
std::map<std::string, uint64_t> parse_commandstats(std::string_view info);

}  // namespace keyshift::compat
