#include "compat/report/json_text.hpp"

#include <doctest/doctest.h>

#include <string>

using keyshift::compat::append_json_bytes;
using keyshift::compat::append_json_string;
using keyshift::compat::is_valid_utf8;

namespace {

std::string as_string(std::string_view text) {
  std::string out;
  append_json_string(out, text);
  return out;
}

std::string as_bytes(std::string_view bytes) {
  std::string out;
  append_json_bytes(out, bytes);
  return out;
}

}  // namespace

TEST_SUITE("compat::json_text") {
  TEST_CASE("UTF-8 validation accepts well-formed text and refuses the rest") {
    CHECK(is_valid_utf8(""));
    CHECK(is_valid_utf8("plain ascii"));
    CHECK(is_valid_utf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"));
    CHECK_FALSE(is_valid_utf8("\xff"));
    CHECK_FALSE(is_valid_utf8("\xc3"));              // truncated
    CHECK_FALSE(is_valid_utf8("\xc0\xaf"));          // overlong
    CHECK_FALSE(is_valid_utf8("\xed\xa0\x80"));      // surrogate
    CHECK_FALSE(is_valid_utf8("\xf4\x90\x80\x80"));  // above U+10FFFF
    CHECK_FALSE(is_valid_utf8("a\x80z"));
  }

  TEST_CASE("strings escape quotes, backslashes and control bytes") {
    CHECK(as_string("a\"b\\c") == "\"a\\\"b\\\\c\"");
    CHECK(as_string(std::string_view("\n\t\r\x01\x1f\x7f", 6)) ==
          "\"\\n\\t\\r\\u0001\\u001f\\u007f\"");
    CHECK(as_string(std::string_view("\0x", 2)) == "\"\\u0000x\"");
    CHECK(as_string("caf\xc3\xa9") == "\"caf\xc3\xa9\"");
  }

  TEST_CASE("bytes that are not UTF-8 become a hex object") {
    CHECK(as_bytes("key") == "\"key\"");
    CHECK(as_bytes(std::string_view("\x00\xff", 2)) == "{\"hex\": \"00ff\"}");
    CHECK(as_bytes(std::string_view("\x00", 1)) == "\"\\u0000\"");
  }
}
