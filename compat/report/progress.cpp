#include "compat/report/progress.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <utility>

namespace keyshift::compat {

ProgressMeter::ProgressMeter(std::string label, uint64_t total, Sink sink, Clock clock,
                             double interval)
    : m_label(std::move(label)),
      m_total(total),
      m_sink(std::move(sink)),
      m_clock(std::move(clock)),
      m_interval(interval),
      m_start(m_clock()),
      m_last(m_start) {}

void ProgressMeter::update(uint64_t done) {
  double now = m_clock();
  if (m_drawn && now - m_last < m_interval) {
    return;
  }
  m_last = now;
  m_drawn = true;
  m_sink(line(m_label, std::min(done, m_total), m_total, now - m_start));
}

void ProgressMeter::finish() {
  if (!m_drawn) {
    return;  // done before the first redraw: nothing to clear
  }
  m_sink(line(m_label, m_total, m_total, m_clock() - m_start));
  m_sink("\r\033[K");
}

std::string ProgressMeter::line(std::string_view label, uint64_t done, uint64_t total,
                                double elapsed) {
  constexpr double k_mb = 1e6;
  uint64_t percent = total == 0 ? 100 : done * 100 / total;
  std::string out = fmt::format("\rkeyshift: {}: {:.1f}/{:.1f} MB {}%", label, done / k_mb,
                                total / k_mb, percent);
  if (elapsed > 0 && done > 0) {
    double rate = done / elapsed;
    auto left = static_cast<uint64_t>(std::ceil(static_cast<double>(total - done) / rate));
    out += fmt::format(" {:.1f} MB/s {}:{:02} left", rate / k_mb, left / 60, left % 60);
  }
  return out;
}

}  // namespace keyshift::compat
