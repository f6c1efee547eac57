#include "engine/commands/expire_args.hpp"

#include <climits>

namespace keyshift::engine {

bool to_absolute_ms(int64_t value, TtlUnit unit, bool absolute, int64_t now_ms, int64_t& out,
                    bool allow_non_positive) {
  if (!allow_non_positive && value <= 0) {
    return false;
  }
  if (unit == TtlUnit::seconds) {
    if (value > LLONG_MAX / 1000 || value < LLONG_MIN / 1000) {
      return false;
    }
    value *= 1000;
  }
  if (!absolute) {
    if (value > LLONG_MAX - now_ms) {
      return false;
    }
    value += now_ms;
  }
  out = value;
  return true;
}

std::string invalid_expire_error(std::string_view command) {
  return "ERR invalid expire time in '" + std::string(command) + "' command";
}

}  // namespace keyshift::engine
