#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace keyshift::compat {

/// Latencies in nanoseconds counted in log-linear buckets (HdrHistogram's layout): 256
/// linear sub-buckets per power of two, so any value is known to within 1/256 (0.4 %) with
/// a fixed 70 KiB of counters however many values are recorded.
class LatencyHistogram {
 public:
  /// Sub-buckets per power of two (the relative precision is 1/k_sub_buckets).
  static constexpr int k_sub_bits = 8;
  /// Values at or above 2^k_max_bits ns (about 18 minutes) count in the last bucket.
  static constexpr int k_max_bits = 40;
  static constexpr size_t k_buckets =
      static_cast<size_t>((k_max_bits - k_sub_bits + 1) << k_sub_bits) + (size_t{1} << k_sub_bits);

  /// Counts one value.
  void record(uint64_t ns) {
    ++m_counts[index_of(ns)];
    ++m_total;
    m_sum += ns;
    if (ns > m_max) {
      m_max = ns;
    }
    if (ns < m_min) {
      m_min = ns;
    }
  }
  /// Adds every count of `other`.
  void merge(const LatencyHistogram& other);
  /// Adds `count` values in the bucket whose highest value is `upper_ns` (reading saved data).
  void add_bucket(uint64_t upper_ns, uint64_t count);

  /// Values recorded.
  uint64_t count() const { return m_total; }
  /// Largest value recorded (exact), 0 when empty.
  uint64_t max() const { return m_max; }
  /// Smallest value recorded (exact), 0 when empty.
  uint64_t min() const { return m_total == 0 ? 0 : m_min; }
  /// Mean of the values recorded (exact), 0 when empty.
  double mean() const {
    return m_total == 0 ? 0.0 : static_cast<double>(m_sum) / static_cast<double>(m_total);
  }
  /// The value below or at which `percent` % of the values lie: the highest value of that
  /// bucket, capped by the exact maximum. 0 when empty.
  uint64_t percentile(double percent) const;
  /// Non-empty buckets as (highest value in ns, count), ascending.
  std::vector<std::pair<uint64_t, uint64_t>> buckets() const;

  /// Bucket of `ns`.
  static size_t index_of(uint64_t ns) {
    if (ns >= (uint64_t{1} << k_max_bits)) {
      ns = (uint64_t{1} << k_max_bits) - 1;
    }
    int msb = 63 - __builtin_clzll(ns | 1);
    int shift = msb < k_sub_bits ? 0 : msb - k_sub_bits;
    return (static_cast<size_t>(shift) << k_sub_bits) + static_cast<size_t>(ns >> shift);
  }
  /// Highest value that lands in bucket `index`.
  static uint64_t upper_of(size_t index);

 private:
  std::array<uint64_t, k_buckets> m_counts{};
  uint64_t m_total = 0;
  uint64_t m_sum = 0;
  uint64_t m_max = 0;
  uint64_t m_min = UINT64_MAX;
};

}  // namespace keyshift::compat
