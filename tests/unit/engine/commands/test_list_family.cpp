#include "tests/unit/engine/commands/command_test_util.hpp"

#include "engine/engine.hpp"
#include "engine/keyspace/digest.hpp"
#include "engine/util/clock.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace {

using keyshift::engine::EnableMode;
using keyshift::engine::Engine;
using keyshift::engine::EngineConfig;
using keyshift::engine::ListDigestBuilder;
using keyshift::engine::ManualClock;
using keyshift::engine::RespValue;
using keyshift::engine::Session;

EngineConfig debug_config() {
  EngineConfig c;
  c.enable_debug_command = EnableMode::yes;
  return c;
}

using keyshift::engine::command_test::bulk;
using keyshift::engine::command_test::err;
using keyshift::engine::command_test::num;

/// The shared harness with DEBUG allowed; `h.wire({...})` returns the raw reply bytes.
struct Harness : keyshift::engine::command_test::Harness {
  explicit Harness(EngineConfig config = debug_config())
      : keyshift::engine::command_test::Harness(std::move(config)) {}

  std::string wire(std::initializer_list<std::string_view> argv, int resp = 2) {
    session.resp = resp;
    std::vector<std::string_view> v(argv);
    size_t start = session.out.size();
    engine.execute(session, v);
    std::string out = session.out.substr(start);
    session.out.resize(start);
    session.resp = 2;
    return out;
  }
  std::string encoding(std::string_view key) { return (*this)({"OBJECT", "ENCODING", key}); }
};

/// redis-cli's rendering of a flat array of bulk strings.
std::string arr(std::initializer_list<std::string_view> items) {
  if (items.size() == 0) {
    return "(empty array)";
  }
  std::string out;
  size_t i = 0;
  for (std::string_view s : items) {
    if (i > 0) {
      out += '\n';
    }
    out += std::to_string(++i) + ") \"" + std::string(s) + "\"";
  }
  return out;
}

/// The keyevent notifications waiting for `s` (subscribed to __keyevent@0__:*), as
/// "event key" strings, in order.
std::vector<std::string> drain_events(Session& s) {
  std::vector<std::string> out;
  std::string_view data(s.out);
  while (!data.empty()) {
    RespValue v;
    size_t used = 0;
    if (keyshift::engine::parse_resp(data, v, used) != keyshift::engine::RespParse::ok) {
      break;
    }
    data.remove_prefix(used);
    if (v.elements.size() == 4 && v.elements[0].str == "pmessage") {
      std::string channel = v.elements[2].str;
      out.push_back(channel.substr(channel.find(':') + 1) + " " + v.elements[3].str);
    }
  }
  s.out.clear();
  return out;
}

constexpr std::string_view k_wrongtype =
    "WRONGTYPE Operation against a key holding the wrong kind of value";

}  // namespace

TEST_SUITE("engine::list_family") {
  TEST_CASE("LPUSH and RPUSH add at their ends and reply the new length") {
    Harness h;
    CHECK(h({"RPUSH", "l", "b", "c"}) == num(2));
    CHECK(h({"LPUSH", "l", "a", "z"}) == num(4));
    CHECK(h({"LRANGE", "l", "0", "-1"}) == arr({"z", "a", "b", "c"}));
    CHECK(h({"TYPE", "l"}) == "list");
    CHECK(h.encoding("l") == bulk("listpack"));
    CHECK(h({"SET", "s", "v"}) == "OK");
    CHECK(h({"LPUSH", "s", "x"}) == err(k_wrongtype));
    CHECK(h({"RPUSH", "l"}) == err("ERR wrong number of arguments for 'rpush' command"));
  }

  TEST_CASE("LPUSHX and RPUSHX only push onto existing lists") {
    Harness h;
    CHECK(h({"LPUSHX", "l", "a"}) == num(0));
    CHECK(h({"RPUSHX", "l", "a"}) == num(0));
    CHECK(h({"EXISTS", "l"}) == num(0));
    h({"RPUSH", "l", "m"});
    CHECK(h({"LPUSHX", "l", "a", "b"}) == num(3));
    CHECK(h({"RPUSHX", "l", "y", "z"}) == num(5));
    CHECK(h({"LRANGE", "l", "0", "-1"}) == arr({"b", "a", "m", "y", "z"}));
    h({"SET", "s", "v"});
    CHECK(h({"RPUSHX", "s", "a"}) == err(k_wrongtype));
  }

  TEST_CASE("integers are stored compactly and read back as the same text") {
    Harness h;
    h({"RPUSH", "l", "1", "-4096", "9223372036854775807", "012", "-0", "1.5"});
    CHECK(h({"LRANGE", "l", "0", "-1"}) ==
          arr({"1", "-4096", "9223372036854775807", "012", "-0", "1.5"}));
    CHECK(h({"LINDEX", "l", "2"}) == bulk("9223372036854775807"));
    CHECK(h({"LPOS", "l", "012"}) == num(3));
    CHECK(h({"LPOS", "l", "12"}) == "(nil)");
  }

  TEST_CASE("LPOP and RPOP without a count reply one element or nil") {
    Harness h;
    h({"RPUSH", "l", "a", "b", "c"});
    CHECK(h({"LPOP", "l"}) == bulk("a"));
    CHECK(h({"RPOP", "l"}) == bulk("c"));
    CHECK(h({"RPOP", "l"}) == bulk("b"));
    CHECK(h({"EXISTS", "l"}) == num(0));
    CHECK(h.wire({"LPOP", "l"}) == "$-1\r\n");
    CHECK(h.wire({"LPOP", "l"}, 3) == "_\r\n");
    CHECK(h({"LPOP", "l", "1", "2"}) == err("ERR wrong number of arguments for 'lpop' command"));
  }

  TEST_CASE("LPOP and RPOP with a count reply arrays, with Valkey's null and error rules") {
    Harness h;
    h({"RPUSH", "l", "a", "b", "c", "d"});
    CHECK(h({"LPOP", "l", "2"}) == arr({"a", "b"}));
    CHECK(h({"RPOP", "l", "0"}) == arr({}));
    CHECK(h({"RPOP", "l", "10"}) == arr({"d", "c"}));
    CHECK(h({"EXISTS", "l"}) == num(0));
    // A missing key gives a null array with a count (even 0), a null bulk without.
    CHECK(h.wire({"LPOP", "l", "2"}) == "*-1\r\n");
    CHECK(h.wire({"LPOP", "l", "0"}) == "*-1\r\n");
    CHECK(h.wire({"RPOP", "l", "2"}, 3) == "_\r\n");
    CHECK(h({"LPOP", "l", "-1"}) == err("ERR value is out of range, must be positive"));
    CHECK(h({"LPOP", "l", "abc"}) == err("ERR value is out of range, must be positive"));
    h({"SET", "s", "v"});
    CHECK(h({"LPOP", "s", "0"}) == err(k_wrongtype));
    CHECK(h({"RPOP", "s"}) == err(k_wrongtype));
    h({"RPUSH", "l", "x"});
    CHECK(h.wire({"LPOP", "l", "0"}, 3) == "*0\r\n");
  }

  TEST_CASE("LRANGE clamps indexes as Valkey does") {
    Harness h;
    h({"RPUSH", "l", "a", "b", "c", "d", "e"});
    CHECK(h({"LRANGE", "l", "1", "3"}) == arr({"b", "c", "d"}));
    CHECK(h({"LRANGE", "l", "-2", "100"}) == arr({"d", "e"}));
    CHECK(h({"LRANGE", "l", "-100", "0"}) == arr({"a"}));
    CHECK(h({"LRANGE", "l", "3", "1"}) == arr({}));
    CHECK(h({"LRANGE", "l", "5", "10"}) == arr({}));
    CHECK(h({"LRANGE", "l", "0", "-6"}) == arr({}));
    CHECK(h({"LRANGE", "missing", "0", "-1"}) == arr({}));
    CHECK(h({"LRANGE", "l", "x", "1"}) == err("ERR value is not an integer or out of range"));
    CHECK(h({"LRANGE", "missing", "0", "1.5"}) ==
          err("ERR value is not an integer or out of range"));
    h({"SET", "s", "v"});
    CHECK(h({"LRANGE", "s", "0", "1"}) == err(k_wrongtype));
  }

  TEST_CASE("LINDEX reads by position and checks the key before the index") {
    Harness h;
    h({"RPUSH", "l", "a", "b", "c"});
    CHECK(h({"LINDEX", "l", "0"}) == bulk("a"));
    CHECK(h({"LINDEX", "l", "-1"}) == bulk("c"));
    CHECK(h({"LINDEX", "l", "3"}) == "(nil)");
    CHECK(h({"LINDEX", "l", "-4"}) == "(nil)");
    CHECK(h({"LINDEX", "missing", "abc"}) == "(nil)");
    CHECK(h({"LINDEX", "l", "abc"}) == err("ERR value is not an integer or out of range"));
    h({"SET", "s", "v"});
    CHECK(h({"LINDEX", "s", "abc"}) == err(k_wrongtype));
  }

  TEST_CASE("LSET replaces by index with Valkey's errors") {
    Harness h;
    CHECK(h({"LSET", "l", "0", "x"}) == err("ERR no such key"));
    h({"RPUSH", "l", "a", "b", "c"});
    CHECK(h({"LSET", "l", "1", "B"}) == "OK");
    CHECK(h({"LSET", "l", "-1", "C"}) == "OK");
    CHECK(h({"LSET", "l", "3", "x"}) == err("ERR index out of range"));
    CHECK(h({"LSET", "l", "x", "x"}) == err("ERR value is not an integer or out of range"));
    CHECK(h({"LRANGE", "l", "0", "-1"}) == arr({"a", "B", "C"}));
    h({"SET", "s", "v"});
    CHECK(h({"LSET", "s", "0", "x"}) == err(k_wrongtype));
  }

  TEST_CASE("LSET keeps only the low 32 bits of the index, as Valkey 8.0.1 does") {
    Harness h;
    h({"RPUSH", "l", "a", "b", "c"});
    CHECK(h({"LSET", "l", "-9223372036854775808", "first"}) == "OK");  // index 0
    CHECK(h({"LSET", "l", "9223372036854775807", "last"}) == "OK");    // index -1
    CHECK(h({"LSET", "l", "4294967297", "middle"}) == "OK");           // index 1
    CHECK(h({"LRANGE", "l", "0", "-1"}) == arr({"first", "middle", "last"}));
    CHECK(h({"LSET", "l", "-2147483649", "x"}) == err("ERR index out of range"));  // 2^31 - 1
    CHECK(h({"LSET", "l", "4294967299", "x"}) == err("ERR index out of range"));   // 3
    // The same for a quicklist.
    for (int i = 0; i < 200; ++i) {
      h({"RPUSH", "q", std::string(100, static_cast<char>('a' + i % 26))});
    }
    CHECK(h.encoding("q") == bulk("quicklist"));
    CHECK(h({"LSET", "q", "-9223372036854775808", "head"}) == "OK");
    CHECK(h({"LSET", "q", "9223372036854775807", "tail"}) == "OK");
    CHECK(h({"LINDEX", "q", "0"}) == bulk("head"));
    CHECK(h({"LINDEX", "q", "-1"}) == bulk("tail"));
  }

  TEST_CASE("LINSERT puts the element next to the first pivot") {
    Harness h;
    CHECK(h({"LINSERT", "l", "BEFORE", "a", "x"}) == num(0));
    h({"RPUSH", "l", "a", "10", "a"});
    CHECK(h({"LINSERT", "l", "before", "a", "x"}) == num(4));
    CHECK(h({"LINSERT", "l", "AFTER", "10", "y"}) == num(5));
    CHECK(h({"LINSERT", "l", "AFTER", "zz", "y"}) == num(-1));
    CHECK(h({"LINSERT", "l", "AROUND", "a", "y"}) == err("ERR syntax error"));
    CHECK(h({"LINSERT", "missing", "AROUND", "a", "y"}) == err("ERR syntax error"));
    CHECK(h({"LRANGE", "l", "0", "-1"}) == arr({"x", "a", "10", "y", "a"}));
    h({"SET", "s", "v"});
    CHECK(h({"LINSERT", "s", "BEFORE", "a", "x"}) == err(k_wrongtype));
  }

  TEST_CASE("LLEN counts elements") {
    Harness h;
    CHECK(h({"LLEN", "l"}) == num(0));
    h({"RPUSH", "l", "a", "b"});
    CHECK(h({"LLEN", "l"}) == num(2));
    h({"SET", "s", "v"});
    CHECK(h({"LLEN", "s"}) == err(k_wrongtype));
  }

  TEST_CASE("LREM removes from the head, the tail or everywhere") {
    Harness h;
    h({"RPUSH", "l", "a", "b", "a", "c", "a", "b", "a"});
    CHECK(h({"LREM", "l", "2", "a"}) == num(2));
    CHECK(h({"LRANGE", "l", "0", "-1"}) == arr({"b", "c", "a", "b", "a"}));
    CHECK(h({"LREM", "l", "-1", "b"}) == num(1));
    CHECK(h({"LRANGE", "l", "0", "-1"}) == arr({"b", "c", "a", "a"}));
    CHECK(h({"LREM", "l", "0", "a"}) == num(2));
    CHECK(h({"LREM", "l", "0", "nope"}) == num(0));
    CHECK(h({"LREM", "l", "0", "b"}) == num(1));
    CHECK(h({"LREM", "l", "0", "c"}) == num(1));
    CHECK(h({"EXISTS", "l"}) == num(0));
    CHECK(h({"LREM", "l", "0", "c"}) == num(0));
    CHECK(h({"LREM", "l", "x", "c"}) == err("ERR value is not an integer or out of range"));
    CHECK(h({"LREM", "l", "-9223372036854775808", "c"}) ==
          err("ERR value is out of range, value must between -9223372036854775807 and "
              "9223372036854775807"));
  }

  TEST_CASE("LTRIM keeps a range and deletes the key when nothing is left") {
    Harness h;
    CHECK(h({"LTRIM", "l", "0", "1"}) == "OK");
    h({"RPUSH", "l", "a", "b", "c", "d", "e"});
    CHECK(h({"LTRIM", "l", "1", "-2"}) == "OK");
    CHECK(h({"LRANGE", "l", "0", "-1"}) == arr({"b", "c", "d"}));
    CHECK(h({"LTRIM", "l", "-100", "100"}) == "OK");
    CHECK(h({"LLEN", "l"}) == num(3));
    CHECK(h({"LTRIM", "l", "2", "1"}) == "OK");
    CHECK(h({"EXISTS", "l"}) == num(0));
    CHECK(h({"LTRIM", "l", "a", "1"}) == err("ERR value is not an integer or out of range"));
    h({"SET", "s", "v"});
    CHECK(h({"LTRIM", "s", "0", "1"}) == err(k_wrongtype));
  }

  TEST_CASE("LPOS finds positions with RANK, COUNT and MAXLEN") {
    Harness h;
    h({"RPUSH", "l", "a", "b", "c", "d", "1", "2", "3", "4", "3", "3", "3"});
    CHECK(h({"LPOS", "l", "3"}) == num(6));
    CHECK(h({"LPOS", "l", "3", "COUNT", "0", "RANK", "2"}) ==
          "1) (integer) 8\n2) (integer) 9\n3) (integer) 10");
    CHECK(h({"LPOS", "l", "3", "RANK", "-1"}) == num(10));
    CHECK(h({"LPOS", "l", "3", "RANK", "-2", "COUNT", "2"}) == "1) (integer) 9\n2) (integer) 8");
    CHECK(h({"LPOS", "l", "3", "COUNT", "2"}) == "1) (integer) 6\n2) (integer) 8");
    CHECK(h({"LPOS", "l", "3", "MAXLEN", "6"}) == "(nil)");
    CHECK(h({"LPOS", "l", "3", "MAXLEN", "7"}) == num(6));
    CHECK(h({"LPOS", "l", "x", "COUNT", "5"}) == "(empty array)");
    CHECK(h({"LPOS", "l", "3", "RANK", "9"}) == "(nil)");
    CHECK(h({"LPOS", "missing", "3"}) == "(nil)");
    CHECK(h({"LPOS", "missing", "3", "COUNT", "1"}) == "(empty array)");
    CHECK(h({"LPOS", "l", "3", "RANK", "0"}) ==
          err("ERR RANK can't be zero: use 1 to start from the first match, 2 from the second "
              "... or use negative to start from the end of the list"));
    CHECK(h({"LPOS", "l", "3", "COUNT", "-1"}) == err("ERR COUNT can't be negative"));
    CHECK(h({"LPOS", "l", "3", "COUNT", "x"}) == err("ERR COUNT can't be negative"));
    CHECK(h({"LPOS", "l", "3", "MAXLEN", "-1"}) == err("ERR MAXLEN can't be negative"));
    CHECK(h({"LPOS", "l", "3", "RANK", "x"}) == err("ERR value is not an integer or out of range"));
    CHECK(h({"LPOS", "l", "3", "RANK", "-9223372036854775808"}) ==
          err("ERR value is out of range, value must between -9223372036854775807 and "
              "9223372036854775807"));
    CHECK(h({"LPOS", "l", "3", "RANK"}) == err("ERR syntax error"));
    CHECK(h({"LPOS", "l", "3", "FOO", "1"}) == err("ERR syntax error"));
    // Options are checked before the key.
    CHECK(h({"LPOS", "missing", "3", "RANK", "0"}).starts_with("(error) ERR RANK can't be zero"));
    h({"SET", "s", "v"});
    CHECK(h({"LPOS", "s", "3"}) == err(k_wrongtype));
  }

  TEST_CASE("LMOVE and RPOPLPUSH move between ends and lists") {
    Harness h;
    h({"RPUSH", "src", "a", "b", "c"});
    CHECK(h({"LMOVE", "src", "dst", "LEFT", "RIGHT"}) == bulk("a"));
    CHECK(h({"LMOVE", "src", "dst", "right", "left"}) == bulk("c"));
    CHECK(h({"LRANGE", "dst", "0", "-1"}) == arr({"c", "a"}));
    CHECK(h({"RPOPLPUSH", "src", "dst"}) == bulk("b"));
    CHECK(h({"EXISTS", "src"}) == num(0));
    CHECK(h({"LRANGE", "dst", "0", "-1"}) == arr({"b", "c", "a"}));
    CHECK(h({"RPOPLPUSH", "src", "dst"}) == "(nil)");
    CHECK(h({"LMOVE", "src", "dst", "LEFT", "UP"}) == err("ERR syntax error"));
    // Same key: a rotation.
    CHECK(h({"LMOVE", "dst", "dst", "LEFT", "RIGHT"}) == bulk("b"));
    CHECK(h({"LRANGE", "dst", "0", "-1"}) == arr({"c", "a", "b"}));
    CHECK(h({"RPOPLPUSH", "dst", "dst"}) == bulk("b"));
    CHECK(h({"LRANGE", "dst", "0", "-1"}) == arr({"b", "c", "a"}));
    h({"RPUSH", "one", "x"});
    CHECK(h({"RPOPLPUSH", "one", "one"}) == bulk("x"));
    CHECK(h({"LRANGE", "one", "0", "-1"}) == arr({"x"}));
    // Type errors: the source first; a missing source never looks at the destination.
    h({"SET", "s", "v"});
    CHECK(h({"LMOVE", "dst", "s", "LEFT", "LEFT"}) == err(k_wrongtype));
    CHECK(h({"LMOVE", "s", "dst", "LEFT", "LEFT"}) == err(k_wrongtype));
    CHECK(h({"LMOVE", "nothing", "s", "LEFT", "LEFT"}) == "(nil)");
    CHECK(h({"LRANGE", "dst", "0", "-1"}) == arr({"b", "c", "a"}));
  }

  TEST_CASE("LMPOP pops from the first non-empty list") {
    Harness h;
    h({"RPUSH", "b", "1", "2", "3"});
    h({"RPUSH", "c", "x"});
    CHECK(h({"LMPOP", "3", "a", "b", "c", "LEFT"}) == "1) \"b\"\n2) 1) \"1\"");
    CHECK(h({"LMPOP", "2", "b", "c", "RIGHT", "COUNT", "5"}) ==
          "1) \"b\"\n2) 1) \"3\"\n   2) \"2\"");
    CHECK(h({"EXISTS", "b"}) == num(0));
    CHECK(h({"LMPOP", "1", "nothing", "LEFT"}) == "(nil)");
    CHECK(h.wire({"LMPOP", "1", "nothing", "LEFT"}) == "*-1\r\n");
    CHECK(h.wire({"LMPOP", "1", "nothing", "LEFT"}, 3) == "_\r\n");
    CHECK(h({"LMPOP", "0", "c", "LEFT"}) == err("ERR numkeys should be greater than 0"));
    CHECK(h({"LMPOP", "-1", "c", "LEFT"}) == err("ERR numkeys should be greater than 0"));
    CHECK(h({"LMPOP", "x", "c", "LEFT"}) == err("ERR numkeys should be greater than 0"));
    CHECK(h({"LMPOP", "2", "c", "LEFT"}) == err("ERR syntax error"));
    CHECK(h({"LMPOP", "9223372036854775807", "c", "LEFT"}) == err("ERR syntax error"));
    CHECK(h({"LMPOP", "1", "c", "UP"}) == err("ERR syntax error"));
    CHECK(h({"LMPOP", "1", "c", "LEFT", "COUNT", "0"}) ==
          err("ERR count should be greater than 0"));
    CHECK(h({"LMPOP", "1", "c", "LEFT", "COUNT", "x"}) ==
          err("ERR count should be greater than 0"));
    CHECK(h({"LMPOP", "1", "c", "LEFT", "COUNT", "1", "COUNT", "1"}) == err("ERR syntax error"));
    CHECK(h({"LMPOP", "1", "c", "LEFT", "COUNT"}) == err("ERR syntax error"));
    h({"SET", "s", "v"});
    CHECK(h({"LMPOP", "2", "s", "c", "LEFT"}) == err(k_wrongtype));
    CHECK(h({"LMPOP", "2", "c", "s", "LEFT"}) == "1) \"c\"\n2) 1) \"x\"");
  }

  TEST_CASE("lists convert to quicklist past the byte limit and back at half of it") {
    Harness h;
    std::string chunk(1000, 'x');
    for (int i = 0; i < 8; ++i) {
      h({"RPUSH", "l", chunk});
    }
    CHECK(h.encoding("l") == bulk("listpack"));
    h({"RPUSH", "l", chunk});  // over 8 KB
    CHECK(h.encoding("l") == bulk("quicklist"));
    // Shrinking converts back only at half the limit (4 KB) and one node.
    h({"LTRIM", "l", "0", "4"});
    CHECK(h.encoding("l") == bulk("quicklist"));
    h({"RPOP", "l"});
    CHECK(h.encoding("l") == bulk("listpack"));
    CHECK(h({"LLEN", "l"}) == num(4));
    // A large element needs a quicklist (its own plain node).
    h({"RPUSH", "big", std::string(9000, 'y')});
    CHECK(h.encoding("big") == bulk("quicklist"));
    CHECK(h({"LINDEX", "big", "0"}) == bulk(std::string(9000, 'y')));
    h({"LSET", "big", "0", "small"});
    CHECK(h.encoding("big") == bulk("listpack"));
  }

  TEST_CASE("a count fill converts by entries, and CONFIG SET applies to new changes") {
    Harness h;
    CHECK(h({"CONFIG", "SET", "list-max-listpack-size", "4"}) == "OK");
    CHECK(h({"CONFIG", "GET", "list-max-listpack-size"}) ==
          "1) \"list-max-listpack-size\"\n2) \"4\"");
    h({"RPUSH", "l", "1", "2", "3", "4"});
    CHECK(h.encoding("l") == bulk("listpack"));
    h({"RPUSH", "l", "5"});
    CHECK(h.encoding("l") == bulk("quicklist"));
    h({"RPOP", "l", "3"});
    CHECK(h.encoding("l") == bulk("listpack"));
    h({"LINSERT", "l", "AFTER", "1", "x"});
    h({"LINSERT", "l", "AFTER", "1", "y"});
    h({"LINSERT", "l", "AFTER", "1", "z"});
    CHECK(h.encoding("l") == bulk("quicklist"));
    CHECK(h({"LRANGE", "l", "0", "-1"}) == arr({"1", "z", "y", "x", "2"}));
  }

  TEST_CASE("compressed quicklists read, search and edit correctly") {
    Harness h;
    h({"CONFIG", "SET", "list-max-listpack-size", "8"});
    h({"CONFIG", "SET", "list-compress-depth", "1"});
    std::vector<std::string> expect;
    for (int i = 0; i < 500; ++i) {
      std::string v = "element-with-some-repetition-" + std::to_string(i % 10);
      h({"RPUSH", "l", v});
      expect.push_back(v);
    }
    CHECK(h({"LLEN", "l"}) == num(500));
    CHECK(h({"LINDEX", "l", "250"}) == bulk(expect[250]));
    CHECK(h({"LPOS", "l", "element-with-some-repetition-3", "RANK", "-1"}) == num(493));
    CHECK(h({"LSET", "l", "300", "changed"}) == "OK");
    CHECK(h({"LREM", "l", "0", "element-with-some-repetition-5"}) == num(50));
    CHECK(h({"LLEN", "l"}) == num(450));
    CHECK(h({"LINDEX", "l", "-1"}) == bulk(expect[499]));
    std::string all = h({"LRANGE", "l", "0", "-1"});
    CHECK(all.find("\"changed\"") != std::string::npos);
    CHECK(all.find("repetition-5") == std::string::npos);
  }

  TEST_CASE("memory accounting returns to its baseline when lists go away") {
    Harness h;
    h({"SET", "warm", "up"});
    uint64_t base = h.engine.memory().used();
    std::string big(9000, 'q');
    h({"RPUSH", "l", "a", "b", "c"});
    for (int i = 0; i < 300; ++i) {
      h({"LPUSH", "l", "value-" + std::to_string(i)});
    }
    h({"RPUSH", "l", big});
    h({"LINSERT", "l", "BEFORE", "value-100", "inserted"});
    h({"LSET", "l", "10", big});
    h({"LREM", "l", "3", "b"});
    h({"LTRIM", "l", "5", "-5"});
    h({"LMOVE", "l", "m", "LEFT", "RIGHT"});
    h({"COPY", "l", "copy"});
    uint64_t with_lists = h.engine.memory().used();
    CHECK(with_lists > base);
    h({"DEL", "l", "m", "copy"});
    CHECK(h.engine.memory().used() == base);
    h({"RPUSH", "p", "x", "y"});
    h({"LPOP", "p", "2"});
    CHECK(h.engine.memory().used() == base);
  }

  TEST_CASE("COPY makes an independent list with the same encoding and digest") {
    Harness h;
    h({"RPUSH", "l", "a", "1", "b"});
    CHECK(h({"COPY", "l", "c"}) == num(1));
    CHECK(h.encoding("c") == bulk("listpack"));
    CHECK(h({"DEBUG", "DIGEST-VALUE", "l"}) == h({"DEBUG", "DIGEST-VALUE", "c"}));
    h({"RPUSH", "c", "more"});
    CHECK(h({"LRANGE", "l", "0", "-1"}) == arr({"a", "1", "b"}));
    CHECK(h({"DEBUG", "DIGEST-VALUE", "l"}) != h({"DEBUG", "DIGEST-VALUE", "c"}));
    h({"RPUSH", "q", std::string(9000, 'z')});
    CHECK(h({"COPY", "q", "q2"}) == num(1));
    CHECK(h.encoding("q2") == bulk("quicklist"));
    CHECK(h({"LINDEX", "q2", "0"}) == bulk(std::string(9000, 'z')));
  }

  TEST_CASE("DEBUG DIGEST-VALUE digests list elements head to tail") {
    Harness h;
    h({"RPUSH", "l", "a", "12", "b"});
    ListDigestBuilder b;
    b.add("a");
    b.add(int64_t{12});
    b.add("b");
    CHECK(h({"DEBUG", "DIGEST-VALUE", "l"}) == "1) " + b.finish(false).hex());
    // The encoding does not change the digest.
    Harness q;
    q({"CONFIG", "SET", "list-max-listpack-size", "1"});
    q({"RPUSH", "l", "a", "12", "b"});
    CHECK(q.encoding("l") == bulk("quicklist"));
    CHECK(q({"DEBUG", "DIGEST-VALUE", "l"}) == h({"DEBUG", "DIGEST-VALUE", "l"}));
    CHECK(q({"DEBUG", "DIGEST"}) == h({"DEBUG", "DIGEST"}));
    CHECK(h({"DEBUG", "DIGEST"}) != "0000000000000000000000000000000000000000");
  }

  TEST_CASE("writes emit Valkey's list events, with del when a list empties") {
    Harness h;
    CHECK(h({"CONFIG", "SET", "notify-keyspace-events", "Elg"}) == "OK");
    Session& sub = h.engine.open_session(nullptr);
    std::vector<std::string_view> ps = {"PSUBSCRIBE", "__keyevent@0__:*"};
    h.engine.execute(sub, ps);
    sub.out.clear();
    using V = std::vector<std::string>;
    h({"RPUSH", "l", "a", "b", "c"});
    h({"LPUSH", "l", "z"});
    h({"LPUSHX", "nothing", "z"});
    CHECK(drain_events(sub) == V{"rpush l", "lpush l"});
    h({"LINSERT", "l", "AFTER", "a", "x"});
    h({"LINSERT", "l", "AFTER", "missing-pivot", "x"});
    h({"LSET", "l", "0", "y"});
    h({"LREM", "l", "0", "x"});
    h({"LREM", "l", "0", "not-there"});
    CHECK(drain_events(sub) == V{"linsert l", "lset l", "lrem l"});
    h({"LMOVE", "l", "m", "LEFT", "RIGHT"});
    CHECK(drain_events(sub) == V{"rpush m", "lpop l"});
    h({"LTRIM", "l", "0", "0"});
    h({"RPOP", "l"});
    CHECK(drain_events(sub) == V{"ltrim l", "rpop l", "del l"});
    h({"LMPOP", "1", "m", "LEFT", "COUNT", "5"});
    CHECK(drain_events(sub) == V{"lpop m", "del m"});
    h({"RPUSH", "t", "a"});
    h({"LTRIM", "t", "1", "0"});
    CHECK(drain_events(sub) == V{"rpush t", "ltrim t", "del t"});
  }
}
