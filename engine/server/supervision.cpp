#include "engine/server/supervision.hpp"

#include <fmt/core.h>

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstddef>
#include <cstdlib>
#include <cstring>

namespace keyshift::engine {
namespace {

/// Under upstart there is nothing to send: the SIGSTOP at start was the readiness signal.
class UpstartNotifier final : public ServiceNotifier {
 public:
  void notify(std::string_view message) override { (void)message; }
  std::string_view supervisor() const override { return "upstart"; }
};

/// Closes the socket whichever way send() leaves.
class FdCloser {
 public:
  explicit FdCloser(int fd) : m_fd(fd) {}
  ~FdCloser() {
    if (m_fd >= 0) {
      ::close(m_fd);
    }
  }
  FdCloser(const FdCloser&) = delete;
  FdCloser& operator=(const FdCloser&) = delete;

 private:
  int m_fd;
};

}  // namespace

SystemdNotifier::SystemdNotifier(std::string socket_name, Logger& log)
    : m_socket_name(std::move(socket_name)), m_log(log) {}

std::string SystemdNotifier::send(std::string_view message) const {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  // sd_notify accepts absolute paths and abstract names ('@' stands for the leading NUL).
  if (m_socket_name.size() < 2 || (m_socket_name[0] != '/' && m_socket_name[0] != '@')) {
    return fmt::format("NOTIFY_SOCKET '{}' is neither an absolute path nor an abstract name",
                       m_socket_name);
  }
  if (m_socket_name.size() >= sizeof(addr.sun_path)) {
    return fmt::format("NOTIFY_SOCKET '{}' is too long for a unix socket address", m_socket_name);
  }
  std::memcpy(addr.sun_path, m_socket_name.data(), m_socket_name.size());
  socklen_t length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + m_socket_name.size());
  if (m_socket_name[0] == '@') {
    addr.sun_path[0] = '\0';  // abstract: the length, not a NUL, ends the name
  } else {
    length += 1;
  }
  int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return fmt::format("socket: {}", std::strerror(errno));
  }
  FdCloser closer(fd);
  ssize_t sent = ::sendto(fd, message.data(), message.size(), MSG_NOSIGNAL,
                          reinterpret_cast<const sockaddr*>(&addr), length);
  if (sent < 0) {
    return fmt::format("sendto {}: {}", m_socket_name, std::strerror(errno));
  }
  if (static_cast<size_t>(sent) != message.size()) {
    return fmt::format("sendto {}: short write", m_socket_name);
  }
  return {};
}

void SystemdNotifier::notify(std::string_view message) {
  std::string err = send(message);
  if (!err.empty()) {
    m_log.warning("systemd supervision error: " + err);
  }
}

std::unique_ptr<ServiceNotifier> start_supervision(std::string_view mode,
                                                   const SupervisionEnvironment& env, Logger& log) {
  if (mode == "auto") {
    if (env.upstart_job != nullptr) {
      log.verbose("Upstart supervision detected.");
      mode = "upstart";
    } else if (env.notify_socket != nullptr) {
      log.verbose("Systemd supervision detected.");
      mode = "systemd";
    }
  }
  if (mode == "upstart") {
    if (env.upstart_job == nullptr) {
      log.warning("upstart supervision requested, but UPSTART_JOB not found!");
      return nullptr;
    }
    log.notice("supervised by upstart, will stop to signal readiness.");
    std::raise(SIGSTOP);
    ::unsetenv("UPSTART_JOB");
    return std::make_unique<UpstartNotifier>();
  }
  if (mode == "systemd") {
    if (env.notify_socket == nullptr || *env.notify_socket == '\0') {
      log.warning("systemd supervision error: NOTIFY_SOCKET not found!");
      return nullptr;
    }
    auto notifier = std::make_unique<SystemdNotifier>(env.notify_socket, log);
    if (std::string err = notifier->send("STATUS=keyshift is loading...\n"); !err.empty()) {
      log.warning("systemd supervision error: " + err);
      return nullptr;
    }
    log.notice(
        "Supervised by systemd. Please make sure you set appropriate values for "
        "TimeoutStartSec and TimeoutStopSec in your service unit.");
    return notifier;
  }
  return nullptr;
}

}  // namespace keyshift::engine
