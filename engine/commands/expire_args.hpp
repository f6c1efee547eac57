#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace keyshift::engine {

/// Unit of a TTL argument.
enum class TtlUnit : uint8_t { seconds, milliseconds };

/// Turns a relative or absolute TTL argument into an absolute unix-ms time, with Valkey's
/// overflow rules; false when the time is invalid for `command` (the caller replies with
/// `invalid_expire_error`).
bool to_absolute_ms(int64_t value, TtlUnit unit, bool absolute, int64_t now_ms, int64_t& out,
                    bool allow_non_positive = false);
/// "ERR invalid expire time in '<command>' command"
std::string invalid_expire_error(std::string_view command);

}  // namespace keyshift::engine
