#include "engine/persistence/snapshots.hpp"

#include "engine/engine.hpp"
#include "engine/persistence/aof.hpp"
#include "engine/persistence/rdb_writer.hpp"
#include "engine/util/atomic_file.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <sstream>

namespace keyshift::engine {

namespace {

// After a failed background save, Valkey waits this long before a rule may try again.
constexpr int64_t k_retry_after_error_s = 5;

}  // namespace

std::vector<std::pair<int64_t, int64_t>> parse_save_rules(const std::string& text) {
  std::vector<std::pair<int64_t, int64_t>> rules;
  std::istringstream in(text);
  int64_t seconds = 0;
  int64_t changes = 0;
  while (in >> seconds >> changes) {
    rules.emplace_back(seconds, changes);
  }
  return rules;
}

void Snapshots::note_load(uint64_t loaded, uint64_t expired) {
  m_loaded = loaded;
  m_load_expired = expired;
}

std::string Snapshots::path_of(const Engine& engine) {
  return (std::filesystem::path(engine.config().dir) / engine.config().dbfilename).string();
}

namespace {
constexpr int k_notice = 2;   // LogLevel::notice
constexpr int k_warning = 3;  // LogLevel::warning
}  // namespace

void Snapshots::log(int level, const std::string& line) const {
  if (m_log) {
    m_log(level, line);
  }
}

Expected<uint64_t, std::string> Snapshots::save(Engine& engine) {
  if (m_child > 0) {
    return Unexpected{std::string("Background save already in progress")};
  }
  int64_t now_s = engine.clock().now_ms() / 1000;
  auto stats = save_rdb(engine, path_of(engine), snapshot_write_options(engine));
  if (!stats) {
    log(k_warning, "Failed saving the DB " + path_of(engine) + ": " + stats.error());
    return Unexpected{stats.error()};
  }
  m_dirty = 0;
  m_last_save_s = now_s;
  m_last_try_s = now_s;
  m_last_bgsave_ok = true;
  ++m_saves;
  return stats->keys;
}

Expected<int, std::string> Snapshots::start_background(Engine& engine) {
  if (m_child > 0) {
    return Unexpected{std::string("Background save already in progress")};
  }
  int64_t now_s = engine.clock().now_ms() / 1000;
  pid_t pid = ::fork();
  if (pid < 0) {
    m_last_bgsave_ok = false;
    return Unexpected{std::string("Background save failed: cannot fork")};
  }
  if (pid == 0) {
    // The child has a copy-on-write snapshot of the dataset; it writes and exits at once.
    auto stats = save_rdb(engine, path_of(engine), snapshot_write_options(engine));
    if (!stats) {
      log(k_warning, "Failed saving the DB " + path_of(engine) + ": " + stats.error());
    }
    ::_exit(stats ? 0 : 1);
  }
  m_child = pid;
  m_child_start_s = now_s;
  m_last_try_s = now_s;
  m_dirty_at_fork = m_dirty;
  return static_cast<int>(pid);
}

void Snapshots::finish(bool ok, int64_t now_s, uint64_t dirty_at_start) {
  m_last_bgsave_ok = ok;
  m_last_bgsave_duration_s = now_s - m_child_start_s;
  m_child = -1;
  if (ok) {
    // Changes made while the child wrote are not in the file.
    m_dirty = m_dirty >= dirty_at_start ? m_dirty - dirty_at_start : 0;
    m_last_save_s = now_s;
    ++m_saves;
  }
}

void Snapshots::wait_for_child(Engine& engine) {
  if (m_child <= 0) {
    return;
  }
  int status = 0;
  ::waitpid(m_child, &status, 0);
  finish(WIFEXITED(status) && WEXITSTATUS(status) == 0, engine.clock().now_ms() / 1000,
         m_dirty_at_fork);
}

std::optional<std::string> Snapshots::save_for_shutdown(Engine& engine, bool save, bool nosave) {
  if (m_child > 0) {
    // Its snapshot would be older than the one about to be written (or unwanted).
    ::kill(m_child, SIGUSR1);
    int status = 0;
    ::waitpid(m_child, &status, 0);
    ::unlink(atomic_temp_path(path_of(engine), m_child).c_str());
    m_child = -1;
  }
  if (nosave || (!save && parse_save_rules(engine.config().save).empty())) {
    return std::nullopt;
  }
  auto saved = this->save(engine);
  if (!saved) {
    return saved.error();
  }
  return std::nullopt;
}

void Snapshots::cron(Engine& engine) {
  int64_t now_s = engine.clock().now_ms() / 1000;
  if (m_child > 0) {
    int status = 0;
    pid_t done = ::waitpid(m_child, &status, WNOHANG);
    if (done == m_child) {
      bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
      if (!ok) {
        // A child killed mid-write leaves its temporary file; as Valkey, the parent removes it.
        ::unlink(atomic_temp_path(path_of(engine), m_child).c_str());
      }
      log(ok ? k_notice : k_warning,
          ok ? "Background saving terminated with success"
          : WIFSIGNALED(status)
              ? "Background saving terminated by signal " + std::to_string(WTERMSIG(status))
              : std::string("Background saving error"));
      finish(ok, now_s, m_dirty_at_fork);
    }
    return;
  }
  // One child at a time, as Valkey's hasActiveChildProcess(): a rewrite of the AOF delays
  // the save rules.
  if (m_dirty == 0 || engine.aof().rewrite_in_progress()) {
    return;
  }
  for (const auto& [seconds, changes] : parse_save_rules(engine.config().save)) {
    bool due = m_dirty >= static_cast<uint64_t>(changes) && now_s - m_last_save_s > seconds;
    bool may_retry = m_last_bgsave_ok || now_s - m_last_try_s > k_retry_after_error_s;
    if (due && may_retry) {
      start_background(engine);
      return;
    }
  }
}

RdbWriteOptions snapshot_write_options(Engine& engine) {
  RdbWriteOptions o;
  o.compress = engine.config().rdbcompression;
  o.checksum = engine.config().rdbchecksum;
  // Hash field TTLs exist only from RDB 12 (Redis 7.4's format): keyshift's own snapshot
  // keeps them rather than refuse to save; `rdb convert` makes Valkey 8 files.
  for (int i = 0; i < engine.db_count(); ++i) {
    if (engine.db(i).field_expiry_registrations() > 0) {
      o.version = 12;
    }
  }
  return o;
}

}  // namespace keyshift::engine
