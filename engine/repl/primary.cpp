#include "engine/repl/primary.hpp"

#include "engine/commands/registry.hpp"
#include "engine/engine.hpp"
#include "engine/persistence/rdb_writer.hpp"
#include "engine/persistence/snapshots.hpp"
#include "engine/repl/replication_state.hpp"
#include "engine/resp/reply_builder.hpp"
#include "engine/server/config_table.hpp"
#include "engine/util/atomic_file.hpp"
#include "engine/util/net_address.hpp"
#include "engine/util/strconv.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>

namespace keyshift::engine {
namespace {

constexpr int k_notice = 2;
constexpr int k_warning = 3;
// How much of a snapshot file goes into a replica's output at a time.
constexpr size_t k_payload_chunk = 4u << 20;

int64_t int_setting(const Engine& engine, std::string_view name) {
  int64_t v = 0;
  const DirectiveSpec* spec = find_directive(name);
  return spec != nullptr && parse_i64(directive_value(*spec, engine.config()), v) ? v : 0;
}

bool yes_setting(const Engine& engine, std::string_view name) {
  const DirectiveSpec* spec = find_directive(name);
  return spec != nullptr && directive_value(*spec, engine.config()) == "yes";
}

std::string random_hex(Engine& engine, size_t n) {
  static constexpr char k_hex[] = "0123456789abcdef";
  std::string id(n, '0');
  for (char& c : id) {
    c = k_hex[engine.rng()() & 15];
  }
  return id;
}

}  // namespace

ReplicationPrimary::ReplicationPrimary(Engine& engine) : m_engine(engine) {}

ReplicationPrimary::~ReplicationPrimary() {
  shutdown();
  for (auto& [id, p] : m_peers) {
    close_payload(p);
  }
}

void ReplicationPrimary::log(int level, const std::string& line) const {
  if (m_log) {
    m_log(level, line);
  }
}

ReplicaPeer& ReplicationPrimary::peer(Session& s) {
  auto [it, added] = m_peers.try_emplace(s.id());
  if (added) {
    it->second.session_id = s.id();
  }
  return it->second;
}

const ReplicaPeer* ReplicationPrimary::find(const Session& s) const {
  auto it = m_peers.find(s.id());
  return it == m_peers.end() ? nullptr : &it->second;
}

Session* ReplicationPrimary::session_of(const ReplicaPeer& p) const {
  auto it = m_engine.sessions().find(p.session_id);
  return it == m_engine.sessions().end() ? nullptr : it->second.get();
}

std::string ReplicationPrimary::replica_name(const Session& s, const ReplicaPeer& p) const {
  std::string ip = p.ip.empty() ? std::string(addr_ip(s.addr)) : p.ip;
  if (p.listening_port == 0) {
    return ip + ":<unknown-replica-port>";
  }
  return format_addr(ip, p.listening_port);
}

std::vector<const ReplicaPeer*> ReplicationPrimary::replicas() const {
  std::vector<const ReplicaPeer*> out;
  out.reserve(m_order.size());
  for (uint64_t id : m_order) {
    auto it = m_peers.find(id);
    if (it != m_peers.end()) {
      out.push_back(&it->second);
    }
  }
  return out;
}

void ReplicationPrimary::ensure_backlog() {
  if (m_backlog) {
    return;
  }
  ReplicationState& repl = m_engine.replication();
  if (!repl.is_replica()) {
    // As Valkey's syncCommand: a backlog made from scratch starts a new history, since no
    // replica can continue an older one from it. A replica's history is its primary's.
    repl.set_replid(random_hex(m_engine, 40));
    repl.clear_replid2();
  }
  m_backlog = std::make_unique<ReplBacklog>(
      static_cast<uint64_t>(std::max<int64_t>(int_setting(m_engine, "repl-backlog-size"), 1)),
      repl.offset());
  m_selected_db = -1;
  m_engine.add_propagation_sink(this);
}

void ReplicationPrimary::send(ReplicaPeer& p, std::string_view bytes) {
  Session* s = session_of(p);
  if (s == nullptr || s->has(k_session_close_asap)) {
    return;
  }
  s->out += bytes;
  if (s->host() != nullptr) {
    s->host()->wake(*s);
  }
}

void ReplicationPrimary::feed(std::string_view bytes) {
  m_backlog->append(bytes);
  m_engine.replication().advance(bytes.size());
  distribute(bytes);
}

void ReplicationPrimary::proxy(std::string_view raw) {
  // The link counts the offset itself.
  if (m_backlog) {
    m_backlog->append(raw);
    distribute(raw);
  }
}

void ReplicationPrimary::check_role() {
  ReplicationState& repl = m_engine.replication();
  if (repl.generation() != m_generation) {
    // REPLICAOF (a new primary or NO ONE): our replicas learn of the new replication ID by
    // reconnecting, and PSYNC continues them from the backlog, which stays (Valkey's
    // disconnectReplicas and shiftReplicationId). A SELECT goes ahead of what we write next.
    m_generation = repl.generation();
    drop_all();
    m_selected_db = -1;
  }
}

void ReplicationPrimary::drop_all() {
  for (uint64_t id : m_order) {
    drop(m_peers[id]);
  }
}

void ReplicationPrimary::on_full_sync_begin() {
  // Valkey's replicationAttachToNewPrimary: disconnectReplicas, freeReplicationBacklog.
  drop_all();
  shutdown();
  m_child_socket = false;
  for (uint64_t id : m_order) {
    ReplicaPeer& p = m_peers[id];
    close_payload(p);
    p.state = ReplicaState::handshake;
  }
  if (m_backlog) {
    m_engine.remove_propagation_sink(this);
    m_backlog.reset();
  }
}

void ReplicationPrimary::on_synced(bool new_history) {
  if (new_history) {
    drop_all();
  }
  ensure_backlog();
}

int ReplicationPrimary::stream_db() const {
  // A replica's snapshot goes on in the database its primary's stream has selected, which
  // the stream passed on will not SELECT again (Valkey's rsi->repl_stream_db).
  for (const auto& [id, s] : m_engine.sessions()) {
    if (s->has(k_session_primary)) {
      return s->db;
    }
  }
  return 0;
}

void ReplicationPrimary::distribute(std::string_view bytes) {
  for (uint64_t id : m_order) {
    ReplicaPeer& p = m_peers[id];
    if (p.state == ReplicaState::online && !p.stream_on_ack) {
      send(p, bytes);
    } else if (p.state == ReplicaState::wait_bgsave_end || p.state == ReplicaState::send_bulk ||
               p.stream_on_ack) {
      p.pending += bytes;
    }
  }
}

void ReplicationPrimary::propagate(std::span<const PropagatedCommand> unit) {
  // A replica's own stream is applied through Engine::call too: it is not ours to count.
  if (!m_backlog || m_engine.replication().is_replica()) {
    return;
  }
  std::string bytes;
  encode_propagated(unit, m_selected_db, bytes);
  feed(bytes);
}

void ReplicationPrimary::full_resync_reply(Session& s, ReplicaPeer& p) {
  p.state = ReplicaState::wait_bgsave_end;
  p.pending.clear();
  if (!p.old_sync) {
    ReplyBuilder(s.out, 2).simple("FULLRESYNC " + m_engine.replication().replid() + " " +
                                  std::to_string(m_child_offset));
    if (s.host() != nullptr) {
      s.host()->wake(s);
    }
  }
}

void ReplicationPrimary::sync(Session& s, bool psync, std::string_view replid, int64_t offset) {
  ReplicaPeer& p = peer(s);
  if (s.has(k_session_replica)) {
    return;  // Valkey ignores SYNC from a replica
  }
  check_role();  // before this replica joins: REPLICAOF may have run since the last cron
  log(k_notice, "Replica " + replica_name(s, p) + " asks for synchronization");
  ensure_backlog();
  const ReplicationState& repl = m_engine.replication();
  if (psync) {
    PsyncHistory h{repl.replid(),
                   repl.replid2(),
                   repl.second_offset(),
                   true,
                   m_backlog->first_byte_offset(),
                   m_backlog->histlen()};
    PsyncDecision d = decide_psync(h, replid, offset);
    if (d == PsyncDecision::partial) {
      s.set(k_session_replica);
      m_order.push_back(s.id());
      p.state = ReplicaState::online;
      p.ack_time_s = m_engine.clock().now_ms() / 1000;
      ReplyBuilder rb(s.out, 2);
      rb.simple(p.capa_psync2 ? "CONTINUE " + repl.replid() : std::string("CONTINUE"));
      std::string missing = m_backlog->copy_after(static_cast<uint64_t>(offset) - 1);
      log(k_notice, "Partial resynchronization request from " + replica_name(s, p) +
                        " accepted. Sending " + std::to_string(missing.size()) +
                        " bytes of backlog starting from offset " + std::to_string(offset) + ".");
      s.out += missing;
      ++m_sync_partial_ok;
      if (s.host() != nullptr) {
        s.host()->wake(s);
      }
      refresh_good_replicas();
      return;
    }
    if (d == PsyncDecision::full_requested) {
      log(k_notice, "Full resync requested by replica " + replica_name(s, p));
    } else {
      ++m_sync_partial_err;
      if (d == PsyncDecision::full_replid) {
        log(k_notice,
            "Partial resynchronization not accepted: Replication ID mismatch "
            "(Replica asked for '" +
                std::string(replid) + "', my replication IDs are '" + repl.replid() + "' and '" +
                repl.replid2() + "')");
      } else {
        log(k_notice, "Unable to partial resync with replica " + replica_name(s, p) +
                          " for lack of backlog (Replica request was: " + std::to_string(offset) +
                          ").");
      }
    }
  } else {
    p.old_sync = true;
  }
  ++m_sync_full;
  s.set(k_session_replica);
  m_order.push_back(s.id());
  p.state = ReplicaState::wait_bgsave_start;
  p.wait_start_s = m_engine.clock().now_ms() / 1000;
  if (m_child >= 0) {
    log(k_notice, m_child_socket
                      ? "Current BGSAVE has socket target. Waiting for next BGSAVE for SYNC"
                      : "Can't attach the replica to the current BGSAVE. Waiting for next "
                        "BGSAVE for SYNC");
  } else if (yes_setting(m_engine, "repl-diskless-sync") && p.capa_eof &&
             int_setting(m_engine, "repl-diskless-sync-delay") > 0) {
    // The child starts from cron, so replicas arriving meanwhile share it.
    log(k_notice, "Delay next BGSAVE for diskless SYNC");
  } else {
    start_child();
  }
}

void ReplicationPrimary::start_pending() {
  // Valkey's shouldStartChildReplication: the longest a replica waited against
  // repl-diskless-sync-delay, or enough of them for repl-diskless-sync-max-replicas.
  if (m_child >= 0) {
    return;
  }
  int64_t now_s = m_engine.clock().now_ms() / 1000;
  int64_t waiting = 0;
  int64_t max_idle = 0;
  for (uint64_t id : m_order) {
    const ReplicaPeer& p = m_peers[id];
    if (p.state == ReplicaState::wait_bgsave_start) {
      ++waiting;
      max_idle = std::max(max_idle, now_s - p.wait_start_s);
    }
  }
  int64_t max_replicas = int_setting(m_engine, "repl-diskless-sync-max-replicas");
  if (waiting > 0 && (!yes_setting(m_engine, "repl-diskless-sync") ||
                      (max_replicas > 0 && waiting >= max_replicas) ||
                      max_idle >= int_setting(m_engine, "repl-diskless-sync-delay"))) {
    start_child();
  }
}

void ReplicationPrimary::start_child() {
  m_child_offset = m_engine.replication().offset();
  // Force a SELECT ahead of the next command: the snapshot says nothing of a database.
  m_selected_db = -1;
  // Valkey's startBgsaveForReplication: to the sockets when every waiting replica reads
  // the `$EOF:` framing, else a file.
  bool socket_target = yes_setting(m_engine, "repl-diskless-sync");
  for (uint64_t id : m_order) {
    const ReplicaPeer& p = m_peers[id];
    if (p.state == ReplicaState::wait_bgsave_start && !p.capa_eof) {
      socket_target = false;
    }
  }
  log(k_notice, std::string("Starting BGSAVE for SYNC with target: ") +
                    (socket_target ? "replicas sockets" : "disk") + " using: normal sync");
  std::string dir = m_engine.config().dir;
  m_child_path = socket_target ? std::string()
                               : (std::filesystem::path(dir) /
                                  ("keyshift-repl-sync-" + std::to_string(::getpid()) + ".rdb"))
                                     .string();
  RdbWriteOptions opts = snapshot_write_options(m_engine);
  if (opts.version == 11) {
    opts.version = 10;  // what Redis 7.0 replicas read; Valkey's read it too
  }
  std::vector<std::pair<std::string, std::string>> aux = {
      {"repl-stream-db", std::to_string(m_engine.replication().is_replica() ? stream_db() : 0)},
      {"repl-id", m_engine.replication().replid()},
      {"repl-offset", std::to_string(m_child_offset)}};
  int pipe_fds[2] = {-1, -1};
  std::string mark;
  if (socket_target) {
    if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
      log(k_warning, "Can't save in background: pipe: " + std::string(std::strerror(errno)));
      pipe_fds[0] = pipe_fds[1] = -1;
    }
    mark = random_hex(m_engine, 40);
  }
  pid_t pid = socket_target && pipe_fds[0] < 0 ? -1 : ::fork();
  if (pid < 0) {
    if (!socket_target || pipe_fds[0] >= 0) {
      log(k_warning, "Can't save in background: fork: " + std::string(std::strerror(errno)));
    }
    for (int fd : pipe_fds) {
      if (fd >= 0) {
        ::close(fd);
      }
    }
    for (uint64_t id : m_order) {
      ReplicaPeer& p = m_peers[id];
      if (p.state == ReplicaState::wait_bgsave_start) {
        drop(p);
      }
    }
    return;
  }
  if (pid == 0) {
    if (!socket_target) {
      auto stats = save_rdb(m_engine, m_child_path, opts, aux);
      ::_exit(stats ? 0 : 1);
    }
    // Valkey's rdbSaveRioWithEOFMark: the replicas read up to the mark, so no length is
    // needed up front and nothing touches the disk.
    ::close(pipe_fds[0]);
    int fd = pipe_fds[1];
    std::string head = "$EOF:" + mark + "\r\n";
    bool ok = ::write(fd, head.data(), head.size()) == static_cast<ssize_t>(head.size()) &&
              write_rdb(m_engine, fd, opts, aux) &&
              ::write(fd, mark.data(), mark.size()) == static_cast<ssize_t>(mark.size());
    ::_exit(ok ? 0 : 1);
  }
  m_child = pid;
  m_child_socket = socket_target;
  if (socket_target) {
    ::close(pipe_fds[1]);
    ::fcntl(pipe_fds[0], F_SETFL, ::fcntl(pipe_fds[0], F_GETFL) | O_NONBLOCK);
    m_pipe = pipe_fds[0];
    m_pipe_done = false;
    log(k_notice, "Background RDB transfer started by pid " + std::to_string(pid) +
                      " to pipe through parent process");
  } else {
    log(k_notice, "Background saving started by pid " + std::to_string(pid));
  }
  for (uint64_t id : m_order) {
    ReplicaPeer& p = m_peers[id];
    Session* s = session_of(p);
    if (p.state == ReplicaState::wait_bgsave_start && s != nullptr) {
      full_resync_reply(*s, p);
      if (socket_target) {
        // Everything the pipe carries goes out as it comes (the state stays wait_bgsave
        // as in Valkey); the stream waits for the first ACK after the payload (Valkey's
        // repl_start_cmd_stream_on_ack).
        p.socket_target = true;
        p.stream_on_ack = true;
        p.ack_seen = false;
        p.trailer.clear();
      }
    }
  }
}

int ReplicationPrimary::payload_pipe() const {
  if (m_pipe < 0 || m_pipe_done) {
    return -1;
  }
  // Valkey's rdbPipeReadHandler stops reading while a replica's socket is still busy
  // with the last bytes: the slowest replica paces the child.
  for (uint64_t id : m_order) {
    const ReplicaPeer& p = m_peers.at(id);
    const Session* s = session_of(p);
    if (p.socket_target && p.state == ReplicaState::wait_bgsave_end && s != nullptr &&
        !s->has(k_session_close_asap) && s->out.size() >= k_payload_chunk) {
      return -1;
    }
  }
  return m_pipe;
}

void ReplicationPrimary::release_pipe() {
  if (m_pipe >= 0 && m_pipe_done) {
    ::close(m_pipe);
    m_pipe = -1;
  }
}

void ReplicationPrimary::end_pipe() {
  m_pipe_done = true;
  if (m_child > 0) {
    ::kill(m_child, SIGUSR1);  // reaped by cron, which then drops what is left
  }
}

void ReplicationPrimary::read_pipe() {
  if (payload_pipe() < 0) {
    return;
  }
  std::vector<Session*> to;
  for (uint64_t id : m_order) {
    ReplicaPeer& p = m_peers[id];
    Session* s = session_of(p);
    if (p.socket_target && p.state == ReplicaState::wait_bgsave_end && s != nullptr &&
        !s->has(k_session_close_asap)) {
      to.push_back(s);
    }
  }
  if (to.empty()) {
    log(k_warning, "Diskless rdb transfer, last replica dropped, killing fork child.");
    end_pipe();
    return;
  }
  char buf[64 * 1024];
  size_t moved = 0;
  while (moved < k_payload_chunk) {
    ssize_t n = ::read(m_pipe, buf, sizeof buf);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      break;
    }
    if (n < 0) {
      log(k_warning, "Diskless rdb transfer, read error sending DB to replicas: " +
                         std::string(std::strerror(errno)));
      for (uint64_t id : m_order) {
        if (m_peers[id].socket_target && m_peers[id].state == ReplicaState::wait_bgsave_end) {
          drop(m_peers[id]);
        }
      }
      end_pipe();
      return;
    }
    if (n == 0) {
      // The child closed its end; it is reaped and its status read by cron.
      m_pipe_done = true;
      log(k_notice, "Diskless rdb transfer, done reading from pipe, " + std::to_string(to.size()) +
                        " replicas still up.");
      break;
    }
    for (Session* s : to) {
      s->out.append(buf, static_cast<size_t>(n));
      // The payload is not held against the replica's output limit.
      s->payload_end_output = s->net_output_bytes + s->out.size();
    }
    moved += static_cast<size_t>(n);
  }
  for (Session* s : to) {
    if (s->host() != nullptr) {
      s->host()->wake(*s);
    }
  }
}

void ReplicationPrimary::child_done(bool ok) {
  m_child = -1;
  if (m_child_socket) {
    m_child_socket = false;
    int64_t now_s = m_engine.clock().now_ms() / 1000;
    for (uint64_t id : m_order) {
      ReplicaPeer& p = m_peers[id];
      if (!p.socket_target || p.state != ReplicaState::wait_bgsave_end) {
        continue;
      }
      p.socket_target = false;
      Session* s = session_of(p);
      if (!ok || s == nullptr) {
        log(k_warning, "SYNC failed. BGSAVE child returned an error");
        drop(p);
        continue;
      }
      // Online now, but the stream waits for its first ACK.
      p.state = ReplicaState::online;
      p.ack_time_s = now_s;
      log(k_notice, "Streamed RDB transfer with replica " + replica_name(*s, p) +
                        " succeeded (socket). Waiting for REPLCONF ACK from replica to "
                        "enable streaming");
    }
    refresh_good_replicas();
    return;
  }
  bool eof_ok = yes_setting(m_engine, "repl-diskless-sync");
  for (uint64_t id : std::vector<uint64_t>(m_order)) {
    ReplicaPeer& p = m_peers[id];
    if (p.state != ReplicaState::wait_bgsave_end) {
      continue;
    }
    Session* s = session_of(p);
    // Each replica reads the file through its own descriptor, which keeps it after unlink.
    int fd = ok && s != nullptr ? ::open(m_child_path.c_str(), O_RDONLY | O_CLOEXEC) : -1;
    struct stat st {};
    if (fd < 0 || ::fstat(fd, &st) != 0 || st.st_size <= 0) {
      if (fd >= 0) {
        ::close(fd);
      }
      log(k_warning, "SYNC failed. BGSAVE child returned an error");
      drop(p);
      continue;
    }
    p.payload_fd = fd;
    p.payload_left = static_cast<uint64_t>(st.st_size);
    p.stream_on_ack = eof_ok && p.capa_eof;
    p.ack_seen = false;
    if (p.stream_on_ack) {
      // The replica reads until the mark comes back: Valkey's diskless framing.
      p.trailer = random_hex(m_engine, 40);
      send(p, "$EOF:" + p.trailer + "\r\n");
    } else {
      p.trailer.clear();
      send(p, "$" + std::to_string(st.st_size) + "\r\n");
    }
    p.state = ReplicaState::send_bulk;
  }
  ::unlink(m_child_path.c_str());
  pump();
  refresh_good_replicas();
}

void ReplicationPrimary::close_payload(ReplicaPeer& p) {
  if (p.payload_fd >= 0) {
    ::close(p.payload_fd);
    p.payload_fd = -1;
  }
}

bool ReplicationPrimary::wants_pump() const {
  for (uint64_t id : m_order) {
    const ReplicaPeer& p = m_peers.at(id);
    if (p.state == ReplicaState::send_bulk) {
      const Session* s = session_of(p);
      if (s != nullptr && s->out.size() < k_payload_chunk) {
        return true;
      }
    }
  }
  return false;
}

void ReplicationPrimary::pump() {
  read_pipe();
  int64_t now_s = m_engine.clock().now_ms() / 1000;
  for (uint64_t id : std::vector<uint64_t>(m_order)) {
    ReplicaPeer& p = m_peers[id];
    if (p.state != ReplicaState::send_bulk) {
      continue;
    }
    Session* s = session_of(p);
    if (s == nullptr || s->has(k_session_close_asap)) {
      close_payload(p);
      continue;
    }
    // A chunk at a time, when the last one has mostly left: the whole file never sits in
    // memory, and the loop never blocks on it for long.
    if (s->out.size() >= k_payload_chunk) {
      continue;
    }
    size_t want = static_cast<size_t>(std::min<uint64_t>(p.payload_left, k_payload_chunk));
    size_t at = s->out.size();
    s->out.resize(at + want);
    ssize_t got = ::read(p.payload_fd, s->out.data() + at, want);
    if (got <= 0) {
      s->out.resize(at);
      log(k_warning, "Read error sending DB to replica: " + std::string(std::strerror(errno)));
      close_payload(p);
      drop(p);
      continue;
    }
    s->out.resize(at + static_cast<size_t>(got));
    p.payload_left -= static_cast<uint64_t>(got);
    // The payload is not held against the replica's output limit, only what follows it.
    s->payload_end_output = s->net_output_bytes + s->out.size();
    if (p.payload_left == 0) {
      close_payload(p);
      s->out += p.trailer;
      s->payload_end_output = s->net_output_bytes + s->out.size();
      if (!p.stream_on_ack) {
        s->out += p.pending;
        p.pending.clear();
        p.pending.shrink_to_fit();
      }
      p.state = ReplicaState::online;
      p.ack_time_s = now_s;
      log(k_notice, "Synchronization with replica " + replica_name(*s, p) + " succeeded");
      refresh_good_replicas();
    }
    if (s->host() != nullptr) {
      s->host()->wake(*s);
    }
  }
}

void ReplicationPrimary::drop(ReplicaPeer& p) {
  if (Session* s = session_of(p)) {
    s->set(k_session_close_asap);
    if (s->host() != nullptr) {
      s->host()->wake(*s);
    }
  }
}

void ReplicationPrimary::on_ack(Session& s, uint64_t offset, std::optional<uint64_t> aof_offset) {
  auto it = m_peers.find(s.id());
  if (it == m_peers.end() || !s.has(k_session_replica)) {
    return;
  }
  ReplicaPeer& p = it->second;
  p.ack_offset = std::max(p.ack_offset, offset);
  if (aof_offset) {
    p.aof_offset = std::max(p.aof_offset, *aof_offset);
  }
  p.ack_time_s = m_engine.clock().now_ms() / 1000;
  if (p.stream_on_ack && p.state == ReplicaState::online) {
    // Sent by before_replies: whatever this command adds to the replica's output is dropped.
    p.ack_seen = true;
    m_release_held = true;
  }
  wake_waiters();
}

void ReplicationPrimary::forget(const Session& s) {
  auto it = m_peers.find(s.id());
  if (it == m_peers.end()) {
    return;
  }
  if (s.has(k_session_replica)) {
    log(k_notice, "Connection with replica " + replica_name(s, it->second) + " lost.");
  }
  close_payload(it->second);
  m_peers.erase(it);
  std::erase(m_order, s.id());
  std::erase_if(m_waiters, [&](const Waiter& w) { return w.session_id == s.id(); });
  refresh_good_replicas();
}

int64_t ReplicationPrimary::acked(uint64_t offset, bool aof) const {
  int64_t n = 0;
  for (uint64_t id : m_order) {
    const ReplicaPeer& p = m_peers.at(id);
    if (p.state == ReplicaState::online && (aof ? p.aof_offset : p.ack_offset) >= offset) {
      ++n;
    }
  }
  return n;
}

void ReplicationPrimary::add_waiter(uint64_t session_id, int64_t needed, uint64_t offset,
                                    bool aof) {
  m_waiters.push_back({session_id, needed, offset, aof});
}

void ReplicationPrimary::wake_waiters() {
  std::vector<uint64_t> ready;
  std::erase_if(m_waiters, [&](const Waiter& w) {
    auto it = m_engine.sessions().find(w.session_id);
    const Session* s = it == m_engine.sessions().end() ? nullptr : it->second.get();
    if (s == nullptr || !s->has(k_session_blocked) || s->block.cmd == nullptr ||
        (s->block.cmd->full_name != "wait" && s->block.cmd->full_name != "waitaof")) {
      return true;  // timed out or gone
    }
    if (acked(w.offset, w.aof) >= w.needed) {
      ready.push_back(w.session_id);
      return true;
    }
    return false;
  });
  for (uint64_t id : ready) {
    // Ends the wait as its timeout would, with the counts of now.
    m_engine.unblock_client(id, false);
  }
}

void ReplicationPrimary::refresh_settings() {
  m_min_replicas = int_setting(m_engine, "min-replicas-to-write");
  m_max_lag = int_setting(m_engine, "min-replicas-max-lag");
  refresh_good_replicas();
}

bool ReplicationPrimary::enough_good_replicas() const {
  // Valkey's checkGoodReplicasStatus.
  return m_min_replicas == 0 || m_max_lag == 0 || m_good_replicas >= m_min_replicas ||
         m_engine.replication().is_replica();
}

void ReplicationPrimary::refresh_good_replicas() {
  int64_t max_lag = m_max_lag;
  int64_t now_s = m_engine.clock().now_ms() / 1000;
  int64_t good = 0;
  for (uint64_t id : m_order) {
    const ReplicaPeer& p = m_peers[id];
    if (p.state == ReplicaState::online && now_s - p.ack_time_s <= max_lag) {
      ++good;
    }
  }
  m_good_replicas = good;
}

void ReplicationPrimary::before_replies() {
  pump();
  if (m_release_held) {
    m_release_held = false;
    for (uint64_t id : m_order) {
      ReplicaPeer& p = m_peers[id];
      if (p.stream_on_ack && p.ack_seen) {
        p.stream_on_ack = false;
        std::string held = std::move(p.pending);
        p.pending.clear();
        send(p, held);
      }
    }
  }
  if (!m_get_acks) {
    return;
  }
  m_get_acks = false;
  if (!m_backlog || m_order.empty() || m_engine.replication().is_replica()) {
    return;
  }
  std::string bytes;
  std::string argv[] = {"REPLCONF", "GETACK", "*"};
  encode_command(argv, bytes);
  feed(bytes);
}

void ReplicationPrimary::cron() {
  // A diskless child may be gone while its last bytes still sit in the pipe.
  if (m_child > 0 && (!m_child_socket || m_pipe_done)) {
    int status = 0;
    if (::waitpid(m_child, &status, WNOHANG) == m_child) {
      bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
      log(ok ? k_notice : k_warning,
          ok ? "Background saving terminated with success" : "Background saving error");
      child_done(ok);
    }
  }
  check_role();
  ReplicationState& repl = m_engine.replication();
  start_pending();
  if (m_backlog) {
    m_backlog->resize(
        static_cast<uint64_t>(std::max<int64_t>(int_setting(m_engine, "repl-backlog-size"), 1)));
  }
  int64_t now_s = m_engine.clock().now_ms() / 1000;
  if (now_s == m_last_cron_s) {
    return;
  }
  m_last_cron_s = now_s;
  // A replica silent for repl-timeout is gone (Valkey's "Disconnecting timedout replica").
  int64_t timeout_s = std::max<int64_t>(int_setting(m_engine, "repl-timeout"), 1);
  for (uint64_t id : m_order) {
    ReplicaPeer& p = m_peers[id];
    Session* s = session_of(p);
    // SYNC's replicas send no ACKs.
    if (p.state == ReplicaState::online && !p.old_sync && s != nullptr &&
        !s->has(k_session_close_asap) && now_s - p.ack_time_s > timeout_s) {
      log(k_warning, "Disconnecting timedout replica (streaming sync): " + replica_name(*s, p));
      drop(p);
    }
  }
  int64_t period = std::max<int64_t>(int_setting(m_engine, "repl-ping-replica-period"), 1);
  // A replica passes its primary's PINGs on instead.
  if (!m_order.empty() && m_backlog && !repl.is_replica() && now_s - m_last_ping_s >= period) {
    m_last_ping_s = now_s;
    std::string bytes;
    std::string argv[] = {"PING"};
    encode_command(argv, bytes);
    feed(bytes);
  }
  // Replicas waiting for their payload get a newline a second, so they see a live link.
  for (uint64_t id : m_order) {
    ReplicaPeer& p = m_peers[id];
    if (p.state == ReplicaState::wait_bgsave_start ||
        (p.state == ReplicaState::wait_bgsave_end && !p.socket_target)) {
      send(p, "\n");
    }
  }
  refresh_good_replicas();
}

void ReplicationPrimary::shutdown() {
  if (m_child > 0) {
    ::kill(m_child, SIGUSR1);
    int status = 0;
    ::waitpid(m_child, &status, 0);
    if (!m_child_socket) {
      ::unlink(m_child_path.c_str());
      ::unlink(atomic_temp_path(m_child_path, m_child).c_str());
    }
    m_child = -1;
  }
  if (m_pipe >= 0) {
    ::close(m_pipe);
    m_pipe = -1;
  }
}

}  // namespace keyshift::engine
