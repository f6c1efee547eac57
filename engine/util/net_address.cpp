#include "engine/util/net_address.hpp"

namespace keyshift::engine {

std::string format_addr(std::string_view ip, int port) {
  std::string out;
  bool v6 = ip.find(':') != std::string_view::npos;
  if (v6) {
    out += '[';
  }
  out += ip;
  if (v6) {
    out += ']';
  }
  out += ':';
  out += std::to_string(port);
  return out;
}

std::string_view addr_ip(std::string_view addr) {
  if (addr.starts_with('[')) {
    size_t close = addr.find(']');
    return close == std::string_view::npos ? addr.substr(1) : addr.substr(1, close - 1);
  }
  size_t colon = addr.rfind(':');
  return colon == std::string_view::npos ? addr : addr.substr(0, colon);
}

bool is_local_ip(std::string_view ip) {
  return ip.starts_with("127.") || ip == "::1";
}

}  // namespace keyshift::engine
