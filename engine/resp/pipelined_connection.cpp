#include "engine/resp/pipelined_connection.hpp"

#include "engine/resp/request_writer.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

namespace keyshift::engine {
namespace {

constexpr size_t k_read_chunk = 64 * 1024;

}  // namespace

Expected<PipelinedConnection, std::string> PipelinedConnection::connect(
    const RespEndpoint& endpoint, uint32_t window, size_t out_capacity,
    std::chrono::milliseconds timeout) {
  auto logged_in = RespConnection::connect(endpoint, timeout);
  if (!logged_in) {
    return Unexpected{logged_in.error()};
  }
  Transport transport = logged_in->release_transport();
  if (transport.fd() < 0) {
    return Unexpected{"cannot connect to " + endpoint.describe() +
                      ": the server sent a reply nobody asked for"};
  }
  int flags = ::fcntl(transport.fd(), F_GETFL, 0);
  ::fcntl(transport.fd(), F_SETFL, flags | O_NONBLOCK);
  return PipelinedConnection(std::move(transport), endpoint, std::max<uint32_t>(window, 1),
                             out_capacity);
}

PipelinedConnection::PipelinedConnection(Transport transport, RespEndpoint endpoint,
                                         uint32_t window, size_t out_capacity)
    : m_fd(transport.fd()),
      m_transport(std::move(transport)),
      m_endpoint(std::move(endpoint)),
      m_window(window),
      m_out(std::make_unique<char[]>(std::max<size_t>(out_capacity, 64))),
      m_out_cap(std::max<size_t>(out_capacity, 64)),
      m_in(std::make_unique<char[]>(k_read_chunk)),
      m_in_cap(k_read_chunk) {}

PipelinedConnection::PipelinedConnection(PipelinedConnection&& other) noexcept
    : m_fd(std::exchange(other.m_fd, -1)),
      m_transport(std::move(other.m_transport)),
      m_endpoint(std::move(other.m_endpoint)),
      m_window(other.m_window),
      m_in_flight(other.m_in_flight),
      m_out(std::move(other.m_out)),
      m_out_cap(other.m_out_cap),
      m_out_len(other.m_out_len),
      m_out_sent(other.m_out_sent),
      m_in(std::move(other.m_in)),
      m_in_cap(other.m_in_cap),
      m_in_len(other.m_in_len),
      m_in_pos(other.m_in_pos),
      m_scan_pos(other.m_scan_pos),
      m_scanner(std::move(other.m_scanner)),
      m_error(std::move(other.m_error)) {}

PipelinedConnection& PipelinedConnection::operator=(PipelinedConnection&& other) noexcept {
  if (this != &other) {
    m_transport = Transport();
    if (m_fd >= 0) {
      ::close(m_fd);
    }
    m_fd = std::exchange(other.m_fd, -1);
    m_transport = std::move(other.m_transport);
    m_endpoint = std::move(other.m_endpoint);
    m_window = other.m_window;
    m_in_flight = other.m_in_flight;
    m_out = std::move(other.m_out);
    m_out_cap = other.m_out_cap;
    m_out_len = other.m_out_len;
    m_out_sent = other.m_out_sent;
    m_in = std::move(other.m_in);
    m_in_cap = other.m_in_cap;
    m_in_len = other.m_in_len;
    m_in_pos = other.m_in_pos;
    m_scan_pos = other.m_scan_pos;
    m_scanner = std::move(other.m_scanner);
    m_error = std::move(other.m_error);
  }
  return *this;
}

PipelinedConnection::~PipelinedConnection() {
  if (m_fd >= 0) {
    m_transport.shutdown();
    m_transport = Transport();
    ::close(m_fd);
  }
}

PipelinedConnection::Io PipelinedConnection::fail(std::string what) {
  if (m_error.empty()) {
    m_error = what + " (" + m_endpoint.describe() + ")";
  }
  return Io::failed;
}

void PipelinedConnection::grow_out(size_t need) {
  // Sent bytes are dropped first: the queue only grows when what is unsent does not fit.
  if (m_out_sent > 0) {
    std::memmove(m_out.get(), m_out.get() + m_out_sent, m_out_len - m_out_sent);
    m_out_len -= m_out_sent;
    m_out_sent = 0;
  }
  if (m_out_len + need <= m_out_cap) {
    return;
  }
  size_t cap = std::max(m_out_cap * 2, m_out_len + need);
  auto bigger = std::make_unique<char[]>(cap);
  std::memcpy(bigger.get(), m_out.get(), m_out_len);
  m_out = std::move(bigger);
  m_out_cap = cap;
}

char* PipelinedConnection::reserve(size_t max_bytes) {
  if (m_out_sent == m_out_len) {
    m_out_len = 0;
    m_out_sent = 0;
  }
  if (m_out_len + max_bytes > m_out_cap) {
    grow_out(max_bytes);
  }
  return m_out.get() + m_out_len;
}

void PipelinedConnection::commit(size_t bytes) {
  m_out_len += bytes;
  ++m_in_flight;
}

void PipelinedConnection::send(std::span<const std::string_view> args) {
  char* dst = reserve(request_size(args));
  commit(static_cast<size_t>(write_request(dst, args) - dst));
}

void PipelinedConnection::send(std::span<const std::string> args) {
  char* dst = reserve(request_size(args));
  commit(static_cast<size_t>(write_request(dst, args) - dst));
}

void PipelinedConnection::send(std::initializer_list<std::string_view> args) {
  send(std::span<const std::string_view>(args.begin(), args.size()));
}

void PipelinedConnection::send_raw(std::string_view bytes, uint32_t requests) {
  char* dst = reserve(bytes.size());
  std::memcpy(dst, bytes.data(), bytes.size());
  m_out_len += bytes.size();
  m_in_flight += requests;
}

PipelinedConnection::Io PipelinedConnection::flush() {
  if (failed()) {
    return Io::failed;
  }
  // A TLS read that stopped for want of a writable socket goes on first.
  if (m_transport.read_wants_write() && fill() == Io::failed) {
    return Io::failed;
  }
  while (m_out_sent < m_out_len) {
    IoResult r = m_transport.write(m_out.get() + m_out_sent, m_out_len - m_out_sent);
    if (r.status == IoStatus::want_read || r.status == IoStatus::want_write) {
      return Io::blocked;
    }
    if (r.status != IoStatus::ok) {
      return fail("write failed: " + m_transport.error());
    }
    m_out_sent += r.bytes;
  }
  m_out_len = 0;
  m_out_sent = 0;
  return Io::ok;
}

PipelinedConnection::Io PipelinedConnection::fill() {
  if (failed()) {
    return Io::failed;
  }
  if (m_in_pos == m_in_len) {
    m_in_len = m_scan_pos = m_in_pos = 0;
  } else if (m_in_pos > 0 && m_in_cap - m_in_len < k_read_chunk / 4) {
    std::memmove(m_in.get(), m_in.get() + m_in_pos, m_in_len - m_in_pos);
    m_in_len -= m_in_pos;
    m_scan_pos -= m_in_pos;
    m_in_pos = 0;
  }
  if (m_in_len == m_in_cap) {
    // One reply bigger than the buffer: the buffer grows to hold it whole, once.
    size_t cap = m_in_cap * 2;
    auto bigger = std::make_unique<char[]>(cap);
    std::memcpy(bigger.get(), m_in.get(), m_in_len);
    m_in = std::move(bigger);
    m_in_cap = cap;
  }
  for (;;) {
    IoResult r = m_transport.read(m_in.get() + m_in_len, m_in_cap - m_in_len);
    if (r.status == IoStatus::want_read || r.status == IoStatus::want_write) {
      return Io::blocked;
    }
    if (r.status == IoStatus::closed) {
      return fail("the server closed the connection");
    }
    if (r.status != IoStatus::ok) {
      return fail("read failed: " + m_transport.error());
    }
    m_in_len += r.bytes;
    // Bytes TLS decrypted but did not hand over are invisible to poll/epoll: take them
    // now (at most one record, so the buffer grows by that much at worst).
    size_t pending = m_transport.pending();
    if (pending == 0) {
      break;
    }
    if (m_in_cap - m_in_len < pending) {
      size_t cap = std::max(m_in_cap * 2, m_in_len + pending);
      auto bigger = std::make_unique<char[]>(cap);
      std::memcpy(bigger.get(), m_in.get(), m_in_len);
      m_in = std::move(bigger);
      m_in_cap = cap;
    }
  }
  // A TLS write that stopped for want of a readable socket goes on now.
  if (m_transport.write_wants_read() && !m_transport.read_wants_write() && wants_write() &&
      flush() == Io::failed) {
    return Io::failed;
  }
  return Io::ok;
}

bool PipelinedConnection::next_reply(ReplyView& out) {
  if (failed() || m_scan_pos == m_in_len) {
    return false;
  }
  size_t used = 0;
  auto status = m_scanner.scan(m_in.get() + m_scan_pos, m_in_len - m_scan_pos, used);
  m_scan_pos += used;
  if (status == ReplyScanner::Status::need_more) {
    return false;
  }
  if (status == ReplyScanner::Status::error) {
    fail("bad reply: " + std::string(m_scanner.protocol_error()));
    return false;
  }
  if (m_in_flight == 0) {
    fail("a reply nobody asked for");
    return false;
  }
  --m_in_flight;
  out.bytes = std::string_view(m_in.get() + m_in_pos, m_scan_pos - m_in_pos);
  out.is_error = m_scanner.last_is_error();
  out.is_null = m_scanner.last_is_null();
  out.error_text = out.is_error ? std::string_view(m_scanner.error_text()) : std::string_view();
  m_in_pos = m_scan_pos;
  return true;
}

PipelinedConnection::Io PipelinedConnection::poll(std::chrono::milliseconds timeout) {
  if (flush() == Io::failed) {
    return Io::failed;
  }
  if (m_in_flight == 0 && !wants_write()) {
    return Io::ok;
  }
  pollfd pfd{m_fd, static_cast<short>(POLLIN | (wants_write() ? POLLOUT : 0)), 0};
  int rc = 0;
  do {
    rc = ::poll(&pfd, 1, static_cast<int>(timeout.count()));
  } while (rc < 0 && errno == EINTR);
  if (rc < 0) {
    return fail(std::string("poll failed: ") + std::strerror(errno));
  }
  if (rc == 0) {
    return Io::blocked;
  }
  if ((pfd.revents & POLLOUT) != 0 && flush() == Io::failed) {
    return Io::failed;
  }
  if ((pfd.revents & (POLLIN | POLLHUP | POLLERR)) != 0 && fill() == Io::failed) {
    return Io::failed;
  }
  return Io::ok;
}

Expected<ReplyView, std::string> PipelinedConnection::wait_reply(
    std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  ReplyView reply;
  for (;;) {
    if (next_reply(reply)) {
      return reply;
    }
    if (failed()) {
      return Unexpected{m_error};
    }
    if (m_in_flight == 0) {
      return Unexpected{"no request is waiting for a reply (" + m_endpoint.describe() + ")"};
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      return Unexpected{"timed out waiting for a reply (" + m_endpoint.describe() + ")"};
    }
    if (poll(left) == Io::failed) {
      return Unexpected{m_error};
    }
  }
}

}  // namespace keyshift::engine
