#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace keyshift::engine {

struct RespEndpoint;  // engine/resp/connection.hpp

/// A server URL split into its parts as written: nothing is decoded or defaulted, so a
/// caller can change one part and render() the rest byte for byte. The one URL reader of
/// keyshift: parse_redis_url (connecting) and the app rewrites both read URLs with it.
struct ServerUrl {
  std::string scheme;               ///< redis, rediss, tcp, tls; unix, redis+unix, redis-socket...
  bool slashes = false;             ///< "//" after "scheme:"
  bool socket_form = false;         ///< a unix socket URL
  std::string socket;               ///< the socket path as written (socket form)
  std::string authority_host;       ///< host[:port] as written (TCP form)
  std::string host;                 ///< the host as written, IPv6 brackets kept
  int port = 6379;                  ///< the port, 6379 when absent, -1 when not a number
  std::optional<std::string> user;  ///< percent-encoded, as written
  std::optional<std::string> password;  ///< percent-encoded, as written
  std::optional<std::string> db_path;   ///< "N" of "/N" (TCP form)
  std::string path_rest;                ///< anything after "/N" before '?'
  std::vector<std::pair<std::string, std::optional<std::string>>> query;  ///< as written
  bool has_query = false;  ///< a '?' was written, even with nothing after it

  /// The URL text from the parts.
  std::string render() const;
  /// The index of the `nth` query parameter named one of `names`, or -1.
  long param(std::initializer_list<std::string_view> names, int nth = 0) const;
};

/// Splits `url` into parts; nullopt when it is not a server URL of a known scheme (the TCP
/// schemes need "//", a socket URL an absolute path).
std::optional<ServerUrl> parse_server_url(std::string_view url);

/// Splits "host:port" or "[v6]:port"; the port is `default_port` when absent and -1 when
/// it is not a decimal number. The host keeps IPv6 brackets.
std::pair<std::string, int> split_host_port(std::string_view text, int default_port);

/// "HOST:PORT", an IPv6 host in brackets (added when it has none, kept when it has).
std::string render_host_port(std::string_view host, int port);

/// Where `endpoint` listens, for reports and messages that name a server: "unix://PATH"
/// for a unix socket, else render_host_port; never the user, password or database.
std::string render_endpoint(const RespEndpoint& endpoint);

/// `text` with %XX escapes decoded; nullopt when an escape is broken.
std::optional<std::string> percent_decode(std::string_view text);

}  // namespace keyshift::engine
