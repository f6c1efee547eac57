#pragma once

#include "engine/persistence/aof_reader.hpp"
#include "engine/propagation.hpp"
#include "engine/util/expected.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace keyshift::engine {

class Engine;

/// What loading the AOF at start-up did.
struct AofLoadReport {
  bool found = false;                // an AOF existed (otherwise the dataset starts empty)
  uint64_t commands = 0;             // commands replayed
  uint64_t keys_loaded = 0;          // keys of the RDB base
  std::vector<std::string> notices;  // lines for the log (upgrade, truncation, files read)
};

/// Replays the AOF at `path` (as read_aof finds it) into `engine` through one session, as
/// loading at start does: the base's keys, then every command; counts go into `report`. The
/// error names the file and byte offset (an unknown command included).
Expected<AofSummary, std::string> replay_aof(Engine& engine, const std::string& path,
                                             const AofReadOptions& options, AofLoadReport& report);

/// One engine's append-only file, as Valkey 8's multi-part AOF: dir/appenddirname holds a
/// base (an RDB file; RESTORE commands with aof-use-rdb-preamble no), incr files of RESP commands
/// and the manifest naming them. Receives the engine's propagated writes, buffers them and writes
/// the buffer before replies go out (Engine::before_replies), fsyncing as appendfsync says (always:
/// before the replies; everysec: on a background thread at most once a second; no: never).
/// BGREWRITEAOF forks like BGSAVE: the child writes a new base from its copy of the dataset while
/// the parent appends to a new incr file; when the child is done the manifest names the new base
/// and incr file and the old ones are deleted.
class Aof final : public PropagationSink {
 public:
  explicit Aof(Engine& engine);
  ~Aof() override;
  Aof(const Aof&) = delete;
  Aof& operator=(const Aof&) = delete;

  /// The AOF directory (dir/appenddirname).
  std::string directory() const;
  /// Loads the AOF into the engine (appendonly yes at start: the AOF wins over the RDB):
  /// upgrades an old single-file AOF into the directory first, then reads the manifest's
  /// files; a partial command at the end of the last file is cut off when aof-load-truncated
  /// is yes. The error names the file and byte offset.
  Expected<AofLoadReport, std::string> load();
  /// After loading, with appendonly yes: creates the directory, a base when there is no
  /// AOF yet, opens the last incr file (or a new one) and writes the manifest
  /// (Valkey's aofOpenIfNeededOnServerStart).
  std::optional<std::string> open_on_start();
  /// CONFIG SET appendonly yes: starts a rewrite whose base holds the dataset; writes go to
  /// a temporary incr file until it is done.
  std::optional<std::string> start();
  /// CONFIG SET appendonly no: flushes, fsyncs and closes; stops a rewrite.
  void stop();
  /// BGREWRITEAOF: starts a rewrite, or schedules one while a BGSAVE runs (the reply's
  /// words in `scheduled`). The error is Valkey's text.
  Expected<bool, std::string> rewrite_background();

  void propagate(std::span<const PropagatedCommand> unit) override;
  /// Writes the buffer (and fsyncs for always); called before replies are sent.
  void flush(bool force);
  /// Writes and fsyncs everything now (WAITAOF's local acknowledgement).
  void fsync_now();
  /// Reaps a finished rewrite, starts a scheduled or automatic one, fsyncs for everysec.
  void cron();
  /// SHUTDOWN: flush and fsync; a running rewrite is killed.
  void shutdown();

  // State for INFO persistence and WAITAOF.
  bool on() const { return m_state != State::off; }
  bool rewrite_in_progress() const { return m_child > 0; }
  bool rewrite_scheduled() const { return m_rewrite_scheduled; }
  int64_t last_rewrite_time_s() const { return m_last_rewrite_duration_s; }
  int64_t current_rewrite_time_s(int64_t now_s) const;
  bool last_rewrite_ok() const { return m_last_rewrite_ok; }
  uint64_t rewrites() const { return m_rewrites; }
  uint64_t rewrites_consecutive_failures() const { return m_consecutive_failures; }
  bool last_write_ok() const { return m_last_write_ok; }
  uint64_t current_size() const { return m_current_size; }
  uint64_t base_size() const { return m_rewrite_base_size; }
  uint64_t buffer_length() const { return m_buf.size(); }
  uint64_t delayed_fsync() const { return m_delayed_fsync; }
  bool fsync_in_progress() const;
  /// The engine's propagation offset up to which every unit is fsynced.
  uint64_t fsynced_offset() const;

 private:
  enum class State { off, on, wait_rewrite };
  class FsyncWorker;

  std::string path(const std::string& name) const;
  std::string manifest_name() const;
  std::string base_name(int64_t seq) const;
  std::string incr_name(int64_t seq) const;
  std::string temp_incr_name() const;
  /// Removes what a killed server or rewrite child left in the AOF directory: the child's
  /// base files and their temporaries, the fork's incr file, and base/incr files a crash
  /// between their rename and the manifest's left unlisted (the manifest is the truth).
  void remove_crash_leftovers();
  std::optional<std::string> persist_manifest();
  std::optional<std::string> open_incr(const std::string& name);
  void close_fd();
  std::optional<std::string> start_rewrite();
  void rewrite_done(bool ok);
  void delete_history();
  void fsync_written();

  Engine& m_engine;
  State m_state = State::off;
  AofManifest m_manifest;
  int64_t m_base_seq = 0;
  int64_t m_incr_seq = 0;
  int m_fd = -1;
  int m_selected_db = -1;
  std::string m_buf;
  uint64_t m_buf_offset = 0;      // propagation offset of the last unit in m_buf
  uint64_t m_written_offset = 0;  // ... of the last unit written to the file
  uint64_t m_synced_offset = 0;   // ... of the last unit fsynced on this thread
  uint64_t m_incr_size = 0;       // bytes in the open incr file
  uint64_t m_current_size = 0;    // base + incr files
  uint64_t m_rewrite_base_size = 0;
  int64_t m_last_fsync_ms = 0;
  int64_t m_flush_postponed_since_ms = 0;  // everysec: a write waiting for the fsync
  uint64_t m_delayed_fsync = 0;
  bool m_last_write_ok = true;
  // Rewrite child.
  int m_child = -1;
  int64_t m_child_start_s = 0;
  std::string m_child_temp;
  bool m_rewrite_scheduled = false;
  bool m_last_rewrite_ok = true;
  int64_t m_last_rewrite_duration_s = -1;
  uint64_t m_rewrites = 0;
  uint64_t m_consecutive_failures = 0;
  int64_t m_retry_after_ms = 0;
  std::unique_ptr<FsyncWorker> m_worker;
};

}  // namespace keyshift::engine
