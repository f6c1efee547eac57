#pragma once

#include "compat/kb/knowledge_base.hpp"
#include "compat/verify/side.hpp"
#include "engine/resp/resp_value.hpp"
#include "engine/util/expected.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

// `keyshift verify commands`: do two servers answer alike? Each side's command table (from
// COMMAND, or a knowledge-base profile), then the same generated cases run on both live
// sides, in keys under a prefix of its own, replies compared; plus CONFIG GET *, INFO fields,
// HELLO and CLIENT INFO shapes.
namespace keyshift::compat {

/// One generated call of a command.
struct CommandCase {
  std::string command;  ///< "set", "client|list"
  std::string kind;     ///< "minimal", "with NX", "alternative 2", "wrong arity", "wrong type"
  std::string fixture;  ///< the type of the key the call's first key is: "string", "list", ...
  std::vector<std::string> args;
};

/// The cases of `row` (at most `max_cases`), keys named under `prefix`. Empty when its syntax
/// is not known.
std::vector<CommandCase> generate_cases(const kb::KbCommand& row, const std::string& prefix,
                                        size_t max_cases = 8);

/// Why a command's cases were not run.
std::string_view skip_reason(const kb::KbCommand& row, bool read_only);

/// How a command compares.
enum class CommandVerdict : uint8_t {
  same,
  differs,        ///< a case's replies differ (type, value or error class)
  error_text,     ///< only the text of an error differs
  shape_differs,  ///< the table rows differ (arity, flags, key range)
  missing,        ///< the target does not have it
  target_only,    ///< only the target has it
  skipped,        ///< not run (admin, blocking, connection state, ...)
};

/// The verdict's name in reports.
std::string_view command_verdict_name(CommandVerdict v);

/// What one command came to.
struct CommandResult {
  std::string command;
  CommandVerdict verdict = CommandVerdict::same;
  uint64_t cases = 0;
  std::string detail;        ///< what differs, or why skipped
  std::string example;       ///< the first differing case's arguments
  std::string source_reply;  ///< as redis-cli shows it
  std::string target_reply;
};

/// A difference outside the command replies (CONFIG, INFO, HELLO, CLIENT INFO, COMMAND DOCS).
struct ShapeDifference {
  std::string area;  ///< "config", "info", "hello", "client info", "docs" (COMMAND DOCS)
  std::string name;  ///< directive or field
  std::string what;  ///< "missing on the target", "only on the target", "default differs: a -> b"
};

/// How to verify.
struct VerifyCommandsOptions {
  std::string prefix = "{keyshift-verify}:";
  /// Skip every case of a write command, create no fixtures: safe against production.
  bool read_only = false;
  /// Only commands whose name starts with this (e.g. "hash" group via --group is separate).
  std::vector<std::string> only;
  /// Called after each command; may be empty.
  std::function<void(size_t done, size_t total)> progress;
};

/// What verify commands found.
struct VerifyCommandsReport {
  std::string source;
  std::string target;
  bool source_live = false;
  bool target_live = false;
  std::vector<CommandResult> commands;
  std::vector<ShapeDifference> shapes;
  std::map<CommandVerdict, uint64_t> counts;
  uint64_t cases_run = 0;
  bool read_only = false;
  double seconds = 0;
  /// True when nothing differs, is missing or only on the target.
  bool same() const;
};

/// One side of verify commands: a live server (or the embedded engine), or a profile.
struct CommandsSide {
  std::string name;
  std::unique_ptr<VerifySide> live;  ///< null for a profile
  std::optional<kb::ProfileId> profile;
};

/// Opens a side: a server URL, a profile name ("valkey-8.0"), or "embedded" (an empty
/// in-process engine).
engine::Expected<CommandsSide, std::string> open_commands_side(const std::string& spec);

/// Runs the comparison; an error when a side cannot be read or the prefix holds keys.
engine::Expected<VerifyCommandsReport, std::string> verify_commands(
    CommandsSide& source, CommandsSide& target, const VerifyCommandsOptions& options);

/// The report as text or JSON.
std::string render_verify_commands_text(const VerifyCommandsReport& r, bool all);
std::string render_verify_commands_json(const VerifyCommandsReport& r);

}  // namespace keyshift::compat
