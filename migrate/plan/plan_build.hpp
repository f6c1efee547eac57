#pragma once

#include "migrate/plan/plan_model.hpp"

#include <string>
#include <vector>

// `keyshift migrate plan`: asks the running source what it is (INFO, CONFIG GET), works out
// the target's paths, runs the preflight checks and writes the steps of the chosen strategy.
namespace keyshift::migrate {

/// What `migrate plan` is told; everything else is discovered.
struct PlanOptions {
  std::string from;                         ///< the source's URL (unix:///... or redis://...)
  std::string to = "keyshift";              ///< keyshift or valkey-server
  std::string target_binary;                ///< valkey-server's path (default: found on PATH)
  std::string strategy = "snapshot";        ///< snapshot or replica
  std::string service_manager = "systemd";  ///< systemd or command
  std::string source_start, source_stop, target_start, target_stop;  ///< command mode
  std::string source_config;           ///< default: INFO server's config_file
  std::string target_config;           ///< default: the source's path with redis -> valkey
  std::string target_socket;           ///< default: the source's socket path with redis -> valkey
  std::string target_dir;              ///< default: the source's dir with redis -> valkey
  int target_port = -1;                ///< -1: the source's (snapshot) or none (replica)
  std::string layout;                  ///< passed to rewrite server
  std::vector<std::string> map_paths;  ///< more /FROM=/TO for rewrite server
  std::vector<std::string> apps;       ///< files or directories for rewrite apps
  std::string apps_profile;
  std::string state_dir;              ///< default /var/lib/keyshift/migrate
  std::string keyshift;               ///< this binary's path
  int bench_requests = 2000;          ///< per bench test before and after; 0 skips the benches
  std::string web_user = "www-data";  ///< who must reach the target's socket (socket-group)
};

/// Who may reach the target's socket directory, as the host says.
struct SocketDirAccess {
  std::string dir;       ///< the socket's directory, or its nearest existing parent
  bool exists = true;    ///< false: `dir` is that parent (the socket's own is made later)
  std::string owner;     ///< user name (or uid) owning `dir`
  std::string group;     ///< group name (or gid) of `dir`
  std::string web_user;  ///< the web server's user
  bool web_user_exists = false;
  bool in_group = false;  ///< web_user's primary group or a member of `group`
};

/// The memory preflight: the dataset's `used_memory` against MemAvailable in `meminfo` (the
/// text of /proc/meminfo); warn when it does not fit or MemAvailable is missing.
PreflightCheck memory_check(uint64_t used_memory, std::string_view meminfo);

/// The socket-group preflight: ok when the web user is in the directory's group (or absent
/// from this host), warn with the `usermod -aG` fix otherwise.
PreflightCheck socket_group_check(const SocketDirAccess& access);

/// What the host says about `socket_dir` and `web_user` (stat, passwd and group database).
SocketDirAccess socket_dir_access(const std::string& socket_dir, const std::string& web_user);

/// A plan, or why none could be made (the source cannot be reached, a path is unknown).
engine::Expected<MigrationPlan, std::string> make_plan(const PlanOptions& options);

}  // namespace keyshift::migrate
