#include "engine/resp/request_parser.hpp"
#include "engine/resp/request_writer.hpp"

#include <doctest/doctest.h>

#include <string>
#include <string_view>
#include <vector>

using keyshift::engine::append_request;
using keyshift::engine::request_size;
using keyshift::engine::RequestParser;
using keyshift::engine::RequestTemplate;

namespace {

/// The server's own parser reads `bytes` back into arguments.
std::vector<std::string> parse_back(std::string_view bytes) {
  RequestParser p;
  auto st = p.parse(bytes.data(), bytes.size(), {});
  REQUIRE(st == RequestParser::Status::ready);
  CHECK(p.consumed() == bytes.size());
  std::vector<std::string> out;
  for (const auto& s : p.slices()) {
    out.emplace_back(bytes.substr(s.offset, s.length));
  }
  return out;
}

}  // namespace

TEST_SUITE("engine::request_writer") {
  TEST_CASE("a request reads back as the same arguments, and its size is known beforehand") {
    std::vector<std::string_view> args{"SET", "key", std::string_view("a\r\nb\0c", 6), ""};
    std::string out;
    append_request(out, args);
    CHECK(out.size() == request_size(args));
    CHECK(parse_back(out) ==
          std::vector<std::string>{"SET", "key", std::string("a\r\nb\0c", 6), ""});
  }

  TEST_CASE("owned arguments encode to the same bytes as views of them") {
    std::vector<std::string> owned{"SET", "k", ""};
    std::vector<std::string_view> views(owned.begin(), owned.end());
    std::string a;
    std::string b;
    append_request(a, owned);
    append_request(b, views);
    CHECK(a == "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n");
    CHECK(a == b);
  }

  TEST_CASE("a template replaces each placeholder with its own 12-digit number") {
    std::vector<std::string_view> args{"MSET", "key:__rand_int__", "v", "key:__rand_int__", "w"};
    auto t = RequestTemplate::multibulk(args);
    CHECK(t.slots() == 2);
    std::string buf(t.bytes().size(), '\0');
    uint64_t values[] = {7, 123456789012345ULL};
    size_t i = 0;
    t.write(buf.data(), true, [&]() { return values[i++]; });
    // The second value is wider than 12 digits: only its low 12 digits are kept.
    CHECK(parse_back(buf) ==
          std::vector<std::string>{"MSET", "key:000000000007", "v", "key:456789012345", "w"});
  }

  TEST_CASE("without randomizing, placeholders stay literal as in redis-benchmark without -r") {
    std::vector<std::string_view> args{"GET", "key:__rand_int__"};
    auto t = RequestTemplate::multibulk(args);
    std::string buf(t.bytes().size(), '\0');
    t.write(buf.data(), false, []() { return uint64_t{1}; });
    CHECK(parse_back(buf) == std::vector<std::string>{"GET", "key:__rand_int__"});
  }
}
