#include "compat/bench/load.hpp"
#include "compat/bench/setup.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using keyshift::compat::BenchError;
using keyshift::compat::custom_test;
using keyshift::compat::parse_key_pattern;
using keyshift::compat::parse_prefill;
using keyshift::compat::redis_benchmark_tests;

namespace {

std::vector<std::string> titles(std::string_view selected) {
  std::vector<std::string> out;
  for (const auto& t : redis_benchmark_tests(selected, 3, 0)) {
    out.push_back(t.title);
  }
  return out;
}

}  // namespace

TEST_SUITE("compat::bench options") {
  TEST_CASE("the default test list is redis-benchmark's, in its order") {
    CHECK(titles("") == std::vector<std::string>{"PING_INLINE",
                                                 "PING_MBULK",
                                                 "SET",
                                                 "GET",
                                                 "INCR",
                                                 "LPUSH",
                                                 "RPUSH",
                                                 "LPOP",
                                                 "RPOP",
                                                 "SADD",
                                                 "HSET",
                                                 "SPOP",
                                                 "ZADD",
                                                 "ZPOPMIN",
                                                 "LPUSH (needed to benchmark LRANGE)",
                                                 "LRANGE_100 (first 100 elements)",
                                                 "LRANGE_300 (first 300 elements)",
                                                 "LRANGE_500 (first 500 elements)",
                                                 "LRANGE_600 (first 600 elements)",
                                                 "MSET (10 keys)",
                                                 "XADD"});
  }

  TEST_CASE("-t picks by name, case-insensitively; ping and lrange pick their families") {
    CHECK(titles("SET,get") == std::vector<std::string>{"SET", "GET"});
    CHECK(titles("ping") == std::vector<std::string>{"PING_INLINE", "PING_MBULK"});
    CHECK(titles("lrange_300") == std::vector<std::string>{"LPUSH (needed to benchmark LRANGE)",
                                                           "LRANGE_300 (first 300 elements)"});
    CHECK_THROWS_AS(titles("set,gett"), BenchError);
  }

  TEST_CASE("tests carry redis-benchmark's requests, with the -d payload") {
    auto tests = redis_benchmark_tests("set,mset", 5, 1000);
    REQUIRE(tests.size() == 2);
    CHECK(tests[0].request.bytes() ==
          "*3\r\n$3\r\nSET\r\n$16\r\nkey:__rand_int__\r\n$5\r\nxxxxx\r\n");
    CHECK(tests[0].keyspace == 1000);
    CHECK(tests[1].request.slots() == 10);
    auto zadd = redis_benchmark_tests("zadd", 3, 0);
    CHECK(zadd[0].request.bytes().find("$1\r\n0\r\n") != std::string_view::npos);
  }

  TEST_CASE("a custom command is titled by its words") {
    auto t = custom_test({"hset", "h:__rand_int__", "f", "v"}, 10);
    CHECK(t.title == "hset h:__rand_int__ f v");
    CHECK(t.command == "HSET");
    CHECK(t.request.slots() == 1);
    CHECK_THROWS_AS(custom_test({}, 0), BenchError);
  }

  TEST_CASE("key patterns and prefill values are checked") {
    CHECK(parse_key_pattern("G") == keyshift::compat::KeyPattern::gaussian);
    CHECK_THROWS_AS(parse_key_pattern("X"), BenchError);
    auto p = parse_prefill("35%");
    CHECK(p.percent);
    CHECK(p.share == doctest::Approx(0.35));
    auto k = parse_prefill("100000");
    CHECK_FALSE(k.percent);
    CHECK(k.keys == 100000);
    for (const char* bad : {"", "0", "0%", "101%", "x%", "12k", "-5"}) {
      CAPTURE(bad);
      CHECK_THROWS_AS(parse_prefill(bad), BenchError);
    }
  }
}
