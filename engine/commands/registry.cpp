#include "engine/commands/registry.hpp"

#include "engine/util/strings.hpp"

#include <cstring>

namespace keyshift::engine {

namespace {

constexpr uint64_t k_fnv_offset = 1469598103934665603ull;
constexpr uint64_t k_fnv_prime = 1099511628211ull;

// The first eight bytes of a name, zero-padded: compared before the rest.
uint64_t name_prefix(const char* p, size_t n) {
  uint64_t v = 0;
  std::memcpy(&v, p, n < 8 ? n : 8);
  return v;
}

}  // namespace

size_t CommandRegistry::CaseInsensitiveHash::operator()(std::string_view s) const {
  uint64_t h = k_fnv_offset;
  for (char c : s) {
    h = (h ^ static_cast<uint8_t>(ascii_lower(c))) * k_fnv_prime;
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
    }
    m_by_name[cmd->full_name] = cmd.get();
    m_all.push_back(std::move(cmd));
  }
  rebuild_index();
}

void CommandRegistry::rebuild_index() {
  size_t slots = 16;
  while (slots < m_all.size() * 2) {
    slots *= 2;
  }
  m_index.assign(slots, Slot{});
  char lower[k_max_indexed_name];
  for (const auto& cmd : m_all) {
    const std::string& name = cmd->full_name;
    if (name.size() > k_max_indexed_name) {
      continue;  // found through the map
    }
    uint64_t h = k_fnv_offset;
    for (size_t i = 0; i < name.size(); ++i) {
      lower[i] = ascii_lower(name[i]);
      h = (h ^ static_cast<uint8_t>(lower[i])) * k_fnv_prime;
    }
    // A later registration of the same name wins, as in the map.
    size_t mask = slots - 1;
    size_t i = h & mask;
    uint64_t prefix = name_prefix(lower, name.size());
    while (m_index[i].cmd != nullptr &&
           !(m_index[i].length == name.size() && iequals(m_index[i].cmd->full_name, name))) {
      i = (i + 1) & mask;
    }
    m_index[i] = Slot{prefix, static_cast<uint32_t>(name.size()), m_by_name.at(name)};
  }
}

Command* CommandRegistry::find_lower(const char* lower, size_t n, uint64_t h) const {
  if (m_index.empty()) {
    return nullptr;
  }
  size_t mask = m_index.size() - 1;
  uint64_t prefix = name_prefix(lower, n);
  for (size_t i = h & mask;; i = (i + 1) & mask) {
    const Slot& slot = m_index[i];
    if (slot.cmd == nullptr) {
      return nullptr;
    }
    if (slot.length == n && slot.prefix == prefix &&
        (n <= 8 || iequals(std::string_view(slot.cmd->full_name).substr(8),
                           std::string_view(lower + 8, n - 8)))) {
      return slot.cmd;
    }
  }
}

Command* CommandRegistry::find(std::string_view name) const {
  if (name.size() > k_max_indexed_name) {
    if (name.find('|') != std::string_view::npos) {
      return nullptr;
    }
    auto it = m_by_name.find(name);
    return it == m_by_name.end() ? nullptr : it->second;
  }
  char lower[k_max_indexed_name];
  uint64_t h = k_fnv_offset;
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    if (c == '|') {
      return nullptr;  // a subcommand's full name is not a command
    }
    lower[i] = ascii_lower(c);
    h = (h ^ static_cast<uint8_t>(lower[i])) * k_fnv_prime;
  }
  return find_lower(lower, name.size(), h);
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
  size_t len = n + 1 + sub.size();
  if (len > k_max_indexed_name) {
    auto it = m_by_name.find(std::string_view(buf, len));
    return it == m_by_name.end() ? nullptr : it->second;
  }
  uint64_t h = k_fnv_offset;
  for (size_t i = 0; i < len; ++i) {
    buf[i] = ascii_lower(buf[i]);
    h = (h ^ static_cast<uint8_t>(buf[i])) * k_fnv_prime;
  }
  return find_lower(buf, len, h);
}

void CommandRegistry::reset_stats() {
  for (auto& c : m_all) {
    c->stats = CommandStats{};
  }
}

}  // namespace keyshift::engine
