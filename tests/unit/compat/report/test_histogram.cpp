#include "compat/report/histogram.hpp"

#include <doctest/doctest.h>

#include <cstdint>

using keyshift::compat::LatencyHistogram;

TEST_SUITE("compat::LatencyHistogram") {
  TEST_CASE("every value lands in a bucket whose upper bound is within 1/256 above it") {
    for (uint64_t v = 0; v < (uint64_t{1} << 39); v = v * 3 / 2 + 1) {
      CAPTURE(v);
      size_t i = LatencyHistogram::index_of(v);
      uint64_t upper = LatencyHistogram::upper_of(i);
      CHECK(upper >= v);
      CHECK(static_cast<double>(upper - v) <= static_cast<double>(v) / 256.0 + 1.0);
      CHECK(LatencyHistogram::index_of(upper) == i);
      CHECK(i < LatencyHistogram::k_buckets);
    }
  }

  TEST_CASE("percentiles of a uniform spread are where they should be") {
    LatencyHistogram h;
    for (uint64_t us = 1; us <= 1000; ++us) {
      h.record(us * 1000);
    }
    CHECK(h.count() == 1000);
    CHECK(h.min() == 1000);
    CHECK(h.max() == 1'000'000);
    CHECK(h.mean() == doctest::Approx(500'500.0));
    auto near = [](uint64_t got, double want) {
      return static_cast<double>(got) >= want && static_cast<double>(got) <= want * 1.004 + 1;
    };
    CHECK(near(h.percentile(50), 500'000));
    CHECK(near(h.percentile(99), 990'000));
    CHECK(near(h.percentile(99.9), 999'000));
    CHECK(h.percentile(100) == 1'000'000);  // capped by the exact maximum
  }

  TEST_CASE("merging adds counts and keeps the extremes") {
    LatencyHistogram a;
    LatencyHistogram b;
    a.record(100);
    b.record(5'000'000);
    b.record(50);
    a.merge(b);
    CHECK(a.count() == 3);
    CHECK(a.min() == 50);
    CHECK(a.max() == 5'000'000);
    CHECK(a.buckets().size() == 3);
  }

  TEST_CASE("saved buckets read back into the same percentiles") {
    LatencyHistogram h;
    for (uint64_t v = 1000; v < 3'000'000; v += 777) {
      h.record(v);
    }
    LatencyHistogram back;
    for (const auto& [upper, count] : h.buckets()) {
      back.add_bucket(upper, count);
    }
    CHECK(back.count() == h.count());
    for (double p : {50.0, 90.0, 99.0}) {
      CHECK(back.percentile(p) == h.percentile(p));
    }
  }

  TEST_CASE("an empty histogram reports zeros") {
    LatencyHistogram h;
    CHECK(h.percentile(50) == 0);
    CHECK(h.min() == 0);
    CHECK(h.mean() == 0.0);
  }
}
