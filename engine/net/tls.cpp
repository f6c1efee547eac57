#include "engine/net/tls.hpp"

#include "engine/util/strings.hpp"

#include <climits>
#include <fmt/format.h>

#include <arpa/inet.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <utility>

namespace keyshift::engine {
namespace {

// --- A socket BIO that never raises SIGPIPE ---
// OpenSSL's socket BIO writes with write(2): a peer that hung up would kill a client that
// does not ignore SIGPIPE. This one sends with MSG_NOSIGNAL, as the plain path does. Each
// transport makes its own method (no process-wide state).

int bio_fd(BIO* bio) {
  return static_cast<int>(reinterpret_cast<intptr_t>(BIO_get_data(bio)));
}

int bio_write(BIO* bio, const char* buf, int len) {
  BIO_clear_retry_flags(bio);
  ssize_t n;
  do {
    n = ::send(bio_fd(bio), buf, static_cast<size_t>(len), MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
    BIO_set_retry_write(bio);
  }
  return static_cast<int>(n);
}

int bio_read(BIO* bio, char* buf, int len) {
  BIO_clear_retry_flags(bio);
  ssize_t n;
  do {
    n = ::recv(bio_fd(bio), buf, static_cast<size_t>(len), 0);
  } while (n < 0 && errno == EINTR);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
    BIO_set_retry_read(bio);
  }
  return static_cast<int>(n);
}

long bio_ctrl(BIO*, int cmd, long, void*) {
  return cmd == BIO_CTRL_FLUSH ? 1 : 0;
}

int bio_create(BIO* bio) {
  BIO_set_init(bio, 1);
  return 1;
}

BIO_METHOD* new_socket_method() {
  BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "keyshift socket");
  if (m == nullptr) {
    return nullptr;
  }
  BIO_meth_set_write(m, bio_write);
  BIO_meth_set_read(m, bio_read);
  BIO_meth_set_ctrl(m, bio_ctrl);
  BIO_meth_set_create(m, bio_create);
  return m;
}

// The BIO_METHOD must outlive its BIO: ~Transport finds it through the SSL's BIO and frees
// it after SSL_free.
BIO_METHOD* attach_socket_bio(SSL* ssl, int fd) {
  BIO_METHOD* method = new_socket_method();
  if (method == nullptr) {
    return nullptr;
  }
  BIO* bio = BIO_new(method);
  if (bio == nullptr) {
    BIO_meth_free(method);
    return nullptr;
  }
  BIO_set_data(bio, reinterpret_cast<void*>(static_cast<intptr_t>(fd)));
  SSL_set_bio(ssl, bio, bio);
  return method;
}

// --- Contexts ---

struct CtxFree {
  void operator()(SSL_CTX* ctx) const { SSL_CTX_free(ctx); }
};
using CtxPtr = std::unique_ptr<SSL_CTX, CtxFree>;

int password_callback(char* buf, int size, int, void* user) {
  const auto* pass = static_cast<const std::string*>(user);
  if (pass == nullptr || pass->size() > static_cast<size_t>(size)) {
    return -1;
  }
  std::memcpy(buf, pass->data(), pass->size());
  return static_cast<int>(pass->size());
}

// Loads a certificate chain and its key (the key file defaults to the certificate's).
std::optional<std::string> load_cert_and_key(SSL_CTX* ctx, const std::string& cert,
                                             const std::string& key, const std::string& pass) {
  const std::string& key_file = key.empty() ? cert : key;
  SSL_CTX_set_default_passwd_cb(ctx, password_callback);
  SSL_CTX_set_default_passwd_cb_userdata(ctx, const_cast<std::string*>(&pass));
  std::optional<std::string> failed;
  if (SSL_CTX_use_certificate_chain_file(ctx, cert.c_str()) <= 0) {
    failed = fmt::format("Failed to load certificate: {}: {}", cert, take_tls_errors());
  } else if (SSL_CTX_use_PrivateKey_file(ctx, key_file.c_str(), SSL_FILETYPE_PEM) <= 0) {
    failed = fmt::format("Failed to load private key: {}: {}", key_file, take_tls_errors());
  } else if (SSL_CTX_check_private_key(ctx) != 1) {
    failed = fmt::format("Private key {} does not match certificate {}: {}", key_file, cert,
                         take_tls_errors());
  }
  // The passphrase lives in the caller's options: OpenSSL must not keep a pointer to it.
  SSL_CTX_set_default_passwd_cb(ctx, nullptr);
  SSL_CTX_set_default_passwd_cb_userdata(ctx, nullptr);
  return failed;
}

std::optional<std::string> load_ca(SSL_CTX* ctx, const std::string& file, const std::string& dir) {
  if (SSL_CTX_load_verify_locations(ctx, file.empty() ? nullptr : file.c_str(),
                                    dir.empty() ? nullptr : dir.c_str()) <= 0) {
    std::string where = !file.empty() && !dir.empty() ? file + ", " + dir
                        : !file.empty()               ? file
                                                      : dir;
    return fmt::format("Failed to configure CA certificate(s) file/directory: {}: {}", where,
                       take_tls_errors());
  }
  return std::nullopt;
}

std::optional<std::string> set_ciphers(SSL_CTX* ctx, const std::string& ciphers,
                                       const std::string& suites) {
  if (!ciphers.empty() && SSL_CTX_set_cipher_list(ctx, ciphers.c_str()) != 1) {
    ERR_clear_error();
    return fmt::format("Failed to configure ciphers: {}", ciphers);
  }
  if (!suites.empty() && SSL_CTX_set_ciphersuites(ctx, suites.c_str()) != 1) {
    ERR_clear_error();
    return fmt::format("Failed to configure ciphersuites: {}", suites);
  }
  return std::nullopt;
}

void apply_protocols(SSL_CTX* ctx, int protocols) {
  if ((protocols & k_tls_v1) == 0) {
    SSL_CTX_set_options(ctx, SSL_OP_NO_TLSv1);
  }
  if ((protocols & k_tls_v1_1) == 0) {
    SSL_CTX_set_options(ctx, SSL_OP_NO_TLSv1_1);
  }
  if ((protocols & k_tls_v1_2) == 0) {
    SSL_CTX_set_options(ctx, SSL_OP_NO_TLSv1_2);
  }
  if ((protocols & k_tls_v1_3) == 0) {
    SSL_CTX_set_options(ctx, SSL_OP_NO_TLSv1_3);
  }
}

// What every context of keyshift sets: no SSLv2/3 or compression, partial writes from a
// buffer that may move between retries, and a peer's EOF without close_notify read as a
// plain close (Redis and redis-cli close that way).
void common_settings(SSL_CTX* ctx) {
  SSL_CTX_set_options(ctx, SSL_OP_NO_SSLv2 | SSL_OP_NO_SSLv3 | SSL_OP_NO_COMPRESSION |
                               SSL_OP_IGNORE_UNEXPECTED_EOF);
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
}

bool is_ip_address(const std::string& name) {
  in6_addr a6{};
  in_addr a4{};
  return inet_pton(AF_INET, name.c_str(), &a4) == 1 || inet_pton(AF_INET6, name.c_str(), &a6) == 1;
}

std::string errno_text(int err) {
  return std::strerror(err);
}

}  // namespace

void merge_tls_options(TlsClientOptions& tls, const TlsClientOptions& defaults) {
  tls.enabled = tls.enabled || defaults.enabled;
  auto fill = [](std::string& field, const std::string& value) {
    if (field.empty()) {
      field = value;
    }
  };
  fill(tls.ca_file, defaults.ca_file);
  fill(tls.ca_dir, defaults.ca_dir);
  fill(tls.cert_file, defaults.cert_file);
  fill(tls.key_file, defaults.key_file);
  fill(tls.key_file_pass, defaults.key_file_pass);
  fill(tls.sni, defaults.sni);
  fill(tls.ciphers, defaults.ciphers);
  fill(tls.ciphersuites, defaults.ciphersuites);
  tls.insecure = tls.insecure || defaults.insecure;
  tls.verify_host = tls.verify_host && defaults.verify_host;
}

Expected<int, std::string> parse_tls_protocols(std::string_view text) {
  if (text.empty()) {
    return k_tls_v1_2 | k_tls_v1_3;
  }
  int protocols = 0;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = std::min(text.find(' ', start), text.size());
    std::string_view word = text.substr(start, end - start);
    if (iequals(word, "tlsv1")) {
      protocols |= k_tls_v1;
    } else if (iequals(word, "tlsv1.1")) {
      protocols |= k_tls_v1_1;
    } else if (iequals(word, "tlsv1.2")) {
      protocols |= k_tls_v1_2;
    } else if (iequals(word, "tlsv1.3")) {
      protocols |= k_tls_v1_3;
    } else {
      return Unexpected{
          std::string("Invalid tls-protocols specified. Use a combination of 'TLSv1', 'TLSv1.1', "
                      "'TLSv1.2' and 'TLSv1.3'.")};
    }
    start = end + 1;
  }
  return protocols;
}

std::string take_tls_errors(std::string_view fallback) {
  std::string text;
  unsigned long code;
  while ((code = ERR_get_error()) != 0) {
    char buf[256];
    const char* reason = ERR_reason_error_string(code);
    if (reason == nullptr) {
      ERR_error_string_n(code, buf, sizeof(buf));
      reason = buf;
    }
    if (text.find(reason) == std::string::npos) {
      text += text.empty() ? "" : "; ";
      text += reason;
    }
  }
  return text.empty() ? std::string(fallback) : text;
}

Expected<TlsContext, std::string> TlsContext::client(const TlsClientOptions& options) {
  ERR_clear_error();
  CtxPtr ctx(SSL_CTX_new(TLS_client_method()));
  if (!ctx) {
    return Unexpected{"cannot create a TLS context: " + take_tls_errors()};
  }
  common_settings(ctx.get());
  if (options.insecure) {
    SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_NONE, nullptr);
  } else {
    SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER, nullptr);
    if (!options.ca_file.empty() || !options.ca_dir.empty()) {
      if (auto err = load_ca(ctx.get(), options.ca_file, options.ca_dir)) {
        return Unexpected{*err};
      }
    } else if (SSL_CTX_set_default_verify_paths(ctx.get()) != 1) {
      return Unexpected{"cannot load the system's trusted CA certificates: " + take_tls_errors()};
    }
  }
  if (!options.key_file.empty() && options.cert_file.empty()) {
    return Unexpected{std::string("a TLS client key (--key) needs its certificate (--cert)")};
  }
  if (!options.cert_file.empty()) {
    if (auto err = load_cert_and_key(ctx.get(), options.cert_file, options.key_file,
                                     options.key_file_pass)) {
      return Unexpected{*err};
    }
  }
  if (auto err = set_ciphers(ctx.get(), options.ciphers, options.ciphersuites)) {
    return Unexpected{*err};
  }
  return TlsContext(ctx.release());
}

Expected<TlsContext, std::string> TlsContext::server(const TlsServerOptions& options) {
  ERR_clear_error();
  if (options.cert_file.empty()) {
    return Unexpected{std::string("No tls-cert-file configured!")};
  }
  if (options.key_file.empty()) {
    return Unexpected{std::string("No tls-key-file configured!")};
  }
  if (options.needs_ca && options.ca_file.empty() && options.ca_dir.empty()) {
    return Unexpected{std::string(
        "Either tls-ca-cert-file or tls-ca-cert-dir must be specified when tls-cluster, "
        "tls-replication or tls-auth-clients are enabled!")};
  }
  auto protocols = parse_tls_protocols(options.protocols);
  if (!protocols) {
    return Unexpected{protocols.error()};
  }
  CtxPtr ctx(SSL_CTX_new(TLS_server_method()));
  if (!ctx) {
    return Unexpected{"cannot create a TLS context: " + take_tls_errors()};
  }
  common_settings(ctx.get());
  apply_protocols(ctx.get(), *protocols);
  // Each connection sets how it checks the client (tls-auth-clients may change at run time).
  SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  if (auto err = load_cert_and_key(ctx.get(), options.cert_file, options.key_file,
                                   options.key_file_pass)) {
    return Unexpected{*err};
  }
  if (!options.ca_file.empty() || !options.ca_dir.empty()) {
    if (auto err = load_ca(ctx.get(), options.ca_file, options.ca_dir)) {
      return Unexpected{*err};
    }
    // Clients are told which CAs are trusted, as OpenSSL servers usually do.
    if (!options.ca_file.empty()) {
      if (STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(options.ca_file.c_str())) {
        SSL_CTX_set_client_CA_list(ctx.get(), names);
      }
      ERR_clear_error();
    }
  }
  if (auto err = set_ciphers(ctx.get(), options.ciphers, options.ciphersuites)) {
    return Unexpected{*err};
  }
  if (options.session_caching) {
    SSL_CTX_set_session_cache_mode(ctx.get(), SSL_SESS_CACHE_SERVER);
    SSL_CTX_sess_set_cache_size(ctx.get(), options.session_cache_size);
    SSL_CTX_set_timeout(ctx.get(), options.session_cache_timeout);
    static constexpr unsigned char k_session_id[] = {'k', 'e', 'y', 's', 'h', 'i', 'f', 't'};
    SSL_CTX_set_session_id_context(ctx.get(), k_session_id, sizeof(k_session_id));
  } else {
    SSL_CTX_set_session_cache_mode(ctx.get(), SSL_SESS_CACHE_OFF);
  }
  // OpenSSL 3 refuses client-initiated renegotiation unless told otherwise.
  SSL_CTX_set_options(ctx.get(), SSL_OP_SINGLE_DH_USE);
  if (options.prefer_server_ciphers) {
    SSL_CTX_set_options(ctx.get(), SSL_OP_CIPHER_SERVER_PREFERENCE);
  }
  if (!options.dh_params_file.empty()) {
    BIO* file = BIO_new_file(options.dh_params_file.c_str(), "r");
    if (file == nullptr) {
      ERR_clear_error();
      return Unexpected{
          fmt::format("Failed to load {}: {}", options.dh_params_file, errno_text(errno))};
    }
    EVP_PKEY* params = PEM_read_bio_Parameters(file, nullptr);
    BIO_free(file);
    if (params == nullptr) {
      ERR_clear_error();
      return Unexpected{fmt::format("{}: failed to read DH params.", options.dh_params_file)};
    }
    if (SSL_CTX_set0_tmp_dh_pkey(ctx.get(), params) <= 0) {
      EVP_PKEY_free(params);
      return Unexpected{fmt::format("Failed to load DH params file: {}: {}", options.dh_params_file,
                                    take_tls_errors())};
    }
  } else {
    SSL_CTX_set_dh_auto(ctx.get(), 1);
  }
  return TlsContext(ctx.release());
}

TlsContext::TlsContext(const TlsContext& other) : m_ctx(other.m_ctx) {
  if (m_ctx != nullptr) {
    SSL_CTX_up_ref(m_ctx);
  }
}

TlsContext& TlsContext::operator=(const TlsContext& other) {
  if (this != &other) {
    TlsContext copy(other);
    std::swap(m_ctx, copy.m_ctx);
  }
  return *this;
}

TlsContext::TlsContext(TlsContext&& other) noexcept : m_ctx(std::exchange(other.m_ctx, nullptr)) {}

TlsContext& TlsContext::operator=(TlsContext&& other) noexcept {
  if (this != &other) {
    if (m_ctx != nullptr) {
      SSL_CTX_free(m_ctx);
    }
    m_ctx = std::exchange(other.m_ctx, nullptr);
  }
  return *this;
}

TlsContext::~TlsContext() {
  if (m_ctx != nullptr) {
    SSL_CTX_free(m_ctx);
  }
}

// --- Transport ---

namespace {

// The SSL of a transport and the BIO method its BIO was made from, created together.
Expected<std::pair<SSL*, BIO_METHOD*>, std::string> new_ssl(int fd, const TlsContext& context) {
  ERR_clear_error();
  if (!context.valid()) {
    return Unexpected{std::string("no TLS context")};
  }
  SSL* ssl = SSL_new(context.native());
  if (ssl == nullptr) {
    return Unexpected{"cannot create a TLS session: " + take_tls_errors()};
  }
  BIO_METHOD* method = attach_socket_bio(ssl, fd);
  if (method == nullptr) {
    SSL_free(ssl);
    return Unexpected{"cannot create a TLS socket BIO: " + take_tls_errors()};
  }
  return std::pair{ssl, method};
}

}  // namespace

Expected<Transport, std::string> Transport::tls_client(int fd, const TlsContext& context,
                                                       const std::string& server_name,
                                                       bool verify_name) {
  auto made = new_ssl(fd, context);
  if (!made) {
    return Unexpected{made.error()};
  }
  Transport t(fd);
  t.m_ssl = made->first;
  t.m_bio_method = made->second;
  SSL_set_connect_state(t.m_ssl);
  bool ip = is_ip_address(server_name);
  // SNI carries host names only (RFC 6066); an IP address is checked against the
  // certificate's IP entries instead.
  if (!ip && !server_name.empty()) {
    SSL_set_tlsext_host_name(t.m_ssl, server_name.c_str());
  }
  if (verify_name && !server_name.empty()) {
    X509_VERIFY_PARAM* param = SSL_get0_param(t.m_ssl);
    X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    int ok = ip ? X509_VERIFY_PARAM_set1_ip_asc(param, server_name.c_str())
                : X509_VERIFY_PARAM_set1_host(param, server_name.c_str(), 0);
    if (ok != 1) {
      return Unexpected{"cannot check the server's name '" + server_name +
                        "': " + take_tls_errors()};
    }
  }
  return t;
}

Expected<Transport, std::string> Transport::tls_server(int fd, const TlsContext& context,
                                                       TlsAuthClients auth) {
  auto made = new_ssl(fd, context);
  if (!made) {
    return Unexpected{made.error()};
  }
  Transport t(fd);
  t.m_ssl = made->first;
  t.m_bio_method = made->second;
  switch (auth) {
    case TlsAuthClients::no:
      SSL_set_verify(t.m_ssl, SSL_VERIFY_NONE, nullptr);
      break;
    case TlsAuthClients::optional:
      SSL_set_verify(t.m_ssl, SSL_VERIFY_PEER, nullptr);
      break;
    case TlsAuthClients::yes:
      SSL_set_verify(t.m_ssl, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
      break;
  }
  SSL_set_accept_state(t.m_ssl);
  return t;
}

Transport::Transport(Transport&& other) noexcept
    : m_fd(std::exchange(other.m_fd, -1)),
      m_ssl(std::exchange(other.m_ssl, nullptr)),
      m_bio_method(std::exchange(other.m_bio_method, nullptr)),
      m_handshake_done(other.m_handshake_done),
      m_read_wants_write(other.m_read_wants_write),
      m_write_wants_read(other.m_write_wants_read),
      m_error(std::move(other.m_error)) {}

Transport& Transport::operator=(Transport&& other) noexcept {
  if (this != &other) {
    Transport old(std::move(*this));
    m_fd = std::exchange(other.m_fd, -1);
    m_ssl = std::exchange(other.m_ssl, nullptr);
    m_bio_method = std::exchange(other.m_bio_method, nullptr);
    m_handshake_done = other.m_handshake_done;
    m_read_wants_write = other.m_read_wants_write;
    m_write_wants_read = other.m_write_wants_read;
    m_error = std::move(other.m_error);
  }
  return *this;
}

Transport::~Transport() {
  if (m_ssl != nullptr) {
    SSL_free(m_ssl);
  }
  if (m_bio_method != nullptr) {
    BIO_meth_free(m_bio_method);
  }
}

IoStatus Transport::tls_status(int rc, bool reading) {
  int err = SSL_get_error(m_ssl, rc);
  int saved_errno = errno;
  switch (err) {
    case SSL_ERROR_WANT_READ:
      if (!reading) {
        m_write_wants_read = true;
      }
      return IoStatus::want_read;
    case SSL_ERROR_WANT_WRITE:
      if (reading) {
        m_read_wants_write = true;
      }
      return IoStatus::want_write;
    case SSL_ERROR_ZERO_RETURN:
      ERR_clear_error();
      return IoStatus::closed;
    case SSL_ERROR_SYSCALL:
      if (ERR_peek_error() == 0) {
        if (saved_errno == 0 || saved_errno == ECONNRESET) {
          m_error = saved_errno == 0 ? "the peer closed the connection" : errno_text(saved_errno);
          return saved_errno == 0 ? IoStatus::closed : IoStatus::error;
        }
        m_error = errno_text(saved_errno);
        return IoStatus::error;
      }
      [[fallthrough]];
    default:
      m_error = take_tls_errors();
      return IoStatus::error;
  }
}

IoStatus Transport::handshake() {
  if (handshake_done()) {
    return IoStatus::ok;
  }
  ERR_clear_error();
  errno = 0;
  m_read_wants_write = false;
  int rc = SSL_do_handshake(m_ssl);
  if (rc == 1) {
    m_handshake_done = true;
    return IoStatus::ok;
  }
  IoStatus status = tls_status(rc, true);
  if (status == IoStatus::error || status == IoStatus::closed) {
    long verified = SSL_get_verify_result(m_ssl);
    std::string why = m_error.empty() ? std::string("the peer closed the connection") : m_error;
    if (verified != X509_V_OK) {
      why += std::string(": ") + X509_verify_cert_error_string(verified);
    }
    m_error = "TLS handshake failed: " + why;
    return IoStatus::error;
  }
  return status;
}

IoResult Transport::plain_read(char* buf, size_t len) {
  for (;;) {
    ssize_t n = ::recv(m_fd, buf, len, 0);
    if (n > 0) {
      return {static_cast<size_t>(n), IoStatus::ok};
    }
    if (n == 0) {
      return {0, IoStatus::closed};
    }
    if (errno == EINTR) {
      continue;
    }
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      return {0, IoStatus::want_read};
    }
    m_error = errno_text(errno);
    return {0, IoStatus::error};
  }
}

IoResult Transport::plain_write(const char* buf, size_t len) {
  for (;;) {
    // MSG_NOSIGNAL: a peer that hung up must give an error here, not kill us by SIGPIPE.
    ssize_t n = ::send(m_fd, buf, len, MSG_NOSIGNAL);
    if (n >= 0) {
      return {static_cast<size_t>(n), IoStatus::ok};
    }
    if (errno == EINTR) {
      continue;
    }
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      return {0, IoStatus::want_write};
    }
    m_error = errno_text(errno);
    return {0, IoStatus::error};
  }
}

IoResult Transport::tls_read(char* buf, size_t len) {
  if (!m_handshake_done) {
    IoStatus status = handshake();
    if (status != IoStatus::ok) {
      return {0, status};
    }
  }
  ERR_clear_error();
  errno = 0;
  m_read_wants_write = false;
  int rc = SSL_read(m_ssl, buf, static_cast<int>(std::min<size_t>(len, INT_MAX)));
  if (rc > 0) {
    return {static_cast<size_t>(rc), IoStatus::ok};
  }
  return {0, tls_status(rc, true)};
}

IoResult Transport::tls_write(const char* buf, size_t len) {
  if (!m_handshake_done) {
    IoStatus status = handshake();
    if (status != IoStatus::ok) {
      return {0, status};
    }
  }
  if (len == 0) {
    return {0, IoStatus::ok};
  }
  ERR_clear_error();
  errno = 0;
  m_write_wants_read = false;
  int rc = SSL_write(m_ssl, buf, static_cast<int>(std::min<size_t>(len, INT_MAX)));
  if (rc > 0) {
    return {static_cast<size_t>(rc), IoStatus::ok};
  }
  return {0, tls_status(rc, false)};
}

size_t Transport::pending() const {
  return m_ssl != nullptr ? static_cast<size_t>(SSL_pending(m_ssl)) : 0;
}

void Transport::shutdown() {
  if (m_ssl != nullptr && m_handshake_done) {
    ERR_clear_error();
    SSL_shutdown(m_ssl);
    ERR_clear_error();
  }
}

std::string Transport::describe_session() const {
  if (m_ssl == nullptr || !m_handshake_done) {
    return {};
  }
  return fmt::format("{} {}", SSL_get_version(m_ssl), SSL_get_cipher_name(m_ssl));
}

}  // namespace keyshift::engine
