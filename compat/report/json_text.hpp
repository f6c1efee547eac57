#pragma once

#include <string>
#include <string_view>

// Writing JSON by hand for reports: keys and values from RDB files are arbitrary bytes, and
// the output must stay valid JSON whatever they hold.
namespace keyshift::compat {

/// True when `bytes` is well-formed UTF-8 (no overlongs, surrogates or code points > U+10FFFF).
bool is_valid_utf8(std::string_view bytes);

/// Appends `text` (valid UTF-8) as a quoted JSON string; control bytes become \u00XX.
void append_json_string(std::string& out, std::string_view text);

/// Appends binary `bytes` as a JSON string when they are valid UTF-8, otherwise as
/// {"hex": "..."} (lowercase), the corpus' convention, so no byte is lost or mangled.
void append_json_bytes(std::string& out, std::string_view bytes);

}  // namespace keyshift::compat
