#pragma once

struct lua_State;

namespace keyshift::engine::lua {

/// Opens the `struct` library Valkey gives scripts (pack, unpack, size: binary records
/// described by a format string, with Valkey's bounds checks on unpack's offset and c0
/// length); returns it on the stack without setting a global.
int open_struct(lua_State* lua);

}  // namespace keyshift::engine::lua
