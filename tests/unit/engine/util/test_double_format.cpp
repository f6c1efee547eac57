#include "engine/util/double_format.hpp"

#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <random>
#include <string>

using keyshift::engine::double_17g_text;
using keyshift::engine::double_reply_text;
using keyshift::engine::double_to_int_exact;

namespace {

// The shape fpconv gives a non-integral value: plain decimals for moderate exponents,
// otherwise d[.ddd]e[+-]N with no exponent padding.
bool has_fpconv_shape(const std::string& s) {
  std::string body = s[0] == '-' ? s.substr(1) : s;
  size_t e = body.find('e');
  if (e == std::string::npos) {
    return body.find_first_not_of("0123456789.") == std::string::npos;
  }
  std::string exp = body.substr(e + 1);
  if (exp.size() < 2 || (exp[0] != '+' && exp[0] != '-') || exp[1] == '0') {
    return false;
  }
  return body[0] != '0' && (e == 1 || body[1] == '.');
}

}  // namespace

TEST_SUITE("engine::double_format") {
  TEST_CASE("special values print as Valkey's d2string spells them") {
    CHECK(double_reply_text(std::numeric_limits<double>::infinity()) == "inf");
    CHECK(double_reply_text(-std::numeric_limits<double>::infinity()) == "-inf");
    CHECK(double_reply_text(std::nan("")) == "nan");
    CHECK(double_reply_text(0.0) == "0");
    CHECK(double_reply_text(-0.0) == "-0");
  }

  TEST_CASE("integral values within 2^62 print as integers, larger ones with an exponent") {
    CHECK(double_reply_text(1) == "1");
    CHECK(double_reply_text(-3) == "-3");
    CHECK(double_reply_text(1e17) == "100000000000000000");
    CHECK(double_reply_text(-1e17) == "-100000000000000000");
    CHECK(double_reply_text(4611686018427387904.0) == "4611686018427387904");    // 2^62
    CHECK(double_reply_text(-4611686018427387904.0) == "-4611686018427387904");  // -2^62
    CHECK(double_reply_text(9223372036854775808.0) == "9223372036854776000");    // 2^63: Grisu2
    CHECK(double_reply_text(1e19) == "1e+19");
    CHECK(double_reply_text(1e300) == "1e+300");
    CHECK(double_reply_text(1.7976931348623157e308) == "1.7976931348623157e+308");
  }

  TEST_CASE("fractions print in the shortest form that reads back") {
    CHECK(double_reply_text(0.1) == "0.1");
    CHECK(double_reply_text(1.5) == "1.5");
    CHECK(double_reply_text(-2.5) == "-2.5");
    CHECK(double_reply_text(0.1 + 0.2) == "0.30000000000000004");
    CHECK(double_reply_text(1.0 / 3) == "0.3333333333333333");
    CHECK(double_reply_text(3.14159) == "3.14159");
    CHECK(double_reply_text(123456.789) == "123456.789");
    CHECK(double_reply_text(0.0001) == "0.0001");
    CHECK(double_reply_text(1e-7) == "1e-7");
    CHECK(double_reply_text(-1.5e-7) == "-1.5e-7");
    CHECK(double_reply_text(1.25e-5) == "1.25e-5");
    CHECK(double_reply_text(1.25e-4) == "0.000125");
    CHECK(double_reply_text(5e-324) == "5e-324");
    CHECK(double_reply_text(2.2250738585072014e-308) == "2.2250738585072014e-308");
    CHECK(double_reply_text(1.2345678901234567) == "1.2345678901234567");  // 17 digits
    CHECK(double_reply_text(12345678.9) == "12345678.9");
    CHECK(double_reply_text(1.5e10 + 0.5) == "15000000000.5");
  }

  TEST_CASE("double2ll accepts exactly the integral values within +-2^62") {
    long long out = 0;
    CHECK(double_to_int_exact(-0.0, out));
    CHECK(out == 0);
    CHECK(double_to_int_exact(4611686018427387904.0, out));
    CHECK_FALSE(double_to_int_exact(9223372036854775808.0, out));
    CHECK_FALSE(double_to_int_exact(0.5, out));
    CHECK_FALSE(double_to_int_exact(std::nan(""), out));
    CHECK_FALSE(double_to_int_exact(std::numeric_limits<double>::infinity(), out));
  }

  TEST_CASE("random doubles round-trip and keep fpconv's shape") {
    std::mt19937_64 rng(12345);
    for (int i = 0; i < 200000; ++i) {
      double v = std::bit_cast<double>(rng());
      if (!std::isfinite(v)) {
        continue;
      }
      std::string s = double_reply_text(v);
      double back = std::strtod(s.c_str(), nullptr);
      REQUIRE(std::bit_cast<uint64_t>(back) == std::bit_cast<uint64_t>(v));
      long long as_int = 0;
      if (double_to_int_exact(v, as_int)) {
        REQUIRE(s == std::to_string(as_int));
      } else if (v != 0) {
        REQUIRE(has_fpconv_shape(s));
        // At most 17 significant digits, as any round-trip form needs.
        std::string mantissa = s.substr(0, s.find('e'));
        std::string digits;
        for (char c : mantissa) {
          if (c >= '0' && c <= '9') {
            digits.push_back(c);
          }
        }
        digits.erase(0, digits.find_first_not_of('0'));
        digits.erase(digits.find_last_not_of('0') + 1);
        REQUIRE(digits.size() <= 17);
      }
    }
  }

  TEST_CASE("values from decimal text come back as the same text") {
    for (const char* text : {"0.5", "2.37", "99.99", "0.001", "1234.5678", "-0.75", "1e-10",
                             "3.4e+38", "6.02214076e+23", "1.6e-19"}) {
      CHECK(double_reply_text(std::strtod(text, nullptr)) == text);
    }
  }

  TEST_CASE("the %.17g form ZSCAN uses for skiplists") {
    CHECK(double_17g_text(0.1) == "0.10000000000000001");
    CHECK(double_17g_text(1e17) == "1e+17");
    CHECK(double_17g_text(100) == "100");
    CHECK(double_17g_text(-0.0) == "-0");
    CHECK(double_17g_text(std::numeric_limits<double>::infinity()) == "inf");
    CHECK(double_17g_text(-std::numeric_limits<double>::infinity()) == "-inf");
  }
}
