#include "migrate/plan/plan_build.hpp"

#include <doctest/doctest.h>

namespace m = keyshift::migrate;

TEST_SUITE("migrate plan preflight") {
  TEST_CASE("a dataset smaller than MemAvailable passes the memory check") {
    m::PreflightCheck c =
        m::memory_check(1024 * 1024, "MemTotal:  8000 kB\nMemAvailable:    2048 kB\n");
    CHECK(c.name == "memory");
    CHECK(c.verdict == "ok");
    CHECK(c.detail.find("2097152 bytes available") != std::string::npos);
  }

  TEST_CASE("a dataset larger than MemAvailable is a warning that says why") {
    m::PreflightCheck c = m::memory_check(3 * 1024 * 1024, "MemAvailable:    2048 kB\n");
    CHECK(c.verdict == "warn");
    CHECK(c.detail.find("free memory first") != std::string::npos);
  }

  TEST_CASE("a meminfo without MemAvailable is a warning, not a guess") {
    m::PreflightCheck c = m::memory_check(10, "MemTotal: 8000 kB\n");
    CHECK(c.verdict == "warn");
    CHECK(c.detail.find("unknown") != std::string::npos);
  }

  TEST_CASE("a web user outside the socket directory's group gets the usermod fix") {
    m::PreflightCheck c = m::socket_group_check({.dir = "/run/valkey",
                                                 .owner = "valkey",
                                                 .group = "valkey",
                                                 .web_user = "www-data",
                                                 .web_user_exists = true,
                                                 .in_group = false});
    CHECK(c.name == "socket-group");
    CHECK(c.verdict == "warn");
    CHECK(c.detail.find("/run/valkey is valkey:valkey") != std::string::npos);
    CHECK(c.detail.find("usermod -aG valkey www-data") != std::string::npos);
  }

  TEST_CASE("a web user in the group, or absent from the host, passes") {
    m::SocketDirAccess a{.dir = "/run",
                         .exists = false,
                         .owner = "root",
                         .group = "valkey",
                         .web_user = "www-data",
                         .web_user_exists = true,
                         .in_group = true};
    CHECK(m::socket_group_check(a).verdict == "ok");
    CHECK(m::socket_group_check(a).detail.find("nearest existing parent") != std::string::npos);
    a.web_user_exists = false;
    a.in_group = false;
    CHECK(m::socket_group_check(a).verdict == "ok");
    CHECK(m::socket_group_check(a).detail.find("no user www-data") != std::string::npos);
  }

  TEST_CASE("the host's answer for root and / names root's group") {
    m::SocketDirAccess a = m::socket_dir_access("/", "root");
    CHECK(a.exists);
    CHECK(a.web_user_exists);
    CHECK(a.group == "root");
    CHECK(a.in_group);
  }
}
