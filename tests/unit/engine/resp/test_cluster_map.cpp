#include "engine/resp/cluster_map.hpp"

#include <doctest/doctest.h>

#include <string>
#include <string_view>
#include <vector>

using keyshift::engine::ClusterMap;
using keyshift::engine::common_slot;
using keyshift::engine::key_hash_slot;
using keyshift::engine::parse_redirect;
using keyshift::engine::parse_resp;
using keyshift::engine::RespParse;
using keyshift::engine::RespValue;

namespace {

RespValue decode(std::string_view text) {
  RespValue v;
  size_t used = 0;
  REQUIRE(parse_resp(text, v, used) == RespParse::ok);
  REQUIRE(used == text.size());
  return v;
}

std::string bulk(std::string_view s) {
  return "$" + std::to_string(s.size()) + "\r\n" + std::string(s) + "\r\n";
}

/// One shard of a CLUSTER SHARDS reply in RESP2 form: slots from-to, a primary and a replica.
std::string shard(int from, int to, std::string_view ip, int port, std::string_view id) {
  std::string primary = "*14\r\n" + bulk("id") + bulk(id) + bulk("port") + ":" +
                        std::to_string(port) + "\r\n" + bulk("ip") + bulk(ip) + bulk("endpoint") +
                        bulk(ip) + bulk("role") + bulk("master") + bulk("replication-offset") +
                        ":10\r\n" + bulk("health") + bulk("online");
  std::string replica = "*14\r\n" + bulk("id") + bulk("r") + bulk("port") + ":1\r\n" + bulk("ip") +
                        bulk(ip) + bulk("endpoint") + bulk(ip) + bulk("role") + bulk("replica") +
                        bulk("replication-offset") + ":10\r\n" + bulk("health") + bulk("online");
  return "*4\r\n" + bulk("slots") + "*2\r\n:" + std::to_string(from) +
         "\r\n:" + std::to_string(to) + "\r\n" + bulk("nodes") + "*2\r\n" + replica + primary;
}

}  // namespace

TEST_SUITE("engine::cluster_map") {
  TEST_CASE("CLUSTER SHARDS gives each slot to its shard's primary") {
    RespValue reply = decode("*2\r\n" + shard(0, 8191, "10.0.0.1", 7000, "aaa") +
                             shard(8192, 16383, "", 7001, "bbb"));
    auto map = keyshift::engine::parse_cluster_shards(reply, "127.0.0.9");
    REQUIRE(map);
    REQUIRE(map->primaries().size() == 2);
    CHECK(map->primaries()[0].address() == "10.0.0.1:7000");
    CHECK(map->primaries()[0].id == "aaa");
    // An unknown address is the seed's.
    CHECK(map->primaries()[1].address() == "127.0.0.9:7001");
    CHECK(map->owner(0) == 0);
    CHECK(map->owner(8191) == 0);
    CHECK(map->owner(8192) == 1);
    CHECK(map->uncovered() == 0);
  }

  TEST_CASE("CLUSTER SLOTS ranges name the primary first") {
    RespValue reply =
        decode("*2\r\n*4\r\n:0\r\n:99\r\n*3\r\n" + bulk("127.0.0.1") + ":7000\r\n" + bulk("id0") +
               "*3\r\n" + bulk("127.0.0.1") + ":7003\r\n" + bulk("r") +
               "*3\r\n:200\r\n:299\r\n*3\r\n" + bulk("127.0.0.1") + ":7001\r\n" + bulk("id1"));
    auto map = keyshift::engine::parse_cluster_slots(reply, "x");
    REQUIRE(map);
    REQUIRE(map->primaries().size() == 2);
    CHECK(map->owner(50) == 0);
    CHECK(map->owner(150) == -1);
    CHECK(map->owner(250) == 1);
    CHECK(map->uncovered() == 16384 - 200);
  }

  TEST_CASE("CLUSTER NODES lists primaries with their slots and skips migration markers") {
    std::string text =
        "aaa 127.0.0.1:7000@17000 myself,master - 0 0 1 connected 0-5460 [5461->-bbb]\n"
        "bbb 127.0.0.1:7001@17001,host1 master - 0 0 2 connected 5461-10922 [5461-<-aaa]\n"
        "ccc :7002@17002 master - 0 0 3 connected 10923-16383\n"
        "ddd 127.0.0.1:7003@17003 slave aaa 0 0 1 connected\n";
    auto map = keyshift::engine::parse_cluster_nodes(text, "127.0.0.1");
    REQUIRE(map);
    REQUIRE(map->primaries().size() == 3);
    CHECK(map->primaries()[2].address() == "127.0.0.1:7002");
    CHECK(map->owner(5460) == 0);
    CHECK(map->owner(5461) == 1);
    CHECK(map->owner(16383) == 2);
    CHECK(map->uncovered() == 0);
  }

  TEST_CASE("a bad CLUSTER NODES line is an error naming the line") {
    auto map = keyshift::engine::parse_cluster_nodes("aaa 1.2.3.4 master\n", "h");
    REQUIRE_FALSE(map);
    CHECK(map.error().find("line 1") != std::string::npos);
  }

  TEST_CASE("MOVED and ASK errors name the slot and the node") {
    auto moved = parse_redirect("MOVED 3999 127.0.0.1:6381");
    REQUIRE(moved);
    CHECK_FALSE(moved->ask);
    CHECK(moved->slot == 3999);
    CHECK(moved->host == "127.0.0.1");
    CHECK(moved->port == 6381);
    auto ask = parse_redirect("ASK 12 [::1]:7000");
    REQUIRE(ask);
    CHECK(ask->ask);
    CHECK(ask->host == "::1");
    CHECK_FALSE(parse_redirect("ERR no"));
    CHECK_FALSE(parse_redirect("MOVED 99999 h:1"));
    CHECK(keyshift::engine::is_retry_later("TRYAGAIN Multiple keys request during rehashing"));
    CHECK(keyshift::engine::is_retry_later("CLUSTERDOWN The cluster is down"));
  }

  TEST_CASE("keys of one transaction share a slot or the routing says which differ") {
    std::vector<std::string_view> same{"{u1}.a", "{u1}.b"};
    auto ok = common_slot(same);
    REQUIRE(ok);
    CHECK(**ok == key_hash_slot("u1"));
    std::vector<std::string_view> none;
    auto empty = common_slot(none);
    REQUIRE(empty);
    CHECK_FALSE(empty->has_value());
    std::vector<std::string_view> spread{"foo", "somekey"};
    auto bad = common_slot(spread);
    REQUIRE_FALSE(bad);
    CHECK(bad.error().find("slot 12182") != std::string::npos);
    CHECK(bad.error().find("slot 11058") != std::string::npos);
  }
}
