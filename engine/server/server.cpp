#include "engine/server/server.hpp"

#include "engine/acl/acl.hpp"
#include "engine/persistence/aof.hpp"
#include "engine/persistence/snapshots.hpp"
#include "engine/repl/primary.hpp"
#include "engine/repl/replica_link.hpp"
#include "engine/repl/replication_state.hpp"
#include "engine/resp/reply_builder.hpp"
#include "engine/scripting/script_engine.hpp"
#include "engine/server/config_table.hpp"
#include "engine/util/net_address.hpp"
#include "engine/util/strconv.hpp"

#include <fmt/format.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

namespace keyshift::engine {
namespace {

constexpr size_t k_read_chunk = 16 * 1024;
constexpr size_t k_max_events = 256;

std::string errno_text() {
  return std::strerror(errno);
}

/// The IP text and port of a TCP peer or local end, as inet_ntop writes them.
std::pair<std::string, int> ip_and_port(const sockaddr_storage& sa) {
  char host[INET6_ADDRSTRLEN] = {0};
  if (sa.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&sa);
    inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
    return {host, ntohs(in->sin_port)};
  }
  if (sa.ss_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&sa);
    inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
    return {host, ntohs(in6->sin6_port)};
  }
  return {"?", 0};
}

std::string peer_name(const sockaddr_storage& sa) {
  auto [ip, port] = ip_and_port(sa);
  return format_addr(ip, port);
}

constexpr std::string_view k_protected_mode_error =
    "-DENIED Running in protected mode because protected mode is enabled and no password is "
    "set for the default user. In this mode connections are only accepted from the loopback "
    "interface. If you want to connect from external computers, you may adopt one of the "
    "following solutions: 1) Just disable protected mode sending the command 'CONFIG SET "
    "protected-mode no' from the loopback interface by connecting from the same host the "
    "server is running, however MAKE SURE it's not publicly accessible from internet if you do "
    "so. Use CONFIG REWRITE to make this change permanent. 2) Alternatively you can just "
    "disable the protected mode by editing the configuration file, and setting the protected "
    "mode option to 'no', and then restarting the server. 3) If you started the server "
    "manually just for testing, restart it with the '--protected-mode no' option. 4) Set up "
    "an authentication password for the default user. NOTE: You only need to do one of the "
    "above things in order for the server to start accepting connections from the "
    "outside.\r\n";

}  // namespace

struct Server::Connection {
  int fd = -1;
  Transport transport;  // plain, or TLS for tls-port clients
  // A TLS client refused at accept (maxclients, protected mode) is told why once its
  // handshake is done, as Valkey does; it runs no command.
  std::string_view rejection;
  Session* session = nullptr;
  bool is_unix = false;
  std::vector<char> in;
  size_t in_start = 0;
  size_t in_end = 0;
  RequestParser parser;
  size_t out_pos = 0;
  bool pending = false;
  bool want_write = false;
  bool closing = false;
  bool resumed = false;  // queued in m_resumed
};

Server::Server(Engine& engine, Logger& log) : m_engine(engine), m_log(log) {
  auto sink = [&log](int level, std::string_view line) {
    log.log(static_cast<LogLevel>(level), line);
  };
  m_engine.scripting().set_log_sink(sink);
  m_engine.primary().set_log_sink(sink);
  m_engine.snapshots().set_log_sink(sink);
}

Server::~Server() {
  m_engine.scripting().set_log_sink(nullptr);
  m_engine.primary().set_log_sink(nullptr);
  m_engine.snapshots().set_log_sink(nullptr);
  for (auto& c : m_by_fd) {
    if (c) {
      m_engine.close_session(*c->session);
      ::close(c->fd);
    }
  }
  for (int fd : m_tcp_fds) {
    ::close(fd);
  }
  for (int fd : m_tls_fds) {
    ::close(fd);
  }
  if (m_unix_fd >= 0) {
    ::close(m_unix_fd);
    ::unlink(m_engine.config().unixsocket.c_str());
  }
  for (int fd : {m_epoll, m_event_fd, m_signal_fd}) {
    if (fd >= 0) {
      ::close(fd);
    }
  }
}

std::string Server::listen() {
  const EngineConfig& cfg = m_engine.config();
  m_epoll = epoll_create1(EPOLL_CLOEXEC);
  m_event_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGINT);
  pthread_sigmask(SIG_BLOCK, &mask, nullptr);
  m_signal_fd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
  signal(SIGPIPE, SIG_IGN);
  for (int fd : {m_event_fd, m_signal_fd}) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    epoll_ctl(m_epoll, EPOLL_CTL_ADD, fd, &ev);
  }

  if (cfg.port != 0) {
    if (auto err = bind_tcp(cfg.port, m_tcp_fds); !err.empty()) {
      return err;
    }
    m_bound_port = cfg.port;
  }
  if (cfg.tls_port != 0) {
    if (auto err = configure_tls(); !err.empty()) {
      return "Failed to configure TLS. Check logs for more info.";
    }
    if (auto err = bind_tcp(cfg.tls_port, m_tls_fds); !err.empty()) {
      return err;
    }
    m_bound_tls_port = cfg.tls_port;
  }
  if (!cfg.unixsocket.empty()) {
    ::unlink(cfg.unixsocket.c_str());
    int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    sockaddr_un su{};
    su.sun_family = AF_UNIX;
    if (cfg.unixsocket.size() >= sizeof(su.sun_path)) {
      ::close(fd);
      return "Failed opening Unix socket: path too long: " + cfg.unixsocket;
    }
    std::memcpy(su.sun_path, cfg.unixsocket.c_str(), cfg.unixsocket.size() + 1);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&su), sizeof(su)) != 0 ||
        (cfg.unixsocketperm != 0 && ::chmod(cfg.unixsocket.c_str(), cfg.unixsocketperm) != 0)) {
      std::string why = errno_text();
      ::close(fd);
      return "Failed opening Unix socket: " + why + " (" + cfg.unixsocket + ")";
    }
    // unixsocketgroup: who may connect is the socket's group, as in Valkey.
    if (!cfg.unixsocketgroup.empty()) {
      errno = 0;
      const group* grp = ::getgrnam(cfg.unixsocketgroup.c_str());
      if (grp == nullptr ||
          ::chown(cfg.unixsocket.c_str(), static_cast<uid_t>(-1), grp->gr_gid) != 0) {
        std::string why =
            fmt::format("{} error for group '{}': {}", grp == nullptr ? "getgrnam" : "chown",
                        cfg.unixsocketgroup, errno_text());
        ::close(fd);
        return "Failed opening Unix socket: " + why;
      }
    }
    if (::listen(fd, cfg.tcp_backlog) != 0) {
      std::string why = errno_text();
      ::close(fd);
      return "Failed opening Unix socket: " + why + " (" + cfg.unixsocket + ")";
    }
    m_unix_fd = fd;
  }
  if (m_tcp_fds.empty() && m_tls_fds.empty() && m_unix_fd < 0) {
    return "Configured to not listen anywhere, exiting.";
  }
  std::vector<int> listeners = m_tcp_fds;
  listeners.insert(listeners.end(), m_tls_fds.begin(), m_tls_fds.end());
  for (int fd : listeners) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    epoll_ctl(m_epoll, EPOLL_CTL_ADD, fd, &ev);
  }
  if (m_unix_fd >= 0) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = m_unix_fd;
    epoll_ctl(m_epoll, EPOLL_CTL_ADD, m_unix_fd, &ev);
  }
  m_engine.identity().multiplexing_api = "epoll";
  return {};
}

std::string Server::bind_tcp(int port, std::vector<int>& fds) {
  const EngineConfig& cfg = m_engine.config();
  for (const std::string& raw : cfg.bind) {
    bool optional = !raw.empty() && raw[0] == '-';
    std::string addr = optional ? raw.substr(1) : raw;
    if (addr == "*") {
      addr = "0.0.0.0";
    } else if (addr == "::*") {
      addr = "::";
    }
    bool v6 = addr.find(':') != std::string::npos;
    int fd = ::socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_storage sa{};
    socklen_t len = 0;
    bool parsed = false;
    if (v6) {
      setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
      auto* in6 = reinterpret_cast<sockaddr_in6*>(&sa);
      in6->sin6_family = AF_INET6;
      in6->sin6_port = htons(static_cast<uint16_t>(port));
      parsed = inet_pton(AF_INET6, addr.c_str(), &in6->sin6_addr) == 1;
      len = sizeof(sockaddr_in6);
    } else {
      auto* in = reinterpret_cast<sockaddr_in*>(&sa);
      in->sin_family = AF_INET;
      in->sin_port = htons(static_cast<uint16_t>(port));
      parsed = inet_pton(AF_INET, addr.c_str(), &in->sin_addr) == 1;
      len = sizeof(sockaddr_in);
    }
    if (!parsed || ::bind(fd, reinterpret_cast<sockaddr*>(&sa), len) != 0 ||
        ::listen(fd, cfg.tcp_backlog) != 0) {
      std::string why = parsed ? errno_text() : "Invalid address";
      ::close(fd);
      if (optional && (errno == EADDRNOTAVAIL || errno == EAFNOSUPPORT || !parsed ||
                       errno == EPROTONOSUPPORT)) {
        continue;
      }
      return "Warning: Could not create server TCP listening socket " + addr + ":" +
             std::to_string(port) + ": bind: " + why + "\nFailed listening on port " +
             std::to_string(port) + " (tcp), aborting.";
    }
    fds.push_back(fd);
  }
  return {};
}

TlsServerOptions tls_server_options(const EngineConfig& cfg) {
  TlsServerOptions o;
  o.cert_file = cfg.tls_cert_file;
  o.key_file = cfg.tls_key_file;
  o.key_file_pass = cfg.tls_key_file_pass;
  o.ca_file = cfg.tls_ca_cert_file;
  o.ca_dir = cfg.tls_ca_cert_dir;
  o.dh_params_file = cfg.tls_dh_params_file;
  o.protocols = cfg.tls_protocols;
  o.ciphers = cfg.tls_ciphers;
  o.ciphersuites = cfg.tls_ciphersuites;
  o.prefer_server_ciphers = cfg.tls_prefer_server_ciphers;
  o.session_caching = cfg.tls_session_caching;
  o.session_cache_size = cfg.tls_session_cache_size;
  o.session_cache_timeout = cfg.tls_session_cache_timeout;
  auto tls_cluster = cfg.unimplemented_settings.find("tls-cluster");
  o.needs_ca = cfg.tls_auth_clients != static_cast<int>(TlsAuthClients::no) ||
               cfg.tls_replication ||
               (tls_cluster != cfg.unimplemented_settings.end() && tls_cluster->second == "yes");
  return o;
}

TlsClientOptions tls_replication_client_options(const EngineConfig& cfg) {
  TlsClientOptions o;
  o.enabled = cfg.tls_replication;
  bool own_client_cert = !cfg.tls_client_cert_file.empty();
  o.cert_file = own_client_cert ? cfg.tls_client_cert_file : cfg.tls_cert_file;
  o.key_file = own_client_cert ? cfg.tls_client_key_file : cfg.tls_key_file;
  o.key_file_pass = own_client_cert ? cfg.tls_client_key_file_pass : cfg.tls_key_file_pass;
  o.ca_file = cfg.tls_ca_cert_file;
  o.ca_dir = cfg.tls_ca_cert_dir;
  o.ciphers = cfg.tls_ciphers;
  o.ciphersuites = cfg.tls_ciphersuites;
  // Valkey checks a primary's chain against the CA but not the name it was dialled by.
  o.verify_host = false;
  return o;
}

// Builds the TLS context from the tls-* settings; the error is logged as Valkey logs it.
std::string Server::configure_tls() {
  auto context = TlsContext::server(tls_server_options(m_engine.config()));
  if (!context) {
    m_log.warning(context.error());
    return context.error();
  }
  m_tls = std::move(*context);
  return {};
}

bool Server::is_listener(int fd, bool& tls) const {
  tls = std::find(m_tls_fds.begin(), m_tls_fds.end(), fd) != m_tls_fds.end();
  return tls || std::find(m_tcp_fds.begin(), m_tcp_fds.end(), fd) != m_tcp_fds.end();
}

std::optional<std::string> Server::apply_config(std::span<const std::string_view> changed) {
  const EngineConfig& cfg = m_engine.config();
  bool context_changed = false;
  bool port_changed = false;
  for (std::string_view name : changed) {
    if (name == "tls-port") {
      port_changed = true;
    } else if (name.starts_with("tls-") && name != "tls-auth-clients") {
      context_changed = true;
    } else if (name == "port" && cfg.port != m_bound_port) {
      // As Valkey's changeListener: the new port is bound before the old one is let go,
      // so a port in use leaves the server listening where it was.
      if (auto err = relisten(cfg.port, m_tcp_fds)) {
        return err;
      }
      m_bound_port = cfg.port;
    }
  }
  // As Valkey's applyTlsCfg: a changed setting rebuilds the context while TLS is in use
  // (connections made before keep theirs); the files are read again even when unchanged.
  if ((context_changed && (cfg.tls_port != 0 || cfg.tls_replication)) ||
      (port_changed && cfg.tls_port != 0 && !m_tls.valid())) {
    if (!configure_tls().empty()) {
      return std::string("Unable to update TLS configuration. Check server logs.");
    }
  }
  if (port_changed && cfg.tls_port != m_bound_tls_port) {
    if (auto err = relisten(cfg.tls_port, m_tls_fds)) {
      return err;
    }
    m_bound_tls_port = cfg.tls_port;
  }
  return std::nullopt;
}

std::optional<std::string> Server::relisten(int port, std::vector<int>& listeners) {
  std::vector<int> fds;
  if (port != 0) {
    if (auto err = bind_tcp(port, fds); !err.empty()) {
      m_log.warning(err);
      return std::string("Unable to listen on this port. Check server logs.");
    }
  }
  for (int fd : listeners) {
    epoll_ctl(m_epoll, EPOLL_CTL_DEL, fd, nullptr);
    ::close(fd);
  }
  listeners = std::move(fds);
  for (int fd : listeners) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    epoll_ctl(m_epoll, EPOLL_CTL_ADD, fd, &ev);
  }
  return std::nullopt;
}

void Server::accept_from(int listen_fd, bool is_unix, bool tls) {
  const EngineConfig& cfg = m_engine.config();
  for (int i = 0; i < 1000; ++i) {
    sockaddr_storage sa{};
    socklen_t len = sizeof(sa);
    int fd =
        ::accept4(listen_fd, reinterpret_cast<sockaddr*>(&sa), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      return;
    }
    static constexpr std::string_view k_max_clients_error =
        "-ERR max number of clients reached\r\n";
    std::string_view rejection;
    if (m_clients >= static_cast<size_t>(cfg.maxclients)) {
      rejection = k_max_clients_error;
    } else if (!is_unix && cfg.protected_mode && m_engine.users().default_user().nopass &&
               !is_local_ip(ip_and_port(sa).first)) {
      rejection = k_protected_mode_error;
    }
    if (!rejection.empty()) {
      ++m_engine.stats().rejected_connections;
    }
    if (!rejection.empty() && !tls) {
      [[maybe_unused]] ssize_t w = ::write(fd, rejection.data(), rejection.size());
      ::close(fd);
      continue;
    }
    if (!is_unix) {
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      if (cfg.tcp_keepalive > 0) {
        setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
      }
    }
    auto c = std::make_unique<Connection>();
    c->fd = fd;
    c->transport = Transport(fd);
    if (tls) {
      auto session =
          Transport::tls_server(fd, m_tls, static_cast<TlsAuthClients>(cfg.tls_auth_clients));
      if (!session) {
        m_log.warning("Error accepting a client connection: " + session.error());
        ::close(fd);
        continue;
      }
      c->transport = std::move(*session);
      c->rejection = rejection;
    }
    c->is_unix = is_unix;
    c->in.resize(k_read_chunk);
    c->session = &m_engine.open_session(this);
    c->session->fd = fd;
    if (is_unix) {
      c->session->set(k_session_unix_socket);
      c->session->addr = cfg.unixsocket + ":0";
      c->session->laddr = cfg.unixsocket + ":0";
    } else {
      c->session->addr = peer_name(sa);
      sockaddr_storage local{};
      socklen_t llen = sizeof(local);
      getsockname(fd, reinterpret_cast<sockaddr*>(&local), &llen);
      c->session->laddr = peer_name(local);
    }
    if (rejection.empty()) {
      ++m_engine.stats().total_connections_received;
    }
    ++m_clients;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    epoll_ctl(m_epoll, EPOLL_CTL_ADD, fd, &ev);
    if (static_cast<size_t>(fd) >= m_by_fd.size()) {
      m_by_fd.resize(static_cast<size_t>(fd) + 1);
    }
    m_by_fd[static_cast<size_t>(fd)] = std::move(c);
  }
}

void Server::handle_readable(Connection& c) {
  if (!c.transport.handshake_done()) {
    IoStatus step = c.transport.handshake();
    if (step == IoStatus::error || step == IoStatus::closed) {
      m_log.verbose(fmt::format("Error accepting a client connection: {} (addr={} laddr={})",
                                c.transport.error(), c.session->addr, c.session->laddr));
      close_connection(c);
      return;
    }
    update_interest(c, c.want_write);
    if (step != IoStatus::ok) {
      return;
    }
    if (!c.rejection.empty()) {
      [[maybe_unused]] IoResult sent = c.transport.write(c.rejection.data(), c.rejection.size());
      close_connection(c);
      return;
    }
  }
  // Plain sockets read once per event; over TLS, bytes already decrypted (pending) are
  // taken too, since epoll cannot see them.
  size_t total = 0;
  size_t min_room = k_read_chunk;
  for (;;) {
    // Make room: compact the unparsed tail to the front, and grow for a large bulk.
    size_t used = c.in_end - c.in_start;
    if (c.in_start > 0 && (c.in.size() - c.in_end < k_read_chunk / 2)) {
      std::memmove(c.in.data(), c.in.data() + c.in_start, used);
      c.in_start = 0;
      c.in_end = used;
    }
    size_t want = min_room;
    size_t pending_bulk = c.parser.pending_bulk();
    if (pending_bulk > 0 && pending_bulk + 2 > c.in_end - c.in_start) {
      want = std::max(want, pending_bulk + 2 - (c.in_end - c.in_start));
    }
    if (c.in.size() - c.in_end < want) {
      c.in.resize(c.in_end + want);
    }
    IoResult r = c.transport.read(c.in.data() + c.in_end, c.in.size() - c.in_end);
    if (r.status == IoStatus::ok) {
      c.in_end += r.bytes;
      total += r.bytes;
      size_t pending = c.transport.pending();
      if (pending == 0) {
        break;
      }
      min_room = pending;
      continue;
    }
    if (r.status == IoStatus::want_write) {
      update_interest(c, c.want_write);
      break;
    }
    if (r.status == IoStatus::want_read) {
      break;
    }
    // Closed or failed: commands read before in this call still run; the next event
    // finds the end again.
    if (total == 0) {
      if (r.status == IoStatus::error && c.transport.is_tls()) {
        m_log.verbose(fmt::format("Error reading from client: {} (addr={})", c.transport.error(),
                                  c.session->addr));
      }
      close_connection(c);
      return;
    }
    break;
  }
  if (total == 0) {
    return;
  }
  c.session->net_input_bytes += static_cast<uint64_t>(total);
  m_engine.stats().total_net_input_bytes += static_cast<uint64_t>(total);
  process_input(c);
  if (!c.closing && c.in_end - c.in_start > m_engine.config().client_query_buffer_limit) {
    m_log.warning("Closing client that reached max query buffer length");
    ++m_engine.stats().client_query_buffer_limit_disconnections;
    close_connection(c);
  }
}

void Server::process_input(Connection& c) {
  Session& s = *c.session;
  RequestLimits limits;
  limits.proto_max_bulk_len = m_engine.config().proto_max_bulk_len;
  // A blocked client reads no further commands until its blocking one has replied.
  while (!c.closing && c.in_start < c.in_end &&
         (s.flags & (k_session_close_after_reply | k_session_close_asap | k_session_blocked |
                     k_session_postponed)) == 0) {
    limits.auth_required = m_engine.auth_required(s);
    const char* base = c.in.data() + c.in_start;
    auto status = c.parser.parse(base, c.in_end - c.in_start, limits);
    if (status == RequestParser::Status::need_more) {
      break;
    }
    if (status == RequestParser::Status::error) {
      ReplyBuilder rb(s.out, s.resp);
      rb.error("ERR " + std::string(c.parser.error()));
      ++m_engine.stats().total_error_replies;
      s.set(k_session_close_after_reply);
      c.in_start = c.in_end;
      c.parser.reset();
      break;
    }
    size_t consumed = c.parser.consumed();
    if (status == RequestParser::Status::ready) {
      // While a busy script runs, its command's arguments live in m_argv.
      std::vector<std::string_view> busy_argv;
      std::vector<std::string_view>& argv = m_serving_busy ? busy_argv : m_argv;
      c.parser.args(base, argv);
      m_engine.execute(s, argv);
      if (s.out.size() > Session::k_reply_buffer_bytes) {
        wake(s);  // a pipeline of big replies is held to the output limit as it grows
      }
    }
    c.parser.reset();
    c.in_start += consumed;
  }
  if (c.in_start == c.in_end) {
    c.in_start = 0;
    c.in_end = 0;
  }
  if (!s.out.empty() || (s.flags & (k_session_close_after_reply | k_session_close_asap)) != 0) {
    wake(s);
  }
}

void Server::wake(Session& session) {
  if (session.fd < 0 || static_cast<size_t>(session.fd) >= m_by_fd.size()) {
    return;
  }
  // Output was added (a reply, a published message, a MONITOR line): the check Valkey makes
  // on every reply block it allocates. A client over its limit is dropped, unflushed, once
  // the events are handled.
  if (auto client = m_engine.enforce_output_buffer_limit(session)) {
    m_log.warning("Client " + *client +
                  " scheduled to be closed ASAP for overcoming of output buffer limits.");
  }
  Connection* c = m_by_fd[static_cast<size_t>(session.fd)].get();
  if (c != nullptr && !c->pending) {
    c->pending = true;
    m_pending.push_back(c);
  }
}

void Server::request_shutdown() {
  m_stopping = true;
}

void Server::resume(Session& session) {
  if (session.fd < 0 || static_cast<size_t>(session.fd) >= m_by_fd.size()) {
    return;
  }
  Connection* c = m_by_fd[static_cast<size_t>(session.fd)].get();
  if (c != nullptr && !c->resumed) {
    c->resumed = true;
    m_resumed.push_back(c);
  }
}

void Server::serve_while_busy(Session& caller) {
  if (m_serving_busy) {
    return;
  }
  m_serving_busy = true;
  epoll_event events[k_max_events];
  int n = epoll_wait(m_epoll, events, k_max_events, 0);
  for (int i = 0; i < n; ++i) {
    int fd = events[i].data.fd;
    // Signals and stop requests stay pending (level-triggered) for the main loop.
    if (fd == m_signal_fd || fd == m_event_fd) {
      continue;
    }
    if (fd == m_unix_fd) {
      accept_from(fd, true);
      continue;
    }
    if (bool tls = false; is_listener(fd, tls)) {
      accept_from(fd, false, tls);
      continue;
    }
    if (static_cast<size_t>(fd) >= m_by_fd.size()) {
      continue;
    }
    Connection* c = m_by_fd[static_cast<size_t>(fd)].get();
    if (c == nullptr || c->closing || c->session == &caller) {
      continue;
    }
    if ((events[i].events & EPOLLOUT) != 0) {
      wake(*c->session);
    }
    if ((events[i].events & EPOLLIN) != 0) {
      handle_readable(*c);
    }
  }
  // Replies go out now, but not the caller's: its connection waits for the script.
  std::vector<Connection*> later;
  for (Connection* c : m_pending) {
    if (c->session == &caller) {
      later.push_back(c);
      continue;
    }
    c->pending = false;
    if (!c->closing && (c->session->has(k_session_close_asap) || !flush(*c))) {
      close_connection(*c);
    }
  }
  m_pending = std::move(later);
  m_serving_busy = false;
}

void Server::update_interest(Connection& c, bool want_write) {
  // A TLS handshake or read may need the socket writable even with no output queued.
  want_write = want_write || c.transport.read_wants_write();
  if (c.want_write == want_write) {
    return;
  }
  c.want_write = want_write;
  epoll_event ev{};
  ev.events = want_write ? (EPOLLIN | EPOLLOUT) : EPOLLIN;
  ev.data.fd = c.fd;
  epoll_ctl(m_epoll, EPOLL_CTL_MOD, c.fd, &ev);
}

bool Server::flush(Connection& c) {
  Session& s = *c.session;
  if (!c.transport.handshake_done()) {
    return true;  // replies wait for the handshake (none can exist before it)
  }
  while (c.out_pos < s.out.size()) {
    IoResult r = c.transport.write(s.out.data() + c.out_pos, s.out.size() - c.out_pos);
    if (r.status != IoStatus::ok) {
      if (r.status == IoStatus::want_write || r.status == IoStatus::want_read) {
        // Drop the sent part once it is most of the buffer, so that what the session holds
        // (and the output limit counts) is what the peer has yet to read.
        if (c.out_pos >= k_read_chunk && c.out_pos * 2 >= s.out.size()) {
          s.out.erase(0, c.out_pos);
          c.out_pos = 0;
        }
        // Over TLS a write may wait for the socket to be readable (EPOLLIN is always on).
        update_interest(c, r.status == IoStatus::want_write);
        return true;
      }
      return false;
    }
    c.out_pos += r.bytes;
    s.net_output_bytes += static_cast<uint64_t>(r.bytes);
    m_engine.stats().total_net_output_bytes += static_cast<uint64_t>(r.bytes);
  }
  s.out.clear();
  if (s.out.capacity() > 1024 * 1024) {
    s.out.shrink_to_fit();
  }
  c.out_pos = 0;
  update_interest(c, false);
  return (s.flags & (k_session_close_after_reply | k_session_close_asap)) == 0;
}

void Server::close_connection(Connection& c) {
  if (c.closing) {
    return;
  }
  c.closing = true;
  m_to_close.push_back(&c);
}

void Server::after_events() {
  // Clients unblocked during this pass go on with the commands they had already sent
  // (which may unblock others in turn).
  for (size_t i = 0; i < m_resumed.size(); ++i) {
    Connection* c = m_resumed[i];
    c->resumed = false;
    if (!c->closing && !c->session->has(k_session_blocked) &&
        !c->session->has(k_session_postponed)) {
      m_engine.begin_batch();
      process_input(*c);
      m_engine.end_batch();
    }
  }
  m_resumed.clear();
  // The AOF is written (and with appendfsync always, fsynced) before any reply to the
  // writes it holds can leave.
  m_engine.before_replies();
  for (size_t i = 0; i < m_pending.size(); ++i) {
    Connection* c = m_pending[i];
    c->pending = false;
    if (c->closing) {
      continue;
    }
    if (c->session->has(k_session_close_asap) || !flush(*c)) {
      close_connection(*c);
    }
  }
  m_pending.clear();
  for (Connection* c : m_to_close) {
    int fd = c->fd;
    epoll_ctl(m_epoll, EPOLL_CTL_DEL, fd, nullptr);
    m_engine.close_session(*c->session);
    c->transport.shutdown();
    c->transport = Transport();
    ::close(fd);
    --m_clients;
    m_by_fd[static_cast<size_t>(fd)].reset();
  }
  m_to_close.clear();
}

void Server::cron() {
  m_engine.cron();
  const EngineConfig& cfg = m_engine.config();
  // As Valkey's clientsCron: a client whose output stalls at its soft limit is closed once
  // the soft seconds pass, even when nothing more is written to it.
  for (auto& c : m_by_fd) {
    if (c && !c->closing) {
      if (auto client = m_engine.enforce_output_buffer_limit(*c->session)) {
        m_log.warning("Client " + *client + " closed for overcoming of output buffer limits.");
        close_connection(*c);
      }
    }
  }
  if (cfg.timeout > 0) {
    int64_t now = m_engine.clock().now_ms();
    for (auto& c : m_by_fd) {
      if (c && !c->closing && !c->session->has(k_session_monitor) &&
          !c->session->has(k_session_replica) && !c->session->has(k_session_blocked) &&
          !c->session->has(k_session_postponed) && !c->session->has(k_session_pubsub) &&
          now - c->session->last_interaction_ms > static_cast<int64_t>(cfg.timeout) * 1000) {
        close_connection(*c);
      }
    }
  }
  for (auto& c : m_by_fd) {
    if (c) {
      c->session->query_buffer_bytes = c->in_end - c->in_start;
    }
  }
}

void Server::stop() {
  uint64_t one = 1;
  [[maybe_unused]] ssize_t w = ::write(m_event_fd, &one, sizeof(one));
}

void Server::watch_for_reading(int& registered, int fd) {
  if (fd == registered) {
    return;
  }
  if (registered >= 0) {
    // Called while the old descriptor is still open (or right after it closed, before any
    // accept could reuse the number).
    epoll_ctl(m_epoll, EPOLL_CTL_DEL, registered, nullptr);
  }
  registered = fd;
  if (fd >= 0) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    epoll_ctl(m_epoll, EPOLL_CTL_ADD, fd, &ev);
  }
}

void Server::watch_link() {
  watch_for_reading(m_link_fd, m_link->fd());
}

void Server::watch_payload() {
  watch_for_reading(m_payload_fd, m_engine.primary().payload_pipe());
  // Closed only now that epoll no longer holds it.
  m_engine.primary().release_pipe();
}

int Server::run() {
  epoll_event events[k_max_events];
  const Clock& clock = m_engine.clock();
  m_next_cron_us = clock.monotonic_us();
  m_link = std::make_unique<ReplicaLink>(m_engine, m_log);
  // replicaof in the config: "host port" (parse_replicaof checked it).
  if (const DirectiveSpec* spec = find_directive("replicaof")) {
    std::string to = directive_value(*spec, m_engine.config());
    if (size_t sp = to.rfind(' '); sp != std::string::npos) {
      m_engine.replication().follow(to.substr(0, sp), std::atoi(to.c_str() + sp + 1));
    }
  }
  while (!m_stopping) {
    m_engine.begin_batch();
    m_link->tick();
    m_engine.end_batch();
    watch_link();
    int hz = m_engine.config().hz > 0 ? m_engine.config().hz : 10;
    int64_t now = clock.monotonic_us();
    if (now >= m_next_cron_us) {
      cron();
      after_events();
      m_next_cron_us = now + 1000000 / hz;
    }
    // Blocked clients time out with ms precision, not only at cron ticks (Valkey checks
    // them before every sleep).
    m_engine.handle_blocked_timeouts();
    after_events();
    int timeout_ms = static_cast<int>((m_next_cron_us - now + 999) / 1000);
    int64_t deadline = m_engine.next_block_deadline_ms();
    if (deadline >= 0) {
      // A client times out once the clock is past its deadline.
      int64_t until = deadline + 1 - clock.now_ms();
      timeout_ms = static_cast<int>(std::min<int64_t>(timeout_ms, std::max<int64_t>(until, 0)));
    }
    if (timeout_ms < 0 || m_engine.primary().wants_pump()) {
      timeout_ms = 0;  // a replica's snapshot has its next chunk ready to go
    }
    watch_payload();
    int n = epoll_wait(m_epoll, events, k_max_events, timeout_ms);
    m_engine.begin_batch();
    for (int i = 0; i < n; ++i) {
      int fd = events[i].data.fd;
      if (fd == m_signal_fd) {
        signalfd_siginfo si;
        uint32_t signo = SIGTERM;
        while (::read(m_signal_fd, &si, sizeof(si)) == sizeof(si)) {
          signo = si.ssi_signo;
          m_log.warning(si.ssi_signo == SIGINT ? "Received SIGINT scheduling shutdown..."
                                               : "Received SIGTERM scheduling shutdown...");
        }
        // As Valkey: save first when save rules exist (or shutdown-on-<signal> says save,
        // unless it says nosave); a failed save keeps the server up rather than lose the
        // data, unless it says force.
        const std::string& how = signo == SIGINT ? m_engine.config().shutdown_on_sigint
                                                 : m_engine.config().shutdown_on_sigterm;
        auto has_word = [&](std::string_view word) {
          for (size_t start = 0; start < how.size();) {
            size_t end = std::min(how.find(' ', start), how.size());
            if (std::string_view(how).substr(start, end - start) == word) {
              return true;
            }
            start = end + 1;
          }
          return false;
        };
        if (auto failed = m_engine.prepare_for_shutdown(has_word("save"), has_word("nosave"))) {
          if (!has_word("force")) {
            m_log.warning("Error trying to save the DB, can't exit: " + *failed);
            continue;
          }
          m_log.warning("Error trying to save the DB. Exit anyway: " + *failed);
        }
        m_stopping = true;
        continue;
      }
      if (fd == m_event_fd) {
        uint64_t v;
        [[maybe_unused]] ssize_t r = ::read(m_event_fd, &v, sizeof(v));
        m_stopping = true;
        continue;
      }
      if (fd == m_payload_fd && fd >= 0) {
        m_engine.primary().pump();
        continue;
      }
      if (fd == m_link_fd && fd >= 0) {
        m_link->on_readable();
        watch_link();
        continue;
      }
      if (fd == m_unix_fd) {
        accept_from(fd, true);
        continue;
      }
      if (bool tls = false; is_listener(fd, tls)) {
        accept_from(fd, false, tls);
        continue;
      }
      if (static_cast<size_t>(fd) >= m_by_fd.size()) {
        continue;
      }
      Connection* c = m_by_fd[static_cast<size_t>(fd)].get();
      if (c == nullptr || c->closing) {
        continue;
      }
      if ((events[i].events & (EPOLLERR | EPOLLHUP)) != 0 && (events[i].events & EPOLLIN) == 0) {
        close_connection(*c);
        continue;
      }
      if ((events[i].events & EPOLLOUT) != 0) {
        wake(*c->session);
        if (c->transport.read_wants_write() || !c->transport.handshake_done()) {
          handle_readable(*c);
        }
      }
      if ((events[i].events & EPOLLIN) != 0) {
        if (c->transport.write_wants_read()) {
          wake(*c->session);
        }
        handle_readable(*c);
      }
    }
    m_engine.end_batch();
    after_events();
  }
  // Flush what is pending so that the SHUTDOWN caller's peers get their replies.
  after_events();
  m_link.reset();
  m_engine.primary().shutdown();
  m_engine.aof().shutdown();
  m_log.warning("keyshift is now ready to exit, bye bye...");
  return 0;
}

}  // namespace keyshift::engine
