#include "engine/server/log.hpp"

#include <sys/time.h>
#include <unistd.h>

#include <ctime>

namespace keyshift::engine {

LogLevel parse_log_level(std::string_view name) {
  if (name == "debug") {
    return LogLevel::debug;
  }
  if (name == "verbose") {
    return LogLevel::verbose;
  }
  if (name == "warning") {
    return LogLevel::warning;
  }
  if (name == "nothing") {
    return LogLevel::nothing;
  }
  return LogLevel::notice;
}

Logger::Logger(const std::string& path, LogLevel level)
    : m_file(path.empty() ? stdout : std::fopen(path.c_str(), "a")),
      m_owned(!path.empty()),
      m_level(level) {}

Logger::~Logger() {
  if (m_owned && m_file != nullptr) {
    std::fclose(m_file);
  }
}

void Logger::log(LogLevel level, std::string_view message) {
  if (m_file == nullptr || level < m_level || m_level == LogLevel::nothing) {
    return;
  }
  static constexpr char k_marks[] = ".-*#";
  timeval tv;
  gettimeofday(&tv, nullptr);
  tm tm_local;
  localtime_r(&tv.tv_sec, &tm_local);
  char date[64];
  size_t n = std::strftime(date, sizeof(date), "%d %b %Y %H:%M:%S.", &tm_local);
  std::fprintf(m_file, "%d:M %.*s%03d %c %.*s\n", static_cast<int>(getpid()), static_cast<int>(n),
               date, static_cast<int>(tv.tv_usec / 1000),
               k_marks[static_cast<int>(level) > 3 ? 3 : static_cast<int>(level)],
               static_cast<int>(message.size()), message.data());
  std::fflush(m_file);
}

}  // namespace keyshift::engine
