#include "compat/process/child_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

namespace keyshift::compat {

namespace fs = std::filesystem;

ScratchDir::ScratchDir(const std::string& prefix) {
  std::string pattern = (fs::temp_directory_path() / (prefix + "XXXXXX")).string();
  if (::mkdtemp(pattern.data()) != nullptr) {
    m_path = pattern;
  }
}

ScratchDir::~ScratchDir() {
  if (!m_path.empty()) {
    std::error_code ec;
    fs::remove_all(m_path, ec);
  }
}

void exec_child(const std::string& program, const std::vector<std::string>& argv, int output_fd) {
  int devnull = ::open("/dev/null", O_RDONLY);
  ::dup2(devnull, 0);
  ::dup2(output_fd, 1);
  ::dup2(output_fd, 2);
  std::vector<char*> args;
  for (const std::string& a : argv) {
    args.push_back(const_cast<char*>(a.c_str()));
  }
  args.push_back(nullptr);
  ::execv(program.c_str(), args.data());
  ::_exit(127);
}

std::string find_program(const std::string& program) {
  if (program.find('/') != std::string::npos) {
    return ::access(program.c_str(), X_OK) == 0 ? program : std::string();
  }
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
  dirs += ":/usr/sbin:/sbin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) {
      end = dirs.size();
    }
    std::string candidate = dirs.substr(start, end - start) + "/" + program;
    if (end > start && ::access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
    start = end + 1;
  }
  return {};
}

ProcessResult run_process(const std::vector<std::string>& argv, std::chrono::milliseconds timeout) {
  ProcessResult result;
  std::string program = find_program(argv.at(0));
  if (program.empty()) {
    result.output = argv[0] + ": not found";
    return result;
  }
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
    result.output = std::strerror(errno);
    return result;
  }
  pid_t pid = ::fork();
  if (pid < 0) {
    result.output = std::strerror(errno);
    ::close(pipe_fds[0]);
    ::close(pipe_fds[1]);
    return result;
  }
  if (pid == 0) {
    exec_child(program, argv, pipe_fds[1]);
  }
  ::close(pipe_fds[1]);
  auto deadline = std::chrono::steady_clock::now() + timeout;
  char buffer[4096];
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      ::kill(pid, SIGKILL);
      result.timed_out = true;
      break;
    }
    struct pollfd pfd {
      pipe_fds[0], POLLIN, 0
    };
    int ready = ::poll(&pfd, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) {
      continue;
    }
    if (ready <= 0) {
      continue;
    }
    ssize_t n = ::read(pipe_fds[0], buffer, sizeof(buffer));
    if (n <= 0) {
      break;
    }
    result.output.append(buffer, static_cast<size_t>(n));
  }
  ::close(pipe_fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!result.timed_out && WIFEXITED(status)) {
    result.status = WEXITSTATUS(status);
  }
  return result;
}

}  // namespace keyshift::compat
