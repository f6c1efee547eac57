#include "engine/util/crash_point.hpp"

#include <signal.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>

namespace keyshift::engine {
namespace {

struct CrashBudget {
  int64_t bytes_left = -1;  // -1: no byte crash point
  int64_t syncs_left = -1;  // -1: no sync crash point
};

int64_t env_count(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') {
    return -1;
  }
  char* end = nullptr;
  long long n = std::strtoll(v, &end, 10);
  return (*end == '\0' && n >= 0) ? n : -1;
}

// The one piece of process state here, on purpose: a crash ends the process, so its
// countdown is the process's, read once from the environment.
CrashBudget& budget() {
  static CrashBudget b{env_count("KEYSHIFT_TEST_KILL_AFTER_BYTES"),
                       env_count("KEYSHIFT_TEST_KILL_AT_SYNC")};
  return b;
}

[[noreturn]] void die() {
  ::kill(::getpid(), SIGKILL);
  ::_exit(137);  // not reached: SIGKILL cannot be caught
}

}  // namespace

ssize_t counted_write(int fd, const void* data, size_t size) {
  CrashBudget& b = budget();
  if (b.bytes_left < 0) {
    return ::write(fd, data, size);
  }
  if (static_cast<uint64_t>(b.bytes_left) >= size) {
    ssize_t n = ::write(fd, data, size);
    if (n > 0) {
      b.bytes_left -= n;
    }
    return n;
  }
  if (b.bytes_left > 0) {
    [[maybe_unused]] ssize_t n = ::write(fd, data, static_cast<size_t>(b.bytes_left));
  }
  die();
}

void sync_point() {
  CrashBudget& b = budget();
  if (b.syncs_left < 0) {
    return;
  }
  if (--b.syncs_left <= 0) {
    die();
  }
}

}  // namespace keyshift::engine
