// The struct library scripts see, through a real engine's EVAL. Every expected value here is
// what Valkey 8.0.1's valkey-server answered to the same script (compared on this host), so
// the bytes packed, the values unpacked and the error texts are Valkey's.
#include "tests/unit/engine/scripting/script_fixture.hpp"

#include <doctest/doctest.h>

#include <initializer_list>
#include <string>

namespace keyshift::engine {
namespace {

struct Fixture : test::ScriptFixture {
  /// The hex of struct.pack(<args>).
  std::string pack_hex(const std::string& args) { return hex_of("struct.pack(" + args + ")"); }
  /// Every value struct.unpack(<args>) returns, numbers as %.17g and strings in hex, spaced.
  std::string unpack(const std::string& args) {
    return bulk("local r = {struct.unpack(" + args +
                ")} for i, v in ipairs(r) do if type(v) == 'number' then "
                "r[i] = string.format('%.17g', v) else r[i] = 'S:' .. string.gsub(v, '.', "
                "function(c) return string.format('%02x', string.byte(c)) end) end end "
                "return table.concat(r, ' ')");
  }
  /// The error text of `script`'s reply, without the trailing "script: <sha> ..." part.
  std::string error(const std::string& script) {
    std::string out = raw({"eval", script, "0"});
    return out.substr(0, out.find(" script: "));
  }

  /// A script part and what one of the helpers above makes of it.
  struct Case {
    std::string input;
    std::string expected;
  };
  void packs(std::initializer_list<Case> cases) {
    for (const Case& c : cases) {
      CAPTURE(c.input);
      CHECK(pack_hex(c.input) == c.expected);
    }
  }
  void unpacks(std::initializer_list<Case> cases) {
    for (const Case& c : cases) {
      CAPTURE(c.input);
      CHECK(unpack(c.input) == c.expected);
    }
  }
  void errors(std::initializer_list<Case> cases) {
    for (const Case& c : cases) {
      CAPTURE(c.input);
      CHECK(error(c.input) == c.expected);
    }
  }
};

}  // namespace

TEST_SUITE("lua struct") {
  TEST_CASE("integers pack in the width and byte order the format names") {
    Fixture f;
    f.packs({
        {"'>i', 1", "00000001"},
        {"'<i', 1", "01000000"},
        {"'i', -2", "feffffff"},
        {"'bBhHlLT', -1, 255, -2, 65535, -3, 4, 5",
         "fffffefffffffdffffffffffffff04000000000000000500000000000000"},
        {"'>bBhHlLT', -1, 255, -2, 65535, -3, 4, 5",
         "fffffffefffffffffffffffffffd00000000000000040000000000000005"},
        {"'<I3', 0x123456", "563412"},
        {"'>I3', 0x123456", "123456"},
        {"' < b  > h ', 1, 2", "010002"},  // spaces are ignored
        {"'>b', 300", "2c"},               // the low byte only
        {"'>i', '12'", "0000000c"},        // a numeric string is a number
    });
  }

  TEST_CASE("integers wider than eight bytes carry 64 bits and zeros, and i0 packs nothing") {
    Fixture f;
    f.packs({
        {"'<i16', -1", "ffffffffffffffff0000000000000000"},
        {"'>i16', -1", "0000000000000000ffffffffffffffff"},
        {"'>i32', 1", "0000000000000000000000000000000000000000000000000000000000000001"},
        {"'i0', 5", ""},
    });
  }

  TEST_CASE("numbers out of an integer's range pack as Valkey's C casts leave them") {
    Fixture f;
    f.packs({
        {"'>L', -1", "ffffffffffffffff"},
        {"'>L', 2^63", "8000000000000000"},
        {"'>L', 2^63 + 2^62", "c000000000000000"},
        {"'>L', 2^64", "0000000000000000"},
        {"'>L', -2^64", "8000000000000000"},
        {"'>L', 0/0", "8000000000000000"},
        {"'>L', 1/0", "0000000000000000"},
        {"'>L', -1/0", "8000000000000000"},
        {"'>l', 1e300", "0000000000000000"},
        {"'>l', 3.7", "0000000000000003"},
        {"'>l', -3.7", "fffffffffffffffd"},
    });
  }

  TEST_CASE("floats and doubles pack in the chosen byte order") {
    Fixture f;
    f.packs({
        {"'f', 1.5", "0000c03f"},
        {"'>f', 1.5", "3fc00000"},
        {"'d', 0.1", "9a9999999999b93f"},
        {"'>d', 0.1", "3fb999999999999a"},
        {"'f', 1e300", "0000807f"},  // too large for a float: infinity
    });
  }

  TEST_CASE("strings pack whole with c0 and s, cut with cN, and a short one is refused") {
    Fixture f;
    f.packs({
        {"'c0', 'abc'", "616263"},
        {"'c2', 'abc'", "6162"},
        {"'c', 'abc'", "61"},
        {"'s', 'a\\0b'", "61006200"},
        {"'s', 12", "313200"},
        {"'x'", "00"},
        {"'xbx', 7", "000700"},
        {"'b\\0b', 1, 2", "01"},  // the format ends at a zero byte
    });
    // Valkey names the argument after the short string.
    f.errors({
        {"return struct.pack('c5', 'ab')",
         "-ERR user_script:1: bad argument #3 to 'pack' (string too short)"},
        {"return struct.pack('bc5', 1, 'ab')",
         "-ERR user_script:1: bad argument #4 to 'pack' (string too short)"},
    });
  }

  TEST_CASE("alignment pads an item to its size, up to the limit ! sets") {
    Fixture f;
    f.packs({
        {"'!4 b i', 1, 2", "0100000002000000"},
        {"'!bh', 1, 2", "01000200"},
        {"'!8 b d', 1, 2", "01000000000000000000000000000040"},
        {"'! b d', 1, 2", "01000000000000000000000000000040"},
        {"'!16 b d', 1, 2", "01000000000000000000000000000040"},
        {"'!2bi', 1, 2", "010002000000"},
        {"'!1bi', 1, 2", "0102000000"},
        {"'!4 b c3 i', 1, 'abc', 2", "0161626302000000"},  // c is never aligned
        {"'!4 b s i', 1, 'ab', 2", "0161620002000000"},
    });
    // A size that is no power of two pads by Valkey's formula all the same.
    f.packs({
        {"'!4bI3', 1, 2", "010000020000"},
        {"'!4bbI3', 1, 1, 2", "0101020000"},
        {"'!4bbbI3', 1, 1, 1, 2", "010101020000"},
    });
  }

  TEST_CASE("unpack reads integers, floats and doubles and returns the next position last") {
    Fixture f;
    f.unpacks({
        {"'>i', '\\0\\0\\0\\1'", "1 5"},
        {"'<h', '\\255\\255'", "-1 3"},
        {"'<H', '\\255\\255'", "65535 3"},
        {"'b', '\\128'", "-128 2"},
        {"'B', '\\128'", "128 2"},
        {"'<l', '\\255\\255\\255\\255\\255\\255\\255\\255'", "-1 9"},
        {"'<L', '\\255\\255\\255\\255\\255\\255\\255\\255'", "1.8446744073709552e+19 9"},
        {"'>T', '\\0\\0\\0\\0\\0\\0\\1\\0'", "256 9"},
        {"'<i3', '\\255\\255\\255'", "-1 4"},
        {"'<I3', '\\255\\255\\255'", "16777215 4"},
        {"'d', struct.pack('d', 0.1)", "0.10000000000000001 9"},
        {"'>d', struct.pack('>d', -2.5)", "-2.5 9"},
        {"'f', struct.pack('f', 0.1)", "0.10000000149011612 5"},
        {"'>f', struct.pack('>f', 3.25)", "3.25 5"},
        {"'>h', struct.pack('>h', -300)", "-300 3"},
        {"'x b', '\\1\\2'", "2 3"},
        {"'!4 b i', '\\1\\0\\0\\0\\2\\0\\0\\0'", "1 2 9"},
        {"'b\\0b', '\\1\\2'", "1 2"},
    });
  }

  TEST_CASE("unpack past eight bytes keeps 64 bits and sign-extends as Valkey's wrapped shift") {
    Fixture f;
    f.unpacks({
        {"'<i9', '\\0\\0\\0\\0\\0\\0\\0\\128\\0'", "-128 10"},
        {"'<i9', '\\128\\0\\0\\0\\0\\0\\0\\0\\0'", "-128 10"},
        {"'<i9', '\\127\\0\\0\\0\\0\\0\\0\\0\\0'", "127 10"},
        {"'<i12', '\\0\\0\\0\\0\\0\\0\\0\\0\\1\\0\\0\\0'", "0 13"},
        {"'<i12', '\\128\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0'", "128 13"},
        {"'<i16', '\\1\\0\\0\\0\\0\\0\\0\\128\\0\\0\\0\\0\\0\\0\\0\\0'",
         "-9.2233720368547758e+18 17"},
        {"'>i16', '\\1\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\2'", "2 17"},
        {"'<I16', '\\1\\2\\0\\0\\0\\0\\0\\0\\9\\9\\9\\9\\9\\9\\9\\9'", "513 17"},
        {"'>I16', '\\1\\2\\0\\0\\0\\0\\0\\0\\9\\9\\9\\9\\9\\9\\9\\9'", "6.5106155554269005e+17 17"},
        {"'i0', 'abc'", "0 1"},
        {"'I0b', 'abc'", "0 97 2"},
    });
  }

  TEST_CASE("unpack c0 takes its length from the number read before it") {
    Fixture f;
    f.unpacks({
        {"'bc0', '\\3abc'", "S:616263 5"},
        {"'c4c0', '1e20abc'", "S: 5"},  // 1e20 casts to a length of 0
    });
    f.errors({
        {"return struct.unpack('c0', 'abc')",
         "-ERR user_script:1: format 'c0' needs a previous size"},
        {"return struct.unpack('xc0', 'abc')",
         "-ERR user_script:1: format 'c0' needs a previous size"},
        {"return struct.unpack('c3c0', 'abcabc')",
         "-ERR user_script:1: format 'c0' needs a previous size"},
        {"return struct.unpack('Bc0', '\\9abc')",
         "-ERR user_script:1: bad argument #2 to 'unpack' (data string too short)"},
        {"return struct.unpack('bc0', '\\255abc')",
         "-ERR user_script:1: bad argument #2 to 'unpack' (data string too short)"},
    });
  }

  TEST_CASE("unpack s reads up to a zero byte, which must be there") {
    Fixture f;
    f.unpacks({
        {"'s', 'ab\\0cd'", "S:6162 4"},
        {"'ss', 'ab\\0cd\\0'", "S:6162 S:6364 7"},
    });
    f.errors({
        {"return struct.unpack('s', 'abcd')", "-ERR user_script:1: unfinished string in data"},
    });
  }

  TEST_CASE("unpack starts at the given offset and checks every item against the data") {
    Fixture f;
    f.unpacks({
        {"'b', 'ab', 2", "98 3"},
        {"'b', 'abc', 2.9", "98 3"},
        {"'b', 'abc', '2'", "98 3"},
        {"'b', 'abc', nil", "97 2"},
        {"'!4 i', '\\9\\1\\0\\0\\0\\2\\0\\0\\0', 2", "512 9"},
        {"'', 'abc', 10", "10"},
        {"'', 'abc', -5", "-5"},  // a negative offset wraps, unchecked when unused
    });
    f.errors({
        {"return struct.unpack('b', 'ab', 0)",
         "-ERR user_script:1: bad argument #3 to 'unpack' (offset must be 1 or greater)"},
    });
    for (const char* script :
         {"return struct.unpack('b', 'ab', 3)", "return struct.unpack('b', 'ab', -1)",
          "return struct.unpack(' ', 'abc', 10)", "return struct.unpack('bbx', '\\1\\2')",
          "return struct.unpack('!4 b i', '\\1\\0\\0\\0\\2\\0\\0')",
          "return struct.unpack('c2147483647', 'abc')"}) {
      CAPTURE(script);
      CHECK(f.error(script) ==
            "-ERR user_script:1: bad argument #2 to 'unpack' (data string too short)");
    }
  }

  TEST_CASE("unpack refuses more results than the Lua stack holds") {
    Fixture f;
    CHECK(f.raw({"eval", "return #{struct.unpack(string.rep('b', 7990), string.rep('a', 8000))}",
                 "0"}) == ":7991\r\n");
    f.errors({
        {"return #{struct.unpack(string.rep('b', 8000), string.rep('a', 8000))}",
         "-ERR user_script:1: stack overflow (too many results)"},
    });
  }

  TEST_CASE("size adds up fixed sizes and alignment and refuses s and c0") {
    Fixture f;
    CHECK(f.raw({"eval", "return struct.size('bhilfdT')", "0"}) == ":35\r\n");
    CHECK(f.raw({"eval", "return struct.size('!bhilfd')", "0"}) == ":32\r\n");
    CHECK(f.raw({"eval", "return struct.size('!4 b d')", "0"}) == ":12\r\n");
    CHECK(f.raw({"eval", "return struct.size('c10')", "0"}) == ":10\r\n");
    CHECK(f.raw({"eval", "return struct.size('bx')", "0"}) == ":2\r\n");
    CHECK(f.raw({"eval", "return struct.size('!4i7i3')", "0"}) == ":10\r\n");
    CHECK(f.raw({"eval", "return struct.size('c2147483647c2147483647')", "0"}) ==
          ":4294967294\r\n");
    CHECK(f.raw({"eval", "return struct.size('z5')", "0"}) == ":0\r\n");  // letters it skips
    f.errors({
        {"return struct.size('s')",
         "-ERR user_script:1: bad argument #1 to 'size' (option 's' has no fixed size)"},
        {"return struct.size('c0')",
         "-ERR user_script:1: bad argument #1 to 'size' (option 'c0' has no fixed size)"},
        {"return struct.size('#')",
         "-ERR user_script:1: bad argument #1 to 'size' (invalid format option '#')"},
    });
  }

  TEST_CASE("bad formats and arguments get Valkey's error texts") {
    Fixture f;
    f.errors({
        {"return struct.pack('z')",
         "-ERR user_script:1: bad argument #1 to 'pack' (invalid format option 'z')"},
        {"return struct.pack('b5', 1)",
         "-ERR user_script:1: bad argument #1 to 'pack' (invalid format option '5')"},
        {"return struct.pack('\\200', 1)",
         "-ERR user_script:1: bad argument #1 to 'pack' (invalid format option '\xc8')"},
        {"return struct.pack(12)",
         "-ERR user_script:1: bad argument #1 to 'pack' (invalid format option '1')"},
        {"return struct.pack()",
         "-ERR user_script:1: bad argument #1 to 'pack' (string expected, got no value)"},
    });
    // The first missing value reads as nil, not as no value.
    f.errors({
        {"return struct.pack('bb', 1)",
         "-ERR user_script:1: bad argument #3 to 'pack' (number expected, got nil)"},
        {"return struct.pack('>i', 'x')",
         "-ERR user_script:1: bad argument #2 to 'pack' (number expected, got string)"},
        {"return struct.pack('!3 b', 1)", "-ERR user_script:1: alignment 3 is not a power of 2"},
        {"return struct.pack('!0 b', 1)", "-ERR user_script:1: alignment 0 is not a power of 2"},
        {"return struct.pack('i33', 1)",
         "-ERR user_script:1: integral size 33 is larger than limit of 32"},
        {"return struct.pack('i99999999999', 1)", "-ERR user_script:1: integral size overflow"},
        {"return struct.pack('c2147483648', 'a')", "-ERR user_script:1: integral size overflow"},
        {"return struct.unpack('b', 'abc', 'x')",
         "-ERR user_script:1: bad argument #3 to 'unpack' (number expected, got string)"},
        {"return struct.unpack('b')",
         "-ERR user_script:1: bad argument #2 to 'unpack' (string expected, got no value)"},
        {"return struct.unpack('z', 'abc')",
         "-ERR user_script:1: bad argument #1 to 'unpack' (invalid format option 'z')"},
    });
  }

  TEST_CASE("the struct table is read-only and holds pack, unpack and size") {
    Fixture f;
    CHECK(f.bulk("local t = {} for k in pairs(struct) do t[#t + 1] = k end table.sort(t) "
                 "return table.concat(t, ',')") == "pack,size,unpack");
    f.errors({
        {"struct.pack = 1", "-ERR user_script:1: Attempt to modify a readonly table"},
    });
    CHECK(f.bulk("return struct.pack('>h', 258)") == "\x01\x02");
  }
}

}  // namespace keyshift::engine
