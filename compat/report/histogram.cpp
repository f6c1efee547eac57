#include "compat/report/histogram.hpp"

#include <cmath>

namespace keyshift::compat {

uint64_t LatencyHistogram::upper_of(size_t index) {
  constexpr size_t k_linear = size_t{2} << k_sub_bits;
  if (index < k_linear) {
    return index;  // below 2^(k_sub_bits+1) ns every value has its own bucket
  }
  // index = shift * 2^k_sub_bits + (value >> shift), with value >> shift in [2^k, 2^(k+1)).
  size_t shift = (index >> k_sub_bits) - 1;
  uint64_t top = (index & ((size_t{1} << k_sub_bits) - 1)) + (uint64_t{1} << k_sub_bits);
  return ((top + 1) << shift) - 1;
}

void LatencyHistogram::merge(const LatencyHistogram& other) {
  for (size_t i = 0; i < k_buckets; ++i) {
    m_counts[i] += other.m_counts[i];
  }
  m_total += other.m_total;
  m_sum += other.m_sum;
  if (other.m_max > m_max) {
    m_max = other.m_max;
  }
  if (other.m_min < m_min) {
    m_min = other.m_min;
  }
}

void LatencyHistogram::add_bucket(uint64_t upper_ns, uint64_t count) {
  if (count == 0) {
    return;
  }
  m_counts[index_of(upper_ns)] += count;
  m_total += count;
  m_sum += upper_ns * count;
  if (upper_ns > m_max) {
    m_max = upper_ns;
  }
  if (upper_ns < m_min) {
    m_min = upper_ns;
  }
}

uint64_t LatencyHistogram::percentile(double percent) const {
  if (m_total == 0) {
    return 0;
  }
  double want = std::ceil(percent / 100.0 * static_cast<double>(m_total));
  uint64_t rank = want < 1.0 ? 1 : static_cast<uint64_t>(want);
  uint64_t seen = 0;
  for (size_t i = 0; i < k_buckets; ++i) {
    seen += m_counts[i];
    if (seen >= rank) {
      uint64_t v = upper_of(i);
      return v < m_max ? v : m_max;
    }
  }
  return m_max;
}

std::vector<std::pair<uint64_t, uint64_t>> LatencyHistogram::buckets() const {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  for (size_t i = 0; i < k_buckets; ++i) {
    if (m_counts[i] != 0) {
      out.emplace_back(upper_of(i), m_counts[i]);
    }
  }
  return out;
}

}  // namespace keyshift::compat
