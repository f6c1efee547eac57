#include "engine/util/strconv.hpp"
#include "engine/util/strings.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <string>

using keyshift::engine::c_string;
using keyshift::engine::iequals;
using keyshift::engine::is_keyword;
using keyshift::engine::parse_scan_cursor;
using keyshift::engine::to_lower;
using keyshift::engine::to_upper;

TEST_SUITE("strings") {
  TEST_CASE("iequals ignores ASCII case only") {
    CHECK(iequals("GeT", "get"));
    CHECK(iequals("", ""));
    CHECK_FALSE(iequals("get", "gets"));
    CHECK_FALSE(iequals("a", "b"));
    // strcasecmp in the C locale leaves bytes from 0x80 alone.
    CHECK_FALSE(iequals("\xc9", "\xe9"));
    CHECK(iequals("\xc9", "\xc9"));
  }

  TEST_CASE("case conversion changes ASCII letters and nothing else") {
    CHECK(to_lower("SET Key-1 \xc9") == "set key-1 \xc9");
    CHECK(to_upper("set key_1 [z] \xe9") == "SET KEY_1 [Z] \xe9");
    CHECK(to_upper(std::string("a\0b", 3)) == std::string("A\0B", 3));
  }

  TEST_CASE("c_string ends an argument at its first NUL") {
    CHECK(c_string(std::string_view("match\0junk", 10)) == "match");
    CHECK(c_string("count") == "count");
    CHECK(c_string(std::string_view("\0", 1)).empty());
    CHECK(is_keyword(std::string_view("COUNT\0x", 7), "count"));
    CHECK_FALSE(is_keyword("counts", "count"));
  }
}

TEST_SUITE("parse_scan_cursor") {
  uint64_t cursor_of(std::string_view s) {
    uint64_t v = 12345;
    REQUIRE(parse_scan_cursor(s, v));
    return v;
  }

  bool rejects(std::string_view s) {
    uint64_t v = 0;
    return !parse_scan_cursor(s, v);
  }

  TEST_CASE("a plain decimal cursor reads as its value, the whole unsigned range included") {
    CHECK(cursor_of("0") == 0);
    CHECK(cursor_of("1234") == 1234);
    CHECK(cursor_of("9223372036854775808") == 9223372036854775808ull);
    CHECK(cursor_of("18446744073709551615") == UINT64_MAX);
    CHECK(rejects("18446744073709551616"));
  }

  TEST_CASE("strtoull's lenient forms are accepted as string2ull accepts them") {
    CHECK(cursor_of(" \t\n\v\f\r7") == 7);
    CHECK(cursor_of("+7") == 7);
    CHECK(cursor_of("007") == 7);
    CHECK(cursor_of("-0") == 0);
    // string2ll rejects "-01" (leading zero), so strtoull reads it and wraps as C does.
    CHECK(cursor_of("-01") == UINT64_MAX);
  }

  TEST_CASE("a negative integer, trailing text and empty input are invalid cursors") {
    CHECK(rejects("-1"));
    CHECK(rejects("-9223372036854775808"));
    CHECK(rejects(""));
    CHECK(rejects(" "));
    CHECK(rejects("+"));
    CHECK(rejects("7 "));
    CHECK(rejects("0x10"));
    CHECK(rejects("abc"));
  }

  TEST_CASE("the cursor is read as a C string, so whatever follows a NUL is ignored") {
    CHECK(cursor_of(std::string_view("42\0junk", 7)) == 42);
    CHECK(
        rejects(std::string_view("\0"
                                 "42",
                                 3)));
  }
}
