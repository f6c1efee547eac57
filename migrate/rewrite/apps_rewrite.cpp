#include "migrate/rewrite/apps_rewrite.hpp"

#include <fmt/format.h>

#include <algorithm>
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
      {"django", {F::env}},
      {"rails", {F::env}},
      {"nextcloud", {F::nextcloud, F::php_ini}},
      {"generic", {F::nginx, F::wp_config, F::php_ini, F::env, F::nextcloud}},
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
  return !o.from.host.empty() && o.from.port != 0;
}

bool tcp_matches(const AppsRewriteOptions& o, std::string_view host, int port) {
  return moves_tcp(o) && same_host(host, o.from.host) && port == o.from.port;
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

// Splits "host:port" ("[::1]:6379" too).
std::pair<std::string, int> host_port(std::string_view text, int default_port) {
  size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || (text.starts_with('[') && text.back() == ']')) {
    return {std::string(text), default_port};
  }
  return {std::string(text.substr(0, colon)), to_int(text.substr(colon + 1), -1)};
}

std::string tcp_text(const Endpoint& e) {
  return fmt::format("{}:{}", e.host, e.port);
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

  std::string reason() const {
    return m_o.to.socket.empty() ? fmt::format("the server now listens on {}", tcp_text(m_o.to))
                                 : fmt::format("the server's socket is now {}", m_o.to.socket);
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
        if (address.starts_with("unix:") && is_old_socket(m_o, address.substr(5))) {
          replaced = m_o.to.socket.empty() ? tcp_text(m_o.to) : "unix:" + m_o.to.socket;
        } else if (!address.starts_with("unix:")) {
          auto [host, port] = host_port(address, 80);
          if (tcp_matches(m_o, host, port)) {
            replaced = m_o.to.socket.empty() ? tcp_text(m_o.to) : "unix:" + m_o.to.socket;
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

  void wp_config(LineEdit& e) {
    static const std::regex k_define(
        R"re(^(\s*define\s*\(\s*(['"])([A-Z0-9_]+)\2\s*,\s*)(.*?)(\s*\)\s*;.*)$)re");
    std::map<std::string, Define> defines;
    std::vector<std::string> order;
    size_t last_redis_line = 0;
    bool any_redis = false;
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
    // Socket paths in any constant that holds one.
    for (const char* name :
         {"WP_REDIS_PATH", "WP_REDIS_HOST", "RT_WP_NGINX_HELPER_REDIS_UNIX_SOCKET",
          "RT_WP_NGINX_HELPER_REDIS_HOSTNAME"}) {
      auto value = text_of(name);
      if (!value) {
        continue;
      }
      if (auto url = rewrite_endpoint_url(*value, m_o); url && !m_o.to.socket.empty()) {
        set_define(e, defines[name], *url, reason());
      }
    }
    // URLs inside WP_REDIS_SERVERS / SHARDS / CLUSTER arrays.
    for (const char* name : {"WP_REDIS_SERVERS", "WP_REDIS_SHARDS", "WP_REDIS_CLUSTER"}) {
      auto it = defines.find(name);
      if (it == defines.end()) {
        continue;
      }
      std::string& line = e.lines[it->second.line];
      std::string before = line;
      static const std::regex k_quoted(R"re((['"])([a-z+]+:[^'"]*)\1)re");
      std::string rebuilt;
      auto begin = std::sregex_iterator(line.begin(), line.end(), k_quoted);
      size_t last = 0;
      for (auto m = begin; m != std::sregex_iterator(); ++m) {
        rebuilt += line.substr(last, static_cast<size_t>(m->position(0)) - last);
        auto url = rewrite_endpoint_url((*m)[2].str(), m_o);
        rebuilt += url ? php_quote((*m)[1].str()[0], *url) : (*m)[0].str();
        last = static_cast<size_t>(m->position(0) + m->length(0));
      }
      rebuilt += line.substr(last);
      if (rebuilt != before) {
        line = rebuilt;
        change(it->second.line, name, before, line, reason());
      }
    }
    std::string scheme = raw_of("WP_REDIS_SCHEME");
    bool unix_scheme = scheme == "unix";
    if (any_redis && moves_tcp(m_o) && !unix_scheme) {
      std::string host = text_of("WP_REDIS_HOST").value_or("127.0.0.1");
      int port = to_int(raw_of("WP_REDIS_PORT").empty() ? "6379" : raw_of("WP_REDIS_PORT"), -1);
      if (tcp_matches(m_o, host, port)) {
        if (m_o.to.socket.empty()) {
          if (defines.count("WP_REDIS_HOST") != 0 && host != m_o.to.host) {
            set_define(e, defines["WP_REDIS_HOST"], m_o.to.host, reason());
          }
          if (defines.count("WP_REDIS_PORT") != 0 && port != m_o.to.port) {
            Define& d = defines["WP_REDIS_PORT"];
            std::string before = e.lines[d.line];
            e.lines[d.line].replace(static_cast<size_t>(d.value_pos), d.raw.size(),
                                    std::to_string(m_o.to.port));
            change(d.line, d.name, before, e.lines[d.line], reason());
          }
        } else {
          // Moving to a socket: Redis Object Cache reads WP_REDIS_PATH when the scheme is unix.
          std::vector<std::string> added;
          if (defines.count("WP_REDIS_SCHEME") != 0) {
            set_define(e, defines["WP_REDIS_SCHEME"], "unix", reason());
          } else {
            added.push_back("define( 'WP_REDIS_SCHEME', 'unix' );");
          }
          if (defines.count("WP_REDIS_PATH") != 0) {
            set_define(e, defines["WP_REDIS_PATH"], m_o.to.socket, reason());
          } else {
            added.push_back(fmt::format("define( 'WP_REDIS_PATH', '{}' );", m_o.to.socket));
          }
          for (size_t k = 0; k < added.size(); ++k) {
            size_t at = last_redis_line + 1 + k;
            e.lines.insert(e.lines.begin() + static_cast<long>(at), added[k]);
            e.eols.insert(e.eols.begin() + static_cast<long>(at), e.eols[last_redis_line]);
            change(at, added[k].substr(9, 15), "", added[k], reason(), "added");
          }
          // Later defines moved down; prefix bookkeeping below re-reads positions.
          if (!added.empty()) {
            for (auto& [name, d] : defines) {
              if (d.line > last_redis_line) {
                d.line += added.size();
              }
            }
          }
        }
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
        auto url = rewrite_endpoint_url(body, m_o);
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
    auto set = [&](const std::string& name, const std::string& value) {
      Var& v = vars[name];
      std::string before = e.lines[v.line];
      std::string written = v.quote + value + v.quote;
      e.lines[v.line].replace(static_cast<size_t>(v.pos), v.length, written);
      v.length = written.size();
      change(v.line, name, before, e.lines[v.line], reason());
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
        if (auto url = rewrite_endpoint_url(var.value, m_o)) {
          if (var.value.starts_with('/') && m_o.to.socket.empty()) {
            continue;  // a socket path variable cannot hold host:port
          }
          set(name, *url);
        }
      }
    }
    // host/port pairs: REDIS_HOST + REDIS_PORT (and APP_REDIS_HOST + APP_REDIS_PORT, ...).
    if (moves_tcp(m_o)) {
      for (auto& [name, var] : vars) {
        if (!name.ends_with("REDIS_HOST")) {
          continue;
        }
        std::string port_name = name.substr(0, name.size() - 4) + "PORT";
        auto port = vars.find(port_name);
        int port_value = port == vars.end() ? 6379 : to_int(port->second.value, -1);
        if (!tcp_matches(m_o, var.value, port_value)) {
          continue;
        }
        if (m_o.to.socket.empty()) {
          set(name, m_o.to.host);
          if (port != vars.end()) {
            set(port_name, std::to_string(m_o.to.port));
          }
        } else {
          // phpredis (Laravel) takes a socket path as host with port 0.
          set(name, m_o.to.socket);
          if (port != vars.end()) {
            set(port_name, "0");
          }
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
      if (port < 0 || port == value) {
        return;
      }
      std::string before = e.lines[port_line];
      e.lines[port_line] = port_prefix + std::to_string(value) + port_suffix;
      change(port_line, "redis.port", before, e.lines[port_line], reason());
    };
    if (is_old_socket(m_o, host->value) && !m_o.to.socket.empty()) {
      set_host(m_o.to.socket);
    } else if (tcp_matches(m_o, host->value, port < 0 ? 6379 : port)) {
      if (m_o.to.socket.empty()) {
        set_host(m_o.to.host);
        set_port(m_o.to.port);
      } else {
        set_host(m_o.to.socket);
        set_port(0);
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

bool is_app_candidate(std::string_view path) {
  std::string_view name = basename(path);
  return name == "wp-config.php" || name == "config.php" || name == ".env" ||
         name.starts_with(".env.") || name.ends_with(".env") || name.ends_with(".ini") ||
         name.ends_with(".conf");
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

std::optional<std::string> rewrite_endpoint_url(std::string_view url, const AppsRewriteOptions& o) {
  const Endpoint& to = o.to;
  // A bare socket path.
  if (url.starts_with('/')) {
    if (is_old_socket(o, url) && !to.socket.empty()) {
      return to.socket;
    }
    return std::nullopt;
  }
  size_t scheme_end = url.find(':');
  if (scheme_end == std::string_view::npos) {
    return std::nullopt;
  }
  std::string scheme(url.substr(0, scheme_end));
  std::string_view rest = url.substr(scheme_end + 1);
  // unix:/path and unix:///path, redis+socket:///path; keep user info and query.
  if (scheme == "unix" || scheme == "redis+socket") {
    std::string_view path = rest;
    std::string head = scheme + ":";
    if (path.starts_with("//")) {
      path.remove_prefix(2);
      head += "//";
    }
    std::string auth;
    if (size_t at = path.find('@'); at != std::string_view::npos && !path.starts_with('/')) {
      auth = std::string(path.substr(0, at + 1));
      path.remove_prefix(at + 1);
    }
    size_t query = path.find_first_of("?");
    std::string_view socket = path.substr(0, query);
    std::string tail = query == std::string_view::npos ? "" : std::string(path.substr(query));
    if (!is_old_socket(o, socket)) {
      return std::nullopt;
    }
    if (!to.socket.empty()) {
      return head + auth + to.socket + tail;
    }
    std::string tcp_scheme = scheme == "redis+socket" ? "redis" : "tcp";
    return fmt::format("{}://{}{}{}", tcp_scheme, auth, tcp_text(to), tail);
  }
  if (scheme != "redis" && scheme != "rediss" && scheme != "tcp" && scheme != "tls") {
    return std::nullopt;
  }
  if (!rest.starts_with("//")) {
    return std::nullopt;
  }
  rest.remove_prefix(2);
  size_t authority_end = rest.find_first_of("/?");
  std::string_view authority = rest.substr(0, authority_end);
  std::string tail =
      authority_end == std::string_view::npos ? "" : std::string(rest.substr(authority_end));
  std::string auth;
  if (size_t at = authority.rfind('@'); at != std::string_view::npos) {
    auth = std::string(authority.substr(0, at + 1));
    authority.remove_prefix(at + 1);
  }
  auto [host, port] = host_port(authority, 6379);
  if (!tcp_matches(o, host, port)) {
    return std::nullopt;
  }
  if (to.socket.empty()) {
    return fmt::format("{}://{}{}{}", scheme, auth, tcp_text(to), tail);
  }
  if (scheme == "rediss" || scheme == "tls") {
    return std::nullopt;  // TLS does not go over a unix socket; left for the user
  }
  // redis://[auth@]host:port/DB?q -> unix://[auth@]/socket?db=DB&q (redis-py's form).
  std::string db;
  std::string query;
  if (tail.starts_with('/')) {
    size_t q = tail.find('?');
    db = tail.substr(1, q == std::string::npos ? std::string::npos : q - 1);
    query = q == std::string::npos ? "" : tail.substr(q + 1);
  } else if (tail.starts_with('?')) {
    query = tail.substr(1);
  }
  std::string params;
  if (!db.empty()) {
    params = "db=" + db;
  }
  if (!query.empty()) {
    params += (params.empty() ? "" : "&") + query;
  }
  return fmt::format("unix://{}{}{}", auth, to.socket, params.empty() ? "" : "?" + params);
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
      case AppFormat::unknown:
        planned.kind = FileKind::text;
        break;
    }
    result.plan.files.push_back(std::move(planned));
  }
  return result;
}

}  // namespace keyshift::migrate
