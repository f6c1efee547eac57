#pragma once

struct lua_State;

namespace keyshift::engine::lua {

/// Opens the `bit` library scripts use (LuaBitOp 1.0.2's functions, with the fix Valkey's copy
/// has for bit.tohex's most negative width, which crashes Debian's lua-bitop); returns it
/// on the stack without setting a global.
int open_bit(lua_State* lua);

}  // namespace keyshift::engine::lua
