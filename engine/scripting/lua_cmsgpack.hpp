#pragma once

struct lua_State;

namespace keyshift::engine::lua {

/// Opens the `cmsgpack` library Valkey gives scripts (pack, unpack, unpack_one,
/// unpack_limit: MessagePack with Lua tables as arrays or maps, nesting cut at 16 levels);
/// returns it on the stack without setting a global.
int open_cmsgpack(lua_State* lua);

}  // namespace keyshift::engine::lua
