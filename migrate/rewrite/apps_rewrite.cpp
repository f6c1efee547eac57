#include "migrate/rewrite/apps_rewrite.hpp"

#include "engine/resp/server_url.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <regex>

namespace keyshift::migrate {
namespace {

const std::vector<AppProfile>& profiles() {
  using F = AppFormat;
  static const std::vector<AppProfile> k_profiles = {
      {"wordops", {F::nginx, F::wp_config, F::php_ini}},
      {"wordpress", {F::wp_config}},
      {"php", {F::php_ini}},
      {"laravel", {F::env}},
      {"django", {F::env, F::django}},
      {"rails", {F::env, F::rails}},
      {"nextcloud", {F::nextcloud, F::php_ini}},
      {"generic", {F::nginx, F::wp_config, F::php_ini, F::env, F::nextcloud, F::django, F::rails}},
  };
  return k_profiles;
}

std::string_view basename(std::string_view path) {
  size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

bool is_loopback(std::string_view host) {
  return host == "127.0.0.1" || host == "localhost" || host == "::1" || host == "[::1]";
}

bool same_host(std::string_view a, std::string_view b) {
  return a == b || (is_loopback(a) && is_loopback(b));
}

bool moves_tcp(const AppsRewriteOptions& o) {
  return !o.from.address.host.empty() && o.from.address.port != 0;
}

// True when a TCP setting names the old endpoint and that endpoint moves (a password- or
// database-only change keeps host and port as written).
bool tcp_matches(const AppsRewriteOptions& o, std::string_view host, int port) {
  const KnownEndpoint& dest = o.tcp_to ? *o.tcp_to : o.to;
  bool stays = dest.address.unix_path.empty() && same_host(host, dest.address.host) &&
               port == dest.address.port;
  return moves_tcp(o) && same_host(host, o.from.address.host) && port == o.from.address.port &&
         !stays;
}

bool is_old_socket(const AppsRewriteOptions& o, std::string_view path) {
  return std::find(o.from_sockets.begin(), o.from_sockets.end(), path) != o.from_sockets.end();
}

int to_int(std::string_view s, int fallback) {
  if (s.empty() || s.size() > 9 || s.find_first_not_of("0123456789") != std::string_view::npos) {
    return fallback;
  }
  return std::stoi(std::string(s));
}

std::string tcp_text(const KnownEndpoint& e) {
  return engine::render_host_port(e.address.host, e.address.port);
}

const KnownEndpoint& tcp_dest(const AppsRewriteOptions& o) {
  return o.tcp_to ? *o.tcp_to : o.to;
}

bool is_unreserved(unsigned char c) {
  return std::isalnum(c) != 0 || c == '-' || c == '.' || c == '_' || c == '~';
}

std::string pct_encode(std::string_view text) {
  std::string out;
  for (unsigned char c : text) {
    out += is_unreserved(c) ? std::string(1, static_cast<char>(c)) : fmt::format("%{:02X}", c);
  }
  return out;
}

// Percent escapes decoded; a broken escape stays as written (apps wrote it, not us).
std::string pct_decode(std::string_view text) {
  return engine::percent_decode(text).value_or(std::string(text));
}

bool points_at_server(const AppsRewriteOptions& o, std::string_view socket, std::string_view host,
                      int port) {
  if (!socket.empty()) {
    if (is_old_socket(o, socket) ||
        (!o.to.address.unix_path.empty() && socket == o.to.address.unix_path)) {
      return true;
    }
    return std::any_of(o.same_server.begin(), o.same_server.end(), [&](const KnownEndpoint& e) {
      return e.address.unix_path == socket && !socket.empty();
    });
  }
  auto tcp_is = [&](const KnownEndpoint& e) {
    const engine::RespEndpoint& a = e.address;
    return !a.host.empty() && a.port != 0 && same_host(host, a.host) && port == a.port;
  };
  if (tcp_is(o.from) || tcp_is(o.to) || (o.tcp_to && tcp_is(*o.tcp_to))) {
    return true;
  }
  return std::any_of(o.same_server.begin(), o.same_server.end(), tcp_is);
}

bool changes_password(const AppsRewriteOptions& o, std::optional<std::string_view> current) {
  if (!o.to.password()) {
    return false;
  }
  std::string now = current ? std::string(*current) : std::string();
  if (now == *o.to.password()) {
    return false;
  }
  return !o.from.password() || *o.from.password() == now;
}

bool changes_db(const AppsRewriteOptions& o, int current) {
  return o.to.db() && *o.to.db() != current && current == o.from.db().value_or(0);
}

// One literal in PHP: 'x' or "x"; returns value and the quote, or nullopt.
struct PhpString {
  char quote = '\'';
  std::string value;
};

std::optional<PhpString> php_string(std::string_view literal) {
  if (literal.size() < 2 || (literal[0] != '\'' && literal[0] != '"') ||
      literal.back() != literal[0]) {
    return std::nullopt;
  }
  std::string_view inner = literal.substr(1, literal.size() - 2);
  if (inner.find('\\') != std::string_view::npos ||
      (literal[0] == '"' && inner.find('$') != std::string_view::npos)) {
    return std::nullopt;  // escapes or interpolation: left alone
  }
  return PhpString{literal[0], std::string(inner)};
}

// A .env value holding `value`: kept bare when it is plain, else double-quoted with \\, "
// and $ escaped (dotenv expands $ in double quotes). `quote` is the quoting the file used.
std::string env_value(std::string_view value, std::string_view quote) {
  bool plain = !value.empty() && value.find_first_not_of(
                                     "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklm"
                                     "nopqrstuvwxyz0123456789_./:@+-") == std::string_view::npos;
  if (quote == "'" && value.find('\'') == std::string_view::npos) {
    return fmt::format("'{}'", value);
  }
  if (plain && quote.empty()) {
    return std::string(value);
  }
  std::string out = "\"";
  for (char c : value) {
    if (c == '\\' || c == '"' || c == '$') {
      out += '\\';
    }
    out += c;
  }
  return out + "\"";
}

// A PHP string literal holding `value` exactly: single quotes escape \\ and ', double
// quotes also " and $ (which would interpolate).
std::string php_literal(char quote, std::string_view value) {
  std::string out(1, quote);
  for (char c : value) {
    if (c == '\\' || c == quote || (quote == '"' && c == '$')) {
      out += '\\';
    }
    out += c;
  }
  return out + quote;
}

std::string php_quote(char quote, std::string_view value) {
  return fmt::format("{0}{1}{0}", quote, value);
}

struct LineEdit {
  std::vector<std::string> lines;  // without terminators
  std::vector<std::string> eols;
};

LineEdit split(std::string_view text) {
  LineEdit out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    std::string line(
        text.substr(start, end == std::string_view::npos ? text.size() - start : end - start));
    std::string eol = end == std::string_view::npos ? "" : "\n";
    if (!line.empty() && line.back() == '\r') {
      line.pop_back();
      eol = "\r" + eol;
    }
    out.lines.push_back(std::move(line));
    out.eols.push_back(std::move(eol));
    start = end == std::string_view::npos ? text.size() : end + 1;
  }
  return out;
}

std::string join(const LineEdit& e) {
  std::string out;
  for (size_t i = 0; i < e.lines.size(); ++i) {
    out += e.lines[i];
    out += e.eols[i];
  }
  return out;
}

class AppRewriter {
 public:
  AppRewriter(const AppsRewriteOptions& options, AppsRewrite& out) : m_o(options), m_out(out) {}

  std::string rewrite(const AppFile& file, AppFormat format) {
    m_file = &file;
    LineEdit edit = split(file.contents);
    switch (format) {
      case AppFormat::nginx:
        nginx(edit);
        break;
      case AppFormat::wp_config:
        wp_config(edit);
        break;
      case AppFormat::php_ini:
        php_ini(edit);
        break;
      case AppFormat::env:
        env(edit);
        break;
      case AppFormat::nextcloud:
        nextcloud(edit);
        break;
      case AppFormat::django:
        url_literals(edit, '#', true, UrlClient::generic);
        break;
      case AppFormat::rails:
        url_literals(edit, '#', !m_file->path.ends_with(".yml"), UrlClient::ruby);
        break;
      case AppFormat::unknown:
        break;
    }
    return join(edit);
  }

  struct WpSite {
    std::string file;
    size_t line = 0;
    std::string prefix;
    char quote = '\'';
    int db = 0;
    bool has_prefix = false;
    std::string constant;  // WP_REDIS_PREFIX or WP_CACHE_KEY_SALT
  };
  /// The WordPress sites seen so far, for the prefix checks.
  const std::vector<WpSite>& sites() const { return m_sites; }

 private:
  void change(size_t line, std::string what, std::string before, std::string after,
              std::string reason, std::string action = "endpoint") {
    m_out.plan.changes.push_back(Change{m_file->path, static_cast<int>(line + 1), std::move(what),
                                        std::move(action), std::move(before), std::move(after),
                                        std::move(reason)});
  }

  // Why a setting of the server changes: where it moved, and its password and database.
  std::string reason() const {
    std::vector<std::string> parts;
    const KnownEndpoint& dest = tcp_dest(m_o);
    if (!m_o.to.address.unix_path.empty()) {
      parts.push_back(fmt::format("the server's socket is now {}", m_o.to.address.unix_path));
    }
    if (dest.address.unix_path.empty() && !dest.address.host.empty() &&
        (!m_o.from_sockets.empty() || !(same_host(m_o.from.address.host, dest.address.host) &&
                                        m_o.from.address.port == dest.address.port))) {
      parts.push_back(fmt::format("the server now listens on {}", tcp_text(dest)));
    }
    if (m_o.to.password()) {
      parts.push_back("the server's password changes");
    }
    if (m_o.to.db()) {
      parts.push_back(
          fmt::format("database {} moves to {}", m_o.from.db().value_or(0), *m_o.to.db()));
    }
    return fmt::format("{}", fmt::join(parts, "; "));
  }

  // --- nginx: server lines inside upstream blocks ---
  void nginx(LineEdit& e) {
    static const std::regex k_upstream(R"re(^\s*upstream\s+\S+\s*\{)re");
    static const std::regex k_server(R"re(^(\s*server\s+)([^\s;]+)(.*)$)re");
    int depth = 0;
    bool in_upstream = false;
    for (size_t i = 0; i < e.lines.size(); ++i) {
      std::string& line = e.lines[i];
      std::string code = line.substr(0, line.find('#'));
      if (!in_upstream && std::regex_search(code, k_upstream)) {
        in_upstream = true;
        depth = 0;
      }
      std::smatch m;
      if (in_upstream && depth == 1 && std::regex_match(line, m, k_server)) {
        std::string address = m[2];
        std::string replaced;
        const KnownEndpoint& dest = tcp_dest(m_o);
        if (address.starts_with("unix:") && is_old_socket(m_o, address.substr(5))) {
          replaced = m_o.to.address.unix_path.empty() ? tcp_text(dest)
                                                      : "unix:" + m_o.to.address.unix_path;
        } else if (!address.starts_with("unix:")) {
          auto [host, port] = engine::split_host_port(address, 80);
          if (tcp_matches(m_o, host, port)) {
            replaced =
                dest.address.unix_path.empty() ? tcp_text(dest) : "unix:" + dest.address.unix_path;
          }
        }
        if (!replaced.empty() && replaced != address) {
          std::string before = line;
          line = m[1].str() + replaced + m[3].str();
          change(i, "upstream server", before, line, reason());
        }
      }
      for (char c : code) {
        depth += c == '{' ? 1 : c == '}' ? -1 : 0;
      }
      if (in_upstream && depth <= 0 && code.find('}') != std::string::npos) {
        in_upstream = false;
      }
    }
  }

  // --- wp-config.php: define() constants ---
  struct Define {
    size_t line;
    std::string name;
    std::string raw;  // the value expression as written
    std::optional<PhpString> text;
    std::smatch::difference_type value_pos;
  };

  void set_define(LineEdit& e, const Define& d, const std::string& value, const std::string& why) {
    std::string& line = e.lines[d.line];
    std::string before = line;
    char quote = d.text ? d.text->quote : '\'';
    line.replace(static_cast<size_t>(d.value_pos), d.raw.size(), php_quote(quote, value));
    change(d.line, d.name, before, line, why);
  }

  void warn(size_t line, const std::string& what) {
    m_out.plan.warnings.push_back(fmt::format("{}:{}: {}", m_file->path, line + 1, what));
  }

  // Inserts `text` as a new line after line `after`; returns its index.
  size_t insert_line(LineEdit& e, size_t after, const std::string& text) {
    size_t at = e.lines.empty() ? 0 : after + 1;
    std::string eol = e.lines.empty() ? "\n" : e.eols[after];
    if (eol.empty()) {
      eol = "\n";
      if (!e.lines.empty()) {
        e.eols[after] = "\n";
      }
    }
    e.lines.insert(e.lines.begin() + static_cast<long>(at), text);
    e.eols.insert(e.eols.begin() + static_cast<long>(at), eol);
    // Changes already recorded below the new line move down with their lines.
    for (Change& c : m_out.plan.changes) {
      if (c.file == m_file->path && c.line > static_cast<int>(at)) {
        ++c.line;
      }
    }
    return at;
  }

  // Quoted URLs (and bare host:port strings) inside a multi-line array constant.
  void wp_array(LineEdit& e, const std::string& name) {
    const std::regex k_start("define\\s*\\(\\s*['\"]" + name + "['\"]\\s*,");
    static const std::regex k_quoted(R"re((['"])([^'"\\]*)\1)re");
    // A cluster has only database 0: its node URLs never get one.
    AppsRewriteOptions cluster = m_o;
    cluster.to.set_db(std::nullopt);
    for (size_t i = 0; i < e.lines.size(); ++i) {
      if (!std::regex_search(e.lines[i], k_start)) {
        continue;
      }
      int depth = 0;
      bool opened = false;
      for (size_t j = i; j < e.lines.size(); ++j) {
        std::string& line = e.lines[j];
        std::string before = line;
        std::string rebuilt;
        size_t last = 0;
        for (auto m = std::sregex_iterator(line.begin(), line.end(), k_quoted);
             m != std::sregex_iterator(); ++m) {
          rebuilt += line.substr(last, static_cast<size_t>(m->position(0)) - last);
          last = static_cast<size_t>(m->position(0) + m->length(0));
          std::string value = (*m)[2];
          UrlRewrite r = rewrite_server_url(value, name == "WP_REDIS_CLUSTER" ? cluster : m_o,
                                            UrlClient::generic);
          if (r.url && name == "WP_REDIS_CLUSTER" && r.url->starts_with("unix:")) {
            r.url.reset();
            r.problem = fmt::format(
                "{} is a cluster node; a cluster is not reached over a unix "
                "socket, change it by hand",
                value);
          }
          if (!r.problem.empty()) {
            warn(j, fmt::format("{}: {}", name, r.problem));
          } else if (value.find("://") == std::string::npos &&
                     value.find(':') != std::string::npos && value.find('/') == std::string::npos) {
            auto [host, port] = engine::split_host_port(value, 6379);
            if (tcp_matches(m_o, host, port)) {
              const KnownEndpoint& dest = tcp_dest(m_o);
              if (dest.address.unix_path.empty()) {
                r.url = tcp_text(dest);
              } else {
                warn(j, fmt::format("{}: {} cannot name a unix socket; change it by hand", name,
                                    value));
              }
            }
          }
          rebuilt += r.url ? php_quote((*m)[1].str()[0], *r.url) : (*m)[0].str();
        }
        rebuilt += line.substr(last);
        if (rebuilt != before) {
          line = rebuilt;
          change(j, name, before, line, reason());
        }
        for (char c : before) {
          opened = opened || c == '(';
          depth += c == '(' ? 1 : c == ')' ? -1 : 0;
        }
        if (opened && depth <= 0) {
          break;
        }
      }
    }
  }

  void wp_config(LineEdit& e) {
    static const std::regex k_define(
        R"re(^(\s*define\s*\(\s*(['"])([A-Z0-9_]+)\2\s*,\s*)(.*?)(\s*\)\s*;.*)$)re");
    static const std::regex k_pair(
        R"re(^(\[|array\s*\()\s*(['"])([^'"\\]*)\2\s*,\s*(['"])([^'"\\$]*)\4\s*(,\s*)?(\]|\))$)re");
    std::map<std::string, Define> defines;
    size_t last_redis_line = 0;
    bool any_redis = false;
    auto scan = [&]() {
      defines.clear();
      for (size_t i = 0; i < e.lines.size(); ++i) {
        std::smatch m;
        if (!std::regex_match(e.lines[i], m, k_define)) {
          continue;
        }
        Define d{i, m[3], m[4], php_string(m[4].str()), m.position(4)};
        if (d.name.starts_with("WP_REDIS_") || d.name == "WP_CACHE_KEY_SALT" ||
            d.name.starts_with("RT_WP_NGINX_HELPER_REDIS_")) {
          last_redis_line = i;
          any_redis = true;
        }
        defines[d.name] = d;
      }
    };
    static const std::regex k_redis_start(R"re(define\s*\(\s*['"]WP_REDIS_)re");
    auto scan_all = [&]() {
      scan();
      // Multi-line defines (arrays) do not match k_define; they still mark a Redis site, and
      // added constants go after their last line.
      for (size_t i = 0; i < e.lines.size(); ++i) {
        if (!std::regex_search(e.lines[i], k_redis_start)) {
          continue;
        }
        any_redis = true;
        int depth = 0;
        for (size_t j = i; j < e.lines.size(); ++j) {
          for (char c : e.lines[j]) {
            depth += c == '(' ? 1 : c == ')' ? -1 : 0;
          }
          if (depth <= 0) {
            last_redis_line = std::max(last_redis_line, j);
            break;
          }
        }
      }
    };
    scan_all();
    auto text_of = [&](const std::string& name) -> std::optional<std::string> {
      auto it = defines.find(name);
      if (it == defines.end() || !it->second.text) {
        return std::nullopt;
      }
      return it->second.text->value;
    };
    auto raw_of = [&](const std::string& name) -> std::string {
      auto it = defines.find(name);
      if (it == defines.end()) {
        return {};
      }
      return it->second.text ? it->second.text->value : it->second.raw;
    };
    auto add_define = [&](const std::string& name, const std::string& value_php,
                          const std::string& why = {}) {
      std::string text = fmt::format("define( '{}', {} );", name, value_php);
      size_t at = insert_line(e, last_redis_line, text);
      change(at, name, "", text, why.empty() ? reason() : why, "added");
      scan_all();
    };
    // Where the site connects now, before anything moves (Redis Object Cache's defaults).
    std::string scheme = raw_of("WP_REDIS_SCHEME").empty() ? "tcp" : raw_of("WP_REDIS_SCHEME");
    std::string host = text_of("WP_REDIS_HOST").value_or("127.0.0.1");
    int port = to_int(raw_of("WP_REDIS_PORT").empty() ? "6379" : raw_of("WP_REDIS_PORT"), -1);
    std::string socket = scheme == "unix"        ? text_of("WP_REDIS_PATH").value_or("")
                         : host.starts_with('/') ? host
                                                 : "";
    bool on_server = any_redis && points_at_server(m_o, socket, host, port);
    // Socket paths in any constant that holds one.
    for (const char* name :
         {"WP_REDIS_PATH", "WP_REDIS_HOST", "RT_WP_NGINX_HELPER_REDIS_UNIX_SOCKET",
          "RT_WP_NGINX_HELPER_REDIS_HOSTNAME"}) {
      auto value = text_of(name);
      if (!value) {
        continue;
      }
      if (auto url = rewrite_endpoint_url(*value, m_o); url && !m_o.to.address.unix_path.empty()) {
        set_define(e, defines[name], *url, reason());
      }
    }
    for (const char* name : {"WP_REDIS_SERVERS", "WP_REDIS_SHARDS", "WP_REDIS_CLUSTER"}) {
      wp_array(e, name);
    }
    if (defines.count("WP_REDIS_SENTINEL") != 0 && moves_tcp(m_o)) {
      warn(defines["WP_REDIS_SENTINEL"].line,
           "WP_REDIS_SENTINEL: the site finds its server through Sentinel; point the Sentinels "
           "at the new server");
    }
    if (any_redis && !socket.empty() && is_old_socket(m_o, socket) &&
        m_o.to.address.unix_path.empty()) {
      // Socket to TCP: the unix scheme goes (or the socket path in WP_REDIS_HOST, phpredis'
      // form), host and port name the new server.
      const KnownEndpoint& dest = tcp_dest(m_o);
      if (scheme == "unix") {
        set_define(e, defines["WP_REDIS_SCHEME"], "tcp", reason());
      }
      if (defines.count("WP_REDIS_HOST") != 0) {
        set_define(e, defines["WP_REDIS_HOST"], dest.address.host, reason());
      } else {
        add_define("WP_REDIS_HOST", php_quote('\'', dest.address.host));
      }
      if (defines.count("WP_REDIS_PORT") != 0) {
        Define& d = defines["WP_REDIS_PORT"];
        std::string before = e.lines[d.line];
        e.lines[d.line].replace(static_cast<size_t>(d.value_pos), d.raw.size(),
                                std::to_string(dest.address.port));
        change(d.line, d.name, before, e.lines[d.line], reason());
        scan_all();
      } else {
        add_define("WP_REDIS_PORT", std::to_string(dest.address.port));
      }
    }
    bool unix_scheme = scheme == "unix";
    if (any_redis && moves_tcp(m_o) && !unix_scheme && !host.starts_with('/') &&
        tcp_matches(m_o, host, port)) {
      const KnownEndpoint& dest = tcp_dest(m_o);
      if (dest.address.unix_path.empty()) {
        if (defines.count("WP_REDIS_HOST") != 0 && host != dest.address.host) {
          set_define(e, defines["WP_REDIS_HOST"], dest.address.host, reason());
        }
        if (defines.count("WP_REDIS_PORT") != 0 && port != dest.address.port) {
          Define& d = defines["WP_REDIS_PORT"];
          std::string before = e.lines[d.line];
          e.lines[d.line].replace(static_cast<size_t>(d.value_pos), d.raw.size(),
                                  std::to_string(dest.address.port));
          change(d.line, d.name, before, e.lines[d.line], reason());
        } else if (defines.count("WP_REDIS_PORT") == 0 && port != dest.address.port) {
          add_define("WP_REDIS_PORT", std::to_string(dest.address.port));
        }
      } else {
        // Moving to a socket: Redis Object Cache reads WP_REDIS_PATH when the scheme is unix.
        if (defines.count("WP_REDIS_SCHEME") != 0) {
          set_define(e, defines["WP_REDIS_SCHEME"], "unix", reason());
        } else {
          add_define("WP_REDIS_SCHEME", "'unix'");
        }
        if (defines.count("WP_REDIS_PATH") != 0) {
          set_define(e, defines["WP_REDIS_PATH"], dest.address.unix_path, reason());
        } else {
          add_define("WP_REDIS_PATH", php_quote('\'', dest.address.unix_path));
        }
      }
    }
    if (on_server) {
      // The database: an integer or a quoted number.
      auto db_it = defines.find("WP_REDIS_DATABASE");
      std::string db_raw = raw_of("WP_REDIS_DATABASE");
      int db = db_it == defines.end() ? 0 : to_int(db_raw, -1);
      if (db_it != defines.end() && db < 0 && m_o.to.db()) {
        warn(db_it->second.line, "WP_REDIS_DATABASE is not a number; set it by hand");
      } else if (changes_db(m_o, db)) {
        std::string value = std::to_string(*m_o.to.db());
        if (db_it == defines.end()) {
          add_define("WP_REDIS_DATABASE", value, "the site's database moves");
        } else {
          Define& d = db_it->second;
          std::string before = e.lines[d.line];
          e.lines[d.line].replace(static_cast<size_t>(d.value_pos), d.raw.size(),
                                  d.text ? php_quote(d.text->quote, value) : value);
          change(d.line, d.name, before, e.lines[d.line], "the site's database moves", "db");
          scan_all();
        }
      }
      // The password: a string, or the ACL pair ['user', 'password'].
      auto pw_it = defines.find("WP_REDIS_PASSWORD");
      if (pw_it == defines.end()) {
        if (changes_password(m_o, std::nullopt)) {
          add_define("WP_REDIS_PASSWORD", php_literal('\'', *m_o.to.password()),
                     "the server's password changes");
        }
      } else if (pw_it->second.text) {
        if (changes_password(m_o, pw_it->second.text->value)) {
          Define& d = pw_it->second;
          std::string before = e.lines[d.line];
          e.lines[d.line].replace(static_cast<size_t>(d.value_pos), d.raw.size(),
                                  php_literal(d.text->quote, *m_o.to.password()));
          change(d.line, d.name, before, e.lines[d.line], "the server's password changes",
                 "password");
        }
      } else if (std::smatch m; std::regex_match(pw_it->second.raw, m, k_pair)) {
        if (changes_password(m_o, m[5].str())) {
          Define& d = pw_it->second;
          std::string before = e.lines[d.line];
          std::string pair = m[1].str() + " " + php_quote(m[2].str()[0], m[3].str()) + ", " +
                             php_literal(m[4].str()[0], *m_o.to.password()) + " " + m[7].str();
          e.lines[d.line].replace(static_cast<size_t>(d.value_pos), d.raw.size(), pair);
          change(d.line, d.name, before, e.lines[d.line], "the server's password changes",
                 "password");
        }
      } else if (m_o.to.password()) {
        warn(pw_it->second.line,
             "WP_REDIS_PASSWORD is an expression; set the new password by hand");
      }
    }
    WpSite site;
    site.file = m_file->path;
    site.db = to_int(raw_of("WP_REDIS_DATABASE"), 0);
    for (const char* name : {"WP_REDIS_PREFIX", "WP_CACHE_KEY_SALT"}) {
      auto it = defines.find(name);
      if (it != defines.end() && it->second.text) {
        site.has_prefix = true;
        site.prefix = it->second.text->value;
        site.quote = it->second.text->quote;
        site.line = it->second.line;
        site.constant = name;
        break;
      }
    }
    if (any_redis) {
      m_sites.push_back(site);
    }
  }

  // --- Django settings.py, Rails config/*.yml and *.rb: server URLs wherever they are ---
  // URLs in string literals (and, in YAML, bare values); comment lines are left alone.
  // Celery/kombu reach a socket only through redis+socket://, so a TCP URL of a broker or
  // result backend that would move to a socket is reported instead of rewritten.
  void url_literals(LineEdit& e, char comment, bool quoted_only, UrlClient client) {
    static const std::regex k_quoted(R"re((['"])((?:rediss?|unix|redis\+socket)://[^'"\s]*)\1)re");
    static const std::regex k_bare(R"re(((?:rediss?|unix|redis\+socket)://[^'"\s#,}\]]*))re");
    static const std::regex k_celery(R"re(BROKER|CELERY|RESULT_BACKEND|broker|celery)re");
    for (size_t i = 0; i < e.lines.size(); ++i) {
      std::string& line = e.lines[i];
      size_t first = line.find_first_not_of(" \t");
      if (first == std::string::npos || line[first] == comment) {
        continue;
      }
      std::string before = line;
      bool celery = client == UrlClient::generic && std::regex_search(line, k_celery);
      std::string rebuilt;
      size_t last = 0;
      const std::regex& pattern = quoted_only ? k_quoted : k_bare;
      size_t group = quoted_only ? 2 : 1;
      for (auto m = std::sregex_iterator(line.begin(), line.end(), pattern);
           m != std::sregex_iterator(); ++m) {
        size_t at = static_cast<size_t>(m->position(static_cast<int>(group)));
        std::string url = (*m)[static_cast<int>(group)];
        rebuilt += line.substr(last, at - last);
        last = at + url.size();
        UrlRewrite r = rewrite_server_url(url, m_o, client);
        if (r.url && celery && r.url->starts_with("unix:") && !url.starts_with("unix:")) {
          r.problem = fmt::format(
              "a Celery URL reaches a unix socket only as "
              "redis+socket://{}; change it by hand",
              m_o.to.address.unix_path);
          r.url.reset();
        }
        if (!r.problem.empty()) {
          warn(i, r.problem);
        }
        rebuilt += r.url.value_or(url);
      }
      rebuilt += line.substr(last);
      if (rebuilt != before) {
        line = rebuilt;
        change(i, "url", before, line, reason());
      }
    }
  }

  // --- php.ini / FPM pools: session.save_path ---
  void php_ini(LineEdit& e) {
    static const std::regex k_save_path(
        R"re(^(\s*(?:session\.save_path|php_(?:admin_)?value\[session\.save_path\])\s*=\s*)(.*?)(\s*)$)re");
    for (size_t i = 0; i < e.lines.size(); ++i) {
      std::smatch m;
      if (!std::regex_match(e.lines[i], m, k_save_path)) {
        continue;
      }
      std::string value = m[2];
      std::string quote;
      if (value.size() >= 2 && (value[0] == '"' || value[0] == '\'') && value.back() == value[0]) {
        quote = value.substr(0, 1);
        value = value.substr(1, value.size() - 2);
      }
      // A comma-separated list of servers (phpredis session handler).
      std::string rebuilt;
      bool any = false;
      size_t start = 0;
      while (start <= value.size()) {
        size_t comma = value.find(',', start);
        std::string item =
            value.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        size_t lead = item.find_first_not_of(' ');
        std::string pad = lead == std::string::npos ? item : item.substr(0, lead);
        std::string body = lead == std::string::npos ? "" : item.substr(lead);
        // phpredis also takes a bare host:port: it becomes a URL when it moves.
        std::string url_body = body;
        if (!body.empty() && body.find("://") == std::string::npos && body[0] != '/' &&
            !body.starts_with("unix:") && body.find(':') != std::string::npos) {
          url_body = "tcp://" + body;
        }
        UrlRewrite r = rewrite_server_url(url_body, m_o, UrlClient::phpredis);
        if (!r.url && url_body != body) {
          r.problem.clear();
        }
        if (!r.problem.empty()) {
          warn(i, "session.save_path: " + r.problem);
        }
        std::optional<std::string>& url = r.url;
        if (url && url->starts_with("redis://")) {
          *url = "tcp://" + url->substr(8);  // phpredis session URLs are tcp://
        }
        any = any || url.has_value();
        rebuilt += pad + (url ? *url : body);
        if (comma == std::string::npos) {
          break;
        }
        rebuilt += ',';
        start = comma + 1;
      }
      if (any) {
        std::string before = e.lines[i];
        e.lines[i] = m[1].str() + quote + rebuilt + quote + m[3].str();
        change(i, "session.save_path", before, e.lines[i], reason());
      }
    }
  }

  // --- .env files ---
  void env(LineEdit& e) {
    static const std::regex k_assign(
        R"re(^(\s*(?:export\s+)?)([A-Za-z_][A-Za-z0-9_]*)(\s*=\s*)(.*?)(\s*(?:#.*)?)$)re");
    struct Var {
      size_t line;
      std::string value;
      std::string quote;
      std::smatch::difference_type pos;
      size_t length;
    };
    std::map<std::string, Var> vars;
    for (size_t i = 0; i < e.lines.size(); ++i) {
      std::smatch m;
      if (!std::regex_match(e.lines[i], m, k_assign)) {
        continue;
      }
      std::string value = m[4];
      std::string quote;
      if (value.size() >= 2 && (value[0] == '"' || value[0] == '\'') && value.back() == value[0]) {
        quote = value.substr(0, 1);
        value = value.substr(1, value.size() - 2);
      }
      vars[m[2]] = Var{i, value, quote, m.position(4), static_cast<size_t>(m.length(4))};
    }
    auto set = [&](const std::string& name, const std::string& value, bool quoted = false,
                   const std::string& why = {}, const std::string& action = "endpoint") {
      Var& v = vars[name];
      std::string before = e.lines[v.line];
      std::string written = quoted ? value : v.quote + value + v.quote;
      e.lines[v.line].replace(static_cast<size_t>(v.pos), v.length, written);
      v.length = written.size();
      change(v.line, name, before, e.lines[v.line], why.empty() ? reason() : why, action);
    };
    for (auto& [name, var] : vars) {
      if (var.value.empty()) {
        continue;
      }
      bool url_like = var.value.find("://") != std::string::npos || var.value.starts_with("unix:");
      bool socket_var =
          (name.find("REDIS") != std::string::npos || name.find("CACHE") != std::string::npos) &&
          (name.ends_with("SOCKET") || name.ends_with("PATH") || name.ends_with("HOST"));
      if (url_like || (socket_var && var.value.starts_with('/'))) {
        UrlRewrite r = rewrite_server_url(var.value, m_o, UrlClient::generic);
        if (!r.problem.empty()) {
          warn(var.line, name + ": " + r.problem);
        }
        if (auto url = r.url) {
          if (var.value.starts_with('/') && m_o.to.address.unix_path.empty()) {
            continue;  // a socket path variable cannot hold host:port
          }
          set(name, *url);
        }
      }
    }
    // host/port pairs: REDIS_HOST + REDIS_PORT (and APP_REDIS_HOST + APP_REDIS_PORT, ...),
    // with their REDIS_PASSWORD and REDIS_DB.
    std::vector<std::string> hosts;
    for (auto& [name, var] : vars) {
      if (name.ends_with("REDIS_HOST")) {
        hosts.push_back(name);
      }
    }
    for (const std::string& name : hosts) {
      std::string stem = name.substr(0, name.size() - 4);
      std::string host = vars[name].value;
      auto port = vars.find(stem + "PORT");
      int port_value = port == vars.end() ? 6379 : to_int(port->second.value, -1);
      bool on_server = host.starts_with('/') ? points_at_server(m_o, host, "", 0)
                                             : points_at_server(m_o, "", host, port_value);
      if (!host.starts_with('/') && tcp_matches(m_o, host, port_value)) {
        const KnownEndpoint& dest = tcp_dest(m_o);
        if (dest.address.unix_path.empty()) {
          set(name, dest.address.host);
          if (port != vars.end()) {
            set(stem + "PORT", std::to_string(dest.address.port));
          }
        } else {
          // phpredis (Laravel) takes a socket path as host with port 0.
          set(name, dest.address.unix_path);
          if (port != vars.end()) {
            set(stem + "PORT", "0");
          }
        }
      } else if (host.starts_with('/') && is_old_socket(m_o, host) &&
                 m_o.to.address.unix_path.empty()) {
        const KnownEndpoint& dest = tcp_dest(m_o);
        set(name, dest.address.host);
        if (port != vars.end()) {
          set(stem + "PORT", std::to_string(dest.address.port));
        }
      }
      if (!on_server) {
        continue;
      }
      size_t anchor =
          port != vars.end() ? std::max(port->second.line, vars[name].line) : vars[name].line;
      auto add = [&](const std::string& var_name, const std::string& value, const char* why) {
        std::string text = var_name + "=" + value;
        size_t at = insert_line(e, anchor, text);
        for (auto& [other, v] : vars) {
          v.line += v.line >= at ? 1 : 0;
        }
        change(at, var_name, "", text, why, "added");
      };
      auto pw = vars.find(stem + "PASSWORD");
      std::optional<std::string> current;
      if (pw != vars.end() && pw->second.value != "null" && !pw->second.value.empty()) {
        current = pw->second.value;
      }
      if (changes_password(m_o, current)) {
        std::string value = env_value(*m_o.to.password(), pw == vars.end() ? "" : pw->second.quote);
        if (pw == vars.end()) {
          add(stem + "PASSWORD", value, "the server's password changes");
        } else {
          set(stem + "PASSWORD", value, true, "the server's password changes", "password");
        }
      }
      auto db = vars.find(stem + "DB");
      int db_value = db == vars.end() ? 0 : to_int(db->second.value, -1);
      if (changes_db(m_o, db_value)) {
        if (db == vars.end()) {
          add(stem + "DB", std::to_string(*m_o.to.db()), "the app's database moves");
        } else {
          set(stem + "DB", std::to_string(*m_o.to.db()), false, "the app's database moves", "db");
        }
      }
    }
  }

  // --- Nextcloud config.php: the 'redis' array ---
  void nextcloud(LineEdit& e) {
    static const std::regex k_start(R"re(['"]redis['"]\s*=>)re");
    static const std::regex k_host(R"re(^(\s*['"]host['"]\s*=>\s*)(['"][^'"]*['"])(.*)$)re");
    static const std::regex k_port(R"re(^(\s*['"]port['"]\s*=>\s*)(-?\d+)(.*)$)re");
    int depth = 0;
    bool inside = false;
    bool opened = false;
    size_t host_line = 0;
    std::optional<PhpString> host;
    size_t port_line = 0;
    int port = -1;
    std::string host_prefix;
    std::string host_suffix;
    std::string port_prefix;
    std::string port_suffix;
    static const std::regex k_password(
        R"re(^(\s*['"]password['"]\s*=>\s*)(['"][^'"]*['"])(.*)$)re");
    static const std::regex k_dbindex(R"re(^(\s*['"]dbindex['"]\s*=>\s*)(['"]?-?\d+['"]?)(.*)$)re");
    std::optional<size_t> password_line;
    std::optional<PhpString> password;
    std::string password_prefix;
    std::string password_suffix;
    std::optional<size_t> db_line;
    std::string db;
    std::string db_prefix;
    std::string db_suffix;
    for (size_t i = 0; i < e.lines.size(); ++i) {
      const std::string& line = e.lines[i];
      if (!inside && std::regex_search(line, k_start)) {
        inside = true;
        depth = 0;
      }
      if (!inside) {
        continue;
      }
      std::smatch m;
      if (depth == 1 && std::regex_match(line, m, k_host)) {
        host = php_string(m[2].str());
        host_line = i;
        host_prefix = m[1];
        host_suffix = m[3];
      } else if (depth == 1 && std::regex_match(line, m, k_port)) {
        port = to_int(m[2].str(), -1);
        port_line = i;
        port_prefix = m[1];
        port_suffix = m[3];
      } else if (depth == 1 && std::regex_match(line, m, k_password)) {
        password_line = i;
        password = php_string(m[2].str());
        password_prefix = m[1];
        password_suffix = m[3];
      } else if (depth == 1 && std::regex_match(line, m, k_dbindex)) {
        db_line = i;
        db = m[2].str();
        db_prefix = m[1];
        db_suffix = m[3];
      }
      for (char c : line) {
        opened = opened || c == '[' || c == '(';
        depth += (c == '[' || c == '(') ? 1 : (c == ']' || c == ')') ? -1 : 0;
      }
      if (opened && depth <= 0) {
        break;
      }
    }
    if (!host) {
      return;
    }
    auto set_host = [&](const std::string& value) {
      std::string before = e.lines[host_line];
      e.lines[host_line] = host_prefix + php_quote(host->quote, value) + host_suffix;
      change(host_line, "redis.host", before, e.lines[host_line], reason());
    };
    auto set_port = [&](int value) {
      if (port < 0 && value != 6379 && value != 0) {
        // No 'port' line: Nextcloud's default 6379 would be wrong.
        std::string indent = host_prefix.substr(0, host_prefix.find_first_not_of(" \t"));
        std::string text = fmt::format("{0}{1}port{1} => {2},", indent, host->quote, value);
        size_t at = insert_line(e, host_line, text);
        if (password_line && *password_line >= at) {
          ++*password_line;
        }
        if (db_line && *db_line >= at) {
          ++*db_line;
        }
        change(at, "redis.port", "", text, reason(), "added");
        return;
      }
      if (port < 0 || port == value) {
        return;
      }
      std::string before = e.lines[port_line];
      e.lines[port_line] = port_prefix + std::to_string(value) + port_suffix;
      change(port_line, "redis.port", before, e.lines[port_line], reason());
    };
    bool socket = host->value.starts_with('/');
    bool on_server = socket ? points_at_server(m_o, host->value, "", 0)
                            : points_at_server(m_o, "", host->value, port < 0 ? 6379 : port);
    if (socket && is_old_socket(m_o, host->value)) {
      if (!m_o.to.address.unix_path.empty()) {
        set_host(m_o.to.address.unix_path);
      } else {
        set_host(tcp_dest(m_o).address.host);
        set_port(tcp_dest(m_o).address.port);
      }
    } else if (!socket && tcp_matches(m_o, host->value, port < 0 ? 6379 : port)) {
      const KnownEndpoint& dest = tcp_dest(m_o);
      if (dest.address.unix_path.empty()) {
        set_host(dest.address.host);
        set_port(dest.address.port);
      } else {
        set_host(dest.address.unix_path);
        set_port(0);
      }
    }
    if (!on_server) {
      return;
    }
    std::string indent = host_prefix.substr(0, host_prefix.find_first_not_of(" \t"));
    char quote = host->quote;
    size_t added = 0;
    auto add = [&](const std::string& text, const std::string& what, const char* why) {
      size_t at = insert_line(e, host_line + added, text);
      ++added;
      change(at, what, "", text, why, "added");
    };
    std::optional<std::string> current;
    if (password && !password->value.empty()) {
      current = password->value;
    }
    if (password_line && !password) {
      if (m_o.to.password()) {
        warn(*password_line, "redis.password is an expression; set the new password by hand");
      }
    } else if (changes_password(m_o, current)) {
      std::string literal = php_literal(password ? password->quote : quote, *m_o.to.password());
      if (password_line) {
        size_t at = *password_line + (*password_line > host_line ? added : 0);
        std::string before = e.lines[at];
        e.lines[at] = password_prefix + literal + password_suffix;
        change(at, "redis.password", before, e.lines[at], "the server's password changes",
               "password");
      } else {
        add(fmt::format("{}{}password{} => {},", indent, quote, quote, literal), "redis.password",
            "the server's password changes");
      }
    }
    int db_value =
        db_line
            ? to_int(db.starts_with('\'') || db.starts_with('"') ? db.substr(1, db.size() - 2) : db,
                     -1)
            : 0;
    if (changes_db(m_o, db_value)) {
      std::string value = std::to_string(*m_o.to.db());
      if (db_line) {
        size_t at = *db_line + (*db_line > host_line ? added : 0);
        std::string before = e.lines[at];
        e.lines[at] = db_prefix + value + db_suffix;
        change(at, "redis.dbindex", before, e.lines[at], "the app's database moves", "db");
      } else {
        add(fmt::format("{}{}dbindex{} => {},", indent, quote, quote, value), "redis.dbindex",
            "the app's database moves");
      }
    }
  }

  const AppsRewriteOptions& m_o;
  AppsRewrite& m_out;
  const AppFile* m_file = nullptr;
  std::vector<WpSite> m_sites;
};

}  // namespace

std::string_view app_format_name(AppFormat format) {
  switch (format) {
    case AppFormat::nginx:
      return "nginx";
    case AppFormat::wp_config:
      return "wp-config";
    case AppFormat::php_ini:
      return "php-ini";
    case AppFormat::env:
      return "env";
    case AppFormat::nextcloud:
      return "nextcloud";
    case AppFormat::django:
      return "django";
    case AppFormat::rails:
      return "rails";
    case AppFormat::unknown:
      return "unknown";
  }
  return "unknown";
}

const AppProfile* find_app_profile(std::string_view name) {
  for (const AppProfile& p : profiles()) {
    if (p.name == name) {
      return &p;
    }
  }
  return nullptr;
}

std::vector<std::string> app_profile_names() {
  std::vector<std::string> out;
  for (const AppProfile& p : profiles()) {
    out.push_back(p.name);
  }
  return out;
}

namespace {

bool is_django_settings(std::string_view path) {
  std::string_view name = basename(path);
  return name.ends_with(".py") && (name.find("settings") != std::string_view::npos ||
                                   path.find("/settings/") != std::string_view::npos);
}

// config/cable.yml, sidekiq.yml, redis.yml, environments/*.rb, initializers/*.rb.
bool is_rails_config(std::string_view path) {
  std::string_view name = basename(path);
  if (path.find("config/") == std::string_view::npos) {
    return false;
  }
  if (name == "cable.yml" || name == "sidekiq.yml" || name == "redis.yml" || name == "cache.yml") {
    return true;
  }
  return name.ends_with(".rb") && (path.find("config/environments/") != std::string_view::npos ||
                                   path.find("config/initializers/") != std::string_view::npos);
}

}  // namespace

bool is_app_candidate(std::string_view path) {
  std::string_view name = basename(path);
  return name == "wp-config.php" || name == "config.php" || name == ".env" ||
         name.starts_with(".env.") || name.ends_with(".env") || name.ends_with(".ini") ||
         name.ends_with(".conf") || is_django_settings(path) || is_rails_config(path);
}

AppFormat classify_app_file(std::string_view path, std::string_view contents,
                            const AppProfile& profile) {
  std::string_view name = basename(path);
  AppFormat format = AppFormat::unknown;
  if (name == "wp-config.php") {
    format = AppFormat::wp_config;
  } else if (name == "config.php" && contents.find("CONFIG") != std::string_view::npos &&
             std::regex_search(std::string(contents), std::regex(R"re(['"]redis['"]\s*=>)re"))) {
    format = AppFormat::nextcloud;
  } else if (name == ".env" || name.starts_with(".env.") || name.ends_with(".env")) {
    format = AppFormat::env;
  } else if (contents.find("session.save_path") != std::string_view::npos &&
             (name.ends_with(".ini") || name.ends_with(".conf"))) {
    format = AppFormat::php_ini;
  } else if (is_django_settings(path)) {
    format = AppFormat::django;
  } else if (is_rails_config(path)) {
    format = AppFormat::rails;
  } else if (name.ends_with(".conf") &&
             std::regex_search(std::string(contents),
                               std::regex(R"re((^|\n)\s*upstream\s+\S+\s*\{)re"))) {
    format = AppFormat::nginx;
  }
  if (std::find(profile.formats.begin(), profile.formats.end(), format) == profile.formats.end()) {
    return AppFormat::unknown;
  }
  return format;
}

UrlRewrite rewrite_server_url(std::string_view url, const AppsRewriteOptions& o, UrlClient client) {
  UrlRewrite out;
  // A bare socket path.
  if (url.starts_with('/')) {
    if (is_old_socket(o, url) && !o.to.address.unix_path.empty()) {
      out.url = o.to.address.unix_path;
    } else if (is_old_socket(o, url)) {
      out.problem =
          fmt::format("{} is a socket path; the new server is at {}", url, tcp_text(tcp_dest(o)));
    }
    return out;
  }
  auto parsed = engine::parse_server_url(url);
  if (!parsed) {
    return out;
  }
  engine::ServerUrl u = std::move(*parsed);
  bool tls = u.scheme == "rediss" || u.scheme == "tls";
  bool php = client == UrlClient::phpredis || u.scheme == "tcp" || u.scheme == "tls";
  if (u.socket_form) {
    if (!points_at_server(o, u.socket, "", 0)) {
      return out;
    }
    if (is_old_socket(o, u.socket)) {
      if (!o.to.address.unix_path.empty()) {
        u.socket = o.to.address.unix_path;
      } else {
        // Socket to TCP: the query's db moves into the path for redis:// clients.
        const KnownEndpoint& dest = tcp_dest(o);
        u.socket_form = false;
        u.slashes = true;
        u.authority_host = tcp_text(dest);
        u.host = dest.address.host;
        u.port = dest.address.port;
        if (php && u.scheme == "unix") {
          u.scheme = "tcp";
        } else {
          u.scheme = "redis";
          if (long i = u.param({"db"}); i >= 0 && u.query[static_cast<size_t>(i)].second) {
            u.db_path = *u.query[static_cast<size_t>(i)].second;
            u.query.erase(u.query.begin() + i);
            u.has_query = !u.query.empty();
          }
        }
      }
    }
  } else {
    if (!points_at_server(o, "", u.host, u.port)) {
      return out;
    }
    if (tcp_matches(o, u.host, u.port)) {
      const KnownEndpoint& dest = tcp_dest(o);
      if (dest.address.unix_path.empty()) {
        u.authority_host = tcp_text(dest);
        u.host = dest.address.host;
        u.port = dest.address.port;
      } else if (tls) {
        out.problem =
            fmt::format("{}://{}: TLS does not go over a unix socket; point it at {} by hand",
                        u.scheme, u.authority_host, dest.address.unix_path);
        return out;
      } else if (client == UrlClient::ruby) {
        out.problem = fmt::format(
            "{}://{}: Ruby's redis-client takes only redis:// and rediss:// URLs; give it "
            "path: '{}' instead",
            u.scheme, u.authority_host, dest.address.unix_path);
        return out;
      } else {
        // redis://[auth@]host:port/DB?q -> unix://[auth@]/socket?db=DB&q (redis-py's form).
        u.socket_form = true;
        u.socket = dest.address.unix_path;
        u.scheme = "unix";
        u.slashes = true;
        if (u.db_path) {
          u.query.insert(u.query.begin(), {php ? "database" : "db", *u.db_path});
          u.db_path.reset();
        }
        u.path_rest.clear();
      }
    }
  }
  // The database.
  std::initializer_list<std::string_view> db_names = {"db", "database"};
  long db_param = u.param(db_names);
  std::optional<std::string> db_text =
      u.db_path ? u.db_path
                : (db_param >= 0 ? u.query[static_cast<size_t>(db_param)].second : std::nullopt);
  int db = db_text ? to_int(*db_text, -1) : 0;
  if (changes_db(o, db)) {
    std::string value = std::to_string(*o.to.db());
    if (u.db_path) {
      u.db_path = value;
    } else if (db_param >= 0) {
      u.query[static_cast<size_t>(db_param)].second = value;
    } else if (!u.socket_form && (u.scheme == "redis" || u.scheme == "rediss") &&
               u.path_rest.empty()) {
      u.db_path = value;
    } else if (u.scheme == "redis+socket") {
      out.problem = fmt::format(
          "{}: kombu's redis+socket URL takes the database as "
          "virtual_host; set it to {} by hand",
          u.socket, value);
    } else {
      u.query.emplace_back(php ? "database" : "db", value);
    }
  }
  // The password: user info, or password= / auth= (auth[]=user&auth[]=pass: the second).
  long auth_param = u.param({"password", "auth"});
  long auth_array = u.param({"auth[]"}, 1);
  std::optional<std::string> current;
  if (u.password) {
    current = pct_decode(*u.password);
  } else if (auth_param >= 0) {
    current = pct_decode(u.query[static_cast<size_t>(auth_param)].second.value_or(""));
  } else if (auth_array >= 0) {
    current = pct_decode(u.query[static_cast<size_t>(auth_array)].second.value_or(""));
  } else if (u.param({"auth[]"}) >= 0) {
    current = pct_decode(u.query[static_cast<size_t>(u.param({"auth[]"}))].second.value_or(""));
    auth_param = u.param({"auth[]"});  // one auth[] is the password alone
  }
  if (changes_password(o, current)) {
    std::string value = pct_encode(*o.to.password());
    if (u.password) {
      u.password = value;
    } else if (auth_array >= 0) {
      u.query[static_cast<size_t>(auth_array)].second = value;
    } else if (auth_param >= 0) {
      u.query[static_cast<size_t>(auth_param)].second = value;
    } else if (client == UrlClient::phpredis) {
      u.query.emplace_back("auth", value);
    } else if (u.scheme == "tcp" || u.scheme == "tls") {
      u.query.emplace_back("password", value);  // Predis
    } else {
      u.password = value;
      u.user = u.user.value_or("");
    }
  }
  std::string rendered = u.render();
  if (rendered != url) {
    out.url = rendered;
  }
  return out;
}

std::optional<KnownEndpoint> parse_endpoint_url(std::string_view text) {
  KnownEndpoint e;
  if (text.starts_with('/')) {
    e.address.unix_path = std::string(text);
    return e;
  }
  if (text.find("://") == std::string_view::npos && !text.starts_with("unix:")) {
    auto [host, port] = engine::split_host_port(text, 6379);
    if (host.empty() || port <= 0 || port > 65535) {
      return std::nullopt;
    }
    e.address.host = host;
    e.address.port = port;
    return e;
  }
  auto u = engine::parse_server_url(text);
  if (!u) {
    return std::nullopt;
  }
  if (u->socket_form) {
    e.address.unix_path = u->socket;
  } else {
    if (u->host.empty() || u->port <= 0 || u->port > 65535 || !u->path_rest.empty()) {
      return std::nullopt;
    }
    e.address.host = u->host;
    e.address.port = u->port;
  }
  if (u->password) {
    e.set_password(pct_decode(*u->password));
  } else if (long i = u->param({"password", "auth"}); i >= 0) {
    e.set_password(pct_decode(u->query[static_cast<size_t>(i)].second.value_or("")));
  }
  std::optional<std::string> db = u->db_path;
  if (long i = u->param({"db", "database"}); !db && i >= 0) {
    db = u->query[static_cast<size_t>(i)].second.value_or("");
  }
  if (db) {
    int n = to_int(*db, -1);
    if (n < 0) {
      return std::nullopt;
    }
    e.set_db(n);
  }
  return e;
}

std::optional<std::string> rewrite_endpoint_url(std::string_view url, const AppsRewriteOptions& o) {
  return rewrite_server_url(url, o, UrlClient::generic).url;
}

AppsRewrite rewrite_apps(const std::vector<AppFile>& files, const AppProfile& profile,
                         const AppsRewriteOptions& options) {
  AppsRewrite result;
  AppRewriter rewriter(options, result);
  struct Pending {
    const AppFile* file;
    AppFormat format;
    std::string after;
  };
  std::vector<Pending> pending;
  for (const AppFile& file : files) {
    AppFormat format = classify_app_file(file.path, file.contents, profile);
    if (format == AppFormat::unknown) {
      for (const std::string& socket : options.from_sockets) {
        if (file.contents.find(socket) != std::string::npos) {
          result.plan.warnings.push_back(
              fmt::format("{}: mentions {} but is not a format `rewrite apps` edits; change it "
                          "by hand",
                          file.path, socket));
        }
      }
      continue;
    }
    pending.push_back(Pending{&file, format, rewriter.rewrite(file, format)});
  }
  // Key prefixes: a prefix without a trailing ':' that starts another site's prefix in the
  // same database lets one site's flush delete the other's keys.
  const auto& sites = rewriter.sites();
  std::vector<bool> colliding(sites.size(), false);
  for (size_t i = 0; i < sites.size(); ++i) {
    for (size_t j = 0; j < sites.size(); ++j) {
      if (i == j || sites[i].db != sites[j].db) {
        continue;
      }
      const std::string& a = sites[i].prefix;
      const std::string& b = sites[j].prefix;
      bool same = a == b && i < j;
      bool overlaps = a != b && b.starts_with(a) && !a.ends_with(':');
      if (same || overlaps) {
        result.collisions.push_back(
            PrefixCollision{sites[i].file, a, sites[i].db, sites[j].file, b});
        colliding[i] = colliding[i] || overlaps;
        colliding[j] = colliding[j] || (overlaps && !b.ends_with(':'));
      }
    }
  }
  for (const PrefixCollision& c : result.collisions) {
    if (c.prefix == c.other_prefix) {
      result.plan.warnings.push_back(fmt::format(
          "key prefix '{}' is used by both {} and {} in database {}: the sites share and flush "
          "each other's cache; give each its own WP_REDIS_PREFIX",
          c.prefix, c.file, c.other_file, c.db));
    } else {
      result.plan.warnings.push_back(fmt::format(
          "key prefix '{}' ({}) is a prefix of '{}' ({}) in database {} and has no trailing "
          "':': flushing the first site deletes the second's keys{}",
          c.prefix, c.file, c.other_prefix, c.other_file, c.db,
          options.fix_prefixes ? "" : " (--fix-prefixes adds the ':')"));
    }
  }
  if (options.fix_prefixes) {
    for (size_t i = 0; i < sites.size(); ++i) {
      if (!colliding[i] || sites[i].prefix.ends_with(':')) {
        continue;
      }
      const auto& site = sites[i];
      for (Pending& p : pending) {
        if (p.file->path != site.file) {
          continue;
        }
        LineEdit edit = split(p.after);
        std::string& line = edit.lines[site.line];
        std::string old_literal = php_quote(site.quote, site.prefix);
        size_t at = line.find(old_literal, line.find(site.constant));
        if (at == std::string::npos) {
          continue;
        }
        std::string before = line;
        line.replace(at, old_literal.size(), php_quote(site.quote, site.prefix + ":"));
        p.after = join(edit);
        result.plan.changes.push_back(
            Change{site.file, static_cast<int>(site.line + 1), site.constant, "prefix", before,
                   line, "a trailing ':' makes the prefix a namespace of its own"});
        PrefixRename rename{site.file, site.db, site.prefix, site.prefix + ":", {}};
        for (const auto& other : sites) {
          if (other.db == site.db && other.prefix != site.prefix &&
              other.prefix.starts_with(site.prefix)) {
            rename.exclude.push_back(other.prefix);
          }
        }
        result.renames.push_back(rename);
        result.plan.warnings.push_back(fmt::format(
            "{}: prefix '{}' becomes '{}': cache entries stored under the old prefix are no "
            "longer reached (they expire or can be renamed with the --rename-keys data)",
            site.file, site.prefix, site.prefix + ":"));
      }
    }
  }
  for (const Pending& p : pending) {
    PlannedFile planned;
    planned.path = p.file->path;
    planned.source = p.file->path;
    planned.exists = true;
    planned.current = p.file->contents;
    planned.before = p.file->contents;
    planned.after = p.after;
    switch (p.format) {
      case AppFormat::nginx:
        planned.kind = FileKind::nginx;
        break;
      case AppFormat::wp_config:
      case AppFormat::nextcloud:
        planned.kind = FileKind::php;
        break;
      case AppFormat::php_ini:
        planned.kind = FileKind::ini;
        break;
      case AppFormat::env:
        planned.kind = FileKind::env;
        break;
      case AppFormat::django:
        planned.kind = FileKind::python;
        break;
      case AppFormat::rails:
        planned.kind = p.file->path.ends_with(".rb") ? FileKind::ruby : FileKind::text;
        break;
      case AppFormat::unknown:
        planned.kind = FileKind::text;
        break;
    }
    result.plan.files.push_back(std::move(planned));
  }
  return result;
}

}  // namespace keyshift::migrate
