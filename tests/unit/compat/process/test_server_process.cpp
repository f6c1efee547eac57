#include "compat/process/server_process.hpp"
#include "engine/util/clock.hpp"

#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <string>

namespace fs = std::filesystem;
using keyshift::compat::ServerLaunch;
using keyshift::compat::ServerProcess;
using keyshift::engine::ManualClock;
using keyshift::engine::RespConnection;

TEST_SUITE("compat::server_process") {
  TEST_CASE("a real redis-server starts on its private socket, answers and stops cleanly") {
    if (::access("/usr/bin/redis-server", X_OK) != 0) {
      MESSAGE("skipped: /usr/bin/redis-server is not installed");
      return;
    }
    ManualClock clock;
    // The clock never moves: the wait lasts exactly until the server answers or exits.
    auto server = ServerProcess::start({"/usr/bin/redis-server", {}, {"--databases", "2"}}, clock,
                                       [](std::chrono::milliseconds) {});
    REQUIRE_MESSAGE(server.has_value(), (server ? "" : server.error()));
    std::string dir = (*server)->dir();
    CHECK((*server)->socket() == dir + "/server.sock");
    auto conn = RespConnection::connect((*server)->endpoint());
    REQUIRE(conn.has_value());
    auto set = conn->call({"SET", "k", "v"});
    REQUIRE(set.has_value());
    CHECK(set->str == "OK");
    // The trailing options won over the private ones' defaults.
    auto dbs = conn->call({"CONFIG", "GET", "databases"});
    REQUIRE(dbs.has_value());
    REQUIRE(dbs->elements.size() == 2);
    CHECK(dbs->elements[1].str == "2");
    auto port = conn->call({"CONFIG", "GET", "port"});
    REQUIRE(port.has_value());
    CHECK(port->elements.at(1).str == "0");
    CHECK((*server)->stop() == 0);
    CHECK(fs::exists(dir));
    server->reset();
    CHECK_FALSE(fs::exists(dir));
  }

  TEST_CASE("a program that exits before answering is reported with its status and output") {
    ManualClock clock;
    ServerLaunch launch{"sh", {"-c", "echo 'FATAL: bad directive' >&2; exit 3", "sh"}, {}};
    auto server = ServerProcess::start(launch, clock, [](std::chrono::milliseconds) {});
    REQUIRE_FALSE(server.has_value());
    CHECK(server.error().find("exited with status 3: ") == 0);
    CHECK(server.error().find("FATAL: bad directive") != std::string::npos);
  }

  TEST_CASE("a program that never answers times out on the injected clock") {
    ManualClock clock;
    int pauses = 0;
    ServerLaunch launch{"sh", {"-c", "echo waiting; exec sleep 600", "sh"}, {}};
    launch.timeout = std::chrono::milliseconds(1000);
    launch.poll_every = std::chrono::milliseconds(100);
    auto server = ServerProcess::start(launch, clock, [&](std::chrono::milliseconds ms) {
      ++pauses;
      clock.advance_ms(ms.count());
    });
    REQUIRE_FALSE(server.has_value());
    CHECK(server.error().find("did not answer within 1000 ms: ") == 0);
    CHECK(pauses == 10);
  }

  TEST_CASE("a program that is not installed is an error naming it") {
    ManualClock clock;
    auto server = ServerProcess::start({"keyshift-no-such-server", {}, {}}, clock,
                                       [](std::chrono::milliseconds) {});
    REQUIRE_FALSE(server.has_value());
    CHECK(server.error() == "keyshift-no-such-server: not found");
  }

  TEST_CASE("the private options keep a server off ports, files and daemon mode") {
    auto options = ServerProcess::private_options("/d", "/d/s.sock");
    std::string joined;
    for (const auto& o : options) {
      joined += o + " ";
    }
    CHECK(joined ==
          "--port 0 --unixsocket /d/s.sock --dir /d --logfile  --pidfile  --save  --appendonly no "
          "--daemonize no --supervised no ");
  }
}
