#pragma once

// Doubles as Valkey 8 prints them in replies (addReplyDouble, sorted-set scores, listpack
// score entries): "inf", "-inf", "nan", "0", "-0"; integral values within +-2^62 as plain
// integers ("100000000000000000" for 1e17); everything else as fpconv's Grisu2 text, which
// is the shortest round-trip form in nearly every case ("0.1", "1.5", "1e+300", "-1.2e-05").
// Redis 7.0 and older printed "%.17g" instead ("0.10000000000000001").

#include <cstddef>
#include <string>
#include <string_view>

namespace keyshift::engine {

/// Room that format_double_reply needs.
inline constexpr size_t k_double_text_max = 32;

/// Writes Valkey 8's reply text of `v` (its d2string) into `buf` (at least
/// k_double_text_max bytes); returns the length.
size_t format_double_reply(double v, char* buf);
/// Valkey 8's reply text of `v`.
std::string double_reply_text(double v);
/// True when Valkey stores `v` as an integer (its double2ll): integral and within +-2^62;
/// `out` receives the integer. -0.0 counts as 0.
bool double_to_int_exact(double v, long long& out);
/// `v` as "%.17Lg" prints it with "inf"/"-inf"/"nan" spelled out (Valkey's ld2string in
/// LD_STR_AUTO mode, which ZSCAN uses for skiplist-encoded sorted sets).
std::string double_17g_text(double v);

}  // namespace keyshift::engine
