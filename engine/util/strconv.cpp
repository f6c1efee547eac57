#include "engine/util/strconv.hpp"

#include "engine/util/strings.hpp"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace keyshift::engine {

bool parse_u64(std::string_view s, uint64_t& out) {
  if (s.empty() || s.size() > 20) {
    return false;
  }
  if (s.size() == 1 && s[0] == '0') {
    out = 0;
    return true;
  }
  if (s[0] < '1' || s[0] > '9') {
    return false;
  }
  // Up to 19 digits cannot overflow 64 bits, so only a 20-digit text pays for the check
  // (every RESP length and integer a client or server parses goes through here).
  constexpr size_t k_safe_digits = 19;
  uint64_t v = 0;
  size_t safe = s.size() < k_safe_digits ? s.size() : k_safe_digits;
  for (size_t i = 0; i < safe; ++i) {
    auto d = static_cast<unsigned>(static_cast<unsigned char>(s[i]) - '0');
    if (d > 9) {
      return false;
    }
    v = v * 10 + d;
  }
  if (s.size() > k_safe_digits) {
    auto d = static_cast<unsigned>(static_cast<unsigned char>(s[k_safe_digits]) - '0');
    if (d > 9 || v > (UINT64_MAX - d) / 10) {
      return false;
    }
    v = v * 10 + d;
  }
  out = v;
  return true;
}

bool parse_i64(std::string_view s, int64_t& out) {
  if (s.empty()) {
    return false;
  }
  bool negative = s[0] == '-';
  uint64_t v = 0;
  if (!parse_u64(negative ? s.substr(1) : s, v)) {
    return false;
  }
  if (negative) {
    if (v == 0 || v > static_cast<uint64_t>(INT64_MAX) + 1) {
      return false;
    }
    out = static_cast<int64_t>(0 - v);
  } else {
    if (v > static_cast<uint64_t>(INT64_MAX)) {
      return false;
    }
    out = static_cast<int64_t>(v);
  }
  return true;
}

bool parse_scan_cursor(std::string_view arg, uint64_t& out) {
  std::string_view s = c_string(arg);
  int64_t strict = 0;
  if (parse_i64(s, strict)) {
    if (strict < 0) {
      return false;
    }
    out = static_cast<uint64_t>(strict);
    return true;
  }
  size_t i = 0;
  while (i < s.size() && is_c_space(s[i])) {
    ++i;
  }
  bool negative = false;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) {
    negative = s[i] == '-';
    ++i;
  }
  size_t digits = i;
  uint64_t v = 0;
  for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) {
    auto d = static_cast<uint64_t>(s[i] - '0');
    if (v > (UINT64_MAX - d) / 10) {
      return false;  // strtoull's ERANGE
    }
    v = v * 10 + d;
  }
  if (i == digits || i != s.size()) {
    return false;
  }
  out = negative ? 0 - v : v;
  return true;
}

bool parse_string2d(std::string_view s, double& out) {
  if (s.empty() || std::isspace(static_cast<unsigned char>(s[0])) != 0) {
    return false;
  }
  std::string text(s);
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || std::isnan(v)) {
    return false;
  }
  if (errno == ERANGE && (std::isinf(v) || v == 0)) {
    return false;
  }
  out = v;
  return true;
}

bool parse_double(std::string_view s, double& out) {
  if (s.empty() || s.size() > 5000 || std::isspace(static_cast<unsigned char>(s[0]))) {
    return false;
  }
  char stack[256];
  std::string heap;
  const char* z;
  if (s.size() < sizeof(stack)) {
    std::memcpy(stack, s.data(), s.size());
    stack[s.size()] = '\0';
    z = stack;
  } else {
    heap.assign(s);
    z = heap.c_str();
  }
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(z, &end);
  if (end != z + s.size() || std::isnan(v) || (errno == ERANGE && !std::isinf(v) && v != 0)) {
    return false;
  }
  if (errno == ERANGE && std::isinf(v) == false && v == 0) {
    // Underflow to zero is accepted by Valkey's strtod checks.
  }
  out = v;
  return true;
}

bool parse_long_double(std::string_view s, long double& out) {
  if (s.empty() || s.size() > 5000 || std::isspace(static_cast<unsigned char>(s[0]))) {
    return false;
  }
  std::string z(s);
  char* end = nullptr;
  errno = 0;
  long double v = std::strtold(z.c_str(), &end);
  if (end != z.c_str() + z.size() || errno == ERANGE || std::isnan(v)) {
    return false;
  }
  out = v;
  return true;
}

size_t format_i64(int64_t v, char* buf) {
  char tmp[24];
  size_t n = 0;
  uint64_t u = v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  do {
    tmp[n++] = static_cast<char>('0' + u % 10);
    u /= 10;
  } while (u != 0);
  size_t len = 0;
  if (v < 0) {
    buf[len++] = '-';
  }
  while (n > 0) {
    buf[len++] = tmp[--n];
  }
  return len;
}

std::string i64_to_string(int64_t v) {
  char buf[24];
  return std::string(buf, format_i64(v, buf));
}

bool format_long_double_human(long double v, std::string& out) {
  if (std::isinf(v)) {
    return false;
  }
  char buf[5600];
  int len = std::snprintf(buf, sizeof(buf), "%.17Lf", v);
  if (len < 0 || static_cast<size_t>(len) >= sizeof(buf)) {
    return false;
  }
  if (std::strchr(buf, '.') != nullptr) {
    char* p = buf + len - 1;
    while (*p == '0') {
      --p;
      --len;
    }
    if (*p == '.') {
      --len;
    }
  }
  if (len == 2 && buf[0] == '-' && buf[1] == '0') {
    buf[0] = '0';
    len = 1;
  }
  out.assign(buf, static_cast<size_t>(len));
  return true;
}

std::string format_double(double v) {
  if (std::isinf(v)) {
    return v > 0 ? "inf" : "-inf";
  }
  char buf[64];
  int len = std::snprintf(buf, sizeof(buf), "%.17g", v);
  return std::string(buf, static_cast<size_t>(len));
}

}  // namespace keyshift::engine
