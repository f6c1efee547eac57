#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace keyshift::engine {

/// Strict decimal integer parse as Valkey's string2ll: no blanks, no '+', no leading zeros,
/// whole input, no overflow.
bool parse_i64(std::string_view s, int64_t& out);
/// Strict unsigned parse (string2ull semantics).
bool parse_u64(std::string_view s, uint64_t& out);
/// A SCAN cursor as Valkey's string2ull reads it (from the argument's first NUL on nothing
/// counts): a strict integer, negative ones rejected, else strtoull's lenient form (leading
/// C-locale blanks, a sign, leading zeros; "-1" wraps to 2^64-1 as in C).
bool parse_scan_cursor(std::string_view arg, uint64_t& out);
/// Parses a double as Valkey's getDoubleFromObject: whole input, no leading blank, not NaN.
bool parse_double(std::string_view s, double& out);
/// Parses a double as Valkey's string2d (scores, coordinates): whole input, no leading
/// blank, not NaN, no overflow to infinity and no underflow to zero.
bool parse_string2d(std::string_view s, double& out);
/// Parses a long double as Valkey's string2ld (INCRBYFLOAT).
bool parse_long_double(std::string_view s, long double& out);
/// Writes `v` in decimal into `buf` (at least 21 bytes); returns the length.
size_t format_i64(int64_t v, char* buf);
/// Decimal text of `v`.
std::string i64_to_string(int64_t v);
/// Formats a long double as Valkey does for INCRBYFLOAT replies (no exponent, trailing zeros
/// trimmed); returns false if it does not fit.
bool format_long_double_human(long double v, std::string& out);
/// Formats a double as Valkey's RESP double / "%.17g" forms ("inf", "-inf").
std::string format_double(double v);

}  // namespace keyshift::engine
