#include "engine/net/tls.hpp"

#include <doctest/doctest.h>

#include <fcntl.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace ks = keyshift::engine;

namespace {

// A self-signed certificate for localhost and 127.0.0.1, written as PEM files in a
// private directory (made with OpenSSL's API: the unit test runs no programs).
struct TestCert {
  std::filesystem::path dir;
  std::string cert;
  std::string key;

  TestCert() {
    char tmpl[] = "/tmp/keyshift-tls-unit-XXXXXX";
    dir = ::mkdtemp(tmpl);
    cert = (dir / "cert.pem").string();
    key = (dir / "key.pem").string();
    EVP_PKEY* pkey = EVP_EC_gen("P-256");
    X509* x = X509_new();
    ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
    X509_gmtime_adj(X509_getm_notBefore(x), -60);
    X509_gmtime_adj(X509_getm_notAfter(x), 86400);
    X509_set_pubkey(x, pkey);
    X509_NAME* name = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                               reinterpret_cast<const unsigned char*>("localhost"), -1, -1, 0);
    X509_set_issuer_name(x, name);
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, x, x, nullptr, nullptr, 0);
    for (auto [nid, value] : {std::pair{NID_subject_alt_name, "DNS:localhost,IP:127.0.0.1"},
                              std::pair{NID_basic_constraints, "critical,CA:TRUE"}}) {
      X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
      X509_add_ext(x, ext, -1);
      X509_EXTENSION_free(ext);
    }
    X509_sign(x, pkey, EVP_sha256());
    FILE* f = std::fopen(cert.c_str(), "w");
    PEM_write_X509(f, x);
    std::fclose(f);
    f = std::fopen(key.c_str(), "w");
    PEM_write_PrivateKey(f, pkey, nullptr, nullptr, 0, nullptr, nullptr);
    std::fclose(f);
    X509_free(x);
    EVP_PKEY_free(pkey);
  }
  ~TestCert() { std::filesystem::remove_all(dir); }
};

struct SocketPair {
  int fds[2] = {-1, -1};
  SocketPair() { REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fds) == 0); }
  ~SocketPair() {
    ::close(fds[0]);
    ::close(fds[1]);
  }
};

ks::TlsServerOptions server_options(const TestCert& c) {
  ks::TlsServerOptions o;
  o.cert_file = c.cert;
  o.key_file = c.key;
  o.ca_file = c.cert;
  return o;
}

// Runs both handshakes, non-blocking, until each is done or fails; false on failure.
bool handshake(ks::Transport& client, ks::Transport& server) {
  for (int i = 0; i < 100; ++i) {
    ks::IoStatus a = client.handshake();
    ks::IoStatus b = server.handshake();
    if (a == ks::IoStatus::error || b == ks::IoStatus::error) {
      return false;
    }
    if (a == ks::IoStatus::ok && b == ks::IoStatus::ok) {
      return true;
    }
  }
  return false;
}

}  // namespace

TEST_SUITE("engine::net::tls") {
  TEST_CASE("tls-protocols reads Valkey's words in any case and refuses others") {
    CHECK(*ks::parse_tls_protocols("") == (ks::k_tls_v1_2 | ks::k_tls_v1_3));
    CHECK(*ks::parse_tls_protocols("TLSv1.2") == ks::k_tls_v1_2);
    CHECK(*ks::parse_tls_protocols("tlsv1.3 TLSv1") == (ks::k_tls_v1_3 | ks::k_tls_v1));
    auto bad = ks::parse_tls_protocols("TLSv1.2 SSLv3");
    REQUIRE(!bad);
    CHECK(bad.error().find("Invalid tls-protocols specified") == 0);
  }

  TEST_CASE("a server context names what is missing or unreadable as Valkey logs it") {
    ks::TlsServerOptions o;
    CHECK(ks::TlsContext::server(o).error() == "No tls-cert-file configured!");
    o.cert_file = "/nonexistent/cert.pem";
    CHECK(ks::TlsContext::server(o).error() == "No tls-key-file configured!");
    o.key_file = "/nonexistent/key.pem";
    CHECK(ks::TlsContext::server(o).error().find("Either tls-ca-cert-file or tls-ca-cert-dir") ==
          0);
    o.needs_ca = false;
    CHECK(ks::TlsContext::server(o).error().find("Failed to load certificate: "
                                                 "/nonexistent/cert.pem") == 0);
  }

  TEST_CASE("command-line TLS flags fill only what an endpoint leaves empty") {
    ks::TlsClientOptions endpoint;
    endpoint.ca_file = "mine.pem";
    ks::TlsClientOptions flags;
    flags.ca_file = "flags.pem";
    flags.cert_file = "client.pem";
    flags.insecure = true;
    ks::merge_tls_options(endpoint, flags);
    CHECK(!endpoint.enabled);
    CHECK(endpoint.ca_file == "mine.pem");
    CHECK(endpoint.cert_file == "client.pem");
    CHECK(endpoint.insecure);
  }

  TEST_CASE("a client and a server exchange a megabyte each way over non-blocking sockets") {
    TestCert cert;
    SocketPair pair;
    auto server_ctx = ks::TlsContext::server(server_options(cert));
    REQUIRE_MESSAGE(server_ctx, server_ctx.error());
    ks::TlsClientOptions co;
    co.enabled = true;
    co.ca_file = cert.cert;
    // The server asks for a client certificate (tls-auth-clients yes): the same one serves.
    co.cert_file = cert.cert;
    co.key_file = cert.key;
    auto client_ctx = ks::TlsContext::client(co);
    REQUIRE_MESSAGE(client_ctx, client_ctx.error());
    auto client = ks::Transport::tls_client(pair.fds[0], *client_ctx, "localhost", true);
    auto server = ks::Transport::tls_server(pair.fds[1], *server_ctx, ks::TlsAuthClients::yes);
    REQUIRE(client);
    REQUIRE(server);
    REQUIRE_MESSAGE(handshake(*client, *server),
                    std::string(client->error() + " / " + server->error()));
    CHECK(client->describe_session().find("TLSv1.3") == 0);

    std::string sent(1 << 20, 'x');
    for (size_t i = 0; i < sent.size(); ++i) {
      sent[i] = static_cast<char>('a' + i % 26);
    }
    std::string got;
    size_t written = 0;
    bool saw_pending = false;
    char buf[1000];  // smaller than a TLS record: the rest waits in pending()
    while (got.size() < sent.size()) {
      if (written < sent.size()) {
        ks::IoResult w = client->write(sent.data() + written, sent.size() - written);
        REQUIRE(w.status != ks::IoStatus::error);
        written += w.bytes;
      }
      ks::IoResult r = server->read(buf, sizeof(buf));
      REQUIRE(r.status != ks::IoStatus::error);
      got.append(buf, r.bytes);
      saw_pending = saw_pending || server->pending() > 0;
      // Bytes held in pending() are read without the socket being readable.
      while (server->pending() > 0) {
        ks::IoResult more = server->read(buf, sizeof(buf));
        REQUIRE(more.status == ks::IoStatus::ok);
        got.append(buf, more.bytes);
      }
    }
    CHECK(saw_pending);
    CHECK(got == sent);
    CHECK(client->read(buf, sizeof(buf)).status == ks::IoStatus::want_read);
    server->shutdown();
    CHECK(client->read(buf, sizeof(buf)).status == ks::IoStatus::closed);
  }

  TEST_CASE("verification fails on a wrong name, an unknown CA or a missing client cert") {
    TestCert cert;
    TestCert other;
    auto server_ctx = ks::TlsContext::server(server_options(cert));
    REQUIRE(server_ctx);
    auto attempt = [&](const ks::TlsClientOptions& co, const std::string& name) {
      SocketPair pair;
      auto client_ctx = ks::TlsContext::client(co);
      REQUIRE(client_ctx);
      auto client = ks::Transport::tls_client(pair.fds[0], *client_ctx, name, true);
      auto server = ks::Transport::tls_server(pair.fds[1], *server_ctx, ks::TlsAuthClients::yes);
      bool done = handshake(*client, *server);
      // Under TLS 1.3 the server judges the client's certificate after the client is done.
      if (done) {
        client->write("x", 1);
        char b[8];
        server->read(b, sizeof(b));
      }
      return std::pair{client->error(), server->error()};
    };
    ks::TlsClientOptions co;
    co.ca_file = cert.cert;
    co.cert_file = cert.cert;
    co.key_file = cert.key;
    CHECK(attempt(co, "cache.example").first.find("hostname mismatch") != std::string::npos);
    co.insecure = true;
    CHECK(attempt(co, "cache.example").first.empty());
    co.insecure = false;
    co.ca_file = other.cert;
    CHECK(attempt(co, "127.0.0.1").first.find("certificate verify failed") != std::string::npos);
    co.ca_file = cert.cert;
    co.cert_file.clear();
    co.key_file.clear();
    CHECK(attempt(co, "127.0.0.1").second.find("peer did not return a certificate") !=
          std::string::npos);
  }
}
