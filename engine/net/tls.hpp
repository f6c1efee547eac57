#pragma once

#include "engine/util/expected.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

// OpenSSL's types, so that this header does not pull <openssl/ssl.h> into every user.
struct ssl_ctx_st;
struct ssl_st;
struct bio_method_st;

namespace keyshift::engine {

/// How a client connects over TLS (redis-cli's --tls flags). Verification is on unless
/// `insecure` says otherwise: the server's chain must reach a trusted CA (`ca_file`,
/// `ca_dir`, or the system's store when both are empty) and its certificate must name the
/// host dialled (or `sni` when given).
struct TlsClientOptions {
  bool enabled = false;       ///< connect with TLS (rediss://, --tls)
  std::string ca_file;        ///< PEM bundle of trusted CAs
  std::string ca_dir;         ///< directory of hashed CA certificates (c_rehash)
  std::string cert_file;      ///< client certificate (chain) for servers that ask for one
  std::string key_file;       ///< its private key
  std::string key_file_pass;  ///< passphrase of an encrypted key
  std::string sni;            ///< server name sent and checked; empty: the host dialled
  bool insecure = false;      ///< skip verification of the server's certificate
  bool verify_host = true;    ///< the certificate must name the host (or sni); off: chain only
  std::string ciphers;        ///< TLSv1.2 cipher list (OpenSSL syntax); empty: OpenSSL's
  std::string ciphersuites;   ///< TLSv1.3 suites; empty: OpenSSL's
};

/// Fills the fields of `endpoint_tls` that are empty from `defaults` (command-line flags
/// shared by every endpoint), and turns TLS on when `defaults.enabled`.
void merge_tls_options(TlsClientOptions& endpoint_tls, const TlsClientOptions& defaults);

/// tls-auth-clients: whether a server asks for and requires a client certificate.
enum class TlsAuthClients : uint8_t { no = 0, yes = 1, optional = 2 };

/// The tls-* settings of a server (Valkey's serverTLSContextConfig).
struct TlsServerOptions {
  std::string cert_file;
  std::string key_file;
  std::string key_file_pass;
  std::string ca_file;
  std::string ca_dir;
  std::string dh_params_file;
  std::string protocols;  ///< "TLSv1.2 TLSv1.3" style; empty: TLSv1.2 and TLSv1.3
  std::string ciphers;
  std::string ciphersuites;
  bool prefer_server_ciphers = false;
  bool session_caching = true;
  int session_cache_size = 20480;
  int session_cache_timeout = 300;
  /// A CA is needed to check client certificates (tls-auth-clients yes/optional) or the
  /// peers of replication; Valkey refuses the configuration without one then.
  bool needs_ca = true;
};

/// Bits of TLS protocol versions.
inline constexpr int k_tls_v1 = 1 << 0;
inline constexpr int k_tls_v1_1 = 1 << 1;
inline constexpr int k_tls_v1_2 = 1 << 2;
inline constexpr int k_tls_v1_3 = 1 << 3;

/// Reads tls-protocols ("TLSv1.2 TLSv1.3", case ignored) into k_tls_* bits; empty text is
/// TLSv1.2 and TLSv1.3. An error text for an unknown word.
Expected<int, std::string> parse_tls_protocols(std::string_view text);

/// One OpenSSL context (SSL_CTX), shared by reference count: copies are cheap and a
/// connection keeps the context it was made with alive after a reconfiguration.
class TlsContext {
 public:
  /// A context for outgoing connections.
  static Expected<TlsContext, std::string> client(const TlsClientOptions& options);
  /// A context for accepting connections; the error says what Valkey would log.
  static Expected<TlsContext, std::string> server(const TlsServerOptions& options);

  TlsContext() = default;
  TlsContext(const TlsContext& other);
  TlsContext& operator=(const TlsContext& other);
  TlsContext(TlsContext&& other) noexcept;
  TlsContext& operator=(TlsContext&& other) noexcept;
  ~TlsContext();

  /// True once made by client() or server().
  bool valid() const { return m_ctx != nullptr; }
  /// The OpenSSL context.
  ssl_ctx_st* native() const { return m_ctx; }

 private:
  explicit TlsContext(ssl_ctx_st* ctx) : m_ctx(ctx) {}
  ssl_ctx_st* m_ctx = nullptr;
};

/// What one read, write or handshake step did.
enum class IoStatus : uint8_t {
  ok,          ///< bytes moved (or the handshake finished)
  want_read,   ///< wait until the socket is readable, then call again
  want_write,  ///< wait until the socket is writable, then call again
  closed,      ///< the peer closed the connection
  error,       ///< the connection is unusable; Transport::error() says why
};

/// The result of Transport::read and Transport::write.
struct IoResult {
  size_t bytes = 0;
  IoStatus status = IoStatus::ok;
};

/// A connected socket as a byte stream, plain or TLS: the one I/O path of the blocking
/// client, the pipelined client and the server. It does not own the fd (its owner closes
/// it); it owns the TLS session. Non-blocking use: after want_read/want_write wait for that
/// readiness and call the same function again; after a read, pending() bytes may be held
/// inside TLS where poll/epoll cannot see them, so read again while it is non-zero.
class Transport {
 public:
  /// A plain transport over `fd` (also the empty state, fd -1).
  explicit Transport(int fd = -1) : m_fd(fd) {}
  /// TLS as a client over connected `fd`: SNI is `server_name` (a host name; an IP address
  /// sends none) and, with `verify_name`, the certificate must name it (the chain itself is
  /// checked as the context says). The handshake is not started.
  static Expected<Transport, std::string> tls_client(int fd, const TlsContext& context,
                                                     const std::string& server_name,
                                                     bool verify_name);
  /// TLS as a server over accepted `fd`, asking for a client certificate as `auth` says.
  static Expected<Transport, std::string> tls_server(int fd, const TlsContext& context,
                                                     TlsAuthClients auth);

  Transport(Transport&& other) noexcept;
  Transport& operator=(Transport&& other) noexcept;
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;
  ~Transport();

  /// The socket.
  int fd() const { return m_fd; }
  /// True for a TLS transport.
  bool is_tls() const { return m_ssl != nullptr; }
  /// True when data may flow (always for plain sockets).
  bool handshake_done() const { return m_ssl == nullptr || m_handshake_done; }
  /// One step of the TLS handshake: ok when done, want_read/want_write, or error (error()
  /// names OpenSSL's reason and, for a rejected certificate, the verification failure).
  IoStatus handshake();
  /// Reads up to `len` bytes (a TLS handshake still due runs first).
  IoResult read(char* buf, size_t len) {
    if (m_ssl == nullptr) {
      return plain_read(buf, len);
    }
    return tls_read(buf, len);
  }
  /// Writes up to `len` bytes; a partial count is ok. Retry with the same bytes (they may
  /// have moved in memory) after want_read/want_write.
  IoResult write(const char* buf, size_t len) {
    if (m_ssl == nullptr) {
      return plain_write(buf, len);
    }
    return tls_write(buf, len);
  }
  /// Decrypted bytes TLS holds that a read returns without touching the socket.
  size_t pending() const;
  /// The last read or handshake step waits for the socket to be writable (TLS only).
  bool read_wants_write() const { return m_read_wants_write; }
  /// The last write waits for the socket to be readable (TLS only).
  bool write_wants_read() const { return m_write_wants_read; }
  /// Why the last call failed.
  const std::string& error() const { return m_error; }
  /// Sends a TLS close_notify, best effort, without waiting.
  void shutdown();
  /// "TLSv1.3 TLS_AES_256_GCM_SHA384" once the handshake is done; empty for plain sockets.
  std::string describe_session() const;

 private:
  IoResult plain_read(char* buf, size_t len);
  IoResult plain_write(const char* buf, size_t len);
  IoResult tls_read(char* buf, size_t len);
  IoResult tls_write(const char* buf, size_t len);
  IoStatus tls_status(int rc, bool reading);

  int m_fd = -1;
  ssl_st* m_ssl = nullptr;
  bio_method_st* m_bio_method = nullptr;  // the socket BIO's method, freed after m_ssl
  bool m_handshake_done = false;
  bool m_read_wants_write = false;
  bool m_write_wants_read = false;
  std::string m_error;
};

/// OpenSSL's error queue of this thread as one line ("reason; reason"), emptied; `fallback`
/// when it holds nothing.
std::string take_tls_errors(std::string_view fallback = "unknown TLS error");

}  // namespace keyshift::engine
