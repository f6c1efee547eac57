// The cmsgpack library scripts see, through a real engine's EVAL: the bytes it packs are the
// ones Valkey's cmsgpack packs, and what it unpacks comes back whole or as a clear error.
#include "tests/unit/engine/scripting/script_fixture.hpp"

#include <doctest/doctest.h>

#include <string>

namespace keyshift::engine {
namespace {

struct Fixture : test::ScriptFixture {
  /// The hex of cmsgpack.pack(<args>) as a bulk reply.
  std::string pack_hex(const std::string& args) { return hex_of("cmsgpack.pack(" + args + ")"); }
};

}  // namespace

TEST_SUITE("lua cmsgpack") {
  TEST_CASE("numbers pack as the smallest integer, or as a float or double when fractional") {
    Fixture f;
    CHECK(f.pack_hex("0.1") == "cb3fb999999999999a");
    CHECK(f.pack_hex("0.5") == "ca3f000000");
    CHECK(f.pack_hex("-1099511627776") == "d3ffffff0000000000");
    CHECK(f.pack_hex("1, 127, 128, 255, 256, 65536") == "017fcc80ccffcd0100ce00010000");
    CHECK(f.pack_hex("2^40") == "cf0000010000000000");
    CHECK(f.pack_hex("-1, -32, -33, -129, -32769") == "ffe0d0dfd1ff7fd2ffff7fff");
  }

  TEST_CASE("strings, booleans, nil and tables pack with MessagePack's length classes") {
    Fixture f;
    CHECK(f.pack_hex("'ab'") == "a26162");
    CHECK(f.pack_hex("string.rep('x', 32)").starts_with("d920"));
    CHECK(f.pack_hex("string.rep('x', 256)").starts_with("da0100"));
    CHECK(f.pack_hex("string.rep('x', 65536)").starts_with("db00010000"));
    CHECK(f.pack_hex("true, false, nil") == "c3c2c0");
    CHECK(f.pack_hex("{}") == "90");
    CHECK(f.pack_hex("{1, 2}") == "920102");
    CHECK(f.pack_hex("{a = 1}") == "81a16101");
    CHECK(f.pack_hex("{[2] = 1}") == "810201");  // keys that are not 1..n make a map
    CHECK(f.pack_hex("string.len") == "c0");     // a function has no MessagePack form
  }

  TEST_CASE("a cyclic table packs as a copy cut to nil at sixteen levels") {
    Fixture f;
    std::string hex = f.pack_hex("(function() local a = {y = 5} a.x = {x = a} return a end)()");
    // Eight copies of a (map of y and x) and b (map of x), then the cut.
    std::string one = "82a17905a17881a178";
    std::string expected;
    for (int i = 0; i < 8; ++i) {
      expected += one;
    }
    expected += "c0";
    CHECK(hex == expected);
  }

  TEST_CASE("unpack returns every packed value, and unpack_one and unpack_limit walk offsets") {
    Fixture f;
    CHECK(f.raw({"eval",
                 "local t = cmsgpack.unpack(cmsgpack.pack({1, 'two', {k = 'v'}, 2.5, -7, "
                 "2^40})) return {t[1], t[2], t[3].k, tostring(t[4]), t[5], tostring(t[6])}",
                 "0"}) ==
          "*6\r\n:1\r\n$3\r\ntwo\r\n$1\r\nv\r\n$3\r\n2.5\r\n:-7\r\n$13\r\n1099511627776\r\n");
    CHECK(f.raw({"eval", "return {cmsgpack.unpack(cmsgpack.pack(1, 2, 3))}", "0"}) ==
          "*3\r\n:1\r\n:2\r\n:3\r\n");
    CHECK(f.raw({"eval",
                 "local s = cmsgpack.pack('a', 'bb', 'ccc') "
                 "local o1, v1 = cmsgpack.unpack_one(s) "
                 "local o2, v2 = cmsgpack.unpack_limit(s, 1, o1) "
                 "local o3, v3 = cmsgpack.unpack_one(s, o2) "
                 "return {o1, v1, o2, v2, o3, v3}",
                 "0"}) == "*6\r\n:2\r\n$1\r\na\r\n:5\r\n$2\r\nbb\r\n:-1\r\n$3\r\nccc\r\n");
  }

  TEST_CASE("bad input to unpack raises Valkey's errors instead of crashing") {
    Fixture f;
    CHECK(f.raw({"eval", "return cmsgpack.unpack('\\218\\0\\9ab')", "0"})
              .find("Missing bytes in input.") != std::string::npos);
    CHECK(
        f.raw({"eval", "return cmsgpack.unpack('\\193')", "0"}).find("Bad data format in input.") !=
        std::string::npos);
    CHECK(f.raw({"eval", "return cmsgpack.unpack_one('\\1', 5)", "0"})
              .find("Start offset 5 greater than input length 1.") != std::string::npos);
    CHECK(f.raw({"eval", "return cmsgpack.unpack_limit('\\1', -1)", "0"})
              .find("Invalid request to unpack with offset of 0 and limit of -1.") !=
          std::string::npos);
    // Deep nesting is refused rather than recursing off the C stack.
    CHECK(f.raw({"eval", "return cmsgpack.unpack(string.rep('\\145', 100000) .. '\\1')", "0"})
              .starts_with("-ERR"));
    CHECK(f.raw({"eval", "return cmsgpack.pack()", "0"}).find("MessagePack pack needs input.") !=
          std::string::npos);
  }

  TEST_CASE("the cmsgpack table is read-only") {
    Fixture f;
    CHECK(f.raw({"eval", "cmsgpack.pack = function() return 1 end", "0"})
              .find("Attempt to modify a readonly table") != std::string::npos);
  }
}

}  // namespace keyshift::engine
