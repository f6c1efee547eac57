#include "engine/resp/reply_builder.hpp"
#include "engine/resp/resp_value.hpp"

#include <doctest/doctest.h>

#include <string>

using keyshift::engine::parse_resp;
using keyshift::engine::ReplyBuilder;
using keyshift::engine::RespParse;
using keyshift::engine::RespValue;

TEST_SUITE("engine::reply_builder") {
  TEST_CASE("RESP2 replies are encoded as redis-server writes them") {
    std::string out;
    ReplyBuilder r(out, 2);
    r.ok();
    r.integer(-42);
    r.bulk("hi");
    r.null();
    r.null_array();
    r.map(1);
    r.bulk("k");
    r.double_value(1.5);
    r.boolean(true);
    CHECK(out == "+OK\r\n:-42\r\n$2\r\nhi\r\n$-1\r\n*-1\r\n*2\r\n$1\r\nk\r\n$3\r\n1.5\r\n:1\r\n");
  }

  TEST_CASE("RESP3 replies use the typed encodings") {
    std::string out;
    ReplyBuilder r(out, 3);
    r.null();
    r.map(1);
    r.set(0);
    r.double_value(-2.5);
    r.boolean(false);
    r.verbatim("abc");
    CHECK(out == "_\r\n%1\r\n~0\r\n,-2.5\r\n#f\r\n=7\r\ntxt:abc\r\n");
  }

  TEST_CASE("errors drop line breaks and remember their code") {
    std::string out;
    ReplyBuilder r(out, 2);
    r.error("WRONGTYPE bad\r\nthing");
    CHECK(out == "-WRONGTYPE bad  thing\r\n");
    CHECK(r.last_error_code() == "WRONGTYPE");
    CHECK(r.error_count() == 1);
  }

  TEST_CASE("a deferred array length is filled in afterwards") {
    std::string out;
    ReplyBuilder r(out, 2);
    size_t mark = r.begin_array();
    r.integer(1);
    r.integer(2);
    r.end_array(mark, 2);
    CHECK(out == "*2\r\n:1\r\n:2\r\n");
  }

  TEST_CASE("the client decoder reads back what the builder wrote") {
    std::string out;
    ReplyBuilder r(out, 3);
    r.array(3);
    r.bulk("a");
    r.integer(7);
    r.map(1);
    r.simple("x");
    r.null();
    RespValue v;
    size_t used = 0;
    REQUIRE(parse_resp(out, v, used) == RespParse::ok);
    CHECK(used == out.size());
    REQUIRE(v.elements.size() == 3);
    CHECK(v.elements[0].str == "a");
    CHECK(v.elements[1].integer == 7);
    CHECK(v.elements[2].type == RespValue::Type::map);
    CHECK(parse_resp(out.substr(0, out.size() - 1), v, used) == RespParse::need_more);
  }
}
