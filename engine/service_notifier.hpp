#pragma once

#include <string_view>

namespace keyshift::engine {

/// Where the engine tells a service manager how it is doing; the host installs one when the
/// process is supervised (`supervised` in the config), so the engine stays free of systemd.
class ServiceNotifier {
 public:
  virtual ~ServiceNotifier() = default;
  /// Sends one sd_notify(3)-style message such as "READY=1" or "STATUS=...".
  virtual void notify(std::string_view message) = 0;
  /// What INFO's process_supervised prints: "systemd", "upstart".
  virtual std::string_view supervisor() const = 0;
};

}  // namespace keyshift::engine
