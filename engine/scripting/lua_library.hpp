#pragma once

#include <lua.hpp>

namespace keyshift::engine::lua {

/// Pushes a new table of `functions` (ended by a null name): what luaL_register makes of
/// them, without the global it would set.
inline int push_library(lua_State* lua, const luaL_Reg* functions) {
  lua_newtable(lua);
  for (const luaL_Reg* r = functions; r->name != nullptr; ++r) {
    lua_pushcfunction(lua, r->func);
    lua_setfield(lua, -2, r->name);
  }
  return 1;
}

}  // namespace keyshift::engine::lua
