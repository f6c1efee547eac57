// MIGRATE: moves (or with COPY copies) keys to another server by sending it RESTORE with
// the DUMP payload of each key, as Valkey 8.0.1's migrateCommand (src/cluster.c) does, with
// its replies and error texts. Like Valkey the command blocks the engine while it talks to
// the target (connect, write and each reply read are bounded by the timeout).
//
// Simplification, documented: Valkey keeps the connection to each target open for up to
// 10 seconds and skips SELECT when the cached connection already has the database; here
// every MIGRATE opens its own connection, sends SELECT, and closes it. The replies are the
// same as Valkey's with a cold cache (Valkey's single retry on a failed first read is kept),
// only the target sees one connection per MIGRATE.
#include "engine/commands/context.hpp"
#include "engine/commands/families.hpp"
#include "engine/engine.hpp"
#include "engine/keyspace/db.hpp"
#include "engine/persistence/rdb_writer.hpp"
#include "engine/util/strconv.hpp"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace keyshift::engine {
namespace {

constexpr std::string_view k_keys_need_empty_key =
    "ERR When using MIGRATE KEYS option, the key argument must be set to the empty string";
constexpr std::string_view k_ioerr_connecting = "IOERR error or timeout connecting to the client";
constexpr std::string_view k_ioerr_writing = "IOERR error or timeout writing to target instance";
constexpr std::string_view k_ioerr_reading = "IOERR error or timeout reading to target instance";
constexpr std::string_view k_target_error_prefix = "ERR Target instance replied with error: ";
constexpr size_t k_write_chunk = 64 * 1024;  // Valkey writes the request in 64 KiB pieces
constexpr size_t k_max_line = 1024;          // and reads each reply line into 1 KiB

/// A blocking TCP connection whose every operation waits at most `timeout_ms` (Valkey's
/// connBlockingConnect, connSyncWrite and connSyncReadLine).
class SyncSocket {
 public:
  SyncSocket() = default;
  SyncSocket(const SyncSocket&) = delete;
  SyncSocket& operator=(const SyncSocket&) = delete;
  ~SyncSocket() { close(); }

  /// Connects to host:port (a name or an address); false on failure or timeout.
  bool connect(const std::string& host, int port, int64_t timeout_ms) {
    close();
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    std::string service = std::to_string(port);
    if (::getaddrinfo(host.c_str(), service.c_str(), &hints, &found) != 0) {
      return false;
    }
    bool connected = false;
    for (addrinfo* a = found; a != nullptr && !connected; a = a->ai_next) {
      m_fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
      if (m_fd < 0) {
        continue;
      }
      // As Valkey's connSocketBlockingConnect: writable in time counts as connected, even
      // when the connection was refused; the write fails then ("writing" IOERR).
      connected = ::connect(m_fd, a->ai_addr, a->ai_addrlen) == 0 ||
                  (errno == EINPROGRESS && wait_for(POLLOUT, timeout_ms));
      if (!connected) {
        close();
      }
    }
    ::freeaddrinfo(found);
    if (connected) {
      int one = 1;
      ::setsockopt(m_fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    }
    return connected;
  }

  /// Writes all of `data`; false on an error or when the timeout passes first (then
  /// `timed_out()`).
  bool write_all(std::string_view data, int64_t timeout_ms) {
    m_last_wait_timed_out = false;
    size_t pos = 0;
    while (pos < data.size()) {
      ssize_t n = ::send(m_fd, data.data() + pos, data.size() - pos, MSG_NOSIGNAL);
      if (n > 0) {
        pos += static_cast<size_t>(n);
      } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
        if (!wait_for(POLLOUT, timeout_ms)) {
          return false;
        }
      } else {
        return false;
      }
    }
    return true;
  }

  /// Reads one line without its "\r\n" (at most k_max_line - 1 bytes are kept, as Valkey's
  /// buffer); nullopt on an error, end of stream or timeout. `timed_out` says which.
  std::optional<std::string> read_line(int64_t timeout_ms, bool& timed_out) {
    timed_out = false;
    std::string line;
    while (true) {
      size_t nl = m_in.find('\n');
      if (nl != std::string::npos) {
        line.assign(m_in, 0, nl);
        m_in.erase(0, nl + 1);
        if (!line.empty() && line.back() == '\r') {
          line.pop_back();
        }
        if (line.size() > k_max_line - 1) {
          line.resize(k_max_line - 1);
        }
        return line;
      }
      char buf[4096];
      ssize_t n = ::recv(m_fd, buf, sizeof(buf), 0);
      if (n > 0) {
        m_in.append(buf, static_cast<size_t>(n));
      } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
        if (!wait_for(POLLIN, timeout_ms)) {
          timed_out = m_last_wait_timed_out;
          return std::nullopt;
        }
      } else {
        return std::nullopt;
      }
    }
  }

  /// Whether the last failed operation ran out of time.
  bool timed_out() const { return m_last_wait_timed_out; }

  void close() {
    if (m_fd >= 0) {
      ::close(m_fd);
      m_fd = -1;
    }
    m_in.clear();
  }

 private:
  bool wait_for(short events, int64_t timeout_ms) {
    pollfd p{m_fd, events, 0};
    int r = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(timeout_ms, INT32_MAX)));
    m_last_wait_timed_out = r == 0;
    return r > 0;
  }

  int m_fd = -1;
  std::string m_in;
  bool m_last_wait_timed_out = false;
};

void append_bulk(std::string& out, std::string_view s) {
  out += '$';
  out += std::to_string(s.size());
  out += "\r\n";
  out.append(s);
  out += "\r\n";
}

void append_count(std::string& out, size_t n) {
  out += '*';
  out += std::to_string(n);
  out += "\r\n";
}

struct MigrateOptions {
  bool copy = false;
  bool replace = false;
  std::optional<std::string_view> username;
  std::optional<std::string_view> password;
  size_t first_key = 3;
  size_t num_keys = 1;
};

/// The options after the timeout, as Valkey parses them; false after replying an error.
bool parse_migrate_options(CmdContext& ctx, MigrateOptions& o) {
  for (size_t j = 6; j < ctx.argc(); ++j) {
    std::string_view a = ctx.arg(j);
    size_t more = ctx.argc() - 1 - j;
    if (iequals(a, "copy")) {
      o.copy = true;
    } else if (iequals(a, "replace")) {
      o.replace = true;
    } else if (iequals(a, "auth")) {
      if (more == 0) {
        ctx.reply().error(errors::k_syntax);
        return false;
      }
      o.password = ctx.arg(++j);
    } else if (iequals(a, "auth2")) {
      if (more < 2) {
        ctx.reply().error(errors::k_syntax);
        return false;
      }
      o.username = ctx.arg(++j);
      o.password = ctx.arg(++j);
    } else if (iequals(a, "keys")) {
      if (!ctx.arg(3).empty()) {
        ctx.reply().error(k_keys_need_empty_key);
        return false;
      }
      o.first_key = j + 1;
      o.num_keys = ctx.argc() - j - 1;
      break;  // every remaining argument is a key
    } else {
      ctx.reply().error(errors::k_syntax);
      return false;
    }
  }
  return true;
}

/// Valkey's atoi(port): leading digits, anything else ignored.
int port_of(std::string_view s) {
  return std::atoi(std::string(s).c_str());
}

void cmd_migrate(CmdContext& ctx) {
  MigrateOptions o;
  if (!parse_migrate_options(ctx, o)) {
    return;
  }
  int64_t timeout_ms = 0;
  int64_t dbid = 0;
  if (!parse_i64(ctx.arg(5), timeout_ms) || !parse_i64(ctx.arg(4), dbid)) {
    ctx.reply().error(errors::k_not_integer);
    return;
  }
  if (timeout_ms <= 0) {
    timeout_ms = 1000;
  }
  Db& db = ctx.db();
  std::vector<std::string_view> keys;
  for (size_t j = 0; j < o.num_keys; ++j) {
    std::string_view key = ctx.arg(o.first_key + j);
    if (db.lookup_read(key) != nullptr) {
      keys.push_back(key);
    }
  }
  if (keys.empty()) {
    // Not an error: the keys usually just expired meanwhile.
    ctx.reply().simple("NOKEY");
    return;
  }
  const std::string host(ctx.arg(1));
  const int port = port_of(ctx.arg(2));
  bool may_retry = true;
  while (true) {
    SyncSocket sock;
    if (!sock.connect(host, port, timeout_ms)) {
      ctx.reply().error(k_ioerr_connecting);
      return;
    }
    std::string request;
    if (o.password) {
      append_count(request, o.username ? 3 : 2);
      append_bulk(request, "AUTH");
      if (o.username) {
        append_bulk(request, *o.username);
      }
      append_bulk(request, *o.password);
    }
    // A fresh connection never has the database selected (Valkey's last_dbid -1).
    append_count(request, 2);
    append_bulk(request, "SELECT");
    append_bulk(request, std::to_string(dbid));
    // Keys that expired since the lookup are skipped, as Valkey's second check does.
    std::vector<std::string_view> sent;
    for (std::string_view key : keys) {
      Entry* e = db.lookup_read(key);
      if (e == nullptr) {
        continue;
      }
      int64_t ttl = 0;
      if (e->has_expire()) {
        ttl = e->expire_ms() - ctx.now_ms();
        if (ttl < 0) {
          continue;
        }
        ttl = std::max<int64_t>(ttl, 1);
      }
      auto payload = dump_payload(*e, RdbWriteOptions{});
      if (!payload) {
        // A hash with field TTLs has no Valkey 8 payload: Redis 7.4's RDB 12, as DUMP.
        RdbWriteOptions v12;
        v12.version = 12;
        payload = dump_payload(*e, v12);
      }
      if (!payload) {
        ctx.reply().error("ERR " + payload.error());
        return;
      }
      append_count(request, o.replace ? 5 : 4);
      append_bulk(request, "RESTORE");
      append_bulk(request, key);
      append_bulk(request, std::to_string(ttl));
      append_bulk(request, *payload);
      if (o.replace) {
        append_bulk(request, "REPLACE");
      }
      sent.push_back(key);
    }

    bool write_error = false;
    bool timed_out = false;
    for (size_t pos = 0; pos < request.size() && !write_error; pos += k_write_chunk) {
      write_error =
          !sock.write_all(std::string_view(request).substr(pos, k_write_chunk), timeout_ms);
    }
    timed_out = write_error && sock.timed_out();
    std::optional<std::string> auth_reply;
    std::optional<std::string> select_reply;
    bool socket_error = write_error;
    size_t replies = 0;
    bool error_from_target = false;
    if (!write_error) {
      if (o.password) {
        auth_reply = sock.read_line(timeout_ms, timed_out);
        socket_error = !auth_reply;
      }
      if (!socket_error) {
        select_reply = sock.read_line(timeout_ms, timed_out);
        socket_error = !select_reply;
      }
      // Valkey jumps to its retry path when AUTH's or SELECT's reply is missing, as when no
      // RESTORE reply was read; only the message differs from a late failure.
      for (; !socket_error && replies < sent.size(); ++replies) {
        std::optional<std::string> line = sock.read_line(timeout_ms, timed_out);
        if (!line) {
          socket_error = true;
          break;
        }
        const std::string* error = nullptr;
        if (auth_reply && !auth_reply->empty() && (*auth_reply)[0] == '-') {
          error = &*auth_reply;
        } else if (!select_reply->empty() && (*select_reply)[0] == '-') {
          error = &*select_reply;
        } else if (!line->empty() && (*line)[0] == '-') {
          error = &*line;
        }
        if (error != nullptr) {
          if (!error_from_target) {
            error_from_target = true;
            ctx.reply().error(std::string(k_target_error_prefix) + error->substr(1));
          }
        } else if (!o.copy) {
          db.remove(sent[replies]);
          ctx.engine().signal_modified_key(ctx.session().db, sent[replies]);
          ctx.engine().notify_keyspace_event(k_notify_generic, "del", sent[replies],
                                             ctx.session().db);
        }
      }
    }
    if (error_from_target) {
      return;  // the error is already written; keys acknowledged before it are gone
    }
    if (!socket_error) {
      ctx.reply().ok();
      return;
    }
    // Valkey retries once, on a new connection, when nothing was processed yet (the first
    // reply could not be read, or the write failed) and the failure was not a timeout.
    if (replies == 0 && may_retry && !timed_out) {
      may_retry = false;
      continue;
    }
    ctx.reply().error(write_error ? k_ioerr_writing : k_ioerr_reading);
    return;
  }
}

constexpr CommandSpec k_migrate_commands[] = {
    {"migrate", -6, k_cmd_write | k_cmd_movablekeys, 3, 3, 1, cmd_migrate,
     "@keyspace @write @slow @dangerous"},
};

}  // namespace

void register_migrate_family(CommandRegistry& registry) {
  registry.add(k_migrate_commands);
}

}  // namespace keyshift::engine
