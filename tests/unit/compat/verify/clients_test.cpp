#include "compat/verify/clients.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

namespace compat = keyshift::compat;
namespace kb = keyshift::compat::kb;

namespace {

std::string example(std::vector<std::string_view> args) {
  return compat::redacted_example(args);
}

compat::MonitorEntry entry(std::string_view peer, const std::vector<std::string_view>& args) {
  compat::MonitorEntry e;
  e.peer_kind = compat::MonitorPeerKind::tcp;
  e.peer = peer;
  e.args = args;
  return e;
}

}  // namespace

TEST_SUITE("verify clients") {
  TEST_CASE("secrets are redacted in examples") {
    CHECK(example({"AUTH", "pw"}) == "\"AUTH\" \"(redacted)\"");
    CHECK(example({"AUTH", "user", "pw"}) == "\"AUTH\" \"(redacted)\" \"(redacted)\"");
    CHECK(example({"HELLO", "3", "AUTH", "u", "p", "SETNAME", "n"}) ==
          "\"HELLO\" \"3\" \"AUTH\" \"(redacted)\" \"(redacted)\" \"SETNAME\" \"n\"");
    CHECK(example({"CONFIG", "SET", "requirepass", "s3", "maxmemory", "1gb"}) ==
          "\"CONFIG\" \"SET\" \"requirepass\" \"(redacted)\" \"maxmemory\" \"1gb\"");
    CHECK(example({"ACL", "SETUSER", "alice", "on", ">pw", "~*"}) ==
          "\"ACL\" \"SETUSER\" \"alice\" \"on\" \"(redacted)\" \"~*\"");
    CHECK(example({"MIGRATE", "h", "1", "", "0", "5000", "AUTH2", "u", "p", "KEYS", "k"})
              .find("\"u\"") == std::string::npos);
  }

  TEST_CASE("long examples are cut") {
    std::string big(1000, 'x');
    CHECK(compat::redacted_example(std::vector<std::string_view>{"SET", "k", big}, 50).size() ==
          53);
  }

  TEST_CASE("connections of one library on one host are one client") {
    compat::ClientsAnalyzer a(*kb::find_profile("redis-7.4"), *kb::find_profile("valkey-8.0"),
                              true);
    std::vector<std::string_view> info1{"CLIENT", "SETINFO", "LIB-NAME", "go-redis"};
    a.add(entry("10.0.0.1:1000", info1));
    a.add(entry("10.0.0.1:1001", info1));
    std::vector<std::string_view> hexpire{"HEXPIRE", "h", "10", "FIELDS", "1", "f"};
    a.add(entry("10.0.0.1:1000", hexpire));
    std::vector<std::string_view> get{"get", "k"};
    a.add(entry("10.0.0.2:1000", get));
    compat::ClientsReport r = a.report("test");
    REQUIRE(r.clients.size() == 2);
    CHECK(r.clients[0].name == "go-redis");
    CHECK(r.clients[0].address == "10.0.0.1");
    CHECK(r.clients[0].connections == 2);
    CHECK(r.clients[1].name == "unidentified client");
    CHECK_FALSE(r.all_ok());
    bool found = false;
    for (const compat::ClientUsage& u : r.overall) {
      if (u.item == "hexpire") {
        found = true;
        CHECK(u.verdict == compat::ClientVerdict::missing);
        CHECK(u.detail == "valkey-9.0 has it");
      }
    }
    CHECK(found);
  }

  TEST_CASE("a command no line knows is unknown, a subcommand is judged as itself") {
    compat::ClientsAnalyzer a(*kb::find_profile("redis-7.0"), *kb::find_profile("valkey-8.0"),
                              true);
    std::vector<std::string_view> typo{"GTE", "k"};
    std::vector<std::string_view> capa{"CLIENT", "CAPA", "redirect"};
    a.add(entry("1.1.1.1:1", typo));
    a.add(entry("1.1.1.1:1", capa));
    compat::ClientsReport r = a.report("test");
    REQUIRE(r.overall.size() == 2);
    for (const compat::ClientUsage& u : r.overall) {
      if (u.item == "gte") {
        CHECK(u.verdict == compat::ClientVerdict::unknown);
      } else {
        CHECK(u.item == "client|capa");
        CHECK(u.verdict == compat::ClientVerdict::ok);
      }
    }
  }
  TEST_CASE("connections on one unix socket stay apart when a capture tells them apart") {
    compat::ClientsAnalyzer a(*kb::find_profile("redis-7.0"), *kb::find_profile("valkey-8.0"),
                              true);
    std::vector<std::string_view> get{"GET", "k"};
    a.name_connection("c1", compat::MonitorPeerKind::unix, "unix:/run/r.sock", "phpredis 6.0.2",
                      "");
    a.add_command("c1", compat::MonitorPeerKind::unix, "unix:/run/r.sock", get);
    a.add_command("c2", compat::MonitorPeerKind::unix, "unix:/run/r.sock", get);
    compat::ClientsReport r = a.report("test");
    REQUIRE(r.clients.size() == 2);
    CHECK(r.clients[0].name == "phpredis 6.0.2");
    CHECK(r.clients[0].address == "unix:/run/r.sock");
    CHECK(r.clients[1].name == "unidentified client");
  }

  TEST_CASE("a replay's differing replies turn an ok command into differs, not a missing one") {
    compat::ClientsAnalyzer a(*kb::find_profile("redis-7.0"), *kb::find_profile("valkey-8.0"),
                              true);
    a.add_replayed_counts("r.json", {{"get", 10}, {"set", 4}, {"hexpire", 2}});
    a.add_replay_evidence("get", "valkey 8.0.1", 10, 3, 0, "replay report r.json");
    a.add_replay_evidence("set", "valkey 8.0.1", 4, 0, 0, "replay report r.json");
    a.add_replay_evidence("hexpire", "valkey 8.0.1", 2, 2, 0, "replay report r.json");
    compat::ClientsReport r = a.report("test");
    REQUIRE(r.clients.size() == 1);
    CHECK(r.clients[0].address == "all connections");
    for (const compat::ClientUsage& u : r.overall) {
      if (u.item == "get") {
        CHECK(u.verdict == compat::ClientVerdict::differs);
        CHECK(u.detail == "replayed against valkey 8.0.1: 3 of 10 replies differed");
        CHECK(u.source == "replay report r.json");
      } else if (u.item == "set") {
        CHECK(u.verdict == compat::ClientVerdict::ok);
      } else {
        CHECK(u.item == "hexpire");
        CHECK(u.verdict == compat::ClientVerdict::missing);
      }
    }
  }
}
