#include "engine/resp/server_url.hpp"

#include "engine/resp/connection.hpp"
#include "engine/util/strings.hpp"

#include <charconv>

namespace keyshift::engine {
namespace {

bool is_socket_scheme(std::string_view scheme) {
  return scheme == "unix" || scheme == "redis+unix" || scheme == "redis-socket" ||
         scheme == "redis+socket";
}

bool is_tcp_scheme(std::string_view scheme) {
  return scheme == "redis" || scheme == "rediss" || scheme == "tcp" || scheme == "tls";
}

}  // namespace

std::string ServerUrl::render() const {
  std::string out = scheme + ":" + (slashes ? "//" : "");
  if (user || password) {
    out += user.value_or("");
    out += password ? ":" + *password : "";
    out += "@";
  }
  if (socket_form) {
    out += socket;
  } else {
    out += authority_host;
    out += db_path ? "/" + *db_path : "";
    out += path_rest;
  }
  if (has_query || !query.empty()) {
    out += "?";
    for (size_t i = 0; i < query.size(); ++i) {
      out += i == 0 ? "" : "&";
      out += query[i].first;
      out += query[i].second ? "=" + *query[i].second : "";
    }
  }
  return out;
}

long ServerUrl::param(std::initializer_list<std::string_view> names, int nth) const {
  for (size_t i = 0; i < query.size(); ++i) {
    for (std::string_view n : names) {
      if (query[i].first == n && nth-- == 0) {
        return static_cast<long>(i);
      }
    }
  }
  return -1;
}

std::pair<std::string, int> split_host_port(std::string_view text, int default_port) {
  size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || (text.starts_with('[') && text.back() == ']')) {
    return {std::string(text), default_port};
  }
  std::string_view digits = text.substr(colon + 1);
  int port = -1;
  if (!digits.empty() && digits.size() <= 9 &&
      digits.find_first_not_of("0123456789") == std::string_view::npos) {
    std::from_chars(digits.data(), digits.data() + digits.size(), port);
  }
  return {std::string(text.substr(0, colon)), port};
}

std::optional<std::string> percent_decode(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out.push_back(text[i]);
      continue;
    }
    int hi = i + 1 < text.size() ? hex_digit_value(text[i + 1]) : -1;
    int lo = i + 2 < text.size() ? hex_digit_value(text[i + 2]) : -1;
    if (hi < 0 || lo < 0) {
      return std::nullopt;
    }
    out.push_back(static_cast<char>(hi * 16 + lo));
    i += 2;
  }
  return out;
}

std::optional<ServerUrl> parse_server_url(std::string_view url) {
  ServerUrl u;
  size_t colon = url.find(':');
  if (colon == std::string_view::npos) {
    return std::nullopt;
  }
  u.scheme = std::string(url.substr(0, colon));
  std::string_view rest = url.substr(colon + 1);
  u.socket_form = is_socket_scheme(u.scheme);
  if (!u.socket_form && !is_tcp_scheme(u.scheme)) {
    return std::nullopt;
  }
  if (rest.starts_with("//")) {
    u.slashes = true;
    rest.remove_prefix(2);
  } else if (!u.socket_form) {
    return std::nullopt;
  }
  std::string_view query;
  if (size_t q = rest.find('?'); q != std::string_view::npos) {
    query = rest.substr(q + 1);
    u.has_query = true;
    rest = rest.substr(0, q);
  }
  auto split_userinfo = [&](std::string_view info) {
    size_t c = info.find(':');
    u.user = std::string(info.substr(0, c));
    if (c != std::string_view::npos) {
      u.password = std::string(info.substr(c + 1));
    }
  };
  if (u.socket_form) {
    if (!rest.starts_with('/')) {
      size_t at = rest.find('@');
      if (at == std::string_view::npos) {
        return std::nullopt;
      }
      split_userinfo(rest.substr(0, at));
      rest.remove_prefix(at + 1);
    }
    if (!rest.starts_with('/')) {
      return std::nullopt;
    }
    u.socket = std::string(rest);
  } else {
    size_t slash = rest.find('/');
    std::string_view authority = rest.substr(0, slash);
    std::string_view path = slash == std::string_view::npos ? "" : rest.substr(slash + 1);
    // The last '@' ends the user info, so an unencoded '@' in a password still works.
    if (size_t at = authority.rfind('@'); at != std::string_view::npos) {
      split_userinfo(authority.substr(0, at));
      authority.remove_prefix(at + 1);
    }
    u.authority_host = std::string(authority);
    auto [host, port] = split_host_port(authority, 6379);
    u.host = host;
    u.port = port;
    if (slash != std::string_view::npos) {
      size_t digits = path.find_first_not_of("0123456789");
      if (digits != 0 && !path.empty()) {
        u.db_path = std::string(path.substr(0, digits));
        u.path_rest = std::string(digits == std::string_view::npos ? "" : path.substr(digits));
      } else {
        u.path_rest = "/" + std::string(path);
      }
    }
  }
  while (!query.empty()) {
    size_t amp = query.find('&');
    std::string_view item = query.substr(0, amp);
    size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      u.query.emplace_back(std::string(item), std::nullopt);
    } else {
      u.query.emplace_back(std::string(item.substr(0, eq)), std::string(item.substr(eq + 1)));
    }
    if (amp == std::string_view::npos) {
      break;
    }
    query.remove_prefix(amp + 1);
  }
  return u;
}

std::string render_host_port(std::string_view host, int port) {
  std::string out;
  bool bracket = host.find(':') != std::string_view::npos && !host.starts_with('[');
  out += bracket ? "[" : "";
  out += host;
  out += bracket ? "]:" : ":";
  return out + std::to_string(port);
}

std::string render_endpoint(const RespEndpoint& endpoint) {
  if (!endpoint.unix_path.empty()) {
    return "unix://" + endpoint.unix_path;
  }
  return render_host_port(endpoint.host, endpoint.port);
}

}  // namespace keyshift::engine
