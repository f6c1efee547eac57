#include "compat/bench/report.hpp"

#include "compat/report/json_text.hpp"

#include <fmt/core.h>

#include <algorithm>

namespace keyshift::compat {
namespace {

double ms(uint64_t ns) {
  return static_cast<double>(ns) / 1e6;
}

/// The percentiles every report shows, with their JSON names.
struct Percentile {
  const char* name;
  double percent;
};
constexpr Percentile k_percentiles[] = {
    {"p50", 50.0}, {"p90", 90.0}, {"p95", 95.0}, {"p99", 99.0}, {"p99_9", 99.9}};

void append_latency_json(std::string& out, const LatencyHistogram& h) {
  out += fmt::format("{{\"avg\": {:.3f}, \"min\": {:.3f}", h.mean() / 1e6, ms(h.min()));
  for (const auto& p : k_percentiles) {
    out += fmt::format(", \"{}\": {:.3f}", p.name, ms(h.percentile(p.percent)));
  }
  out += fmt::format(", \"max\": {:.3f}}}", ms(h.max()));
}

void append_histogram_json(std::string& out, const LatencyHistogram& h) {
  out += "[";
  bool first = true;
  for (const auto& [upper, count] : h.buckets()) {
    out += fmt::format("{}[{}, {}]", first ? "" : ", ", upper, count);
    first = false;
  }
  out += "]";
}

/// One test; `histograms` adds the latency buckets (the test's, and each command's when it has
/// more than one command, since a single command's are the test's).
void append_test_json(std::string& out, const TestResult& t, const char* indent, bool histograms) {
  out += fmt::format("{}{{\"name\": ", indent);
  append_json_string(out, t.title);
  out += fmt::format(
      ", \"requests\": {}, \"seconds\": {:.6f}, \"rps\": {:.2f}, "
      "\"client_cpu_seconds\": {:.6f},\n{}  \"latency_ms\": ",
      t.requests, t.seconds, t.rps, t.client_cpu_seconds, indent);
  append_latency_json(out, t.latency);
  if (histograms) {
    out += fmt::format(",\n{}  \"histogram_ns\": ", indent);
    append_histogram_json(out, t.latency);
  }
  out += fmt::format(",\n{}  \"commands\": [", indent);
  bool first = true;
  for (const auto& c : t.commands) {
    out += first ? "\n" : ",\n";
    first = false;
    out += fmt::format("{}    {{\"name\": ", indent);
    append_json_string(out, c.name);
    double rps = t.seconds > 0 ? static_cast<double>(c.requests) / t.seconds : 0;
    out += fmt::format(
        ", \"requests\": {}, \"rps\": {:.2f}, \"hits\": {}, \"misses\": {},\n{}"
        "     \"latency_ms\": ",
        c.requests, rps, c.hits, c.misses, indent);
    append_latency_json(out, c.latency);
    if (histograms && t.commands.size() > 1) {
      out += fmt::format(",\n{}     \"histogram_ns\": ", indent);
      append_histogram_json(out, c.latency);
    }
    out += "}";
  }
  out += fmt::format("]}}");
}

void append_string_list(std::string& out, const std::vector<std::string>& list) {
  out += "[";
  for (size_t i = 0; i < list.size(); ++i) {
    if (i > 0) {
      out += ", ";
    }
    append_json_string(out, list[i]);
  }
  out += "]";
}

void append_string_member(std::string& out, const char* name, const std::string& value,
                          bool null_when_empty = false) {
  out += fmt::format("\"{}\": ", name);
  if (null_when_empty && value.empty()) {
    out += "null";
  } else {
    append_json_string(out, value);
  }
}

}  // namespace

std::string render_quiet_line(const TestResult& test) {
  return fmt::format("{}: {:.2f} requests per second, p50={:.3f} msec\n", test.title, test.rps,
                     ms(test.latency.percentile(50)));
}

std::string render_csv_header() {
  return "\"test\",\"rps\",\"avg_latency_ms\",\"min_latency_ms\",\"p50_latency_ms\","
         "\"p95_latency_ms\",\"p99_latency_ms\",\"max_latency_ms\"\n";
}

std::string render_csv_line(const TestResult& test) {
  std::string title;
  for (char c : test.title) {
    title += c;
    if (c == '"') {
      title += '"';
    }
  }
  const LatencyHistogram& h = test.latency;
  return fmt::format(
      "\"{}\",\"{:.2f}\",\"{:.3f}\",\"{:.3f}\",\"{:.3f}\",\"{:.3f}\",\"{:.3f}\","
      "\"{:.3f}\"\n",
      title, test.rps, h.mean() / 1e6, ms(h.min()), ms(h.percentile(50)), ms(h.percentile(95)),
      ms(h.percentile(99)), ms(h.max()));
}

std::string render_summary(const TestResult& test, const BenchSettings& settings) {
  std::string out = fmt::format("====== {} ======\n", test.title);
  out += fmt::format("  {} requests completed in {:.2f} seconds\n", test.requests, test.seconds);
  out += fmt::format("  {} parallel clients, {} thread(s), pipeline {}\n", settings.clients,
                     settings.threads, settings.pipeline);
  out += fmt::format("  {} bytes payload\n\n", settings.data_size);
  out += fmt::format("  throughput summary: {:.2f} requests per second\n", test.rps);
  out += "  latency summary (msec):\n";
  out += fmt::format("    {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}\n", "command", "avg", "p50",
                     "p90", "p99", "p99.9", "max");
  auto row = [&out](const std::string& name, const LatencyHistogram& h) {
    out += fmt::format("    {:>9} {:9.3f} {:9.3f} {:9.3f} {:9.3f} {:9.3f} {:9.3f}\n", name,
                       h.mean() / 1e6, ms(h.percentile(50)), ms(h.percentile(90)),
                       ms(h.percentile(99)), ms(h.percentile(99.9)), ms(h.max()));
  };
  if (test.commands.size() > 1) {
    for (const auto& c : test.commands) {
      row(c.name, c.latency);
    }
  }
  row("all", test.latency);
  for (const auto& c : test.commands) {
    if (c.name == "GET" && settings.mode == "workload") {
      out += fmt::format("  GET hits {} misses {}\n", c.hits, c.misses);
    }
  }
  out += "\n";
  return out;
}

std::vector<TestResult> average_runs(const std::vector<std::vector<TestResult>>& runs) {
  if (runs.empty()) {
    return {};
  }
  if (runs.size() == 1) {
    return runs.front();
  }
  std::vector<TestResult> out;
  for (size_t i = 0; i < runs.front().size(); ++i) {
    TestResult avg;
    avg.title = runs.front()[i].title;
    double rps = 0;
    for (const auto& run : runs) {
      const TestResult& t = run[i];
      avg.requests += t.requests;
      avg.seconds += t.seconds;
      avg.client_cpu_seconds += t.client_cpu_seconds;
      rps += t.rps;
      avg.latency.merge(t.latency);
      for (const auto& c : t.commands) {
        auto it = std::find_if(avg.commands.begin(), avg.commands.end(),
                               [&c](const CommandResult& x) { return x.name == c.name; });
        if (it == avg.commands.end()) {
          avg.commands.push_back(CommandResult{c.name, 0, 0, 0, {}});
          it = avg.commands.end() - 1;
        }
        it->requests += c.requests;
        it->hits += c.hits;
        it->misses += c.misses;
        it->latency.merge(c.latency);
      }
    }
    avg.rps = rps / static_cast<double>(runs.size());
    out.push_back(std::move(avg));
  }
  return out;
}

std::string render_bench_json(const BenchReport& r) {
  const BenchSettings& s = r.settings;
  std::string out = "{\n  \"format\": \"keyshift-bench\",\n  \"version\": 1,\n  ";
  append_string_member(out, "keyshift_version", r.keyshift_version);
  out += ",\n  ";
  append_string_member(out, "started_at", r.started_at);
  out += ",\n  \"options\": {";
  append_string_member(out, "mode", s.mode);
  out += ", ";
  append_string_member(out, "transport", s.transport);
  out += ", ";
  append_string_member(out, "target", s.target);
  out += fmt::format(
      ", \"embedded\": {},\n    \"clients\": {}, \"threads\": {}, \"pipeline\": {}, "
      "\"requests\": {}, \"test_time\": {}, \"data_size\": {}, \"keyspace\": {}, "
      "\"dbnum\": {},\n    \"tests\": ",
      s.embedded ? "true" : "false", s.clients, s.threads, s.pipeline,
      s.requests == 0 ? std::string("null") : std::to_string(s.requests),
      s.test_time == 0 ? std::string("null") : fmt::format("{:g}", s.test_time), s.data_size,
      s.keyspace, s.dbnum);
  append_string_list(out, s.tests);
  out += ", \"command\": ";
  if (s.command.empty()) {
    out += "null";
  } else {
    append_string_list(out, s.command);
  }
  out += ",\n    \"workload\": ";
  if (s.mode != "workload") {
    out += "null";
  } else {
    out += "{";
    append_string_member(out, "ratio", s.ratio);
    out += ", ";
    append_string_member(out, "key_pattern", s.key_pattern);
    out +=
        fmt::format(", \"key_minimum\": {}, \"key_maximum\": {}, ", s.key_minimum, s.key_maximum);
    append_string_member(out, "prefill", s.prefill, true);
    out += "}";
  }
  out += fmt::format(", \"runs\": {}}},\n  \"target\": {{", s.runs);
  const TargetInfo& t = r.target;
  append_string_member(out, "server_name", t.server_name);
  out += ", ";
  append_string_member(out, "server_version", t.server_version);
  out += ", ";
  append_string_member(out, "redis_version", t.redis_version);
  out += ", ";
  append_string_member(out, "os", t.os);
  out += ", ";
  append_string_member(out, "arch_bits", t.arch_bits);
  out += fmt::format(",\n    \"io_threads\": {}, \"maxmemory\": {}, ",
                     t.io_threads < 0 ? std::string("null") : std::to_string(t.io_threads),
                     t.maxmemory);
  append_string_member(out, "maxmemory_policy", t.maxmemory_policy);
  out += "},\n  \"prefill\": ";
  if (r.prefill) {
    out += fmt::format(
        "{{\"keys\": {}, \"used_memory\": {}, \"share\": {:.4f}, \"seconds\": "
        "{:.3f}}}",
        r.prefill->keys, r.prefill->used_memory, r.prefill->share, r.prefill->seconds);
  } else {
    out += "null";
  }
  out += ",\n  \"client\": {";
  append_string_member(out, "host", r.client_host);
  out += fmt::format(", \"cpus\": {}}},\n  \"runs\": [", r.client_cpus);
  for (size_t i = 0; i < r.runs.size(); ++i) {
    out += fmt::format("{}\n    {{\"run\": {}, \"tests\": [", i == 0 ? "" : ",", i + 1);
    for (size_t j = 0; j < r.runs[i].size(); ++j) {
      out += j == 0 ? "\n" : ",\n";
      append_test_json(out, r.runs[i][j], "      ", false);
    }
    out += "]}";
  }
  out += "],\n  \"tests\": [";
  std::vector<TestResult> avg = average_runs(r.runs);
  for (size_t j = 0; j < avg.size(); ++j) {
    out += j == 0 ? "\n" : ",\n";
    append_test_json(out, avg[j], "    ", true);
  }
  out += "]\n}\n";
  return out;
}

}  // namespace keyshift::compat
