#include "engine/resp/request_parser.hpp"

#include <doctest/doctest.h>

#include <string>
#include <string_view>
#include <vector>

using keyshift::engine::RequestLimits;
using keyshift::engine::RequestParser;
using Status = RequestParser::Status;

namespace {

/// Parses `input` fed in chunks of `chunk` bytes; returns the commands found.
std::vector<std::vector<std::string>> parse_all(std::string_view input, size_t chunk,
                                                std::string* error = nullptr) {
  RequestParser p;
  RequestLimits limits;
  std::vector<std::vector<std::string>> out;
  std::string buf;
  size_t fed = 0;
  size_t start = 0;
  while (true) {
    auto st = p.parse(buf.data() + start, buf.size() - start, limits);
    if (st == Status::need_more) {
      if (fed >= input.size()) {
        break;
      }
      size_t n = std::min(chunk, input.size() - fed);
      buf.append(input.substr(fed, n));
      fed += n;
      continue;
    }
    if (st == Status::error) {
      if (error != nullptr) {
        *error = std::string(p.error());
      }
      break;
    }
    if (st == Status::ready) {
      std::vector<std::string_view> args;
      p.args(buf.data() + start, args);
      out.emplace_back(args.begin(), args.end());
    }
    start += p.consumed();
    p.reset();
  }
  return out;
}

}  // namespace

TEST_SUITE("engine::request_parser") {
  TEST_CASE("a multibulk command is parsed whole or byte by byte") {
    std::string in = "*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n*1\r\n$4\r\nPING\r\n";
    for (size_t chunk : {size_t{1}, size_t{3}, size_t{7}, in.size()}) {
      auto cmds = parse_all(in, chunk);
      REQUIRE(cmds.size() == 2);
      CHECK(cmds[0] == std::vector<std::string>{"SET", "key", "value"});
      CHECK(cmds[1] == std::vector<std::string>{"PING"});
    }
  }

  TEST_CASE("binary-safe bulks keep CR LF and NUL bytes") {
    std::string in = std::string("*2\r\n$3\r\nGET\r\n$4\r\na\r\n\0\r\n", 23);
    auto cmds = parse_all(in, 2);
    REQUIRE(cmds.size() == 1);
    CHECK(cmds[0][1] == std::string("a\r\n\0", 4));
  }

  TEST_CASE("inline commands split on blanks and honour quotes") {
    auto cmds = parse_all("PING\r\nset \"a b\" 'c d'\nGET x\r\n", 4);
    REQUIRE(cmds.size() == 3);
    CHECK(cmds[0] == std::vector<std::string>{"PING"});
    CHECK(cmds[1] == std::vector<std::string>{"set", "a b", "c d"});
    CHECK(cmds[2] == std::vector<std::string>{"GET", "x"});
  }

  TEST_CASE("empty inline lines and zero-length arrays are skipped") {
    auto cmds = parse_all("\r\n*0\r\nPING\r\n", 100);
    REQUIRE(cmds.size() == 1);
    CHECK(cmds[0][0] == "PING");
  }

  TEST_CASE("protocol errors carry Valkey's texts") {
    std::string err;
    parse_all("*1\r\nx3\r\nfoo\r\n", 100, &err);
    CHECK(err == "Protocol error: expected '$', got 'x'");
    parse_all("*abc\r\n", 100, &err);
    CHECK(err == "Protocol error: invalid multibulk length");
    parse_all("*1\r\n$-5\r\n", 100, &err);
    CHECK(err == "Protocol error: invalid bulk length");
    parse_all("set \"a b\r\n", 100, &err);
    CHECK(err == "Protocol error: unbalanced quotes in request");
    parse_all(std::string(70 * 1024, 'a'), 100000, &err);
    CHECK(err == "Protocol error: too big inline request");
  }

  TEST_CASE("a bulk longer than proto-max-bulk-len is refused") {
    RequestParser p;
    RequestLimits limits;
    limits.proto_max_bulk_len = 10;
    std::string in = "*1\r\n$11\r\n";
    CHECK(p.parse(in.data(), in.size(), limits) == Status::error);
    CHECK(p.error() == "Protocol error: invalid bulk length");
  }

  TEST_CASE("unauthenticated clients may not send large requests") {
    RequestParser p;
    RequestLimits limits;
    limits.auth_required = true;
    std::string in = "*11\r\n";
    CHECK(p.parse(in.data(), in.size(), limits) == Status::error);
    CHECK(p.error() == "Protocol error: unauthenticated multibulk length");
    RequestParser q;
    std::string in2 = "*1\r\n$16385\r\n";
    CHECK(q.parse(in2.data(), in2.size(), limits) == Status::error);
    CHECK(q.error() == "Protocol error: unauthenticated bulk length");
  }
}
