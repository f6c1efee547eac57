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

/// The command table of one engine, looked up case-insensitively.
class CommandRegistry {
 public:
  CommandRegistry();
  ~CommandRegistry();
  CommandRegistry(const CommandRegistry&) = delete;
  CommandRegistry& operator=(const CommandRegistry&) = delete;

  /// Adds a family's table.
  void add(std::span<const CommandSpec> specs);
  /// The top-level command named `name` (any case), or nullptr.
  Command* find(std::string_view name) const;
  /// The subcommand `sub` of `container` (any case), or nullptr.
  Command* find_sub(const Command& container, std::string_view sub) const;
  /// Every top-level command, in registration order.
  const std::vector<Command*>& commands() const { return m_top; }
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
  std::vector<Command*> m_top;
  std::unordered_map<std::string, Command*, CaseInsensitiveHash, CaseInsensitiveEqual> m_by_name;
};

/// Registers every command family (called once per engine).
void register_all_families(CommandRegistry& registry);

}  // namespace keyshift::engine
