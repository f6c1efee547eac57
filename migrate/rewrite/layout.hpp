#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

// Where a distribution puts Redis' and Valkey's files, and how a path of one becomes the
// path of the other (/var/lib/redis -> /var/lib/valkey, redis-server.sock ->
// valkey-server.sock, ...).
namespace keyshift::migrate {

/// A distribution's file layout.
enum class Layout { debian, rhel, custom };

/// "debian", "rhel", "custom" -> Layout.
std::optional<Layout> parse_layout(std::string_view name);
/// The name parse_layout() reads.
std::string_view layout_name(Layout layout);

/// Maps Redis paths to target paths: explicit FROM=TO prefixes first (longest wins), then
/// the layout's rules. Paths the rules do not cover come back unchanged.
class PathMapper {
 public:
  /// `extra` are user prefixes (FROM, TO), applied to whole path components only.
  PathMapper(Layout layout, std::vector<std::pair<std::string, std::string>> extra = {});

  /// The target path of `path` (absolute; relative paths and globs are mapped as text).
  std::string map(std::string_view path) const;
  /// The layout in use.
  Layout layout() const { return m_layout; }

 private:
  Layout m_layout;
  std::vector<std::pair<std::string, std::string>> m_extra;
};

/// Guesses the layout from the paths a config names (Debian's redis-server.log/.pid/.sock
/// or RHEL's redis.log/redis.sock); nullopt when nothing tells.
std::optional<Layout> detect_layout(const std::vector<std::string>& paths);

}  // namespace keyshift::migrate
