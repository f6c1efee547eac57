#pragma once

#include "engine/persistence/rdb_writer.hpp"
#include "engine/util/expected.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace keyshift::engine {

class Engine;

/// How the server's own snapshots are written: rdbcompression and rdbchecksum from the
/// config, RDB 12 when some hash has field TTLs (else the default version).
RdbWriteOptions snapshot_write_options(Engine& engine);

/// One engine's RDB snapshots (Valkey's SAVE/BGSAVE state): the change counter, the last
/// save, the background child, and the `save` rules that start a background save.
class Snapshots {
 public:
  explicit Snapshots(int64_t start_s) : m_last_save_s(start_s), m_last_try_s(start_s) {}

  /// Where failed and finished saves are logged (the server's log; level as LogLevel's).
  void set_log_sink(std::function<void(int level, std::string_view line)> sink) {
    m_log = std::move(sink);
  }

  /// A write changed the dataset (Valkey's server.dirty).
  void note_changes(uint64_t n = 1) {
    m_dirty += n;
    m_total_changes += n;
  }
  /// Changes since start, never reset (whether a command changed the dataset).
  uint64_t total_changes() const { return m_total_changes; }
  /// Changes since the last successful save.
  uint64_t dirty() const { return m_dirty; }
  /// Unix seconds of the last successful save (start-up counts as one).
  int64_t last_save_s() const { return m_last_save_s; }
  bool last_bgsave_ok() const { return m_last_bgsave_ok; }
  bool bgsave_in_progress() const { return m_child > 0; }
  /// Seconds the running background save has taken, or -1.
  int64_t current_bgsave_s(int64_t now_s) const {
    return m_child > 0 ? now_s - m_child_start_s : -1;
  }
  int64_t last_bgsave_duration_s() const { return m_last_bgsave_duration_s; }
  uint64_t saves() const { return m_saves; }
  uint64_t last_load_keys_loaded() const { return m_loaded; }
  uint64_t last_load_keys_expired() const { return m_load_expired; }
  /// Records what loading at start-up (or DEBUG RELOAD) did.
  void note_load(uint64_t loaded, uint64_t expired);

  /// The snapshot file: dir/dbfilename.
  static std::string path_of(const Engine& engine);
  /// SAVE: writes the snapshot now; the error is Valkey's reply text without "ERR ".
  Expected<uint64_t, std::string> save(Engine& engine);
  /// BGSAVE: forks a child that writes the snapshot while the engine keeps serving.
  Expected<int, std::string> start_background(Engine& engine);
  /// Reaps a finished child and starts a save a `save` rule asks for; called from cron.
  void cron(Engine& engine);
  /// Waits for a running child to finish.
  void wait_for_child(Engine& engine);
  /// What SHUTDOWN and SIGTERM do before exiting, as Valkey: stop a background save, then
  /// save when asked (`save`) or when save rules exist, unless `nosave`. Returns the error
  /// of a failed save.
  std::optional<std::string> save_for_shutdown(Engine& engine, bool save, bool nosave);

 private:
  void finish(bool ok, int64_t now_s, uint64_t dirty_at_start);
  void log(int level, const std::string& line) const;

  std::function<void(int, std::string_view)> m_log;

  uint64_t m_dirty = 0;
  uint64_t m_total_changes = 0;
  int64_t m_last_save_s;
  int64_t m_last_try_s;
  bool m_last_bgsave_ok = true;
  int m_child = -1;
  int64_t m_child_start_s = 0;
  uint64_t m_dirty_at_fork = 0;
  int64_t m_last_bgsave_duration_s = -1;
  uint64_t m_saves = 0;
  uint64_t m_loaded = 0;
  uint64_t m_load_expired = 0;
};

/// Parses the `save` setting ("3600 1 300 100", or "" for none) into (seconds, changes).
std::vector<std::pair<int64_t, int64_t>> parse_save_rules(const std::string& text);

}  // namespace keyshift::engine
