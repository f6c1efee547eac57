#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace keyshift::compat {

/// A progress line for reading a file: bytes read of the total, percent, MB/s and the time
/// left, redrawn in place ("\r") at most every `interval` seconds. Where the line goes and
/// what time it is are injected, so tests need neither a terminal nor a real clock.
class ProgressMeter {
 public:
  /// Receives each rendering of the line (with its leading "\r"), and the clearing at the end.
  using Sink = std::function<void(std::string_view)>;
  /// Seconds on a monotonic clock.
  using Clock = std::function<double()>;

  ProgressMeter(std::string label, uint64_t total, Sink sink, Clock clock, double interval = 0.2);

  /// `done` bytes are read; draws the line at the first call, then again once `interval`
  /// has passed since the last drawing.
  void update(uint64_t done);
  /// Draws the line for the whole total once more, then clears it.
  void finish();

  /// The line for `done` of `total` bytes after `elapsed` seconds, e.g.
  /// "\rkeyshift: dump.rdb: 12.5/50.0 MB 25% 41.7 MB/s 0:01 left".
  static std::string line(std::string_view label, uint64_t done, uint64_t total, double elapsed);

 private:
  std::string m_label;
  uint64_t m_total;
  Sink m_sink;
  Clock m_clock;
  double m_interval;
  double m_start;
  double m_last;
  bool m_drawn = false;
};

}  // namespace keyshift::compat
