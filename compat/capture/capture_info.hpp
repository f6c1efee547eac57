#pragma once

#include "compat/capture/capture_file.hpp"
#include "engine/util/expected.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

// keyshift capture info FILE: what a capture holds, read once, record by record (memory
// bounded by the number of connections and distinct command names, not the file's size).
namespace keyshift::compat::capture {

/// The totals of one capture file; on a damaged file, of the records before the damage.
struct CaptureSummary {
  std::string path;
  uint64_t file_size = 0;
  uint32_t version = 0;
  CaptureHeader header;
  int64_t first_ns = 0;  ///< the earliest event's start (0 when there is none)
  int64_t last_ns = 0;   ///< the latest event's end
  uint64_t events = 0;
  uint64_t connections = 0;  ///< open events
  uint64_t closes = 0;
  uint64_t requests = 0;
  uint64_t replies = 0;
  uint64_t error_replies = 0;  ///< replies that are a top-level error (- or !)
  uint64_t redacted = 0;       ///< requests whose secrets were replaced
  uint64_t no_reply = 0;       ///< requests sent with replies off (CLIENT REPLY)
  uint64_t drops = 0;          ///< drop events
  uint64_t dropped_bytes = 0;  ///< the traffic bytes they say were not recorded
  uint64_t request_bytes = 0;  ///< client to server
  uint64_t reply_bytes = 0;    ///< server to client
  /// Command names ("GET", "CLIENT SETNAME") by count, most frequent first.
  std::vector<std::pair<std::string, uint64_t>> commands;
  /// A client name and library and how many connections used them last.
  struct Client {
    std::string name;
    std::string lib;
    uint64_t connections = 0;
  };
  std::vector<Client> clients;
  std::optional<CaptureDamage> damage;  ///< where reading stopped, when it did early
};

/// Reads the whole file; an error when it is not a capture (bad magic, version, header).
engine::Expected<CaptureSummary, CaptureOpenError> summarize_capture(const std::string& path);

/// The command name a request's bytes carry: upper case, with the subcommand for container
/// commands (CLIENT, CONFIG, ...); "" when the bytes are not one request.
std::string request_command_name(std::string_view bytes);

/// Text (aligned lines, the `top` most frequent commands) or one JSON object (all of them).
std::string render_capture_summary(const CaptureSummary& summary, bool json, size_t top = 20);

}  // namespace keyshift::compat::capture
