#include "compat/capture/capture_proxy.hpp"

#include "compat/capture/capture_file.hpp"
#include "compat/capture/capture_record.hpp"
#include "compat/capture/capture_stream.hpp"
#include "engine/resp/connection.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <vector>

namespace keyshift::compat::capture {
namespace {

// A side stops being read while the other side has this much waiting to be written to it,
// so a slow reader slows its own peer only, as it would without the proxy.
constexpr size_t k_high_water = size_t{4} << 20;
constexpr size_t k_read_size = size_t{256} << 10;
// Records are handed to the writer thread in blocks of about this size (and at the end of
// every loop turn), so the lock is taken rarely.
constexpr size_t k_block_size = size_t{256} << 10;
// ... or once this long has passed since the last hand-over, so the writer thread wakes up
// a few dozen times a second at most instead of once per loop turn.
constexpr std::chrono::milliseconds k_hand_over_every{20};
constexpr uint64_t k_listener_tag = 0;
constexpr uint64_t k_signal_tag = 1;

int64_t unix_now_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

std::string errno_text(const std::string& what) {
  return what + ": " + std::strerror(errno);
}

/// A resolved listen or upstream address.
struct SocketAddress {
  sockaddr_storage storage{};
  socklen_t length = 0;
  bool is_unix = false;
  std::string unix_path;
  std::string host;
  int port = 0;
  std::string text;  // as given
};

engine::Expected<SocketAddress, std::string> resolve(const std::string& text) {
  SocketAddress a;
  a.text = text;
  if (text.rfind("unix:", 0) == 0) {
    a.is_unix = true;
    a.unix_path = text.substr(5);
    sockaddr_un un{};
    if (a.unix_path.empty() || a.unix_path.size() >= sizeof(un.sun_path)) {
      return engine::Unexpected{"'" + text + "': a unix socket path must be 1 to " +
                                std::to_string(sizeof(un.sun_path) - 1) + " bytes"};
    }
    un.sun_family = AF_UNIX;
    std::memcpy(un.sun_path, a.unix_path.data(), a.unix_path.size());
    std::memcpy(&a.storage, &un, sizeof(un));
    a.length = sizeof(un);
    return a;
  }
  std::string host = "127.0.0.1";
  std::string port = text;
  size_t colon = text.rfind(':');
  if (colon != std::string::npos) {
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
      host = host.substr(1, host.size() - 2);
    }
  }
  if (port.empty() || port.find_first_not_of("0123456789") != std::string::npos ||
      port.size() > 5 || std::stoi(port) > 65535) {
    return engine::Unexpected{"'" + text + "': expected unix:PATH, HOST:PORT or PORT"};
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  int rc = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &res);
  if (rc != 0 || res == nullptr) {
    return engine::Unexpected{"'" + text + "': " + ::gai_strerror(rc)};
  }
  std::memcpy(&a.storage, res->ai_addr, res->ai_addrlen);
  a.length = res->ai_addrlen;
  ::freeaddrinfo(res);
  a.host = host;
  a.port = std::stoi(port);
  return a;
}

std::string format_peer(const sockaddr_storage& ss, const SocketAddress& listen) {
  char ip[INET6_ADDRSTRLEN] = {};
  if (ss.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&ss);
    ::inet_ntop(AF_INET, &in->sin_addr, ip, sizeof(ip));
    return std::string(ip) + ":" + std::to_string(ntohs(in->sin_port));
  }
  if (ss.ss_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&ss);
    ::inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof(ip));
    return "[" + std::string(ip) + "]:" + std::to_string(ntohs(in6->sin6_port));
  }
  return "unix:" + listen.unix_path;
}

void set_nodelay(int fd, const SocketAddress& a) {
  if (!a.is_unix) {
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  }
}

/// The writer thread: blocks of encoded records in, the capture file out. The proxy asks
/// has_room() before encoding a record, so the bytes waiting here stay under the limit.
class RecordSink {
 public:
  RecordSink(CaptureFileWriter writer, size_t limit)
      : m_writer(std::move(writer)), m_limit(limit), m_thread([this] { run(); }) {}
  RecordSink(const RecordSink&) = delete;
  RecordSink& operator=(const RecordSink&) = delete;
  ~RecordSink() {
    if (m_thread.joinable()) {
      finish();
    }
  }

  /// True when `bytes` more fit under the limit.
  bool has_room(size_t bytes) const {
    return m_queued.load(std::memory_order_relaxed) + bytes <= m_limit;
  }
  /// Hands a block of `events` whole records to the writer thread.
  void push(std::string block, uint64_t events) {
    m_queued.fetch_add(block.size(), std::memory_order_relaxed);
    {
      std::lock_guard<std::mutex> lock(m_mutex);
      m_blocks.emplace_back(std::move(block), events);
    }
    m_cv.notify_one();
  }
  /// Writes what is queued, then the end record; fsync and rename. The first error, if any.
  std::optional<std::string> finish() {
    {
      std::lock_guard<std::mutex> lock(m_mutex);
      m_stop = true;
    }
    m_cv.notify_one();
    m_thread.join();
    if (!m_error) {
      m_error = m_writer.close();
    }
    if (m_error) {
      return m_error->message();
    }
    return std::nullopt;
  }
  uint64_t events() const { return m_writer.events(); }

 private:
  void run() {
    std::deque<std::pair<std::string, uint64_t>> work;
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(m_mutex);
        m_cv.wait(lock, [this] { return m_stop || !m_blocks.empty(); });
        if (m_blocks.empty() && m_stop) {
          return;
        }
        work.swap(m_blocks);
      }
      for (auto& [block, events] : work) {
        if (!m_error) {
          m_error = m_writer.append_encoded(block, events);
        }
        m_queued.fetch_sub(block.size(), std::memory_order_relaxed);
      }
      work.clear();
      // Idle for now: what is buffered goes to the file, so a kill loses little.
      if (!m_error) {
        m_error = m_writer.flush();
      }
    }
  }

  CaptureFileWriter m_writer;
  size_t m_limit;
  std::mutex m_mutex;
  std::condition_variable m_cv;
  std::deque<std::pair<std::string, uint64_t>> m_blocks;
  std::atomic<size_t> m_queued{0};
  bool m_stop = false;
  std::optional<engine::FileError> m_error;
  std::thread m_thread;  // last: started once everything above exists
};

/// One socket of a proxied connection and the bytes waiting to be written to it.
struct Side {
  int fd = -1;
  std::string out;
  size_t out_pos = 0;
  bool eof = false;     // read returned 0
  uint32_t events = 0;  // the epoll interest registered now

  size_t pending() const { return out.size() - out_pos; }
};

/// One client connection, its upstream connection, and what its recording knows.
struct Connection {
  Connection(uint64_t conn_id, bool redact, const Anonymizer* anonymizer)
      : id(conn_id), recorder(conn_id, redact, anonymizer) {}

  uint64_t id = 0;
  Side client;
  Side server;
  bool connecting = true;
  bool shut_server = false;  // the client's EOF was passed on
  std::string peer;
  StreamRecorder recorder;
  bool dropping = false;       // events were lost since the last drop event
  uint64_t dropped_bytes = 0;  // their traffic bytes, not yet reported
};

class Proxy {
 public:
  Proxy(const CaptureProxyOptions& options, SocketAddress listen, SocketAddress upstream,
        std::FILE* log)
      : m_options(options),
        m_listen(std::move(listen)),
        m_upstream(std::move(upstream)),
        m_log(log),
        m_read_buf(k_read_size) {
    if (options.anonymize) {
      m_anonymizer.emplace(Anonymizer::with_random_key());
    }
  }
  Proxy(const Proxy&) = delete;
  Proxy& operator=(const Proxy&) = delete;
  ~Proxy() {
    for (int fd : {m_epoll, m_listen_fd, m_signal_fd}) {
      if (fd >= 0) {
        ::close(fd);
      }
    }
    if (m_listen.is_unix && m_listen_fd >= 0) {
      ::unlink(m_listen.unix_path.c_str());
    }
  }

  /// Listens; nothing is recorded yet, so a failure leaves no file behind.
  std::optional<std::string> open(const sigset_t& signals);
  /// Runs until a signal or the duration, recording into `sink`.
  void run(RecordSink& sink);
  const CaptureProxyReport& report() const { return m_report; }

 private:
  void accept_all();
  void on_event(uint64_t tag, uint32_t events);
  void on_readable(Connection& c, bool from_client);
  bool flush_side(Connection& c, Side& side);
  void forward(Connection& c, Side& to, const char* data, size_t n);
  void update(Connection& c);
  void set_interest(Side& side, uint64_t tag, uint32_t events);
  void close_connection(uint64_t id);
  void write_event(Connection& c, const CaptureEventView& e, size_t traffic_bytes);
  void hand_over();

  /// A connection's recorder writes through this into the proxy's block.
  class ConnectionSink : public EventSink {
   public:
    ConnectionSink(Proxy& proxy, Connection& c) : m_proxy(proxy), m_c(c) {}
    void emit(const CaptureEventView& e, size_t traffic_bytes) override {
      m_proxy.write_event(m_c, e, traffic_bytes);
    }

   private:
    Proxy& m_proxy;
    Connection& m_c;
  };

  const CaptureProxyOptions& m_options;
  std::optional<Anonymizer> m_anonymizer;  // one key for the whole capture
  SocketAddress m_listen;
  SocketAddress m_upstream;
  RecordSink* m_sink_ptr = nullptr;
  std::FILE* m_log;
  int m_epoll = -1;
  int m_listen_fd = -1;
  int m_signal_fd = -1;
  uint64_t m_next_id = 1;
  std::unordered_map<uint64_t, std::unique_ptr<Connection>> m_connections;
  std::vector<char> m_read_buf;
  std::string m_block;
  uint64_t m_block_events = 0;
  CaptureProxyReport m_report;
};

std::optional<std::string> Proxy::open(const sigset_t& signals) {
  m_epoll = ::epoll_create1(EPOLL_CLOEXEC);
  if (m_epoll < 0) {
    return errno_text("epoll_create1");
  }
  m_signal_fd = ::signalfd(-1, &signals, SFD_NONBLOCK | SFD_CLOEXEC);
  if (m_signal_fd < 0) {
    return errno_text("signalfd");
  }
  int family = m_listen.is_unix ? AF_UNIX : m_listen.storage.ss_family;
  m_listen_fd = ::socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (m_listen_fd < 0) {
    return errno_text("socket");
  }
  if (m_listen.is_unix) {
    struct stat st {};
    if (::stat(m_listen.unix_path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) {
      ::unlink(m_listen.unix_path.c_str());
    }
  } else {
    int one = 1;
    ::setsockopt(m_listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  }
  if (::bind(m_listen_fd, reinterpret_cast<const sockaddr*>(&m_listen.storage), m_listen.length) !=
      0) {
    std::string e = errno_text("cannot listen on " + m_listen.text);
    ::close(m_listen_fd);
    m_listen_fd = -1;
    return e;
  }
  if (::listen(m_listen_fd, 511) != 0) {
    return errno_text("listen " + m_listen.text);
  }
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = k_listener_tag;
  ::epoll_ctl(m_epoll, EPOLL_CTL_ADD, m_listen_fd, &ev);
  ev.data.u64 = k_signal_tag;
  ::epoll_ctl(m_epoll, EPOLL_CTL_ADD, m_signal_fd, &ev);
  return std::nullopt;
}

void Proxy::run(RecordSink& sink) {
  m_sink_ptr = &sink;
  using Clock = std::chrono::steady_clock;
  std::optional<Clock::time_point> deadline;
  if (m_options.duration_s > 0) {
    deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                  std::chrono::duration<double>(m_options.duration_s));
  }
  std::vector<epoll_event> events(256);
  bool stop = false;
  auto last_hand_over = Clock::now();
  while (!stop) {
    int timeout = -1;
    if (deadline) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*deadline - Clock::now());
      if (left.count() <= 0) {
        break;
      }
      timeout = static_cast<int>(left.count()) + 1;
    }
    if (!m_block.empty() &&
        (timeout < 0 || timeout > static_cast<int>(k_hand_over_every.count()))) {
      timeout = static_cast<int>(k_hand_over_every.count());
    }
    int n = ::epoll_wait(m_epoll, events.data(), static_cast<int>(events.size()), timeout);
    if (n < 0 && errno != EINTR) {
      std::fprintf(m_log, "keyshift: capture: %s\n", errno_text("epoll_wait").c_str());
      break;
    }
    for (int i = 0; i < n; ++i) {
      uint64_t tag = events[i].data.u64;
      if (tag == k_signal_tag) {
        signalfd_siginfo info{};
        while (::read(m_signal_fd, &info, sizeof(info)) == sizeof(info)) {
          stop = true;
        }
      } else if (tag == k_listener_tag) {
        accept_all();
      } else {
        on_event(tag, events[i].events);
      }
    }
    auto now = Clock::now();
    if (m_block.size() >= k_block_size || now - last_hand_over >= k_hand_over_every) {
      hand_over();
      last_hand_over = now;
    }
  }
  std::vector<uint64_t> ids;
  ids.reserve(m_connections.size());
  for (const auto& [id, c] : m_connections) {
    ids.push_back(id);
  }
  for (uint64_t id : ids) {
    close_connection(id);
  }
  hand_over();
}

void Proxy::hand_over() {
  if (!m_block.empty()) {
    m_sink_ptr->push(std::move(m_block), m_block_events);
    m_block = std::string();
    m_block.reserve(k_block_size + 4096);
    m_block_events = 0;
  }
}

void Proxy::accept_all() {
  for (;;) {
    sockaddr_storage ss{};
    socklen_t len = sizeof(ss);
    int fd = ::accept4(m_listen_fd, reinterpret_cast<sockaddr*>(&ss), &len,
                       SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) {
        continue;
      }
      return;  // EAGAIN, or out of descriptors: try again on the next event
    }
    set_nodelay(fd, m_listen);
    int up = ::socket(m_upstream.is_unix ? AF_UNIX : m_upstream.storage.ss_family,
                      SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (up < 0) {
      ::close(fd);
      continue;
    }
    set_nodelay(up, m_upstream);
    auto c = std::make_unique<Connection>(m_next_id++, m_options.redact,
                                          m_anonymizer ? &*m_anonymizer : nullptr);
    c->client.fd = fd;
    c->server.fd = up;
    c->peer = format_peer(ss, m_listen);
    int rc =
        ::connect(up, reinterpret_cast<const sockaddr*>(&m_upstream.storage), m_upstream.length);
    if (rc != 0 && errno != EINPROGRESS) {
      // The upstream refuses: the client sees its connection closed, as it would directly.
      std::fprintf(m_log, "keyshift: capture: %s\n",
                   errno_text("cannot connect to " + m_upstream.text).c_str());
      ::close(up);
      ::close(fd);
      continue;
    }
    c->connecting = rc != 0;
    ++m_report.connections;
    ConnectionSink sink(*this, *c);
    c->recorder.open(c->peer, unix_now_ns(), sink);
    uint64_t id = c->id;
    for (Side* s : {&c->client, &c->server}) {
      epoll_event ev{};
      ev.data.u64 = id * 2 + (s == &c->server ? 1 : 0);
      ::epoll_ctl(m_epoll, EPOLL_CTL_ADD, s->fd, &ev);
    }
    Connection& ref = *c;
    m_connections.emplace(id, std::move(c));
    update(ref);
  }
}

void Proxy::set_interest(Side& side, uint64_t tag, uint32_t events) {
  if (side.events == events) {
    return;
  }
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = tag;
  ::epoll_ctl(m_epoll, EPOLL_CTL_MOD, side.fd, &ev);
  side.events = events;
}

void Proxy::update(Connection& c) {
  uint32_t client = 0;
  if (!c.client.eof && c.server.pending() < k_high_water) {
    client |= EPOLLIN;
  }
  if (c.client.pending() > 0) {
    client |= EPOLLOUT;
  }
  uint32_t server = 0;
  if (c.connecting) {
    server = EPOLLOUT;
  } else {
    if (!c.server.eof && c.client.pending() < k_high_water) {
      server |= EPOLLIN;
    }
    if (c.server.pending() > 0) {
      server |= EPOLLOUT;
    }
  }
  set_interest(c.client, c.id * 2, client);
  set_interest(c.server, c.id * 2 + 1, server);
}

void Proxy::on_event(uint64_t tag, uint32_t events) {
  uint64_t id = tag / 2;
  bool is_server = (tag & 1) != 0;
  auto it = m_connections.find(id);
  if (it == m_connections.end()) {
    return;  // closed earlier in this turn
  }
  Connection& c = *it->second;
  if (is_server && c.connecting) {
    int error = 0;
    socklen_t len = sizeof(error);
    ::getsockopt(c.server.fd, SOL_SOCKET, SO_ERROR, &error, &len);
    if (error != 0) {
      std::fprintf(m_log, "keyshift: capture: cannot connect to %s: %s\n", m_upstream.text.c_str(),
                   std::strerror(error));
      close_connection(id);
      return;
    }
    c.connecting = false;
  }
  Side& side = is_server ? c.server : c.client;
  if ((events & EPOLLOUT) != 0 && side.pending() > 0) {
    if (!flush_side(c, side)) {
      close_connection(id);
      return;
    }
  }
  if ((events & (EPOLLIN | EPOLLHUP | EPOLLERR)) != 0 && (side.events & EPOLLIN) != 0) {
    on_readable(c, !is_server);
    if (m_connections.find(id) == m_connections.end()) {
      return;
    }
  }
  // EOFs passed on once the bytes before them are out.
  if (c.client.eof && !c.shut_server && !c.connecting && c.server.pending() == 0) {
    ::shutdown(c.server.fd, SHUT_WR);
    c.shut_server = true;
  }
  if (c.server.eof && c.client.pending() == 0) {
    close_connection(id);
    return;
  }
  update(c);
}

bool Proxy::flush_side(Connection& c, Side& side) {
  (void)c;
  while (side.pending() > 0) {
    ssize_t n = ::send(side.fd, side.out.data() + side.out_pos, side.pending(),
                       MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      return errno == EAGAIN || errno == EWOULDBLOCK;
    }
    side.out_pos += static_cast<size_t>(n);
  }
  side.out.clear();
  side.out_pos = 0;
  return true;
}

void Proxy::forward(Connection& c, Side& to, const char* data, size_t n) {
  size_t sent = 0;
  bool can_send = to.pending() == 0 && !(&to == &c.server && c.connecting);
  while (can_send && sent < n) {
    ssize_t w = ::send(to.fd, data + sent, n - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w < 0) {
      if (errno == EINTR) {
        continue;
      }
      break;  // EAGAIN, or an error the next write (on EPOLLOUT) reports
    }
    sent += static_cast<size_t>(w);
  }
  if (sent < n) {
    if (to.out_pos > 0 && to.out_pos * 2 >= to.out.size()) {
      to.out.erase(0, to.out_pos);
      to.out_pos = 0;
    }
    to.out.append(data + sent, n - sent);
  }
}

void Proxy::on_readable(Connection& c, bool from_client) {
  Side& from = from_client ? c.client : c.server;
  Side& to = from_client ? c.server : c.client;
  ssize_t n = ::recv(from.fd, m_read_buf.data(), m_read_buf.size(), MSG_DONTWAIT);
  if (n < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
      return;
    }
    close_connection(c.id);
    return;
  }
  if (n == 0) {
    from.eof = true;
    return;
  }
  auto size = static_cast<size_t>(n);
  if (from_client) {
    m_report.bytes_to_server += size;
  } else {
    m_report.bytes_to_client += size;
  }
  // The traffic first, then the recording: the recording never delays a byte.
  forward(c, to, m_read_buf.data(), size);
  int64_t now = unix_now_ns();
  ConnectionSink sink(*this, c);
  if (from_client) {
    c.recorder.client_bytes(m_read_buf.data(), size, now, now, sink);
  } else {
    c.recorder.server_bytes(m_read_buf.data(), size, now, now, sink);
  }
  if (m_block.size() >= 4 * k_block_size) {
    hand_over();
  }
}

void Proxy::write_event(Connection& c, const CaptureEventView& e, size_t traffic_bytes) {
  size_t size = encoded_size(e);
  if (c.dropping) {
    std::string dropped = std::to_string(c.dropped_bytes);
    CaptureEventView d = e;
    d.kind = EventKind::drop;
    d.flags = k_flag_none;
    d.peer = {};
    d.bytes = dropped;
    d.batch = 0;
    size_t dsize = encoded_size(d);
    if (m_sink_ptr->has_room(m_block.size() + dsize + size)) {
      encode_event(d, m_block);
      ++m_block_events;
      c.dropped_bytes = 0;
      c.dropping = false;
    }
  }
  if (c.dropping || !m_sink_ptr->has_room(m_block.size() + size)) {
    // The writer is behind: this event is lost and counted; a drop event will say so.
    c.dropping = true;
    c.dropped_bytes += traffic_bytes;
    ++m_report.dropped_events;
    m_report.dropped_bytes += traffic_bytes;
    return;
  }
  encode_event(e, m_block);
  ++m_block_events;
}

void Proxy::close_connection(uint64_t id) {
  auto it = m_connections.find(id);
  if (it == m_connections.end()) {
    return;
  }
  Connection& c = *it->second;
  ConnectionSink sink(*this, c);
  c.recorder.close(unix_now_ns(), sink);
  ::close(c.client.fd);
  ::close(c.server.fd);
  m_connections.erase(it);
}

/// The endpoint a resolved address names.
engine::RespEndpoint endpoint_of(const SocketAddress& upstream) {
  engine::RespEndpoint endpoint;
  if (upstream.is_unix) {
    endpoint.unix_path = upstream.unix_path;
  } else {
    endpoint.host = upstream.host;
    endpoint.port = upstream.port;
  }
  return endpoint;
}

}  // namespace

void read_source_identity(const engine::RespEndpoint& endpoint, CaptureHeader& header) {
  auto conn = engine::RespConnection::connect(endpoint, std::chrono::milliseconds(2000));
  if (!conn) {
    header.add("source.error", conn.error());
    return;
  }
  auto info = conn->call({"INFO", "server"});
  if (!info || info->is_error()) {
    header.add("source.error", info ? info->str : info.error());
    return;
  }
  std::string_view text = info->str;
  while (!text.empty()) {
    size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
    if (!line.empty() && line.back() == '\r') {
      line.remove_suffix(1);
    }
    size_t colon = line.find(':');
    if (line.empty() || line[0] == '#' || colon == std::string_view::npos) {
      continue;
    }
    header.add("source." + std::string(line.substr(0, colon)), std::string(line.substr(colon + 1)));
  }
}

engine::Expected<CaptureProxyReport, std::string> run_capture_proxy(
    const CaptureProxyOptions& options, std::FILE* log) {
  auto listen = resolve(options.listen);
  if (!listen) {
    return engine::Unexpected{"--listen " + listen.error()};
  }
  auto upstream = resolve(options.upstream);
  if (!upstream) {
    return engine::Unexpected{"--upstream " + upstream.error()};
  }
  // SIGINT and SIGTERM are read from a signalfd by the loop; blocked before the writer
  // thread starts, so it inherits the mask and never takes them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigset_t old_mask;
  pthread_sigmask(SIG_BLOCK, &signals, &old_mask);

  CaptureProxyReport report;
  std::optional<std::string> failure;
  {
    Proxy proxy(options, listen.value(), upstream.value(), log);
    failure = proxy.open(signals);
    if (!failure) {
      CaptureHeader header;
      header.add("capture.tool", "keyshift capture");
      header.add("capture.keyshift_version", options.keyshift_version);
      header.add("capture.method", "proxy");
      header.add("capture.listen", options.listen);
      header.add("capture.upstream", options.upstream);
      header.add("capture.redact", options.redact ? "on" : "off");
      header.add("capture.anonymize", options.anonymize ? "on" : "off");
      header.add("capture.max_queued_bytes", std::to_string(options.max_queued_bytes));
      header.add("capture.duration_s",
                 options.duration_s > 0 ? std::to_string(options.duration_s) : "");
      header.add("capture.started_ns", std::to_string(unix_now_ns()));
      read_source_identity(endpoint_of(*upstream), header);
      auto writer = CaptureFileWriter::create(options.out, header);
      if (!writer) {
        failure = writer.error().message();
      } else {
        RecordSink sink(std::move(writer.value()), options.max_queued_bytes);
        std::fprintf(log, "keyshift capture: listening on %s, upstream %s, recording to %s\n",
                     options.listen.c_str(), options.upstream.c_str(), options.out.c_str());
        std::fflush(log);
        proxy.run(sink);
        report = proxy.report();
        auto closed = sink.finish();
        report.events = sink.events();
        if (closed) {
          failure = *closed;
        }
      }
    }
  }
  pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  if (failure) {
    return engine::Unexpected{std::move(*failure)};
  }
  return report;
}

}  // namespace keyshift::compat::capture
