#pragma once

#include "engine/server/log.hpp"
#include "engine/service_notifier.hpp"

#include <memory>
#include <string>
#include <string_view>

namespace keyshift::engine {

/// Sends sd_notify(3) messages as datagrams to the unix socket NOTIFY_SOCKET names (a path,
/// or an abstract name written with a leading '@'): the protocol written here, so keyshift
/// needs no libsystemd.
class SystemdNotifier final : public ServiceNotifier {
 public:
  /// Notifies `socket_name`; failures are logged to `log` as Valkey logs them.
  SystemdNotifier(std::string socket_name, Logger& log);

  /// Sends `message` in one datagram; an error text, or empty when it was sent.
  std::string send(std::string_view message) const;
  void notify(std::string_view message) override;
  std::string_view supervisor() const override { return "systemd"; }

 private:
  std::string m_socket_name;
  Logger& m_log;
};

/// The environment variables supervision looks at (passed in so tests choose them).
struct SupervisionEnvironment {
  const char* notify_socket = nullptr;  // NOTIFY_SOCKET
  const char* upstart_job = nullptr;    // UPSTART_JOB
};

/// Valkey's serverIsSupervised: `mode` (no, upstart, systemd, auto) against `env`. systemd
/// (or auto with NOTIFY_SOCKET set) returns a notifier once "STATUS=..." loading was sent;
/// upstart (or auto with UPSTART_JOB set) stops the process with SIGSTOP until upstart
/// continues it, then unsets UPSTART_JOB. nullptr when not supervised (with the reason
/// logged when supervision was asked for but is not possible).
std::unique_ptr<ServiceNotifier> start_supervision(std::string_view mode,
                                                   const SupervisionEnvironment& env, Logger& log);

}  // namespace keyshift::engine
