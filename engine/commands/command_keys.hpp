#pragma once

#include "engine/commands/registry.hpp"

#include <cstddef>
#include <span>
#include <string_view>
#include <vector>

// Which arguments of a command are keys, from the command table's key specs: what COMMAND
// GETKEYS answers, for callers that rewrite or route commands (import's command stream).
namespace keyshift::engine {

/// The keys of one command line.
struct CommandKeys {
  bool known = false;             ///< the command (and subcommand) is in the table
  bool movable = false;           ///< its keys depend on its arguments (movablekeys)
  bool found = false;             ///< the positions below are complete (none for a keyless command)
  std::vector<size_t> positions;  ///< argv indexes of the keys, in order
  std::vector<uint32_t> flags;    ///< KeySpecFlag bits of each key (0 for keyshift's own)
};

/// The key positions of `argv` (argv[0] the command name) as COMMAND GETKEYS finds them.
CommandKeys command_key_positions(const CommandRegistry& registry,
                                  std::span<const std::string_view> argv);

/// The AclCategory bits of `c`: those its table row names plus the ones Valkey implies from
/// its flags (what COMMAND INFO reports and ACL rules select by).
uint32_t command_acl_categories(const Command& c);

}  // namespace keyshift::engine
