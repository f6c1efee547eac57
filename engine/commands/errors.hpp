#pragma once

#include <string_view>

namespace keyshift::engine::errors {

// Error replies exactly as Valkey 8 words them (without the leading '-').
inline constexpr std::string_view k_syntax = "ERR syntax error";
inline constexpr std::string_view k_wrong_type =
    "WRONGTYPE Operation against a key holding the wrong kind of value";
inline constexpr std::string_view k_not_integer = "ERR value is not an integer or out of range";
inline constexpr std::string_view k_not_float = "ERR value is not a valid float";
inline constexpr std::string_view k_overflow = "ERR increment or decrement would overflow";
inline constexpr std::string_view k_incr_float_nan = "ERR increment would produce NaN or Infinity";
inline constexpr std::string_view k_no_such_key = "ERR no such key";
inline constexpr std::string_view k_out_of_range = "ERR index out of range";
inline constexpr std::string_view k_same_object =
    "ERR source and destination objects are the same";
inline constexpr std::string_view k_db_index_out_of_range = "ERR DB index is out of range";
inline constexpr std::string_view k_invalid_db_index = "ERR invalid DB index";
inline constexpr std::string_view k_noauth = "NOAUTH Authentication required.";
inline constexpr std::string_view k_wrongpass =
    "WRONGPASS invalid username-password pair or user is disabled.";
inline constexpr std::string_view k_auth_no_password =
    "ERR AUTH <password> called without any password configured for the default user. "
    "Are you sure your configuration is correct?";
inline constexpr std::string_view k_oom = "OOM command not allowed when used memory > 'maxmemory'.";
inline constexpr std::string_view k_busykey = "BUSYKEY Target key name already exists.";
inline constexpr std::string_view k_noproto = "NOPROTO unsupported protocol version";
inline constexpr std::string_view k_string_too_long =
    "ERR string exceeds maximum allowed size (proto-max-bulk-len)";
inline constexpr std::string_view k_offset_out_of_range = "ERR offset is out of range";
inline constexpr std::string_view k_invalid_expire_prefix = "ERR invalid expire time in '";
inline constexpr std::string_view k_timeout_negative = "ERR timeout is negative";
inline constexpr std::string_view k_timeout_not_float = "ERR timeout is not a float or out of range";
inline constexpr std::string_view k_cursor_invalid = "ERR invalid cursor";
inline constexpr std::string_view k_nx_xx_gt_lt =
    "ERR NX and XX, GT or LT options at the same time are not compatible";
inline constexpr std::string_view k_gt_lt_nx =
    "ERR GT, LT, and/or NX options at the same time are not compatible";
inline constexpr std::string_view k_debug_not_allowed =
    "ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", you "
    "can run it from a local connection, otherwise you need to set this option in the "
    "configuration file, and then restart the server.";
inline constexpr std::string_view k_multi_not_allowed = "ERR Command not allowed inside a transaction";
inline constexpr std::string_view k_execabort =
    "EXECABORT Transaction discarded because of previous errors.";

}  // namespace keyshift::engine::errors
