#pragma once

#include "engine/util/expected.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace keyshift::engine {

/// One statement of a valkey.conf/redis.conf or of the command line, after unquoting.
struct Directive {
  std::string name;               ///< lower-cased, e.g. "maxmemory"
  std::vector<std::string> args;  ///< unquoted arguments
  std::string file;               ///< file it came from, k_stdin_source or k_command_line_source
  int line = 0;                   ///< 1-based line in `file`; for options, their ordinal
  std::string text;               ///< the line as written, for error reports
};

/// Why a configuration cannot be loaded. `line` is 0 when no line is involved (a missing
/// top-level file).
struct ConfigError {
  std::string file;
  int line = 0;
  std::string message;  ///< Valkey's wording, e.g. "Bad directive or wrong number of arguments"
  std::string text;     ///< the offending line as written, if any
};

/// `Directive::file` of directives that came from command-line options.
inline constexpr std::string_view k_command_line_source = "(command line)";
/// `Directive::file` of directives read from standard input.
inline constexpr std::string_view k_stdin_source = "(stdin)";

/// The filesystem as the config reader sees it; injected so tests run on memory.
class ConfigFilesystem {
 public:
  virtual ~ConfigFilesystem() = default;
  /// The whole file, or why it cannot be read (strerror wording).
  virtual Expected<std::string, std::string> read_file(const std::string& path) = 0;
  /// Paths matching the glob `pattern`, sorted; empty when nothing matches.
  virtual std::vector<std::string> glob(const std::string& pattern) = 0;
  /// The process working directory, against which relative paths resolve.
  virtual std::string current_directory() = 0;
};

/// The machine's filesystem (open/read, glob(3), getcwd).
class RealConfigFilesystem final : public ConfigFilesystem {
 public:
  Expected<std::string, std::string> read_file(const std::string& path) override;
  std::vector<std::string> glob(const std::string& pattern) override;
  std::string current_directory() override;
};

/// Files held in memory, for tests. Paths are normalised lexically; glob matches each path
/// component like glob(3) does (a wildcard does not cross '/' nor match a leading '.').
class MemoryConfigFilesystem final : public ConfigFilesystem {
 public:
  /// Starts empty with `cwd` (absolute) as the working directory.
  explicit MemoryConfigFilesystem(std::string cwd = "/");
  /// Creates or replaces a file; a relative `path` is taken from the working directory.
  void add_file(std::string_view path, std::string contents);

  Expected<std::string, std::string> read_file(const std::string& path) override;
  std::vector<std::string> glob(const std::string& pattern) override;
  std::string current_directory() override { return m_cwd; }

 private:
  std::string absolute(std::string_view path) const;

  std::string m_cwd;
  std::map<std::string, std::string> m_files;
};

/// What followed `serve` on the command line, read the way valkey-server reads its argv.
struct CommandLine {
  std::string config_file;            ///< first argument unless it starts with '-'; else empty
  bool config_from_stdin = false;     ///< a lone "-" first or last: also read config from stdin
  std::vector<Directive> directives;  ///< `--name value...` options, in order
};

/// Splits config text into directives exactly as valkey-server reads a file: lines trimmed,
/// '#' lines and blank lines skipped, words unquoted with split_args(), names lower-cased.
/// `include` lines are kept as directives (see expand_includes()).
Expected<std::vector<Directive>, ConfigError> parse_config_text(std::string_view text,
                                                                std::string_view file);

/// Replaces each `include PATH` with the directives of the file(s) it names, recursively.
/// As in Valkey, a relative PATH is taken from the working directory, which a preceding
/// `dir` changes; a pattern with * ? or [ may match nothing, a plain path must exist.
Expected<std::vector<Directive>, ConfigError> expand_includes(ConfigFilesystem& fs,
                                                              std::vector<Directive> directives);

/// Reads the config file at `path` and everything it includes.
Expected<std::vector<Directive>, ConfigError> read_config_file(ConfigFilesystem& fs,
                                                               const std::string& path);

/// Reads `keyshift serve` arguments as valkey-server reads argv: an optional file first,
/// then `--name` starts a directive and the words after it are its arguments (the first
/// word after a bare `--name` is taken as its value even if it starts with "--"), and
/// `--save` directly followed by another option means `save ""`.
Expected<CommandLine, ConfigError> parse_command_line(std::span<const std::string> args);

/// Everything valkey-server would load for `command_line`, in its order: the file, then
/// `stdin_text` (when config_from_stdin), then the options; includes expanded.
Expected<std::vector<Directive>, ConfigError> load_config(ConfigFilesystem& fs,
                                                          const CommandLine& command_line,
                                                          std::string_view stdin_text = {});

/// Bytes in a memory amount as Valkey's memtoull() reads it: digits with an optional
/// case-insensitive unit b, k (1000), kb (1024), m, mb, g, gb; nullopt on anything else.
std::optional<uint64_t> parse_memory(std::string_view text);

}  // namespace keyshift::engine
