// libFuzzer target for the Lua bridge's reply conversion: any bytes handed to push_reply must
// be converted or refused (nothing pushed), never crash or leave the Lua stack unbalanced;
// what was pushed must convert back to a reply in RESP2 and RESP3. Built by
// tests/fuzz/fuzz.sh (clang -fsanitize=fuzzer,address,undefined).
#include "engine/resp/reply_builder.hpp"
#include "engine/scripting/lua_bridge.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <lua.hpp>
#include <string>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  lua_State* lua = luaL_newstate();
  for (int client_resp : {2, 3}) {
    size_t pos = 0;
    int top = lua_gettop(lua);
    if (keyshift::engine::lua::push_reply(lua, input, pos)) {
      if (pos > input.size() || lua_gettop(lua) != top + 1) {
        std::abort();
      }
      std::string out;
      keyshift::engine::ReplyBuilder rb(out, client_resp);
      keyshift::engine::lua::write_reply(lua, rb, client_resp);
      if (out.empty()) {
        std::abort();
      }
    } else if (pos != 0) {
      std::abort();
    }
    if (lua_gettop(lua) != top) {
      std::abort();
    }
  }
  lua_close(lua);
  return 0;
}
