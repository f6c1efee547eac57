#pragma once

#include <cstdint>
#include <string_view>

namespace keyshift::engine {

/// Whether glob_match folds ASCII letters.
enum class GlobCase : uint8_t { sensitive, insensitive };

/// True when all of `text` matches `pattern` under Valkey's stringmatchlen() rules, shared by
/// KEYS, SCAN MATCH, CONFIG GET and PSUBSCRIBE: `*` any run, `?` one byte, `[abc]`, `[^abc]`,
/// `[a-z]` (reversed ranges allowed), and `\` to take the next byte literally.
bool glob_match(std::string_view pattern, std::string_view text,
                GlobCase mode = GlobCase::sensitive);

}  // namespace keyshift::engine
