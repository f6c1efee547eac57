#include "engine/commands/context.hpp"
#include "engine/commands/errors.hpp"
#include "engine/engine.hpp"
#include "engine/util/clock.hpp"
#include "engine/util/net_address.hpp"

#include <doctest/doctest.h>

#include <string>
#include <string_view>
#include <vector>

namespace ks = keyshift::engine;

namespace {

/// A TCP-like session of `engine` whose peer is `addr` (not in-process, not unix).
ks::Session& peer(ks::Engine& engine, std::string addr) {
  ks::Session& s = engine.open_session(nullptr);
  s.clear(ks::k_session_in_process);
  s.addr = std::move(addr);
  return s;
}

ks::RespValue run(ks::Engine& engine, ks::Session& s, std::vector<std::string_view> argv) {
  return engine.run(s, argv);
}

}  // namespace

TEST_SUITE("net_address") {
  TEST_CASE("addresses are written as Valkey's formatAddr writes them, IPv6 in brackets") {
    CHECK(ks::format_addr("127.0.0.1", 6379) == "127.0.0.1:6379");
    CHECK(ks::format_addr("::1", 50000) == "[::1]:50000");
    CHECK(ks::format_addr("fe80::1", 1) == "[fe80::1]:1");
  }

  TEST_CASE("the IP of a written address comes back without port or brackets") {
    CHECK(ks::addr_ip("127.0.0.2:6379") == "127.0.0.2");
    CHECK(ks::addr_ip("[::1]:50000") == "::1");
    CHECK(ks::addr_ip("/run/valkey.sock:0") == "/run/valkey.sock");
  }

  TEST_CASE("any 127.x address and ::1 are local, as in connSocketIsLocal") {
    CHECK(ks::is_local_ip("127.0.0.1"));
    CHECK(ks::is_local_ip("127.0.0.2"));
    CHECK(ks::is_local_ip("127.255.255.254"));
    CHECK(ks::is_local_ip("::1"));
    CHECK_FALSE(ks::is_local_ip("10.0.0.1"));
    CHECK_FALSE(ks::is_local_ip("128.0.0.1"));
    CHECK_FALSE(ks::is_local_ip("::ffff:127.0.0.1"));
    CHECK_FALSE(ks::is_local_ip("::11"));
    CHECK_FALSE(ks::is_local_ip("1127.0.0.1"));
  }

  TEST_CASE("protected commands and protected configs in local mode ask the same question") {
    ks::ManualClock clock;
    ks::EngineConfig config;
    config.enable_debug_command = ks::EnableMode::local;
    config.unimplemented_settings["enable-protected-configs"] = "local";
    ks::Engine engine(config, clock);
    struct Case {
      std::string addr;
      bool local;
    };
    const std::vector<Case> cases = {
        {"127.0.0.1:40000", true}, {"127.0.0.2:40001", true},  {"[::1]:40002", true},
        {"10.1.2.3:40003", false}, {"[fe80::1]:40004", false}, {"[::ffff:127.0.0.1]:40005", false}};
    for (const Case& c : cases) {
      CAPTURE(c.addr);
      ks::Session& s = peer(engine, c.addr);
      CHECK(ks::is_local(s) == c.local);
      ks::RespValue debug = run(engine, s, {"DEBUG", "SLEEP", "0"});
      ks::RespValue dir = run(engine, s, {"CONFIG", "SET", "dir", "."});
      if (c.local) {
        CHECK(debug.type == ks::RespValue::Type::simple);
        CHECK(dir.type == ks::RespValue::Type::simple);
      } else {
        CHECK(debug.str == ks::errors::k_debug_not_allowed);
        CHECK(dir.type == ks::RespValue::Type::error);
        CHECK(dir.str.find("can't set protected config") != std::string::npos);
      }
    }
    ks::Session& unix_client = peer(engine, "/tmp/valkey.sock:0");
    unix_client.set(ks::k_session_unix_socket);
    CHECK(ks::is_local(unix_client));
    CHECK(run(engine, unix_client, {"DEBUG", "SLEEP", "0"}).type == ks::RespValue::Type::simple);
  }
}
