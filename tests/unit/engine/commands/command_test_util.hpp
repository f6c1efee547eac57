#pragma once
// Helpers shared by the command family tests: an engine on a manual clock with one session,
// and the two renderings of replies the tests compare against (redis-cli's display, and a
// compact one-line form).

#include "engine/engine.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace keyshift::engine::command_test {

/// A reply in one compact line: bulk as is, ",x" doubles, ":n" integers, "nil", "-ERR ..."
/// errors, "+s" simple strings, arrays (and sets, maps) as [a,b].
inline std::string show(const RespValue& v) {
  switch (v.type) {
    case RespValue::Type::bulk:
      return v.str;
    case RespValue::Type::double_:
      return "," + v.str;
    case RespValue::Type::integer:
      return ":" + std::to_string(v.integer);
    case RespValue::Type::null:
      return "nil";
    case RespValue::Type::error:
      return "-" + v.str;
    case RespValue::Type::simple:
      return "+" + v.str;
    default: {
      std::string out = "[";
      for (size_t i = 0; i < v.elements.size(); ++i) {
        out += (i > 0 ? "," : "") + show(v.elements[i]);
      }
      return out + "]";
    }
  }
}

/// An engine on a manual clock whose commands run without a session (RESP2); the reply is
/// required to have the expected kind.
struct ReplyFixture {
  ManualClock clock;
  Engine engine{EngineConfig{}, clock};

  RespValue run(std::initializer_list<std::string_view> args) { return engine.run(args); }
  /// The integer reply.
  int64_t num(std::initializer_list<std::string_view> args) {
    RespValue v = engine.run(args);
    REQUIRE(v.type == RespValue::Type::integer);
    return v.integer;
  }
  /// The text of a reply that is not an error.
  std::string str(std::initializer_list<std::string_view> args) {
    RespValue v = engine.run(args);
    REQUIRE(!v.is_error());
    return v.str;
  }
  /// The text of the error reply.
  std::string err(std::initializer_list<std::string_view> args) {
    RespValue v = engine.run(args);
    REQUIRE(v.is_error());
    return v.str;
  }
};

/// An engine on a manual clock with one session; `h({...})` renders the reply as redis-cli
/// prints it, `h.raw({...})` decodes it.
struct Harness {
  explicit Harness(EngineConfig config = {})
      : engine(std::move(config), clock), session(engine.open_session(nullptr)) {}

  std::string operator()(std::initializer_list<std::string_view> argv) {
    return raw(argv).to_display();
  }
  RespValue raw(std::initializer_list<std::string_view> argv) {
    std::vector<std::string_view> v(argv);
    return engine.run(session, v);
  }
  RespValue raw(const std::vector<std::string>& argv) {
    std::vector<std::string_view> v(argv.begin(), argv.end());
    return engine.run(session, v);
  }

  ManualClock clock;
  Engine engine;
  Session& session;
};

/// redis-cli's rendering of an error reply.
inline std::string err(std::string_view text) {
  return "(error) " + std::string(text);
}
/// redis-cli's rendering of an integer reply.
inline std::string num(int64_t n) {
  return "(integer) " + std::to_string(n);
}
/// redis-cli's rendering of a bulk reply.
inline std::string bulk(std::string_view s) {
  return "\"" + std::string(s) + "\"";
}

}  // namespace keyshift::engine::command_test
