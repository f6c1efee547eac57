#pragma once

#include "compat/kb/knowledge_base.hpp"

#include <string>
#include <vector>

// What the knowledge base says about moving from one server line to another, and the
// knowledge base itself as text or JSON (`keyshift kb`).
namespace keyshift::compat::kb {

/// A command both lines have whose shape differs.
struct KbChange {
  const KbCommand* from = nullptr;
  const KbCommand* to = nullptr;
  std::vector<std::string> what;  ///< "arity -3 → -4", "option IFEQ only in the target", ...
};

/// How line `to` differs from line `from`, command by command.
struct KbDiff {
  ProfileId from;
  ProfileId to;
  /// Commands `from` has and `to` lacks, each with the oldest line of `to`'s project that has
  /// it (nullopt: none does).
  std::vector<std::pair<const KbCommand*, std::optional<ProfileId>>> missing;
  std::vector<const KbCommand*> target_only;
  std::vector<KbChange> changed;
  /// Behaviour notes that apply to `to` and not to `from`, or the other way round.
  std::vector<const KbNote*> notes;
};

/// Compares two lines' tables.
KbDiff diff_profiles(ProfileId from, ProfileId to);

/// The profiles, one per line, or a JSON array.
std::string render_profiles(bool json);
/// A profile's table.
std::string render_commands(ProfileId profile, bool json);
/// A diff.
std::string render_diff(const KbDiff& diff, bool json);
/// The behaviour notes (of `profile` only, when given).
std::string render_notes(std::optional<ProfileId> profile, bool json);

}  // namespace keyshift::compat::kb
