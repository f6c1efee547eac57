#pragma once

#include "compat/bench/load.hpp"
#include "compat/bench/report.hpp"

#include <cstdint>
#include <functional>
#include <string_view>

// Work around a measurement: who the target is, and filling it before a workload.
namespace keyshift::compat {

/// Reads INFO server/memory and CONFIG GET io-threads; throws BenchError when unreachable.
TargetInfo query_target(const BenchTarget& target);

/// INFO memory's used_memory.
uint64_t query_used_memory(const BenchTarget& target);

/// A --prefill value: a share of maxmemory ("35%") or a number of keys ("100000").
struct PrefillSpec {
  bool percent = false;
  double share = 0;  // 0.35 for "35%"
  uint64_t keys = 0;
};

/// Parses --prefill's value; throws BenchError saying what is accepted.
PrefillSpec parse_prefill(std::string_view text);

/// SETs keys key_minimum, key_minimum+1, ... of `workload` (its prefix and value) until the
/// spec is met: that many keys, or used_memory at the share of `maxmemory`. Throws
/// BenchError when the target has no maxmemory for a share, when the key range runs out
/// first, or when used_memory stops growing (eviction). `progress` gets keys written.
PrefillResult prefill(const BenchTest& workload, const LoadOptions& options,
                      const PrefillSpec& spec, uint64_t maxmemory,
                      const std::function<void(uint64_t)>& progress);

}  // namespace keyshift::compat
