#include "engine/ds/intset.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <random>
#include <set>
#include <string>

using keyshift::engine::Intset;

namespace {

/// The blob Valkey would hold for `values` (ascending, distinct) at `width` bytes each.
std::string expected_blob(uint32_t width, std::initializer_list<int64_t> values) {
  std::string out;
  auto put = [&](uint64_t v, uint32_t n) {
    for (uint32_t i = 0; i < n; ++i) {
      out.push_back(static_cast<char>(v >> (8 * i)));
    }
  };
  put(width, 4);
  put(values.size(), 4);
  for (int64_t v : values) {
    put(static_cast<uint64_t>(v), width);
  }
  return out;
}

}  // namespace

TEST_SUITE("engine::intset") {
  TEST_CASE("a new intset is an empty 16-bit blob") {
    Intset s;
    CHECK(s.size() == 0);
    CHECK(s.encoding() == 2);
    CHECK(s.blob() == expected_blob(2, {}));
  }

  TEST_CASE("insert keeps the integers sorted and rejects duplicates") {
    Intset s;
    CHECK(s.insert(5));
    CHECK(s.insert(1));
    CHECK(s.insert(3));
    CHECK_FALSE(s.insert(3));
    CHECK(s.size() == 3);
    CHECK(s.blob() == expected_blob(2, {1, 3, 5}));
    CHECK(s.min() == 1);
    CHECK(s.max() == 5);
  }

  TEST_CASE("a value that needs more bytes upgrades every member") {
    Intset s;
    s.insert(1);
    s.insert(-2);
    CHECK(s.insert(70000));  // needs 32 bits: appended at the back
    CHECK(s.encoding() == 4);
    CHECK(s.blob() == expected_blob(4, {-2, 1, 70000}));
    CHECK(s.insert(-5000000000));  // needs 64 bits: prepended at the front
    CHECK(s.encoding() == 8);
    CHECK(s.blob() == expected_blob(8, {-5000000000, -2, 1, 70000}));
    CHECK(s.insert(INT64_MAX));
    CHECK(s.insert(INT64_MIN));
    CHECK(s.at(0) == INT64_MIN);
    CHECK(s.max() == INT64_MAX);
  }

  TEST_CASE("width boundaries follow int16 and int32 limits") {
    CHECK(Intset::width_for(32767) == 2);
    CHECK(Intset::width_for(-32768) == 2);
    CHECK(Intset::width_for(32768) == 4);
    CHECK(Intset::width_for(-32769) == 4);
    CHECK(Intset::width_for(INT32_MAX) == 4);
    CHECK(Intset::width_for(INT32_MIN) == 4);
    CHECK(Intset::width_for(int64_t{INT32_MAX} + 1) == 8);
    CHECK(Intset::width_for(int64_t{INT32_MIN} - 1) == 8);
  }

  TEST_CASE("search finds members and misses values wider than the encoding") {
    Intset s;
    for (int64_t v : {-100, 0, 7, 300}) {
      s.insert(v);
    }
    CHECK(s.contains(-100));
    CHECK(s.contains(300));
    CHECK_FALSE(s.contains(8));
    CHECK_FALSE(s.contains(1000000));
    CHECK_FALSE(s.contains(-101));
  }

  TEST_CASE("erase removes members and never downgrades the encoding") {
    Intset s;
    s.insert(1);
    s.insert(100000);
    CHECK(s.erase(100000));
    CHECK_FALSE(s.erase(100000));
    CHECK_FALSE(s.erase(5000000000));
    CHECK(s.encoding() == 4);
    CHECK(s.blob() == expected_blob(4, {1}));
    CHECK(s.erase(1));
    CHECK(s.empty());
  }

  TEST_CASE("a blob round-trips through from_blob and bad blobs are refused") {
    Intset s;
    for (int64_t v : {9, -3, 70000, 12}) {
      s.insert(v);
    }
    auto copy = Intset::from_blob(s.blob());
    REQUIRE(copy.has_value());
    CHECK(copy->blob() == s.blob());
    CHECK(copy->contains(70000));
    CHECK(copy->insert(5000000000));
    CHECK(copy->size() == 5);

    CHECK_FALSE(Intset::from_blob(expected_blob(2, {})).has_value());       // empty
    CHECK_FALSE(Intset::from_blob(expected_blob(3, {1})).has_value());      // bad width
    CHECK_FALSE(Intset::from_blob(expected_blob(2, {2, 1})).has_value());   // unordered
    CHECK(Intset::from_blob(expected_blob(2, {2, 1}), false).has_value());  // shallow check
    CHECK_FALSE(Intset::from_blob(expected_blob(2, {1, 1})).has_value());   // duplicate
    std::string truncated = expected_blob(2, {1, 2});
    truncated.pop_back();
    CHECK_FALSE(Intset::from_blob(truncated).has_value());
    CHECK_FALSE(Intset::from_blob("abc").has_value());
  }

  TEST_CASE("random inserts and erases agree with std::set") {
    std::mt19937_64 rng(42);
    Intset s;
    std::set<int64_t> model;
    for (int i = 0; i < 5000; ++i) {
      int64_t v = 0;
      switch (rng() % 3) {
        case 0:
          v = static_cast<int64_t>(rng() % 200) - 100;
          break;
        case 1:
          v = static_cast<int64_t>(rng() % 200000) - 100000;
          break;
        default:
          v = static_cast<int64_t>(rng());
          break;
      }
      if (rng() % 3 == 0) {
        CHECK(s.erase(v) == (model.erase(v) == 1));
      } else {
        CHECK(s.insert(v) == model.insert(v).second);
      }
    }
    REQUIRE(s.size() == model.size());
    uint32_t i = 0;
    for (int64_t v : model) {
      CHECK(s.at(i++) == v);
    }
    CHECK(Intset::validate(s.blob(), true) == !model.empty());
  }
}
