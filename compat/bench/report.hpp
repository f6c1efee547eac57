#pragma once

#include "compat/bench/load.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

// What `keyshift bench` prints and saves: redis-benchmark's -q and --csv lines, a short
// summary per test, and the JSON file (`--json`) that `keyshift bench compare` reads.
namespace keyshift::compat {

/// Every setting that shapes the load; two runs are comparable when these match.
struct BenchSettings {
  std::string mode = "tests";  // "tests" (redis-benchmark's), "command" (after --), "workload"
  std::string transport = "tcp";
  std::string target;  // host:port or socket path
  bool embedded = false;
  uint32_t clients = 50;
  uint32_t threads = 1;
  uint32_t pipeline = 1;
  uint64_t requests = 100'000;  // 0 when time-based
  double test_time = 0;         // seconds, 0 when request-based
  uint64_t data_size = 3;
  uint64_t keyspace = 0;  // -r
  uint32_t dbnum = 0;
  std::vector<std::string> tests;    // test titles, in order
  std::vector<std::string> command;  // custom command words
  // Workload mode.
  std::string ratio;        // "1:10"
  std::string key_pattern;  // "R:R"
  uint64_t key_minimum = 0;
  uint64_t key_maximum = 0;
  std::string prefill;  // as given: "35%" or a key count; empty: none
  uint32_t runs = 1;
};

/// The measured server: INFO server and memory fields, CONFIG io-threads.
struct TargetInfo {
  std::string server_name;     // "redis", "valkey", "keyshift"
  std::string server_version;  // that server's own version
  std::string redis_version;   // INFO's redis_version (compatibility level)
  std::string os;
  std::string arch_bits;
  int64_t io_threads = -1;  // -1: unknown (CONFIG GET refused)
  uint64_t maxmemory = 0;
  std::string maxmemory_policy;
};

/// What the prefill did.
struct PrefillResult {
  uint64_t keys = 0;
  uint64_t used_memory = 0;  // INFO used_memory after the prefill
  double share = 0;          // used_memory / maxmemory (0 without maxmemory)
  double seconds = 0;
};

/// One whole invocation: settings, where it ran, and each run's results.
struct BenchReport {
  BenchSettings settings;
  TargetInfo target;
  std::optional<PrefillResult> prefill;
  std::string keyshift_version;
  std::string started_at;  // UTC, ISO 8601
  std::string client_host;
  uint32_t client_cpus = 0;
  std::vector<std::vector<TestResult>> runs;
};

/// redis-benchmark -q's line: "SET: 201612.91 requests per second, p50=0.119 msec\n".
std::string render_quiet_line(const TestResult& test);
/// redis-benchmark --csv's header line.
std::string render_csv_header();
/// redis-benchmark --csv's line for one test.
std::string render_csv_line(const TestResult& test);
/// A short summary of one test (requests, time, settings, latency table, per command).
std::string render_summary(const TestResult& test, const BenchSettings& settings);
/// The tests of all runs averaged: requests/s is the mean of the runs' requests/s; the
/// latency histograms are merged, so percentiles cover every request of every run.
std::vector<TestResult> average_runs(const std::vector<std::vector<TestResult>>& runs);
/// The --json document (schema in man/keyshift-bench.1).
std::string render_bench_json(const BenchReport& report);

}  // namespace keyshift::compat
