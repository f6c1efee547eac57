#include "engine/resp/connection.hpp"
#include "engine/resp/server_url.hpp"

#include <doctest/doctest.h>

#include <string>
#include <string_view>

namespace ks = keyshift::engine;

TEST_SUITE("engine::server_url") {
  TEST_CASE("every form a client writes renders back byte for byte") {
    for (std::string_view url :
         {"redis://127.0.0.1:6379", "redis://u:p%40ss@10.0.0.5:6380/2", "rediss://host/0?x",
          "tcp://127.0.0.1:6379?auth=secret&database=3", "tls://h:1", "redis://:pw@[::1]:7000",
          "unix:///run/valkey/valkey.sock?db=4&password=x", "unix:/run/redis.sock",
          "redis+socket:///tmp/r.sock", "unix://:pw@/run/r.sock", "redis://host/3/extra",
          "redis://host?"}) {
      CAPTURE(url);
      auto u = ks::parse_server_url(url);
      REQUIRE(u);
      CHECK(u->render() == url);
    }
  }

  TEST_CASE("the parts are kept as written") {
    auto u = ks::parse_server_url("redis://u:p%40ss@[::1]:6380/2?db=5&flag");
    REQUIRE(u);
    CHECK(u->scheme == "redis");
    CHECK_FALSE(u->socket_form);
    CHECK(u->host == "[::1]");
    CHECK(u->port == 6380);
    CHECK(u->user == "u");
    CHECK(u->password == "p%40ss");
    CHECK(u->db_path == "2");
    CHECK(u->param({"db", "database"}) == 0);
    CHECK(u->param({"flag"}) == 1);
    CHECK_FALSE(u->query[1].second.has_value());
    auto s = ks::parse_server_url("unix://:secret@/run/valkey.sock");
    REQUIRE(s);
    CHECK(s->socket_form);
    CHECK(s->socket == "/run/valkey.sock");
    CHECK(s->password == "secret");
  }

  TEST_CASE("other schemes, a TCP URL without slashes and a relative socket are refused") {
    CHECK_FALSE(ks::parse_server_url("valkey://host"));
    CHECK_FALSE(ks::parse_server_url("http://127.0.0.1"));
    CHECK_FALSE(ks::parse_server_url("redis:host"));
    CHECK_FALSE(ks::parse_server_url("unix://relative.sock"));
    CHECK_FALSE(ks::parse_server_url("127.0.0.1"));
  }

  TEST_CASE("host and port split with IPv6 brackets kept and a bad port as -1") {
    CHECK(ks::split_host_port("h:6380", 6379) == std::pair<std::string, int>{"h", 6380});
    CHECK(ks::split_host_port("h", 6379) == std::pair<std::string, int>{"h", 6379});
    CHECK(ks::split_host_port("[::1]", 80) == std::pair<std::string, int>{"[::1]", 80});
    CHECK(ks::split_host_port("[::1]:7000", 80) == std::pair<std::string, int>{"[::1]", 7000});
    CHECK(ks::split_host_port("h:x", 6379).second == -1);
    CHECK(ks::split_host_port("h:", 6379).second == -1);
  }

  TEST_CASE("percent escapes decode, and a broken one is reported") {
    CHECK(ks::percent_decode("p%40ss%2f") == "p@ss/");
    CHECK(ks::percent_decode("plain") == "plain");
    CHECK_FALSE(ks::percent_decode("bad%4"));
    CHECK_FALSE(ks::percent_decode("bad%zz"));
  }

  TEST_CASE("an endpoint renders as unix://PATH or HOST:PORT without its secrets") {
    ks::RespEndpoint tcp;
    tcp.host = "10.0.0.5";
    tcp.port = 6380;
    tcp.password = "secret";
    tcp.db = 3;
    CHECK(ks::render_endpoint(tcp) == "10.0.0.5:6380");
    ks::RespEndpoint sock = tcp;
    sock.unix_path = "/run/valkey/valkey.sock";
    CHECK(ks::render_endpoint(sock) == "unix:///run/valkey/valkey.sock");
    // Rendered socket URLs read back as the same endpoint.
    auto back = ks::parse_redis_url(ks::render_endpoint(sock));
    REQUIRE(back);
    CHECK(back->unix_path == "/run/valkey/valkey.sock");
  }

  TEST_CASE("an IPv6 host gets brackets once") {
    CHECK(ks::render_host_port("::1", 6379) == "[::1]:6379");
    CHECK(ks::render_host_port("[::1]", 6379) == "[::1]:6379");
    CHECK(ks::render_host_port("cache.local", 7000) == "cache.local:7000");
  }
}
