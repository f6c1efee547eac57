#pragma once

#include "engine/net/tls.hpp"

#include <CLI/CLI.hpp>

namespace keyshift::cli {

/// Declares redis-cli's TLS flags on `cmd` (--tls, --cacert, --cacertdir, --cert, --key,
/// --sni, --insecure, --tls-ciphers, --tls-ciphersuites), bound to `tls`. They apply to
/// every TCP endpoint the subcommand dials: --tls turns TLS on for redis:// and host:port
/// endpoints too; the files and switches also serve rediss:// ones.
void add_tls_flags(CLI::App& cmd, engine::TlsClientOptions& tls);

}  // namespace keyshift::cli
