#pragma once

// A real keyshift server in the test process, on an ephemeral loopback port and a private
// unix socket, for the client tests of engine/resp.

#include "engine/engine.hpp"
#include "engine/server/log.hpp"
#include "engine/server/server.hpp"
#include "engine/util/clock.hpp"

#include <doctest/doctest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>

namespace keyshift::test {

namespace ks = keyshift::engine;

// A loopback port nobody listens on right now (port 0 would disable TCP, as in Valkey).
inline int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

// A real keyshift server on an ephemeral loopback port and a private unix socket.
struct LiveServer {
  std::filesystem::path dir;
  ks::SystemClock clock;
  std::unique_ptr<ks::Engine> engine;
  ks::Logger log{"", ks::LogLevel::nothing};
  std::unique_ptr<ks::Server> server;
  std::thread thread;

  explicit LiveServer(std::string password = {}) {
    char tmpl[] = "/tmp/keyshift-conn-XXXXXX";
    dir = ::mkdtemp(tmpl);
    ks::EngineConfig config;
    config.bind = {"127.0.0.1"};
    config.port = free_port();
    config.unixsocket = (dir / "s.sock").string();
    config.requirepass = std::move(password);
    engine = std::make_unique<ks::Engine>(config, clock);
    server = std::make_unique<ks::Server>(*engine, log);
    REQUIRE(server->listen().empty());
    thread = std::thread([this] { server->run(); });
  }
  ~LiveServer() {
    server->stop();
    thread.join();
    std::filesystem::remove_all(dir);
  }
};

}  // namespace keyshift::test
