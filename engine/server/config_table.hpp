#pragma once

#include "engine/server/config.hpp"
#include "engine/server/config_file.hpp"
#include "engine/util/expected.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace keyshift::engine {

/// Applies directives in order on top of `config`, as valkey-server loads its configuration.
/// Unknown directives and bad values fail with Valkey's message, and so do directives
/// keyshift cannot honour where ignoring them would open access or lose data (ACL users,
/// rename-command, appendonly yes, ...; see ARCHITECTURE.md); the other directives Valkey
/// knows but keyshift does not implement are kept in `config.unimplemented_settings` and
/// reported in `warnings` ("file:line: ..."). `config` is only changed when everything
/// applies.
std::optional<ConfigError> apply_directives(std::span<const Directive> directives,
                                            EngineConfig& config,
                                            std::vector<std::string>& warnings);

/// CONFIG GET: the settings whose name or alias matches any of `patterns` (globs, case
/// ignored; hidden settings only by exact name), with values formatted as Valkey does.
std::vector<std::pair<std::string, std::string>> config_get(const EngineConfig& config,
                                                            std::span<const std::string> patterns);

/// Where the client running CONFIG SET is; `enable-protected-configs local` allows only local.
enum class ClientLocality : uint8_t { remote, local };

/// CONFIG SET name value [name value ...], all or nothing; values apply_directives() would
/// refuse are refused here too. Returns the primary names whose
/// value changed, for the server to act on (rebind, ...; it may restore a saved copy if that
/// fails, as Valkey does), or the error reply (e.g. "ERR Unknown option or number of
/// arguments for CONFIG SET - 'x'") with `config` untouched.
Expected<std::vector<std::string_view>, std::string> config_set(
    EngineConfig& config, std::span<const std::string> name_value_pairs, ClientLocality locality);

/// The settings that differ from Valkey's defaults as config-file text, one directive per
/// line, which apply_directives() reads back to the same values (a base for CONFIG REWRITE).
std::string render_config(const EngineConfig& config);

/// How a directive's arguments are parsed and its value printed.
enum class DirectiveType : uint8_t {
  boolean,      ///< yes or no
  integer,      ///< decimal within [lower, upper]
  memory,       ///< bytes with an optional unit (see parse_memory()), or N% with k_flag_percent
  octal,        ///< octal digits (unixsocketperm)
  enumeration,  ///< one of `choices`; several, OR-ed together, with k_flag_multi_arg
  string,       ///< free text, possibly checked by `parser`
  special,      ///< its own syntax, handled by `parser` (save, bind, ...)
  statement,    ///< a config-file-only statement with no value (include, rename-command, ...)
};

/// A directive cannot be changed by CONFIG SET.
inline constexpr uint16_t k_flag_immutable = 1 << 0;
/// The value is a list of words (save, bind, ...).
inline constexpr uint16_t k_flag_multi_arg = 1 << 1;
/// Left out of CONFIG GET patterns; only its exact name shows it.
inline constexpr uint16_t k_flag_hidden = 1 << 2;
/// Holds a secret; redact it from logs and MONITOR.
inline constexpr uint16_t k_flag_sensitive = 1 << 3;
/// CONFIG SET needs `enable-protected-configs`.
inline constexpr uint16_t k_flag_protected = 1 << 4;
/// An old name Valkey still accepts in a file and ignores.
inline constexpr uint16_t k_flag_deprecated = 1 << 5;
/// A memory value that may also be given as a percentage ("10%").
inline constexpr uint16_t k_flag_percent = 1 << 6;
/// Bounds are compared as unsigned 64-bit numbers (Valkey's unsigned field types).
inline constexpr uint16_t k_flag_unsigned = 1 << 7;
/// keyshift's own setting, not Valkey's: always hidden too, so that CONFIG GET * lists
/// exactly Valkey's settings.
inline constexpr uint16_t k_flag_keyshift = 1 << 8;
/// Kept as a value, but read where it is used (the replica link): no "not implemented"
/// warning.
inline constexpr uint16_t k_flag_read_kept = 1 << 9;

/// One word of an enumeration and the bits it stands for.
struct EnumChoice {
  std::string_view name;
  int value = 0;
};

/// Reads and writes the EngineConfig field behind an implemented directive, in CONFIG GET
/// form.
struct FieldAccess {
  std::string (*get)(const EngineConfig&) = nullptr;
  void (*set)(EngineConfig&, std::string_view value) = nullptr;
};

/// Checks the arguments of a special or validated directive and returns its CONFIG GET form
/// or Valkey's error; `current` is the present value, for directives that update it in part.
using DirectiveParser = Expected<std::string, std::string> (*)(std::span<const std::string> args,
                                                               std::string_view current);

/// What keyshift knows about one Valkey directive.
struct DirectiveSpec {
  std::string_view name;
  std::string_view alias;  ///< an older name for the same setting, or empty
  DirectiveType type = DirectiveType::string;
  uint16_t flags = 0;
  std::string_view default_value;  ///< as CONFIG GET prints it on a fresh Valkey 8.0
  int64_t lower = 0;               ///< numeric bounds, as Valkey's long long
  int64_t upper = 0;
  std::span<const EnumChoice> choices;
  DirectiveParser parser = nullptr;
  FieldAccess field;  ///< empty when keyshift does not implement the directive
  int min_args = 0;   ///< statements only: accepted argument counts, max -1 for no limit
  int max_args = 0;

  /// True when keyshift acts on the directive (it maps to an EngineConfig field).
  bool implemented() const { return field.get != nullptr; }
  /// True when CONFIG SET may change it.
  bool mutable_at_runtime() const {
    return type != DirectiveType::statement && (flags & k_flag_immutable) == 0;
  }
  /// True for settings CONFIG GET/SET know (everything but statements and deprecated names).
  bool is_setting() const { return type != DirectiveType::statement; }
};

/// Every directive valkey-server 8.0 accepts, in the order of Valkey's table, followed by
/// keyshift's own settings (k_flag_keyshift), the file-only statements and the deprecated
/// names.
std::span<const DirectiveSpec> directive_table();

/// The directive called `name` or aliased so, ignoring case; nullptr when unknown.
const DirectiveSpec* find_directive(std::string_view name);

/// The value of `spec` in `config`, formatted as CONFIG GET prints it.
std::string directive_value(const DirectiveSpec& spec, const EngineConfig& config);

}  // namespace keyshift::engine
