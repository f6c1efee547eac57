#pragma once

#include <chrono>
#include <cstdint>

namespace keyshift::engine {

/// Source of wall-clock and monotonic time, injected so that tests never sleep.
class Clock {
 public:
  virtual ~Clock() = default;
  /// Unix time in milliseconds (what TTLs are measured against).
  virtual int64_t now_ms() const = 0;
  /// Unix time in microseconds (TIME, slowlog).
  virtual int64_t now_us() const = 0;
  /// Monotonic microseconds (durations, latency).
  virtual int64_t monotonic_us() const = 0;
};

/// The real clock. Monotonic time comes from the TSC when the CPU has an invariant one
/// (a clock_gettime per command is measurable on virtual machines whose clock source is
/// not vDSO-friendly), calibrated once against steady_clock.
class SystemClock final : public Clock {
 public:
  SystemClock();
  int64_t now_ms() const override { return now_us() / 1000; }
  int64_t now_us() const override {
    return std::chrono::duration_cast<std::chrono::microseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
  int64_t monotonic_us() const override;

 private:
  double m_ticks_per_us = 0;  // 0: no usable TSC, use steady_clock
  uint64_t m_tsc_base = 0;
  int64_t m_us_base = 0;
};

/// A clock that only moves when told to.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(int64_t start_ms = 1'700'000'000'000) : m_us(start_ms * 1000) {}
  int64_t now_ms() const override { return m_us / 1000; }
  int64_t now_us() const override { return m_us; }
  int64_t monotonic_us() const override { return m_us; }
  /// Moves time forward by `ms` milliseconds.
  void advance_ms(int64_t ms) { m_us += ms * 1000; }

 private:
  int64_t m_us;
};

}  // namespace keyshift::engine
