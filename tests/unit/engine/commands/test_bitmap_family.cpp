#include "tests/unit/engine/commands/command_test_util.hpp"

#include "engine/engine.hpp"

#include <doctest/doctest.h>

#include <string>

using keyshift::engine::Engine;
using keyshift::engine::EngineConfig;
using keyshift::engine::ManualClock;
using keyshift::engine::RespValue;

namespace {

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
}
