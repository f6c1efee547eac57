#pragma once

#include <string>
#include <string_view>

// Unified diffs of text files, as `diff -u` prints them, for dry runs and reports.
namespace keyshift::migrate {

/// The unified diff from `before` to `after` with `context` lines around each change, headed
/// "--- before_header" / "+++ after_header"; empty when the texts are equal.
std::string unified_diff(std::string_view before, std::string_view after,
                         std::string_view before_header, std::string_view after_header,
                         int context = 3);

/// `text` with secrets replaced by "********": requirepass/masterauth/primaryauth and TLS key
/// passwords, ACL `>password` and `#hash` rules, PHP and .env values of keys naming a
/// password, `auth=` parameters and `user:password@` in URLs.
std::string redact_secrets(std::string_view text);

}  // namespace keyshift::migrate
