// Valkey 8.0.1's multi-part AOF (src/aof.c): names, manifest handling, load, flush/fsync
// policy and background rewrite, with keyshift's RDB writer for the base.
#include "engine/persistence/aof.hpp"

#include "engine/engine.hpp"
#include "engine/persistence/rdb_load.hpp"
#include "engine/persistence/rdb_writer.hpp"
#include "engine/persistence/snapshots.hpp"
#include "engine/util/atomic_file.hpp"
#include "engine/util/crash_point.hpp"
#include "engine/util/mapped_file.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <thread>

namespace keyshift::engine {
namespace {

namespace fs = std::filesystem;

// After a failed rewrite Valkey waits this long before an automatic one tries again.
constexpr int64_t k_rewrite_retry_ms = 5000;

uint64_t file_size(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

bool write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      return false;
    }
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

// The base is RDB 10 (Redis 7.0's), which Valkey 8 and every Redis from 7.0 load, so an
// AOF directory keyshift wrote can go back to any of them; field TTLs need 12.
RdbWriteOptions base_write_options(Engine& engine) {
  RdbWriteOptions o = snapshot_write_options(engine);
  if (o.version != 12) {
    o.version = 10;
  }
  return o;
}

// A RESP base (aof-use-rdb-preamble no): SELECT per database and one RESTORE per key, its
// DUMP payload at the base's RDB version and its TTL absolute, so Valkey and Redis from
// 7.0 load it as they load any AOF.
Expected<uint64_t, std::string> write_resp_base(Engine& engine, const std::string& target,
                                                const RdbWriteOptions& options) {
  auto file = AtomicFile::create(target, 0600);  // the dataset: its owner's only
  if (!file) {
    return Unexpected{file.error().message()};
  }
  int64_t now = engine.clock().now_ms();
  std::string buf;
  std::string error;
  uint64_t keys = 0;
  for (int i = 0; i < engine.db_count() && error.empty(); ++i) {
    Db& db = engine.db(i);
    if (db.size() == 0) {
      continue;
    }
    encode_command(std::vector<std::string>{"SELECT", std::to_string(i)}, buf);
    db.for_each([&](const Entry* e) {
      if (!error.empty() || (e->has_expire() && e->expire_ms() <= now)) {
        return;
      }
      auto payload = dump_payload(*e, options);
      if (!payload) {
        error = "key '" + std::string(e->key()) + "': " + payload.error();
        return;
      }
      std::vector<std::string> argv{"RESTORE", std::string(e->key()),
                                    e->has_expire() ? std::to_string(e->expire_ms()) : "0",
                                    std::move(*payload)};
      if (e->has_expire()) {
        argv.emplace_back("ABSTTL");
      }
      encode_command(argv, buf);
      ++keys;
      if (buf.size() >= (1u << 20)) {
        if (auto err = file->write(buf)) {
          error = err->message();
        }
        buf.clear();
      }
    });
  }
  if (error.empty()) {
    if (auto err = file->write(buf)) {
      error = err->message();
    }
  }
  if (error.empty()) {
    if (auto err = file->commit()) {
      error = err->message();
    }
  }
  if (!error.empty()) {
    return Unexpected{error};
  }
  return keys;
}

// Writes the base of the dataset to `target` in the format aof-use-rdb-preamble asks for.
std::optional<std::string> write_base(Engine& engine, const std::string& target) {
  RdbWriteOptions options = base_write_options(engine);
  if (engine.config().aof_use_rdb_preamble) {
    auto saved = save_rdb(engine, target, options);
    return saved ? std::nullopt : std::optional<std::string>(saved.error());
  }
  auto saved = write_resp_base(engine, target, options);
  return saved ? std::nullopt : std::optional<std::string>(saved.error());
}

// Replays an AOF into the engine through one in-process session, as Valkey's fake AOF
// client: replies are dropped, MULTI/EXEC queue as for any client.
class Replayer final : public AofVisitor {
 public:
  Replayer(Engine& engine, AofLoadReport& report)
      : m_engine(engine), m_session(engine.open_session(nullptr)), m_report(report) {
    m_session.authenticated = true;
  }
  ~Replayer() override { m_engine.close_session(m_session); }
  Replayer(const Replayer&) = delete;
  Replayer& operator=(const Replayer&) = delete;

  Expected<uint64_t, RdbError> on_rdb_preamble(std::string_view bytes,
                                               const AofFileInfo& file) override {
    auto stats = load_rdb(m_engine, bytes);
    if (!stats) {
      return Unexpected{stats.error()};
    }
    m_report.keys_loaded += stats->keys_loaded;
    m_report.notices.push_back(fmt::format("Reading RDB base file on AOF loading... {} ({} keys)",
                                           file.name, stats->keys_loaded));
    return stats->summary.end_offset;
  }

  bool on_command(const AofCommand& c) override {
    if (m_engine.registry().find(c.argv[0]) == nullptr) {
      m_error = fmt::format("Unknown command '{}' reading the append only file {} at byte {}",
                            std::string(c.argv[0].substr(0, 128)), c.file->name, c.offset);
      return false;
    }
    m_engine.execute(m_session, c.argv);
    m_session.out.clear();
    ++m_report.commands;
    return true;
  }

  const std::string& error() const { return m_error; }

 private:
  Engine& m_engine;
  Session& m_session;
  AofLoadReport& m_report;
  std::string m_error;
};

}  // namespace

/// fdatasync off the engine's thread (Valkey's bio AOF fsync job): one job at a time, on a
/// duplicate of the descriptor so the engine may close or switch files meanwhile.
class Aof::FsyncWorker {
 public:
  FsyncWorker() : m_thread([this] { run(); }) {}
  ~FsyncWorker() {
    {
      std::lock_guard lock(m_mutex);
      m_stop = true;
    }
    m_cv.notify_one();
    m_thread.join();
  }
  FsyncWorker(const FsyncWorker&) = delete;
  FsyncWorker& operator=(const FsyncWorker&) = delete;

  bool busy() const { return m_busy.load(); }
  uint64_t done() const { return m_done.load(); }
  /// Starts an fsync of `fd` that covers units up to `offset`; false while one runs.
  bool submit(int fd, uint64_t offset) {
    if (m_busy.load()) {
      return false;
    }
    int copy = ::dup(fd);
    if (copy < 0) {
      return false;
    }
    {
      std::lock_guard lock(m_mutex);
      m_fd = copy;
      m_target = offset;
      m_busy = true;
    }
    m_cv.notify_one();
    return true;
  }
  /// Waits for a running job.
  void drain() {
    std::unique_lock lock(m_mutex);
    m_idle.wait(lock, [this] { return !m_busy.load(); });
  }

 private:
  void run() {
    std::unique_lock lock(m_mutex);
    while (true) {
      m_cv.wait(lock, [this] { return m_stop || m_fd >= 0; });
      if (m_fd >= 0) {
        int fd = m_fd;
        uint64_t target = m_target;
        m_fd = -1;
        lock.unlock();
        bool ok = ::fdatasync(fd) == 0;
        ::close(fd);
        lock.lock();
        if (ok && target > m_done.load()) {
          m_done = target;
        }
        m_busy = false;
        m_idle.notify_all();
        continue;
      }
      if (m_stop) {
        return;
      }
    }
  }

  std::mutex m_mutex;
  std::condition_variable m_cv;
  std::condition_variable m_idle;
  int m_fd = -1;
  uint64_t m_target = 0;
  bool m_stop = false;
  std::atomic<bool> m_busy{false};
  std::atomic<uint64_t> m_done{0};
  std::thread m_thread;
};

Aof::Aof(Engine& engine) : m_engine(engine) {}

Aof::~Aof() {
  if (m_worker) {
    m_worker->drain();
  }
  close_fd();
}

std::string Aof::directory() const {
  return (fs::path(m_engine.config().dir) / m_engine.config().appenddirname).string();
}

std::string Aof::path(const std::string& name) const {
  return (fs::path(directory()) / name).string();
}

std::string Aof::manifest_name() const {
  return m_engine.config().appendfilename + ".manifest";
}

std::string Aof::base_name(int64_t seq) const {
  return fmt::format("{}.{}.base.{}", m_engine.config().appendfilename, seq,
                     m_engine.config().aof_use_rdb_preamble ? "rdb" : "aof");
}

std::string Aof::incr_name(int64_t seq) const {
  return fmt::format("{}.{}.incr.aof", m_engine.config().appendfilename, seq);
}

std::string Aof::temp_incr_name() const {
  return fmt::format("temp-{}.incr", m_engine.config().appendfilename);
}

int64_t Aof::current_rewrite_time_s(int64_t now_s) const {
  return m_child > 0 ? now_s - m_child_start_s : -1;
}

bool Aof::fsync_in_progress() const {
  return m_worker && m_worker->busy();
}

uint64_t Aof::fsynced_offset() const {
  uint64_t synced = m_synced_offset;
  if (m_worker && m_worker->done() > synced) {
    synced = m_worker->done();
  }
  return synced;
}

std::optional<std::string> Aof::persist_manifest() {
  if (auto err = write_file_atomically(path(manifest_name()), format_aof_manifest(m_manifest))) {
    return "can't persist the AOF manifest: " + err->message();
  }
  return std::nullopt;
}

std::optional<std::string> Aof::open_incr(const std::string& name) {
  int fd = ::open(path(name).c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) {
    return fmt::format("Can't open the append-only file {}: {}", name, std::strerror(errno));
  }
  close_fd();
  m_fd = fd;
  m_incr_size = file_size(path(name));
  // A new file starts without a selected database, so the next unit names its own.
  m_selected_db = -1;
  return std::nullopt;
}

void Aof::close_fd() {
  if (m_fd >= 0) {
    if (m_worker) {
      m_worker->drain();
    }
    ::close(m_fd);
    m_fd = -1;
  }
}

Expected<AofSummary, std::string> replay_aof(Engine& engine, const std::string& path,
                                             const AofReadOptions& options, AofLoadReport& report) {
  Replayer replayer(engine, report);
  auto summary = read_aof(path, replayer, options);
  if (!replayer.error().empty()) {
    return Unexpected{replayer.error()};
  }
  if (!summary) {
    return Unexpected{"Bad AOF: " + summary.error().describe()};
  }
  return *summary;
}

Expected<AofLoadReport, std::string> Aof::load() {
  AofLoadReport report;
  const EngineConfig& cfg = m_engine.config();
  fs::path old_style = fs::path(cfg.dir) / cfg.appendfilename;
  fs::path dir(directory());
  fs::path manifest = dir / manifest_name();
  std::error_code ec;
  // An AOF from before multi-part files: moved into the directory as its base.
  if (fs::is_regular_file(old_style, ec) && !fs::exists(manifest, ec)) {
    fs::create_directories(dir, ec);
    if (ec) {
      return Unexpected{
          fmt::format("Can't open or create append-only dir {}: {}", dir.string(), ec.message())};
    }
    m_manifest = AofManifest{};
    m_manifest.entries.push_back({cfg.appendfilename, 1, AofFileType::base});
    if (auto err = persist_manifest()) {
      return Unexpected{*err};
    }
    fs::rename(old_style, dir / cfg.appendfilename, ec);
    if (ec) {
      return Unexpected{fmt::format("Error trying to move the old AOF file {} into dir {}: {}",
                                    old_style.string(), dir.string(), ec.message())};
    }
    report.notices.push_back(
        fmt::format("Successfully migrated an old-style AOF file ({}) into the AOF directory ({}).",
                    cfg.appendfilename, dir.string()));
  }
  if (!fs::exists(manifest, ec)) {
    return report;
  }
  auto text = MappedFile::open(manifest.string());
  if (!text) {
    return Unexpected{text.error().message()};
  }
  auto parsed = parse_aof_manifest(text->data(), manifest.string());
  if (!parsed) {
    return Unexpected{"Reading the AOF manifest: " + parsed.error().describe()};
  }
  m_manifest = std::move(*parsed);
  for (const AofManifestEntry& e : m_manifest.entries) {
    if (e.type == AofFileType::base) {
      m_base_seq = e.seq;
    } else if (e.type == AofFileType::incr) {
      m_incr_seq = e.seq;
    }
  }
  if (m_manifest.base() == nullptr && m_manifest.incrs().empty()) {
    return report;
  }
  report.found = true;
  // Replayed commands are not written again (DEBUG LOADAOF loads while the AOF is on).
  bool attached = on();
  if (attached) {
    m_engine.remove_propagation_sink(this);
  }
  struct Reattach {
    Aof& aof;
    bool attached;
    ~Reattach() {
      if (attached) {
        aof.m_engine.add_propagation_sink(&aof);
      }
    }
  } reattach{*this, attached};
  AofReadOptions options;
  options.appendfilename = cfg.appendfilename;
  options.allow_truncated = cfg.aof_load_truncated;
  auto summary = replay_aof(m_engine, manifest.string(), options, report);
  if (!summary) {
    return Unexpected{summary.error()};
  }
  if (summary->truncated) {
    report.notices.push_back(fmt::format("!!! Warning: short read while loading the AOF file {}!!!",
                                         summary->truncated_file));
    report.notices.push_back(fmt::format("!!! Truncating the AOF {} at offset {} !!!",
                                         summary->truncated_file, summary->truncated_at));
    if (::truncate(summary->truncated_file.c_str(), static_cast<off_t>(summary->truncated_at)) !=
        0) {
      return Unexpected{fmt::format("Error truncating the AOF file {}: {}", summary->truncated_file,
                                    std::strerror(errno))};
    }
    report.notices.push_back(fmt::format(
        "AOF {} loaded anyway because aof-load-truncated is enabled", summary->truncated_file));
  }
  m_current_size = 0;
  for (const AofFileInfo& f : summary->files) {
    m_current_size += file_size(f.path);
    if (f.type == AofFileType::base) {
      m_rewrite_base_size = file_size(f.path);
    }
  }
  report.notices.push_back(
      fmt::format("DB loaded from append only file: {} commands, {} keys "
                  "from the base",
                  report.commands, report.keys_loaded));
  return report;
}

void Aof::remove_crash_leftovers() {
  const std::string& own = m_engine.config().appendfilename;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(directory(), ec)) {
    std::string name = e.path().filename().string();
    bool listed = std::any_of(m_manifest.entries.begin(), m_manifest.entries.end(),
                              [&](const AofManifestEntry& m) { return m.name == name; });
    bool ours =
        name.starts_with(own + ".") &&
        (name.ends_with(".base.rdb") || name.ends_with(".base.aof") || name.ends_with(".incr.aof"));
    bool child_file = false;
    if (name.starts_with("temp-rewriteaof-bg-") || name.starts_with(".temp-rewriteaof-bg-")) {
      // Named after the child that wrote it: "temp-rewriteaof-bg-<pid>.aof[.tmp-<pid>]".
      size_t at = name.find("bg-") + 3;
      child_file = process_is_gone(static_cast<pid_t>(std::atol(name.c_str() + at)));
    }
    if ((ours && !listed) || child_file || name == temp_incr_name()) {
      fs::remove(e.path(), ec);
    }
  }
}

std::optional<std::string> Aof::open_on_start() {
  std::error_code ec;
  fs::create_directories(directory(), ec);
  if (ec) {
    return fmt::format("Can't open or create append-only dir {}: {}", directory(), ec.message());
  }
  remove_crash_leftovers();
  if (m_manifest.base() == nullptr && m_manifest.incrs().empty()) {
    // A base for the dataset at start (empty, as the RDB is not loaded with AOF on).
    ++m_base_seq;
    std::string name = base_name(m_base_seq);
    if (auto err = write_base(m_engine, path(name))) {
      return "Can't create the AOF base file " + name + ": " + *err;
    }
    m_manifest.entries.push_back({name, m_base_seq, AofFileType::base});
    m_rewrite_base_size = file_size(path(name));
    m_current_size = m_rewrite_base_size;
  }
  auto incrs = m_manifest.incrs();
  std::string incr;
  if (incrs.empty()) {
    ++m_incr_seq;
    incr = incr_name(m_incr_seq);
    m_manifest.entries.push_back({incr, m_incr_seq, AofFileType::incr});
  } else {
    incr = incrs.back()->name;
  }
  if (auto err = open_incr(incr)) {
    return err;
  }
  if (auto err = persist_manifest()) {
    return err;
  }
  m_state = State::on;
  m_written_offset = m_synced_offset = m_buf_offset = m_engine.propagation_offset();
  m_last_fsync_ms = m_engine.clock().now_ms();
  m_engine.add_propagation_sink(this);
  return std::nullopt;
}

std::optional<std::string> Aof::start() {
  if (m_state != State::off) {
    return std::nullopt;
  }
  m_state = State::wait_rewrite;
  m_engine.add_propagation_sink(this);
  m_written_offset = m_synced_offset = m_buf_offset = m_engine.propagation_offset();
  if (m_engine.snapshots().bgsave_in_progress()) {
    m_rewrite_scheduled = true;
    return std::nullopt;
  }
  if (auto err = start_rewrite()) {
    stop();
    return err;
  }
  return std::nullopt;
}

void Aof::stop() {
  if (m_state == State::off) {
    return;
  }
  flush(true);
  if (m_fd >= 0 && ::fdatasync(m_fd) == 0) {
    m_synced_offset = m_written_offset;
  }
  close_fd();
  if (m_child > 0) {
    ::kill(m_child, SIGUSR1);
    int status = 0;
    ::waitpid(m_child, &status, 0);
    ::unlink(m_child_temp.c_str());
    m_child = -1;
  }
  m_engine.remove_propagation_sink(this);
  m_state = State::off;
  m_rewrite_scheduled = false;
  m_buf.clear();
}

Expected<bool, std::string> Aof::rewrite_background() {
  if (m_child > 0) {
    return Unexpected{std::string("ERR Background append only file rewriting already in progress")};
  }
  if (m_engine.snapshots().bgsave_in_progress()) {
    m_rewrite_scheduled = true;
    return true;
  }
  if (auto err = start_rewrite()) {
    return Unexpected{"ERR " + *err};
  }
  return false;
}

std::optional<std::string> Aof::start_rewrite() {
  std::error_code ec;
  fs::create_directories(directory(), ec);
  if (ec) {
    return fmt::format("Can't open or create append-only dir {}: {}", directory(), ec.message());
  }
  // Writes from the fork on go to a new incr file; the child's base holds the rest.
  flush(true);
  if (m_state == State::on) {
    ++m_incr_seq;
    std::string incr = incr_name(m_incr_seq);
    if (auto err = open_incr(incr)) {
      --m_incr_seq;
      return err;
    }
    m_manifest.entries.push_back({incr, m_incr_seq, AofFileType::incr});
    if (auto err = persist_manifest()) {
      return err;
    }
  } else if (m_state == State::wait_rewrite) {
    // Everything before the fork is in the child's base; only later writes belong in the
    // incr file that will follow it.
    m_buf.clear();
    ::unlink(path(temp_incr_name()).c_str());
    if (auto err = open_incr(temp_incr_name())) {
      return err;
    }
  }
  m_rewrite_scheduled = false;
  int64_t now_s = m_engine.clock().now_ms() / 1000;
  pid_t pid = ::fork();
  if (pid < 0) {
    m_last_rewrite_ok = false;
    return std::string("Can't rewrite append only file in background: fork: ") +
           std::strerror(errno);
  }
  std::string temp = path(fmt::format("temp-rewriteaof-bg-{}.aof", pid == 0 ? ::getpid() : pid));
  if (pid == 0) {
    ::_exit(write_base(m_engine, temp) ? 1 : 0);
  }
  m_child = pid;
  m_child_temp = temp;
  m_child_start_s = now_s;
  return std::nullopt;
}

void Aof::rewrite_done(bool ok) {
  int64_t now_s = m_engine.clock().now_ms() / 1000;
  m_last_rewrite_duration_s = now_s - m_child_start_s;
  m_child = -1;
  if (!ok || m_state == State::off) {
    ::unlink(m_child_temp.c_str());
    if (!ok) {
      m_last_rewrite_ok = false;
      ++m_consecutive_failures;
      m_retry_after_ms = m_engine.clock().now_ms() + k_rewrite_retry_ms;
      if (m_state == State::wait_rewrite) {
        m_rewrite_scheduled = true;
      }
    }
    return;
  }
  flush(true);
  AofManifest next;
  int64_t base_seq = m_base_seq + 1;
  std::string base = base_name(base_seq);
  std::error_code ec;
  sync_point();
  fs::rename(m_child_temp, path(base), ec);
  if (ec) {
    ::unlink(m_child_temp.c_str());
    m_last_rewrite_ok = false;
    ++m_consecutive_failures;
    return;
  }
  // The old base and every incr file but the one opened at the fork become history.
  std::string live_incr;
  if (m_state == State::wait_rewrite) {
    ++m_incr_seq;
    live_incr = incr_name(m_incr_seq);
    sync_point();
    fs::rename(path(temp_incr_name()), path(live_incr), ec);
  } else {
    auto incrs = m_manifest.incrs();
    live_incr = incrs.empty() ? std::string() : incrs.back()->name;
  }
  for (const AofManifestEntry& e : m_manifest.entries) {
    if (e.type == AofFileType::history || (e.type == AofFileType::base) ||
        (e.type == AofFileType::incr && e.name != live_incr)) {
      next.entries.push_back({e.name, e.seq, AofFileType::history});
    }
  }
  next.entries.push_back({base, base_seq, AofFileType::base});
  next.entries.push_back({live_incr, m_incr_seq, AofFileType::incr});
  m_manifest = std::move(next);
  m_base_seq = base_seq;
  if (auto err = persist_manifest()) {
    m_last_rewrite_ok = false;
    ++m_consecutive_failures;
    return;
  }
  m_state = State::on;
  m_last_rewrite_ok = true;
  m_consecutive_failures = 0;
  ++m_rewrites;
  m_rewrite_base_size = file_size(path(base));
  m_current_size = m_rewrite_base_size + m_incr_size;
  delete_history();
}

void Aof::delete_history() {
  if (m_engine.config().aof_disable_auto_gc) {
    return;
  }
  bool removed = false;
  std::erase_if(m_manifest.entries, [&](const AofManifestEntry& e) {
    if (e.type != AofFileType::history) {
      return false;
    }
    ::unlink(path(e.name).c_str());
    removed = true;
    return true;
  });
  if (removed) {
    persist_manifest();
  }
}

void Aof::propagate(std::span<const PropagatedCommand> unit) {
  if (m_state == State::off) {
    return;
  }
  encode_propagated(unit, m_selected_db, m_buf);
  m_buf_offset = m_engine.propagation_offset();
}

void Aof::fsync_written() {
  if (m_fd < 0 || m_synced_offset >= m_written_offset) {
    return;
  }
  if (::fdatasync(m_fd) == 0) {
    m_synced_offset = m_written_offset;
    m_last_fsync_ms = m_engine.clock().now_ms();
  }
}

void Aof::flush(bool force) {
  if (m_state == State::off || m_fd < 0) {
    return;
  }
  const std::string& policy = m_engine.config().appendfsync;
  if (!m_buf.empty() && !force && policy == "everysec" && m_worker && m_worker->busy()) {
    // On Linux a write waits for a running fdatasync of the same file: as Valkey, hold the
    // buffer back while the background fsync runs, for up to two seconds.
    int64_t now = m_engine.clock().now_ms();
    if (m_flush_postponed_since_ms == 0) {
      m_flush_postponed_since_ms = now;
      return;
    }
    if (now - m_flush_postponed_since_ms < 2000) {
      return;
    }
    ++m_delayed_fsync;
  }
  if (!m_buf.empty()) {
    m_flush_postponed_since_ms = 0;
    if (!write_all(m_fd, m_buf)) {
      int err = errno;
      if (policy == "always") {
        // The replies must not go out for writes that are not on disk, and the dataset
        // cannot be rolled back: stop, as Valkey does.
        std::fprintf(stderr,
                     "Can't recover from AOF write error when the AOF fsync policy is 'always'"
                     " (%s). Exiting...\n",
                     std::strerror(err));
        std::_Exit(1);
      }
      m_last_write_ok = false;
      // Whatever part was written stays; drop it and retry the rest next time.
      [[maybe_unused]] int rc = ::ftruncate(m_fd, static_cast<off_t>(m_incr_size));
      return;
    }
    m_last_write_ok = true;
    m_incr_size += m_buf.size();
    m_current_size += m_buf.size();
    m_written_offset = m_buf_offset;
    m_buf.clear();
    if (m_buf.capacity() > 4u << 20) {
      m_buf.shrink_to_fit();
    }
  }
  if (fsynced_offset() >= m_written_offset) {
    return;
  }
  if (m_engine.config().no_appendfsync_on_rewrite &&
      (m_child > 0 || m_engine.snapshots().bgsave_in_progress())) {
    return;
  }
  if (policy == "always") {
    fsync_written();
  } else if (policy == "everysec") {
    int64_t now = m_engine.clock().now_ms();
    if (force || now - m_last_fsync_ms >= 1000) {
      if (!m_worker) {
        m_worker = std::make_unique<FsyncWorker>();
      }
      if (m_worker->submit(m_fd, m_written_offset)) {
        m_last_fsync_ms = now;
      }
    }
  }
}

void Aof::fsync_now() {
  flush(true);
  fsync_written();
}

void Aof::cron() {
  if (m_child > 0) {
    int status = 0;
    if (::waitpid(m_child, &status, WNOHANG) == m_child) {
      rewrite_done(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
  }
  if (m_state == State::off) {
    return;
  }
  bool child_active = m_child > 0 || m_engine.snapshots().bgsave_in_progress();
  if (m_rewrite_scheduled && !child_active && m_engine.clock().now_ms() >= m_retry_after_ms) {
    start_rewrite();
  } else if (m_state == State::on && !child_active &&
             m_engine.config().auto_aof_rewrite_percentage > 0 &&
             m_current_size > m_engine.config().auto_aof_rewrite_min_size &&
             m_engine.clock().now_ms() >= m_retry_after_ms) {
    uint64_t base = m_rewrite_base_size != 0 ? m_rewrite_base_size : 1;
    uint64_t ratio = m_current_size * 100 / base;
    if (ratio >= 100 &&
        ratio - 100 >= static_cast<uint64_t>(m_engine.config().auto_aof_rewrite_percentage)) {
      start_rewrite();
    }
  }
  flush(false);
}

void Aof::shutdown() {
  if (m_child > 0) {
    ::kill(m_child, SIGUSR1);
    int status = 0;
    ::waitpid(m_child, &status, 0);
    ::unlink(m_child_temp.c_str());
    m_child = -1;
  }
  if (m_state == State::off) {
    return;
  }
  flush(true);
  if (m_worker) {
    m_worker->drain();
  }
  fsync_written();
}

}  // namespace keyshift::engine
