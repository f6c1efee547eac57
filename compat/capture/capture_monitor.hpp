#pragma once

#include "engine/resp/connection.hpp"
#include "engine/util/expected.hpp"

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

// `keyshift capture --from-monitor-log FILE` and `--from-monitor URL --duration S`: a
// MONITOR log, or a live server's MONITOR stream for a while,  (what `redis-cli monitor`
// prints, read by compat/monitor exactly) turned into a capture file, so replay and
// capture info take it like a proxy's capture. MONITOR shows no replies and no rejected
// commands: every request is flagged k_flag_no_reply, and the commands a script ran (the
// "lua" lines) are flagged k_flag_nested on the connection of the script's caller.
namespace keyshift::compat::capture {

/// How to turn a log into a capture.
struct MonitorCaptureOptions {
  std::string log;  ///< the MONITOR log ("-": standard input); empty with `live`
  /// A live server to run MONITOR on for `duration` instead of reading a log.
  std::optional<engine::RespEndpoint> live;
  std::chrono::milliseconds duration{0};
  std::string out;  ///< the capture file to write
  bool redact = true;
  bool anonymize = false;  ///< keys and values replaced by keyed hashes (capture_anonymize)
  std::string keyshift_version;
};

/// What the conversion wrote.
struct MonitorCaptureReport {
  uint64_t commands = 0;     ///< requests written (nested ones included)
  uint64_t nested = 0;       ///< commands scripts ran
  uint64_t connections = 0;  ///< distinct peers (every unix-socket client prints one peer)
  uint64_t redacted = 0;
  uint64_t events = 0;
};

/// Reads `options.log` (or samples `options.live` by MONITOR) and writes `options.out`; the
/// error names the file and line, and leaves no capture file behind.
engine::Expected<MonitorCaptureReport, std::string> capture_from_monitor_log(
    const MonitorCaptureOptions& options);

}  // namespace keyshift::compat::capture
