#pragma once

#include "engine/resp/connection.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

// What a rewrite means to do: the files it would write and every change with its reason.
// Server and application rewrites both produce a RewritePlan; rewrite_run applies it.
namespace keyshift::migrate {

/// How a written file is checked before the run reports success.
/// `server_file`: a file the server reads (ACL file, TLS key), copied to its new path.
enum class FileKind { server_config, server_file, nginx, php, ini, env, python, ruby, text };

/// One file the rewrite produces.
struct PlannedFile {
  std::string path;    ///< where the result goes
  std::string source;  ///< the file that was read (equal to `path` for an in-place edit)
  FileKind kind = FileKind::text;
  bool exists = false;  ///< `path` exists now
  std::string current;  ///< its contents when it exists
  std::string before;   ///< diff base: `current`, or the source's text for a new file
  std::string after;    ///< the rewritten contents

  /// True when writing would change what is on disk.
  bool changed() const { return !exists || current != after; }
};

/// One edit, for the change table and the JSON report.
struct Change {
  std::string file;
  int line = 0;
  std::string directive;  ///< directive, constant or key
  std::string action;     ///< "path", "dropped", "translated", "value", "added", "endpoint", ...
  std::string before;     ///< the line (or value) as it was
  std::string after;      ///< as it becomes; empty when dropped
  std::string reason;
};

/// Everything a rewrite would do.
struct RewritePlan {
  std::vector<PlannedFile> files;
  std::vector<Change> changes;
  std::vector<std::string> warnings;

  /// True when at least one file would change on disk.
  bool changed() const;
};

/// A server as a rewrite knows it. Where it is and how to log in is the engine's one
/// endpoint type; beside it, what a rewrite may not know: a config without requirepass, or a
/// URL without a password or database, says nothing about the password or database apps
/// send, which is not the same as none or database 0. An endpoint with neither a socket nor
/// a host names no address (a password- or database-only change).
struct KnownEndpoint {
  engine::RespEndpoint address{.host = "", .port = 0};  ///< unix_path, or host and port
  bool password_known = false;  ///< address.password is the server's (requirepass)
  bool db_known = false;        ///< address.db was given

  /// A TCP address with nothing else known.
  static KnownEndpoint tcp(std::string host, int port);
  /// A unix socket with nothing else known.
  static KnownEndpoint unix_socket(std::string path);

  /// True when no address is set.
  bool empty() const {
    return address.unix_path.empty() && address.host.empty() && address.port == 0;
  }
  /// The password, when known.
  std::optional<std::string> password() const;
  /// The database, when known.
  std::optional<int> db() const;
  /// Sets or forgets the password.
  void set_password(std::optional<std::string> password);
  /// Sets or forgets the database.
  void set_db(std::optional<int> db);
};

}  // namespace keyshift::migrate
