#include "engine/util/double_format.hpp"

#include "engine/util/grisu2.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace keyshift::engine {

namespace {

// 2^62: Valkey compares against LLONG_MAX / 2 converted to a double, which rounds to it.
constexpr double k_int_limit = 4611686018427387904.0;

size_t copy_text(std::string_view text, char* buf) {
  std::memcpy(buf, text.data(), text.size());
  return text.size();
}

}  // namespace

bool double_to_int_exact(double v, long long& out) {
  if (!(v >= -k_int_limit && v <= k_int_limit)) {
    return false;  // out of range, or NaN
  }
  const auto i = static_cast<long long>(v);
  if (static_cast<double>(i) != v) {
    return false;
  }
  out = i;
  return true;
}

size_t format_double_reply(double v, char* buf) {
  if (std::isnan(v)) {
    return copy_text("nan", buf);
  }
  if (std::isinf(v)) {
    return copy_text(v > 0 ? "inf" : "-inf", buf);
  }
  if (v == 0) {
    return copy_text(std::signbit(v) ? "-0" : "0", buf);
  }
  long long i = 0;
  if (double_to_int_exact(v, i)) {
    return static_cast<size_t>(std::to_chars(buf, buf + k_double_text_max, i).ptr - buf);
  }
  // fpconv_dtoa's text is what d2string prints here.
  std::string text = format_grisu2(v);
  return copy_text(text, buf);
}

std::string double_reply_text(double v) {
  char buf[k_double_text_max];
  return std::string(buf, format_double_reply(v, buf));
}

std::string double_17g_text(double v) {
  if (std::isnan(v)) {
    return "nan";
  }
  if (std::isinf(v)) {
    return v > 0 ? "inf" : "-inf";
  }
  char buf[64];
  int n = std::snprintf(buf, sizeof(buf), "%.17Lg", static_cast<long double>(v));
  return std::string(buf, static_cast<size_t>(n));
}

}  // namespace keyshift::engine
