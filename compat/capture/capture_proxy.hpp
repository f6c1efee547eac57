#pragma once

#include "compat/capture/capture_file.hpp"
#include "engine/resp/connection.hpp"
#include "engine/util/expected.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

// keyshift capture --listen ... --upstream ...: a transparent RESP proxy that records every
// connection's requests and replies into a capture file (keyshift-capture(5)). The traffic
// always wins: bytes are passed through as they arrive, and when the file writer falls
// behind, recording is dropped (a drop event says how many bytes) rather than the traffic
// slowed.
namespace keyshift::compat::capture {

/// What `keyshift capture` was asked to do.
struct CaptureProxyOptions {
  std::string listen;      ///< "unix:PATH", "HOST:PORT", "[IPV6]:PORT" or "PORT"
  std::string upstream;    ///< the same forms
  std::string out;         ///< the capture file
  double duration_s = 0;   ///< stop after this many seconds; 0: at SIGINT/SIGTERM only
  bool redact = true;      ///< replace secrets (AUTH, ...) before they are written
  bool anonymize = false;  ///< keys and values replaced by keyed hashes (capture_anonymize)
  size_t max_queued_bytes = size_t{64} << 20;  ///< records waiting for the disk, at most
  std::string keyshift_version;                ///< written in the header
};

/// What a capture did.
struct CaptureProxyReport {
  uint64_t connections = 0;     ///< client connections accepted
  uint64_t events = 0;          ///< event records written
  uint64_t dropped_events = 0;  ///< events not recorded because the writer fell behind
  uint64_t dropped_bytes = 0;   ///< traffic bytes those events held
  uint64_t bytes_to_server = 0;
  uint64_t bytes_to_client = 0;
};

/// Runs the proxy until SIGINT/SIGTERM or the duration, then closes the file (end record,
/// fsync, rename). Messages go to `log` (the listening line once it accepts connections).
engine::Expected<CaptureProxyReport, std::string> run_capture_proxy(
    const CaptureProxyOptions& options, std::FILE* log);

/// Adds the server's INFO server fields to `header` as source.* (source.error when it does
/// not answer): who the capture recorded.
void read_source_identity(const engine::RespEndpoint& endpoint, CaptureHeader& header);

}  // namespace keyshift::compat::capture
