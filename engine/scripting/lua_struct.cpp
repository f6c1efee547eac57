#include "engine/scripting/lua_struct.hpp"

#include "engine/scripting/lua_library.hpp"

#include <climits>

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <lua.hpp>
#include <string>

namespace keyshift::engine::lua {
namespace {

// Valkey's struct library works on C's native types of an LP64 build: l, L and T are 64
// bits wide and every integer passes through a 64-bit unsigned value.
static_assert(sizeof(long) == 8 && sizeof(size_t) == 8, "struct assumes an LP64 build");

/// The widest i/I integer a format may name, in bytes.
constexpr int k_max_int_size = 32;
/// What '!' without a number aligns to: a double's alignment inside a struct, or an int's
/// size when that is larger.
constexpr int k_max_align = static_cast<int>(std::max(alignof(double), sizeof(int)));
constexpr bool k_native_little = std::endian::native == std::endian::little;

constexpr const char* k_err_size_overflow = "integral size overflow";
constexpr const char* k_err_int_too_wide = "integral size %d is larger than limit of %d";
constexpr const char* k_err_bad_alignment = "alignment %d is not a power of 2";
constexpr const char* k_err_bad_option = "invalid format option '%c'";
constexpr const char* k_err_string_too_short = "string too short";
constexpr const char* k_err_bad_offset = "offset must be 1 or greater";
constexpr const char* k_err_data_too_short = "data string too short";
constexpr const char* k_err_too_many_results = "too many results";
constexpr const char* k_err_c0_without_size = "format 'c0' needs a previous size";
constexpr const char* k_err_unfinished_string = "unfinished string in data";
constexpr const char* k_err_s_unsized = "option 's' has no fixed size";
constexpr const char* k_err_c0_unsized = "option 'c0' has no fixed size";

/// The byte order and maximum alignment a format string sets as it goes.
struct Layout {
  bool little = k_native_little;
  size_t align = 1;
};

// ASCII classes only: a format byte above 0x7f is never a digit or letter (as in the C
// locale Valkey runs its ctype calls in).
bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
bool is_lower(char c) {
  return c >= 'a' && c <= 'z';
}
bool is_alnum(char c) {
  return is_digit(c) || is_lower(c) || (c >= 'A' && c <= 'Z');
}

/// The decimal number at fmt (which moves past it), or `absent` when no digit is there.
int read_count(lua_State* lua, const char*& fmt, int absent) {
  if (!is_digit(*fmt)) {
    return absent;
  }
  int n = 0;
  for (; is_digit(*fmt); ++fmt) {
    int digit = *fmt - '0';
    if (n > INT_MAX / 10 || n * 10 > INT_MAX - digit) {
      luaL_error(lua, k_err_size_overflow);
    }
    n = n * 10 + digit;
  }
  return n;
}

/// The bytes one item of `opt` takes (its count read from fmt); 0 for options that take
/// none, including the ones that change the layout.
size_t item_size(lua_State* lua, char opt, const char*& fmt) {
  switch (opt) {
    case 'b':
    case 'B':
    case 'x':
      return 1;
    case 'h':
    case 'H':
      return sizeof(short);
    case 'l':
    case 'L':
      return sizeof(long);
    case 'T':
      return sizeof(size_t);
    case 'f':
      return sizeof(float);
    case 'd':
      return sizeof(double);
    case 'c':
      return static_cast<size_t>(read_count(lua, fmt, 1));
    case 'i':
    case 'I': {
      int n = read_count(lua, fmt, static_cast<int>(sizeof(int)));
      if (n > k_max_int_size) {
        luaL_error(lua, k_err_int_too_wide, n, k_max_int_size);
      }
      return static_cast<size_t>(n);
    }
    default:
      return 0;
  }
}

/// The zero bytes that go before an item of `size` bytes at offset `at`. The formula is
/// Valkey's, also for sizes that are not powers of two (i3 under !4 pads oddly there too).
size_t padding(size_t at, const Layout& layout, char opt, size_t size) {
  if (size == 0 || opt == 'c') {
    return 0;
  }
  size_t unit = std::min(size, layout.align);
  return (unit - (at & (unit - 1))) & (unit - 1);
}

/// Applies a layout option (' ', '>', '<', '!n'); anything else is an invalid option.
void apply_layout_option(lua_State* lua, char opt, const char*& fmt, Layout& layout) {
  switch (opt) {
    case ' ':
      return;
    case '>':
      layout.little = false;
      return;
    case '<':
      layout.little = true;
      return;
    case '!': {
      int a = read_count(lua, fmt, k_max_align);
      if (a <= 0 || (a & (a - 1)) != 0) {
        luaL_error(lua, k_err_bad_alignment, a);
      }
      layout.align = static_cast<size_t>(a);
      return;
    }
    default:
      luaL_argerror(lua, 1, lua_pushfstring(lua, k_err_bad_option, opt));
  }
}

bool is_integer_option(char opt) {
  return std::strchr("bBhHlLTiI", opt) != nullptr && opt != '\0';
}

// Valkey converts numbers with plain C casts, whose out-of-range results are those of
// x86-64's cvttsd2si (2^63 for NaN, infinities and anything outside int64); these two give
// the same 64 bits for every double without undefined behaviour.
uint64_t x86_int64_bits(double n) {
  if (n >= -0x1p63 && n < 0x1p63) {
    return static_cast<uint64_t>(static_cast<int64_t>(n));
  }
  return uint64_t{1} << 63;
}
uint64_t x86_uint64(double n) {
  if (!(n >= 0x1p63)) {
    return x86_int64_bits(n);
  }
  return x86_int64_bits(n - 0x1p63) ^ (uint64_t{1} << 63);
}

/// The low `size` bytes of n's 64 bits in the given order; bytes past the eighth are zero.
void put_integer(std::string& out, double n, bool little, size_t size) {
  uint64_t v = x86_uint64(n);
  char buf[k_max_int_size];
  for (size_t i = 0; i < size; ++i) {
    buf[little ? i : size - 1 - i] = static_cast<char>(v & 0xff);
    v >>= 8;
  }
  out.append(buf, size);
}

template <typename T>
void put_float(std::string& out, T v, bool little) {
  char buf[sizeof(T)];
  std::memcpy(buf, &v, sizeof v);
  if (little != k_native_little) {
    std::reverse(buf, buf + sizeof buf);
  }
  out.append(buf, sizeof buf);
}

/// The integer in `size` bytes at p. Only the last eight bytes read survive, and for a
/// signed one the sign mask is Valkey's ~0 << (size*8-1) with the shift taken modulo 64 as
/// x86-64 does, so i9..i32 extend from the bit that wrapped shift names.
double get_integer(const char* p, bool little, bool is_signed, size_t size) {
  uint64_t v = 0;
  for (size_t i = 0; i < size; ++i) {
    v = (v << 8) | static_cast<unsigned char>(p[little ? size - 1 - i : i]);
  }
  if (!is_signed) {
    return static_cast<double>(v);
  }
  uint64_t mask = ~uint64_t{0} << ((size * 8 - 1) & 63);
  if ((v & mask) != 0) {
    v |= mask;
  }
  return static_cast<double>(static_cast<int64_t>(v));
}

template <typename T>
double get_float(const char* p, bool little) {
  char buf[sizeof(T)];
  std::memcpy(buf, p, sizeof buf);
  if (little != k_native_little) {
    std::reverse(buf, buf + sizeof buf);
  }
  T v;
  std::memcpy(&v, buf, sizeof v);
  return static_cast<double>(v);
}

bool fits(size_t pos, size_t size, size_t len) {
  return size <= len && pos <= len - size;
}

int struct_pack(lua_State* lua) {
  const char* fmt = luaL_checkstring(lua, 1);
  // Valkey's pack keeps a nil above its arguments, so the first missing one reads as nil
  // ("got nil", not "got no value"); the same slot gives the same error text here.
  lua_pushnil(lua);
  Layout layout;
  std::string out;
  int arg = 2;
  while (*fmt != '\0') {
    char opt = *fmt++;
    size_t size = item_size(lua, opt, fmt);
    out.append(padding(out.size(), layout, opt, size), '\0');
    if (is_integer_option(opt)) {
      put_integer(out, luaL_checknumber(lua, arg++), layout.little, size);
      continue;
    }
    switch (opt) {
      case 'x':
        out.push_back('\0');
        break;
      case 'f':
        put_float(out, static_cast<float>(luaL_checknumber(lua, arg++)), layout.little);
        break;
      case 'd':
        put_float(out, static_cast<double>(luaL_checknumber(lua, arg++)), layout.little);
        break;
      case 'c':
      case 's': {
        size_t len = 0;
        const char* s = luaL_checklstring(lua, arg++, &len);
        size = size == 0 ? len : size;
        // Valkey's counter has already moved on: the error names the next argument.
        luaL_argcheck(lua, len >= size, arg, k_err_string_too_short);
        out.append(s, size);
        if (opt == 's') {
          out.push_back('\0');
        }
        break;
      }
      default:
        apply_layout_option(lua, opt, fmt, layout);
    }
  }
  lua_pushlstring(lua, out.data(), out.size());
  return 1;
}

int struct_unpack(lua_State* lua) {
  const char* fmt = luaL_checkstring(lua, 1);
  size_t len = 0;
  const char* data = luaL_checklstring(lua, 2, &len);
  // A negative offset wraps to a huge one, as in Valkey: it then fails the bounds check
  // ("data string too short") or, with an empty format, comes back unchanged.
  auto pos = static_cast<size_t>(luaL_optinteger(lua, 3, 1));
  luaL_argcheck(lua, pos > 0, 3, k_err_bad_offset);
  --pos;
  int results = 0;
  Layout layout;
  while (*fmt != '\0') {
    char opt = *fmt++;
    size_t size = item_size(lua, opt, fmt);
    pos += padding(pos, layout, opt, size);
    luaL_argcheck(lua, fits(pos, size, len), 2, k_err_data_too_short);
    luaL_checkstack(lua, 2, k_err_too_many_results);
    if (is_integer_option(opt)) {
      lua_pushnumber(lua, get_integer(data + pos, layout.little, is_lower(opt), size));
      ++results;
      pos += size;
      continue;
    }
    switch (opt) {
      case 'x':
        break;
      case 'f':
        lua_pushnumber(lua, get_float<float>(data + pos, layout.little));
        ++results;
        break;
      case 'd':
        lua_pushnumber(lua, get_float<double>(data + pos, layout.little));
        ++results;
        break;
      case 'c':
        if (size == 0) {
          // c0: the string's length is the value just read, which it replaces.
          if (results == 0 || lua_isnumber(lua, -1) == 0) {
            luaL_error(lua, k_err_c0_without_size);
          }
          size = x86_uint64(lua_tonumber(lua, -1));
          lua_pop(lua, 1);
          --results;
          luaL_argcheck(lua, fits(pos, size, len), 2, k_err_data_too_short);
        }
        lua_pushlstring(lua, data + pos, size);
        ++results;
        break;
      case 's': {
        const void* end = std::memchr(data + pos, '\0', len - pos);
        if (end == nullptr) {
          luaL_error(lua, k_err_unfinished_string);
        }
        size = static_cast<size_t>(static_cast<const char*>(end) - (data + pos)) + 1;
        lua_pushlstring(lua, data + pos, size - 1);
        ++results;
        break;
      }
      default:
        apply_layout_option(lua, opt, fmt, layout);
    }
    pos += size;
  }
  lua_pushinteger(lua, static_cast<lua_Integer>(pos + 1));
  return results + 1;
}

int struct_size(lua_State* lua) {
  const char* fmt = luaL_checkstring(lua, 1);
  Layout layout;
  size_t total = 0;
  while (*fmt != '\0') {
    char opt = *fmt++;
    size_t size = item_size(lua, opt, fmt);
    total += padding(total, layout, opt, size);
    if (opt == 's') {
      luaL_argerror(lua, 1, k_err_s_unsized);
    } else if (opt == 'c' && size == 0) {
      luaL_argerror(lua, 1, k_err_c0_unsized);
    }
    // Letters and digits Valkey's size does not know are skipped, not refused.
    if (!is_alnum(opt)) {
      apply_layout_option(lua, opt, fmt, layout);
    }
    total += size;
  }
  lua_pushinteger(lua, static_cast<lua_Integer>(total));
  return 1;
}

constexpr luaL_Reg k_struct_functions[] = {
    {"pack", struct_pack},
    {"unpack", struct_unpack},
    {"size", struct_size},
    {nullptr, nullptr},
};

}  // namespace

int open_struct(lua_State* lua) {
  return push_library(lua, k_struct_functions);
}

}  // namespace keyshift::engine::lua
