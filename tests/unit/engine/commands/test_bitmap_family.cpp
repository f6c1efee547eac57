#include "tests/unit/engine/commands/command_test_util.hpp"

#include "engine/engine.hpp"
#include "engine/persistence/snapshots.hpp"

#include <doctest/doctest.h>

#include <string>

using keyshift::engine::Engine;
using keyshift::engine::EngineConfig;
using keyshift::engine::ManualClock;
using keyshift::engine::RespValue;

namespace {

using keyshift::engine::command_test::show;
using Fixture = keyshift::engine::command_test::ReplyFixture;

}  // namespace

TEST_SUITE("engine::bitmap_family") {
  TEST_CASE("SETBIT grows the string, returns the old bit and GETBIT reads it back") {
    Fixture f;
    CHECK(f.num({"SETBIT", "b", "7", "1"}) == 0);
    CHECK(f.num({"SETBIT", "b", "7", "1"}) == 1);
    CHECK(f.num({"GETBIT", "b", "7"}) == 1);
    CHECK(f.num({"GETBIT", "b", "6"}) == 0);
    CHECK(f.num({"GETBIT", "b", "1000"}) == 0);
    CHECK(f.num({"SETBIT", "b", "100", "1"}) == 0);
    CHECK(f.run({"STRLEN", "b"}).integer == 13);
    f.run({"SET", "s", "`"});  // 0x60 = 0110 0000
    CHECK(f.num({"GETBIT", "s", "1"}) == 1);
    CHECK(f.num({"GETBIT", "s", "0"}) == 0);
  }

  TEST_CASE("bitmap argument errors use Valkey's texts") {
    Fixture f;
    CHECK(f.err({"SETBIT", "b", "-1", "1"}) == "ERR bit offset is not an integer or out of range");
    CHECK(f.err({"SETBIT", "b", "4294967296", "1"}) ==
          "ERR bit offset is not an integer or out of range");
    CHECK(f.err({"SETBIT", "b", "1", "2"}) == "ERR bit is not an integer or out of range");
    CHECK(f.err({"BITPOS", "b", "2"}) == "ERR The bit argument must be 1 or 0.");
    CHECK(f.err({"BITOP", "NOT", "d", "a", "b"}) ==
          "ERR BITOP NOT must be called with a single source key.");
  }

  TEST_CASE("BITCOUNT counts bytes or bit ranges with negative indexes") {
    Fixture f;
    f.run({"SET", "k", "foobar"});
    CHECK(f.num({"BITCOUNT", "k"}) == 26);
    CHECK(f.num({"BITCOUNT", "k", "0", "0"}) == 4);
    CHECK(f.num({"BITCOUNT", "k", "1", "1"}) == 6);
    CHECK(f.num({"BITCOUNT", "k", "1", "1", "BYTE"}) == 6);
    CHECK(f.num({"BITCOUNT", "k", "5", "30", "BIT"}) == 17);
    CHECK(f.num({"BITCOUNT", "k", "-2", "-1"}) == 7);
    CHECK(f.num({"BITCOUNT", "missing"}) == 0);
    CHECK(f.err({"BITCOUNT", "k", "0", "1", "BOTH"}) == "ERR syntax error");
  }

  TEST_CASE("BITPOS finds set and clear bits, padding with zeros past the end") {
    Fixture f;
    f.run({"SET", "k", std::string("\xff\xf0\x00", 3)});
    CHECK(f.num({"BITPOS", "k", "0"}) == 12);
    f.run({"SET", "k", std::string("\x00\xff\xf0", 3)});
    CHECK(f.num({"BITPOS", "k", "1", "0"}) == 8);
    CHECK(f.num({"BITPOS", "k", "1", "2"}) == 16);
    CHECK(f.num({"BITPOS", "k", "1", "2", "-1", "BYTE"}) == 16);
    CHECK(f.num({"BITPOS", "k", "1", "7", "15", "BIT"}) == 8);
    f.run({"SET", "ones", std::string("\xff\xff", 2)});
    CHECK(f.num({"BITPOS", "ones", "0"}) == 16);
    CHECK(f.num({"BITPOS", "ones", "0", "0", "-1"}) == -1);
    CHECK(f.num({"BITPOS", "missing", "1"}) == -1);
    CHECK(f.num({"BITPOS", "missing", "0"}) == 0);
  }

  TEST_CASE("BITOP combines strings and deletes the destination for an empty result") {
    Fixture f;
    f.run({"SET", "a", "abc"});
    f.run({"SET", "b", "a"});
    CHECK(f.num({"BITOP", "AND", "d", "a", "b"}) == 3);
    CHECK(f.run({"GET", "d"}).str == std::string("a\0\0", 3));
    CHECK(f.num({"BITOP", "OR", "d", "a", "b"}) == 3);
    CHECK(f.run({"GET", "d"}).str == "abc");
    CHECK(f.num({"BITOP", "NOT", "d", "b"}) == 1);
    CHECK(f.run({"GET", "d"}).str == std::string("\x9e", 1));
    CHECK(f.num({"BITOP", "XOR", "d", "missing1", "missing2"}) == 0);
    CHECK(f.run({"EXISTS", "d"}).integer == 0);
  }

  TEST_CASE("BITFIELD SET and GET place fields most significant bit first at any offset") {
    Fixture f;
    CHECK(show(f.run({"BITFIELD", "k", "SET", "u5", "7", "23", "GET", "u5", "7"})) == "[:0,:23]");
    // 23 = 10111 at bits 7..11: 00000001 01110000.
    CHECK(f.run({"GET", "k"}).str == std::string("\x01\x70", 2));
    CHECK(show(f.run({"BITFIELD", "k", "GET", "i5", "7", "GET", "u64", "0"})).starts_with("-ERR"));
    CHECK(show(f.run({"BITFIELD", "k", "GET", "i5", "7", "GET", "u16", "0", "GET", "u8", "999"})) ==
          "[:-9,:368,:0]");
    // #N counts fields of the type's width.
    CHECK(show(f.run({"BITFIELD", "a", "SET", "u8", "#1", "200", "GET", "u8", "8", "GET", "i8",
                      "#1"})) == "[:0,:200,:-56]");
    CHECK(f.num({"STRLEN", "a"}) == 2);
  }

  TEST_CASE("BITFIELD reaches i64 and u63 and reads them as two's complement") {
    Fixture f;
    CHECK(show(f.run({"BITFIELD", "k", "SET", "i64", "3", "-9223372036854775808", "GET", "i64", "3",
                      "GET", "u63", "3", "GET", "u1", "3"})) ==
          "[:0,:-9223372036854775808,:4611686018427387904,:1]");
    CHECK(show(f.run({"BITFIELD", "k", "SET", "u63", "3", "9223372036854775807", "GET", "i64",
                      "3"})) == "[:4611686018427387904,:-2]");
  }

  TEST_CASE("BITFIELD OVERFLOW WRAP, SAT and FAIL decide what an out-of-range result stores") {
    Fixture f;
    CHECK(show(f.run({"BITFIELD", "w", "INCRBY", "i8", "0", "127", "INCRBY", "i8", "0", "1",
                      "INCRBY", "u4", "8", "-1"})) == "[:127,:-128,:15]");
    CHECK(show(f.run({"BITFIELD", "s", "OVERFLOW", "SAT", "INCRBY", "i8", "0", "300", "INCRBY",
                      "i8", "0", "-1000", "SET", "u8", "8", "-1", "GET", "u8", "8"})) ==
          "[:127,:-128,:0,:255]");
    CHECK(show(f.run({"BITFIELD", "x", "OVERFLOW", "FAIL", "INCRBY", "u2", "0", "4", "SET", "u2",
                      "0", "3", "OVERFLOW", "WRAP", "INCRBY", "u2", "0", "2"})) == "[nil,:0,:1]");
    // Valkey's unsigned headroom: SET of a negative value saturates to the maximum.
    CHECK(show(f.run({"BITFIELD", "n", "OVERFLOW", "SAT", "SET", "u3", "0", "-5", "GET", "u3",
                      "0"})) == "[:0,:7]");
    // Its signed headroom wraps around: the most negative value counts as an overflow.
    CHECK(show(f.run({"BITFIELD", "m", "OVERFLOW", "SAT", "SET", "i8", "0", "-9223372036854775808",
                      "GET", "i8", "0"})) == "[:0,:127]");
    CHECK(show(f.run({"BITFIELD", "b", "OVERFLOW", "SAT", "INCRBY", "i64", "0",
                      "9223372036854775807", "INCRBY", "i64", "0", "1"})) ==
          "[:9223372036854775807,:9223372036854775807]");
  }

  TEST_CASE("a BITFIELD write that fails still creates the zero-padded key") {
    Fixture f;
    uint64_t before = f.engine.snapshots().dirty();
    CHECK(show(f.run({"BITFIELD", "k", "OVERFLOW", "FAIL", "SET", "u2", "20", "9"})) == "[nil]");
    CHECK(f.run({"GET", "k"}).str == std::string(3, '\0'));
    CHECK(f.engine.snapshots().dirty() == before);
  }

  TEST_CASE("BITFIELD and SETBIT count a change only when a bit or the length changes") {
    Fixture f;
    uint64_t d0 = f.engine.snapshots().dirty();
    f.run({"SETBIT", "a", "0", "0"});
    f.run({"BITFIELD", "b", "SET", "i5", "0", "0"});
    uint64_t d1 = f.engine.snapshots().dirty();
    CHECK(d1 == d0 + 2);
    f.run({"SETBIT", "a", "0", "0"});
    f.run({"BITFIELD", "b", "SET", "i5", "0", "0"});
    CHECK(f.engine.snapshots().dirty() == d1);
    f.run({"BITFIELD", "b", "SET", "i5", "0", "1", "SET", "i5", "0", "1", "SET", "u1", "90", "0"});
    CHECK(f.engine.snapshots().dirty() ==
          d1 + 3);  // growing the string makes every write of the command count
  }

  TEST_CASE("BITFIELD errors name the bad argument before any subcommand runs") {
    Fixture f;
    const std::string type_err =
        "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported "
        "but i64 is.";
    for (const char* t : {"u64", "i65", "i0", "u", "x8", "U8", "i08", "i+8", ""}) {
      CHECK_MESSAGE(f.err({"BITFIELD", "k", "SET", "u8", "0", "1", "GET", t, "0"}) == type_err, t);
    }
    for (const char* o : {"-1", "abc", "#-1", "#", "", "4294967296", "#536870912"}) {
      CHECK_MESSAGE(f.err({"BITFIELD", "k", "GET", "u8", o}) ==
                        "ERR bit offset is not an integer or out of range",
                    o);
    }
    CHECK(f.err({"BITFIELD", "k", "SET", "u8", "0", "1.5"}) ==
          "ERR value is not an integer or out of range");
    CHECK(f.err({"BITFIELD", "k", "OVERFLOW", "BAD"}) == "ERR Invalid OVERFLOW type specified");
    CHECK(f.err({"BITFIELD", "k", "GET", "u8"}) == "ERR syntax error");
    CHECK(f.err({"BITFIELD", "k", "OVERFLOW"}) == "ERR syntax error");
    CHECK(f.num({"EXISTS", "k"}) == 0);
    f.run({"RPUSH", "l", "x"});
    CHECK(f.err({"BITFIELD", "l", "GET", "u8", "0"}).starts_with("WRONGTYPE"));
  }

  TEST_CASE("BITFIELD_RO runs GETs only and reads integer-encoded strings as text") {
    Fixture f;
    f.run({"SET", "n", "12"});
    CHECK(show(f.run({"BITFIELD_RO", "n", "GET", "u8", "0", "GET", "u16", "0", "GET", "u8",
                      "#5"})) == "[:49,:12594,:0]");
    CHECK(show(f.run({"BITFIELD_RO", "missing", "GET", "i8", "0"})) == "[:0]");
    CHECK(show(f.run({"BITFIELD_RO", "n"})) == "[]");
    CHECK(f.err({"BITFIELD_RO", "n", "SET", "u8", "0", "1"}) ==
          "ERR BITFIELD_RO only supports the GET subcommand");
    CHECK(f.err({"BITFIELD_RO", "n", "INCRBY", "u8", "0", "1", "GET", "u64", "0"}) ==
          "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported "
          "but i64 is.");
    CHECK(f.run({"GET", "n"}).str == "12");
  }
}
