#pragma once

#include "engine/net/tls.hpp"
#include "engine/resp/resp_value.hpp"
#include "engine/util/expected.hpp"

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace keyshift::engine {

/// Where a server listens and how to log in to it; a unix socket wins over host:port.
struct RespEndpoint {
  std::string host = "127.0.0.1";
  int port = 6379;
  std::string unix_path;
  std::string user;
  std::string password;
  int db = 0;
  /// RESP protocol to negotiate with HELLO; 2 sends no HELLO at all (works with any server).
  int protocol = 2;
  /// TLS over TCP (rediss://, --tls): tls.enabled and the CA, certificate and SNI to use.
  TlsClientOptions tls;

  /// "host:port" or "unix:PATH", for messages.
  std::string describe() const;
};

/// Reads a server URL (parse_server_url) as redis-cli does: redis://[[user]:password@]host
/// [:port][/db], tcp://..., unix://[[user]:password@]/path (also redis+unix://, unix:/path)
/// with db/database, password/auth, user/username and protocol queries; a lone user info is
/// the password. rediss:// and tls:// are the same over TLS (port 6379 unless given).
Expected<RespEndpoint, std::string> parse_redis_url(std::string_view url);
/// The same, then `tls` (the command line's --tls, --cacert, ... flags) merged into the
/// endpoint's TLS options (merge_tls_options); a unix socket never uses TLS.
Expected<RespEndpoint, std::string> parse_redis_url(std::string_view url,
                                                    const TlsClientOptions& tls);

/// A blocking connection to a RESP server, for setup, probing and import work (not the
/// benchmark hot path). Errors are returned as text naming the endpoint; a server error
/// reply is a successful call whose value is_error().
class RespConnection {
 public:
  /// Connects (with the TLS handshake when endpoint.tls.enabled), then sends HELLO
  /// (protocol 3 only), AUTH and SELECT as the endpoint asks.
  static Expected<RespConnection, std::string> connect(
      const RespEndpoint& endpoint,
      std::chrono::milliseconds timeout = std::chrono::milliseconds(5000));

  RespConnection(RespConnection&& other) noexcept;
  RespConnection& operator=(RespConnection&& other) noexcept;
  RespConnection(const RespConnection&) = delete;
  RespConnection& operator=(const RespConnection&) = delete;
  ~RespConnection();

  /// Sends one command and waits for its reply.
  Expected<RespValue, std::string> call(const std::vector<std::string>& args);
  /// Sends every command in one write, then reads one reply per command, in order.
  Expected<std::vector<RespValue>, std::string> pipeline(
      const std::vector<std::vector<std::string>>& commands);
  /// Sends raw bytes (already RESP-encoded) without reading anything.
  Expected<bool, std::string> send_raw(std::string_view bytes);
  /// Reads the next reply.
  Expected<RespValue, std::string> read_reply();
  /// Reads the next reply when one starts arriving within `wait` (pushes of a subscribed
  /// connection); nothing when none did.
  Expected<std::optional<RespValue>, std::string> poll_reply(std::chrono::milliseconds wait);

  /// The endpoint this connection talks to.
  const RespEndpoint& endpoint() const { return m_endpoint; }
  /// Hands the connected, logged-in socket to a caller that drives it itself (the
  /// pipelined client); -1 when bytes the server sent unasked are still buffered, and for
  /// a TLS connection (whose session cannot leave with a bare fd: use release_transport).
  int release();
  /// Hands over the socket with its transport (plain or TLS; the caller closes
  /// transport.fd()); an empty Transport (fd -1) when bytes the server sent unasked are
  /// still buffered.
  Transport release_transport();
  /// True when this connection runs over TLS.
  bool is_tls() const { return m_transport.is_tls(); }

 private:
  RespConnection(int fd, RespEndpoint endpoint, std::chrono::milliseconds timeout);
  std::string error_text(std::string_view what) const;

  int m_fd = -1;
  Transport m_transport;
  RespEndpoint m_endpoint;
  std::chrono::milliseconds m_timeout;
  std::string m_in;
  size_t m_in_pos = 0;
};

}  // namespace keyshift::engine
