// The Lua bridge's conversion rules (Valkey's script_lua.c), through a real engine's EVAL and
// directly on a bare Lua state.
#include "tests/unit/engine/scripting/script_fixture.hpp"

#include "engine/commands/context.hpp"
#include "engine/engine.hpp"
#include "engine/scripting/lua_bridge.hpp"
#include "engine/scripting/script_engine.hpp"
#include "engine/util/clock.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

namespace keyshift::engine {
namespace {

using Fixture = test::ScriptFixture;

// Parses `reply` into Lua and writes it back as a script's return value would be written.
std::string round_trip(std::string_view reply, int client_resp, int script_resp) {
  std::string out;
  if (!lua::round_trip_reply(reply, client_resp, script_resp, out)) {
    return "<unparsed>";
  }
  return out;
}

}  // namespace

TEST_SUITE("lua bridge") {
  TEST_CASE("RESP2 replies become Lua values and come back as Valkey sends them") {
    CHECK(round_trip(":42\r\n", 2, 2) == ":42\r\n");
    CHECK(round_trip("$3\r\nabc\r\n", 2, 2) == "$3\r\nabc\r\n");
    // A null bulk is false, and false goes back as a null.
    CHECK(round_trip("$-1\r\n", 2, 2) == "$-1\r\n");
    CHECK(round_trip("*-1\r\n", 2, 2) == "$-1\r\n");
    CHECK(round_trip("+OK\r\n", 2, 2) == "+OK\r\n");
    CHECK(round_trip("*2\r\n:1\r\n$1\r\nx\r\n", 2, 2) == "*2\r\n:1\r\n$1\r\nx\r\n");
  }

  TEST_CASE("an error reply becomes an err table and keeps its code") {
    CHECK(round_trip("-WRONGTYPE bad kind\r\n", 2, 2) == "-WRONGTYPE bad kind\r\n");
  }

  TEST_CASE("RESP3 types become tagged tables and follow the client's protocol back") {
    CHECK(round_trip("%1\r\n$1\r\nk\r\n:1\r\n", 3, 3) == "%1\r\n$1\r\nk\r\n:1\r\n");
    CHECK(round_trip("%1\r\n$1\r\nk\r\n:1\r\n", 2, 3) == "*2\r\n$1\r\nk\r\n:1\r\n");
    CHECK(round_trip("~1\r\n$1\r\na\r\n", 3, 3) == "~1\r\n$1\r\na\r\n");
    CHECK(round_trip(",3.5\r\n", 3, 3) == ",3.5\r\n");
    CHECK(round_trip(",3.5\r\n", 2, 3) == "$3\r\n3.5\r\n");
    CHECK(round_trip("(12345678901234567890\r\n", 3, 3) == "(12345678901234567890\r\n");
    CHECK(round_trip("(12345678901234567890\r\n", 2, 3) == "$20\r\n12345678901234567890\r\n");
    CHECK(round_trip("=7\r\ntxt:abc\r\n", 3, 3) == "=7\r\ntxt:abc\r\n");
    // A RESP3 null is nil, which ends nothing and is sent as a null.
    CHECK(round_trip("_\r\n", 3, 3) == "_\r\n");
    // Attributes are skipped; the value after them is what the script sees.
    CHECK(round_trip("|1\r\n$1\r\na\r\n:1\r\n:7\r\n", 3, 3) == ":7\r\n");
  }

  TEST_CASE("a null map key or set member is left out instead of aborting the process") {
    // lua_settable with a nil key raises outside a protected call: Lua's panic aborts.
    CHECK(round_trip("~2\r\n_\r\n$1\r\na\r\n", 3, 3) == "~1\r\n$1\r\na\r\n");
    CHECK(round_trip("%2\r\n_\r\n:1\r\n$1\r\nk\r\n:2\r\n", 3, 3) == "%1\r\n$1\r\nk\r\n:2\r\n");
  }

  TEST_CASE("booleans go back by the script's protocol, not only the client's") {
    CHECK(round_trip("#t\r\n", 3, 3) == "#t\r\n");
    CHECK(round_trip("#t\r\n", 3, 2) == ":1\r\n");
    CHECK(round_trip("#f\r\n", 3, 2) == "_\r\n");
    CHECK(round_trip("#f\r\n", 2, 2) == "$-1\r\n");
    CHECK(round_trip("#f\r\n", 2, 3) == ":0\r\n");
  }

  TEST_CASE("truncated replies are refused without pushing anything") {
    CHECK(round_trip("$5\r\nab", 2, 2) == "<unparsed>");
    CHECK(round_trip("*2\r\n:1\r\n", 2, 2) == "<unparsed>");
    CHECK(round_trip("?\r\n", 2, 2) == "<unparsed>");
    // An attribute count whose pair count overflows (found by the bridge's fuzz target).
    CHECK(round_trip("|8888888888888888882\r\n:1\r\n", 3, 3) == "<unparsed>");
  }

  TEST_CASE("numbers become integer arguments when they are integral") {
    CHECK(lua::number_argument(3.0) == "3");
    CHECK(lua::number_argument(-17.0) == "-17");
    CHECK(lua::number_argument(1.5) == "1.5");
    CHECK(lua::number_argument(1e300) == "1e+300");
  }

  TEST_CASE("an EVAL converts the script's return value as Valkey does") {
    Fixture f;
    CHECK(f.raw({"eval", "return {1, 'a', 3.9, {2}, nil, 5}", "0"}) ==
          "*4\r\n:1\r\n$1\r\na\r\n:3\r\n*1\r\n:2\r\n");
    CHECK(f.raw({"eval", "return redis.status_reply('FINE')", "0"}) == "+FINE\r\n");
    CHECK(f.raw({"eval", "return redis.error_reply('MY bad')", "0"}) == "-MY bad\r\n");
    CHECK(f.raw({"eval", "return true", "0"}) == ":1\r\n");
    CHECK(f.raw({"eval", "return false", "0"}) == "$-1\r\n");
    CHECK(f.raw({"eval", "return {double=1.5}", "0"}) == "$3\r\n1.5\r\n");
  }

  TEST_CASE("server.call runs commands on the caller's database and raises their errors") {
    Fixture f;
    CHECK(f.raw({"select", "3"}) == "+OK\r\n");
    CHECK(f.raw({"eval", "redis.call('set', KEYS[1], ARGV[1]); return redis.call('get', KEYS[1])",
                 "1", "k", "v"}) == "$1\r\nv\r\n");
    CHECK(f.raw({"get", "k"}) == "$1\r\nv\r\n");
    CHECK(f.raw({"select", "0"}) == "+OK\r\n");
    CHECK(f.raw({"get", "k"}) == "$-1\r\n");
    CHECK(f.raw({"eval", "return redis.call('get', 'k', 'x')", "0"})
              .starts_with("-ERR Wrong number of args calling command from script script: "));
    CHECK(f.raw({"eval", "return redis.call('nosuch')", "0"})
              .starts_with("-ERR Unknown command called from script script: "));
    CHECK(f.raw({"eval", "return redis.pcall('multi')", "0"}) ==
          "-ERR This Redis command is not allowed from script\r\n");
    f.raw({"hset", "h", "f", "v"});
    CHECK(f.raw({"eval", "return redis.call('incr', 'h')", "0"})
              .starts_with("-WRONGTYPE Operation against a key holding the wrong kind of value "
                           "script: "));
  }

  TEST_CASE("read-only scripts refuse writes") {
    Fixture f;
    CHECK(f.raw({"eval_ro", "return redis.call('set', 'a', 'b')", "0"})
              .starts_with("-ERR Write commands are not allowed from read-only scripts."));
    CHECK(f.raw({"eval", "#!lua flags=no-writes\nreturn redis.call('set', 'a', 'b')", "0"})
              .starts_with("-ERR Write commands are not allowed from read-only scripts."));
    CHECK(f.raw({"eval", "#!lua flags=bogus\nreturn 1", "0"}) ==
          "-ERR Unexpected flag in script shebang: bogus\r\n");
    CHECK(f.raw({"eval", "#!lua\nreturn redis.call('set', 'a', 'b')", "0"}) == "+OK\r\n");
    CHECK(f.raw({"eval_ro", "#!lua\nreturn 1", "0"}) ==
          "-ERR Can not execute a script with write flag using *_ro command.\r\n");
  }

  TEST_CASE("min-replicas-to-write refuses scripts that may write, as a write command") {
    Fixture f;
    REQUIRE(f.raw({"set", "x", "v"}) == "+OK\r\n");
    REQUIRE(f.raw({"config", "set", "min-replicas-to-write", "1"}) == "+OK\r\n");
    // Declared no-writes, or without flags and only reading: they run.
    CHECK(f.raw({"eval", "#!lua flags=no-writes\nreturn redis.call('get', 'x')", "0"}) ==
          "$1\r\nv\r\n");
    CHECK(f.raw({"eval", "return redis.call('get', 'x')", "0"}) == "$1\r\nv\r\n");
    // Declared (may write): refused before it starts; without flags: its write is refused.
    CHECK(f.raw({"eval", "#!lua\nreturn redis.call('get', 'x')", "0"}) ==
          "-NOREPLICAS Not enough good replicas to write.\r\n");
    CHECK(f.raw({"eval", "return redis.call('set', 'x', '1')", "0"})
              .starts_with("-NOREPLICAS Not enough good replicas to write."));
    REQUIRE(f.raw({"config", "set", "min-replicas-to-write", "0"}) == "+OK\r\n");
    CHECK(f.raw({"eval", "#!lua\nreturn redis.call('set', 'x', '1')", "0"}) == "+OK\r\n");
  }

  TEST_CASE("the sandbox protects globals and library tables") {
    Fixture f;
    CHECK(f.raw({"eval", "x = 1", "0"}).find("Attempt to modify a readonly table") !=
          std::string::npos);
    CHECK(f.raw({"eval", "return y", "0"})
              .find("Script attempted to access nonexistent global variable 'y'") !=
          std::string::npos);
    CHECK(f.raw({"eval", "redis.call = nil", "0"}).find("Attempt to modify a readonly table") !=
          std::string::npos);
    CHECK(f.raw({"eval", "setmetatable(_G, {})", "0"}).find("Attempt to modify a readonly table") !=
          std::string::npos);
    CHECK(f.raw({"eval", "return os.execute", "0"}) == "$-1\r\n");
    CHECK(f.raw({"eval", "return print", "0"}).find("nonexistent global variable 'print'") !=
          std::string::npos);
    CHECK(f.raw({"eval", "return bit.tohex(65535, -2147483648)", "0"}) == "$8\r\n0000FFFF\r\n");
    CHECK(f.raw({"eval", "return cjson.encode({1, 2})", "0"}) == "$5\r\n[1,2]\r\n");
  }

  TEST_CASE("EVALSHA runs what SCRIPT LOAD cached, and SCRIPT FLUSH forgets it") {
    Fixture f;
    std::string sha = "e0e1f9fabfc9d4800c877a703b823ac0578ff8db";
    CHECK(f.raw({"evalsha", sha, "0"}) == "-NOSCRIPT No matching script.\r\n");
    CHECK(f.raw({"script", "load", "return 1"}) == "$40\r\n" + sha + "\r\n");
    CHECK(f.raw({"evalsha", "E0E1F9FABFC9D4800C877A703B823AC0578FF8DB", "0"}) == ":1\r\n");
    CHECK(f.raw({"script", "exists", sha, "ffff"}) == "*2\r\n:1\r\n:0\r\n");
    CHECK(f.raw({"script", "show", sha}) == "$8\r\nreturn 1\r\n");
    CHECK(f.raw({"script", "flush"}) == "+OK\r\n");
    CHECK(f.raw({"evalsha", sha, "0"}) == "-NOSCRIPT No matching script.\r\n");
    CHECK(f.raw({"script", "kill"}) == "-NOTBUSY No scripts in execution right now.\r\n");
  }

  TEST_CASE("function libraries load, run by FCALL, list and delete") {
    Fixture f;
    std::string lib =
        "#!lua name=mylib\n"
        "redis.register_function('incr2', function(keys, args) "
        "return redis.call('incrby', keys[1], 2) end)\n"
        "redis.register_function{function_name='ro', callback=function() return 'r' end, "
        "flags={'no-writes'}}";
    CHECK(f.raw({"function", "load", lib}) == "$5\r\nmylib\r\n");
    CHECK(f.raw({"function", "load", lib}) == "-ERR Library 'mylib' already exists\r\n");
    CHECK(f.raw({"fcall", "incr2", "1", "n"}) == ":2\r\n");
    CHECK(f.raw({"fcall", "incr2", "1", "n"}) == ":4\r\n");
    CHECK(f.raw({"fcall_ro", "ro", "0"}) == "$1\r\nr\r\n");
    CHECK(f.raw({"fcall_ro", "incr2", "1", "n"}) ==
          "-ERR Can not execute a script with write flag using *_ro command.\r\n");
    CHECK(f.raw({"fcall", "nope", "0"}) == "-ERR Function not found\r\n");
    CHECK(f.raw({"function", "list"}).find("incr2") != std::string::npos);
    // The dump restores what it dumped, after a flush.
    std::string dump = f.raw({"function", "dump"});
    REQUIRE(dump.starts_with("$"));
    std::string payload = dump.substr(dump.find("\r\n") + 2);
    payload.resize(payload.size() - 2);
    CHECK(f.raw({"function", "flush"}) == "+OK\r\n");
    CHECK(f.raw({"fcall", "incr2", "1", "n"}) == "-ERR Function not found\r\n");
    CHECK(f.raw({"function", "restore", payload}) == "+OK\r\n");
    CHECK(f.raw({"fcall", "incr2", "1", "n"}) == ":6\r\n");
    CHECK(f.raw({"function", "delete", "mylib"}) == "+OK\r\n");
    CHECK(f.raw({"function", "delete", "mylib"}) == "-ERR Library not found\r\n");
    CHECK(f.raw({"function", "load", "return 1"}) == "-ERR Missing library metadata\r\n");
    CHECK(f.raw({"function", "load", "#!lua name=x\nreturn 1"}) ==
          "-ERR No functions registered\r\n");
  }
}

}  // namespace keyshift::engine
