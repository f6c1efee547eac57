#pragma once

#include "engine/util/expected.hpp"

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

// The MONITOR stream as Redis and Valkey print it (replicationFeedMonitors), read back
// exactly: `+<sec>.<usec> [<db> <peer>] "arg" "arg"...` with sdscatrepr's escapes, the peer
// an ip:port, [ipv6]:port, unix:<socket path> or lua (commands a script ran), with or without
// the leading "+" and the CR (redis-cli monitor prints neither), and Redis 2.4's
// `<sec>.<usec> (db <n>) "arg"...`. Shared by `verify clients` and `capture --from-monitor-log`.
namespace keyshift::compat {

/// Who sent a monitored command.
enum class MonitorPeerKind : uint8_t {
  tcp,      ///< ip:port or [ipv6]:port
  unix,     ///< unix:<path>: every unix-socket client prints the server's socket path
  lua,      ///< a command a script (EVAL, FCALL) ran
  unknown,  ///< the Redis 2.4 format, which prints no peer
};

/// One monitored command. Its views are valid only during the callback.
struct MonitorEntry {
  int64_t time_us = 0;  ///< unix time, microseconds
  int64_t db = 0;
  MonitorPeerKind peer_kind = MonitorPeerKind::unknown;
  std::string_view peer;  ///< as printed: "127.0.0.1:50414", "[::1]:6379", "unix:/run/r.sock"
  std::span<const std::string_view> args;  ///< unescaped; args[0] is the command name
  uint64_t line = 0;                       ///< 1-based line number in the input
};

/// Why a line could not be read.
struct MonitorError {
  uint64_t line = 0;
  size_t column = 0;  ///< 1-based byte column
  std::string message;
};

/// What a whole read saw.
struct MonitorSummary {
  uint64_t lines = 0;    ///< lines read, blank and "OK" lines included
  uint64_t entries = 0;  ///< commands handed to the callback
  uint64_t bytes = 0;
};

/// Reads monitor lines one at a time, reusing its buffers (no allocation per line once warm).
class MonitorLineParser {
 public:
  /// Parses one line (without its "\n"; a trailing "\r" is allowed). True with `out` filled
  /// for a command; false with `skipped` set for a line that holds none (blank, or the "OK"
  /// redis-cli prints first); an error otherwise.
  engine::Expected<bool, MonitorError> parse(std::string_view line, uint64_t line_no,
                                             MonitorEntry& out);

 private:
  std::string m_scratch;
  std::vector<std::string_view> m_args;
};

/// Receives each command; return false to stop reading (not an error).
using MonitorHandler = std::function<bool(const MonitorEntry&)>;

/// Reads every line of `text`, a whole log held in memory.
engine::Expected<MonitorSummary, MonitorError> read_monitor_text(std::string_view text,
                                                                 const MonitorHandler& handler);

/// Reads the log file at `path` ("-": standard input) in bounded memory: the file is mapped
/// and the pages behind the reader are given back. `progress` (may be empty) gets the bytes
/// read so far and the total (0 for a pipe). Errors name the file and line.
engine::Expected<MonitorSummary, std::string> read_monitor_file(
    const std::string& path, const MonitorHandler& handler,
    const std::function<void(uint64_t done, uint64_t total)>& progress = {});

/// `bytes` as sdscatrepr writes it: quoted, `\\ \" \n \r \t \a \b`, other bytes outside
/// 0x20..0x7e as \xhh.
std::string monitor_quote(std::string_view bytes);

/// One line as a server prints it (without "+" and CRLF): for tests and capture files.
std::string format_monitor_line(int64_t time_us, int64_t db, std::string_view peer,
                                std::span<const std::string> args);

}  // namespace keyshift::compat
