#include "compat/bench/compare.hpp"
#include "compat/bench/load.hpp"
#include "compat/bench/report.hpp"
#include "compat/report/json_value.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace keyshift::compat;  // NOLINT: test file, many small types

namespace {

TestResult make_test(const std::string& title, double rps, uint64_t p50_us) {
  TestResult t;
  t.title = title;
  t.requests = 1000;
  t.seconds = 1000.0 / rps;
  t.rps = rps;
  CommandResult c;
  c.name = title;
  for (int i = 0; i < 1000; ++i) {
    uint64_t ns = (i < 990 ? p50_us : p50_us * 10) * 1000;
    c.latency.record(ns);
    t.latency.record(ns);
  }
  c.requests = 1000;
  t.commands.push_back(c);
  return t;
}

BenchReport make_report(uint32_t clients, double set_rps) {
  BenchReport r;
  r.settings.clients = clients;
  r.settings.target = "127.0.0.1:6379";
  r.settings.tests = {"SET", "GET"};
  r.target.server_name = "redis";
  r.target.server_version = "7.0.15";
  r.started_at = "2026-01-01T00:00:00Z";
  r.runs.push_back({make_test("SET", set_rps, 100), make_test("GET", 2000, 100)});
  return r;
}

}  // namespace

TEST_SUITE("compat::bench report and compare") {
  TEST_CASE("the -q line and the CSV have redis-benchmark's shape") {
    TestResult t = make_test("SET", 201612.914, 119);
    CHECK(render_quiet_line(t) == "SET: 201612.91 requests per second, p50=0.119 msec\n");
    CHECK(render_csv_header().starts_with("\"test\",\"rps\",\"avg_latency_ms\""));
    CHECK(render_csv_line(t).starts_with("\"SET\",\"201612.91\","));
  }

  TEST_CASE("the JSON document parses and reads back as a saved run") {
    std::string json = render_bench_json(make_report(50, 1000));
    JsonValue doc = parse_json(json);
    CHECK(doc.find("format")->string == "keyshift-bench");
    CHECK(doc.find("runs")->array.size() == 1);
    SavedRun run = read_saved_run(json, "a.json");
    REQUIRE(run.tests.size() == 2);
    CHECK(run.tests[0].name == "SET");
    CHECK(run.tests[0].rps == doctest::Approx(1000));
    CHECK(run.tests[0].p50_ms == doctest::Approx(0.1).epsilon(0.02));
    CHECK(run.server == "redis 7.0.15 at 127.0.0.1:6379 (tcp)");
  }

  TEST_CASE("averaging runs takes the mean requests/s and merges the histograms") {
    std::vector<std::vector<TestResult>> runs{{make_test("SET", 1000, 100)},
                                              {make_test("SET", 3000, 200)}};
    auto avg = average_runs(runs);
    REQUIRE(avg.size() == 1);
    CHECK(avg[0].rps == doctest::Approx(2000));
    CHECK(avg[0].latency.count() == 2000);
    CHECK(avg[0].commands[0].requests == 2000);
  }

  TEST_CASE("compare says which way each test went and flags differing settings") {
    SavedRun before = read_saved_run(render_bench_json(make_report(50, 1000)), "before.json");
    SavedRun same = read_saved_run(render_bench_json(make_report(50, 1500)), "after.json");
    Comparison c = compare_runs(before, same);
    CHECK(c.differences.empty());
    REQUIRE(c.tests.size() == 2);
    CHECK(c.tests[0].direction == Direction::faster);
    CHECK(c.tests[0].rps_change_pct == doctest::Approx(50));
    CHECK(c.tests[1].direction == Direction::same);
    SavedRun slower = read_saved_run(render_bench_json(make_report(50, 500)), "after.json");
    CHECK(compare_runs(before, slower).tests[0].direction == Direction::slower);
    SavedRun other = read_saved_run(render_bench_json(make_report(100, 1000)), "after.json");
    Comparison d = compare_runs(before, other);
    REQUIRE(d.differences.size() == 1);
    CHECK(d.differences[0] == "clients: 50 -> 100");
    CHECK(render_comparison(d, CompareFormat::text).find("WARNING: settings differ") !=
          std::string::npos);
    CHECK(render_comparison(d, CompareFormat::html).find("id=\"settings-differ\"") !=
          std::string::npos);
  }

  TEST_CASE("a file that is not a saved run is refused with its name") {
    CHECK_THROWS_WITH_AS(read_saved_run("{\"format\": \"other\"}", "x.json"),
                         doctest::Contains("x.json"), BenchError);
    CHECK_THROWS_WITH_AS(read_saved_run("{\"format\": ", "y.json"),
                         doctest::Contains("y.json: error at byte"), BenchError);
  }
}
