#pragma once

#include "engine/server/config_file.hpp"
#include "engine/util/expected.hpp"
#include "migrate/rewrite/apps_rewrite.hpp"
#include "migrate/rewrite/layout.hpp"
#include "migrate/rewrite/server_rewrite.hpp"
#include "migrate/rewrite/target_table.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

// What `rewrite apps` reads before it plans: which files to look at, and where the server
// was and will be, taken from the same server rewrite `rewrite server` plans.
namespace keyshift::migrate {

/// The places `rewrite apps --profile NAME` looks when no paths are named (empty for a
/// profile with no usual place: generic, laravel, django, rails).
std::vector<std::string> default_app_paths(std::string_view profile);

/// The application settings files under `paths`, sorted: a file as named; a directory
/// walked six levels deep without following symlinked directories or entering .git,
/// node_modules, vendor, wp-content, cache, storage or tmp, keeping the files
/// is_app_candidate names and no bigger than 2 MiB. A path that does not exist is an error
/// when `named` (the user gave it) and skipped otherwise (a profile's default places).
engine::Expected<std::vector<std::string>, std::string> find_app_files(
    const std::vector<std::string>& paths, bool named);

/// Reads `names` into AppFiles with absolute, normalised paths; the error names the file.
engine::Expected<std::vector<AppFile>, std::string> read_app_files(
    const std::vector<std::string>& names);

/// "file:line: message" (or "file: message" when no line is known).
std::string rewrite_failure_text(const RewriteFailure& failure);

/// A server config's socket, port and requirepass the way `rewrite server` sees them:
/// `before` as the file has them, `after` as the rewrite for `layout` would write them.
/// The error is "file:line: message".
engine::Expected<ServerRewrite, std::string> read_server_endpoints(engine::ConfigFilesystem& fs,
                                                                   const TargetCatalog& catalog,
                                                                   const std::string& path,
                                                                   std::optional<Layout> layout,
                                                                   const std::string& socket);

/// Points `options` from the Redis config at `server_config` to the server after the
/// rewrite: as `rewrite server` plans it, or, when `server_out` names the config it wrote,
/// as that file says (edits included). Old sockets join `from_sockets`; a port change moves
/// TCP settings (to `tcp_to` when the new server is reached by socket); an unchanged port
/// is `same_server`; a changed requirepass becomes `to.password`. Returns the warnings.
engine::Expected<std::vector<std::string>, std::string> map_server_endpoints(
    engine::ConfigFilesystem& fs, const TargetCatalog& catalog, const std::string& server_config,
    const std::string& server_out, std::optional<Layout> layout, AppsRewriteOptions& options);

}  // namespace keyshift::migrate
