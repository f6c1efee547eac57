#include "migrate/rewrite/validate.hpp"

#include "compat/process/child_process.hpp"
#include "migrate/rewrite/probe.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace keyshift::migrate {
namespace {

namespace fs = std::filesystem;
using compat::find_program;
using compat::ProcessResult;
using compat::run_process;
using compat::ScratchDir;

bool write_text(const std::string& path, std::string_view text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  return static_cast<bool>(out);
}

std::string last_lines(const std::string& output) {
  std::string trimmed = output;
  while (!trimmed.empty() && (trimmed.back() == '\n' || trimmed.back() == ' ')) {
    trimmed.pop_back();
  }
  // Long outputs end with the line that matters.
  if (trimmed.size() > 600) {
    trimmed = "..." + trimmed.substr(trimmed.size() - 600);
  }
  return trimmed;
}

// True when the nginx file is a whole configuration rather than a snippet of http {}.
bool whole_nginx_config(std::string_view text) {
  size_t pos = 0;
  while ((pos = text.find("http", pos)) != std::string_view::npos) {
    bool line_start = pos == 0 ||
                      text.substr(0, pos).find_last_not_of(" \t") == std::string_view::npos ||
                      text[text.substr(0, pos).find_last_not_of(" \t")] == '\n';
    size_t after = text.find_first_not_of(" \t\r\n", pos + 4);
    if (line_start && after != std::string_view::npos && text[after] == '{') {
      return true;
    }
    pos += 4;
  }
  return false;
}

// The nginx prefix a file's relative includes resolve against: the directory holding
// "nginx/" in its real path (/etc/nginx/), read only by nginx -t; else the temp directory.
std::string nginx_prefix(const std::string& real_path, const std::string& temp) {
  size_t at = real_path.find("/nginx/");
  return at == std::string::npos ? temp + "/" : real_path.substr(0, at + 7);
}

std::optional<std::string> check_nginx(const std::string& nginx, const std::string& path,
                                       const std::string& real_path, std::string_view text) {
  compat::ScratchDir prefix("keyshift-check-");
  if (prefix.path().empty()) {
    return std::string("cannot create a temp directory for nginx -t");
  }
  std::string conf = path;
  if (!whole_nginx_config(text)) {
    // A conf.d snippet (upstream blocks) is only valid inside http {}.
    conf = prefix.path() + "/nginx.conf";
    std::string wrapper = fmt::format(
        "pid {0}/nginx.pid;\nerror_log {0}/error.log;\nevents {{}}\nhttp {{\n"
        "  access_log off;\n  include {1};\n}}\n",
        prefix.path(), path);
    if (!write_text(conf, wrapper)) {
      return std::string("cannot write the nginx -t wrapper");
    }
  }
  // pid and error_log point into the temp directory: the system nginx is never touched.
  compat::ProcessResult r = compat::run_process(
      {nginx, "-t", "-q", "-p", nginx_prefix(real_path, prefix.path()), "-c", conf});
  if (r.status != 0) {
    return fmt::format("nginx -t: {}", last_lines(r.output));
  }
  return std::nullopt;
}

/// Runs `program` (found on PATH) with `args` on a written copy: its error output when it
/// refuses the file; a note naming `what` when the program is not installed.
std::optional<std::string> check_with(const std::string& program, const std::string& what,
                                      std::vector<std::string> args, std::string_view label,
                                      const std::string& shown_path,
                                      std::vector<std::string>& notes) {
  std::string exe = compat::find_program(program);
  if (exe.empty()) {
    notes.push_back(fmt::format("{}: not checked: {} is not installed", shown_path, what));
    return std::nullopt;
  }
  args.insert(args.begin(), exe);
  compat::ProcessResult r = compat::run_process(args);
  if (r.status != 0) {
    return fmt::format("{}: {}", label, last_lines(r.output));
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> validate_file(const PlannedFile& file, const std::string& path,
                                         const Validators& validators,
                                         std::vector<std::string>& notes) {
  switch (file.kind) {
    case FileKind::server_config: {
      if (!validators.server_binary.empty()) {
        if (auto error = dry_start(validators.server_binary, path)) {
          return "dry start: " + *error;
        }
      }
      if (!validators.server_is_keyshift || validators.keyshift.empty()) {
        return std::nullopt;
      }
      compat::ProcessResult r =
          compat::run_process({validators.keyshift, "serve", "--test-config", path});
      if (r.status != 0) {
        return fmt::format("keyshift serve --test-config: {}", last_lines(r.output));
      }
      return std::nullopt;
    }
    case FileKind::nginx: {
      std::string nginx = compat::find_program(validators.nginx);
      if (nginx.empty()) {
        notes.push_back(fmt::format("{}: not checked: nginx is not installed", file.path));
        return std::nullopt;
      }
      return check_nginx(nginx, path, file.path, file.after);
    }
    case FileKind::php:
      return check_with(validators.php, "php", {"-n", "-l", path}, "php -l", file.path, notes);
    case FileKind::python:
      // What `python3 -m py_compile` checks, without writing a .pyc beside the file.
      return check_with(
          validators.python, validators.python,
          {"-c", "import sys; compile(open(sys.argv[1], 'rb').read(), sys.argv[1], 'exec')", path},
          "python3 compile", file.path, notes);
    case FileKind::ruby:
      return check_with(validators.ruby, "ruby", {"-c", path}, "ruby -c", file.path, notes);
    case FileKind::server_file:
    case FileKind::ini:
    case FileKind::env:
    case FileKind::text:
      return std::nullopt;
  }
  return std::nullopt;
}

std::vector<std::string> validate_copies(const RewritePlan& plan, const Validators& validators,
                                         std::vector<std::string>& notes) {
  std::vector<std::string> failures;
  compat::ScratchDir dir("keyshift-check-");
  int n = 0;
  for (const PlannedFile& file : plan.files) {
    // Server configs are checked in memory by the engine (includes resolve there), and by a
    // dry start when a target binary was given.
    if (!file.changed() ||
        (file.kind == FileKind::server_config && validators.server_binary.empty())) {
      continue;
    }
    if (file.kind == FileKind::server_config) {
      Validators binary_only;
      binary_only.server_binary = validators.server_binary;
      std::string copy =
          fmt::format("{}/{}-{}", dir.path(), n++, fs::path(file.path).filename().string());
      if (dir.path().empty() || !write_text(copy, file.after)) {
        failures.push_back(fmt::format("{}: cannot write a copy to check", file.path));
      } else if (auto error = validate_file(file, copy, binary_only, notes)) {
        failures.push_back(fmt::format("{}: {}", file.path, *error));
      }
      continue;
    }
    std::string name = fs::path(file.path).filename().string();
    std::string copy = fmt::format("{}/{}-{}", dir.path(), n++, name);
    if (dir.path().empty() || !write_text(copy, file.after)) {
      failures.push_back(fmt::format("{}: cannot write a copy to check", file.path));
      continue;
    }
    if (auto error = validate_file(file, copy, validators, notes)) {
      failures.push_back(fmt::format("{}: {}", file.path, *error));
    }
  }
  return failures;
}

}  // namespace keyshift::migrate
