#include "engine/resp/connection.hpp"

#include "engine/resp/request_writer.hpp"
#include "engine/resp/server_url.hpp"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <utility>

namespace keyshift::engine {
namespace {

bool parse_int(std::string_view text, int& out) {
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && ptr == text.data() + text.size();
}

std::string errno_text(int err) {
  return std::strerror(err);
}

// Waits for a non-blocking connect to finish; returns 0 or an errno value.
int finish_connect(int fd, std::chrono::milliseconds timeout) {
  pollfd pfd{fd, POLLOUT, 0};
  int rc;
  do {
    rc = ::poll(&pfd, 1, static_cast<int>(timeout.count()));
  } while (rc < 0 && errno == EINTR);
  if (rc == 0) {
    return ETIMEDOUT;
  }
  if (rc < 0) {
    return errno;
  }
  int err = 0;
  socklen_t len = sizeof(err);
  if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) {
    return errno;
  }
  return err;
}

// Connects `fd` to `addr`, bounded by `timeout`, and leaves it blocking with I/O timeouts.
int connect_with_timeout(int fd, const sockaddr* addr, socklen_t len,
                         std::chrono::milliseconds timeout) {
  int flags = ::fcntl(fd, F_GETFL, 0);
  ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
  int err = 0;
  if (::connect(fd, addr, len) != 0) {
    err = errno == EINPROGRESS ? finish_connect(fd, timeout) : errno;
  }
  ::fcntl(fd, F_SETFL, flags);
  if (err != 0) {
    return err;
  }
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(timeout.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((timeout.count() % 1000) * 1000);
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  return 0;
}

}  // namespace

std::string RespEndpoint::describe() const {
  if (!unix_path.empty()) {
    return "unix:" + unix_path;
  }
  if (host.find(':') != std::string::npos) {
    return "[" + host + "]:" + std::to_string(port);
  }
  return host + ":" + std::to_string(port);
}

Expected<RespEndpoint, std::string> parse_redis_url(std::string_view url) {
  RespEndpoint ep;
  auto fail = [&](std::string_view why) -> Expected<RespEndpoint, std::string> {
    return Unexpected{"bad URL '" + std::string(url) + "': " + std::string(why)};
  };
  if (url.find("://") == std::string_view::npos) {
    return fail("expected SCHEME://");
  }
  auto parsed = parse_server_url(url);
  if (!parsed) {
    return fail(
        "expected redis://[[user]:password@]host[:port][/db] or unix://[[user]:password@]/path");
  }
  const ServerUrl& u = *parsed;
  ep.tls.enabled = u.scheme == "rediss" || u.scheme == "tls";
  auto decode = [&](const std::optional<std::string>& part) -> std::optional<std::string> {
    return part ? percent_decode(*part) : std::optional<std::string>(std::string());
  };
  std::optional<std::string> user = decode(u.user);
  std::optional<std::string> pass = decode(u.password);
  if (!user || !pass) {
    return fail("bad percent escape in user or password");
  }
  if (u.user && !u.password) {
    // redis://secret@host: a lone user info is the password, as redis-cli reads it.
    std::swap(user, pass);
  }
  ep.user = *user;
  ep.password = *pass;
  if (u.socket_form) {
    auto path = percent_decode(u.socket);
    if (!path) {
      return fail("bad percent escape in the socket path");
    }
    ep.unix_path = *path;
  } else {
    std::string_view host = u.host;
    if (host.starts_with('[')) {
      if (!host.ends_with(']')) {
        return fail("unterminated [IPv6] host");
      }
      host = host.substr(1, host.size() - 2);
    }
    if (!host.empty()) {
      ep.host = std::string(host);
    }
    if (u.port <= 0 || u.port > 65535) {
      return fail("port must be 1-65535");
    }
    ep.port = u.port;
    if (!u.path_rest.empty() && u.path_rest != "/") {
      return fail("database must be a number");
    }
    if (u.db_path && !parse_int(*u.db_path, ep.db)) {
      return fail("database must be a number");
    }
  }
  for (const auto& [name, raw] : u.query) {
    auto decoded = percent_decode(raw.value_or(""));
    if (!decoded) {
      return fail("bad percent escape");
    }
    if (name == "db" || name == "database") {
      if (!parse_int(*decoded, ep.db)) {
        return fail("database must be a number");
      }
    } else if (name == "password" || name == "auth") {
      ep.password = *decoded;
    } else if (name == "user" || name == "username") {
      ep.user = *decoded;
    } else if (name == "protocol") {
      if (!parse_int(*decoded, ep.protocol) || (ep.protocol != 2 && ep.protocol != 3)) {
        return fail("protocol must be 2 or 3");
      }
    }
    // Other parameters (timeout=, persistent=, as PHP clients write them) do not change
    // where the server is, so they are accepted and ignored.
  }
  if (ep.db < 0) {
    return fail("database must not be negative");
  }
  return ep;
}

Expected<RespEndpoint, std::string> parse_redis_url(std::string_view url,
                                                    const TlsClientOptions& tls) {
  auto ep = parse_redis_url(url);
  if (ep && ep->unix_path.empty()) {
    merge_tls_options(ep->tls, tls);
  }
  return ep;
}

RespConnection::RespConnection(int fd, RespEndpoint endpoint, std::chrono::milliseconds timeout)
    : m_fd(fd), m_transport(fd), m_endpoint(std::move(endpoint)), m_timeout(timeout) {}

RespConnection::RespConnection(RespConnection&& other) noexcept
    : m_fd(std::exchange(other.m_fd, -1)),
      m_transport(std::move(other.m_transport)),
      m_endpoint(std::move(other.m_endpoint)),
      m_timeout(other.m_timeout),
      m_in(std::move(other.m_in)),
      m_in_pos(other.m_in_pos) {}

RespConnection& RespConnection::operator=(RespConnection&& other) noexcept {
  if (this != &other) {
    if (m_fd >= 0) {
      ::close(m_fd);
    }
    m_transport = Transport();
    m_fd = std::exchange(other.m_fd, -1);
    m_transport = std::move(other.m_transport);
    m_endpoint = std::move(other.m_endpoint);
    m_timeout = other.m_timeout;
    m_in = std::move(other.m_in);
    m_in_pos = other.m_in_pos;
  }
  return *this;
}

RespConnection::~RespConnection() {
  if (m_fd >= 0) {
    m_transport.shutdown();
    m_transport = Transport();
    ::close(m_fd);
  }
}

std::string RespConnection::error_text(std::string_view what) const {
  std::string text = std::string(what) + " (" + m_endpoint.describe() + ")";
  if (m_transport.is_tls() && what.find("certificate required") != std::string_view::npos) {
    text += ": the server wants a client certificate (--cert and --key)";
  } else if (m_transport.is_tls() && what.find("reset by peer") != std::string_view::npos) {
    text +=
        ": the server ended the TLS session (does it want a client certificate? --cert "
        "and --key)";
  }
  return text;
}

Expected<RespConnection, std::string> RespConnection::connect(const RespEndpoint& endpoint,
                                                              std::chrono::milliseconds timeout) {
  int fd = -1;
  auto failure = [&](std::string_view what, int err) -> Expected<RespConnection, std::string> {
    return Unexpected{"cannot connect to " + endpoint.describe() + ": " + std::string(what) +
                      (err != 0 ? ": " + errno_text(err) : std::string())};
  };
  if (!endpoint.unix_path.empty()) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (endpoint.unix_path.size() >= sizeof(addr.sun_path)) {
      return failure("path too long", 0);
    }
    std::memcpy(addr.sun_path, endpoint.unix_path.c_str(), endpoint.unix_path.size() + 1);
    fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      return failure("socket", errno);
    }
    if (int err =
            connect_with_timeout(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr), timeout);
        err != 0) {
      ::close(fd);
      return failure("connect", err);
    }
  } else {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    std::string port = std::to_string(endpoint.port);
    if (int rc = ::getaddrinfo(endpoint.host.c_str(), port.c_str(), &hints, &found); rc != 0) {
      return failure(::gai_strerror(rc), 0);
    }
    int last_err = 0;
    for (addrinfo* ai = found; ai != nullptr; ai = ai->ai_next) {
      fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
      if (fd < 0) {
        last_err = errno;
        continue;
      }
      last_err = connect_with_timeout(fd, ai->ai_addr, ai->ai_addrlen, timeout);
      if (last_err == 0) {
        break;
      }
      ::close(fd);
      fd = -1;
    }
    ::freeaddrinfo(found);
    if (fd < 0) {
      return failure("connect", last_err);
    }
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  }
  RespConnection conn(fd, endpoint, timeout);
  if (endpoint.tls.enabled && endpoint.unix_path.empty()) {
    auto context = TlsContext::client(endpoint.tls);
    if (!context) {
      return failure(context.error(), 0);
    }
    const std::string& name = endpoint.tls.sni.empty() ? endpoint.host : endpoint.tls.sni;
    auto tls = Transport::tls_client(fd, *context, name,
                                     !endpoint.tls.insecure && endpoint.tls.verify_host);
    if (!tls) {
      return failure(tls.error(), 0);
    }
    // The socket blocks with the I/O timeouts set above: the handshake either finishes
    // here or ran out of time.
    IoStatus status = tls->handshake();
    if (status == IoStatus::want_read || status == IoStatus::want_write) {
      return failure("TLS handshake timed out", 0);
    }
    if (status != IoStatus::ok) {
      return failure(tls->error(), 0);
    }
    conn.m_transport = std::move(*tls);
  }
  auto login = [&](const std::vector<std::string>& args) -> Expected<bool, std::string> {
    auto reply = conn.call(args);
    if (!reply) {
      return Unexpected{reply.error()};
    }
    if (reply->is_error()) {
      return Unexpected{"cannot connect to " + endpoint.describe() + ": " + args[0] +
                        " failed: " + reply->str};
    }
    return true;
  };
  if (endpoint.protocol == 3) {
    std::vector<std::string> hello{"HELLO", "3"};
    if (!endpoint.password.empty()) {
      hello.insert(hello.end(),
                   {"AUTH", endpoint.user.empty() ? "default" : endpoint.user, endpoint.password});
    }
    if (auto ok = login(hello); !ok) {
      return Unexpected{ok.error()};
    }
  } else if (!endpoint.password.empty()) {
    std::vector<std::string> auth{"AUTH"};
    if (!endpoint.user.empty()) {
      auth.push_back(endpoint.user);
    }
    auth.push_back(endpoint.password);
    if (auto ok = login(auth); !ok) {
      return Unexpected{ok.error()};
    }
  }
  if (endpoint.db != 0) {
    if (auto ok = login({"SELECT", std::to_string(endpoint.db)}); !ok) {
      return Unexpected{ok.error()};
    }
  }
  if (conn.is_tls() && endpoint.protocol != 3 && endpoint.password.empty() && endpoint.db == 0) {
    // Under TLS 1.3 a server that refuses the client's certificate says so only after the
    // handshake: one round trip here turns that into a connect error naming the reason
    // (any reply, NOAUTH included, means the session was accepted).
    if (auto reply = conn.call({"PING"}); !reply) {
      return Unexpected{"cannot connect to " + endpoint.describe() + ": " + reply.error()};
    }
  }
  return conn;
}

int RespConnection::release() {
  if (m_in_pos < m_in.size() || m_transport.is_tls()) {
    return -1;
  }
  m_transport = Transport();
  return std::exchange(m_fd, -1);
}

Transport RespConnection::release_transport() {
  if (m_in_pos < m_in.size()) {
    return Transport();
  }
  m_fd = -1;
  return std::exchange(m_transport, Transport());
}

Expected<bool, std::string> RespConnection::send_raw(std::string_view bytes) {
  while (!bytes.empty()) {
    IoResult r = m_transport.write(bytes.data(), bytes.size());
    if (r.status == IoStatus::want_read || r.status == IoStatus::want_write) {
      return Unexpected{error_text("timed out sending a request")};
    }
    if (r.status != IoStatus::ok) {
      return Unexpected{error_text("write failed: " + m_transport.error())};
    }
    bytes.remove_prefix(r.bytes);
  }
  return true;
}

Expected<RespValue, std::string> RespConnection::read_reply() {
  for (;;) {
    if (m_in_pos < m_in.size()) {
      RespValue value;
      size_t consumed = 0;
      std::string_view pending(m_in.data() + m_in_pos, m_in.size() - m_in_pos);
      switch (parse_resp(pending, value, consumed)) {
        case RespParse::ok:
          m_in_pos += consumed;
          if (m_in_pos == m_in.size()) {
            m_in.clear();
            m_in_pos = 0;
          }
          return value;
        case RespParse::error:
          return Unexpected{error_text("protocol error in the server's reply")};
        case RespParse::need_more:
          break;
      }
    }
    if (m_in_pos > 0) {
      m_in.erase(0, m_in_pos);
      m_in_pos = 0;
    }
    char buf[16384];
    IoResult r = m_transport.read(buf, sizeof(buf));
    if (r.status == IoStatus::want_read || r.status == IoStatus::want_write) {
      return Unexpected{error_text("timed out waiting for a reply")};
    }
    if (r.status == IoStatus::closed) {
      return Unexpected{error_text("the server closed the connection")};
    }
    if (r.status != IoStatus::ok) {
      return Unexpected{error_text("read failed: " + m_transport.error())};
    }
    m_in.append(buf, r.bytes);
  }
}

Expected<std::optional<RespValue>, std::string> RespConnection::poll_reply(
    std::chrono::milliseconds wait) {
  if (m_in_pos == m_in.size() && m_transport.pending() == 0) {
    pollfd pfd{m_fd, POLLIN, 0};
    int rc;
    do {
      rc = ::poll(&pfd, 1, static_cast<int>(wait.count()));
    } while (rc < 0 && errno == EINTR);
    if (rc < 0) {
      return Unexpected{error_text("poll failed: " + errno_text(errno))};
    }
    if (rc == 0) {
      return std::optional<RespValue>();
    }
  }
  auto reply = read_reply();
  if (!reply) {
    return Unexpected{reply.error()};
  }
  return std::optional<RespValue>(std::move(*reply));
}

Expected<RespValue, std::string> RespConnection::call(const std::vector<std::string>& args) {
  std::string request;
  append_request(request, args);
  if (auto sent = send_raw(request); !sent) {
    return Unexpected{sent.error()};
  }
  return read_reply();
}

Expected<std::vector<RespValue>, std::string> RespConnection::pipeline(
    const std::vector<std::vector<std::string>>& commands) {
  std::string request;
  for (const auto& args : commands) {
    append_request(request, args);
  }
  if (auto sent = send_raw(request); !sent) {
    return Unexpected{sent.error()};
  }
  std::vector<RespValue> replies;
  replies.reserve(commands.size());
  for (size_t i = 0; i < commands.size(); ++i) {
    auto reply = read_reply();
    if (!reply) {
      return Unexpected{reply.error()};
    }
    replies.push_back(std::move(*reply));
  }
  return replies;
}

}  // namespace keyshift::engine
