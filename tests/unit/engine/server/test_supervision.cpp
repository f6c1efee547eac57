#include "engine/server/log.hpp"
#include "engine/server/supervision.hpp"

#include <doctest/doctest.h>

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

using keyshift::engine::Logger;
using keyshift::engine::LogLevel;
using keyshift::engine::start_supervision;
using keyshift::engine::SupervisionEnvironment;
using keyshift::engine::SystemdNotifier;

namespace {

/// A datagram socket standing where systemd's notification socket would be: bound to a path
/// in a fresh directory, or to an abstract name (`name` starting with '@').
class NotifyListener {
 public:
  explicit NotifyListener(bool abstract) {
    m_fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    REQUIRE(m_fd >= 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    socklen_t length = 0;
    if (abstract) {
      m_name = "@keyshift-test-notify-" + std::to_string(::getpid());
      std::memcpy(addr.sun_path + 1, m_name.data() + 1, m_name.size() - 1);
      length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + m_name.size());
    } else {
      char templ[] = "/tmp/keyshift-notify-XXXXXX";
      REQUIRE(::mkdtemp(templ) != nullptr);
      m_dir = templ;
      m_name = m_dir + "/notify";
      std::memcpy(addr.sun_path, m_name.c_str(), m_name.size() + 1);
      length = static_cast<socklen_t>(sizeof(addr));
    }
    REQUIRE(::bind(m_fd, reinterpret_cast<sockaddr*>(&addr), length) == 0);
  }
  ~NotifyListener() {
    ::close(m_fd);
    if (!m_dir.empty()) {
      std::filesystem::remove_all(m_dir);
    }
  }
  NotifyListener(const NotifyListener&) = delete;
  NotifyListener& operator=(const NotifyListener&) = delete;

  /// NOTIFY_SOCKET's value for this socket.
  const std::string& name() const { return m_name; }
  /// The next datagram, or "(none)" when nothing was sent.
  std::string receive() const {
    char buf[512];
    ssize_t n = ::recv(m_fd, buf, sizeof(buf), MSG_DONTWAIT);
    return n < 0 ? std::string("(none)") : std::string(buf, static_cast<size_t>(n));
  }

 private:
  int m_fd = -1;
  std::string m_dir;
  std::string m_name;
};

}  // namespace

TEST_SUITE("engine::supervision") {
  TEST_CASE("a notification reaches a socket named by its path as one datagram") {
    NotifyListener listener(false);
    Logger log("/dev/null", LogLevel::nothing);
    SystemdNotifier notifier(listener.name(), log);
    CHECK(notifier.send("READY=1\n").empty());
    CHECK(notifier.send("STATUS=Ready to accept connections\n").empty());
    CHECK(listener.receive() == "READY=1\n");
    CHECK(listener.receive() == "STATUS=Ready to accept connections\n");
    CHECK(listener.receive() == "(none)");
  }

  TEST_CASE("an '@' name is an abstract socket") {
    NotifyListener listener(true);
    Logger log("/dev/null", LogLevel::nothing);
    SystemdNotifier notifier(listener.name(), log);
    CHECK(notifier.send("STOPPING=1\n").empty());
    CHECK(listener.receive() == "STOPPING=1\n");
  }

  TEST_CASE("a socket nobody listens on, or a relative name, is an error and no crash") {
    Logger log("/dev/null", LogLevel::nothing);
    std::string err = SystemdNotifier("/nonexistent/keyshift/notify", log).send("READY=1\n");
    CHECK(err.find("/nonexistent/keyshift/notify") != std::string::npos);
    CHECK(SystemdNotifier("relative/notify", log).send("READY=1\n").find("absolute") !=
          std::string::npos);
    CHECK_FALSE(SystemdNotifier(std::string(200, '/'), log).send("READY=1\n").empty());
  }

  TEST_CASE("supervised systemd sends the loading status first and reports systemd") {
    NotifyListener listener(false);
    Logger log("/dev/null", LogLevel::nothing);
    SupervisionEnvironment env{listener.name().c_str(), nullptr};
    auto notifier = start_supervision("systemd", env, log);
    REQUIRE(notifier != nullptr);
    CHECK(notifier->supervisor() == "systemd");
    CHECK(listener.receive() == "STATUS=keyshift is loading...\n");
    notifier->notify("READY=1\n");
    CHECK(listener.receive() == "READY=1\n");
  }

  TEST_CASE("supervised auto finds systemd by NOTIFY_SOCKET and is nothing without it") {
    NotifyListener listener(true);
    Logger log("/dev/null", LogLevel::nothing);
    SupervisionEnvironment env{listener.name().c_str(), nullptr};
    CHECK(start_supervision("auto", env, log) != nullptr);
    CHECK(listener.receive() == "STATUS=keyshift is loading...\n");
    CHECK(start_supervision("auto", SupervisionEnvironment{}, log) == nullptr);
  }

  TEST_CASE("supervised no ignores NOTIFY_SOCKET, systemd without a reachable socket is none") {
    NotifyListener listener(false);
    Logger log("/dev/null", LogLevel::nothing);
    SupervisionEnvironment env{listener.name().c_str(), nullptr};
    CHECK(start_supervision("no", env, log) == nullptr);
    CHECK(listener.receive() == "(none)");
    CHECK(start_supervision("systemd", SupervisionEnvironment{}, log) == nullptr);
    SupervisionEnvironment gone{"/nonexistent/keyshift/notify", nullptr};
    CHECK(start_supervision("systemd", gone, log) == nullptr);
  }

  TEST_CASE("supervised upstart without UPSTART_JOB is none and does not stop the process") {
    Logger log("/dev/null", LogLevel::nothing);
    CHECK(start_supervision("upstart", SupervisionEnvironment{}, log) == nullptr);
  }
}
