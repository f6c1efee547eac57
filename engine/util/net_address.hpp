#pragma once

#include <string>
#include <string_view>

namespace keyshift::engine {

/// A peer's address as Valkey's formatAddr() writes it in CLIENT LIST and logs: "ip:port",
/// an IPv6 address in brackets ("[::1]:6379").
std::string format_addr(std::string_view ip, int port);

/// The IP of an address written by format_addr(), without port or brackets.
std::string_view addr_ip(std::string_view addr);

/// Valkey's connSocketIsLocal() on a peer's IP text: any 127.x address or "::1" (an
/// IPv4-mapped "::ffff:127.0.0.1" is not local, as in Valkey).
bool is_local_ip(std::string_view ip);

}  // namespace keyshift::engine
