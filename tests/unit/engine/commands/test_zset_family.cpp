#include "tests/unit/engine/commands/command_test_util.hpp"

#include "engine/engine.hpp"
#include "engine/util/memory.hpp"

#include <doctest/doctest.h>

#include <set>
#include <string>
#include <vector>

using keyshift::engine::Engine;
using keyshift::engine::EngineConfig;
using keyshift::engine::ManualClock;
using keyshift::engine::RespValue;
using keyshift::engine::Session;

namespace {

using keyshift::engine::command_test::show;

EngineConfig debug_config() {
  EngineConfig c;
  c.enable_debug_command = keyshift::engine::EnableMode::yes;
  return c;
}

struct Fixture {
  ManualClock clock;
  Engine engine{debug_config(), clock};
  Session* s2 = &engine.open_session(nullptr);
  Session* s3 = [this] {
    Session* s = &engine.open_session(nullptr);
    s->resp = 3;
    return s;
  }();

  std::string r(std::initializer_list<std::string_view> args) { return r2(args); }
  std::string r2(std::initializer_list<std::string_view> args) {
    std::vector<std::string_view> v(args);
    return show(engine.run(*s2, v));
  }
  std::string r3(std::initializer_list<std::string_view> args) {
    std::vector<std::string_view> v(args);
    return show(engine.run(*s3, v));
  }
  /// The raw RESP3 bytes of a reply.
  std::string raw3(std::initializer_list<std::string_view> args) {
    std::vector<std::string_view> v(args);
    size_t start = s3->out.size();
    engine.execute(*s3, v);
    std::string out = s3->out.substr(start);
    s3->out.resize(start);
    return out;
  }
  std::string encoding(std::string_view key) { return r({"OBJECT", "ENCODING", key}); }
};

}  // namespace

TEST_SUITE("engine::zset_family") {
  TEST_CASE("ZADD adds members, counts only new ones and replies CH counts with CH") {
    Fixture f;
    CHECK(f.r({"ZADD", "z", "1", "a", "2", "b"}) == ":2");
    CHECK(f.r({"ZADD", "z", "3", "a", "4", "c"}) == ":1");
    CHECK(f.r({"ZADD", "z", "CH", "5", "a", "4", "c", "6", "d"}) == ":2");
    CHECK(f.r({"ZRANGE", "z", "0", "-1", "WITHSCORES"}) == "[b,2,c,4,a,5,d,6]");
    CHECK(f.r({"ZCARD", "z"}) == ":4");
    CHECK(f.r({"TYPE", "z"}) == "+zset");
    CHECK(f.encoding("z") == "listpack");
  }

  TEST_CASE("ZADD NX, XX, GT and LT only write under their condition") {
    Fixture f;
    CHECK(f.r({"ZADD", "z", "XX", "1", "a"}) == ":0");
    CHECK(f.r({"EXISTS", "z"}) == ":0");
    CHECK(f.r({"ZADD", "z", "NX", "1", "a"}) == ":1");
    CHECK(f.r({"ZADD", "z", "NX", "5", "a", "2", "b"}) == ":1");
    CHECK(f.r({"ZSCORE", "z", "a"}) == "1");
    CHECK(f.r({"ZADD", "z", "XX", "CH", "7", "a", "3", "new"}) == ":1");
    CHECK(f.r({"ZSCORE", "z", "new"}) == "nil");
    CHECK(f.r({"ZADD", "z", "GT", "CH", "5", "a", "9", "b"}) == ":1");
    CHECK(f.r({"ZSCORE", "z", "a"}) == "7");
    CHECK(f.r({"ZSCORE", "z", "b"}) == "9");
    CHECK(f.r({"ZADD", "z", "LT", "CH", "8", "a", "1", "b", "0", "c"}) == ":2");
    CHECK(f.r({"ZRANGE", "z", "0", "-1", "WITHSCORES"}) == "[c,0,b,1,a,7]");
    CHECK(f.r({"ZADD", "z", "XX", "GT", "CH", "100", "a"}) == ":1");
  }

  TEST_CASE("ZADD option and argument errors use Valkey's words and come before WRONGTYPE") {
    Fixture f;
    f.r({"SET", "s", "x"});
    CHECK(f.r({"ZADD", "z", "NX", "XX", "1", "a"}) ==
          "-ERR XX and NX options at the same time are not compatible");
    CHECK(f.r({"ZADD", "z", "NX", "GT", "1", "a"}) ==
          "-ERR GT, LT, and/or NX options at the same time are not compatible");
    CHECK(f.r({"ZADD", "z", "GT", "LT", "1", "a"}) ==
          "-ERR GT, LT, and/or NX options at the same time are not compatible");
    CHECK(f.r({"ZADD", "z", "INCR", "1", "a", "2", "b"}) ==
          "-ERR INCR option supports a single increment-element pair");
    CHECK(f.r({"ZADD", "z", "1", "a", "2"}) == "-ERR syntax error");
    CHECK(f.r({"ZADD", "z", "NX"}) == "-ERR wrong number of arguments for 'zadd' command");
    CHECK(f.r({"ZADD", "z", "NX", "CH"}) == "-ERR syntax error");
    CHECK(f.r({"ZADD", "z", "x", "a"}) == "-ERR value is not a valid float");
    CHECK(f.r({"ZADD", "z", "nan", "a"}) == "-ERR value is not a valid float");
    CHECK(f.r({"ZADD", "z", " 1", "a"}) == "-ERR value is not a valid float");
    CHECK(f.r({"ZADD", "z", "1e400", "a"}) == "-ERR value is not a valid float");
    CHECK(f.r({"ZADD", "s", "x", "a"}) == "-ERR value is not a valid float");
    CHECK(f.r({"ZADD", "s", "1", "a"}) ==
          "-WRONGTYPE Operation against a key holding the wrong kind of value");
    CHECK(f.r({"ZADD", "z", "1", "a", "x", "b"}) == "-ERR value is not a valid float");
    CHECK(f.r({"EXISTS", "z"}) == ":0");
  }

  TEST_CASE("ZADD INCR and ZINCRBY reply the new score, nil when skipped, NaN is an error") {
    Fixture f;
    CHECK(f.r({"ZINCRBY", "z", "1.5", "a"}) == "1.5");
    CHECK(f.r({"ZADD", "z", "INCR", "0.1", "a"}) == "1.6");
    CHECK(f.r({"ZADD", "z", "INCR", "NX", "1", "a"}) == "nil");
    CHECK(f.r({"ZADD", "z", "INCR", "XX", "1", "b"}) == "nil");
    CHECK(f.r({"ZADD", "z", "INCR", "GT", "-1", "a"}) == "nil");
    CHECK(f.r({"ZINCRBY", "z", "0", "a"}) == "1.6");
    CHECK(f.r({"ZINCRBY", "z", "inf", "a"}) == "inf");
    CHECK(f.r({"ZINCRBY", "z", "-inf", "a"}) == "-ERR resulting score is not a number (NaN)");
    CHECK(f.r({"ZSCORE", "z", "a"}) == "inf");
    CHECK(f.r({"ZINCRBY", "z", "abc", "a"}) == "-ERR value is not a valid float");
    CHECK(f.r3({"ZINCRBY", "z", "1", "b"}) == ",1");
    CHECK(f.r({"ZADD", "missing", "XX", "INCR", "1", "a"}) == "nil");
  }

  TEST_CASE("scores print as Valkey 8 prints them, in RESP2 and RESP3") {
    Fixture f;
    f.r({"ZADD", "z", "0.1", "a", "1e17", "b", "-0", "c", "inf", "d", "-inf", "e"});
    f.r({"ZADD", "z", "1.2345678901234567", "g", "1e300", "h", "0.30000000000000004", "i"});
    CHECK(f.r({"ZSCORE", "z", "a"}) == "0.1");
    CHECK(f.r({"ZSCORE", "z", "b"}) == "100000000000000000");
    CHECK(f.r({"ZSCORE", "z", "c"}) == "0");  // a listpack stores -0 as the integer 0
    CHECK(f.r({"ZSCORE", "z", "d"}) == "inf");
    CHECK(f.r({"ZSCORE", "z", "e"}) == "-inf");
    CHECK(f.r({"ZSCORE", "z", "g"}) == "1.2345678901234567");
    CHECK(f.r({"ZSCORE", "z", "h"}) == "1e+300");
    CHECK(f.r({"ZSCORE", "z", "i"}) == "0.30000000000000004");
    CHECK(f.raw3({"ZSCORE", "z", "a"}) == ",0.1\r\n");
    CHECK(f.raw3({"ZSCORE", "z", "d"}) == ",inf\r\n");
    CHECK(f.raw3({"ZSCORE", "z", "b"}) == ",100000000000000000\r\n");
    CHECK(f.r({"ZMSCORE", "z", "a", "nope", "e"}) == "[0.1,nil,-inf]");
    CHECK(f.r3({"ZMSCORE", "z", "a", "nope"}) == "[,0.1,nil]");
    // A skiplist keeps -0.
    f.r({"CONFIG", "SET", "zset-max-listpack-entries", "0"});
    f.r({"ZADD", "big", "-0", "c", "0.1", "a"});
    CHECK(f.encoding("big") == "skiplist");
    CHECK(f.r({"ZSCORE", "big", "c"}) == "-0");
    CHECK(f.r({"ZSCORE", "big", "a"}) == "0.1");
  }

  TEST_CASE("ZSCORE, ZMSCORE, ZCARD on missing keys and wrong types") {
    Fixture f;
    f.r({"SET", "s", "x"});
    CHECK(f.r({"ZSCORE", "nope", "a"}) == "nil");
    CHECK(f.r({"ZMSCORE", "nope", "a", "b"}) == "[nil,nil]");
    CHECK(f.r({"ZCARD", "nope"}) == ":0");
    const std::string wt = "-WRONGTYPE Operation against a key holding the wrong kind of value";
    CHECK(f.r({"ZSCORE", "s", "a"}) == wt);
    CHECK(f.r({"ZMSCORE", "s", "a"}) == wt);
    CHECK(f.r({"ZCARD", "s"}) == wt);
    CHECK(f.r({"ZRANGE", "s", "0", "1"}) == wt);
    CHECK(f.r({"ZREM", "s", "a"}) == wt);
  }

  TEST_CASE("ZREM removes members and deletes the emptied key") {
    Fixture f;
    f.r({"ZADD", "z", "1", "a", "2", "b", "3", "c"});
    CHECK(f.r({"ZREM", "z", "a", "x"}) == ":1");
    CHECK(f.r({"ZREM", "z", "b", "c", "b"}) == ":2");
    CHECK(f.r({"EXISTS", "z"}) == ":0");
    CHECK(f.r({"ZREM", "z", "a"}) == ":0");
  }

  TEST_CASE("ZRANK and ZREVRANK with and without WITHSCORE") {
    Fixture f;
    f.r({"ZADD", "z", "1", "a", "2", "b", "3.5", "c"});
    CHECK(f.r({"ZRANK", "z", "a"}) == ":0");
    CHECK(f.r({"ZRANK", "z", "c"}) == ":2");
    CHECK(f.r({"ZREVRANK", "z", "c"}) == ":0");
    CHECK(f.r({"ZRANK", "z", "c", "WITHSCORE"}) == "[:2,3.5]");
    CHECK(f.r3({"ZREVRANK", "z", "a", "withscore"}) == "[:2,,1]");
    CHECK(f.r({"ZRANK", "z", "x"}) == "nil");
    CHECK(f.r({"ZRANK", "z", "x", "WITHSCORE"}) == "nil");
    CHECK(f.r({"ZRANK", "nope", "x", "WITHSCORE"}) == "nil");
    CHECK(f.r({"ZRANK", "z", "a", "WITHSCORES"}) == "-ERR syntax error");
    CHECK(f.r({"ZRANK", "z", "a", "WITHSCORE", "x"}) ==
          "-ERR wrong number of arguments for 'zrank' command");
  }

  TEST_CASE("ZCOUNT and ZLEXCOUNT count inclusive and exclusive ranges") {
    Fixture f;
    f.r({"ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d"});
    CHECK(f.r({"ZCOUNT", "z", "2", "3"}) == ":2");
    CHECK(f.r({"ZCOUNT", "z", "(2", "+inf"}) == ":2");
    CHECK(f.r({"ZCOUNT", "z", "-inf", "(1"}) == ":0");
    CHECK(f.r({"ZCOUNT", "z", "3", "2"}) == ":0");
    CHECK(f.r({"ZCOUNT", "z", "x", "2"}) == "-ERR min or max is not a float");
    CHECK(f.r({"ZCOUNT", "nope", "x", "2"}) == "-ERR min or max is not a float");
    CHECK(f.r({"ZCOUNT", "nope", "1", "2"}) == ":0");
    f.r({"ZADD", "l", "0", "a", "0", "b", "0", "c", "0", "d"});
    CHECK(f.r({"ZLEXCOUNT", "l", "[b", "[c"}) == ":2");
    CHECK(f.r({"ZLEXCOUNT", "l", "(b", "+"}) == ":2");
    CHECK(f.r({"ZLEXCOUNT", "l", "-", "+"}) == ":4");
    CHECK(f.r({"ZLEXCOUNT", "l", "b", "c"}) == "-ERR min or max not valid string range item");
  }

  TEST_CASE("ZRANGE by rank, score and lex, reversed and limited") {
    Fixture f;
    f.r({"ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d", "5", "e"});
    CHECK(f.r({"ZRANGE", "z", "0", "-1"}) == "[a,b,c,d,e]");
    CHECK(f.r({"ZRANGE", "z", "-2", "100"}) == "[d,e]");
    CHECK(f.r({"ZRANGE", "z", "3", "1"}) == "[]");
    CHECK(f.r({"ZRANGE", "z", "0", "1", "REV", "WITHSCORES"}) == "[e,5,d,4]");
    CHECK(f.r3({"ZRANGE", "z", "0", "1", "WITHSCORES"}) == "[[a,,1],[b,,2]]");
    CHECK(f.r({"ZRANGE", "z", "(1", "4", "BYSCORE"}) == "[b,c,d]");
    CHECK(f.r({"ZRANGE", "z", "4", "(1", "BYSCORE", "REV"}) == "[d,c,b]");
    CHECK(f.r({"ZRANGE", "z", "-inf", "+inf", "BYSCORE", "LIMIT", "1", "2"}) == "[b,c]");
    CHECK(f.r({"ZRANGE", "z", "+inf", "-inf", "BYSCORE", "REV", "LIMIT", "1", "2", "WITHSCORES"}) ==
          "[d,4,c,3]");
    CHECK(f.r({"ZRANGE", "z", "-inf", "+inf", "BYSCORE", "LIMIT", "5", "2"}) == "[]");
    CHECK(f.r({"ZRANGE", "z", "-inf", "+inf", "BYSCORE", "LIMIT", "-1", "2"}) == "[]");
    CHECK(f.r({"ZRANGE", "z", "-", "+", "BYLEX"}) == "[a,b,c,d,e]");
    CHECK(f.r({"ZRANGE", "z", "[c", "-", "BYLEX", "REV", "LIMIT", "0", "2"}) == "[c,b]");
    CHECK(f.r({"ZRANGE", "nope", "0", "-1"}) == "[]");
    CHECK(f.r({"ZRANGE", "z", "0", "-1", "LIMIT", "0", "1"}) ==
          "-ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX");
    CHECK(f.r({"ZRANGE", "z", "0", "-1", "LIMIT", "0", "-1"}) == "[a,b,c,d,e]");
    CHECK(f.r({"ZRANGE", "z", "-", "+", "BYLEX", "WITHSCORES"}) ==
          "-ERR syntax error, WITHSCORES not supported in combination with BYLEX");
    CHECK(f.r({"ZRANGE", "z", "a", "b", "BYSCORE"}) == "-ERR min or max is not a float");
    CHECK(f.r({"ZRANGE", "z", "a", "b", "BYLEX"}) == "-ERR min or max not valid string range item");
    CHECK(f.r({"ZRANGE", "z", "a", "b"}) == "-ERR value is not an integer or out of range");
    CHECK(f.r({"ZRANGE", "z", "0", "1", "BYSCORE", "BYLEX"}) == "-ERR syntax error");
    CHECK(f.r({"ZRANGE", "z", "0", "1", "LIMIT", "0"}) == "-ERR syntax error");
    CHECK(f.r({"ZRANGE", "z", "0", "1", "LIMIT", "x", "1", "BYSCORE"}) ==
          "-ERR value is not an integer or out of range");
  }

  TEST_CASE("the older range commands keep their fixed forms") {
    Fixture f;
    f.r({"ZADD", "z", "1", "a", "2", "b", "3", "c"});
    CHECK(f.r({"ZREVRANGE", "z", "0", "0", "WITHSCORES"}) == "[c,3]");
    CHECK(f.r({"ZREVRANGE", "z", "0", "0", "REV"}) == "-ERR syntax error");
    CHECK(f.r({"ZRANGEBYSCORE", "z", "2", "+inf", "WITHSCORES"}) == "[b,2,c,3]");
    CHECK(f.r({"ZRANGEBYSCORE", "z", "2", "+inf", "BYSCORE"}) == "-ERR syntax error");
    CHECK(f.r({"ZREVRANGEBYSCORE", "z", "+inf", "2", "LIMIT", "0", "1"}) == "[c]");
    CHECK(f.r({"ZREVRANGEBYSCORE", "z", "2", "+inf"}) == "[]");
    f.r({"ZADD", "l", "0", "a", "0", "b", "0", "c"});
    CHECK(f.r({"ZRANGEBYLEX", "l", "(a", "+"}) == "[b,c]");
    CHECK(f.r({"ZREVRANGEBYLEX", "l", "+", "(a", "LIMIT", "1", "5"}) == "[b]");
    CHECK(f.r({"ZRANGEBYLEX", "l", "-", "+", "WITHSCORES"}) ==
          "-ERR syntax error, WITHSCORES not supported in combination with BYLEX");
  }

  TEST_CASE("ranges agree between listpack and skiplist encodings") {
    Fixture f;
    std::vector<std::string> args = {"ZADD", "lp"};
    for (int i = 0; i < 100; ++i) {
      args.push_back(std::to_string(i % 7));
      args.push_back("m" + std::to_string(i));
    }
    std::vector<std::string_view> v(args.begin(), args.end());
    f.engine.run(*f.s2, v);
    f.r({"CONFIG", "SET", "zset-max-listpack-entries", "0"});
    f.r({"ZUNIONSTORE", "sl", "1", "lp"});
    f.r({"CONFIG", "SET", "zset-max-listpack-entries", "128"});
    CHECK(f.encoding("lp") == "listpack");
    CHECK(f.encoding("sl") == "skiplist");
    for (auto q : std::vector<std::vector<std::string_view>>{
             {"ZRANGE", "K", "0", "-1", "WITHSCORES"},
             {"ZRANGE", "K", "5", "17", "REV"},
             {"ZRANGE", "K", "(2", "5", "BYSCORE", "LIMIT", "3", "10"},
             {"ZRANGE", "K", "5", "(2", "BYSCORE", "REV", "LIMIT", "3", "10", "WITHSCORES"},
             {"ZCOUNT", "K", "1", "(4"},
             {"ZRANK", "K", "m50"},
             {"ZREVRANK", "K", "m50", "WITHSCORE"},
             {"ZSCORE", "K", "m99"},
         }) {
      auto lp = q;
      auto sl = q;
      lp[1] = "lp";
      sl[1] = "sl";
      CHECK(show(f.engine.run(*f.s2, lp)) == show(f.engine.run(*f.s2, sl)));
    }
  }

  TEST_CASE("a negative LIMIT offset counts from the other end on skiplists, as Valkey 8.0") {
    Fixture f;
    f.r({"CONFIG", "SET", "zset-max-listpack-entries", "1"});
    f.r({"ZADD", "z", "1", "a", "2", "b", "3", "c"});
    CHECK(f.encoding("z") == "skiplist");
    CHECK(f.r({"ZRANGEBYSCORE", "z", "-inf", "+inf", "LIMIT", "-1", "5"}) == "[c]");
    CHECK(f.r({"ZREVRANGEBYSCORE", "z", "+inf", "-inf", "LIMIT", "-1", "5"}) == "[a]");
  }

  TEST_CASE("ZRANGESTORE stores the range, listpack when it fits, and deletes on empty") {
    Fixture f;
    f.r({"ZADD", "src", "1", "a", "2", "b", "3", "c"});
    CHECK(f.r({"ZRANGESTORE", "dst", "src", "1", "-1"}) == ":2");
    CHECK(f.r({"ZRANGE", "dst", "0", "-1", "WITHSCORES"}) == "[b,2,c,3]");
    CHECK(f.encoding("dst") == "listpack");
    f.r({"SET", "other", "x", "EX", "100"});
    CHECK(f.r({"ZRANGESTORE", "other", "src", "(1", "+inf", "BYSCORE", "LIMIT", "0", "1"}) == ":1");
    CHECK(f.r({"TTL", "other"}) == ":-1");
    CHECK(f.r({"ZRANGE", "other", "0", "-1"}) == "[b]");
    CHECK(f.r({"ZRANGESTORE", "dst", "src", "5", "10"}) == ":0");
    CHECK(f.r({"EXISTS", "dst"}) == ":0");
    CHECK(f.r({"ZRANGESTORE", "dst", "nope", "0", "-1"}) == ":0");
    CHECK(f.r({"ZRANGESTORE", "dst", "src", "0", "-1", "WITHSCORES"}) == "-ERR syntax error");
    CHECK(f.r({"ZRANGESTORE", "src", "src", "[b", "+", "BYLEX"}) == ":2");
    CHECK(f.r({"ZRANGE", "src", "0", "-1"}) == "[b,c]");
    f.r({"CONFIG", "SET", "zset-max-listpack-entries", "1"});
    CHECK(f.r({"ZRANGESTORE", "dst", "src", "0", "-1"}) == ":2");
    CHECK(f.encoding("dst") == "skiplist");
  }

  TEST_CASE("ZREMRANGEBYRANK, BYSCORE and BYLEX remove ranges and delete empty keys") {
    Fixture f;
    f.r({"ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d", "5", "e"});
    CHECK(f.r({"ZREMRANGEBYRANK", "z", "0", "1"}) == ":2");
    CHECK(f.r({"ZREMRANGEBYRANK", "z", "5", "10"}) == ":0");
    CHECK(f.r({"ZREMRANGEBYSCORE", "z", "(3", "4"}) == ":1");
    CHECK(f.r({"ZRANGE", "z", "0", "-1"}) == "[c,e]");
    CHECK(f.r({"ZREMRANGEBYRANK", "z", "-1", "-1"}) == ":1");
    CHECK(f.r({"ZREMRANGEBYSCORE", "z", "-inf", "+inf"}) == ":1");
    CHECK(f.r({"EXISTS", "z"}) == ":0");
    f.r({"ZADD", "l", "0", "a", "0", "b", "0", "c"});
    CHECK(f.r({"ZREMRANGEBYLEX", "l", "[b", "+"}) == ":2");
    CHECK(f.r({"ZREMRANGEBYLEX", "l", "a", "+"}) == "-ERR min or max not valid string range item");
    CHECK(f.r({"ZREMRANGEBYSCORE", "l", "a", "1"}) == "-ERR min or max is not a float");
    CHECK(f.r({"ZREMRANGEBYRANK", "l", "a", "1"}) ==
          "-ERR value is not an integer or out of range");
    CHECK(f.r({"ZREMRANGEBYRANK", "nope", "0", "1"}) == ":0");
  }

  TEST_CASE("ZPOPMIN and ZPOPMAX pop with flat RESP2 and nested RESP3 replies") {
    Fixture f;
    f.r({"ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d"});
    CHECK(f.r({"ZPOPMIN", "z"}) == "[a,1]");
    CHECK(f.r3({"ZPOPMIN", "z"}) == "[b,,2]");
    CHECK(f.r({"ZPOPMAX", "z", "1"}) == "[d,4]");
    f.r({"ZADD", "z", "5", "e", "6", "f"});
    CHECK(f.r3({"ZPOPMAX", "z", "2"}) == "[[f,,6],[e,,5]]");
    CHECK(f.r({"ZPOPMIN", "z", "0"}) == "[]");
    CHECK(f.r({"ZPOPMIN", "z", "10"}) == "[c,3]");
    CHECK(f.r({"EXISTS", "z"}) == ":0");
    CHECK(f.r({"ZPOPMIN", "z"}) == "[]");
    CHECK(f.r({"ZPOPMIN", "z", "-1"}) == "-ERR value is out of range, must be positive");
    CHECK(f.r({"ZPOPMIN", "z", "x"}) == "-ERR value is out of range, must be positive");
    CHECK(f.r({"ZPOPMIN", "z", "1", "2"}) == "-ERR syntax error");
  }

  TEST_CASE("ZMPOP pops from the first non-empty key") {
    Fixture f;
    f.r({"ZADD", "b", "1", "x", "2", "y", "3", "z"});
    CHECK(f.r({"ZMPOP", "2", "a", "b", "MIN"}) == "[b,[[x,1]]]");
    CHECK(f.r({"ZMPOP", "2", "a", "b", "MAX", "COUNT", "5"}) == "[b,[[z,3],[y,2]]]");
    CHECK(f.r3({"ZMPOP", "1", "b", "MIN"}) == "nil");
    CHECK(f.r({"ZMPOP", "1", "b", "MIN"}) == "nil");
    CHECK(f.r({"ZMPOP", "0", "b", "MIN"}) == "-ERR numkeys should be greater than 0");
    CHECK(f.r({"ZMPOP", "x", "b", "MIN"}) == "-ERR numkeys should be greater than 0");
    CHECK(f.r({"ZMPOP", "2", "b", "MIN"}) == "-ERR syntax error");
    CHECK(f.r({"ZMPOP", "1", "b", "MIDDLE"}) == "-ERR syntax error");
    CHECK(f.r({"ZMPOP", "1", "b", "MIN", "COUNT", "0"}) == "-ERR count should be greater than 0");
    CHECK(f.r({"ZMPOP", "1", "b", "MIN", "COUNT", "1", "COUNT", "1"}) == "-ERR syntax error");
    f.r({"SET", "s", "v"});
    CHECK(f.r({"ZMPOP", "2", "nope", "s", "MIN"}) ==
          "-WRONGTYPE Operation against a key holding the wrong kind of value");
  }

  TEST_CASE("BZPOPMIN and BZPOPMAX pop at once from the first non-empty sorted set") {
    Fixture f;
    f.r({"ZADD", "b", "1", "x", "2", "y"});
    CHECK(f.r({"BZPOPMIN", "a", "b", "0"}) == "[b,x,1]");
    CHECK(f.r3({"BZPOPMAX", "a", "b", "0"}) == "[b,y,,2]");
    CHECK(f.r({"EXISTS", "b"}) == ":0");
    f.r({"SET", "s", "v"});
    CHECK(f.r({"BZPOPMIN", "a", "s", "0"}) ==
          "-WRONGTYPE Operation against a key holding the wrong kind of value");
    CHECK(f.r({"BZPOPMIN", "a", "-1"}) == "-ERR timeout is negative");
    CHECK(f.r({"BZPOPMIN", "a", "x"}) == "-ERR timeout is not a float or out of range");
    f.r({"ZADD", "m", "1", "x", "2", "y", "3", "z"});
    CHECK(f.r({"BZMPOP", "0", "2", "a", "m", "MAX", "COUNT", "2"}) == "[m,[[z,3],[y,2]]]");
    CHECK(f.r({"BZMPOP", "x", "0", "a", "MIN"}) == "-ERR numkeys should be greater than 0");
    CHECK(f.r({"BZMPOP", "x", "1", "a", "MIN"}) == "-ERR timeout is not a float or out of range");
  }

  TEST_CASE("a blocked BZPOPMIN waits until ZADD adds members, then pops") {
    Fixture f;
    Session& waiter = f.engine.open_session(nullptr);
    std::vector<std::string_view> block = {"BZPOPMIN", "q", "0"};
    f.engine.execute(waiter, block);
    CHECK(waiter.out.empty());
    CHECK(waiter.has(keyshift::engine::k_session_blocked));
    CHECK(f.r({"ZADD", "q", "2", "b", "1", "a"}) == ":2");
    CHECK(!waiter.has(keyshift::engine::k_session_blocked));
    RespValue v;
    size_t used = 0;
    REQUIRE(keyshift::engine::parse_resp(waiter.out, v, used) == keyshift::engine::RespParse::ok);
    CHECK(show(v) == "[q,a,1]");
    CHECK(f.r({"ZRANGE", "q", "0", "-1"}) == "[b]");
    // BZMPOP blocks as well and is served by a store into its key.
    waiter.out.clear();
    std::vector<std::string_view> mblock = {"BZMPOP", "0", "1", "d", "MIN", "COUNT", "5"};
    f.engine.execute(waiter, mblock);
    CHECK(waiter.out.empty());
    CHECK(f.r({"ZUNIONSTORE", "d", "1", "q"}) == ":1");
    REQUIRE(keyshift::engine::parse_resp(waiter.out, v, used) == keyshift::engine::RespParse::ok);
    CHECK(show(v) == "[d,[[b,2]]]");
    CHECK(f.r({"EXISTS", "d"}) == ":0");
  }

  TEST_CASE("a blocked BZPOPMAX times out with a null array") {
    Fixture f;
    Session& waiter = f.engine.open_session(nullptr);
    std::vector<std::string_view> block = {"BZPOPMAX", "q", "0.5"};
    f.engine.execute(waiter, block);
    CHECK(waiter.out.empty());
    f.clock.advance_ms(501);
    f.engine.handle_blocked_timeouts();
    CHECK(waiter.out == "*-1\r\n");
  }

  TEST_CASE("ZUNION, ZINTER and ZDIFF with weights, aggregates and scores") {
    Fixture f;
    f.r({"ZADD", "a", "1", "x", "2", "y", "3", "z"});
    f.r({"ZADD", "b", "10", "y", "20", "z", "30", "w"});
    CHECK(f.r({"ZUNION", "2", "a", "b", "WITHSCORES"}) == "[x,1,y,12,z,23,w,30]");
    CHECK(f.r({"ZUNION", "2", "a", "b", "WEIGHTS", "2", "0.5", "WITHSCORES"}) ==
          "[x,2,y,9,w,15,z,16]");
    CHECK(f.r({"ZUNION", "2", "a", "b", "AGGREGATE", "MIN", "WITHSCORES"}) == "[x,1,y,2,z,3,w,30]");
    CHECK(f.r({"ZINTER", "2", "a", "b", "AGGREGATE", "MAX", "WITHSCORES"}) == "[y,10,z,20]");
    CHECK(f.r({"ZINTER", "2", "a", "b"}) == "[y,z]");
    CHECK(f.r3({"ZINTER", "2", "a", "b", "WITHSCORES"}) == "[[y,,12],[z,,23]]");
    CHECK(f.r({"ZDIFF", "2", "a", "b", "WITHSCORES"}) == "[x,1]");
    CHECK(f.r({"ZDIFF", "2", "a", "a"}) == "[]");
    CHECK(f.r({"ZDIFF", "2", "nope", "a"}) == "[]");
    CHECK(f.r({"ZINTER", "2", "a", "nope"}) == "[]");
    CHECK(f.r({"ZINTER", "2", "a", "a", "WEIGHTS", "1", "2", "WITHSCORES"}) == "[x,3,y,6,z,9]");
    CHECK(f.r({"ZINTERCARD", "2", "a", "b"}) == ":2");
    CHECK(f.r({"ZINTERCARD", "2", "a", "b", "LIMIT", "1"}) == ":1");
    CHECK(f.r({"ZINTERCARD", "2", "a", "b", "LIMIT", "0"}) == ":2");
  }

  TEST_CASE("inf - inf in a sum is 0, and a zero weight on inf is 0") {
    Fixture f;
    f.r({"ZADD", "a", "inf", "x"});
    f.r({"ZADD", "b", "-inf", "x"});
    CHECK(f.r({"ZUNION", "2", "a", "b", "WITHSCORES"}) == "[x,0]");
    CHECK(f.r({"ZINTER", "2", "a", "b", "WITHSCORES"}) == "[x,0]");
    CHECK(f.r({"ZUNION", "1", "a", "WEIGHTS", "0", "WITHSCORES"}) == "[x,0]");
    CHECK(f.r({"ZUNION", "2", "a", "b", "AGGREGATE", "MAX", "WITHSCORES"}) == "[x,inf]");
  }

  TEST_CASE("plain sets take part with score 1") {
    Fixture f;
    f.r({"ZADD", "z", "5", "a", "7", "b"});
    f.r({"SADD", "s", "a", "c", "1"});
    CHECK(f.r({"ZUNION", "2", "z", "s", "WITHSCORES"}) == "[1,1,c,1,a,6,b,7]");
    CHECK(f.r({"ZINTER", "2", "s", "z", "WEIGHTS", "3", "1", "WITHSCORES"}) == "[a,8]");
    CHECK(f.r({"ZDIFF", "2", "s", "z", "WITHSCORES"}) == "[1,1,c,1]");
    CHECK(f.r({"ZINTERCARD", "2", "s", "z"}) == ":1");
    CHECK(f.r({"ZUNIONSTORE", "d", "1", "s"}) == ":3");
    CHECK(f.r({"ZRANGE", "d", "0", "-1", "WITHSCORES"}) == "[1,1,a,1,c,1]");
  }

  TEST_CASE("set-algebra argument errors") {
    Fixture f;
    f.r({"ZADD", "a", "1", "x"});
    f.r({"SET", "s", "v"});
    CHECK(f.r({"ZUNIONSTORE", "d", "0", "a"}) ==
          "-ERR at least 1 input key is needed for 'zunionstore' command");
    CHECK(f.r({"ZUNION", "0", "a"}) == "-ERR at least 1 input key is needed for 'zunion' command");
    CHECK(f.r({"ZINTERCARD", "0", "a"}) ==
          "-ERR at least 1 input key is needed for 'zintercard' command");
    CHECK(f.r({"ZUNION", "x", "a"}) == "-ERR value is not an integer or out of range");
    CHECK(f.r({"ZUNION", "3", "a", "b"}) == "-ERR syntax error");
    CHECK(f.r({"ZUNION", "1", "a", "WEIGHTS", "x"}) == "-ERR weight value is not a float");
    CHECK(f.r({"ZUNION", "1", "a", "WEIGHTS"}) == "-ERR syntax error");
    CHECK(f.r({"ZUNION", "1", "a", "AGGREGATE", "AVG"}) == "-ERR syntax error");
    CHECK(f.r({"ZUNIONSTORE", "d", "1", "a", "WITHSCORES"}) == "-ERR syntax error");
    CHECK(f.r({"ZDIFF", "1", "a", "WEIGHTS", "1"}) == "-ERR syntax error");
    CHECK(f.r({"ZINTERCARD", "1", "a", "LIMIT", "-1"}) == "-ERR LIMIT can't be negative");
    CHECK(f.r({"ZINTERCARD", "1", "a", "LIMIT", "x"}) == "-ERR LIMIT can't be negative");
    CHECK(f.r({"ZINTERCARD", "1", "a", "WITHSCORES"}) == "-ERR syntax error");
    CHECK(f.r({"ZUNION", "2", "a", "s"}) ==
          "-WRONGTYPE Operation against a key holding the wrong kind of value");
  }

  TEST_CASE("the STORE forms store, convert to fitting encodings and delete on empty") {
    Fixture f;
    f.r({"ZADD", "a", "1", "x", "2", "y"});
    f.r({"ZADD", "b", "3", "y"});
    CHECK(f.r({"ZUNIONSTORE", "d", "2", "a", "b"}) == ":2");
    CHECK(f.r({"ZRANGE", "d", "0", "-1", "WITHSCORES"}) == "[x,1,y,5]");
    CHECK(f.encoding("d") == "listpack");
    CHECK(f.r({"ZINTERSTORE", "d", "2", "a", "b", "WEIGHTS", "1", "2"}) == ":1");
    CHECK(f.r({"ZRANGE", "d", "0", "-1", "WITHSCORES"}) == "[y,8]");
    CHECK(f.r({"ZDIFFSTORE", "d", "2", "a", "b"}) == ":1");
    CHECK(f.r({"ZRANGE", "d", "0", "-1", "WITHSCORES"}) == "[x,1]");
    CHECK(f.r({"ZDIFFSTORE", "d", "2", "a", "a"}) == ":0");
    CHECK(f.r({"EXISTS", "d"}) == ":0");
    std::string longm(65, 'm');
    f.r({"ZADD", "c", "1", longm});
    CHECK(f.r({"ZUNIONSTORE", "d", "2", "a", "c"}) == ":3");
    CHECK(f.encoding("d") == "skiplist");
  }

  TEST_CASE("ZRANDMEMBER returns members as Valkey's count rules say") {
    Fixture f;
    CHECK(f.r({"ZRANDMEMBER", "nope"}) == "nil");
    CHECK(f.r({"ZRANDMEMBER", "nope", "3"}) == "[]");
    f.r({"ZADD", "z", "1", "a", "2", "b", "3", "c"});
    std::string one = f.r({"ZRANDMEMBER", "z"});
    CHECK((one == "a" || one == "b" || one == "c"));
    CHECK(f.r({"ZRANDMEMBER", "z", "0"}) == "[]");
    CHECK(f.r({"ZRANDMEMBER", "z", "5", "WITHSCORES"}) == "[c,3,b,2,a,1]");
    CHECK(f.r3({"ZRANDMEMBER", "z", "3", "WITHSCORES"}) == "[[c,,3],[b,,2],[a,,1]]");
    RespValue v = f.engine.run({"ZRANDMEMBER", "z", "-10"});
    CHECK(v.elements.size() == 10);
    v = f.engine.run({"ZRANDMEMBER", "z", "2"});
    REQUIRE(v.elements.size() == 2);
    CHECK(v.elements[0].str != v.elements[1].str);
    v = f.engine.run({"ZRANDMEMBER", "z", "-4", "WITHSCORES"});
    CHECK(v.elements.size() == 8);
    CHECK(f.r({"ZRANDMEMBER", "z", "1", "x"}) == "-ERR syntax error");
    CHECK(f.r({"ZRANDMEMBER", "z", "x"}) == "-ERR value is not an integer or out of range");
    CHECK(f.r({"ZRANDMEMBER", "z", "-9223372036854775808"}) ==
          "-ERR value is out of range, value must between -9223372036854775807 and "
          "9223372036854775807");
    CHECK(f.r({"ZRANDMEMBER", "z", "-9223372036854775807", "WITHSCORES"}) ==
          "-ERR value is out of range");
    // Unique picks from a skiplist: both sampling strategies.
    f.r({"CONFIG", "SET", "zset-max-listpack-entries", "4"});
    std::vector<std::string> args = {"ZADD", "big"};
    for (int i = 0; i < 100; ++i) {
      args.push_back(std::to_string(i));
      args.push_back("m" + std::to_string(i));
    }
    std::vector<std::string_view> av(args.begin(), args.end());
    f.engine.run(*f.s2, av);
    for (const char* n : {"5", "60"}) {
      v = f.engine.run({"ZRANDMEMBER", "big", n});
      std::set<std::string> seen;
      for (const auto& e : v.elements) {
        seen.insert(e.str);
      }
      CHECK(seen.size() == static_cast<size_t>(std::stoi(n)));
    }
  }

  TEST_CASE("ZSCAN: listpacks in one call with stored score text, skiplists by cursor") {
    Fixture f;
    f.r({"ZADD", "z", "0.1", "a", "2", "b", "1e17", "c"});
    CHECK(f.r({"ZSCAN", "z", "0"}) == "[0,[a,0.1,b,2,c,100000000000000000]]");
    CHECK(f.r({"ZSCAN", "z", "0", "MATCH", "b*"}) == "[0,[b,2]]");
    CHECK(f.r({"ZSCAN", "z", "0", "NOSCORES"}) == "[0,[a,b,c]]");
    CHECK(f.r({"ZSCAN", "z", "0", "NOVALUES"}) == "-ERR NOVALUES option can only be used in HSCAN");
    CHECK(f.r({"ZSCAN", "z", "0", "COUNT", "0"}) == "-ERR syntax error");
    CHECK(f.r({"ZSCAN", "z", "0", "TYPE", "zset"}) == "-ERR syntax error");
    CHECK(f.r({"ZSCAN", "z", "x"}) == "-ERR invalid cursor");
    CHECK(f.r({"ZSCAN", "nope", "0"}) == "[0,[]]");
    f.r({"CONFIG", "SET", "zset-max-listpack-entries", "1"});
    f.r({"ZADD", "s", "0.1", "a", "2", "b"});
    CHECK(f.encoding("s") == "skiplist");
    // Skiplists print scores with %.17g there, as Valkey's ld2string does.
    std::string all = f.r({"ZSCAN", "s", "0", "COUNT", "100"});
    CHECK(all.find("a,0.10000000000000001") != std::string::npos);
    CHECK(all.find("b,2") != std::string::npos);
    // A full cursor walk sees every member once.
    std::vector<std::string> args = {"ZADD", "many"};
    for (int i = 0; i < 300; ++i) {
      args.push_back(std::to_string(i));
      args.push_back("m" + std::to_string(i));
    }
    std::vector<std::string_view> av(args.begin(), args.end());
    f.engine.run(*f.s2, av);
    std::set<std::string> seen;
    std::string cursor = "0";
    int calls = 0;
    do {
      RespValue v = f.engine.run({"ZSCAN", "many", cursor, "COUNT", "20"});
      cursor = v.elements[0].str;
      for (size_t i = 0; i < v.elements[1].elements.size(); i += 2) {
        seen.insert(v.elements[1].elements[i].str);
      }
      ++calls;
    } while (cursor != "0" && calls < 1000);
    CHECK(seen.size() == 300);
    CHECK(calls > 1);
  }

  TEST_CASE("encodings convert at zset-max-listpack-entries and -value") {
    Fixture f;
    f.r({"CONFIG", "SET", "zset-max-listpack-entries", "3"});
    f.r({"CONFIG", "SET", "zset-max-listpack-value", "5"});
    f.r({"ZADD", "z", "1", "a", "2", "b", "3", "c"});
    CHECK(f.encoding("z") == "listpack");
    f.r({"ZADD", "z", "4", "d"});
    CHECK(f.encoding("z") == "skiplist");
    f.r({"ZREM", "z", "a", "b", "c"});
    CHECK(f.encoding("z") == "skiplist");  // never goes back by itself
    f.r({"ZADD", "v", "1", "123456"});
    CHECK(f.encoding("v") == "skiplist");
    f.r({"ZADD", "w", "1", "a", "2", "b", "3", "c", "4", "d"});
    CHECK(f.encoding("w") == "skiplist");  // created for the whole write
    f.r({"ZADD", "x", "1", "a"});
    f.r({"ZADD", "x", "1", "a", "1", "a", "1", "a", "1", "a"});
    CHECK(f.encoding("x") == "skiplist");  // converted ahead of a write of 4 pairs
    CHECK(f.r({"CONFIG", "GET", "zset-max-ziplist-entries"}) == "[zset-max-ziplist-entries,3]");
  }

  TEST_CASE("memory accounting returns to where it started") {
    Fixture f;
    uint64_t base = f.engine.memory().used();
    std::vector<std::string> args = {"ZADD", "z"};
    for (int i = 0; i < 500; ++i) {
      args.push_back(std::to_string(i * 0.5));
      args.push_back("member:" + std::to_string(i));
    }
    std::vector<std::string_view> av(args.begin(), args.end());
    f.engine.run(*f.s2, av);
    f.r({"ZADD", "small", "1", "a", "2", "b"});
    CHECK(f.engine.memory().used() > base + 500 * 16);
    f.r({"ZREM", "small", "a"});
    f.r({"ZINCRBY", "z", "1000", "member:3"});
    f.r({"ZREMRANGEBYRANK", "z", "0", "99"});
    f.r({"ZPOPMAX", "z", "50"});
    f.r({"ZUNIONSTORE", "u", "2", "z", "small"});
    f.r({"ZRANGESTORE", "r", "z", "0", "10"});
    f.r({"COPY", "z", "zc"});
    f.r({"ZREMRANGEBYSCORE", "zc", "-inf", "+inf"});
    f.r({"ZREMRANGEBYLEX", "u", "-", "+"});
    CHECK(f.r({"EXISTS", "zc", "u"}) == ":0");
    // Freeing a value subtracts its bytes() as they are then, so any change that was not
    // accounted shows up as a difference here (FLUSHALL also drops the key table's buckets).
    f.r({"FLUSHALL"});
    CHECK(f.engine.memory().used() == base);
  }

  TEST_CASE("COPY keeps the encoding and copies deeply") {
    Fixture f;
    f.r({"CONFIG", "SET", "zset-max-listpack-entries", "2"});
    f.r({"ZADD", "a", "1", "x", "2", "y", "3", "z"});
    f.r({"ZADD", "b", "1", "x"});
    CHECK(f.r({"COPY", "a", "a2"}) == ":1");
    CHECK(f.r({"COPY", "b", "b2"}) == ":1");
    CHECK(f.encoding("a2") == "skiplist");
    CHECK(f.encoding("b2") == "listpack");
    f.r({"ZREM", "a", "x"});
    CHECK(f.r({"ZRANGE", "a2", "0", "-1", "WITHSCORES"}) == "[x,1,y,2,z,3]");
  }

  TEST_CASE("DEBUG DIGEST-VALUE is the same for both encodings and ignores order") {
    Fixture f;
    f.r({"ZADD", "a", "1.5", "x", "2", "y", "1e17", "z"});
    f.r({"CONFIG", "SET", "zset-max-listpack-entries", "0"});
    f.r({"ZADD", "b", "2", "y", "1e17", "z", "1.5", "x"});
    CHECK(f.encoding("b") == "skiplist");
    std::string da = f.r({"DEBUG", "DIGEST-VALUE", "a"});
    std::string db = f.r({"DEBUG", "DIGEST-VALUE", "b"});
    CHECK(da == db);
    CHECK(da != "0000000000000000000000000000000000000000");
    f.r({"ZADD", "b", "1", "x"});
    CHECK(f.r({"DEBUG", "DIGEST-VALUE", "b"}) != da);
  }

  TEST_CASE("ZADD creating a key keeps its listpack without growth headroom") {
    Fixture f;
    std::vector<std::string> argv{"ZADD", "z"};
    for (int i = 0; i < 20; ++i) {
      argv.push_back(std::to_string(i) + ".25");
      argv.push_back("item:" + std::to_string(i));
    }
    std::vector<std::string_view> v(argv.begin(), argv.end());
    CHECK(show(f.engine.run(*f.s2, v)) == ":20");
    CHECK(f.encoding("z") == "listpack");
    keyshift::engine::Entry* e = f.engine.db(0).lookup("z", false);
    REQUIRE(e != nullptr);
    // Small sorted sets live as their bare block: an exact-size allocation of it takes
    // the same allocator block as the stored one.
    REQUIRE(e->kind() == keyshift::engine::Entry::Kind::blob);
    void* exact = keyshift::engine::MemoryCounter::raw_allocate(e->blob_size());
    CHECK(keyshift::engine::MemoryCounter::usable_size(e->blob()) ==
          keyshift::engine::MemoryCounter::usable_size(exact));
    keyshift::engine::MemoryCounter::raw_deallocate(exact);
  }
}
