#include "engine/scripting/lua_bridge.hpp"

#include "engine/util/grisu2.hpp"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <lua.hpp>
#include <string>

namespace keyshift::engine::lua {
namespace {

// Finds the CRLF ending the line that starts at `pos`; npos when absent.
size_t line_end(std::string_view r, size_t pos) {
  return r.find("\r\n", pos);
}

bool parse_len(std::string_view text, int64_t& out) {
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && p == text.data() + text.size();
}

// Parses one reply; with `lua` == nullptr the reply is only stepped over (attributes).
bool parse(lua_State* lua, std::string_view r, size_t& pos, int depth);

bool parse_aggregate_items(lua_State* lua, std::string_view r, size_t& pos, int depth, int64_t n,
                           char type) {
  if (lua != nullptr) {
    lua_checkstack(lua, 4);
    lua_newtable(lua);
    if (type == '%' || type == '~') {
      lua_pushstring(lua, type == '%' ? "map" : "set");
      lua_newtable(lua);
    }
  }
  for (int64_t j = 0; j < n; ++j) {
    if (type == '*' && lua != nullptr) {
      lua_pushnumber(lua, static_cast<lua_Number>(j + 1));
    }
    if (!parse(lua, r, pos, depth + 1)) {
      return false;
    }
    if (type == '%') {
      if (!parse(lua, r, pos, depth + 1)) {
        return false;
      }
    } else if (type == '~' && lua != nullptr) {
      lua_pushboolean(lua, 1);
    }
    if (lua != nullptr) {
      if (type != '*' && lua_isnil(lua, -2)) {
        // A null map key or set member has no Lua table slot (lua_settable would raise
        // outside any protected call and abort the process): the entry is left out.
        lua_pop(lua, 2);
        continue;
      }
      lua_settable(lua, -3);
    }
  }
  if (lua != nullptr && (type == '%' || type == '~')) {
    lua_settable(lua, -3);
  }
  return true;
}

bool parse(lua_State* lua, std::string_view r, size_t& pos, int depth) {
  if (pos >= r.size() || depth > 1000) {
    return false;
  }
  char type = r[pos];
  size_t e = line_end(r, pos + 1);
  if (e == std::string_view::npos) {
    return false;
  }
  std::string_view line = r.substr(pos + 1, e - pos - 1);
  pos = e + 2;
  if (lua != nullptr) {
    lua_checkstack(lua, 5);
  }
  switch (type) {
    case ':': {
      int64_t v = 0;
      if (!parse_len(line, v)) {
        return false;
      }
      if (lua != nullptr) {
        lua_pushnumber(lua, static_cast<lua_Number>(v));
      }
      return true;
    }
    case '+':
      if (lua != nullptr) {
        lua_newtable(lua);
        lua_pushstring(lua, "ok");
        lua_pushlstring(lua, line.data(), line.size());
        lua_settable(lua, -3);
      }
      return true;
    case '-':
      if (lua != nullptr) {
        std::string err = "-";
        err += line;
        push_error_table(lua, err);
        lua_pushstring(lua, "ignore_error_stats_update");
        lua_pushboolean(lua, 1);
        lua_settable(lua, -3);
      }
      return true;
    case '$':
    case '=': {
      int64_t n = 0;
      if (!parse_len(line, n)) {
        return false;
      }
      if (n < 0) {
        if (lua != nullptr) {
          lua_pushboolean(lua, 0);
        }
        return true;
      }
      size_t len = static_cast<size_t>(n);
      if (pos + len + 2 > r.size()) {
        return false;
      }
      std::string_view data = r.substr(pos, len);
      pos += len + 2;
      if (lua == nullptr) {
        return true;
      }
      if (type == '$') {
        lua_pushlstring(lua, data.data(), data.size());
      } else {
        if (data.size() < 4) {
          return false;
        }
        lua_newtable(lua);
        lua_pushstring(lua, "verbatim_string");
        lua_newtable(lua);
        lua_pushstring(lua, "string");
        lua_pushlstring(lua, data.data() + 4, data.size() - 4);
        lua_settable(lua, -3);
        lua_pushstring(lua, "format");
        lua_pushlstring(lua, data.data(), 3);
        lua_settable(lua, -3);
        lua_settable(lua, -3);
      }
      return true;
    }
    case '*':
    case '%':
    case '~':
    case '>': {
      int64_t n = 0;
      if (!parse_len(line, n)) {
        return false;
      }
      if (n < 0) {
        if (lua != nullptr) {
          lua_pushboolean(lua, 0);
        }
        return true;
      }
      return parse_aggregate_items(lua, r, pos, depth, n, type == '>' ? '*' : type);
    }
    case '|': {
      int64_t n = 0;
      if (!parse_len(line, n) || n < 0) {
        return false;
      }
      // Each attribute is a key and a value (n pairs; 2 * n could overflow).
      for (int64_t j = 0; j < n; ++j) {
        if (!parse(nullptr, r, pos, depth + 1) || !parse(nullptr, r, pos, depth + 1)) {
          return false;
        }
      }
      return parse(lua, r, pos, depth + 1);
    }
    case '_':
      if (lua != nullptr) {
        lua_pushnil(lua);
      }
      return true;
    case '#':
      if (line != "t" && line != "f") {
        return false;
      }
      if (lua != nullptr) {
        lua_pushboolean(lua, line == "t" ? 1 : 0);
      }
      return true;
    case ',': {
      if (lua != nullptr) {
        std::string text(line);
        double d = 0;
        if (text == "inf") {
          d = HUGE_VAL;
        } else if (text == "-inf") {
          d = -HUGE_VAL;
        } else if (text == "nan" || text == "-nan") {
          d = std::nan("");
        } else {
          d = std::strtod(text.c_str(), nullptr);
        }
        lua_newtable(lua);
        lua_pushstring(lua, "double");
        lua_pushnumber(lua, d);
        lua_settable(lua, -3);
      }
      return true;
    }
    case '(':
      if (lua != nullptr) {
        lua_newtable(lua);
        lua_pushstring(lua, "big_number");
        lua_pushlstring(lua, line.data(), line.size());
        lua_settable(lua, -3);
      }
      return true;
    default:
      return false;
  }
}

// Valkey's sdsmapchars(s, "\r\n", "  "): status and big-number texts stay on one line.
std::string one_line(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c == '\r' || c == '\n') {
      c = ' ';
    }
  }
  return out;
}

// (long long)lua_tonumber as x86-64 converts: out of range and NaN give INT64_MIN.
int64_t to_integer(double d) {
  if (std::isnan(d) || d >= 9223372036854775808.0 || d < -9223372036854775808.0) {
    return INT64_MIN;
  }
  return static_cast<int64_t>(d);
}

// Reads t[field] with rawget; leaves it on the stack and returns its type.
int raw_field(lua_State* lua, const char* field) {
  lua_pushstring(lua, field);
  lua_rawget(lua, -2);
  return lua_type(lua, -1);
}

void write_error_table(lua_State* lua, ReplyBuilder& out) {
  // Stack: table. Valkey's luaExtractErrorInformation reads err and the stats flag.
  lua_getfield(lua, -1, "err");
  std::string msg = lua_isstring(lua, -1) != 0 ? std::string(lua_tostring(lua, -1)) : "";
  lua_pop(lua, 1);
  lua_getfield(lua, -1, "ignore_error_stats_update");
  bool ignore = lua_isboolean(lua, -1) && lua_toboolean(lua, -1) != 0;
  lua_pop(lua, 1);
  if (ignore) {
    std::string line = "-" + one_line(msg) + "\r\n";
    out.raw(line);
  } else {
    out.error(msg);
  }
}

}  // namespace

bool push_reply(lua_State* lua, std::string_view reply, size_t& pos) {
  int top = lua_gettop(lua);
  size_t start = pos;
  if (!parse(lua, reply, pos, 0)) {
    lua_settop(lua, top);
    pos = start;
    return false;
  }
  return true;
}

void push_error_table(lua_State* lua, std::string_view error) {
  std::string code = "ERR";
  std::string msg;
  if (!error.empty() && error[0] == '-') {
    size_t sp = error.find(' ');
    if (sp == std::string_view::npos) {
      msg = std::string(error.substr(1));
    } else {
      code = std::string(error.substr(1, sp - 1));
      msg = std::string(error.substr(sp + 1));
    }
  } else {
    msg = std::string(error);
  }
  // Valkey's sdstrim(msg, "\r\n") trims both ends.
  size_t b = msg.find_first_not_of("\r\n");
  size_t e = msg.find_last_not_of("\r\n");
  msg = b == std::string::npos ? std::string() : msg.substr(b, e - b + 1);
  std::string final_msg = code + " " + msg;
  lua_newtable(lua);
  lua_pushstring(lua, "err");
  lua_pushlstring(lua, final_msg.data(), final_msg.size());
  lua_settable(lua, -3);
}

void write_reply(lua_State* lua, ReplyBuilder& out, int script_resp) {
  if (lua_checkstack(lua, 4) == 0) {
    out.error("ERR reached lua stack limit");
    lua_pop(lua, 1);
    return;
  }
  switch (lua_type(lua, -1)) {
    case LUA_TSTRING: {
      size_t len = 0;
      const char* s = lua_tolstring(lua, -1, &len);
      out.bulk(std::string_view(s, len));
      break;
    }
    case LUA_TBOOLEAN:
      if (script_resp == 2) {
        if (lua_toboolean(lua, -1) != 0) {
          out.integer(1);
        } else {
          out.null();
        }
      } else {
        out.boolean(lua_toboolean(lua, -1) != 0);
      }
      break;
    case LUA_TNUMBER:
      out.integer(to_integer(lua_tonumber(lua, -1)));
      break;
    case LUA_TTABLE: {
      if (raw_field(lua, "err") == LUA_TSTRING) {
        lua_pop(lua, 1);
        write_error_table(lua, out);
        break;
      }
      lua_pop(lua, 1);
      if (raw_field(lua, "ok") == LUA_TSTRING) {
        out.simple(one_line(lua_tostring(lua, -1)));
        lua_pop(lua, 2);
        return;
      }
      lua_pop(lua, 1);
      if (raw_field(lua, "double") == LUA_TNUMBER) {
        out.double_value(lua_tonumber(lua, -1));
        lua_pop(lua, 2);
        return;
      }
      lua_pop(lua, 1);
      if (raw_field(lua, "big_number") == LUA_TSTRING) {
        size_t len = 0;
        const char* s = lua_tolstring(lua, -1, &len);
        std::string num = one_line(std::string_view(s, len));
        if (out.resp() == 2) {
          out.bulk(num);
        } else {
          out.raw("(" + num + "\r\n");
        }
        lua_pop(lua, 2);
        return;
      }
      lua_pop(lua, 1);
      if (raw_field(lua, "verbatim_string") == LUA_TTABLE) {
        if (raw_field(lua, "format") == LUA_TSTRING) {
          std::string format = lua_tostring(lua, -1);
          lua_pushstring(lua, "string");
          lua_rawget(lua, -3);
          if (lua_type(lua, -1) == LUA_TSTRING) {
            size_t len = 0;
            const char* s = lua_tolstring(lua, -1, &len);
            out.verbatim(std::string_view(s, len), std::string_view(format).substr(0, 3));
            lua_pop(lua, 4);
            return;
          }
          lua_pop(lua, 1);
        }
        lua_pop(lua, 1);
      }
      lua_pop(lua, 1);
      if (raw_field(lua, "map") == LUA_TTABLE) {
        size_t mark = out.begin_map();
        size_t n = 0;
        lua_pushnil(lua);
        while (lua_next(lua, -2) != 0) {
          lua_pushvalue(lua, -2);
          write_reply(lua, out, script_resp);
          write_reply(lua, out, script_resp);
          ++n;
        }
        out.end_map(mark, n);
        lua_pop(lua, 2);
        return;
      }
      lua_pop(lua, 1);
      if (raw_field(lua, "set") == LUA_TTABLE) {
        size_t n = 0;
        lua_pushnil(lua);
        while (lua_next(lua, -2) != 0) {
          lua_pop(lua, 1);
          ++n;
        }
        out.set(n);
        lua_pushnil(lua);
        while (lua_next(lua, -2) != 0) {
          lua_pop(lua, 1);
          lua_pushvalue(lua, -1);
          write_reply(lua, out, script_resp);
        }
        lua_pop(lua, 2);
        return;
      }
      lua_pop(lua, 1);
      size_t mark = out.begin_array();
      size_t n = 0;
      for (int j = 1;; ++j) {
        lua_pushnumber(lua, j);
        lua_rawget(lua, -2);
        if (lua_type(lua, -1) == LUA_TNIL) {
          lua_pop(lua, 1);
          break;
        }
        write_reply(lua, out, script_resp);
        ++n;
      }
      out.end_array(mark, n);
      break;
    }
    default:
      out.null();
  }
  lua_pop(lua, 1);
}

bool round_trip_reply(std::string_view reply, int client_resp, int script_resp, std::string& out) {
  lua_State* lua = luaL_newstate();
  size_t pos = 0;
  bool ok = push_reply(lua, reply, pos);
  if (ok) {
    ReplyBuilder rb(out, client_resp);
    write_reply(lua, rb, script_resp);
  }
  lua_close(lua);
  return ok;
}

std::string number_argument(double value) {
  // Valkey's double2ll only trusts the cast within +-LLONG_MAX/2.
  constexpr double k_half = static_cast<double>(INT64_MAX / 2);
  if (value >= -k_half && value <= k_half) {
    auto as_int = static_cast<int64_t>(value);
    if (static_cast<double>(as_int) == value) {
      return std::to_string(as_int);
    }
  }
  return format_grisu2(value);
}

}  // namespace keyshift::engine::lua
