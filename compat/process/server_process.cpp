#include "compat/process/server_process.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace keyshift::compat {
namespace {

namespace fs = std::filesystem;
using engine::Unexpected;

/// The exit status of a reaped child: its code, or -1 for a signal.
int exit_code(int status) {
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

std::vector<std::string> ServerProcess::private_options(const std::string& dir,
                                                        const std::string& socket) {
  return {"--port",       "0",  "--unixsocket", socket, "--dir",        dir,
          "--logfile",    "",   "--pidfile",    "",     "--save",       "",
          "--appendonly", "no", "--daemonize",  "no",   "--supervised", "no"};
}

engine::Expected<std::unique_ptr<ServerProcess>, std::string> ServerProcess::start(
    const ServerLaunch& launch) {
  engine::SystemClock clock;
  return start(launch, clock,
               [](std::chrono::milliseconds ms) { std::this_thread::sleep_for(ms); });
}

engine::Expected<std::unique_ptr<ServerProcess>, std::string> ServerProcess::start(
    const ServerLaunch& launch, const engine::Clock& clock, const Pause& pause) {
  std::string program = find_program(launch.program);
  if (program.empty()) {
    return Unexpected{launch.program + ": not found"};
  }
  std::unique_ptr<ServerProcess> server(new ServerProcess(launch.scratch_prefix));
  if (server->dir().empty()) {
    return Unexpected{fmt::format("cannot create a temp directory: {}", std::strerror(errno))};
  }
  server->m_socket = server->dir() + "/server.sock";
  server->m_log = server->dir() + "/server.log";

  std::vector<std::string> argv{launch.program};
  argv.insert(argv.end(), launch.leading.begin(), launch.leading.end());
  for (std::string& o : private_options(server->dir(), server->m_socket)) {
    argv.push_back(std::move(o));
  }
  argv.insert(argv.end(), launch.trailing.begin(), launch.trailing.end());

  int log_fd = ::open(server->m_log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (log_fd < 0) {
    return Unexpected{fmt::format("cannot create {}: {}", server->m_log, std::strerror(errno))};
  }
  server->m_pid = ::fork();
  if (server->m_pid < 0) {
    int err = errno;
    ::close(log_fd);
    return Unexpected{fmt::format("fork: {}", std::strerror(err))};
  }
  if (server->m_pid == 0) {
    exec_child(program, argv, log_fd);
  }
  ::close(log_fd);

  int64_t deadline_us = clock.monotonic_us() + launch.timeout.count() * 1000;
  engine::RespEndpoint endpoint = server->endpoint();
  while (true) {
    int status = 0;
    if (::waitpid(server->m_pid, &status, WNOHANG) == server->m_pid) {
      server->m_pid = -1;
      return Unexpected{
          fmt::format("exited with status {}: {}", exit_code(status), server->log_tail())};
    }
    if (fs::exists(server->m_socket)) {
      auto conn = engine::RespConnection::connect(endpoint, std::chrono::milliseconds(2000));
      if (conn) {
        // NOAUTH is an answer too: the config loaded and its password is enforced.
        auto pong = conn->call({"PING"});
        if (pong && (!pong->is_error() || pong->str.starts_with("NOAUTH"))) {
          return server;
        }
      }
    }
    if (clock.monotonic_us() >= deadline_us) {
      return Unexpected{fmt::format("did not answer within {} ms: {}", launch.timeout.count(),
                                    server->log_tail())};
    }
    pause(launch.poll_every);
  }
}

ServerProcess::~ServerProcess() {
  if (m_pid > 0) {
    ::kill(m_pid, SIGKILL);
    int status = 0;
    while (::waitpid(m_pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
}

engine::RespEndpoint ServerProcess::endpoint() const {
  engine::RespEndpoint endpoint;
  endpoint.unix_path = m_socket;
  return endpoint;
}

std::string ServerProcess::log_tail(size_t max_bytes) const {
  std::ifstream in(m_log, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  std::string text = s.str();
  return text.size() > max_bytes ? "..." + text.substr(text.size() - max_bytes) : text;
}

int ServerProcess::stop() {
  if (m_pid <= 0) {
    return -1;
  }
  ::kill(m_pid, SIGTERM);
  int status = 0;
  while (::waitpid(m_pid, &status, 0) < 0 && errno == EINTR) {
  }
  m_pid = -1;
  return exit_code(status);
}

}  // namespace keyshift::compat
