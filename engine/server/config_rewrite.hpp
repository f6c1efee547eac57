#pragma once

#include "engine/server/config.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace keyshift::engine {

/// CONFIG REWRITE's new file text from the old one, as Valkey's rewriteConfig(): lines of
/// settings keep their place with the current value, repeated or now-default ones are
/// blanked, settings that differ from their default and had no line are appended after the
/// signature comment, and unknown lines are kept as "# ??? " comments. With `user_lines`,
/// the `user` lines are replaced by those (in place, then appended; left-over ones blanked),
/// as Valkey's rewriteConfigUserOption writes the live users; without, they stay as written.
std::string rewrite_config_text(std::string_view old_text, const EngineConfig& config,
                                const std::vector<std::string>* user_lines = nullptr);

/// Rewrites the config file at `path` (which may not exist yet) for `config`, replacing it
/// atomically. Returns the errno of the first failure, or nothing on success.
std::optional<int> rewrite_config_file(const std::string& path, const EngineConfig& config,
                                       const std::vector<std::string>* user_lines = nullptr);

}  // namespace keyshift::engine
