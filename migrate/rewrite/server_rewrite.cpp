#include "migrate/rewrite/server_rewrite.hpp"

#include "engine/server/config.hpp"
#include "engine/server/config_table.hpp"
#include "engine/util/strings.hpp"
#include "migrate/rewrite/conf_document.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>

namespace keyshift::migrate {
namespace {

using engine::Unexpected;

// Directives whose (first) argument is a file or directory path the layout moves.
constexpr std::string_view k_path_directives[] = {
    "dir",
    "logfile",
    "pidfile",
    "aclfile",
    "tls-cert-file",
    "tls-key-file",
    "tls-client-cert-file",
    "tls-client-key-file",
    "tls-ca-cert-file",
    "tls-ca-cert-dir",
    "tls-dh-params-file",
};

constexpr int k_max_include_depth = 64;

// Path directives naming a file the server reads (not a directory or a file it creates).
bool is_file_directive(std::string_view name) {
  return name == "aclfile" || (name.starts_with("tls-") && name.ends_with("-file"));
}

bool is_path_directive(std::string_view name) {
  return std::find(std::begin(k_path_directives), std::end(k_path_directives), name) !=
         std::end(k_path_directives);
}

bool has_wildcard(std::string_view path) {
  return path.find_first_of("*?[") != std::string_view::npos;
}

std::string join_path(std::string_view base, std::string_view path) {
  if (path.starts_with('/') || base.empty()) {
    return std::string(path);
  }
  std::string out(base);
  if (!out.ends_with('/')) {
    out += '/';
  }
  return out + std::string(path);
}

bool starts_with_any(std::string_view s, const std::vector<std::string>& prefixes) {
  return std::any_of(prefixes.begin(), prefixes.end(),
                     [&](const std::string& p) { return s.starts_with(p); });
}

class ServerRewriter {
 public:
  ServerRewriter(engine::ConfigFilesystem& fs, const ServerRewriteOptions& options,
                 const TargetTable& target, const RedisFacts& redis, PathMapper mapper)
      : m_fs(fs),
        m_options(options),
        m_target(target),
        m_redis(redis),
        m_mapper(std::move(mapper)),
        m_cwd(fs.current_directory()) {}

  std::optional<RewriteFailure> run(ServerRewrite& out) {
    std::string dest = m_options.out.empty() ? m_mapper.map(m_options.source) : m_options.out;
    if (auto failure = rewrite_file(m_options.source, dest, 0, /*main=*/true)) {
      return failure;
    }
    default_warnings();
    out.plan = std::move(m_plan);
    out.before = m_before;
    out.after = m_after;
    return std::nullopt;
  }

 private:
  std::optional<RewriteFailure> rewrite_file(const std::string& path, const std::string& dest,
                                             int depth, bool main) {
    if (depth > k_max_include_depth) {
      return RewriteFailure{path, 0, "include nesting too deep (an include loop?)"};
    }
    auto text = m_fs.read_file(path);
    if (!text) {
      return RewriteFailure{path, 0, fmt::format("cannot read: {}", text.error())};
    }
    auto doc = parse_conf_document(*text, path);
    if (!doc) {
      return RewriteFailure{doc.error().file, doc.error().line, doc.error().message};
    }
    for (const PlannedFile& planned : m_plan.files) {
      if (planned.path == dest) {
        return RewriteFailure{
            path, 0,
            fmt::format("{} and {} would both be written to {}", planned.source, path, dest)};
      }
    }
    // Reserve the slot now so included files come after their parent in the report.
    size_t slot = m_plan.files.size();
    m_plan.files.emplace_back();
    std::vector<ConfLine> lines;
    for (const ConfLine& line : doc->lines) {
      if (!line.directive) {
        lines.push_back(line);
        continue;
      }
      m_seen.insert(line.name);
      if (auto failure = rewrite_line(*doc, line, depth, lines)) {
        return failure;
      }
    }
    if (main && !m_options.socket.empty() && !m_socket_written) {
      if (!lines.empty() && lines.back().eol.empty()) {
        lines.back().eol = "\n";
      }
      lines.push_back(comment_line(
          fmt::format("{}: unix socket requested with --socket", k_rewrite_marker), "\n"));
      ConfLine added;
      added.text = format_directive("unixsocket", {m_options.socket});
      added.eol = "\n";
      lines.push_back(added);
      m_after.address.unix_path = m_options.socket;
      m_plan.changes.push_back(Change{dest, 0, "unixsocket", "added", "", added.text,
                                      "--socket asks for a unix socket"});
    }
    if (main && m_options.port && !m_port_written) {
      if (!lines.empty() && lines.back().eol.empty()) {
        lines.back().eol = "\n";
      }
      ConfLine added;
      added.text = format_directive("port", {std::to_string(*m_options.port)});
      added.eol = "\n";
      lines.push_back(added);
      m_after.address.port = *m_options.port;
      m_plan.changes.push_back(
          Change{dest, 0, "port", "added", "", added.text, "--port asks for this port"});
    }
    if (main && m_after.address.port == 0 && !m_options.port) {
      m_before.address.port = m_before.address.port == 0 ? 6379 : m_before.address.port;
      m_after.address.port = m_before.address.port;
    }
    ConfDocument result{dest, std::move(lines)};
    PlannedFile& file = m_plan.files[slot];
    file.path = dest;
    file.source = path;
    file.kind = FileKind::server_config;
    file.after = result.render();
    auto current = m_fs.read_file(dest);
    file.exists = current.has_value();
    file.current = file.exists ? *current : std::string();
    file.before = file.exists ? file.current : *text;
    return std::nullopt;
  }

  static ConfLine comment_line(std::string text, std::string eol) {
    ConfLine line;
    line.text = std::move(text);
    line.eol = eol.empty() ? "\n" : std::move(eol);
    return line;
  }

  void drop(const ConfDocument& doc, const ConfLine& line, const std::string& reason,
            std::vector<ConfLine>& out) {
    size_t indent = line.text.find_first_not_of(" \t");
    std::string pad = line.text.substr(0, indent);
    out.push_back(comment_line(
        fmt::format("{}{} ({}): {}; line disabled:", pad, k_rewrite_marker, m_target.name, reason),
        line.eol));
    ConfLine disabled = comment_line(pad + "# " + line.text.substr(indent), line.eol);
    disabled.eol = line.eol;
    out.push_back(disabled);
    m_plan.changes.push_back(
        Change{doc.path, line.number, line.name, "dropped", line.text, "", reason});
  }

  void replace(const ConfDocument& doc, const ConfLine& line, std::string text,
               const std::string& action, const std::string& reason, bool comment,
               std::vector<ConfLine>& out) {
    if (comment) {
      // ACL lines hold passwords: their comment does not repeat the old line.
      size_t indent = line.text.find_first_not_of(" \t");
      std::string was = action == "acl" ? std::string() : "; was: " + line.text.substr(indent);
      out.push_back(comment_line(fmt::format("{}{} ({}): {}{}", line.text.substr(0, indent),
                                             k_rewrite_marker, m_target.name, reason, was),
                                 line.eol));
    }
    m_plan.changes.push_back(
        Change{doc.path, line.number, line.name, action, line.text, text, reason});
    ConfLine changed = line;
    changed.text = std::move(text);
    out.push_back(std::move(changed));
  }

  bool accepted(std::string_view name) const {
    if (m_options.probed) {
      return m_options.probed->count(std::string(name)) != 0 || m_target.accepts(name);
    }
    return m_target.accepts(name);
  }

  std::optional<RewriteFailure> rewrite_line(const ConfDocument& doc, const ConfLine& line,
                                             int depth, std::vector<ConfLine>& out) {
    const std::string& name = line.name;
    if (name == "include" && line.args.size() == 1) {
      return include(doc, line, depth, out);
    }
    if (name == "dir" && line.args.size() == 1 && !line.args[0].empty()) {
      m_cwd = join_path(m_cwd, line.args[0]);
    }
    if (name == "port" && line.args.size() == 1) {
      m_before.address.port = std::atoi(line.args[0].c_str());
      m_after.address.port = m_options.port.value_or(m_before.address.port);
      m_port_written = m_options.port.has_value();
      if (m_after.address.port != m_before.address.port) {
        replace(doc, line, replace_directive_arg(line, 0, std::to_string(m_after.address.port)),
                "port", "--port: the target listens beside the source", false, out);
        return std::nullopt;
      }
    }
    if (name == "requirepass" && line.args.size() == 1) {
      m_before.set_password(line.args[0]);
      m_after.set_password(line.args[0]);
    }
    if (name == "unixsocket" && line.args.size() == 1) {
      m_before.address.unix_path = line.args[0];
      std::string wanted = m_options.socket.empty() ? m_mapper.map(line.args[0]) : m_options.socket;
      m_after.address.unix_path = wanted;
      m_socket_written = true;
      if (wanted != line.args[0]) {
        std::string reason = m_options.socket.empty()
                                 ? fmt::format(
                                       "{} layout: the target's service can only create "
                                       "its socket there",
                                       layout_name(m_mapper.layout()))
                                 : std::string("--socket");
        replace(doc, line, replace_directive_arg(line, 0, wanted), "path", reason, false, out);
        return std::nullopt;
      }
      out.push_back(line);
      return std::nullopt;
    }
    if (is_path_directive(name) && line.args.size() == 1 && line.args[0].starts_with('/')) {
      std::string mapped = m_mapper.map(line.args[0]);
      if (mapped != line.args[0] && is_file_directive(name)) {
        carry_file(doc, line, mapped);
      }
      if (mapped != line.args[0]) {
        replace(doc, line, replace_directive_arg(line, 0, mapped), "path",
                fmt::format("{} layout: the target's service may only use its own paths",
                            layout_name(m_mapper.layout())),
                false, out);
        return std::nullopt;
      }
      out.push_back(line);
      return std::nullopt;
    }
    if (name == "loadmodule" && !line.args.empty()) {
      if (starts_with_any(line.args[0], m_redis.module_paths)) {
        drop(doc, line,
             "module of the Redis package: it is removed with Redis and the target cannot load "
             "it",
             out);
        return std::nullopt;
      }
      ++m_modules_kept;
      m_plan.warnings.push_back(
          fmt::format("{}:{}: loadmodule {} kept: check that the module is "
                      "built for {}",
                      doc.path, line.number, line.args[0], m_target.name));
      out.push_back(line);
      return std::nullopt;
    }
    if (name == "rename-command" && !line.args.empty()) {
      std::string command = engine::to_upper(line.args[0]);
      bool redis_only =
          std::find(m_redis.redis_only_commands.begin(), m_redis.redis_only_commands.end(),
                    command) != m_redis.redis_only_commands.end();
      bool unknown = m_options.probed_commands && !m_options.probed_commands->empty() &&
                     m_options.probed_commands->count(command) == 0;
      if (redis_only || unknown || starts_with_any(command, m_redis.command_prefixes)) {
        drop(doc, line,
             fmt::format("{} is not a {} command: the server stops with 'No such command in "
                         "rename-command'",
                         command, m_target.server),
             out);
        return std::nullopt;
      }
      out.push_back(line);
      return std::nullopt;
    }
    if (name == "user") {
      // A module's category or command does not exist in the target, so a rule naming it
      // grants or denies nothing there; but the target refuses to start on it.
      std::vector<std::string> kept = without_module_rules(line);
      std::vector<std::string> removed;
      for (const std::string& rule : line.args) {
        if (std::find(kept.begin(), kept.end(), rule) == kept.end()) {
          removed.push_back(rule);
        }
      }
      if (removed.empty()) {
        out.push_back(line);
        return std::nullopt;
      }
      size_t indent = line.text.find_first_not_of(" \t");
      replace(doc, line, line.text.substr(0, indent) + format_directive("user", kept), "acl",
              fmt::format("ACL rules {} name a Redis module's commands, which {} does not have; "
                          "it refuses to start on them",
                          fmt::format("{}", fmt::join(removed, " ")), m_target.name),
              true, out);
      return std::nullopt;
    }
    if (name == "sentinel") {
      out.push_back(line);
      return std::nullopt;
    }
    if (name.find('.') != std::string::npos) {
      if (m_modules_kept == 0) {
        drop(doc, line,
             "module configuration without a module the target loads: the server stops with "
             "'Module Configuration detected without loadmodule directive'",
             out);
        return std::nullopt;
      }
      out.push_back(line);
      return std::nullopt;
    }
    if (!accepted(name)) {
      auto translated = m_target.translate.find(name);
      if (translated != m_target.translate.end()) {
        size_t indent = line.text.find_first_not_of(" \t");
        size_t name_end = line.text.find_first_of(" \t", indent);
        std::string text = line.text.substr(0, indent) + translated->second +
                           (name_end == std::string::npos ? "" : line.text.substr(name_end));
        replace(doc, line, text, "translated",
                fmt::format("{} knows this setting as {}", m_target.name, translated->second), true,
                out);
        return std::nullopt;
      }
      auto redis_only = m_redis.redis_only.find(name);
      if (redis_only != m_redis.redis_only.end()) {
        drop(doc, line, redis_only->second, out);
      } else if (starts_with_any(name, m_redis.module_config_prefixes)) {
        drop(doc, line, "configuration of a Redis module the target does not load", out);
      } else {
        drop(doc, line,
             fmt::format("unknown to {}: the server stops with 'Bad directive or wrong number "
                         "of arguments'",
                         m_target.name),
             out);
      }
      return std::nullopt;
    }
    std::string primary = name;
    if (auto alias = m_target.aliases.find(name); alias != m_target.aliases.end()) {
      primary = alias->second;
    }
    for (const ValueFix& fix : m_target.values) {
      if ((fix.directive == name || fix.directive == primary) && line.args.size() == 1 &&
          engine::iequals(line.args[0], fix.value)) {
        if (fix.drop) {
          drop(doc, line, fix.reason, out);
        } else {
          replace(doc, line, replace_directive_arg(line, 0, fix.replace), "value", fix.reason, true,
                  out);
        }
        return std::nullopt;
      }
    }
    out.push_back(line);
    return std::nullopt;
  }

  // The ACL file and TLS files move with the config: the target's service cannot read the
  // Redis package's directory once it is gone, and `ACL SAVE` must be able to write.
  void carry_file(const ConfDocument& doc, const ConfLine& line, const std::string& dest) {
    const std::string& path = line.args[0];
    for (const PlannedFile& planned : m_plan.files) {
      if (planned.path == dest) {
        return;  // the same file named twice (e.g. cert for server and client)
      }
    }
    auto text = m_fs.read_file(path);
    if (!text) {
      m_plan.warnings.push_back(
          fmt::format("{}:{}: {} {}: cannot read it ({}); copy it to {} before starting the target",
                      doc.path, line.number, line.name, path, text.error(), dest));
      return;
    }
    PlannedFile file;
    file.path = dest;
    file.source = path;
    file.kind = FileKind::server_file;
    file.after = *text;
    if (line.name == "aclfile") {
      file.after = strip_module_acl_rules(*text, path);
    }
    auto current = m_fs.read_file(dest);
    file.exists = current.has_value();
    file.current = file.exists ? *current : std::string();
    file.before = file.exists ? file.current : *text;
    m_plan.files.push_back(std::move(file));
    m_plan.changes.push_back(Change{dest, 0, line.name, "copied", path, dest,
                                    fmt::format("{} moves with the configuration", line.name)});
  }

  // An ACL file's user lines without the rules of Redis modules (see the `user` directive).
  std::string strip_module_acl_rules(const std::string& text, const std::string& path) {
    auto doc = parse_conf_document(text, path);
    if (!doc) {
      m_plan.warnings.push_back(
          fmt::format("{}:{}: {}", path, doc.error().line, doc.error().message));
      return text;
    }
    std::string out;
    for (const ConfLine& line : doc->lines) {
      std::vector<std::string> kept = without_module_rules(line);
      if (line.directive && line.name == "user" && kept.size() != line.args.size()) {
        size_t indent = line.text.find_first_not_of(" \t");
        std::string rewritten = line.text.substr(0, indent) + format_directive("user", kept);
        m_plan.changes.push_back(Change{path, line.number, "user", "acl", line.text, rewritten,
                                        "ACL rules of Redis modules: the target refuses them"});
        out += rewritten + line.eol;
      } else {
        out += line.text + line.eol;
      }
    }
    return out;
  }

  std::vector<std::string> without_module_rules(const ConfLine& line) const {
    std::vector<std::string> kept;
    for (size_t i = 0; i < line.args.size(); ++i) {
      const std::string& rule = line.args[i];
      bool sign = rule.size() > 1 && (rule[0] == '+' || rule[0] == '-');
      bool category = sign && rule.size() > 2 && rule[1] == '@';
      bool module_rule =
          i > 0 &&
          ((category && std::find(m_redis.acl_categories.begin(), m_redis.acl_categories.end(),
                                  rule.substr(2)) != m_redis.acl_categories.end()) ||
           (sign && !category &&
            starts_with_any(engine::to_upper(rule.substr(1)), m_redis.command_prefixes)));
      if (!module_rule) {
        kept.push_back(rule);
      }
    }
    return kept;
  }

  std::optional<RewriteFailure> include(const ConfDocument& doc, const ConfLine& line, int depth,
                                        std::vector<ConfLine>& out) {
    const std::string& written = line.args[0];
    std::string resolved = join_path(m_cwd, written);
    std::vector<std::string> matches;
    if (has_wildcard(written)) {
      matches = m_fs.glob(resolved);
    } else {
      matches.push_back(resolved);
    }
    std::string mapped = m_mapper.map(written);
    if (mapped != written) {
      replace(doc, line, replace_directive_arg(line, 0, mapped), "path",
              "included files move with the configuration", false, out);
    } else {
      out.push_back(line);
    }
    for (const std::string& match : matches) {
      if (!has_wildcard(written) && !m_fs.read_file(match)) {
        return RewriteFailure{doc.path, line.number,
                              fmt::format("include {}: the file cannot be read (the server "
                                          "would refuse to start)",
                                          written)};
      }
      std::string dest = m_mapper.map(match);
      if (auto failure = rewrite_file(match, dest, depth + 1, false)) {
        return failure;
      }
    }
    return std::nullopt;
  }

  void default_warnings() {
    for (const DefaultChange& change : m_target.defaults) {
      if (m_seen.count(change.directive) == 0) {
        m_plan.warnings.push_back(
            fmt::format("{} is not set: {} uses {} where Redis used {}; add '{} {}' to keep Redis' "
                        "behaviour",
                        change.directive, m_target.name, change.target_default,
                        change.redis_default, change.directive, change.redis_default));
      }
    }
  }

  engine::ConfigFilesystem& m_fs;
  const ServerRewriteOptions& m_options;
  const TargetTable& m_target;
  const RedisFacts& m_redis;
  PathMapper m_mapper;
  std::string m_cwd;
  RewritePlan m_plan;
  KnownEndpoint m_before;
  KnownEndpoint m_after;
  std::set<std::string> m_seen;
  int m_modules_kept = 0;
  bool m_socket_written = false;
  bool m_port_written = false;  ///< a port line of the main file carried --port
};

// The paths a config names, for layout detection.
std::vector<std::string> named_paths(engine::ConfigFilesystem& fs, const std::string& source) {
  std::vector<std::string> paths{source};
  auto text = fs.read_file(source);
  if (!text) {
    return paths;
  }
  auto doc = parse_conf_document(*text, source);
  if (!doc) {
    return paths;
  }
  for (const ConfLine& line : doc->lines) {
    if (line.directive && line.args.size() == 1 &&
        (line.name == "logfile" || line.name == "pidfile" || line.name == "unixsocket")) {
      paths.push_back(line.args[0]);
    }
  }
  return paths;
}

}  // namespace

bool RewritePlan::changed() const {
  return std::any_of(files.begin(), files.end(), [](const PlannedFile& f) { return f.changed(); });
}

KnownEndpoint KnownEndpoint::tcp(std::string host, int port) {
  KnownEndpoint e;
  e.address.host = std::move(host);
  e.address.port = port;
  return e;
}

KnownEndpoint KnownEndpoint::unix_socket(std::string path) {
  KnownEndpoint e;
  e.address.unix_path = std::move(path);
  return e;
}

std::optional<std::string> KnownEndpoint::password() const {
  return password_known ? std::optional<std::string>(address.password) : std::nullopt;
}

std::optional<int> KnownEndpoint::db() const {
  return db_known ? std::optional<int>(address.db) : std::nullopt;
}

void KnownEndpoint::set_password(std::optional<std::string> password) {
  password_known = password.has_value();
  address.password = std::move(password).value_or("");
}

void KnownEndpoint::set_db(std::optional<int> db) {
  db_known = db.has_value();
  address.db = db.value_or(0);
}

engine::Expected<ServerRewrite, RewriteFailure> rewrite_server_config(
    engine::ConfigFilesystem& fs, const ServerRewriteOptions& options, const TargetTable& target,
    const RedisFacts& redis) {
  Layout layout = options.layout
                      ? *options.layout
                      : detect_layout(named_paths(fs, options.source)).value_or(Layout::debian);
  ServerRewriter rewriter(fs, options, target, redis, PathMapper(layout, options.path_maps));
  ServerRewrite result;
  result.layout = layout;
  if (auto failure = rewriter.run(result)) {
    return Unexpected{std::move(*failure)};
  }
  return result;
}

std::optional<std::string> check_with_engine(const RewritePlan& plan, const std::string& main,
                                             std::string_view cwd,
                                             std::vector<std::string>& warnings) {
  engine::MemoryConfigFilesystem fs{std::string(cwd)};
  for (const PlannedFile& file : plan.files) {
    fs.add_file(file.path, file.after);
  }
  auto directives = engine::read_config_file(fs, main);
  if (!directives) {
    const engine::ConfigError& e = directives.error();
    return fmt::format("{}:{}: {}{}", e.file, e.line, e.message,
                       e.text.empty() ? "" : fmt::format(" ('{}')", e.text));
  }
  engine::EngineConfig config;
  if (auto error = engine::apply_directives(*directives, config, warnings)) {
    return fmt::format("{}:{}: {}{}", error->file, error->line, error->message,
                       error->text.empty() ? "" : fmt::format(" ('{}')", error->text));
  }
  return std::nullopt;
}

}  // namespace keyshift::migrate
