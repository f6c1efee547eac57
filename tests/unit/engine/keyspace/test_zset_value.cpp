#include "engine/keyspace/zset_value.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

using keyshift::engine::ObjEncoding;
using keyshift::engine::ZAddOutcome;
using keyshift::engine::ZSetLimits;
using keyshift::engine::ZSetValue;

namespace {

std::vector<std::pair<std::string, double>> items(const ZSetValue& z) {
  std::vector<std::pair<std::string, double>> out;
  z.for_each([&](std::string_view m, double s) { out.emplace_back(std::string(m), s); });
  return out;
}

ZAddOutcome add(ZSetValue& z, double s, std::string_view m, const ZSetLimits& l = {}) {
  double ignored = 0;
  return z.add(s, m, 0, ignored, l);
}

}  // namespace

TEST_SUITE("engine::zset_value") {
  TEST_CASE("a small sorted set is a listpack ordered by score then member") {
    ZSetValue z(1);
    CHECK(add(z, 2, "b") == ZAddOutcome::added);
    CHECK(add(z, 1, "z") == ZAddOutcome::added);
    CHECK(add(z, 2, "a") == ZAddOutcome::added);
    CHECK(add(z, 2, "10") == ZAddOutcome::added);  // stored as an integer entry
    CHECK(add(z, 2, "a") == ZAddOutcome::unchanged);
    CHECK(z.encoding() == ObjEncoding::listpack);
    auto v = items(z);
    REQUIRE(v.size() == 4);
    CHECK(v[0].first == "z");
    CHECK(v[1].first == "10");
    CHECK(v[2].first == "a");
    CHECK(v[3].first == "b");
    CHECK(z.rank("b", false, nullptr) == 3);
    CHECK(z.rank("b", true, nullptr) == 0);
    CHECK(z.rank("nope", false, nullptr) == -1);
  }

  TEST_CASE("listpack scores: integers stay exact, -0 becomes 0, others keep their text") {
    ZSetValue z(1);
    add(z, -0.0, "neg0");
    add(z, 0.1, "tenth");
    add(z, std::numeric_limits<double>::infinity(), "inf");
    add(z, 1e300, "big");
    double s = 1;
    REQUIRE(z.score("neg0", s));
    CHECK_FALSE(std::signbit(s));
    REQUIRE(z.score("tenth", s));
    CHECK(s == 0.1);
    REQUIRE(z.score("inf", s));
    CHECK(std::isinf(s));
    std::vector<std::string> texts;
    z.scan(0, [&](std::string_view, std::string_view t) { texts.emplace_back(t); });
    CHECK(texts == std::vector<std::string>{"0", "0.1", "1e+300", "inf"});
  }

  TEST_CASE("crossing the entry or value limit converts to skiplist with the same content") {
    ZSetLimits limits{4, 8};
    ZSetValue z(2);
    for (int i = 0; i < 4; ++i) {
      add(z, i, "m" + std::to_string(i), limits);
    }
    CHECK(z.encoding() == ObjEncoding::listpack);
    auto before = items(z);
    add(z, 10, "m4", limits);
    CHECK(z.encoding() == ObjEncoding::skiplist);
    before.emplace_back("m4", 10);
    CHECK(items(z) == before);

    ZSetValue w(3);
    add(w, 1, "short", limits);
    add(w, 1, "a-member-longer-than-eight", limits);
    CHECK(w.encoding() == ObjEncoding::skiplist);
  }

  TEST_CASE("convert_to_listpack_if_fits goes back only when the result fits") {
    ZSetLimits limits{4, 8};
    ZSetValue z(4);
    z.convert_to_skiplist();
    add(z, 1, "a", limits);
    add(z, 2, "b", limits);
    z.convert_to_listpack_if_fits(1, 2, limits);
    CHECK(z.encoding() == ObjEncoding::listpack);
    CHECK(items(z) == std::vector<std::pair<std::string, double>>{{"a", 1}, {"b", 2}});
    z.convert_to_skiplist();
    z.convert_to_listpack_if_fits(9, 2, limits);
    CHECK(z.encoding() == ObjEncoding::skiplist);
  }

  TEST_CASE("both encodings agree on every operation") {
    ZSetLimits big{1000, 1000};
    std::mt19937_64 rng(77);
    for (int round = 0; round < 20; ++round) {
      ZSetValue lp(5);
      ZSetValue sl(6);
      sl.convert_to_skiplist();
      for (int i = 0; i < 60; ++i) {
        std::string m = std::to_string(rng() % 40);
        double s = static_cast<double>(rng() % 10) / 2;
        double a = 0;
        double b = 0;
        uint32_t flags = rng() % 4 == 0 ? uint32_t{keyshift::engine::k_zadd_incr} : 0u;
        CHECK(lp.add(s, m, flags, a, big) == sl.add(s, m, flags, b, big));
        CHECK(a == b);
        if (rng() % 5 == 0) {
          CHECK(lp.remove(m) == sl.remove(m));
        }
      }
      REQUIRE(lp.encoding() == ObjEncoding::listpack);
      REQUIRE(items(lp) == items(sl));
      for (const auto& [m, s] : items(lp)) {
        CHECK(lp.rank(m, false, nullptr) == sl.rank(m, false, nullptr));
        CHECK(lp.rank(m, true, nullptr) == sl.rank(m, true, nullptr));
      }
      keyshift::engine::ZScoreRange r;
      REQUIRE(keyshift::engine::parse_score_range("(1", "3.5", r));
      CHECK(lp.count_in_range(r) == sl.count_in_range(r));
      std::vector<std::string> a;
      std::vector<std::string> b;
      lp.range_by_score(r, 1, 3, true, [&](std::string_view m, double) { a.emplace_back(m); });
      sl.range_by_score(r, 1, 3, true, [&](std::string_view m, double) { b.emplace_back(m); });
      CHECK(a == b);
      CHECK(lp.remove_score_range(r) == sl.remove_score_range(r));
      CHECK(items(lp) == items(sl));
      if (lp.size() > 3) {
        CHECK(lp.remove_rank_range(1, 2) == sl.remove_rank_range(1, 2));
        CHECK(items(lp) == items(sl));
      }
      std::string m1;
      std::string m2;
      double s1 = 0;
      double s2 = 0;
      CHECK(lp.pop(true, m1, s1) == sl.pop(true, m2, s2));
      CHECK(m1 == m2);
      CHECK(items(lp) == items(sl));
    }
  }

  TEST_CASE("clone copies either encoding and shares nothing") {
    ZSetLimits limits{2, 64};
    for (int n : {2, 10}) {
      ZSetValue z(8);
      for (int i = 0; i < n; ++i) {
        add(z, i * 1.5, "x" + std::to_string(i), limits);
      }
      std::unique_ptr<ZSetValue> c(static_cast<ZSetValue*>(z.clone()));
      CHECK(c->encoding() == z.encoding());
      CHECK(items(*c) == items(z));
      z.remove("x0");
      CHECK(c->size() == static_cast<size_t>(n));
    }
  }

  TEST_CASE("bytes() tracks growth and shrinks back as members go") {
    ZSetLimits limits{16, 64};
    ZSetValue z(9);
    size_t empty = z.bytes();
    for (int i = 0; i < 100; ++i) {
      add(z, i, "member-" + std::to_string(i), limits);
    }
    size_t full = z.bytes();
    CHECK(full > empty + 100 * 8);
    for (int i = 0; i < 100; ++i) {
      z.remove("member-" + std::to_string(i));
    }
    CHECK(z.bytes() < full / 4);
  }
}
