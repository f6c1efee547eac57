#include "engine/util/clock.hpp"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#if defined(__x86_64__)
#  include <x86intrin.h>
#endif

namespace keyshift::engine {
namespace {

int64_t steady_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

bool has_invariant_tsc() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) == 0) {
      return line.find(" constant_tsc") != std::string::npos &&
             line.find(" nonstop_tsc") != std::string::npos;
    }
  }
  return false;
}

}  // namespace

SystemClock::SystemClock() {
#if defined(__x86_64__)
  if (!has_invariant_tsc()) {
    return;
  }
  int64_t us0 = steady_us();
  uint64_t t0 = __rdtsc();
  int64_t us1 = us0;
  while (us1 - us0 < 2000) {
    us1 = steady_us();
  }
  uint64_t t1 = __rdtsc();
  m_ticks_per_us = static_cast<double>(t1 - t0) / static_cast<double>(us1 - us0);
  m_tsc_base = t1;
  m_us_base = us1;
#endif
}

int64_t SystemClock::monotonic_us() const {
#if defined(__x86_64__)
  if (m_ticks_per_us > 0) {
    return m_us_base +
           static_cast<int64_t>(static_cast<double>(__rdtsc() - m_tsc_base) / m_ticks_per_us);
  }
#endif
  return steady_us();
}

}  // namespace keyshift::engine
