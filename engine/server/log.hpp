#pragma once

#include <cstdio>
#include <string>
#include <string_view>

namespace keyshift::engine {

/// Log verbosity, as valkey.conf's loglevel.
enum class LogLevel : int { debug = 0, verbose = 1, notice = 2, warning = 3, nothing = 4 };

/// Parses a loglevel name; notice when unknown.
LogLevel parse_log_level(std::string_view name);

/// Writes Valkey-style log lines ("pid:M dd Mon yyyy hh:mm:ss.mmm * message") to a file
/// or to stdout.
class Logger {
 public:
  /// Logs to `path` (appending), or to stdout when `path` is empty.
  Logger(const std::string& path, LogLevel level);
  ~Logger();
  Logger(const Logger&) = delete;
  Logger& operator=(const Logger&) = delete;

  /// Writes `message` if `level` passes the threshold.
  void log(LogLevel level, std::string_view message);
  void notice(std::string_view m) { log(LogLevel::notice, m); }
  void warning(std::string_view m) { log(LogLevel::warning, m); }
  void verbose(std::string_view m) { log(LogLevel::verbose, m); }
  /// True if the log file could be opened.
  bool ok() const { return m_file != nullptr; }

 private:
  std::FILE* m_file;
  bool m_owned;
  LogLevel m_level;
};

}  // namespace keyshift::engine
