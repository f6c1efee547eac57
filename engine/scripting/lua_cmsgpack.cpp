#include "engine/scripting/lua_cmsgpack.hpp"

#include "engine/scripting/lua_library.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <lua.hpp>
#include <string>
#include <string_view>

namespace keyshift::engine::lua {
namespace {

/// Tables deeper than this pack as nil, as Valkey's cmsgpack does: a cyclic table then
/// packs as a bounded deep copy instead of recursing forever.
constexpr int k_max_pack_nesting = 16;
/// Valkey's decoder recurses without a bound; a crafted input of nested one-element arrays
/// would then overflow the C stack, so decoding stops here with an error instead.
constexpr int k_max_unpack_nesting = 1000;

constexpr const char* k_err_missing_bytes = "Missing bytes in input.";
constexpr const char* k_err_bad_format = "Bad data format in input.";

// ---- packing ---------------------------------------------------------------------------

void put_be(std::string& out, uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) {
    out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }
}

void put_tagged(std::string& out, uint8_t tag, uint64_t v, int bytes) {
  out.push_back(static_cast<char>(tag));
  put_be(out, v, bytes);
}

void pack_int(std::string& out, int64_t n) {
  if (n >= 0) {
    auto u = static_cast<uint64_t>(n);
    if (u <= 0x7f) {
      out.push_back(static_cast<char>(u));
    } else if (u <= 0xff) {
      put_tagged(out, 0xcc, u, 1);
    } else if (u <= 0xffff) {
      put_tagged(out, 0xcd, u, 2);
    } else if (u <= 0xffffffffULL) {
      put_tagged(out, 0xce, u, 4);
    } else {
      put_tagged(out, 0xcf, u, 8);
    }
    return;
  }
  auto u = static_cast<uint64_t>(n);
  if (n >= -32) {
    out.push_back(static_cast<char>(u & 0xff));
  } else if (n >= -128) {
    put_tagged(out, 0xd0, u, 1);
  } else if (n >= -32768) {
    put_tagged(out, 0xd1, u, 2);
  } else if (n >= -2147483648LL) {
    put_tagged(out, 0xd2, u, 4);
  } else {
    put_tagged(out, 0xd3, u, 8);
  }
}

void pack_number(std::string& out, double n) {
  // Integral values in int64's range pack as the smallest integer; others as a float when
  // a float holds them exactly, else as a double.
  if (std::isfinite(n) && n >= -9223372036854775808.0 && n < 9223372036854775808.0 &&
      std::trunc(n) == n) {
    pack_int(out, static_cast<int64_t>(n));
    return;
  }
  auto f = static_cast<float>(n);
  if (static_cast<double>(f) == n) {
    uint32_t bits = 0;
    std::memcpy(&bits, &f, sizeof bits);
    put_tagged(out, 0xca, bits, 4);
  } else {
    uint64_t bits = 0;
    std::memcpy(&bits, &n, sizeof bits);
    put_tagged(out, 0xcb, bits, 8);
  }
}

void pack_string(std::string& out, std::string_view s) {
  size_t len = s.size();
  if (len < 32) {
    out.push_back(static_cast<char>(0xa0 | len));
  } else if (len <= 0xff) {
    put_tagged(out, 0xd9, len, 1);
  } else if (len <= 0xffff) {
    put_tagged(out, 0xda, len, 2);
  } else {
    put_tagged(out, 0xdb, len, 4);
  }
  out.append(s);
}

/// The length of the table at `idx` as an array (its keys are exactly 1..n), or -1.
int64_t array_length(lua_State* lua, int idx) {
  int64_t count = 0;
  int64_t max = 0;
  lua_pushnil(lua);
  while (lua_next(lua, idx) != 0) {
    lua_pop(lua, 1);
    if (lua_type(lua, -1) != LUA_TNUMBER) {
      lua_pop(lua, 1);
      return -1;
    }
    double k = lua_tonumber(lua, -1);
    if (k < 1 || std::trunc(k) != k || k > 9007199254740992.0) {
      lua_pop(lua, 1);
      return -1;
    }
    ++count;
    if (static_cast<int64_t>(k) > max) {
      max = static_cast<int64_t>(k);
    }
  }
  return max == count ? count : -1;
}

void pack_header(std::string& out, uint64_t n, uint8_t fix, uint8_t tag16, uint8_t tag32) {
  if (n <= 15) {
    out.push_back(static_cast<char>(fix | n));
  } else if (n <= 0xffff) {
    put_tagged(out, tag16, n, 2);
  } else {
    put_tagged(out, tag32, n, 4);
  }
}

void pack_value(lua_State* lua, std::string& out, int level);

void pack_table(lua_State* lua, std::string& out, int level) {
  int idx = lua_gettop(lua);
  luaL_checkstack(lua, 4, "cmsgpack: table too deep");
  int64_t n = array_length(lua, idx);
  if (n >= 0) {
    pack_header(out, static_cast<uint64_t>(n), 0x90, 0xdc, 0xdd);
    for (int64_t i = 1; i <= n; ++i) {
      lua_rawgeti(lua, idx, static_cast<int>(i));
      pack_value(lua, out, level + 1);
      lua_pop(lua, 1);
    }
    return;
  }
  uint64_t pairs = 0;
  lua_pushnil(lua);
  while (lua_next(lua, idx) != 0) {
    lua_pop(lua, 1);
    ++pairs;
  }
  pack_header(out, pairs, 0x80, 0xde, 0xdf);
  lua_pushnil(lua);
  while (lua_next(lua, idx) != 0) {
    lua_pushvalue(lua, -2);
    pack_value(lua, out, level + 1);  // the key
    lua_pop(lua, 1);
    pack_value(lua, out, level + 1);  // the value
    lua_pop(lua, 1);
  }
}

/// Packs the value on top of the stack, leaving the stack as it was.
void pack_value(lua_State* lua, std::string& out, int level) {
  switch (lua_type(lua, -1)) {
    case LUA_TSTRING: {
      size_t len = 0;
      const char* s = lua_tolstring(lua, -1, &len);
      pack_string(out, std::string_view(s, len));
      break;
    }
    case LUA_TBOOLEAN:
      out.push_back(static_cast<char>(lua_toboolean(lua, -1) != 0 ? 0xc3 : 0xc2));
      break;
    case LUA_TNUMBER:
      pack_number(out, lua_tonumber(lua, -1));
      break;
    case LUA_TTABLE:
      if (level >= k_max_pack_nesting) {
        out.push_back(static_cast<char>(0xc0));
      } else {
        pack_table(lua, out, level);
      }
      break;
    default:  // nil, functions, userdata and threads have no MessagePack form
      out.push_back(static_cast<char>(0xc0));
      break;
  }
}

int mp_pack(lua_State* lua) {
  int args = lua_gettop(lua);
  if (args == 0) {
    return luaL_argerror(lua, 0, "MessagePack pack needs input.");
  }
  std::string out;
  for (int i = 1; i <= args; ++i) {
    lua_pushvalue(lua, i);
    pack_value(lua, out, 0);
    lua_pop(lua, 1);
  }
  lua_pushlstring(lua, out.data(), out.size());
  return 1;
}

// ---- unpacking -------------------------------------------------------------------------

enum class DecodeError { none, missing_bytes, bad_format, too_deep };

struct Cursor {
  const unsigned char* p;
  size_t left;
  DecodeError err = DecodeError::none;

  bool need(size_t n) {
    if (left < n) {
      err = DecodeError::missing_bytes;
      return false;
    }
    return true;
  }
  uint64_t take_be(int bytes) {
    uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) {
      v = (v << 8) | p[i];
    }
    p += bytes;
    left -= static_cast<size_t>(bytes);
    return v;
  }
};

/// Reads a big-endian length or value of `bytes` bytes after the tag byte.
bool read_be(Cursor& c, int bytes, uint64_t& v) {
  if (!c.need(1 + static_cast<size_t>(bytes))) {
    return false;
  }
  ++c.p;
  --c.left;
  v = c.take_be(bytes);
  return true;
}

void unpack_value(lua_State* lua, Cursor& c, int depth);

void unpack_bytes(lua_State* lua, Cursor& c, size_t len) {
  if (!c.need(len)) {
    return;
  }
  lua_pushlstring(lua, reinterpret_cast<const char*>(c.p), len);
  c.p += len;
  c.left -= len;
}

void unpack_array(lua_State* lua, Cursor& c, uint64_t n, int depth) {
  lua_newtable(lua);
  for (uint64_t i = 1; i <= n && c.err == DecodeError::none; ++i) {
    unpack_value(lua, c, depth + 1);
    if (c.err != DecodeError::none) {
      return;
    }
    lua_rawseti(lua, -2, static_cast<int>(i));
  }
}

void unpack_map(lua_State* lua, Cursor& c, uint64_t n, int depth) {
  lua_newtable(lua);
  for (uint64_t i = 0; i < n; ++i) {
    unpack_value(lua, c, depth + 1);
    if (c.err != DecodeError::none) {
      return;
    }
    unpack_value(lua, c, depth + 1);
    if (c.err != DecodeError::none) {
      return;
    }
    if (lua_isnil(lua, -2) ||
        (lua_type(lua, -2) == LUA_TNUMBER && std::isnan(lua_tonumber(lua, -2)))) {
      lua_pop(lua, 2);  // a table cannot hold that key
    } else {
      lua_rawset(lua, -3);
    }
  }
}

/// Pushes one decoded value; on error sets c.err and pushes nothing it keeps.
void unpack_value(lua_State* lua, Cursor& c, int depth) {
  if (depth > k_max_unpack_nesting) {
    c.err = DecodeError::too_deep;
    return;
  }
  if (!c.need(1) || lua_checkstack(lua, 3) == 0) {
    if (c.err == DecodeError::none) {
      c.err = DecodeError::too_deep;
    }
    return;
  }
  int top = lua_gettop(lua);
  uint8_t tag = c.p[0];
  uint64_t v = 0;
  if (tag <= 0x7f || tag >= 0xe0) {
    ++c.p;
    --c.left;
    lua_pushnumber(lua, tag <= 0x7f ? tag : static_cast<int8_t>(tag));
    return;
  }
  if (tag >= 0x80 && tag <= 0x9f) {
    ++c.p;
    --c.left;
    if (tag <= 0x8f) {
      unpack_map(lua, c, tag & 0x0f, depth);
    } else {
      unpack_array(lua, c, tag & 0x0f, depth);
    }
  } else if (tag >= 0xa0 && tag <= 0xbf) {
    ++c.p;
    --c.left;
    unpack_bytes(lua, c, tag & 0x1f);
  } else {
    switch (tag) {
      case 0xc0:
      case 0xc2:
      case 0xc3:
        ++c.p;
        --c.left;
        if (tag == 0xc0) {
          lua_pushnil(lua);
        } else {
          lua_pushboolean(lua, tag == 0xc3 ? 1 : 0);
        }
        break;
      case 0xca:
        if (read_be(c, 4, v)) {
          float f = 0;
          auto bits = static_cast<uint32_t>(v);
          std::memcpy(&f, &bits, sizeof f);
          lua_pushnumber(lua, static_cast<double>(f));
        }
        break;
      case 0xcb:
        if (read_be(c, 8, v)) {
          double d = 0;
          std::memcpy(&d, &v, sizeof d);
          lua_pushnumber(lua, d);
        }
        break;
      case 0xcc:
      case 0xcd:
      case 0xce:
      case 0xcf:
        if (read_be(c, 1 << (tag - 0xcc), v)) {
          lua_pushnumber(lua, static_cast<double>(v));
        }
        break;
      case 0xd0:
      case 0xd1:
      case 0xd2:
      case 0xd3: {
        int bytes = 1 << (tag - 0xd0);
        if (read_be(c, bytes, v)) {
          // Sign-extend from the value's width.
          int shift = 64 - 8 * bytes;
          auto s = static_cast<int64_t>(v << shift) >> shift;
          lua_pushnumber(lua, static_cast<double>(s));
        }
        break;
      }
      case 0xc4:  // bin 8/16/32: read as strings, Lua has no other byte type
      case 0xc5:
      case 0xc6:
      case 0xd9:  // str 8/16/32
      case 0xda:
      case 0xdb: {
        int width = 1 << (tag >= 0xd9 ? tag - 0xd9 : tag - 0xc4);
        if (read_be(c, width, v)) {
          unpack_bytes(lua, c, v);
        }
        break;
      }
      case 0xdc:
      case 0xdd:
        if (read_be(c, tag == 0xdc ? 2 : 4, v)) {
          unpack_array(lua, c, v, depth);
        }
        break;
      case 0xde:
      case 0xdf:
        if (read_be(c, tag == 0xde ? 2 : 4, v)) {
          unpack_map(lua, c, v, depth);
        }
        break;
      default:
        c.err = DecodeError::bad_format;
        break;
    }
  }
  if (c.err != DecodeError::none) {
    lua_settop(lua, top);
  }
}

/// Decodes up to `limit` values (all when `limit` is 0) of the string argument from
/// `offset`; with `with_offset`, the next offset (-1 at the end) comes first.
int unpack_full(lua_State* lua, lua_Integer limit, lua_Integer offset, bool with_offset) {
  size_t len = 0;
  const char* s = luaL_checklstring(lua, 1, &len);
  if (offset < 0 || limit < 0) {
    return luaL_error(lua, "Invalid request to unpack with offset of %d and limit of %d.",
                      static_cast<int>(offset), static_cast<int>(limit));
  }
  if (static_cast<size_t>(offset) > len) {
    return luaL_error(lua, "Start offset %d greater than input length %d.",
                      static_cast<int>(offset), static_cast<int>(len));
  }
  lua_settop(lua, 1);
  Cursor c{reinterpret_cast<const unsigned char*>(s) + offset, len - static_cast<size_t>(offset)};
  int count = 0;
  while (c.left > 0 && (limit == 0 || count < limit)) {
    unpack_value(lua, c, 0);
    if (c.err == DecodeError::missing_bytes) {
      return luaL_error(lua, k_err_missing_bytes);
    }
    if (c.err == DecodeError::bad_format) {
      return luaL_error(lua, k_err_bad_format);
    }
    if (c.err == DecodeError::too_deep) {
      return luaL_error(lua, "MessagePack input nested too deeply.");
    }
    ++count;
  }
  if (with_offset) {
    lua_pushinteger(lua, c.left == 0 ? -1 : static_cast<lua_Integer>(len - c.left));
    lua_insert(lua, 2);
    ++count;
  }
  return count;
}

int mp_unpack(lua_State* lua) {
  return unpack_full(lua, 0, 0, false);
}

int mp_unpack_one(lua_State* lua) {
  return unpack_full(lua, 1, luaL_optinteger(lua, 2, 0), true);
}

int mp_unpack_limit(lua_State* lua) {
  return unpack_full(lua, luaL_checkinteger(lua, 2), luaL_optinteger(lua, 3, 0), true);
}

}  // namespace

int open_cmsgpack(lua_State* lua) {
  const luaL_Reg fns[] = {{"pack", mp_pack},
                          {"unpack", mp_unpack},
                          {"unpack_one", mp_unpack_one},
                          {"unpack_limit", mp_unpack_limit},
                          {nullptr, nullptr}};
  return push_library(lua, fns);
}

}  // namespace keyshift::engine::lua
