#include "compat/monitor/monitor_log.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

namespace compat = keyshift::compat;

namespace {

struct Seen {
  int64_t time_us;
  int64_t db;
  compat::MonitorPeerKind kind;
  std::string peer;
  std::vector<std::string> args;
};

std::vector<Seen> read_all(std::string_view text) {
  std::vector<Seen> out;
  auto r = compat::read_monitor_text(text, [&](const compat::MonitorEntry& e) {
    Seen s{e.time_us, e.db, e.peer_kind, std::string(e.peer), {}};
    for (std::string_view a : e.args) {
      s.args.emplace_back(a);
    }
    out.push_back(std::move(s));
    return true;
  });
  REQUIRE(r.has_value());
  return out;
}

compat::MonitorError error_of(std::string_view text) {
  auto r = compat::read_monitor_text(text, [](const compat::MonitorEntry&) { return true; });
  REQUIRE_FALSE(r.has_value());
  return r.error();
}

}  // namespace

TEST_SUITE("monitor log") {
  TEST_CASE("redis-cli monitor output is read with every peer form") {
    auto seen = read_all(
        "OK\n"
        "1700000000.123456 [0 127.0.0.1:50414] \"SET\" \"k\" \"v\"\n"
        "1700000000.200000 [3 [::1]:6379] \"GET\" \"k\"\n"
        "1700000001.000001 [0 unix:/run/redis/redis.sock] \"PING\"\n"
        "1700000001.000002 [0 lua] \"INCR\" \"counter\"\n");
    REQUIRE(seen.size() == 4);
    CHECK(seen[0].time_us == 1700000000123456);
    CHECK(seen[0].peer == "127.0.0.1:50414");
    CHECK(seen[0].kind == compat::MonitorPeerKind::tcp);
    CHECK(seen[0].args == std::vector<std::string>{"SET", "k", "v"});
    CHECK(seen[1].db == 3);
    CHECK(seen[1].peer == "[::1]:6379");
    CHECK(seen[2].kind == compat::MonitorPeerKind::unix);
    CHECK(seen[2].peer == "unix:/run/redis/redis.sock");
    CHECK(seen[3].kind == compat::MonitorPeerKind::lua);
  }

  TEST_CASE("the server's own lines with + and CRLF are read too") {
    auto seen = read_all("+1700000000.000001 [0 10.0.0.5:1234] \"HGET\" \"h\" \"f\"\r\n");
    REQUIRE(seen.size() == 1);
    CHECK(seen[0].args.size() == 3);
  }

  TEST_CASE("Redis 2.4's format has no peer") {
    auto seen = read_all("1339518083.107412 (db 2) \"keys\" \"*\"\n");
    REQUIRE(seen.size() == 1);
    CHECK(seen[0].db == 2);
    CHECK(seen[0].kind == compat::MonitorPeerKind::unknown);
    CHECK(seen[0].args == std::vector<std::string>{"keys", "*"});
  }

  TEST_CASE("every sdscatrepr escape round-trips") {
    std::string all;
    for (int c = 0; c < 256; ++c) {
      all.push_back(static_cast<char>(c));
    }
    std::vector<std::string> args{"SET", all, "a \"quoted\" \\ value\n\r\t\a\b", ""};
    std::string line = compat::format_monitor_line(1700000000000042, 0, "127.0.0.1:1", args);
    CHECK(line.find('\n') == std::string::npos);
    auto seen = read_all(line + "\n");
    REQUIRE(seen.size() == 1);
    CHECK(seen[0].args == args);
    CHECK(seen[0].time_us == 1700000000000042);
  }

  TEST_CASE("the quoting is sdscatrepr's") {
    CHECK(compat::monitor_quote("a b") == "\"a b\"");
    CHECK(compat::monitor_quote(std::string("\x00\x7f\xff", 3)) == "\"\\x00\\x7f\\xff\"");
    CHECK(compat::monitor_quote("\"\\") == "\"\\\"\\\\\"");
    CHECK(compat::monitor_quote("\n\r\t\a\b") == "\"\\n\\r\\t\\a\\b\"");
  }

  TEST_CASE("a unix socket path holding brackets and spaces is kept whole") {
    auto seen = read_all("1.000000 [0 unix:/tmp/a] b/s.sock] \"PING\"\n");
    REQUIRE(seen.size() == 1);
    CHECK(seen[0].peer == "unix:/tmp/a] b/s.sock");
  }

  TEST_CASE("damaged lines are refused with their line and column") {
    auto e = error_of("1.000000 [0 lua] \"SET\"\nnot a line\n");
    CHECK(e.line == 2);
    CHECK(e.column == 1);
    e = error_of("1.000000 [0 lua] \"SET\" \"unterminated\n");
    CHECK(e.line == 1);
    CHECK(e.column == 24);
    CHECK(e.message == "unterminated quoted argument");
    e = error_of("1.000000 [0 127.0.0.1:1 \"SET\"\n");
    CHECK(e.message.find("not closed") != std::string::npos);
    e = error_of("1.000000 [0 lua] \"SET\"\"x\"\n");
    CHECK(e.message.find("closing quote") != std::string::npos);
    e = error_of("1.000000 [x lua] \"SET\"\n");
    CHECK(e.column == 11);
    e = error_of("1.000000 [0 lua] \"a\\");
    CHECK(e.message.find("backslash ends") != std::string::npos);
  }

  TEST_CASE("the handler can stop the read") {
    int n = 0;
    auto r = compat::read_monitor_text("1.0 [0 lua] \"A\"\n2.0 [0 lua] \"B\"\n",
                                       [&](const compat::MonitorEntry&) { return ++n < 1; });
    REQUIRE(r.has_value());
    CHECK(n == 1);
    CHECK(r->entries == 1);
  }
}
