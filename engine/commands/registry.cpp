#include "engine/commands/registry.hpp"

#include "engine/util/strings.hpp"

namespace keyshift::engine {

size_t CommandRegistry::CaseInsensitiveHash::operator()(std::string_view s) const {
  uint64_t h = 1469598103934665603ull;
  for (char c : s) {
    h = (h ^ static_cast<uint8_t>(ascii_lower(c))) * 1099511628211ull;
  }
  return static_cast<size_t>(h);
}

bool CommandRegistry::CaseInsensitiveEqual::operator()(std::string_view a,
                                                       std::string_view b) const {
  return iequals(a, b);
}

CommandRegistry::CommandRegistry() = default;
CommandRegistry::~CommandRegistry() = default;

void CommandRegistry::add(std::span<const CommandSpec> specs) {
  for (const CommandSpec& spec : specs) {
    auto cmd = std::make_unique<Command>();
    cmd->spec = spec;
    cmd->full_name = std::string(spec.name);
    cmd->id = static_cast<uint32_t>(m_all.size());
    size_t bar = spec.name.find('|');
    if (bar != std::string_view::npos) {
      auto it = m_by_name.find(spec.name.substr(0, bar));
      if (it != m_by_name.end()) {
        cmd->parent = it->second;
        it->second->subcommands.push_back(cmd.get());
      }
    } else {
      m_top.push_back(cmd.get());
      m_live_top.push_back(cmd.get());
      m_live[cmd->full_name] = cmd.get();
    }
    m_by_name[cmd->full_name] = cmd.get();
    m_all.push_back(std::move(cmd));
  }
}

Command* CommandRegistry::find(std::string_view name) const {
  auto it = m_live.find(name);
  return it == m_live.end() ? nullptr : it->second;
}

Command* CommandRegistry::find_original(std::string_view name) const {
  if (name.find('|') != std::string_view::npos) {
    return nullptr;
  }
  auto it = m_by_name.find(name);
  return it == m_by_name.end() ? nullptr : it->second;
}

RenameStatus CommandRegistry::rename(std::string_view from, std::string_view to) {
  auto it = m_live.find(from);
  if (it == m_live.end()) {
    return RenameStatus::no_such_command;
  }
  Command* cmd = it->second;
  // Valkey deletes the old name before adding the new one, so renaming a command to its own
  // name (in another case) is allowed.
  m_live.erase(it);
  if (!to.empty() && !m_live.emplace(std::string(to), cmd).second) {
    return RenameStatus::target_exists;
  }
  m_live_top.clear();
  for (Command* top : m_top) {
    for (const auto& [name, live] : m_live) {
      if (live == top) {
        m_live_top.push_back(top);
        break;
      }
    }
  }
  return RenameStatus::ok;
}

Command* CommandRegistry::find_sub(const Command& container, std::string_view sub) const {
  if (sub.size() > 64) {
    return nullptr;
  }
  char buf[160];
  size_t n = container.full_name.size();
  container.full_name.copy(buf, n);
  buf[n] = '|';
  sub.copy(buf + n + 1, sub.size());
  auto it = m_by_name.find(std::string_view(buf, n + 1 + sub.size()));
  return it == m_by_name.end() ? nullptr : it->second;
}

void CommandRegistry::reset_stats() {
  for (auto& c : m_all) {
    c->stats = CommandStats{};
  }
}

}  // namespace keyshift::engine
