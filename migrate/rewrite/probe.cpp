#include "migrate/rewrite/probe.hpp"

#include "engine/resp/connection.hpp"
#include "engine/util/strings.hpp"
#include "migrate/rewrite/validate.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

namespace keyshift::migrate {
namespace {

namespace fs = std::filesystem;
using engine::Unexpected;

engine::Expected<ProbeResult, std::string> ask(engine::RespConnection& conn) {
  ProbeResult result;
  auto config = conn.call({"CONFIG", "GET", "*"});
  if (!config) {
    return Unexpected{config.error()};
  }
  if (config->is_error()) {
    return Unexpected{fmt::format("{}: CONFIG GET *: {}", conn.endpoint().describe(), config->str)};
  }
  const auto& items = config->elements;
  for (size_t i = 0; i + 1 < items.size(); i += 2) {
    result.directives.insert(items[i].str);
  }
  auto commands = conn.call({"COMMAND", "LIST"});
  if (commands && !commands->is_error()) {
    for (const auto& name : commands->elements) {
      result.commands.insert(engine::to_upper(name.str));
    }
  }
  auto info = conn.call({"INFO", "server"});
  if (info && !info->is_error()) {
    std::string name = "redis";
    std::string version;
    std::string valkey_version;
    std::istringstream lines(info->str);
    for (std::string line; std::getline(lines, line);) {
      if (!line.empty() && line.back() == '\r') {
        line.pop_back();
      }
      if (line.starts_with("server_name:")) {
        name = line.substr(12);
      } else if (line.starts_with("valkey_version:")) {
        valkey_version = line.substr(15);
      } else if (line.starts_with("redis_version:")) {
        version = line.substr(14);
      }
    }
    // Valkey reports redis_version:7.2.4 for old clients; its own version is valkey_version.
    result.server = name + " " + (valkey_version.empty() ? version : valkey_version);
  }
  if (result.directives.empty()) {
    return Unexpected{fmt::format("{}: CONFIG GET * listed nothing", conn.endpoint().describe())};
  }
  return result;
}

// A child server: started with its output in a log file, stopped and reaped on destruction.
class Child {
 public:
  Child(const std::vector<std::string>& argv, const std::string& log) {
    std::string program = find_program(argv.at(0));
    if (program.empty()) {
      m_error = argv[0] + ": not found";
      return;
    }
    m_pid = ::fork();
    if (m_pid < 0) {
      m_error = std::strerror(errno);
      return;
    }
    if (m_pid == 0) {
      exec_child(program, argv, ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600));
    }
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child() {
    if (m_pid > 0 && !m_exited) {
      ::kill(m_pid, SIGKILL);
      int status = 0;
      ::waitpid(m_pid, &status, 0);
    }
  }
  const std::string& error() const { return m_error; }
  /// True once the process has exited (then `status` holds its exit code).
  bool exited() {
    if (m_exited || m_pid <= 0) {
      return true;
    }
    int status = 0;
    if (::waitpid(m_pid, &status, WNOHANG) == m_pid) {
      m_exited = true;
      m_status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    }
    return m_exited;
  }
  int status() const { return m_status; }

 private:
  pid_t m_pid = -1;
  bool m_exited = false;
  int m_status = -1;
  std::string m_error;
};

std::string read_log(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  std::string text = s.str();
  return text.size() > 1500 ? "..." + text.substr(text.size() - 1500) : text;
}

// Starts the server and waits until its socket answers PING; the connection or the reason.
engine::Expected<engine::RespConnection, std::string> start_and_connect(
    Child& child, const std::string& socket, const std::string& log,
    std::chrono::milliseconds timeout) {
  if (!child.error().empty()) {
    return Unexpected{child.error()};
  }
  auto deadline = std::chrono::steady_clock::now() + timeout;
  engine::RespEndpoint endpoint;
  endpoint.unix_path = socket;
  while (std::chrono::steady_clock::now() < deadline) {
    if (child.exited()) {
      return Unexpected{fmt::format("exited with status {}: {}", child.status(), read_log(log))};
    }
    if (fs::exists(socket)) {
      auto conn = engine::RespConnection::connect(endpoint, std::chrono::milliseconds(2000));
      if (conn) {
        // NOAUTH is an answer too: the config loaded and its password (requirepass, or a
        // default user with one) is enforced; the child is killed when it goes out of scope.
        auto pong = conn->call({"PING"});
        if (pong && (!pong->is_error() || pong->str.starts_with("NOAUTH"))) {
          return std::move(*conn);
        }
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return Unexpected{fmt::format("did not answer within {} ms: {}", timeout.count(), read_log(log))};
}

std::vector<std::string> scratch_options(const std::string& dir, const std::string& socket) {
  return {"--port",       "0",  "--unixsocket", socket, "--dir",        dir,
          "--logfile",    "",   "--pidfile",    "",     "--save",       "",
          "--appendonly", "no", "--daemonize",  "no",   "--supervised", "no"};
}

}  // namespace

bool is_probe_url(const std::string& target) {
  return target.find("://") != std::string::npos;
}

engine::Expected<ProbeResult, std::string> probe_url(const std::string& url) {
  auto endpoint = engine::parse_redis_url(url);
  if (!endpoint) {
    return Unexpected{endpoint.error()};
  }
  auto conn = engine::RespConnection::connect(*endpoint);
  if (!conn) {
    return Unexpected{conn.error()};
  }
  return ask(*conn);
}

engine::Expected<ProbeResult, std::string> probe_binary(const std::string& binary) {
  ScratchDir dir("keyshift-probe-");
  if (dir.path().empty()) {
    return Unexpected{std::string("cannot create a temp directory")};
  }
  std::string socket = dir.path() + "/probe.sock";
  std::string log = dir.path() + "/probe.log";
  std::vector<std::string> argv{binary};
  for (std::string& o : scratch_options(dir.path(), socket)) {
    argv.push_back(std::move(o));
  }
  Child child(argv, log);
  auto conn = start_and_connect(child, socket, log, std::chrono::seconds(10));
  if (!conn) {
    return Unexpected{fmt::format("{}: {}", binary, conn.error())};
  }
  auto result = ask(*conn);
  (void)conn->call({"SHUTDOWN", "NOSAVE"});
  return result;
}

std::optional<std::string> dry_start(const std::string& binary, const std::string& config,
                                     std::chrono::milliseconds timeout) {
  ScratchDir dir("keyshift-probe-");
  if (dir.path().empty()) {
    return std::string("cannot create a temp directory");
  }
  std::string socket = dir.path() + "/check.sock";
  std::string log = dir.path() + "/check.log";
  std::vector<std::string> argv{binary, config};
  for (std::string& o : scratch_options(dir.path(), socket)) {
    argv.push_back(std::move(o));
  }
  Child child(argv, log);
  auto conn = start_and_connect(child, socket, log, timeout);
  if (!conn) {
    return fmt::format("{} {}: {}", binary, config, conn.error());
  }
  (void)conn->call({"SHUTDOWN", "NOSAVE"});
  return std::nullopt;
}

}  // namespace keyshift::migrate
