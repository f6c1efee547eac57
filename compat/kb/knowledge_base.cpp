#include "compat/kb/knowledge_base.hpp"

#include "engine/util/strings.hpp"

#include <algorithm>
#include <cctype>
#include <span>

namespace keyshift::compat::kb {
namespace {

#include "compat/kb/behaviour_notes.inc"
#include "compat/kb/command_tables.inc"

constexpr size_t k_profile_count = std::size(k_profile_infos);
static_assert(k_profile_count <= 32, "KbCommand::profiles is a 32-bit mask");

/// "7.4.2" → {7, 4}; nullopt when it does not start with major.minor.
std::optional<std::pair<int, int>> major_minor(std::string_view v) {
  int parts[2] = {0, 0};
  size_t i = 0;
  for (int& part : parts) {
    size_t start = i;
    while (i < v.size() && std::isdigit(static_cast<unsigned char>(v[i])) != 0) {
      part = part * 10 + (v[i] - '0');
      ++i;
    }
    if (i == start || i - start > 4) {
      return std::nullopt;
    }
    if (&part == &parts[0]) {
      if (i >= v.size() || v[i] != '.') {
        return std::nullopt;
      }
      ++i;
    }
  }
  return std::pair{parts[0], parts[1]};
}

std::optional<ProfileId> profile_of(std::string_view project, std::string_view version) {
  auto mm = major_minor(version);
  if (!mm) {
    return std::nullopt;
  }
  for (size_t i = 0; i < k_profile_count; ++i) {
    const KbProfileInfo& p = k_profile_infos[i];
    if (p.project != project) {
      continue;
    }
    auto pm = major_minor(p.name.substr(p.project.size() + 1));
    if (pm && *pm == *mm) {
      return ProfileId{static_cast<uint8_t>(i)};
    }
  }
  return std::nullopt;
}

/// "CONFIG GET" / "Config|Get" → "config|get".
std::string normalise_name(std::string_view name) {
  std::string out;
  out.reserve(name.size());
  for (char c : name) {
    out.push_back(c == ' ' ? '|' : static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  return out;
}

/// The profiles one word of a note's `applies` covers.
uint32_t applies_mask(std::string_view word) {
  uint32_t mask = 0;
  bool and_later = !word.empty() && word.back() == '+';
  if (and_later) {
    word.remove_suffix(1);
  }
  for (size_t i = 0; i < k_profile_count; ++i) {
    if (k_profile_infos[i].project == word) {
      mask |= 1u << i;
    }
  }
  if (mask != 0) {
    return mask;
  }
  for (size_t i = 0; i < k_profile_count; ++i) {
    if (k_profile_infos[i].name != word) {
      continue;
    }
    mask |= 1u << i;
    // Profiles are listed oldest first within a project.
    for (size_t j = i + 1; and_later && j < k_profile_count; ++j) {
      if (k_profile_infos[j].project == k_profile_infos[i].project) {
        mask |= 1u << j;
      }
    }
  }
  return mask;
}

}  // namespace

std::vector<ProfileId> all_profiles() {
  std::vector<ProfileId> out;
  for (size_t i = 0; i < k_profile_count; ++i) {
    out.push_back(ProfileId{static_cast<uint8_t>(i)});
  }
  return out;
}

const KbProfileInfo& profile_info(ProfileId id) {
  return k_profile_infos[id.index < k_profile_count ? id.index : 0];
}

std::optional<ProfileId> find_profile(std::string_view name) {
  for (std::string_view project : {std::string_view{"redis"}, std::string_view{"valkey"}}) {
    if (name.size() > project.size() && engine::iequals(name.substr(0, project.size()), project) &&
        (name[project.size()] == '-' || name[project.size()] == ' ')) {
      return profile_of(project, name.substr(project.size() + 1));
    }
  }
  return std::nullopt;
}

std::optional<ProfileId> profile_for_server(std::string_view server_name,
                                            std::string_view valkey_version,
                                            std::string_view redis_version) {
  if (engine::iequals(server_name, "valkey") || !valkey_version.empty()) {
    return profile_of("valkey", valkey_version.empty() ? redis_version : valkey_version);
  }
  return profile_of("redis", redis_version);
}

const KbCommand* find_command(ProfileId profile, std::string_view name) {
  std::string key = normalise_name(name);
  uint32_t bit = 1u << profile.index;
  auto lo =
      std::lower_bound(std::begin(k_command_rows), std::end(k_command_rows), key,
                       [](const KbCommand& row, const std::string& k) { return row.name < k; });
  for (auto it = lo; it != std::end(k_command_rows) && it->name == key; ++it) {
    if ((it->profiles & bit) != 0) {
      return &*it;
    }
  }
  return nullptr;
}

std::vector<const KbCommand*> commands_of(ProfileId profile) {
  std::vector<const KbCommand*> out;
  uint32_t bit = 1u << profile.index;
  for (const KbCommand& row : k_command_rows) {
    if ((row.profiles & bit) != 0) {
      out.push_back(&row);
    }
  }
  return out;
}

std::optional<ProfileId> first_profile_with(std::string_view project, std::string_view name) {
  for (ProfileId id : all_profiles()) {
    if (profile_info(id).project == project && find_command(id, name) != nullptr) {
      return id;
    }
  }
  return std::nullopt;
}

namespace {

/// The entry of `token` in `command.arguments` ("GET@6.2.0" or "NX"), or nullopt.
std::optional<std::string_view> argument_entry(const KbCommand& command, std::string_view token) {
  std::string_view rest = command.arguments;
  while (!rest.empty()) {
    size_t space = rest.find(' ');
    std::string_view item = rest.substr(0, space);
    rest = space == std::string_view::npos ? std::string_view{} : rest.substr(space + 1);
    size_t at = item.find('@');
    if (engine::iequals(item.substr(0, at), token)) {
      return item;
    }
  }
  return std::nullopt;
}

}  // namespace

bool has_argument(const KbCommand& command, std::string_view token) {
  return argument_entry(command, token).has_value();
}

std::string_view argument_since(const KbCommand& command, std::string_view token) {
  auto item = argument_entry(command, token);
  if (!item) {
    return {};
  }
  size_t at = item->find('@');
  return at == std::string_view::npos ? std::string_view{} : item->substr(at + 1);
}

std::vector<const KbNote*> notes() {
  std::vector<const KbNote*> out;
  for (const KbNote& n : k_note_rows) {
    out.push_back(&n);
  }
  return out;
}

bool applies_to(const KbNote& note, ProfileId profile) {
  uint32_t mask = 0;
  std::string_view rest = note.applies;
  while (!rest.empty()) {
    size_t space = rest.find(' ');
    mask |= applies_mask(rest.substr(0, space));
    rest = space == std::string_view::npos ? std::string_view{} : rest.substr(space + 1);
  }
  return (mask & (1u << profile.index)) != 0;
}

std::vector<const KbModuleFamily*> module_families() {
  std::vector<const KbModuleFamily*> out;
  for (const KbModuleFamily& f : k_module_family_rows) {
    out.push_back(&f);
  }
  return out;
}

const KbModuleFamily* module_family_of(std::string_view name) {
  for (const KbModuleFamily& f : k_module_family_rows) {
    if (!f.prefix.empty()) {
      if (name.size() > f.prefix.size() &&
          engine::iequals(name.substr(0, f.prefix.size()), f.prefix)) {
        return &f;
      }
      continue;
    }
    std::string_view rest = f.commands;
    while (!rest.empty()) {
      size_t space = rest.find(' ');
      if (engine::iequals(rest.substr(0, space), name)) {
        return &f;
      }
      rest = space == std::string_view::npos ? std::string_view{} : rest.substr(space + 1);
    }
  }
  return nullptr;
}

std::span<const KbRdbFacts> rdb_facts() {
  // RDB_VERSION and the RDB_TYPE_* list of each tag's src/rdb.h (types 16-19 came with Redis
  // 7.0, 20-21 with 7.2, 22-25 (hash metadata, field TTLs) and SLOT_INFO with 7.4; Redis 8
  // kept version 12); Valkey forked at 7.2.4 (version 11), numbers its own from 80 in 9.0
  // (valkey-io/valkey#2422) and adds Path Hashes at 81 in 9.2.
  static constexpr KbRdbFacts k_facts[] = {
      {"redis-6.2", 9, 9, 15, false, false, false, "redis 6.2 src/rdb.h"},
      {"redis-7.0", 10, 10, 19, false, false, false, "redis 7.0 src/rdb.h"},
      {"redis-7.2", 11, 11, 21, false, false, false, "redis 7.2 src/rdb.h"},
      {"redis-7.4", 12, 12, 25, true, true, false, "redis 7.4 src/rdb.h"},
      {"redis-8.0", 12, 12, 25, true, true, false, "redis 8.0 src/rdb.h"},
      {"redis-8.2", 12, 12, 25, true, true, false, "redis 8.2 src/rdb.h"},
      {"redis-8.4", 12, 12, 25, true, true, false, "redis 8.4 src/rdb.h"},
      {"valkey-7.2", 11, 11, 21, false, false, true, "valkey 7.2 src/rdb.h"},
      {"valkey-8.0", 11, 11, 21, false, false, true, "valkey 8.0 src/rdb.h"},
      {"valkey-8.1", 11, 11, 21, false, false, true,
       "valkey 8.1 src/rdb.h; rdb-version-check (valkey-io/valkey#1604)"},
      {"valkey-9.0", 80, 80, 21, true, false, true, "valkey 9.0 src/rdb.h; valkey-io/valkey#2422"},
      {"valkey-9.1", 80, 80, 21, true, false, true, "valkey 9.1 src/rdb.h"},
      {"valkey-9.2", 81, 81, 21, true, false, true, "valkey 9.2 src/rdb.h (Path Hashes)"},
  };
  return k_facts;
}

const KbRdbFacts* find_rdb_facts(std::string_view line) {
  size_t dash = line.find('-');
  if (dash == std::string_view::npos) {
    return nullptr;
  }
  std::string project = engine::to_lower(line.substr(0, dash));
  auto mm = major_minor(line.substr(dash + 1));
  if (!mm) {
    return nullptr;
  }
  // "7.4" and "7.4.2" name the line; "7.4x" does not.
  std::string_view rest = line.substr(dash + 1);
  size_t used = std::to_string(mm->first).size() + 1 + std::to_string(mm->second).size();
  if (rest.size() > used && rest[used] != '.') {
    return nullptr;
  }
  for (const KbRdbFacts& f : rdb_facts()) {
    auto fm = major_minor(f.line.substr(f.line.find('-') + 1));
    if (f.line.substr(0, f.line.find('-')) == project && fm && *fm == *mm) {
      return &f;
    }
  }
  return nullptr;
}

int rdb_version_written(ProfileId profile) {
  const KbRdbFacts* f = find_rdb_facts(profile_info(profile).name);
  return f != nullptr ? f->written : 0;
}

}  // namespace keyshift::compat::kb
