#pragma once

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

/// Where clients reach a server: a unix socket, or host and port.
struct Endpoint {
  std::string socket;  ///< non-empty for a unix socket
  std::string host;
  int port = 0;
  std::optional<std::string> password;  ///< AUTH password (requirepass), when known
  std::optional<int> db;                ///< SELECTed database, when given

  /// True when nothing is set.
  bool empty() const { return socket.empty() && host.empty() && port == 0; }
};

}  // namespace keyshift::migrate
