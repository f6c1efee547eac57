#include "migrate/rewrite/layout.hpp"

#include <algorithm>

namespace keyshift::migrate {
namespace {

bool under(std::string_view path, std::string_view prefix) {
  if (!path.starts_with(prefix)) {
    return false;
  }
  return path.size() == prefix.size() || prefix.ends_with('/') || path[prefix.size()] == '/';
}

// Directories owned by the Redis package and their Valkey counterparts. "redis-NAME" runtime
// directories of templated instances (redis-server@NAME) become "valkey-NAME".
constexpr std::pair<std::string_view, std::string_view> k_dirs[] = {
    {"/etc/redis", "/etc/valkey"},         {"/var/lib/redis", "/var/lib/valkey"},
    {"/var/log/redis", "/var/log/valkey"}, {"/run/redis", "/run/valkey"},
    {"/var/run/redis", "/var/run/valkey"},
};

// The file name part: Debian names files redis-server.*, RHEL redis.*; instance configs are
// redis-NAME.conf on both.
std::string map_basename(std::string_view name, Layout layout) {
  if (layout == Layout::custom) {
    return std::string(name);
  }
  if (name.starts_with("redis-server")) {
    return "valkey-server" + std::string(name.substr(12));
  }
  if (name.starts_with("redis-sentinel")) {
    return "valkey-sentinel" + std::string(name.substr(14));
  }
  if (name.starts_with("redis.") || name.starts_with("redis-") || name.starts_with("redis_")) {
    return "valkey" + std::string(name.substr(5));
  }
  return std::string(name);
}

}  // namespace

std::optional<Layout> parse_layout(std::string_view name) {
  if (name == "debian") {
    return Layout::debian;
  }
  if (name == "rhel") {
    return Layout::rhel;
  }
  if (name == "custom") {
    return Layout::custom;
  }
  return std::nullopt;
}

std::string_view layout_name(Layout layout) {
  switch (layout) {
    case Layout::debian:
      return "debian";
    case Layout::rhel:
      return "rhel";
    case Layout::custom:
      return "custom";
  }
  return "custom";
}

PathMapper::PathMapper(Layout layout, std::vector<std::pair<std::string, std::string>> extra)
    : m_layout(layout), m_extra(std::move(extra)) {
  std::stable_sort(m_extra.begin(), m_extra.end(),
                   [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
}

std::string PathMapper::map(std::string_view path) const {
  for (const auto& [from, to] : m_extra) {
    if (under(path, from)) {
      return to + std::string(path.substr(from.size()));
    }
  }
  if (m_layout == Layout::custom || !path.starts_with('/')) {
    return std::string(path);
  }
  if (path == "/etc/redis.conf") {  // RHEL 8 module streams
    return "/etc/valkey/valkey.conf";
  }
  size_t slash = path.rfind('/');
  std::string_view dir = path.substr(0, slash);
  std::string_view base = path.substr(slash + 1);
  for (const auto& [from, to] : k_dirs) {
    if (under(dir, from)) {
      return std::string(to) + std::string(dir.substr(from.size())) + "/" +
             map_basename(base, m_layout);
    }
    // An instance runtime directory: /run/redis-NAME/...
    std::string instance_prefix = std::string(from) + "-";
    if (dir.starts_with(instance_prefix) && dir.find('/', instance_prefix.size()) == dir.npos &&
        (from == "/run/redis" || from == "/var/run/redis")) {
      return std::string(to) + "-" + std::string(dir.substr(instance_prefix.size())) + "/" +
             map_basename(base, m_layout);
    }
  }
  for (const auto& [from, to] : k_dirs) {
    if (path == from) {
      return std::string(to);
    }
  }
  return std::string(path);
}

std::optional<Layout> detect_layout(const std::vector<std::string>& paths) {
  for (const std::string& path : paths) {
    std::string_view base = std::string_view(path).substr(path.rfind('/') + 1);
    if (base.starts_with("redis-server.")) {
      return Layout::debian;
    }
  }
  for (const std::string& path : paths) {
    std::string_view base = std::string_view(path).substr(path.rfind('/') + 1);
    if (base == "redis.log" || base == "redis.sock" || path == "/etc/redis.conf") {
      return Layout::rhel;
    }
  }
  return std::nullopt;
}

}  // namespace keyshift::migrate
