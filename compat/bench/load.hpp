#pragma once

#include "compat/report/histogram.hpp"
#include "engine/resp/connection.hpp"
#include "engine/resp/request_writer.hpp"
#include "engine/resp/resp_value.hpp"

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

// The load generator behind `keyshift bench`: one epoll loop per thread, each driving its
// share of the connections, every connection sending a pipeline of requests and waiting
// for all their replies before the next (redis-benchmark's model). Requests are written
// into per-connection buffers sized once, replies are only scanned for their ends, and
// latencies go into fixed-size histograms: nothing is allocated per request.
namespace keyshift::compat {

/// A failure to reach or use the target, or an error reply; the message says which.
class BenchError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Where to connect and how to log in (RESP2: the load connections send no HELLO).
using BenchTarget = engine::RespEndpoint;

/// "unix" or "tcp".
inline std::string transport_of(const BenchTarget& target) {
  return !target.unix_path.empty() ? "unix" : target.tls.enabled ? "tls" : "tcp";
}

/// host:port or the socket path, for messages and reports.
std::string target_address(const BenchTarget& target);

/// How keys are chosen in workload mode (memtier_benchmark's R, S and G).
enum class KeyPattern : uint8_t { random, sequential, gaussian };

/// Parses "R", "S" or "G"; throws BenchError otherwise.
KeyPattern parse_key_pattern(std::string_view text);

/// One test: either a fixed request (redis-benchmark's tests and custom commands) whose
/// __rand_int__ placeholders change per request, or a SET/GET workload (memtier's).
struct BenchTest {
  std::string title;  // "SET", "LRANGE_100 (first 100 elements)", "workload"
  // Fixed-request tests.
  engine::RequestTemplate request;
  std::string command;    // the command's name, for the per-command results
  uint64_t keyspace = 0;  // 0: placeholders stay literal (redis-benchmark without -r)
  // Workload tests (when `workload`).
  bool workload = false;
  uint32_t ratio_set = 1;
  uint32_t ratio_get = 10;
  KeyPattern set_pattern = KeyPattern::random;
  KeyPattern get_pattern = KeyPattern::random;
  uint64_t key_minimum = 0;
  uint64_t key_maximum = 10'000'000;
  std::string key_prefix = "memtier-";
  std::string value;  // SET payload
};

/// The redis-benchmark test list, in its order; `selected` is -t's comma-separated list
/// (empty: all). Unknown names throw BenchError listing the known ones.
std::vector<BenchTest> redis_benchmark_tests(std::string_view selected, size_t data_size,
                                             uint64_t keyspace);
/// A custom command (the words after `--`); its title is the words joined by spaces.
BenchTest custom_test(const std::vector<std::string>& words, uint64_t keyspace);

/// How hard to push.
struct LoadOptions {
  BenchTarget target;
  uint32_t clients = 50;
  uint32_t threads = 1;
  uint32_t pipeline = 1;
  uint64_t requests = 100'000;  // 0: run for `seconds`
  double seconds = 0;
  uint64_t seed = 1;
  /// Called about four times a second from the calling thread with the replies counted so
  /// far and the seconds elapsed (live progress); may be empty.
  std::function<void(uint64_t, double)> progress;
};

/// What one command of a test did.
struct CommandResult {
  std::string name;
  uint64_t requests = 0;
  uint64_t hits = 0;    // non-null replies (meaningful for GET)
  uint64_t misses = 0;  // null replies
  LatencyHistogram latency;
};

/// What one test did.
struct TestResult {
  std::string title;
  uint64_t requests = 0;
  double seconds = 0;
  double rps = 0;
  double client_cpu_seconds = 0;  // user + system time of this process during the test
  LatencyHistogram latency;       // all commands
  std::vector<CommandResult> commands;
};

/// Runs `test` against the target; throws BenchError on connection trouble or the first
/// error reply (as redis-benchmark stops at "Error from server").
TestResult run_test(const BenchTest& test, const LoadOptions& options);

}  // namespace keyshift::compat
