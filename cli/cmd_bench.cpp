// keyshift bench: redis-benchmark's tests and options, memtier-style SET/GET workloads, a
// saved JSON per run, and `bench compare` for before/after tables. The load generator,
// reports and comparison live in compat/bench; this file maps flags, starts the embedded
// engine when no target is given, and prints.
#include "cli/subcommands.hpp"
#include "cli/tls_flags.hpp"
#include "cli/user_error.hpp"
#include "compat/bench/compare.hpp"
#include "compat/bench/load.hpp"
#include "compat/bench/report.hpp"
#include "compat/bench/setup.hpp"
#include "compat/process/server_process.hpp"
#include "engine/resp/connection.hpp"
#include "engine/util/atomic_file.hpp"

#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace keyshift::cli {
namespace {

struct BenchOptions {
  std::string host;
  int port = 0;
  std::string socket;
  std::string url;
  engine::TlsClientOptions tls;
  std::string password;
  std::string user;
  int dbnum = 0;
  uint32_t clients = 50;
  uint64_t requests = 0;  // 0: default
  uint32_t pipeline = 1;
  uint64_t data_size = 0;  // 0: default
  uint64_t keyspace = 0;
  std::string tests;
  bool quiet = false;
  bool csv = false;
  uint32_t threads = 1;
  std::string json_file;
  double test_time = 0;
  uint32_t runs = 1;
  std::string ratio;
  std::string key_pattern;
  std::optional<uint64_t> key_minimum;
  std::optional<uint64_t> key_maximum;
  std::string key_prefix = "memtier-";
  std::string prefill;
  std::string engine_maxmemory;
  std::vector<std::string> command;
};

struct CompareOptions {
  std::string before;
  std::string after;
  std::string format = "text";
  std::string out;
  bool allow_different = false;
};

std::string errno_text() {
  return std::strerror(errno);
}

/// Writes `text` to `path` atomically, so no partial file is left.
void write_file_atomically(const std::string& path, const std::string& text) {
  if (auto error = engine::write_file_atomically(path, text)) {
    throw UserError(fmt::format("keyshift: cannot write {}: {}", path, error->message()), 1);
  }
}

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string host_name() {
  char buf[256] = {};
  ::gethostname(buf, sizeof buf - 1);
  return buf;
}

/// Splits "A:B" into two numbers (ratio) or two letters (key pattern).
std::pair<std::string, std::string> split_pair(const std::string& text, const char* flag) {
  size_t colon = text.find(':');
  if (colon == std::string::npos || text.find(':', colon + 1) != std::string::npos) {
    throw UserError(
        fmt::format("keyshift: {} '{}': expected two values separated by ':'", flag, text), 2);
  }
  return {text.substr(0, colon), text.substr(colon + 1)};
}

uint32_t parse_ratio_part(const std::string& text, const std::string& whole) {
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || p != text.data() + text.size() || v > 1'000'000) {
    throw UserError(
        fmt::format("keyshift: --ratio '{}': expected SET:GET counts such as 1:10", whole), 2);
  }
  return static_cast<uint32_t>(v);
}

bool is_workload(const BenchOptions& o) {
  return !o.ratio.empty() || !o.key_pattern.empty() || !o.prefill.empty() ||
         o.key_minimum.has_value() || o.key_maximum.has_value();
}

/// Live progress on stderr when it is a terminal: current ops/s and elapsed time.
class Progress {
 public:
  Progress() : m_enabled(::isatty(STDERR_FILENO) == 1) {}
  std::function<void(uint64_t, double)> for_test(const std::string& title, uint64_t total) {
    if (!m_enabled) {
      return nullptr;
    }
    m_last_done = 0;
    m_last_elapsed = 0;
    return [this, title, total](uint64_t done, double elapsed) {
      double dt = elapsed - m_last_elapsed;
      double rate = dt > 0 ? static_cast<double>(done - m_last_done) / dt : 0;
      m_last_done = done;
      m_last_elapsed = elapsed;
      std::string of = total == 0 ? std::string() : fmt::format("/{}", total);
      fmt::print(stderr, "\r\033[K{}: {:.0f} ops/s, {}{} requests, {:.1f} s", title, rate, done, of,
                 elapsed);
      std::fflush(stderr);
    };
  }
  void clear() {
    if (m_enabled) {
      fmt::print(stderr, "\r\033[K");
      std::fflush(stderr);
    }
  }
  bool enabled() const { return m_enabled; }

 private:
  bool m_enabled;
  uint64_t m_last_done = 0;
  double m_last_elapsed = 0;
};

void run_bench(BenchOptions o) {
  bool workload = is_workload(o);
  if (!o.command.empty() && workload) {
    throw UserError(
        "keyshift: a command after '--' cannot be combined with workload options "
        "(--ratio, --key-pattern, --key-minimum/maximum, --prefill)",
        2);
  }
  if (workload && (!o.tests.empty() || o.keyspace != 0)) {
    throw UserError(
        "keyshift: -t and -r belong to redis-benchmark's tests; a workload (--ratio, "
        "--key-pattern, --key-minimum/maximum, --prefill) sends SET/GET over its "
        "key range instead",
        2);
  }
  if (o.clients == 0 || o.pipeline == 0 || o.threads == 0 || o.runs == 0) {
    throw UserError("keyshift: -c, -P, --threads and --runs must be at least 1", 2);
  }
  if (o.test_time < 0) {
    throw UserError("keyshift: --test-time must be positive", 2);
  }
  if (o.test_time > 0 && o.requests != 0) {
    throw UserError("keyshift: give either --test-time or -n/--requests, not both", 2);
  }
  bool explicit_target = !o.host.empty() || o.port != 0 || !o.socket.empty() || !o.url.empty();
  compat::BenchSettings s;
  compat::LoadOptions load;
  std::unique_ptr<compat::ServerProcess> engine;
  if (!o.url.empty()) {
    auto parsed = engine::parse_redis_url(o.url);
    if (!parsed) {
      throw UserError(fmt::format("keyshift: invalid URL '{}': {}", o.url, parsed.error()), 2);
    }
    load.target = *parsed;
  }
  if (!o.host.empty()) {
    load.target.host = o.host;
  }
  if (o.port != 0) {
    load.target.port = o.port;
  }
  if (!o.socket.empty()) {
    load.target.unix_path = o.socket;
  }
  if (!o.password.empty()) {
    load.target.password = o.password;
  }
  if (!o.user.empty()) {
    if (load.target.password.empty()) {
      throw UserError("keyshift: --user needs -a PASSWORD", 2);
    }
    load.target.user = o.user;
  }
  if (o.dbnum != 0) {
    load.target.db = o.dbnum;
  }
  if (!o.engine_maxmemory.empty() && explicit_target) {
    throw UserError(
        "keyshift: --engine-maxmemory only applies to the embedded engine (no "
        "target given)",
        2);
  }

  compat::BenchTest workload_test;
  std::vector<compat::BenchTest> tests;
  s.data_size = o.data_size != 0 ? o.data_size : (workload ? 32 : 3);
  s.requests = o.test_time > 0 ? 0 : (o.requests != 0 ? o.requests : 100'000);
  s.test_time = o.test_time;
  try {
    if (workload) {
      s.mode = "workload";
      auto [rs, rg] = split_pair(o.ratio.empty() ? "1:10" : o.ratio, "--ratio");
      workload_test.ratio_set = parse_ratio_part(rs, o.ratio);
      workload_test.ratio_get = parse_ratio_part(rg, o.ratio);
      if (workload_test.ratio_set + workload_test.ratio_get == 0) {
        throw UserError("keyshift: --ratio 0:0 sends nothing", 2);
      }
      auto [ps, pg] = split_pair(o.key_pattern.empty() ? "R:R" : o.key_pattern, "--key-pattern");
      workload_test.set_pattern = compat::parse_key_pattern(ps);
      workload_test.get_pattern = compat::parse_key_pattern(pg);
      workload_test.key_minimum = o.key_minimum.value_or(0);
      workload_test.key_maximum = o.key_maximum.value_or(10'000'000);
      if (workload_test.key_maximum < workload_test.key_minimum) {
        throw UserError("keyshift: --key-maximum is below --key-minimum", 2);
      }
      workload_test.key_prefix = o.key_prefix;
      workload_test.value.assign(s.data_size, 'x');
      workload_test.workload = true;
      workload_test.title =
          fmt::format("SET:GET {}:{}", workload_test.ratio_set, workload_test.ratio_get);
      s.ratio = fmt::format("{}:{}", workload_test.ratio_set, workload_test.ratio_get);
      s.key_pattern = fmt::format("{}:{}", ps, pg);
      s.key_minimum = workload_test.key_minimum;
      s.key_maximum = workload_test.key_maximum;
      s.prefill = o.prefill;
      tests.push_back(workload_test);
    } else if (!o.command.empty()) {
      s.mode = "command";
      s.command = o.command;
      tests.push_back(compat::custom_test(o.command, o.keyspace));
    } else {
      tests = compat::redis_benchmark_tests(o.tests, s.data_size, o.keyspace);
      if (tests.empty()) {
        throw UserError("keyshift: -t selects no test", 2);
      }
    }
  } catch (const compat::BenchError& e) {
    throw UserError(fmt::format("keyshift: {}", e.what()), 2);
  }
  std::optional<compat::PrefillSpec> prefill_spec;
  if (!o.prefill.empty()) {
    try {
      prefill_spec = compat::parse_prefill(o.prefill);
    } catch (const compat::BenchError& e) {
      throw UserError(fmt::format("keyshift: {}", e.what()), 2);
    }
  }

  if (!explicit_target) {
    // `keyshift serve` from this very binary, on a socket in a private directory.
    compat::ServerLaunch launch{"/proc/self/exe", {"serve"}, {}};
    launch.scratch_prefix = "keyshift-bench-";
    if (!o.engine_maxmemory.empty()) {
      launch.trailing = {"--maxmemory", o.engine_maxmemory};
    }
    auto started = compat::ServerProcess::start(launch);
    if (!started) {
      throw UserError(
          fmt::format("keyshift: the embedded engine did not start: {}", started.error()), 1);
    }
    engine = std::move(*started);
    load.target.unix_path = engine->socket();
    s.embedded = true;
  }
  load.clients = o.clients;
  load.threads = o.threads;
  load.pipeline = o.pipeline;
  load.requests = s.requests;
  load.seconds = s.test_time;
  if (load.target.unix_path.empty()) {
    engine::merge_tls_options(load.target.tls, o.tls);
  }
  s.transport = compat::transport_of(load.target);
  s.target = compat::target_address(load.target);
  s.clients = o.clients;
  s.threads = o.threads;
  s.pipeline = o.pipeline;
  s.keyspace = o.keyspace;
  s.dbnum = static_cast<uint32_t>(load.target.db);
  s.runs = o.runs;
  for (const auto& t : tests) {
    s.tests.push_back(t.title);
  }

  compat::BenchReport report;
  report.settings = s;
  report.keyshift_version = KEYSHIFT_VERSION;
  report.started_at = utc_now();
  report.client_host = host_name();
  report.client_cpus = static_cast<uint32_t>(::sysconf(_SC_NPROCESSORS_ONLN));
  Progress progress;
  try {
    report.target = compat::query_target(load.target);
    if (prefill_spec) {
      auto keys_done = [&progress](uint64_t keys) {
        if (progress.enabled()) {
          fmt::print(stderr, "\r\033[Kprefill: {} keys", keys);
          std::fflush(stderr);
        }
      };
      report.prefill =
          compat::prefill(workload_test, load, *prefill_spec, report.target.maxmemory, keys_done);
      progress.clear();
      if (!o.quiet && !o.csv) {
        fmt::print("prefill: {} keys, used_memory {} bytes{} in {:.2f} s\n", report.prefill->keys,
                   report.prefill->used_memory,
                   report.target.maxmemory == 0
                       ? std::string()
                       : fmt::format(" ({:.1f}% of maxmemory)", report.prefill->share * 100),
                   report.prefill->seconds);
      }
    }
    if (o.csv) {
      std::fputs(compat::render_csv_header().c_str(), stdout);
    }
    for (uint32_t run = 0; run < o.runs; ++run) {
      std::vector<compat::TestResult> results;
      for (const auto& t : tests) {
        load.progress = progress.for_test(t.title, load.requests);
        load.seed = run + 1;
        compat::TestResult r = compat::run_test(t, load);
        progress.clear();
        compat::TestResult shown = r;
        if (o.runs > 1) {
          shown.title = fmt::format("{} (run {})", t.title, run + 1);
        }
        if (o.csv) {
          std::fputs(compat::render_csv_line(shown).c_str(), stdout);
        } else if (o.quiet) {
          std::fputs(compat::render_quiet_line(shown).c_str(), stdout);
        } else {
          std::fputs(compat::render_summary(shown, s).c_str(), stdout);
        }
        std::fflush(stdout);
        results.push_back(std::move(r));
      }
      report.runs.push_back(std::move(results));
    }
  } catch (const compat::BenchError& e) {
    progress.clear();
    throw UserError(fmt::format("keyshift: {}", e.what()), 1);
  }
  if (o.runs > 1) {
    for (auto& avg : compat::average_runs(report.runs)) {
      avg.title += " (average)";
      if (o.csv) {
        std::fputs(compat::render_csv_line(avg).c_str(), stdout);
      } else if (o.quiet) {
        std::fputs(compat::render_quiet_line(avg).c_str(), stdout);
      } else {
        std::fputs(compat::render_summary(avg, s).c_str(), stdout);
      }
    }
  }
  std::fflush(stdout);
  if (!o.json_file.empty()) {
    write_file_atomically(o.json_file, compat::render_bench_json(report));
  }
}

std::string read_whole(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    throw UserError(fmt::format("keyshift: cannot read {}: {}", path, errno_text()), 1);
  }
  std::stringstream text;
  text << f.rdbuf();
  return text.str();
}

void run_compare(const CompareOptions& o) {
  compat::SavedRun before;
  compat::SavedRun after;
  try {
    before = compat::read_saved_run(read_whole(o.before), o.before);
    after = compat::read_saved_run(read_whole(o.after), o.after);
  } catch (const compat::BenchError& e) {
    throw UserError(fmt::format("keyshift: {}", e.what()), 1);
  }
  compat::Comparison cmp = compat::compare_runs(before, after);
  if (!cmp.differences.empty()) {
    std::string list;
    for (const auto& d : cmp.differences) {
      list += "  " + d + "\n";
    }
    if (!o.allow_different) {
      throw UserError(fmt::format("keyshift: {} and {} were measured with different settings, "
                                  "so their numbers are not comparable:\n{}"
                                  "Run both with the same settings, or pass --allow-different "
                                  "to compare anyway (the report then says so).",
                                  o.before, o.after, list),
                      1);
    }
    fmt::print(stderr, "keyshift: WARNING: the runs' settings differ:\n{}", list);
  }
  std::string text = compat::render_comparison(cmp, compat::parse_compare_format(o.format));
  if (o.out.empty()) {
    std::fputs(text.c_str(), stdout);
  } else {
    write_file_atomically(o.out, text);
  }
}

}  // namespace

void add_bench(CLI::App& app) {
  auto o = std::make_shared<BenchOptions>();
  CLI::App* sub = app.add_subcommand(
      "bench", "Benchmark a server (redis-benchmark's tests, memtier-style workloads)");
  sub->set_help_flag("--help", "Print this help message and exit");
  sub->add_option("-h,--host", o->host, "Server hostname (default 127.0.0.1)");
  sub->add_option("-p,--port", o->port, "Server port (default 6379)")->check(CLI::Range(1, 65535));
  sub->add_option("-s,--socket", o->socket, "Server unix socket (overrides host and port)");
  sub->add_option("-u,--url", o->url,
                  "Server URL: redis://[[user]:pass@]host[:port][/db], rediss://... (TLS) or "
                  "unix://path[?db=N]");
  add_tls_flags(*sub, o->tls);
  sub->add_option("-a,--password", o->password, "Password for AUTH");
  sub->add_option("--user", o->user, "User name for AUTH user password (needs -a)");
  sub->add_option("--dbnum", o->dbnum, "SELECT this database (default 0)")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("-c,--clients", o->clients, "Parallel connections (default 50)");
  sub->add_option("-n,--requests", o->requests, "Total requests per test (default 100000)");
  sub->add_option("-P,--pipeline", o->pipeline, "Requests in flight per connection (default 1)");
  sub->add_option("-d,--data-size", o->data_size,
                  "Value size in bytes (default 3; 32 in workload mode)");
  sub->add_option("-r,--keyspace", o->keyspace,
                  "Replace __rand_int__ with random 12-digit numbers below this");
  sub->add_option("-t,--tests", o->tests, "Comma-separated redis-benchmark tests (default all)");
  sub->add_flag("-q,--quiet", o->quiet, "One line per test: requests per second and p50");
  sub->add_flag("--csv", o->csv, "redis-benchmark's CSV output");
  sub->add_option("--threads", o->threads, "Client threads, one event loop each (default 1)");
  sub->add_option("--json", o->json_file,
                  "Save options, results, histograms and the target's "
                  "identity to this file (for bench compare)");
  sub->add_option("--test-time", o->test_time,
                  "Run each test for this many seconds instead of "
                  "a request count");
  sub->add_option("--runs", o->runs, "Repeat everything N times; report each and the average");
  sub->add_option("--ratio", o->ratio, "Workload: SET:GET mix, e.g. 1:0, 0:1, 1:10 (default)");
  sub->add_option("--key-pattern", o->key_pattern,
                  "Workload: SET:GET key choice, R random, S sequential, G gaussian (R:R)");
  sub->add_option("--key-minimum", o->key_minimum, "Workload: lowest key number (default 0)");
  sub->add_option("--key-maximum", o->key_maximum,
                  "Workload: highest key number (default 10000000)");
  sub->add_option("--key-prefix", o->key_prefix, "Workload: key name prefix (default memtier-)");
  sub->add_option("--prefill", o->prefill,
                  "Workload: first fill the target to PERCENT% of maxmemory or with KEYS keys");
  sub->add_option("--engine-maxmemory", o->engine_maxmemory,
                  "maxmemory of the embedded engine (only without a target), e.g. 256mb");
  sub->add_option("command", o->command, "Custom command after '--' (e.g. -- SET k __rand_int__)");
  sub->footer(
      "Without -h/-p/-s/-u it benchmarks an embedded keyshift engine on a private unix socket.\n"
      "  keyshift bench -h 127.0.0.1 -p 6379 -t set,get -n 100000 -P 16 -q\n"
      "  keyshift bench -s /run/redis/redis.sock --ratio 1:10 --key-pattern G:G \\\n"
      "      --prefill 35% --test-time 30 --json before.json\n"
      "  keyshift bench -r 100000 -- HSET h:__rand_int__ f v\n"
      "  keyshift bench compare before.json after.json --format html --out report.html\n"
      "See man keyshift-bench.\n");
  sub->callback([o, sub]() {
    if (sub->get_subcommands().empty()) {
      run_bench(*o);
    }
  });

  auto c = std::make_shared<CompareOptions>();
  CLI::App* cmp = sub->add_subcommand("compare", "Compare two saved runs (--json files)");
  cmp->add_option("BEFORE", c->before, "JSON of the run before the change")->required();
  cmp->add_option("AFTER", c->after, "JSON of the run after the change")->required();
  cmp->add_option("--format", c->format, "text (default), markdown, csv, json or html")
      ->check(CLI::IsMember({"text", "markdown", "csv", "json", "html"}));
  cmp->add_option("--out", c->out, "Write to this file instead of stdout");
  cmp->add_flag("--allow-different", c->allow_different,
                "Compare runs with different settings anyway (flagged in the report)");
  cmp->callback([c]() { run_compare(*c); });
}

}  // namespace keyshift::cli
