#pragma once

#include "migrate/rewrite/plan.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

// `keyshift rewrite apps`: application settings that point at the old server (nginx upstreams,
// wp-config.php, php.ini/FPM session.save_path, .env files, Nextcloud config.php) moved to the
// new endpoint, each format edited in its own syntax, everything else byte for byte.
namespace keyshift::migrate {

/// The formats `rewrite apps` edits.
enum class AppFormat { nginx, wp_config, php_ini, env, nextcloud, django, rails, unknown };

/// Name shown in reports ("nginx", "wp-config", ...).
std::string_view app_format_name(AppFormat format);

/// Which formats a --profile covers.
struct AppProfile {
  std::string name;
  std::vector<AppFormat> formats;
};

/// The profile called `name` (wordops, wordpress, php, laravel, django, rails, nextcloud,
/// generic), or nullptr.
const AppProfile* find_app_profile(std::string_view name);
/// Every profile name.
std::vector<std::string> app_profile_names();

/// The format of a file from its name and contents, within `profile`; unknown when it is
/// not one `rewrite apps` edits.
AppFormat classify_app_file(std::string_view path, std::string_view contents,
                            const AppProfile& profile);

/// True when a directory walk should read the file at `path` at all (by name).
bool is_app_candidate(std::string_view path);

/// The old and new server and what else to do. Passwords and databases change only in
/// settings that point at the server (old or new address, or `same_server`): a setting's
/// password is replaced when `to.password` is set and the setting holds `from.password` (any
/// password when that is unset); its database when `to.db` is set and it uses `from.db`
/// (0 when unset).
struct AppsRewriteOptions {
  std::vector<std::string> from_sockets;   ///< old socket paths (all rewritten to to.socket)
  KnownEndpoint from;                      ///< old TCP endpoint (host, port), if it moves
  KnownEndpoint to;                        ///< new endpoint: socket, or host and port
  std::optional<KnownEndpoint> tcp_to;     ///< where TCP settings go instead of `to` (port change)
  std::vector<KnownEndpoint> same_server;  ///< addresses of the server that do not move
  bool fix_prefixes = false;               ///< add ':' to colliding WP_REDIS_PREFIX values
};

/// One application file as read.
struct AppFile {
  std::string path;
  std::string contents;
};

/// A WP_REDIS_PREFIX that shares keys with another site's.
struct PrefixCollision {
  std::string file;
  std::string prefix;
  int db = 0;
  std::string other_file;
  std::string other_prefix;
};

/// A prefix --fix-prefixes changed: data for renaming the keys later.
struct PrefixRename {
  std::string file;
  int db = 0;
  std::string from;
  std::string to;
  std::vector<std::string> exclude;  ///< longer prefixes of other sites that `from*` matches
};

/// The plan plus the prefix findings.
struct AppsRewrite {
  RewritePlan plan;
  std::vector<PrefixCollision> collisions;
  std::vector<PrefixRename> renames;
};

/// Plans the rewrite of `files` (already classified; unknown ones are only scanned for the
/// old socket path, which becomes a warning).
AppsRewrite rewrite_apps(const std::vector<AppFile>& files, const AppProfile& profile,
                         const AppsRewriteOptions& options);

/// `url` pointed at the new endpoint when it names the old one (redis://, rediss://, tcp://,
/// tls://, unix://, unix:, redis+socket://, a bare socket path), with the password and
/// database change applied when it names the server; nullopt when nothing changes. The
/// scheme family is kept: never valkey://. (rewrite_server_url for a generic client.)
std::optional<std::string> rewrite_endpoint_url(std::string_view url,
                                                const AppsRewriteOptions& options);

/// The server a --from-url/--to-url names: redis://[user:pass@]HOST:PORT[/DB],
/// rediss://..., unix:///PATH?db=N&password=P (also unix://:P@/PATH), HOST:PORT or /PATH;
/// the password and database only when the text carries them. nullopt when malformed.
std::optional<KnownEndpoint> parse_endpoint_url(std::string_view text);

/// Which client reads a URL: it decides the query parameter names for the password and the
/// database (phpredis/Predis: auth=, database=; redis-py and most others: user info, db=)
/// and whether a unix socket URL is possible at all (Ruby's redis-client has none).
enum class UrlClient { generic, phpredis, ruby };

/// A URL rewritten for the new server, or why it cannot be.
struct UrlRewrite {
  std::optional<std::string> url;  ///< the new URL; nullopt when it stays as it is
  std::string problem;             ///< non-empty: it names the server but cannot be mapped
};

/// rewrite_endpoint_url for a given client; a move the client cannot follow (TLS or Ruby to a
/// socket, a socket path to TCP) is a problem instead.
UrlRewrite rewrite_server_url(std::string_view url, const AppsRewriteOptions& options,
                              UrlClient client);

}  // namespace keyshift::migrate
