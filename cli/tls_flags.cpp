#include "cli/tls_flags.hpp"

namespace keyshift::cli {

void add_tls_flags(CLI::App& cmd, engine::TlsClientOptions& tls) {
  const std::string group = "TLS (as redis-cli; rediss:// URLs use TLS without --tls)";
  cmd.add_flag("--tls", tls.enabled, "Connect to every TCP endpoint over TLS")->group(group);
  cmd.add_option("--cacert", tls.ca_file,
                 "CA certificate file to verify servers with (default: the system's store)")
      ->group(group);
  cmd.add_option("--cacertdir", tls.ca_dir, "Directory of trusted CA certificates")->group(group);
  cmd.add_option("--cert", tls.cert_file, "Client certificate to authenticate with")->group(group);
  cmd.add_option("--key", tls.key_file, "Private key of --cert (default: the --cert file)")
      ->group(group);
  cmd.add_option("--sni", tls.sni,
                 "Server name to send and to find in the server's certificate (default: the "
                 "host dialled)")
      ->group(group);
  cmd.add_flag("--insecure", tls.insecure,
               "Do not verify the server's certificate (its chain nor its name)")
      ->group(group);
  cmd.add_option("--tls-ciphers", tls.ciphers, "TLSv1.2 cipher list (OpenSSL syntax)")
      ->group(group);
  cmd.add_option("--tls-ciphersuites", tls.ciphersuites, "TLSv1.3 cipher suites")->group(group);
}

}  // namespace keyshift::cli
