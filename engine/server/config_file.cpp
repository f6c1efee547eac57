#include "engine/server/config_file.hpp"

#include "engine/util/glob.hpp"
#include "engine/util/split_args.hpp"
#include "engine/util/strings.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <glob.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <system_error>
#include <utility>

namespace keyshift::engine {
namespace {

// Valkey follows includes without a limit and crashes on a loop; we stop and say so.
constexpr int k_max_include_depth = 64;

constexpr std::string_view k_unbalanced_quotes = "Unbalanced quotes in configuration line";

bool has_wildcard(std::string_view path) {
  return path.find_first_of("*?[") != path.npos;
}

std::string join_path(std::string_view base, std::string_view path) {
  if (path.starts_with('/') || base.empty()) {
    return std::string(path);
  }
  std::string out(base);
  if (!out.ends_with('/')) {
    out += '/';
  }
  out += path;
  return out;
}

std::string errno_text(int err) {
  return std::generic_category().message(err);
}

// Shows an option value the way a shell user could retype it.
std::string shell_word(std::string_view word) {
  if (!word.empty() && word.find_first_of(" \t\r\n\"'\\") == word.npos) {
    return std::string(word);
  }
  std::string out = "\"";
  for (char c : word) {
    if (c == '"' || c == '\\') {
      out += '\\';
    }
    out += c;
  }
  out += '"';
  return out;
}

// Walks directives in order, keeping the working directory a `dir` line would have chdir()ed
// to, since Valkey resolves later relative includes from there.
class IncludeExpander {
 public:
  explicit IncludeExpander(ConfigFilesystem& fs) : m_fs(fs), m_cwd(fs.current_directory()) {}

  std::optional<ConfigError> expand(std::vector<Directive>& directives, int depth) {
    for (Directive& directive : directives) {
      if (directive.name == "include" && directive.args.size() == 1) {
        if (auto error = include(directive, depth)) {
          return error;
        }
        continue;
      }
      if (directive.name == "dir" && directive.args.size() == 1 && !directive.args[0].empty()) {
        m_cwd = join_path(m_cwd, directive.args[0]);
      }
      m_out.push_back(std::move(directive));
    }
    return std::nullopt;
  }

  std::vector<Directive> take() { return std::move(m_out); }

 private:
  std::optional<ConfigError> include(const Directive& directive, int depth) {
    if (depth >= k_max_include_depth) {
      return failure(directive,
                     fmt::format("include nesting deeper than {} levels (an include loop?)",
                                 k_max_include_depth));
    }
    const std::string& written = directive.args[0];
    std::string path = join_path(m_cwd, written);
    if (!has_wildcard(written)) {
      return include_file(directive, path, written, depth);
    }
    for (const std::string& match : m_fs.glob(path)) {
      if (auto error = include_file(directive, match, match, depth)) {
        return error;
      }
    }
    return std::nullopt;
  }

  std::optional<ConfigError> include_file(const Directive& directive, const std::string& path,
                                          std::string_view shown, int depth) {
    auto text = m_fs.read_file(path);
    if (!text) {
      return failure(directive, fmt::format("Fatal error, can't open config file '{}': {}", shown,
                                            text.error()));
    }
    auto parsed = parse_config_text(*text, path);
    if (!parsed) {
      return std::move(parsed).error();
    }
    return expand(*parsed, depth + 1);
  }

  static ConfigError failure(const Directive& directive, std::string message) {
    return ConfigError{directive.file, directive.line, std::move(message), directive.text};
  }

  ConfigFilesystem& m_fs;
  std::string m_cwd;
  std::vector<Directive> m_out;
};

}  // namespace

// --- Filesystems ---

Expected<std::string, std::string> RealConfigFilesystem::read_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return Unexpected{errno_text(errno)};
  }
  std::string contents;
  char buffer[16384];
  while (true) {
    ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n == 0) {
      break;
    }
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      int err = errno;
      ::close(fd);
      return Unexpected{errno_text(err)};
    }
    contents.append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  return contents;
}

std::vector<std::string> RealConfigFilesystem::glob(const std::string& pattern) {
  std::vector<std::string> matches;
  glob_t result{};
  // Like Valkey, any failure (no match, unreadable directory) just yields nothing.
  if (::glob(pattern.c_str(), 0, nullptr, &result) == 0) {
    for (size_t i = 0; i < result.gl_pathc; ++i) {
      matches.emplace_back(result.gl_pathv[i]);
    }
  }
  ::globfree(&result);
  return matches;
}

std::string RealConfigFilesystem::current_directory() {
  std::error_code error;
  std::filesystem::path cwd = std::filesystem::current_path(error);
  return error ? std::string(".") : cwd.string();
}

MemoryConfigFilesystem::MemoryConfigFilesystem(std::string cwd) : m_cwd(std::move(cwd)) {}

std::string MemoryConfigFilesystem::absolute(std::string_view path) const {
  std::string normal =
      std::filesystem::path(join_path(m_cwd, path)).lexically_normal().generic_string();
  if (normal.size() > 1 && normal.ends_with('/')) {
    normal.pop_back();
  }
  return normal;
}

void MemoryConfigFilesystem::add_file(std::string_view path, std::string contents) {
  m_files[absolute(path)] = std::move(contents);
}

Expected<std::string, std::string> MemoryConfigFilesystem::read_file(const std::string& path) {
  auto it = m_files.find(absolute(path));
  if (it == m_files.end()) {
    return Unexpected{errno_text(ENOENT)};
  }
  return it->second;
}

std::vector<std::string> MemoryConfigFilesystem::glob(const std::string& pattern) {
  auto components = [](std::string_view path) {
    std::vector<std::string_view> parts;
    size_t start = 0;
    while (start <= path.size()) {
      size_t end = path.find('/', start);
      if (end == path.npos) {
        end = path.size();
      }
      if (end > start) {
        parts.push_back(path.substr(start, end - start));
      }
      start = end + 1;
    }
    return parts;
  };
  std::string full_pattern = absolute(pattern);
  std::vector<std::string_view> wanted = components(full_pattern);
  std::vector<std::string> matches;
  for (const auto& [path, contents] : m_files) {
    std::vector<std::string_view> have = components(path);
    if (have.size() != wanted.size()) {
      continue;
    }
    bool all = true;
    for (size_t i = 0; i < have.size() && all; ++i) {
      bool hidden = have[i].starts_with('.') && !wanted[i].starts_with('.');
      all = !hidden && glob_match(wanted[i], have[i]);
    }
    if (all) {
      matches.push_back(path);
    }
  }
  return matches;
}

// --- Parsing ---

Expected<std::vector<Directive>, ConfigError> parse_config_text(std::string_view text,
                                                                std::string_view file) {
  std::vector<Directive> directives;
  std::vector<std::string> words;
  int line_number = 0;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == text.npos) {
      end = text.size();
    }
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    ++line_number;

    constexpr std::string_view k_trimmed = " \t\r\n";
    size_t first = line.find_first_not_of(k_trimmed);
    if (first == line.npos) {
      continue;
    }
    line = line.substr(first, line.find_last_not_of(k_trimmed) - first + 1);
    // Only a '#' that starts the line makes a comment; "requirepass a#b" keeps its '#'.
    if (line.starts_with('#')) {
      continue;
    }
    if (!split_args(line, words)) {
      return Unexpected{ConfigError{std::string(file), line_number,
                                    std::string(k_unbalanced_quotes), std::string(line)}};
    }
    if (words.empty()) {
      continue;
    }
    Directive directive;
    directive.name = to_lower(words[0]);
    directive.args.assign(std::make_move_iterator(words.begin() + 1),
                          std::make_move_iterator(words.end()));
    directive.file = std::string(file);
    directive.line = line_number;
    directive.text = std::string(line);
    directives.push_back(std::move(directive));
  }
  return directives;
}

Expected<std::vector<Directive>, ConfigError> expand_includes(ConfigFilesystem& fs,
                                                              std::vector<Directive> directives) {
  IncludeExpander expander(fs);
  if (auto error = expander.expand(directives, 0)) {
    return Unexpected{std::move(*error)};
  }
  return expander.take();
}

Expected<std::vector<Directive>, ConfigError> read_config_file(ConfigFilesystem& fs,
                                                               const std::string& path) {
  auto text = fs.read_file(path);
  if (!text) {
    return Unexpected{ConfigError{
        path, 0, fmt::format("Fatal error, can't open config file '{}': {}", path, text.error()),
        ""}};
  }
  auto directives = parse_config_text(*text, path);
  if (!directives) {
    return directives;
  }
  return expand_includes(fs, std::move(*directives));
}

Expected<CommandLine, ConfigError> parse_command_line(std::span<const std::string> args) {
  // Valkey appends options to its config text, one line per `--name`, and appends each
  // following word to the current line; words before any option form a first line of
  // their own. Lines are rebuilt here and read the same way.
  struct Line {
    std::vector<std::string> words;
    std::string text;
  };
  CommandLine result;
  size_t i = 0;
  if (!args.empty() && !args[0].starts_with('-')) {
    result.config_file = args[0];
    i = 1;
  }
  std::vector<Line> lines(1);
  bool value_expected = false;
  for (; i < args.size(); ++i) {
    const std::string& arg = args[i];
    bool first_or_last = i == 0 || i + 1 == args.size();
    if (arg == "-" && first_or_last) {
      result.config_from_stdin = true;
      continue;
    }
    if (!value_expected && arg.starts_with("--")) {
      Line line;
      line.text = arg;
      if (!split_args(std::string_view(arg).substr(2), line.words)) {
        int ordinal = static_cast<int>(lines.size());
        return Unexpected{ConfigError{std::string(k_command_line_source), ordinal,
                                      std::string(k_unbalanced_quotes), arg}};
      }
      std::vector<std::string> whole;
      bool single_word = split_args(arg, whole) && whole.size() == 1;
      value_expected = single_word;
      if (single_word) {
        bool next_is_option = i + 1 < args.size() && args[i + 1].starts_with("--");
        bool is_last = i + 1 == args.size();
        // Scripts that build `--save $SAVE` from an empty list produce a bare --save.
        if (iequals(arg, "--save") && (next_is_option || is_last)) {
          line.words.emplace_back();
          line.text += " \"\"";
          value_expected = !next_is_option;
        } else if (iequals(arg, "--sentinel") && next_is_option) {
          value_expected = false;
        }
      }
      lines.push_back(std::move(line));
      continue;
    }
    lines.back().words.push_back(arg);
    lines.back().text += lines.back().text.empty() ? arg : " " + shell_word(arg);
    value_expected = false;
  }

  int ordinal = 0;
  for (Line& line : lines) {
    if (line.words.empty()) {
      continue;
    }
    Directive directive;
    directive.name = to_lower(line.words[0]);
    directive.args.assign(std::make_move_iterator(line.words.begin() + 1),
                          std::make_move_iterator(line.words.end()));
    directive.file = std::string(k_command_line_source);
    directive.line = ++ordinal;
    directive.text = std::move(line.text);
    result.directives.push_back(std::move(directive));
  }
  return result;
}

Expected<std::vector<Directive>, ConfigError> load_config(ConfigFilesystem& fs,
                                                          const CommandLine& command_line,
                                                          std::string_view stdin_text) {
  std::vector<Directive> all;
  if (!command_line.config_file.empty()) {
    auto text = fs.read_file(command_line.config_file);
    if (!text) {
      return Unexpected{ConfigError{command_line.config_file, 0,
                                    fmt::format("Fatal error, can't open config file '{}': {}",
                                                command_line.config_file, text.error()),
                                    ""}};
    }
    auto parsed = parse_config_text(*text, command_line.config_file);
    if (!parsed) {
      return parsed;
    }
    all = std::move(*parsed);
  }
  if (command_line.config_from_stdin) {
    auto parsed = parse_config_text(stdin_text, k_stdin_source);
    if (!parsed) {
      return parsed;
    }
    all.insert(all.end(), std::make_move_iterator(parsed->begin()),
               std::make_move_iterator(parsed->end()));
  }
  all.insert(all.end(), command_line.directives.begin(), command_line.directives.end());
  // One pass over everything: a `dir` in the file moves where command-line includes resolve.
  return expand_includes(fs, std::move(all));
}

std::optional<uint64_t> parse_memory(std::string_view text) {
  if (text.starts_with('-')) {
    return std::nullopt;
  }
  size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') {
    ++digits;
  }
  std::string_view unit = text.substr(digits);
  uint64_t multiplier = 0;
  if (unit.empty() || iequals(unit, "b")) {
    multiplier = 1;
  } else if (iequals(unit, "k")) {
    multiplier = 1000;
  } else if (iequals(unit, "kb")) {
    multiplier = 1024;
  } else if (iequals(unit, "m")) {
    multiplier = 1000 * 1000;
  } else if (iequals(unit, "mb")) {
    multiplier = 1024 * 1024;
  } else if (iequals(unit, "g")) {
    multiplier = 1000ull * 1000 * 1000;
  } else if (iequals(unit, "gb")) {
    multiplier = 1024ull * 1024 * 1024;
  } else {
    return std::nullopt;
  }
  if (digits >= 128) {
    return std::nullopt;
  }
  // Mirrors memtoull(): no digits reads as 0 ("", "kb"), too many digits saturate as
  // strtoull() does, and the unit multiplication wraps modulo 2^64.
  uint64_t value = 0;
  for (size_t i = 0; i < digits; ++i) {
    uint64_t digit = static_cast<uint64_t>(text[i] - '0');
    if (value > (UINT64_MAX - digit) / 10) {
      value = UINT64_MAX;
      break;
    }
    value = value * 10 + digit;
  }
  return value * multiplier;
}

}  // namespace keyshift::engine
