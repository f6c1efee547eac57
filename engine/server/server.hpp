#pragma once

#include "engine/engine.hpp"
#include "engine/net/tls.hpp"
#include "engine/resp/request_parser.hpp"
#include "engine/server/log.hpp"
#include "engine/session.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace keyshift::engine {

class ReplicaLink;

/// The tls-* settings of `cfg` as the server's TLS options.
TlsServerOptions tls_server_options(const EngineConfig& cfg);
/// How a replica of this server dials its primary when tls-replication is on (enabled
/// follows it): tls-client-cert-file/key when set, else tls-cert-file/key; tls-ca-cert-*;
/// the chain is verified but, as in Valkey, not the primary's name.
TlsClientOptions tls_replication_client_options(const EngineConfig& cfg);

/// Puts an Engine on the network: TCP, TLS (tls-port) and unix-socket listeners and a
/// single-threaded epoll loop, as valkey-server's main thread does. TLS handshakes run
/// inside the loop, one non-blocking step per readiness event.
class Server final : public SessionHost {
 public:
  /// Serves `engine` with its config's network settings; `log` must outlive the server.
  Server(Engine& engine, Logger& log);
  ~Server() override;
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  /// Opens the listeners; returns an error message, or empty on success.
  std::string listen();
  /// Runs until SHUTDOWN, SIGTERM or SIGINT; returns the process exit code.
  int run();
  /// Asks the loop to stop (safe from another thread).
  void stop();
  /// The TCP port actually bound (useful with port 0 semantics in tests), 0 if none.
  int bound_port() const { return m_bound_port; }
  /// The TLS port bound, 0 if none.
  int bound_tls_port() const { return m_bound_tls_port; }

  void wake(Session& session) override;
  void request_shutdown() override;
  void resume(Session& session) override;
  void serve_while_busy(Session& caller) override;
  std::optional<std::string> apply_config(std::span<const std::string_view> changed) override;

 private:
  struct Connection;

  /// Registers the replication link's socket with epoll when it changed.
  /// Keeps epoll polling `fd` for reading in place of `registered` (-1: nothing).
  void watch_for_reading(int& registered, int fd);
  void watch_link();
  /// Polls a diskless full sync's pipe while its bytes can go out (epoll level-triggered).
  void watch_payload();

  std::string bind_tcp(int port, std::vector<int>& fds);
  /// `listeners` replaced by sockets on `port` (none for 0), added to the loop; the old
  /// ones stay when the new port cannot be bound (Valkey's error text).
  std::optional<std::string> relisten(int port, std::vector<int>& listeners);
  std::string configure_tls();
  bool is_listener(int fd, bool& tls) const;
  void accept_from(int listen_fd, bool is_unix, bool tls = false);
  void handle_readable(Connection& c);
  void process_input(Connection& c);
  bool flush(Connection& c);
  void close_connection(Connection& c);
  void after_events();
  void cron();
  void update_interest(Connection& c, bool want_write);

  Engine& m_engine;
  Logger& m_log;
  int m_epoll = -1;
  int m_event_fd = -1;
  int m_signal_fd = -1;
  std::vector<int> m_tcp_fds;
  std::vector<int> m_tls_fds;  // listening on tls-port
  TlsContext m_tls;            // the server context of new TLS connections
  int m_unix_fd = -1;
  int m_bound_port = 0;
  int m_bound_tls_port = 0;
  std::vector<std::unique_ptr<Connection>> m_by_fd;  // indexed by fd
  std::vector<Connection*> m_pending;                // have output to flush
  std::vector<Connection*> m_to_close;
  std::vector<Connection*> m_resumed;  // unblocked: parse the input they stopped at
  size_t m_clients = 0;
  bool m_stopping = false;
  int64_t m_next_cron_us = 0;
  std::vector<std::string_view> m_argv;  // reused per command
  std::unique_ptr<ReplicaLink> m_link;   // the link to our primary, when a replica
  int m_payload_fd = -1;                 // the diskless child's pipe as registered with epoll
  int m_link_fd = -1;                    // the link's socket as registered with epoll
  bool m_serving_busy = false;           // inside serve_while_busy: the busy command holds m_argv
};

}  // namespace keyshift::engine
