#include "compat/report/json_value.hpp"

#include <doctest/doctest.h>

#include <string>

using keyshift::compat::JsonError;
using keyshift::compat::JsonValue;
using keyshift::compat::parse_json;

TEST_SUITE("compat::json_value") {
  TEST_CASE("a document reads into objects, arrays, numbers, strings and literals") {
    JsonValue v =
        parse_json(R"( {"a": [1, -2.5e1, true, false, null], "s": "x\"\u00e9\ud83d\ude00"} )");
    REQUIRE(v.type == JsonValue::Type::object);
    const JsonValue* a = v.find("a");
    REQUIRE(a != nullptr);
    REQUIRE(a->array.size() == 5);
    CHECK(a->array[0].number == 1);
    CHECK(a->array[1].number == -25);
    CHECK(a->array[2].boolean);
    CHECK(a->array[4].type == JsonValue::Type::null);
    CHECK(v.find("s")->string == "x\"\xc3\xa9\xf0\x9f\x98\x80");
    CHECK(v.find("missing") == nullptr);
  }

  TEST_CASE("malformed JSON names the byte where reading stopped") {
    struct Bad {
      const char* text;
      size_t offset;
    };
    for (const Bad& b : {Bad{"{\"a\" 1}", 5}, Bad{"[1,]", 3}, Bad{"[1] x", 4}, Bad{"\"abc", 4},
                         Bad{"{\"a\":tru}", 5}, Bad{"", 0}}) {
      CAPTURE(b.text);
      try {
        parse_json(b.text);
        FAIL("accepted");
      } catch (const JsonError& e) {
        CHECK(e.offset == b.offset);
      }
    }
  }

  TEST_CASE("nesting is bounded") {
    std::string deep(100, '[');
    deep += std::string(100, ']');
    CHECK_THROWS_AS(parse_json(deep), JsonError);
  }
}
