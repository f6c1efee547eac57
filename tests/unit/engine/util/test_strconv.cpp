#include "engine/util/strconv.hpp"

#include <doctest/doctest.h>

#include <cstdint>

using keyshift::engine::parse_i64;
using keyshift::engine::parse_u64;

TEST_SUITE("engine::strconv") {
  TEST_CASE("parse_u64 takes plain decimal digits up to 2^64-1 and nothing else") {
    uint64_t v = 7;
    CHECK(parse_u64("0", v));
    CHECK(v == 0);
    CHECK(parse_u64("42", v));
    CHECK(v == 42);
    CHECK(parse_u64("9999999999999999999", v));  // 19 digits: the unchecked path
    CHECK(v == 9999999999999999999ull);
    CHECK(parse_u64("18446744073709551615", v));  // 20 digits, the largest
    CHECK(v == UINT64_MAX);
    v = 7;
    CHECK_FALSE(parse_u64("18446744073709551616", v));  // one past it
    CHECK_FALSE(parse_u64("99999999999999999999", v));
    CHECK_FALSE(parse_u64("100000000000000000000", v));  // 21 digits
    CHECK_FALSE(parse_u64("", v));
    CHECK_FALSE(parse_u64("01", v));
    CHECK_FALSE(parse_u64("+1", v));
    CHECK_FALSE(parse_u64("-1", v));
    CHECK_FALSE(parse_u64("12a", v));
    CHECK_FALSE(parse_u64("1 ", v));
    CHECK_FALSE(parse_u64("1:", v));  // ':' is the character after '9'
    CHECK_FALSE(parse_u64("1/", v));  // '/' the one before '0'
    CHECK_FALSE(parse_u64("1844674407370955161a", v));
    CHECK(v == 7);  // untouched by every refusal
  }

  TEST_CASE("parse_i64 takes the whole int64 range") {
    int64_t v = 0;
    CHECK(parse_i64("-9223372036854775808", v));
    CHECK(v == INT64_MIN);
    CHECK(parse_i64("9223372036854775807", v));
    CHECK(v == INT64_MAX);
    CHECK_FALSE(parse_i64("9223372036854775808", v));
    CHECK_FALSE(parse_i64("-9223372036854775809", v));
    CHECK_FALSE(parse_i64("-0", v));
    CHECK_FALSE(parse_i64("-", v));
  }
}
