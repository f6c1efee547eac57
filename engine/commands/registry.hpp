#pragma once

#include "engine/commands/command.hpp"

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace keyshift::engine {

/// Per-command counters for INFO commandstats.
struct CommandStats {
  uint64_t calls = 0;
  uint64_t usec = 0;
  uint64_t rejected_calls = 0;
  uint64_t failed_calls = 0;
};

/// A registered command with its counters and, for containers, its subcommands.
struct Command {
  CommandSpec spec;
  std::string full_name;  // "get", "config|get"
  uint32_t id = 0;        // dense index in registration order (ACL permission bitmaps)
  CommandStats stats;
  Command* parent = nullptr;
  std::vector<Command*> subcommands;
  /// True for a container command such as CONFIG.
  bool is_container() const { return spec.handler == nullptr; }
};

/// What CommandRegistry::rename made of a `rename-command` directive.
enum class RenameStatus {
  ok,
  no_such_command,  ///< the old name is not (or no longer) in the table
  target_exists,    ///< the new name is already taken
};

/// The command table of one engine, looked up case-insensitively. Clients reach commands by
/// their live names, which `rename-command` changes; ACL rules, COMMAND replies and the
/// engine's own calls use the registered (original) names, as Valkey keeps its
/// orig_commands table beside server.commands.
class CommandRegistry {
 public:
  CommandRegistry();
  ~CommandRegistry();
  CommandRegistry(const CommandRegistry&) = delete;
  CommandRegistry& operator=(const CommandRegistry&) = delete;

  /// Adds a family's table.
  void add(std::span<const CommandSpec> specs);
  /// The top-level command clients reach as `name` (any case), or nullptr.
  Command* find(std::string_view name) const;
  /// The top-level command registered as `name` (any case), whatever it was renamed to.
  Command* find_original(std::string_view name) const;
  /// Valkey's rename-command: `from` (a live name) is reached as `to` from now on, or not
  /// at all when `to` is empty.
  RenameStatus rename(std::string_view from, std::string_view to);
  /// The subcommand `sub` of `container` (any case), or nullptr.
  Command* find_sub(const Command& container, std::string_view sub) const;
  /// Every top-level command, in registration order, renamed and disabled ones included.
  const std::vector<Command*>& commands() const { return m_top; }
  /// The top-level commands clients can reach (COMMAND, INFO commandstats), in registration
  /// order.
  const std::vector<Command*>& live_commands() const { return m_live_top; }
  /// Number of commands and subcommands (one more than the largest Command::id).
  size_t size() const { return m_all.size(); }
  /// Clears every command's counters (CONFIG RESETSTAT).
  void reset_stats();

 private:
  struct CaseInsensitiveHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const;
  };
  struct CaseInsensitiveEqual {
    using is_transparent = void;
    bool operator()(std::string_view a, std::string_view b) const;
  };

  std::vector<std::unique_ptr<Command>> m_all;
  using NameMap =
      std::unordered_map<std::string, Command*, CaseInsensitiveHash, CaseInsensitiveEqual>;

  std::vector<Command*> m_top;
  std::vector<Command*> m_live_top;
  NameMap m_by_name;  // registered names, "get" and "config|get"
  NameMap m_live;     // top-level names clients use
};

/// Registers every command family (called once per engine).
void register_all_families(CommandRegistry& registry);

}  // namespace keyshift::engine
