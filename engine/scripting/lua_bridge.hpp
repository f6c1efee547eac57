#pragma once

#include "engine/resp/reply_builder.hpp"

#include <cstddef>
#include <string>
#include <string_view>

struct lua_State;

namespace keyshift::engine::lua {

/// Pushes the RESP reply starting at `reply[pos]` onto the Lua stack by Valkey's rules
/// (script_lua.c): integer -> number, bulk -> string, null bulk/null array -> false, status ->
/// {ok=...}, error -> {err=...}, array -> table; RESP3 map -> {map={...}}, set ->
/// {set={k=true}}, null -> nil, boolean -> boolean, double -> {double=n}, big number ->
/// {big_number=s}, verbatim -> {verbatim_string={format=,string=}}; attributes are skipped.
/// Advances `pos` past the reply; false (nothing pushed) when the bytes are not one whole reply.
bool push_reply(lua_State* lua, std::string_view reply, size_t& pos);

/// Pushes Valkey's error table {err="CODE message"} for `error`: "-CODE message" keeps its
/// code, text without the leading '-' gets "ERR "; trailing CR/LF are trimmed.
void push_error_table(lua_State* lua, std::string_view error);

/// Converts the value on top of the Lua stack into a reply in `out` (consuming it), as
/// Valkey's luaReplyToRedisReply: `script_resp` is the protocol the script chose with
/// setresp (it decides how booleans are sent). An error table marked
/// ignore_error_stats_update (a command's error the engine already counted) is written
/// without counting it again.
void write_reply(lua_State* lua, ReplyBuilder& out, int script_resp);

/// Reads `reply` into a fresh Lua state and writes it back as a script returning it would,
/// for a client speaking `client_resp` and a script that chose `script_resp`; false when
/// `reply` is not one whole reply. (The conversions' round trip, for tests and fuzzing.)
bool round_trip_reply(std::string_view reply, int client_resp, int script_resp, std::string& out);

/// A Lua number as a command argument, as Valkey formats it: an integer when the double is
/// one that fits in 64 bits, otherwise the shortest round-trip text (fpconv_dtoa).
std::string number_argument(double value);

}  // namespace keyshift::engine::lua
