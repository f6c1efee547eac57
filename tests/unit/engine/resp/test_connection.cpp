#include "tests/unit/engine/resp/live_server.hpp"

#include "engine/resp/connection.hpp"

#include <doctest/doctest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

namespace ks = keyshift::engine;
using keyshift::test::LiveServer;

TEST_SUITE("engine::resp::connection") {
  TEST_CASE("redis URLs give host, port, database and credentials") {
    auto ep = ks::parse_redis_url("redis://alice:s%40cret@10.0.0.5:6380/3");
    REQUIRE(ep);
    CHECK(ep->host == "10.0.0.5");
    CHECK(ep->port == 6380);
    CHECK(ep->db == 3);
    CHECK(ep->user == "alice");
    CHECK(ep->password == "s@cret");
    CHECK(ep->unix_path.empty());

    auto bare = ks::parse_redis_url("redis://localhost");
    REQUIRE(bare);
    CHECK(bare->host == "localhost");
    CHECK(bare->port == 6379);
    CHECK(bare->db == 0);

    auto pass_only = ks::parse_redis_url("redis://:pw@[::1]:7000");
    REQUIRE(pass_only);
    CHECK(pass_only->host == "::1");
    CHECK(pass_only->port == 7000);
    CHECK(pass_only->user.empty());
    CHECK(pass_only->password == "pw");
    CHECK(pass_only->describe() == "[::1]:7000");
  }

  TEST_CASE("unix URLs carry the socket path and query parameters") {
    auto ep = ks::parse_redis_url("unix:///run/valkey/valkey-server.sock?db=2&password=x%26y");
    REQUIRE(ep);
    CHECK(ep->unix_path == "/run/valkey/valkey-server.sock");
    CHECK(ep->db == 2);
    CHECK(ep->password == "x&y");
    CHECK(ep->describe() == "unix:/run/valkey/valkey-server.sock");
  }

  TEST_CASE("rediss and tls URLs ask for TLS, and the command line's TLS flags fill them") {
    auto tls = ks::parse_redis_url("rediss://host:6380/2");
    REQUIRE(tls);
    CHECK(tls->tls.enabled);
    CHECK(tls->port == 6380);
    CHECK(tls->db == 2);
    CHECK(!ks::parse_redis_url("redis://host")->tls.enabled);
    ks::TlsClientOptions flags;
    flags.ca_file = "/etc/ca.pem";
    flags.sni = "cache.example";
    auto merged = ks::parse_redis_url("tls://h:1", flags);
    REQUIRE(merged);
    CHECK(merged->tls.enabled);
    CHECK(merged->tls.ca_file == "/etc/ca.pem");
    CHECK(merged->tls.sni == "cache.example");
    CHECK(!ks::parse_redis_url("redis://h:1", flags)->tls.enabled);
    flags.enabled = true;
    CHECK(ks::parse_redis_url("redis://h:1", flags)->tls.enabled);
    CHECK(!ks::parse_redis_url("unix:///tmp/s.sock", flags)->tls.enabled);
  }

  TEST_CASE("bad URLs are refused with the reason") {
    CHECK(!ks::parse_redis_url("valkey://host"));
    CHECK(!ks::parse_redis_url("redis://host:99999"));
    CHECK(!ks::parse_redis_url("redis://host/x"));
    CHECK(!ks::parse_redis_url("unix://relative.sock"));
    CHECK(!ks::parse_redis_url("host:6379"));
  }

  TEST_CASE("a lone user info is the password, and PHP's tcp:// names a TCP server") {
    auto lone = ks::parse_redis_url("redis://s%3Acret@h:6390");
    REQUIRE(lone);
    CHECK(lone->user.empty());
    CHECK(lone->password == "s:cret");
    auto tcp = ks::parse_redis_url("tcp://10.0.0.7:6381?database=4&auth=pw");
    REQUIRE(tcp);
    CHECK(tcp->host == "10.0.0.7");
    CHECK(tcp->port == 6381);
    CHECK(tcp->db == 4);
    CHECK(tcp->password == "pw");
  }

  TEST_CASE("a connection over TCP and over the unix socket runs commands and pipelines") {
    LiveServer live;
    ks::RespEndpoint tcp;
    tcp.port = live.server->bound_port();
    auto conn = ks::RespConnection::connect(tcp);
    REQUIRE_MESSAGE(conn, conn.error());
    auto pong = conn->call({"PING"});
    REQUIRE(pong);
    CHECK(pong->str == "PONG");

    ks::RespEndpoint unix_ep;
    unix_ep.unix_path = (live.dir / "s.sock").string();
    unix_ep.db = 5;
    auto local = ks::RespConnection::connect(unix_ep);
    REQUIRE_MESSAGE(local, local.error());
    auto replies = local->pipeline({{"SET", "k", "v"}, {"GET", "k"}, {"INCR", "k"}});
    REQUIRE(replies);
    REQUIRE(replies->size() == 3);
    CHECK((*replies)[0].str == "OK");
    CHECK((*replies)[1].str == "v");
    CHECK((*replies)[2].is_error());
    // SELECT 5 took effect: the key is not in database 0.
    auto missing = conn->call({"EXISTS", "k"});
    REQUIRE(missing);
    CHECK(missing->integer == 0);
  }

  TEST_CASE("a wrong password or a closed port is an error naming the endpoint") {
    LiveServer live("secret");
    ks::RespEndpoint ep;
    ep.port = live.server->bound_port();
    ep.password = "wrong";
    auto refused = ks::RespConnection::connect(ep);
    REQUIRE(!refused);
    CHECK(refused.error().find("AUTH failed") != std::string::npos);
    CHECK(refused.error().find("127.0.0.1:" + std::to_string(ep.port)) != std::string::npos);

    ep.password = "secret";
    ep.protocol = 3;
    auto ok = ks::RespConnection::connect(ep);
    REQUIRE_MESSAGE(ok, ok.error());
    auto hello = ok->call({"PING"});
    REQUIRE(hello);
    CHECK(hello->str == "PONG");

    ks::RespEndpoint nowhere;
    nowhere.unix_path = (live.dir / "absent.sock").string();
    auto none = ks::RespConnection::connect(nowhere);
    REQUIRE(!none);
    CHECK(none.error().find("absent.sock") != std::string::npos);
  }
}
