#pragma once
// Helpers shared by the connection-feature tests (transactions, pub/sub, blocking): an
// engine on a manual clock with several in-process sessions, whose pushed messages and
// late replies accumulate in Session::out.

#include "engine/engine.hpp"

#include <doctest/doctest.h>

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace keyshift::engine::conn_test {

struct Fixture {
  ManualClock clock;
  Engine engine;
  explicit Fixture(EngineConfig cfg = {}) : engine(std::move(cfg), clock) {}

  Session& client() { return engine.open_session(nullptr); }

  /// Runs one command and decodes its (first) reply.
  RespValue run(Session& s, std::initializer_list<std::string_view> argv) {
    std::vector<std::string_view> v(argv);
    return engine.run(s, v);
  }
  /// Runs one command and leaves every reply it produced in `s.out`.
  void send(Session& s, std::initializer_list<std::string_view> argv) {
    std::vector<std::string_view> v(argv);
    engine.execute(s, v);
  }
  void send(Session& s, const std::vector<std::string>& argv) {
    std::vector<std::string_view> v(argv.begin(), argv.end());
    engine.execute(s, v);
  }
  /// Decodes and removes everything waiting in `s.out`.
  static std::vector<RespValue> drain(Session& s) {
    std::vector<RespValue> out;
    std::string_view data(s.out);
    while (!data.empty()) {
      RespValue v;
      size_t used = 0;
      if (parse_resp(data, v, used) != RespParse::ok) {
        FAIL("undecodable output: " << data);
        break;
      }
      out.push_back(std::move(v));
      data.remove_prefix(used);
    }
    s.out.clear();
    return out;
  }
};

inline bool is_ok(const RespValue& v) {
  return v.type == RespValue::Type::simple && v.str == "OK";
}
inline bool is_simple(const RespValue& v, std::string_view s) {
  return v.type == RespValue::Type::simple && v.str == s;
}
inline bool is_null(const RespValue& v) {
  return v.type == RespValue::Type::null;
}
inline bool is_int(const RespValue& v, int64_t n) {
  return v.type == RespValue::Type::integer && v.integer == n;
}
inline bool is_bulk(const RespValue& v, std::string_view s) {
  return v.type == RespValue::Type::bulk && v.str == s;
}
inline bool is_err(const RespValue& v, std::string_view s) {
  return v.is_error() && v.str == s;
}
/// An array (or push) of bulk strings equal to `items`.
inline bool is_strings(const RespValue& v, std::initializer_list<std::string_view> items,
                       RespValue::Type type = RespValue::Type::array) {
  if (v.type != type || v.elements.size() != items.size()) {
    return false;
  }
  size_t i = 0;
  for (std::string_view s : items) {
    if (v.elements[i].type != RespValue::Type::bulk || v.elements[i].str != s) {
      return false;
    }
    ++i;
  }
  return true;
}
/// A (un)subscribe confirmation or message: [word, name-or-null, count] / [word, a, b].
inline bool is_confirm(const RespValue& v, std::string_view word, std::string_view name,
                       int64_t count, RespValue::Type type = RespValue::Type::array) {
  return v.type == type && v.elements.size() == 3 && is_bulk(v.elements[0], word) &&
         (name.empty() ? is_null(v.elements[1]) : is_bulk(v.elements[1], name)) &&
         is_int(v.elements[2], count);
}

}  // namespace keyshift::engine::conn_test
