#pragma once

#include "compat/process/child_process.hpp"
#include "engine/resp/connection.hpp"
#include "engine/util/clock.hpp"
#include "engine/util/expected.hpp"

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

// A throw-away server (keyshift serve, valkey-server, redis-server) started on a unix socket
// in a private directory, for the embedded target of bench, the probe and the dry start of
// rewrite, and the checks of verify and replay: whatever a config says about ports, files and
// daemonizing is overridden on the command line, which wins over the file.
namespace keyshift::compat {

/// Waits between two readiness checks; tests pass one that moves a ManualClock instead.
using Pause = std::function<void(std::chrono::milliseconds)>;

/// What to start and how long it may take to answer.
struct ServerLaunch {
  std::string program;                ///< a path, or a name looked up on PATH
  std::vector<std::string> leading;   ///< before the private options: "serve", a config file
  std::vector<std::string> trailing;  ///< after them, so they win: "--maxmemory", "1gb"
  std::string scratch_prefix = "keyshift-server-";  ///< of the private directory's name
  std::chrono::milliseconds timeout = std::chrono::seconds(10);
  std::chrono::milliseconds poll_every = std::chrono::milliseconds(20);
};

/// A started server that answers PING (or NOAUTH: its config loaded and asks for a
/// password). Destroying it kills the process, reaps it and removes its directory.
class ServerProcess {
 public:
  /// Starts `launch` and waits until it answers; the error says how it ended and ends with
  /// the tail of its output. `clock` measures the timeout and `pause` spaces the checks.
  static engine::Expected<std::unique_ptr<ServerProcess>, std::string> start(
      const ServerLaunch& launch, const engine::Clock& clock, const Pause& pause);
  /// The same with the system clock and a real sleep.
  static engine::Expected<std::unique_ptr<ServerProcess>, std::string> start(
      const ServerLaunch& launch);

  ~ServerProcess();
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  /// The unix socket it listens on.
  const std::string& socket() const { return m_socket; }
  /// Its private directory (working dir, log, any files it writes).
  const std::string& dir() const { return m_dir.path(); }
  /// An endpoint for RespConnection::connect.
  engine::RespEndpoint endpoint() const;
  /// The last `max_bytes` of what it printed (stdout and stderr).
  std::string log_tail(size_t max_bytes = 1500) const;
  /// Sends SIGTERM, waits for the exit and returns its exit status (-1 when killed by a
  /// signal other than the SIGTERM, or already gone).
  int stop();

  /// The options that keep a server in `dir` on `socket` and off any port, file or daemon.
  static std::vector<std::string> private_options(const std::string& dir,
                                                  const std::string& socket);

 private:
  explicit ServerProcess(const std::string& prefix) : m_dir(prefix) {}

  pid_t m_pid = -1;
  ScratchDir m_dir;  // removed once the destructor has reaped the process
  std::string m_socket;
  std::string m_log;
};

}  // namespace keyshift::compat
