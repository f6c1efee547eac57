#include "engine/scripting/lua_bit.hpp"

#include "engine/scripting/lua_library.hpp"

#include <cstdint>
#include <cstring>
#include <lua.hpp>

namespace keyshift::engine::lua {
namespace {

// A number's 32-bit value as LuaBitOp takes it: adding 2^52+2^51 puts the integer part in
// the low mantissa bits, so any double maps to its value modulo 2^32.
uint32_t bit_arg(lua_State* lua, int idx) {
  double n = lua_tonumber(lua, idx) + 6755399441055744.0;
  uint64_t bits = 0;
  std::memcpy(&bits, &n, sizeof bits);
  auto b = static_cast<uint32_t>(bits);
  if (b == 0 && lua_isnumber(lua, idx) == 0) {
    luaL_typerror(lua, idx, "number");
  }
  return b;
}

int bit_return(lua_State* lua, uint32_t b) {
  lua_pushnumber(lua, static_cast<lua_Number>(static_cast<int32_t>(b)));
  return 1;
}

int bit_tobit(lua_State* lua) {
  return bit_return(lua, bit_arg(lua, 1));
}
int bit_bnot(lua_State* lua) {
  return bit_return(lua, ~bit_arg(lua, 1));
}

template <typename Op>
int fold(lua_State* lua, Op op) {
  uint32_t b = bit_arg(lua, 1);
  for (int i = lua_gettop(lua); i > 1; --i) {
    b = op(b, bit_arg(lua, i));
  }
  return bit_return(lua, b);
}
int bit_band(lua_State* lua) {
  return fold(lua, [](uint32_t a, uint32_t b) { return a & b; });
}
int bit_bor(lua_State* lua) {
  return fold(lua, [](uint32_t a, uint32_t b) { return a | b; });
}
int bit_bxor(lua_State* lua) {
  return fold(lua, [](uint32_t a, uint32_t b) { return a ^ b; });
}

int bit_lshift(lua_State* lua) {
  uint32_t b = bit_arg(lua, 1);
  uint32_t n = bit_arg(lua, 2) & 31;
  return bit_return(lua, b << n);
}
int bit_rshift(lua_State* lua) {
  uint32_t b = bit_arg(lua, 1);
  uint32_t n = bit_arg(lua, 2) & 31;
  return bit_return(lua, b >> n);
}
int bit_arshift(lua_State* lua) {
  uint32_t b = bit_arg(lua, 1);
  uint32_t n = bit_arg(lua, 2) & 31;
  return bit_return(lua, static_cast<uint32_t>(static_cast<int32_t>(b) >> n));
}
int bit_rol(lua_State* lua) {
  uint32_t b = bit_arg(lua, 1);
  uint32_t n = bit_arg(lua, 2) & 31;
  return bit_return(lua, n == 0 ? b : (b << n) | (b >> (32 - n)));
}
int bit_ror(lua_State* lua) {
  uint32_t b = bit_arg(lua, 1);
  uint32_t n = bit_arg(lua, 2) & 31;
  return bit_return(lua, n == 0 ? b : (b >> n) | (b << (32 - n)));
}
int bit_bswap(lua_State* lua) {
  uint32_t b = bit_arg(lua, 1);
  b = (b >> 24) | ((b >> 8) & 0xff00) | ((b & 0xff00) << 8) | (b << 24);
  return bit_return(lua, b);
}

int bit_tohex(lua_State* lua) {
  uint32_t b = bit_arg(lua, 1);
  int32_t n = lua_isnone(lua, 2) ? 8 : static_cast<int32_t>(bit_arg(lua, 2));
  const char* digits = "0123456789abcdef";
  if (n < 0) {
    n = n == INT32_MIN ? INT32_MAX : -n;
    digits = "0123456789ABCDEF";
  }
  if (n > 8) {
    n = 8;
  }
  char buf[8];
  for (int i = n; --i >= 0;) {
    buf[i] = digits[b & 15];
    b >>= 4;
  }
  lua_pushlstring(lua, buf, static_cast<size_t>(n));
  return 1;
}

constexpr luaL_Reg k_bit_functions[] = {
    {"tobit", bit_tobit}, {"bnot", bit_bnot},     {"band", bit_band},     {"bor", bit_bor},
    {"bxor", bit_bxor},   {"lshift", bit_lshift}, {"rshift", bit_rshift}, {"arshift", bit_arshift},
    {"rol", bit_rol},     {"ror", bit_ror},       {"bswap", bit_bswap},   {"tohex", bit_tohex},
    {nullptr, nullptr},
};

}  // namespace

int open_bit(lua_State* lua) {
  return push_library(lua, k_bit_functions);
}

}  // namespace keyshift::engine::lua
