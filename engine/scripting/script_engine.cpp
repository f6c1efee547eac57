#include "engine/scripting/script_engine.hpp"

#include "engine/acl/acl.hpp"
#include "engine/commands/context.hpp"
#include "engine/engine.hpp"
#include "engine/persistence/snapshots.hpp"
#include "engine/repl/primary.hpp"
#include "engine/scripting/lua_bit.hpp"
#include "engine/scripting/lua_bridge.hpp"
#include "engine/scripting/lua_cmsgpack.hpp"
#include "engine/scripting/lua_struct.hpp"
#include "engine/util/sha1.hpp"
#include "engine/util/split_args.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <lua.hpp>
#include <string>
#include <vector>

extern "C" {
int luaopen_cjson(lua_State* lua);
}

namespace keyshift::engine {

struct ScriptEngine::RunContext {
  Session* caller = nullptr;
  const CmdContext* command = nullptr;  // the caller's EVAL/FCALL, for FUNCTION STATS
  std::string funcname;
  bool eval_mode = true;
  bool read_only = false;
  bool allow_oom = false;
  bool write_dirty = false;
  bool oom_at_start = false;
  bool timed_out = false;
  bool killed = false;
  int64_t start_us = 0;
  int resp = 2;
};

namespace {

constexpr const char* k_engine_key = "__keyshift_engine";
constexpr const char* k_handler_key = "__keyshift_err_handler";
constexpr const char* k_globals_meta_key = "__keyshift_globals_meta";
constexpr const char* k_globals_key = "__keyshift_globals";
constexpr const char* k_library_api_key = "__keyshift_library_api";
constexpr const char* k_readonly_key = "__keyshift_readonly";
constexpr const char* k_tostring_key = "__keyshift_tostring";
constexpr const char* k_view_target_key = "__keyshift_view_targets";  // view -> real table
constexpr size_t k_eval_lru_length = 500;                             // Valkey's LRU_LIST_LENGTH
constexpr int k_gc_period = 50;  // Valkey's LUA_GC_CYCLE_PERIOD

struct ScriptFlagName {
  uint64_t flag;
  std::string_view name;
};
constexpr ScriptFlagName k_script_flag_names[] = {
    {k_script_no_writes, "no-writes"},
    {k_script_allow_oom, "allow-oom"},
    {k_script_allow_stale, "allow-stale"},
    {k_script_no_cluster, "no-cluster"},
    {k_script_allow_cross_slot, "allow-cross-slot-keys"},
};

ScriptEngine* owner(lua_State* lua) {
  lua_getfield(lua, LUA_REGISTRYINDEX, k_engine_key);
  auto* e = static_cast<ScriptEngine*>(lua_touserdata(lua, -1));
  lua_pop(lua, 1);
  return e;
}

// Raises Valkey's error table for `text` (luaPushError + luaError).
int raise(lua_State* lua, std::string_view text) {
  lua::push_error_table(lua, text);
  return lua_error(lua);
}

int readonly_error(lua_State* lua) {
  return luaL_error(lua, "Attempt to modify a readonly table");
}

int missing_global(lua_State* lua) {
  if (lua_gettop(lua) != 2) {
    return luaL_error(lua, "Wrong number of arguments to luaProtectedTableError");
  }
  if (lua_isstring(lua, -1) == 0) {
    return luaL_error(lua, "Second argument to luaProtectedTableError must be a string or number");
  }
  return luaL_error(lua, "Script attempted to access nonexistent global variable '%s'",
                    lua_tostring(lua, -1));
}

bool is_readonly(lua_State* lua, int index) {
  if (lua_type(lua, index) != LUA_TTABLE) {
    return false;
  }
  lua_pushvalue(lua, index);
  lua_getfield(lua, LUA_REGISTRYINDEX, k_readonly_key);
  lua_insert(lua, -2);
  lua_rawget(lua, -2);
  bool ro = lua_toboolean(lua, -1) != 0;
  lua_pop(lua, 2);
  return ro;
}

void mark_readonly(lua_State* lua, int index) {
  index = index < 0 ? lua_gettop(lua) + index + 1 : index;
  lua_getfield(lua, LUA_REGISTRYINDEX, k_readonly_key);
  lua_pushvalue(lua, index);
  lua_pushboolean(lua, 1);
  lua_rawset(lua, -3);
  lua_pop(lua, 1);
}

// setmetatable and rawset refuse the protected tables, as Valkey's read-only tables do.
int guarded_setmetatable(lua_State* lua) {
  if (is_readonly(lua, 1)) {
    return readonly_error(lua);
  }
  lua_pushvalue(lua, lua_upvalueindex(1));
  lua_insert(lua, 1);
  lua_call(lua, lua_gettop(lua) - 1, LUA_MULTRET);
  return lua_gettop(lua);
}

// Replaces the table on top of the stack by a read-only view of it: an empty table whose
// metatable reads through to the original and refuses every write.
void make_readonly_view(lua_State* lua) {
  int real = lua_gettop(lua);
  lua_newtable(lua);  // view
  lua_newtable(lua);  // its metatable
  lua_pushvalue(lua, real);
  lua_setfield(lua, -2, "__index");
  lua_pushcfunction(lua, readonly_error);
  lua_setfield(lua, -2, "__newindex");
  lua_pushboolean(lua, 0);
  lua_setfield(lua, -2, "__metatable");
  lua_setmetatable(lua, -2);
  mark_readonly(lua, -1);
  lua_getfield(lua, LUA_REGISTRYINDEX, k_view_target_key);
  lua_pushvalue(lua, -2);
  lua_pushvalue(lua, real);
  lua_rawset(lua, -3);
  lua_pop(lua, 1);
  lua_replace(lua, real);
}

/// Pushes the table a read-only view at `index` reads from, or the value itself.
void push_view_target(lua_State* lua, int index) {
  // Views always have a metatable: a plain table costs no registry lookup (next in loops).
  if (lua_getmetatable(lua, index) == 0) {
    lua_pushvalue(lua, index);
    return;
  }
  lua_pop(lua, 1);
  lua_getfield(lua, LUA_REGISTRYINDEX, k_view_target_key);
  lua_pushvalue(lua, index);
  lua_rawget(lua, -2);
  lua_remove(lua, -2);
  if (lua_isnil(lua, -1)) {
    lua_pop(lua, 1);
    lua_pushvalue(lua, index);
  }
}

// next and pairs see through a view, as they would on Valkey's read-only tables, without
// handing the real table to the script.
int view_next(lua_State* lua) {
  luaL_checktype(lua, 1, LUA_TTABLE);
  lua_settop(lua, 2);
  push_view_target(lua, 1);
  lua_pushvalue(lua, 2);
  if (lua_next(lua, -2) != 0) {
    return 2;
  }
  lua_pushnil(lua);
  return 1;
}

int view_pairs_step(lua_State* lua) {
  lua_settop(lua, 2);
  lua_pushvalue(lua, lua_upvalueindex(1));
  lua_pushvalue(lua, 2);
  if (lua_next(lua, -2) != 0) {
    return 2;
  }
  lua_pushnil(lua);
  return 1;
}

int view_pairs(lua_State* lua) {
  luaL_checktype(lua, 1, LUA_TTABLE);
  push_view_target(lua, 1);
  lua_pushcclosure(lua, view_pairs_step, 1);
  lua_pushvalue(lua, 1);
  lua_pushnil(lua);
  return 3;
}

// loadstring refuses precompiled chunks (Valkey does): their bytecode is not checked.
int guarded_loadstring(lua_State* lua) {
  size_t n = 0;
  const char* s = lua_tolstring(lua, 1, &n);
  if (s != nullptr && n > 0 && s[0] == LUA_SIGNATURE[0]) {
    lua_pushnil(lua);
    lua_pushstring(lua, "binary chunks are not allowed");
    return 2;
  }
  lua_pushvalue(lua, lua_upvalueindex(1));
  lua_insert(lua, 1);
  lua_call(lua, lua_gettop(lua) - 1, LUA_MULTRET);
  return lua_gettop(lua);
}

// The error handler every script runs under (Valkey's __redis__err__handler): a string error
// becomes {err="ERR ..."}, and the table gets the source and line of the Lua code that failed
// (the caller's when a C function such as server.call raised it).
int error_handler(lua_State* lua) {
  if (lua_type(lua, 1) != LUA_TTABLE) {
    lua_getfield(lua, LUA_REGISTRYINDEX, k_tostring_key);
    lua_pushvalue(lua, 1);
    lua_call(lua, 1, 1);
    std::string msg = "ERR ";
    if (const char* s = lua_tostring(lua, -1)) {
      msg += s;
    }
    lua_pop(lua, 1);
    lua_newtable(lua);
    lua_pushlstring(lua, msg.data(), msg.size());
    lua_setfield(lua, -2, "err");
    lua_replace(lua, 1);
  }
  lua_Debug ar;
  bool found = lua_getstack(lua, 1, &ar) != 0 && lua_getinfo(lua, "nSl", &ar) != 0;
  if (found && std::strcmp(ar.what, "C") == 0) {
    found = lua_getstack(lua, 2, &ar) != 0 && lua_getinfo(lua, "nSl", &ar) != 0;
  }
  if (found) {
    lua_pushstring(lua, ar.source);
    lua_setfield(lua, 1, "source");
    lua_pushnumber(lua, ar.currentline);
    lua_setfield(lua, 1, "line");
  }
  lua_settop(lua, 1);
  return 1;
}

// Valkey's pcall: an error table is handed back as its message, as Lua 5.1 scripts expect.
int script_pcall(lua_State* lua) {
  int argc = lua_gettop(lua);
  luaL_checkany(lua, 1);
  lua_pushboolean(lua, 1);
  lua_insert(lua, 1);
  if (lua_pcall(lua, argc - 1, LUA_MULTRET, 0) != 0) {
    lua_remove(lua, 1);
    if (lua_istable(lua, -1)) {
      lua_getfield(lua, -1, "err");
      if (lua_isstring(lua, -1) != 0) {
        lua_replace(lua, -2);
      } else {
        lua_pop(lua, 1);
      }
    }
    lua_pushboolean(lua, 0);
    lua_insert(lua, 1);
  }
  return lua_gettop(lua);
}

void count_hook(lua_State* lua, lua_Debug* ar) {
  (void)ar;
  owner(lua)->on_hook(lua);
}

int api_call(lua_State* lua) {
  return owner(lua)->lua_command(lua, true);
}
int api_pcall(lua_State* lua) {
  return owner(lua)->lua_command(lua, false);
}
int api_setresp(lua_State* lua) {
  return owner(lua)->lua_set_resp(lua);
}
int api_set_repl(lua_State* lua) {
  return owner(lua)->lua_set_repl(lua);
}
int api_log(lua_State* lua) {
  return owner(lua)->lua_log(lua);
}
int api_acl_check(lua_State* lua) {
  return owner(lua)->lua_acl_check(lua);
}
int api_register_function(lua_State* lua) {
  return owner(lua)->lua_register_function(lua);
}

int api_sha1hex(lua_State* lua) {
  if (lua_gettop(lua) != 1) {
    return raise(lua, "wrong number of arguments");
  }
  size_t len = 0;
  const char* s = lua_tolstring(lua, 1, &len);
  std::string hex = sha1_hex(sha1(std::string_view(s == nullptr ? "" : s, s == nullptr ? 0 : len)));
  lua_pushlstring(lua, hex.data(), hex.size());
  return 1;
}

int api_error_reply(lua_State* lua) {
  if (lua_gettop(lua) != 1 || lua_type(lua, -1) != LUA_TSTRING) {
    lua::push_error_table(lua, "wrong number or type of arguments");
    return 1;
  }
  std::string err = lua_tostring(lua, -1);
  if (err.empty() || err[0] != '-') {
    err.insert(0, "-");
  }
  lua::push_error_table(lua, err);
  return 1;
}

int api_status_reply(lua_State* lua) {
  if (lua_gettop(lua) != 1 || lua_type(lua, -1) != LUA_TSTRING) {
    lua::push_error_table(lua, "wrong number or type of arguments");
    return 1;
  }
  lua_newtable(lua);
  lua_pushstring(lua, "ok");
  lua_pushvalue(lua, -3);
  lua_settable(lua, -3);
  return 1;
}

int api_false(lua_State* lua) {
  lua_pushboolean(lua, 0);
  return 1;
}
int api_true(lua_State* lua) {
  lua_pushboolean(lua, 1);
  return 1;
}
int api_nothing(lua_State* lua) {
  (void)lua;
  return 0;
}

// math.random/randomseed over Valkey's lrand48 generator, so a seed gives the same sequence
// on every platform. The state lives in the engine (one per ScriptEngine).
uint64_t& rand_state(lua_State* lua) {
  lua_getfield(lua, LUA_REGISTRYINDEX, "__keyshift_rand");
  auto* p = static_cast<uint64_t*>(lua_touserdata(lua, -1));
  lua_pop(lua, 1);
  return *p;
}
int32_t lrand48(uint64_t& x) {
  x = (x * 0x5DEECE66DULL + 0xB) & ((1ULL << 48) - 1);
  return static_cast<int32_t>(x >> 17);
}
int api_random(lua_State* lua) {
  constexpr int32_t k_max = 2147483647;
  lua_Number r =
      static_cast<lua_Number>(lrand48(rand_state(lua)) % k_max) / static_cast<lua_Number>(k_max);
  switch (lua_gettop(lua)) {
    case 0:
      lua_pushnumber(lua, r);
      break;
    case 1: {
      int u = luaL_checkint(lua, 1);
      luaL_argcheck(lua, 1 <= u, 1, "interval is empty");
      lua_pushnumber(lua, std::floor(r * u) + 1);
      break;
    }
    case 2: {
      int l = luaL_checkint(lua, 1);
      int u = luaL_checkint(lua, 2);
      luaL_argcheck(lua, l <= u, 2, "interval is empty");
      lua_pushnumber(lua, std::floor(r * (u - l + 1)) + l);
      break;
    }
    default:
      return luaL_error(lua, "wrong number of arguments");
  }
  return 1;
}
int api_randomseed(lua_State* lua) {
  auto seed = static_cast<uint32_t>(luaL_checkint(lua, 1));
  rand_state(lua) = (static_cast<uint64_t>(seed) << 16) | 0x330E;
  return 0;
}

void set_fn(lua_State* lua, const char* name, lua_CFunction fn) {
  lua_pushcfunction(lua, fn);
  lua_setfield(lua, -2, name);
}
void set_num(lua_State* lua, const char* name, double v) {
  lua_pushnumber(lua, v);
  lua_setfield(lua, -2, name);
}
void set_str(lua_State* lua, const char* name, const char* v) {
  lua_pushstring(lua, v);
  lua_setfield(lua, -2, name);
}

void register_log_and_version(lua_State* lua) {
  set_fn(lua, "log", api_log);
  set_num(lua, "LOG_DEBUG", 0);
  set_num(lua, "LOG_VERBOSE", 1);
  set_num(lua, "LOG_NOTICE", 2);
  set_num(lua, "LOG_WARNING", 3);
  set_num(lua, "REDIS_VERSION_NUM", 0x00070204);
  set_str(lua, "REDIS_VERSION", "7.2.4");
  set_num(lua, "VALKEY_VERSION_NUM", 0x00080001);
  set_str(lua, "VALKEY_VERSION", "8.0.1");
  set_str(lua, "SERVER_NAME", "valkey");
}

void open_lib(lua_State* lua, const char* name, lua_CFunction fn) {
  lua_pushcfunction(lua, fn);
  lua_pushstring(lua, name);
  lua_call(lua, 1, 0);
}

bool valid_name(std::string_view name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
}

// A Lua string with any NUL bytes in it (Valkey's luaGetStringSds), so that a name with a
// NUL in it fails the name check instead of passing cut short.
std::string lua_bytes(lua_State* lua, int index) {
  size_t len = 0;
  const char* s = lua_tolstring(lua, index, &len);
  return std::string(s, len);
}

constexpr std::string_view k_bad_name =
    "Library names can only contain letters, numbers, or underscores(_) and must be at least one "
    "character long";

// Whether the value on top of the stack is an error table already counted in the error
// stats (a redis.call/pcall error passed on): its reply is written without counting again.
bool is_counted_error_table(lua_State* lua) {
  if (!lua_istable(lua, -1)) {
    return false;
  }
  // Raw reads: a returned table's metatable (a script may return _G) must not run here,
  // outside the protected call.
  lua_pushstring(lua, "err");
  lua_rawget(lua, -2);
  bool has_err = lua_isstring(lua, -1) != 0;
  lua_pop(lua, 1);
  lua_pushstring(lua, "ignore_error_stats_update");
  lua_rawget(lua, -2);
  bool ignore = lua_toboolean(lua, -1) != 0;
  lua_pop(lua, 1);
  return has_err && ignore;
}

// The reply text for an error a script raised (Valkey's luaCallFunction).
void reply_script_error(lua_State* lua, ReplyBuilder& reply, const std::string& funcname) {
  if (!lua_istable(lua, -1)) {
    const char* msg = lua_isstring(lua, -1) != 0 ? lua_tostring(lua, -1) : "execution failure";
    std::string text =
        "ERR Error running script " + funcname + ", " + std::string(msg).substr(0, 100);
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) {
      text.pop_back();
    }
    reply.error(text);
    return;
  }
  lua_getfield(lua, -1, "err");
  std::string msg = lua_isstring(lua, -1) != 0 ? lua_tostring(lua, -1) : "";
  lua_pop(lua, 1);
  lua_getfield(lua, -1, "source");
  std::string source = lua_isstring(lua, -1) != 0 ? lua_tostring(lua, -1) : "";
  bool has_source = lua_isstring(lua, -1) != 0;
  lua_pop(lua, 1);
  lua_getfield(lua, -1, "line");
  std::string line = lua_isstring(lua, -1) != 0 ? lua_tostring(lua, -1) : "";
  bool has_line = lua_isstring(lua, -1) != 0;
  lua_pop(lua, 1);
  lua_getfield(lua, -1, "ignore_error_stats_update");
  bool ignore = lua_toboolean(lua, -1) != 0;
  lua_pop(lua, 1);
  if (has_source && has_line) {
    msg += " script: " + funcname + ", on " + source + ":" + line + ".";
  }
  if (ignore) {
    for (char& c : msg) {
      if (c == '\r' || c == '\n') {
        c = ' ';
      }
    }
    reply.raw("-" + msg + "\r\n");
  } else {
    reply.error(msg);
  }
}

/// EVAL and FCALL skip the generic MONITOR feed (which comes after a command ran) and feed
/// themselves first, so that the commands the script calls follow them.
void feed_script_call_to_monitors(CmdContext& ctx) {
  if (!ctx.engine().monitors().empty()) {
    ctx.engine().feed_monitors(ctx.session(), ctx.args());
  }
}

}  // namespace

bool parse_script_shebang(std::string_view body, uint64_t& flags, size_t& shebang_len,
                          std::string& error) {
  flags = k_script_eval_compat;
  shebang_len = 0;
  if (!body.starts_with("#!")) {
    return true;
  }
  size_t end = body.find('\n');
  if (end == std::string_view::npos) {
    error = "ERR Invalid script shebang";
    return false;
  }
  shebang_len = end;
  std::vector<std::string> parts;
  if (!split_args(body.substr(0, end), parts) || parts.empty()) {
    error = "ERR Invalid engine in script shebang";
    return false;
  }
  if (parts[0] != "#!lua") {
    error = "ERR Unexpected engine in script shebang: " + parts[0];
    return false;
  }
  flags = 0;
  for (size_t j = 1; j < parts.size(); ++j) {
    if (!parts[j].starts_with("flags=")) {
      error = "ERR Unknown lua shebang option: " + parts[j];
      return false;
    }
    std::string_view list = std::string_view(parts[j]).substr(6);
    size_t pos = 0;
    while (pos <= list.size() && !list.empty()) {
      size_t comma = list.find(',', pos);
      std::string_view f = list.substr(pos, comma == std::string_view::npos ? comma : comma - pos);
      const ScriptFlagName* found = nullptr;
      for (const ScriptFlagName& n : k_script_flag_names) {
        if (n.name == f) {
          found = &n;
        }
      }
      if (found == nullptr) {
        error = "ERR Unexpected flag in script shebang: " + std::string(f);
        return false;
      }
      flags |= found->flag;
      if (comma == std::string_view::npos) {
        break;
      }
      pos = comma + 1;
    }
  }
  return true;
}

ScriptEngine::ScriptEngine(Engine& engine)
    : m_engine(engine),
      m_session(std::make_unique<Session>(0, nullptr)),
      m_rand_state(0x1234ABCD330EULL) {
  m_session->set(k_session_in_process);
  m_session->set(k_session_deny_blocking);
  m_session->set(k_session_script);
  m_session->authenticated = true;
  m_session->name = "lua";
  m_lua = new_state(false);
  m_functions_lua = new_state(true);
}

ScriptEngine::~ScriptEngine() {
  lua_close(m_lua);
  lua_close(m_functions_lua);
}

lua_State* ScriptEngine::new_state(bool functions) {
  lua_State* lua = luaL_newstate();
  lua_pushlightuserdata(lua, this);
  lua_setfield(lua, LUA_REGISTRYINDEX, k_engine_key);
  lua_pushlightuserdata(lua, &m_rand_state);
  lua_setfield(lua, LUA_REGISTRYINDEX, "__keyshift_rand");
  lua_newtable(lua);
  lua_newtable(lua);
  lua_pushstring(lua, "k");
  lua_setfield(lua, -2, "__mode");
  lua_setmetatable(lua, -2);
  lua_setfield(lua, LUA_REGISTRYINDEX, k_readonly_key);
  lua_newtable(lua);
  lua_newtable(lua);
  lua_pushstring(lua, "k");
  lua_setfield(lua, -2, "__mode");
  lua_setmetatable(lua, -2);
  lua_setfield(lua, LUA_REGISTRYINDEX, k_view_target_key);

  open_lib(lua, "", luaopen_base);
  open_lib(lua, LUA_TABLIBNAME, luaopen_table);
  open_lib(lua, LUA_STRLIBNAME, luaopen_string);
  open_lib(lua, LUA_MATHLIBNAME, luaopen_math);
  open_lib(lua, LUA_OSLIBNAME, luaopen_os);
  // Debian's modules return their table without setting a global.
  lua_pushcfunction(lua, luaopen_cjson);
  lua_call(lua, 0, 1);
  lua_setglobal(lua, "cjson");
  lua::open_struct(lua);
  lua_setglobal(lua, "struct");
  lua::open_bit(lua);
  lua_setglobal(lua, "bit");
  lua::open_cmsgpack(lua);
  lua_setglobal(lua, "cmsgpack");
  // Only os.clock stays, as in Valkey.
  lua_getglobal(lua, "os");
  lua_getfield(lua, -1, "clock");
  lua_newtable(lua);
  lua_insert(lua, -2);
  lua_setfield(lua, -2, "clock");
  lua_setglobal(lua, "os");
  lua_pop(lua, 1);
  for (const char* name : {"print", "dofile", "loadfile"}) {
    lua_pushnil(lua);
    lua_setglobal(lua, name);
  }
  lua_getglobal(lua, "tostring");
  lua_setfield(lua, LUA_REGISTRYINDEX, k_tostring_key);
  lua_pushcfunction(lua, script_pcall);
  lua_setglobal(lua, "pcall");
  lua_getglobal(lua, "setmetatable");
  lua_pushcclosure(lua, guarded_setmetatable, 1);
  lua_setglobal(lua, "setmetatable");
  lua_pushcfunction(lua, view_next);
  lua_setglobal(lua, "next");
  lua_pushcfunction(lua, view_pairs);
  lua_setglobal(lua, "pairs");
  lua_getglobal(lua, "loadstring");
  lua_pushcclosure(lua, guarded_loadstring, 1);
  lua_setglobal(lua, "loadstring");

  lua_newtable(lua);  // server
  set_fn(lua, "call", api_call);
  set_fn(lua, "pcall", api_pcall);
  register_log_and_version(lua);
  set_fn(lua, "setresp", api_setresp);
  set_fn(lua, "sha1hex", api_sha1hex);
  set_fn(lua, "error_reply", api_error_reply);
  set_fn(lua, "status_reply", api_status_reply);
  set_fn(lua, "set_repl", api_set_repl);
  set_num(lua, "REPL_NONE", 0);
  set_num(lua, "REPL_AOF", 1);
  set_num(lua, "REPL_SLAVE", 2);
  set_num(lua, "REPL_REPLICA", 2);
  set_num(lua, "REPL_ALL", 3);
  set_fn(lua, "acl_check_cmd", api_acl_check);
  if (!functions) {
    set_fn(lua, "breakpoint", api_false);
    set_fn(lua, "debug", api_nothing);
    set_fn(lua, "replicate_commands", api_true);
  }
  lua_setglobal(lua, "server");
  lua_getglobal(lua, "server");
  lua_setglobal(lua, "redis");
  lua_getglobal(lua, "math");
  set_fn(lua, "random", api_random);
  set_fn(lua, "randomseed", api_randomseed);
  lua_pop(lua, 1);
  lua_pushcfunction(lua, error_handler);
  lua_setfield(lua, LUA_REGISTRYINDEX, k_handler_key);

  // Library tables become read-only views (server and redis share one).
  lua_getglobal(lua, "server");
  make_readonly_view(lua);
  lua_pushvalue(lua, -1);
  lua_setglobal(lua, "server");
  lua_setglobal(lua, "redis");
  for (const char* name :
       {"string", "math", "table", "os", "cjson", "struct", "bit", "cmsgpack", "coroutine"}) {
    lua_getglobal(lua, name);
    if (lua_istable(lua, -1)) {
      make_readonly_view(lua);
      lua_setglobal(lua, name);
    } else {
      lua_pop(lua, 1);
    }
  }

  if (functions) {
    // What a library's code sees while FUNCTION LOAD runs it: server.register_function,
    // server.log and the version fields only.
    lua_newtable(lua);
    lua_newtable(lua);
    set_fn(lua, "register_function", api_register_function);
    register_log_and_version(lua);
    lua_newtable(lua);
    lua_pushcfunction(lua, missing_global);
    lua_setfield(lua, -2, "__index");
    lua_setmetatable(lua, -2);
    make_readonly_view(lua);
    lua_pushvalue(lua, -1);
    lua_setfield(lua, -3, "server");
    lua_setfield(lua, -2, "redis");
    lua_newtable(lua);
    lua_pushcfunction(lua, missing_global);
    lua_setfield(lua, -2, "__index");
    lua_setmetatable(lua, -2);
    lua_setfield(lua, LUA_REGISTRYINDEX, k_library_api_key);
  }

  // The real globals raise on a missing name; scripts see them through an empty read-only
  // table whose metatable reads through (the library API while FUNCTION LOAD runs).
  lua_pushvalue(lua, LUA_GLOBALSINDEX);
  lua_newtable(lua);
  lua_pushcfunction(lua, missing_global);
  lua_setfield(lua, -2, "__index");
  lua_setmetatable(lua, -2);
  lua_setfield(lua, LUA_REGISTRYINDEX, k_globals_key);
  lua_newtable(lua);  // the globals view
  lua_newtable(lua);  // its metatable
  lua_pushvalue(lua, LUA_GLOBALSINDEX);
  lua_setfield(lua, -2, "__index");
  lua_pushcfunction(lua, readonly_error);
  lua_setfield(lua, -2, "__newindex");
  lua_pushvalue(lua, -1);
  make_readonly_view(lua);
  lua_setfield(lua, -2, "__metatable");
  lua_pushvalue(lua, -1);
  lua_setfield(lua, LUA_REGISTRYINDEX, k_globals_meta_key);
  lua_setmetatable(lua, -2);
  mark_readonly(lua, -1);
  lua_pushvalue(lua, -1);
  lua_setfield(lua, LUA_GLOBALSINDEX, "_G");
  lua_replace(lua, LUA_GLOBALSINDEX);
  return lua;
}

uint64_t ScriptEngine::eval_memory() const {
  return static_cast<uint64_t>(lua_gc(m_lua, LUA_GCCOUNT, 0)) * 1024;
}

uint64_t ScriptEngine::functions_memory() const {
  return static_cast<uint64_t>(lua_gc(m_functions_lua, LUA_GCCOUNT, 0)) * 1024;
}

std::optional<ScriptEngine::RunningScript> ScriptEngine::running_script() const {
  if (m_run == nullptr) {
    return std::nullopt;
  }
  RunningScript out;
  out.name = m_run->funcname;
  out.eval = m_run->eval_mode;
  out.duration_ms = (m_engine.clock().monotonic_us() - m_run->start_us) / 1000;
  if (m_run->command != nullptr) {
    for (size_t i = 0; i < m_run->command->argc(); ++i) {
      out.command.push_back(m_run->command->arg(i));
    }
  }
  return out;
}

bool ScriptEngine::busy() const {
  return m_run != nullptr && m_run->timed_out;
}

std::string_view ScriptEngine::busy_error() const {
  return m_run != nullptr && !m_run->eval_mode
             ? "BUSY Valkey is busy running a script. You can only call FUNCTION KILL or SHUTDOWN "
               "NOSAVE."
             : "BUSY Valkey is busy running a script. You can only call SCRIPT KILL or SHUTDOWN "
               "NOSAVE.";
}

std::string ScriptEngine::kill(bool eval) {
  if (m_run == nullptr) {
    return "NOTBUSY No scripts in execution right now.";
  }
  if (m_run->write_dirty) {
    return "UNKILLABLE Sorry the script already executed write commands against the dataset. You "
           "can either wait the script termination or kill the server in a hard way using the "
           "SHUTDOWN NOSAVE command.";
  }
  if (eval != m_run->eval_mode) {
    // SCRIPT KILL does not stop a function, nor FUNCTION KILL an EVAL script.
    return std::string(busy_error());
  }
  m_run->killed = true;
  return "";
}

void ScriptEngine::on_hook(lua_State* lua) {
  if (m_run == nullptr) {
    if (m_loading != nullptr && m_load_deadline_us != 0 &&
        m_engine.clock().monotonic_us() > m_load_deadline_us) {
      lua_sethook(lua, count_hook, LUA_MASKLINE, 0);  // a pcall in the library cannot swallow it
      raise(lua, "FUNCTION LOAD timeout");
    }
    return;
  }
  if (!m_run->timed_out) {
    int64_t elapsed_ms = (m_engine.clock().monotonic_us() - m_run->start_us) / 1000;
    if (elapsed_ms < m_busy_threshold_ms) {
      return;
    }
    m_run->timed_out = true;
    if (m_log_sink) {
      m_log_sink(3, "Slow script detected: still in execution after " + std::to_string(elapsed_ms) +
                        " milliseconds. You can try killing the script using the " +
                        (m_run->eval_mode ? "SCRIPT KILL" : "FUNCTION KILL") +
                        " command. Script name is: " + m_run->funcname + ".");
    }
  }
  Session& caller = *m_run->caller;
  if (caller.host() != nullptr) {
    caller.host()->serve_while_busy(caller);
  }
  if (m_run->killed || m_engine.shutdown_requested()) {
    if (m_log_sink) {
      m_log_sink(2, "Lua script killed by user with SCRIPT KILL.");
    }
    // Every line from now on raises again, so a pcall in the script cannot swallow it.
    lua_sethook(lua, count_hook, LUA_MASKLINE, 0);
    m_run->killed = true;
    raise(lua, "Script killed by user with SCRIPT KILL...");
  }
}

bool ScriptEngine::script_exists(std::string_view sha) const {
  return m_scripts.find(to_lower(sha)) != m_scripts.end();
}

const std::string* ScriptEngine::script_body(std::string_view sha) const {
  auto it = m_scripts.find(to_lower(sha));
  return it == m_scripts.end() ? nullptr : &it->second.body;
}

std::optional<uint64_t> ScriptEngine::function_flags(std::string_view name) const {
  auto fn = m_functions.find(name);
  if (fn == m_functions.end()) {
    return std::nullopt;
  }
  auto lib = m_libraries.find(fn->second);
  if (lib == m_libraries.end()) {
    return std::nullopt;
  }
  auto info = lib->second.functions.find(fn->first);
  if (info == lib->second.functions.end()) {
    return std::nullopt;
  }
  return info->second.flags;
}

void ScriptEngine::evict_scripts() {
  while (m_unpinned >= k_eval_lru_length) {
    auto oldest = m_scripts.end();
    for (auto it = m_scripts.begin(); it != m_scripts.end(); ++it) {
      if (!it->second.pinned &&
          (oldest == m_scripts.end() || it->second.lru < oldest->second.lru)) {
        oldest = it;
      }
    }
    if (oldest == m_scripts.end()) {
      return;
    }
    lua_pushnil(m_lua);
    lua_setfield(m_lua, LUA_REGISTRYINDEX, ("f_" + oldest->first).c_str());
    m_scripts.erase(oldest);
    --m_unpinned;
    ++m_evicted_scripts;
  }
}

bool ScriptEngine::load_script(std::string_view body, bool pinned, std::string& sha_or_error) {
  std::string sha = sha1_hex(sha1(body));
  auto it = m_scripts.find(sha);
  if (it != m_scripts.end()) {
    if (pinned && !it->second.pinned) {
      it->second.pinned = true;
      --m_unpinned;
    }
    sha_or_error = sha;
    return true;
  }
  uint64_t flags = 0;
  size_t shebang_len = 0;
  if (!parse_script_shebang(body, flags, shebang_len, sha_or_error)) {
    return false;
  }
  // The shebang line is skipped but its line feed kept, so line numbers stay the user's.
  std::string_view code = body.substr(shebang_len);
  if (luaL_loadbuffer(m_lua, code.data(), code.size(), "@user_script") != 0) {
    sha_or_error = std::string("ERR Error compiling script (new function): ") +
                   (lua_tostring(m_lua, -1) != nullptr ? lua_tostring(m_lua, -1) : "");
    lua_pop(m_lua, 1);
    return false;
  }
  lua_setfield(m_lua, LUA_REGISTRYINDEX, ("f_" + sha).c_str());
  if (!pinned) {
    evict_scripts();
    ++m_unpinned;
  }
  m_scripts.emplace(sha, CachedScript{std::string(body), flags, pinned, ++m_lru_clock});
  sha_or_error = sha;
  return true;
}

void ScriptEngine::flush_scripts() {
  lua_close(m_lua);
  m_lua = new_state(false);
  m_scripts.clear();
  m_unpinned = 0;
}

bool ScriptEngine::prepare_run(CmdContext& ctx, uint64_t flags, bool read_only, RunContext& run) {
  Engine& engine = ctx.engine();
  const EngineConfig& cfg = engine.config();
  bool compat = (flags & k_script_eval_compat) != 0;
  run.oom_at_start = cfg.maxmemory != 0 && engine.used_memory() > cfg.maxmemory;
  if (!compat) {
    if ((flags & k_script_no_writes) == 0) {
      if (cfg.stop_writes_on_bgsave_error && !cfg.save.empty() &&
          !engine.snapshots().last_bgsave_ok()) {
        ctx.reply().error(
            "MISCONF Valkey is configured to save RDB snapshots, but it's currently unable to "
            "persist to disk. Writable scripts are blocked. Use 'no-writes' flag for read only "
            "scripts.");
        return false;
      }
      if (read_only) {
        ctx.reply().error("ERR Can not execute a script with write flag using *_ro command.");
        return false;
      }
      // As Valkey's scriptPrepareForRun: a script that may write needs min-replicas-to-write
      // good replicas before it starts, as a write command does.
      if (!ctx.session().has(k_session_primary) && !engine.primary().enough_good_replicas()) {
        ctx.reply().error(errors::k_noreplicas);
        return false;
      }
    }
    if (run.oom_at_start && (flags & (k_script_allow_oom | k_script_no_writes)) == 0) {
      ctx.reply().error(
          "OOM allow-oom flag is not set on the script, can not run it when used memory > "
          "'maxmemory'");
      return false;
    }
  }
  run.caller = &ctx.session();
  run.command = &ctx;
  run.read_only = read_only || (!compat && (flags & k_script_no_writes) != 0);
  run.allow_oom = !compat && (flags & k_script_allow_oom) != 0;
  return true;
}

void ScriptEngine::run_function(CmdContext& ctx, lua_State* lua, RunContext& run, int nkeys,
                                size_t first_key, bool eval_mode) {
  // Stack: handler, function.
  auto args = ctx.args();
  auto push_array = [&](size_t from, size_t count) {
    lua_createtable(lua, static_cast<int>(count), 0);
    for (size_t j = 0; j < count; ++j) {
      lua_pushlstring(lua, args[from + j].data(), args[from + j].size());
      lua_rawseti(lua, -2, static_cast<int>(j + 1));
    }
  };
  size_t nk = static_cast<size_t>(nkeys);
  if (eval_mode) {
    // KEYS and ARGV are globals of EVAL scripts: set on the real globals table, behind the
    // read-only view the script sees.
    lua_getfield(lua, LUA_REGISTRYINDEX, k_globals_key);
    push_array(first_key, nk);
    lua_setfield(lua, -2, "KEYS");
    push_array(first_key + nk, args.size() - first_key - nk);
    lua_setfield(lua, -2, "ARGV");
    lua_pop(lua, 1);
  } else {
    push_array(first_key, nk);
    push_array(first_key + nk, args.size() - first_key - nk);
  }
  m_session->db = ctx.session().db;
  m_session->resp = 2;
  run.resp = 2;
  run.eval_mode = eval_mode;
  run.start_us = m_engine.clock().monotonic_us();
  if (m_busy_threshold_ms > 0) {
    lua_sethook(lua, count_hook, LUA_MASKCOUNT, 100000);
  }
  m_run = &run;
  int err = eval_mode ? lua_pcall(lua, 0, 1, -2) : lua_pcall(lua, 2, 1, -4);
  m_run = nullptr;
  if (m_busy_threshold_ms > 0 || run.killed) {
    lua_sethook(lua, nullptr, 0, 0);
  }
  static thread_local int gc_count = 0;
  if (++gc_count == k_gc_period) {
    lua_gc(lua, LUA_GCSTEP, k_gc_period);
    gc_count = 0;
  }
  // As Valkey's afterErrorReply: an error reply left out of the error stats (counted when
  // the inner command failed) still makes the script's own call a failed one.
  if (is_counted_error_table(lua)) {
    ++ctx.command().stats.failed_calls;
  }
  if (err != 0) {
    reply_script_error(lua, ctx.reply(), run.funcname);
    lua_pop(lua, 1);
  } else {
    lua::write_reply(lua, ctx.reply(), run.resp);
  }
  lua_pop(lua, 1);  // the handler
}

void ScriptEngine::eval(CmdContext& ctx, bool by_sha, bool read_only) {
  feed_script_call_to_monitors(ctx);
  if (by_sha && ctx.arg(1).size() != 40) {
    ctx.reply().error("NOSCRIPT No matching script.");
    return;
  }
  int64_t numkeys = 0;
  if (!parse_int_arg(ctx, ctx.arg(2), numkeys)) {
    return;
  }
  if (numkeys > static_cast<int64_t>(ctx.argc()) - 3) {
    ctx.reply().error("ERR Number of keys can't be greater than number of args");
    return;
  }
  if (numkeys < 0) {
    ctx.reply().error("ERR Number of keys can't be negative");
    return;
  }
  std::string sha = by_sha ? to_lower(ctx.arg(1)) : sha1_hex(sha1(ctx.arg(1)));
  auto it = m_scripts.find(sha);
  if (it == m_scripts.end()) {
    if (by_sha) {
      ctx.reply().error("NOSCRIPT No matching script.");
      return;
    }
    std::string out;
    if (!load_script(ctx.arg(1), false, out)) {
      ctx.reply().error(out);
      return;
    }
    it = m_scripts.find(sha);
  }
  RunContext run;
  run.funcname = sha;
  if (!prepare_run(ctx, it->second.flags, read_only, run)) {
    return;
  }
  it->second.lru = ++m_lru_clock;
  lua_getfield(m_lua, LUA_REGISTRYINDEX, k_handler_key);
  lua_getfield(m_lua, LUA_REGISTRYINDEX, ("f_" + sha).c_str());
  run_function(ctx, m_lua, run, static_cast<int>(numkeys), 3, true);
}

bool ScriptEngine::NoCaseLess::operator()(std::string_view a, std::string_view b) const {
  return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end(), [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) <
           std::tolower(static_cast<unsigned char>(y));
  });
}

void ScriptEngine::fcall(CmdContext& ctx, bool read_only) {
  feed_script_call_to_monitors(ctx);
  auto fit = m_functions.find(ctx.arg(1));
  if (fit == m_functions.end()) {
    ctx.reply().error("ERR Function not found");
    return;
  }
  int64_t numkeys = 0;
  if (!parse_int_arg(ctx, ctx.arg(2), numkeys, "ERR Bad number of keys provided")) {
    return;
  }
  if (numkeys > static_cast<int64_t>(ctx.argc()) - 3) {
    ctx.reply().error("ERR Number of keys can't be greater than number of args");
    return;
  }
  if (numkeys < 0) {
    ctx.reply().error("ERR Number of keys can't be negative");
    return;
  }
  const FunctionInfo& fi = m_libraries.at(fit->second).functions.at(fit->first);
  RunContext run;
  run.funcname = fi.name;
  if (!prepare_run(ctx, fi.flags, read_only, run)) {
    return;
  }
  lua_getfield(m_functions_lua, LUA_REGISTRYINDEX, k_handler_key);
  lua_rawgeti(m_functions_lua, LUA_REGISTRYINDEX, fi.ref);
  run_function(ctx, m_functions_lua, run, static_cast<int>(numkeys), 3, false);
}

int ScriptEngine::lua_command(lua_State* lua, bool raise_error) {
  if (m_run == nullptr) {
    return raise(lua, "server.call/pcall can only be called inside a script invocation");
  }
  int argc = lua_gettop(lua);
  if (argc == 0) {
    lua::push_error_table(lua, "Please specify at least one argument for this call");
    return raise_error ? lua_error(lua) : 1;
  }
  std::vector<std::string> argv;
  argv.reserve(static_cast<size_t>(argc));
  for (int j = 1; j <= argc; ++j) {
    if (lua_type(lua, j) == LUA_TNUMBER) {
      argv.push_back(lua::number_argument(lua_tonumber(lua, j)));
      continue;
    }
    size_t len = 0;
    const char* s = lua_tolstring(lua, j, &len);
    if (s == nullptr) {
      break;
    }
    argv.emplace_back(s, len);
  }
  lua_pop(lua, argc);
  if (static_cast<int>(argv.size()) != argc) {
    lua::push_error_table(lua, "Command arguments must be strings or integers");
    return raise_error ? lua_error(lua) : 1;
  }
  std::vector<std::string_view> views(argv.begin(), argv.end());
  CommandRegistry& registry = m_engine.registry();
  Command* cmd = registry.find(views[0]);
  if (cmd != nullptr && (cmd->is_container() || !cmd->subcommands.empty()) &&
      (views.size() >= 2 || cmd->is_container())) {
    cmd = views.size() >= 2 ? registry.find_sub(*cmd, views[1]) : nullptr;
  }
  std::string err;
  int argn = static_cast<int>(views.size());
  if (cmd == nullptr) {
    err = "Unknown command called from script";
  } else if ((cmd->spec.arity > 0 && cmd->spec.arity != argn) || argn < -cmd->spec.arity) {
    err = "Wrong number of args calling command from script";
  } else if ((cmd->spec.flags & k_cmd_noscript) != 0) {
    err = "This Redis command is not allowed from script";
  } else if (auto denied = acl_denial(*cmd, views)) {
    err = "ACL failure in script: " + *denied;
  } else if (m_run->read_only && (cmd->spec.flags & (k_cmd_write | k_cmd_may_replicate)) != 0) {
    err = "Write commands are not allowed from read-only scripts.";
  } else if ((cmd->spec.flags & k_cmd_write) != 0 && !m_run->write_dirty &&
             m_engine.config().stop_writes_on_bgsave_error && !m_engine.config().save.empty() &&
             !m_engine.snapshots().last_bgsave_ok()) {
    err = "-" + std::string(errors::k_misconf_bgsave);
  } else if ((cmd->spec.flags & k_cmd_write) != 0 && !m_run->write_dirty &&
             !m_run->caller->has(k_session_primary) && !m_engine.primary().enough_good_replicas()) {
    // Reached only by scripts without flags: a flagged one was refused before it started.
    err = "-" + std::string(errors::k_noreplicas);
  } else if (!m_run->allow_oom && m_engine.config().maxmemory != 0 && !m_run->write_dirty &&
             m_run->oom_at_start && (cmd->spec.flags & k_cmd_denyoom) != 0) {
    err = "-" + std::string(errors::k_oom);
  }
  if (!err.empty()) {
    // Counted as a rejected call and an error reply, as Valkey's afterErrorReply does.
    if (cmd != nullptr) {
      ++cmd->stats.rejected_calls;
    }
    lua::push_error_table(lua, err);
    lua_getfield(lua, -1, "err");
    std::string full = lua_tostring(lua, -1);
    lua_pop(lua, 1);
    ++m_engine.stats().total_error_replies;
    ++m_engine.stats().error_counts[full.substr(0, full.find(' '))];
    lua_pushboolean(lua, 1);
    lua_setfield(lua, -2, "ignore_error_stats_update");
    return raise_error ? lua_error(lua) : 1;
  }
  if ((cmd->spec.flags & k_cmd_write) != 0) {
    m_run->write_dirty = true;
  }
  m_session->resp = m_run->resp;
  m_session->out.clear();
  m_engine.call(*m_session, *cmd, views);
  size_t pos = 0;
  if (!lua::push_reply(lua, m_session->out, pos)) {
    lua_pushboolean(lua, 0);
  }
  bool is_error = !m_session->out.empty() && m_session->out[0] == '-';
  m_session->out.clear();
  if (raise_error && is_error) {
    return lua_error(lua);
  }
  return 1;
}

int ScriptEngine::lua_set_resp(lua_State* lua) {
  if (m_run == nullptr) {
    return raise(lua, "server.setresp() can only be called inside a script invocation");
  }
  if (lua_gettop(lua) != 1) {
    return raise(lua, "server.setresp() requires one argument.");
  }
  auto resp = static_cast<int>(lua_tonumber(lua, -1));
  if (resp != 2 && resp != 3) {
    return raise(lua, "RESP version must be 2 or 3.");
  }
  m_run->resp = resp;
  return 0;
}

int ScriptEngine::lua_set_repl(lua_State* lua) {
  if (lua_gettop(lua) != 1) {
    return raise(lua, "server.set_repl() requires one argument.");
  }
  auto flags = static_cast<int>(lua_tonumber(lua, -1));
  if ((flags & ~3) != 0) {
    return raise(lua,
                 "Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.");
  }
  // keyshift has no AOF or replicas yet, so there is nothing whose propagation to change.
  return 0;
}

int ScriptEngine::lua_log(lua_State* lua) {
  int argc = lua_gettop(lua);
  if (argc < 2) {
    return raise(lua, "server.log() requires two arguments or more.");
  }
  if (lua_isnumber(lua, -argc) == 0) {
    return raise(lua, "First argument must be a number (log level).");
  }
  auto level = static_cast<int>(lua_tonumber(lua, -argc));
  if (level < 0 || level > 3) {
    return raise(lua, "Invalid log level.");
  }
  std::string line;
  for (int j = 1; j < argc; ++j) {
    size_t len = 0;
    const char* s = lua_tolstring(lua, -argc + j, &len);
    if (s != nullptr) {
      if (j != 1) {
        line += ' ';
      }
      line.append(s, len);
    }
  }
  if (m_log_sink) {
    m_log_sink(level, line);
  }
  return 0;
}

int ScriptEngine::lua_acl_check(lua_State* lua) {
  int argc = lua_gettop(lua);
  if (argc == 0) {
    return raise(lua, "Please specify at least one argument for this call");
  }
  std::vector<std::string> argv;
  for (int j = 1; j <= argc; ++j) {
    size_t len = 0;
    const char* s = lua_tolstring(lua, j, &len);
    if (s == nullptr) {
      return raise(lua, "Command arguments must be strings or integers");
    }
    argv.emplace_back(s, len);
  }
  Command* cmd = m_engine.registry().find(argv[0]);
  if (cmd != nullptr && cmd->is_container()) {
    cmd = argv.size() >= 2 ? m_engine.registry().find_sub(*cmd, argv[1]) : nullptr;
  }
  if (cmd == nullptr) {
    return raise(lua, "Invalid command passed to server.acl_check_cmd()");
  }
  std::vector<std::string_view> views(argv.begin(), argv.end());
  Session* caller = m_run != nullptr ? m_run->caller : nullptr;
  size_t pos = 0;
  bool allowed =
      caller == nullptr || caller->user == nullptr ||
      m_engine.users().check_command(*caller->user, *cmd, views, pos) == acl::Denial::none;
  lua_pushboolean(lua, allowed ? 1 : 0);
  return 1;
}

std::optional<std::string> ScriptEngine::acl_denial(const Command& cmd,
                                                    std::span<const std::string_view> argv) {
  Session* caller = m_run != nullptr ? m_run->caller : nullptr;
  if (caller == nullptr || caller->user == nullptr || acl::Users::unrestricted(*caller->user)) {
    return std::nullopt;
  }
  return m_engine.acl_check(*caller, cmd, argv, acl::LogContext::lua);
}

int ScriptEngine::lua_register_function(lua_State* lua) {
  if (m_loading == nullptr) {
    return raise(lua, "server.register_function can only be called on FUNCTION LOAD command");
  }
  int argc = lua_gettop(lua);
  FunctionInfo fi;
  if (argc == 2) {
    if (lua_type(lua, 1) != LUA_TSTRING) {
      return raise(lua, "first argument to server.register_function must be a string");
    }
    if (lua_type(lua, 2) != LUA_TFUNCTION) {
      return raise(lua, "second argument to server.register_function must be a function");
    }
    fi.name = lua_bytes(lua, 1);
    lua_pushvalue(lua, 2);
  } else if (argc == 1) {
    if (lua_type(lua, 1) != LUA_TTABLE) {
      return raise(lua,
                   "calling server.register_function with a single argument is only applicable "
                   "to Lua table (representing named arguments).");
    }
    bool have_callback = false;
    lua_pushnil(lua);
    while (lua_next(lua, 1) != 0) {
      if (lua_type(lua, -2) != LUA_TSTRING) {
        return raise(lua, "named argument key given to server.register_function is not a string");
      }
      std::string key = lua_tostring(lua, -2);
      if (iequals(key, "function_name")) {
        if (lua_type(lua, -1) != LUA_TSTRING) {
          return raise(lua,
                       "function_name argument given to server.register_function must be a string");
        }
        fi.name = lua_bytes(lua, -1);
      } else if (iequals(key, "description")) {
        if (lua_type(lua, -1) != LUA_TSTRING) {
          return raise(lua,
                       "description argument given to server.register_function must be a string");
        }
        fi.description = lua_bytes(lua, -1);
      } else if (iequals(key, "callback")) {
        if (lua_type(lua, -1) != LUA_TFUNCTION) {
          return raise(lua,
                       "callback argument given to server.register_function must be a function");
        }
        lua_pushvalue(lua, -1);
        lua_setfield(lua, LUA_REGISTRYINDEX, "__keyshift_callback");
        have_callback = true;
      } else if (iequals(key, "flags")) {
        if (lua_type(lua, -1) != LUA_TTABLE) {
          return raise(lua,
                       "flags argument to server.register_function must be a table representing "
                       "function flags");
        }
        lua_pushnil(lua);
        while (lua_next(lua, -2) != 0) {
          const ScriptFlagName* found = nullptr;
          if (lua_type(lua, -1) == LUA_TSTRING) {
            std::string_view f = lua_tostring(lua, -1);
            for (const ScriptFlagName& n : k_script_flag_names) {
              if (n.name == f) {
                found = &n;
              }
            }
          }
          if (found == nullptr) {
            return raise(lua, "unknown flag given");
          }
          fi.flags |= found->flag;
          lua_pop(lua, 1);
        }
      } else {
        return raise(lua, "unknown argument given to server.register_function");
      }
      lua_pop(lua, 1);
    }
    if (fi.name.empty()) {
      return raise(lua, "server.register_function must get a function name argument");
    }
    if (!have_callback) {
      return raise(lua, "server.register_function must get a callback argument");
    }
    lua_getfield(lua, LUA_REGISTRYINDEX, "__keyshift_callback");
  } else {
    return raise(lua, "wrong number of arguments to server.register_function");
  }
  if (!valid_name(fi.name)) {
    return raise(lua, k_bad_name);
  }
  if (m_loading->functions.count(fi.name) != 0) {
    return raise(lua, "Function already exists in the library");
  }
  fi.ref = luaL_ref(lua, LUA_REGISTRYINDEX);
  std::string name = fi.name;
  m_loading->functions.emplace(name, std::move(fi));
  return 0;
}

bool parse_library_metadata(std::string_view code, LibraryMetadata& out, std::string& error) {
  if (!code.starts_with("#!")) {
    error = "ERR Missing library metadata";
    return false;
  }
  size_t end = code.find('\n');
  if (end == std::string_view::npos) {
    error = "ERR Invalid library metadata";
    return false;
  }
  std::vector<std::string> parts;
  if (!split_args(code.substr(0, end), parts) || parts.empty()) {
    error = "ERR Invalid library metadata";
    return false;
  }
  out.engine = parts[0].substr(2);
  out.body_offset = end;
  std::optional<std::string> name;
  for (size_t i = 1; i < parts.size(); ++i) {
    if (parts[i].size() >= 5 && iequals(std::string_view(parts[i]).substr(0, 5), "name=")) {
      if (name) {
        error = "ERR Invalid metadata value, name argument was given multiple times";
        return false;
      }
      name = parts[i].substr(5);
      continue;
    }
    error = "ERR Invalid metadata value given: " + parts[i];
    return false;
  }
  if (!name) {
    error = "ERR Library name was not given";
    return false;
  }
  out.name = std::move(*name);
  return true;
}

bool ScriptEngine::load_library(std::string_view code, bool replace, std::string& name_or_error,
                                int64_t timeout_ms) {
  LibraryMetadata meta;
  if (!parse_library_metadata(code, meta, name_or_error)) {
    return false;
  }
  if (!valid_name(meta.name)) {
    name_or_error = "ERR " + std::string(k_bad_name);
    return false;
  }
  if (!iequals(meta.engine, "lua")) {
    name_or_error = "ERR Engine '" + meta.engine + "' not found";
    return false;
  }
  auto old = m_libraries.find(meta.name);
  if (old != m_libraries.end() && !replace) {
    name_or_error = "ERR Library '" + meta.name + "' already exists";
    return false;
  }
  FunctionLibrary lib;
  lib.name = meta.name;
  lib.code = std::string(code);
  lua_State* lua = m_functions_lua;
  auto drop_refs = [&](FunctionLibrary& l) {
    for (auto& [fname, fi] : l.functions) {
      luaL_unref(lua, LUA_REGISTRYINDEX, fi.ref);
    }
  };
  std::string_view body = code.substr(meta.body_offset);
  if (luaL_loadbuffer(lua, body.data(), body.size(), "@user_function") != 0) {
    name_or_error = std::string("ERR Error compiling function: ") +
                    (lua_tostring(lua, -1) != nullptr ? lua_tostring(lua, -1) : "");
    lua_pop(lua, 1);
    return false;
  }
  auto set_view = [&](const char* key) {
    lua_getfield(lua, LUA_REGISTRYINDEX, k_globals_meta_key);
    lua_getfield(lua, LUA_REGISTRYINDEX, key);
    lua_setfield(lua, -2, "__index");
    lua_pop(lua, 1);
  };
  set_view(k_library_api_key);
  m_loading = &lib;
  // A library's top level only registers functions: one that runs on is stopped (Valkey's
  // 500 ms FUNCTION LOAD timeout), or it would hold the server for ever.
  m_load_deadline_us = timeout_ms > 0 ? m_engine.clock().monotonic_us() + timeout_ms * 1000 : 0;
  if (m_load_deadline_us != 0) {
    lua_sethook(lua, count_hook, LUA_MASKCOUNT, 100000);
  }
  int err = lua_pcall(lua, 0, 0, 0);
  if (m_load_deadline_us != 0) {
    lua_sethook(lua, nullptr, 0, 0);
    m_load_deadline_us = 0;
  }
  m_loading = nullptr;
  // The real globals again: KEYS of the view points to the globals table itself.
  lua_getfield(lua, LUA_REGISTRYINDEX, k_globals_meta_key);
  lua_getfield(lua, LUA_REGISTRYINDEX, k_globals_key);
  lua_setfield(lua, -2, "__index");
  lua_pop(lua, 1);
  if (err != 0) {
    std::string msg;
    if (lua_isstring(lua, -1) != 0) {
      msg = std::string("ERR ") + lua_tostring(lua, -1);
    } else if (lua_istable(lua, -1)) {
      lua_getfield(lua, -1, "err");
      msg = lua_isstring(lua, -1) != 0 ? lua_tostring(lua, -1) : "";
      lua_pop(lua, 1);
    }
    lua_pop(lua, 1);
    drop_refs(lib);
    name_or_error = "ERR Error registering functions: " + msg;
    return false;
  }
  if (lib.functions.empty()) {
    name_or_error = "ERR No functions registered";
    return false;
  }
  for (const auto& [fname, fi] : lib.functions) {
    auto owner_it = m_functions.find(fname);
    if (owner_it != m_functions.end() && owner_it->second != lib.name) {
      drop_refs(lib);
      name_or_error = "ERR Function " + fname + " already exists";
      return false;
    }
  }
  if (old != m_libraries.end()) {
    for (const auto& [fname, fi] : old->second.functions) {
      m_functions.erase(fname);
    }
    drop_refs(old->second);
    m_libraries.erase(old);
  }
  for (const auto& [fname, fi] : lib.functions) {
    m_functions[fname] = lib.name;
  }
  name_or_error = lib.name;
  m_libraries.emplace(lib.name, std::move(lib));
  return true;
}

bool ScriptEngine::delete_library(std::string_view name) {
  auto it = m_libraries.find(std::string(name));
  if (it == m_libraries.end()) {
    return false;
  }
  for (auto& [fname, fi] : it->second.functions) {
    m_functions.erase(fname);
    luaL_unref(m_functions_lua, LUA_REGISTRYINDEX, fi.ref);
  }
  m_libraries.erase(it);
  return true;
}

void ScriptEngine::flush_functions() {
  m_libraries.clear();
  m_functions.clear();
  lua_close(m_functions_lua);
  m_functions_lua = new_state(true);
}

}  // namespace keyshift::engine
