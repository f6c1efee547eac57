#include "compat/report/progress.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using keyshift::compat::ProgressMeter;

TEST_SUITE("compat::progress") {
  TEST_CASE("the line says bytes read, percent, MB/s and the time left") {
    CHECK(ProgressMeter::line("dump.rdb", 12'500'000, 50'000'000, 0.5) ==
          "\rkeyshift: dump.rdb: 12.5/50.0 MB 25% 25.0 MB/s 0:02 left");
    CHECK(ProgressMeter::line("x.rdb", 0, 200'000'000, 0.0) ==
          "\rkeyshift: x.rdb: 0.0/200.0 MB 0%");
    CHECK(ProgressMeter::line("x.rdb", 1'000'000, 200'000'000, 1.0) ==
          "\rkeyshift: x.rdb: 1.0/200.0 MB 0% 1.0 MB/s 3:19 left");
  }

  TEST_CASE("the meter draws at once, then at most once per interval, and clears at the end") {
    double now = 10.0;
    std::vector<std::string> out;
    ProgressMeter meter(
        "f.rdb", 100'000'000, [&](std::string_view s) { out.emplace_back(s); }, [&] { return now; },
        0.2);
    now = 10.1;
    meter.update(1'000'000);
    REQUIRE(out.size() == 1);
    CHECK(out[0] == "\rkeyshift: f.rdb: 1.0/100.0 MB 1% 10.0 MB/s 0:10 left");
    now = 10.2;
    meter.update(2'000'000);  // 0.1 s after the last drawing: not redrawn
    CHECK(out.size() == 1);
    now = 10.35;
    meter.update(3'500'000);
    REQUIRE(out.size() == 2);
    CHECK(out[1].find(" 3% ") != std::string::npos);
    meter.update(500'000'000);  // past the total (a last key's offset): capped
    now = 11.0;
    meter.finish();
    REQUIRE(out.size() == 4);
    CHECK(out[2] == "\rkeyshift: f.rdb: 100.0/100.0 MB 100% 100.0 MB/s 0:00 left");
    CHECK(out[3] == "\r\033[K");
  }

  TEST_CASE("a meter never updated stays silent") {
    std::vector<std::string> out;
    ProgressMeter meter(
        "f.rdb", 10, [&](std::string_view s) { out.emplace_back(s); }, [] { return 0.0; });
    meter.finish();
    CHECK(out.empty());
  }
}
