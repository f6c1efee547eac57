#include "migrate/rewrite/apply.hpp"

#include "engine/util/atomic_file.hpp"
#include "engine/util/sha1.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <toml++/toml.h>

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace keyshift::migrate {
namespace {

namespace fs = std::filesystem;

struct Meta {
  uid_t uid = 0;
  gid_t gid = 0;
  mode_t mode = 0644;
};

std::string errno_text() {
  return std::strerror(errno);
}

std::optional<Meta> stat_meta(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return std::nullopt;
  }
  return Meta{st.st_uid, st.st_gid, st.st_mode & 07777};
}

// A new file takes the source's mode; a file the Redis package owned goes to the target's
// service user when it exists (Debian's units run valkey-server as valkey:valkey).
Meta new_file_meta(const PlannedFile& file, std::vector<std::string>& warnings) {
  Meta meta;
  meta.uid = ::geteuid();
  meta.gid = ::getegid();
  if (auto source = stat_meta(file.source)) {
    meta = *source;
  }
  if (file.kind == FileKind::server_config || file.kind == FileKind::server_file) {
    struct passwd* owner = ::getpwuid(meta.uid);
    if (owner != nullptr && std::string_view(owner->pw_name) == "redis") {
      struct passwd* valkey = ::getpwnam("valkey");
      if (valkey != nullptr) {
        meta.uid = valkey->pw_uid;
        meta.gid = valkey->pw_gid;
      } else {
        warnings.push_back(fmt::format(
            "{}: owned by redis like {}; there is no valkey user yet: chown it once the target "
            "package is installed",
            file.path, file.source));
      }
    }
  }
  return meta;
}

// Writes `bytes` to `path` atomically (engine::AtomicFile: a hidden temp file beside it,
// which a glob such as include *.conf never matches), with the planned mode and owner.
std::optional<std::string> write_atomic(const std::string& path, std::string_view bytes,
                                        const Meta& meta) {
  fs::path target(path);
  std::error_code ec;
  fs::create_directories(target.parent_path(), ec);
  if (ec) {
    return fmt::format("cannot create {}: {}", target.parent_path().string(), ec.message());
  }
  auto file = engine::AtomicFile::create(path, meta.mode);
  if (!file) {
    return file.error().message();
  }
  if (auto error = file->write(bytes)) {
    return error->message();
  }
  // Only root can give a file away; anyone else keeps their own files.
  if ((::geteuid() == 0 || meta.uid == ::geteuid()) &&
      ::fchown(file->fd(), meta.uid, meta.gid) != 0) {
    return fmt::format("cannot chown {}: {}", file->temp_path(), errno_text());
  }
  if (auto error = file->commit()) {
    return error->message();
  }
  return std::nullopt;
}

std::optional<std::string> read_whole(const std::string& path, std::string& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return fmt::format("cannot read {}: {}", path, errno_text());
  }
  std::ostringstream buffer;
  buffer << in.rdbuf();
  out = buffer.str();
  return std::nullopt;
}

std::string backup_path(const std::string& run_dir, const std::string& path) {
  return run_dir + "/files" + (path.starts_with('/') ? path : "/" + path);
}

// One manifest entry: a file the run wrote.
struct Entry {
  std::string path;
  bool existed = false;
  std::string hash_before;
  std::string hash_after;
  Meta meta;         // before the run (or the new file's)
  std::string kind;  // FileKind name, for validation on rollback reports
};

// A run killed before its manifest was written (nothing but backups happened yet) leaves a
// run directory with no manifest and the temporary file of the write it was in: removed
// whole by the next run, unless a writer that still runs owns a temporary file in it.
void remove_killed_runs(const std::string& root) {
  std::error_code ec;
  for (const fs::directory_entry& run : fs::directory_iterator(root, ec)) {
    if (!run.is_directory(ec) || fs::exists(run.path() / k_manifest_name, ec)) {
      continue;
    }
    bool killed = false;
    bool live = false;
    for (const fs::directory_entry& f : fs::recursive_directory_iterator(run.path(), ec)) {
      std::string name = f.path().filename().string();
      size_t at = name.rfind(".tmp-");
      if (!name.starts_with(".") || at == std::string::npos) {
        continue;
      }
      pid_t pid = static_cast<pid_t>(std::atol(name.c_str() + at + 5));
      (engine::process_is_gone(pid) ? killed : live) = true;
    }
    if (killed && !live) {
      fs::remove_all(run.path(), ec);
    }
  }
}

std::string unique_run_dir(const std::string& root, const std::string& name) {
  std::string candidate = root + "/" + name;
  for (int i = 1; fs::exists(candidate); ++i) {
    candidate = fmt::format("{}/{}-{}", root, name, i);
  }
  return candidate;
}

std::string write_manifest(const std::vector<Entry>& entries,
                           const std::vector<std::string>& created_dirs) {
  toml::table root;
  root.insert("version", 1);
  root.insert("tool", "keyshift rewrite");
  toml::array dirs;
  for (const std::string& d : created_dirs) {
    dirs.push_back(d);
  }
  root.insert("created_dirs", std::move(dirs));
  toml::array files;
  for (const Entry& e : entries) {
    toml::table t;
    t.insert("path", e.path);
    t.insert("existed", e.existed);
    t.insert("sha1_before", e.hash_before);
    t.insert("sha1_after", e.hash_after);
    t.insert("uid", static_cast<int64_t>(e.meta.uid));
    t.insert("gid", static_cast<int64_t>(e.meta.gid));
    t.insert("mode", fmt::format("{:04o}", e.meta.mode));
    t.insert("kind", e.kind);
    files.push_back(std::move(t));
  }
  root.insert("files", std::move(files));
  std::ostringstream out;
  out << "# keyshift rewrite run: files written and how to restore them\n" << root << "\n";
  return out.str();
}

const char* kind_name(FileKind kind) {
  switch (kind) {
    case FileKind::server_config:
      return "server_config";
    case FileKind::server_file:
      return "server_file";
    case FileKind::nginx:
      return "nginx";
    case FileKind::php:
      return "php";
    case FileKind::ini:
      return "ini";
    case FileKind::env:
      return "env";
    case FileKind::python:
      return "python";
    case FileKind::ruby:
      return "ruby";
    case FileKind::text:
      return "text";
  }
  return "text";
}

FileKind kind_from_name(std::string_view name) {
  if (name == "server_config") {
    return FileKind::server_config;
  }
  if (name == "server_file") {
    return FileKind::server_file;
  }
  if (name == "nginx") {
    return FileKind::nginx;
  }
  if (name == "php") {
    return FileKind::php;
  }
  if (name == "ini") {
    return FileKind::ini;
  }
  if (name == "env") {
    return FileKind::env;
  }
  if (name == "python") {
    return FileKind::python;
  }
  if (name == "ruby") {
    return FileKind::ruby;
  }
  return FileKind::text;
}

// The directories that do not exist yet above each path, outermost first, each once.
std::vector<std::string> missing_dirs(const std::vector<std::string>& paths) {
  std::vector<std::string> out;
  for (const std::string& path : paths) {
    std::vector<std::string> chain;
    std::error_code ec;
    for (fs::path dir = fs::path(path).parent_path(); !dir.empty() && dir != dir.root_path();
         dir = dir.parent_path()) {
      if (fs::exists(dir, ec)) {
        break;
      }
      chain.push_back(dir.string());
    }
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      if (std::find(out.begin(), out.end(), *it) == out.end()) {
        out.push_back(*it);
      }
    }
  }
  return out;
}

// Removes the directories a run created, innermost first, when they are empty again; a
// directory that holds something else now is left and named.
// With `check`, only counts; `gone` lists paths that count as removed already.
std::vector<std::string> remove_dirs(const std::vector<std::string>& dirs, bool check,
                                     std::vector<std::string> gone,
                                     std::vector<std::string>& removed) {
  std::vector<std::string> kept;
  for (auto it = dirs.rbegin(); it != dirs.rend(); ++it) {
    std::error_code ec;
    if (!fs::is_directory(*it, ec)) {
      continue;
    }
    bool empty = true;
    for (fs::directory_iterator d(*it, ec), end; !ec && d != end; d.increment(ec)) {
      std::string child = d->path().string();
      if (std::find(gone.begin(), gone.end(), child) == gone.end()) {
        empty = false;
        break;
      }
    }
    if (!empty || (!check && ::rmdir(it->c_str()) != 0)) {
      kept.push_back(*it);
      continue;
    }
    gone.push_back(*it);
    removed.push_back(*it);
  }
  return kept;
}

// Puts every entry back as it was before the run; returns the files it could not restore.
std::vector<std::string> restore(const std::string& run_dir, const std::vector<Entry>& entries) {
  std::vector<std::string> failures;
  for (const Entry& e : entries) {
    if (!e.existed) {
      if (::unlink(e.path.c_str()) != 0 && errno != ENOENT) {
        failures.push_back(fmt::format("{}: cannot remove: {}", e.path, errno_text()));
      }
      continue;
    }
    std::string bytes;
    if (auto error = read_whole(backup_path(run_dir, e.path), bytes)) {
      failures.push_back(*error);
      continue;
    }
    if (auto error = write_atomic(e.path, bytes, e.meta)) {
      failures.push_back(*error);
    }
  }
  return failures;
}

}  // namespace

std::string content_hash(std::string_view bytes) {
  engine::Sha1 sha;
  sha.update(bytes);
  std::string out;
  for (uint8_t b : sha.finish()) {
    out += fmt::format("{:02x}", b);
  }
  return out;
}

ApplyResult apply_plan(const RewritePlan& plan, const ApplyOptions& options) {
  ApplyResult result;
  std::vector<const PlannedFile*> todo;
  for (const PlannedFile& file : plan.files) {
    if (file.changed()) {
      todo.push_back(&file);
    }
  }
  if (todo.empty()) {
    return result;
  }
  std::error_code ec;
  fs::create_directories(options.backup_root, ec);
  if (ec) {
    result.ok = false;
    result.error =
        fmt::format("cannot create the backup directory {}: {}", options.backup_root, ec.message());
    return result;
  }
  remove_killed_runs(options.backup_root);
  result.run_dir = unique_run_dir(options.backup_root, options.run_name);
  if (::mkdir(result.run_dir.c_str(), 0700) != 0) {
    result.ok = false;
    result.error = fmt::format("cannot create {}: {}", result.run_dir, errno_text());
    result.run_dir.clear();
    return result;
  }
  // Back up first; nothing is written until every backup and the manifest are on disk.
  std::vector<Entry> entries;
  std::vector<Meta> metas;
  for (const PlannedFile* file : todo) {
    Entry e;
    e.path = file->path;
    e.existed = file->exists;
    e.kind = kind_name(file->kind);
    e.hash_after = content_hash(file->after);
    if (file->exists) {
      e.hash_before = content_hash(file->current);
      e.meta = stat_meta(file->path).value_or(Meta{});
      if (auto error = write_atomic(backup_path(result.run_dir, file->path), file->current,
                                    Meta{::geteuid(), ::getegid(), 0600})) {
        result.ok = false;
        result.error = "backup failed, nothing written: " + *error;
        return result;
      }
      metas.push_back(e.meta);
    } else {
      metas.push_back(new_file_meta(*file, result.warnings));
      e.meta = metas.back();
    }
    entries.push_back(std::move(e));
  }
  std::vector<std::string> targets;
  for (const PlannedFile* file : todo) {
    targets.push_back(file->path);
  }
  std::vector<std::string> created_dirs = missing_dirs(targets);
  if (auto error = write_atomic(result.run_dir + "/" + std::string(k_manifest_name),
                                write_manifest(entries, created_dirs),
                                Meta{::geteuid(), ::getegid(), 0600})) {
    result.ok = false;
    result.error = "cannot write the manifest, nothing written: " + *error;
    return result;
  }
  std::vector<Entry> done;
  auto undo = [&](const std::string& why) {
    result.ok = false;
    std::vector<std::string> failures = restore(result.run_dir, done);
    std::vector<std::string> removed;
    for (const std::string& kept : remove_dirs(created_dirs, false, {}, removed)) {
      failures.push_back(fmt::format("{}: cannot remove the directory the run created", kept));
    }
    result.error = why + (failures.empty() ? "; every file was restored from " + result.run_dir
                                           : "; restoring failed too: " +
                                                 fmt::format("{}", fmt::join(failures, "; ")));
    result.written.clear();
  };
  for (size_t i = 0; i < todo.size(); ++i) {
    if (auto error = write_atomic(todo[i]->path, todo[i]->after, metas[i])) {
      undo(*error);
      return result;
    }
    done.push_back(entries[i]);
    result.written.push_back(todo[i]->path);
  }
  if (options.validate) {
    for (const PlannedFile* file : todo) {
      if (auto error = options.validate(*file)) {
        undo(fmt::format("{}: validation failed: {}", file->path, *error));
        return result;
      }
    }
  }
  return result;
}

RollbackResult rollback_run(const std::string& run_dir, bool check, bool force) {
  RollbackResult result;
  std::string manifest_path = run_dir + "/" + std::string(k_manifest_name);
  toml::table parsed;
  try {
    parsed = toml::parse_file(manifest_path);
  } catch (const toml::parse_error& error) {
    result.ok = false;
    result.error =
        fmt::format("{}:{}: {}", manifest_path, error.source().begin.line, error.description());
    return result;
  }
  const toml::array* files = parsed["files"].as_array();
  if (files == nullptr) {
    result.ok = false;
    result.error = fmt::format("{}: no files list", manifest_path);
    return result;
  }
  std::vector<std::string> created_dirs;
  if (const toml::array* dirs = parsed["created_dirs"].as_array()) {
    for (const toml::node& node : *dirs) {
      if (auto d = node.value<std::string>()) {
        created_dirs.push_back(*d);
      }
    }
  }
  std::vector<Entry> entries;
  for (const toml::node& node : *files) {
    const toml::table* t = node.as_table();
    if (t == nullptr) {
      continue;
    }
    Entry e;
    e.path = (*t)["path"].value_or(std::string());
    e.existed = (*t)["existed"].value_or(false);
    e.hash_before = (*t)["sha1_before"].value_or(std::string());
    e.hash_after = (*t)["sha1_after"].value_or(std::string());
    e.meta.uid = static_cast<uid_t>((*t)["uid"].value_or(int64_t{0}));
    e.meta.gid = static_cast<gid_t>((*t)["gid"].value_or(int64_t{0}));
    e.meta.mode =
        static_cast<mode_t>(std::stoul((*t)["mode"].value_or(std::string("0644")), nullptr, 8));
    e.kind = (*t)["kind"].value_or(std::string("text"));
    if (e.path.empty()) {
      result.ok = false;
      result.error = fmt::format("{}: an entry without a path", manifest_path);
      return result;
    }
    entries.push_back(std::move(e));
  }
  std::vector<Entry> todo;
  for (const Entry& e : entries) {
    std::string now;
    bool present = !read_whole(e.path, now).has_value();
    std::string now_hash = present ? content_hash(now) : std::string();
    std::string before;
    if (e.existed) {
      if (auto error = read_whole(backup_path(run_dir, e.path), before)) {
        result.ok = false;
        result.error = "backup missing: " + *error;
        return result;
      }
    }
    if ((e.existed && present && now_hash == e.hash_before) || (!e.existed && !present)) {
      result.unchanged.push_back(e.path);
      continue;
    }
    if (!force && (!present || now_hash != e.hash_after)) {
      result.ok = false;
      result.error = fmt::format(
          "{} changed since the run (sha1 {} is neither the run's result "
          "nor the backup); use --force to restore it anyway",
          e.path, present ? now_hash : std::string("none: file missing"));
      return result;
    }
    PlannedFile file;
    file.path = e.path;
    file.kind = kind_from_name(e.kind);
    file.source = backup_path(run_dir, e.path);
    file.exists = present;
    file.current = now;
    file.before = now;
    file.after = before;
    result.plan.files.push_back(file);
    result.plan.changes.push_back(Change{e.path, 0, "", e.existed ? "restored" : "removed", "", "",
                                         fmt::format("rollback of {}", run_dir)});
    todo.push_back(e);
    result.restored.push_back(e.path);
  }
  std::vector<std::string> failures;
  if (!check) {
    // A file the run created is removed: restore() knows this from `existed`.
    failures = restore(run_dir, todo);
  }
  if (failures.empty()) {
    // In check mode the files the run created still exist; count them as gone.
    std::vector<std::string> would_go;
    if (check) {
      for (const Entry& e : todo) {
        if (!e.existed) {
          would_go.push_back(e.path);
        }
      }
    }
    std::vector<std::string> kept =
        remove_dirs(created_dirs, check, std::move(would_go), result.removed_dirs);
    for (const std::string& d : kept) {
      result.warnings.push_back(
          fmt::format("{}: the run created this directory; it holds other files now and stays", d));
    }
    for (const std::string& d : result.removed_dirs) {
      result.plan.changes.push_back(
          Change{d, 0, "", "removed", "", "", fmt::format("directory created by {}", run_dir)});
    }
  }
  if (!failures.empty()) {
    result.ok = false;
    result.error = fmt::format("{}", fmt::join(failures, "; "));
  }
  return result;
}

}  // namespace keyshift::migrate
