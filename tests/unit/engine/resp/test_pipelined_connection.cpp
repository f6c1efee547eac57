#include "tests/unit/engine/resp/live_server.hpp"

#include "engine/resp/pipelined_connection.hpp"
#include "engine/resp/resp_value.hpp"

#include <doctest/doctest.h>

#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace ks = keyshift::engine;
using keyshift::test::LiveServer;

namespace {

ks::RespEndpoint tcp_endpoint(const LiveServer& live) {
  ks::RespEndpoint ep;
  ep.port = live.server->bound_port();
  return ep;
}

// Decodes one reply the connection returned, as a caller that wants values does.
ks::RespValue decode(std::string_view bytes) {
  ks::RespValue value;
  size_t used = 0;
  REQUIRE(ks::parse_resp(bytes, value, used) == ks::RespParse::ok);
  CHECK(used == bytes.size());
  return value;
}

}  // namespace

TEST_SUITE("engine::resp::pipelined_connection") {
  TEST_CASE("replies come back in order and the window bounds what is in flight") {
    LiveServer live;
    auto conn = ks::PipelinedConnection::connect(tcp_endpoint(live), 8, 128);
    REQUIRE_MESSAGE(conn, conn.error());
    CHECK(conn->window() == 8);
    // 5,000 INCRs through a window of 8 and a 128-byte first output buffer: the caller
    // sends while the window allows and takes replies as they come.
    constexpr int k_total = 5000;
    int sent = 0;
    int64_t expected = 0;
    int received = 0;
    while (received < k_total) {
      while (sent < k_total && conn->can_send()) {
        conn->send({"INCR", "counter"});
        ++sent;
      }
      CHECK(conn->in_flight() <= 8);
      ks::ReplyView reply;
      bool any = false;
      while (conn->next_reply(reply)) {
        any = true;
        ++received;
        ++expected;
        auto value = decode(reply.bytes);
        REQUIRE(value.type == ks::RespValue::Type::integer);
        CHECK(value.integer == expected);
      }
      REQUIRE_FALSE(conn->failed());
      if (!any) {
        REQUIRE(conn->poll(std::chrono::milliseconds(5000)) != ks::PipelinedConnection::Io::failed);
      }
    }
    CHECK(conn->in_flight() == 0);
    CHECK_FALSE(conn->has_buffered());
  }

  TEST_CASE(
      "a reply larger than the input buffer arrives whole, and errors and nulls are "
      "flagged") {
    LiveServer live;
    ks::RespEndpoint ep = tcp_endpoint(live);
    ep.unix_path = (live.dir / "s.sock").string();
    auto conn = ks::PipelinedConnection::connect(ep, 4);
    REQUIRE_MESSAGE(conn, conn.error());
    std::string big(300 * 1024, 'x');
    for (size_t i = 0; i < big.size(); i += 7) {
      big[i] = static_cast<char>('a' + i % 26);
    }
    std::vector<std::string> set{"SET", "big", big};
    conn->send(std::span<const std::string>(set));
    conn->send({"GET", "big"});
    conn->send({"GET", "missing"});
    conn->send({"INCR", "big"});

    auto ok = conn->wait_reply();
    REQUIRE_MESSAGE(ok, ok.error());
    CHECK(ok->bytes == "+OK\r\n");
    auto got = conn->wait_reply();
    REQUIRE_MESSAGE(got, got.error());
    CHECK(decode(got->bytes).str == big);
    auto missing = conn->wait_reply();
    REQUIRE(missing);
    CHECK(missing->is_null);
    auto wrong = conn->wait_reply();
    REQUIRE(wrong);
    CHECK(wrong->is_error);
    CHECK(wrong->error_text == "ERR value is not an integer or out of range");
    auto none = conn->wait_reply(std::chrono::milliseconds(100));
    REQUIRE_FALSE(none);
    CHECK(none.error().find("no request is waiting") != std::string::npos);
  }

  TEST_CASE("the login sequence is RespConnection's: password, database and RESP3") {
    LiveServer live("pw");
    ks::RespEndpoint ep = tcp_endpoint(live);
    ep.password = "nope";
    auto refused = ks::PipelinedConnection::connect(ep, 4);
    REQUIRE_FALSE(refused);
    CHECK(refused.error().find("AUTH failed") != std::string::npos);

    ep.password = "pw";
    ep.db = 3;
    ep.protocol = 3;
    auto conn = ks::PipelinedConnection::connect(ep, 4);
    REQUIRE_MESSAGE(conn, conn.error());
    conn->send({"CLIENT", "INFO"});
    auto info = conn->wait_reply();
    REQUIRE_MESSAGE(info, info.error());
    std::string text = decode(info->bytes).str;
    CHECK(text.find(" db=3 ") != std::string::npos);
    CHECK(text.find(" resp=3 ") != std::string::npos);
  }

  TEST_CASE("a server that hangs up fails the connection with an error naming it") {
    LiveServer live;
    auto conn = ks::PipelinedConnection::connect(tcp_endpoint(live), 2);
    REQUIRE_MESSAGE(conn, conn.error());
    conn->send({"QUIT"});
    auto bye = conn->wait_reply();
    REQUIRE_MESSAGE(bye, bye.error());
    CHECK(bye->bytes == "+OK\r\n");
    conn->send({"PING"});
    auto after = conn->wait_reply(std::chrono::milliseconds(2000));
    REQUIRE_FALSE(after);
    CHECK(after.error().find("127.0.0.1:" + std::to_string(live.server->bound_port())) !=
          std::string::npos);
    CHECK(conn->failed());
  }
}
