#pragma once

#include <string>
#include <string_view>

namespace keyshift::engine {

/// True if `a` and `b` are equal ignoring ASCII case (Valkey's strcasecmp in the C locale:
/// bytes >= 0x80 compare as they are).
bool iequals(std::string_view a, std::string_view b);

/// `c` lower-cased if it is an ASCII capital; inline because command lookup folds every
/// request's name with it.
inline char ascii_lower(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

/// `c` upper-cased if it is an ASCII small letter.
inline char ascii_upper(char c) {
  return c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c;
}

/// `s` with ASCII capitals lower-cased.
std::string to_lower(std::string_view s);

/// `s` with ASCII small letters upper-cased.
std::string to_upper(std::string_view s);

/// The part of `s` before its first NUL: Valkey reads some arguments (cursors, option
/// words, type names) as C strings, so whatever follows a NUL is invisible to it.
inline std::string_view c_string(std::string_view s) {
  return s.substr(0, s.find('\0'));
}

/// Valkey's strcasecmp(arg, keyword) on an argument: `arg` read as a C string, ASCII case
/// ignored.
inline bool is_keyword(std::string_view arg, std::string_view keyword) {
  return iequals(c_string(arg), keyword);
}

/// The value of hexadecimal digit `c` (either case), or -1.
inline int hex_digit_value(char c) {
  if (c >= '0' && c <= '9') {
    return c - '0';
  }
  if (c >= 'a' && c <= 'f') {
    return c - 'a' + 10;
  }
  if (c >= 'A' && c <= 'F') {
    return c - 'A' + 10;
  }
  return -1;
}

/// isspace() in the C locale: blank, \t, \n, \v, \f, \r.
inline bool is_c_space(char c) {
  return c == ' ' || (c >= '\t' && c <= '\r');
}

}  // namespace keyshift::engine
