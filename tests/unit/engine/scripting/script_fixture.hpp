#pragma once

#include "engine/engine.hpp"
#include "engine/util/clock.hpp"

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace keyshift::engine::test {

/// An engine on a manual clock with one session, for script tests that compare reply bytes.
struct ScriptFixture {
  ManualClock clock;
  Engine engine{EngineConfig{}, clock};
  Session& session = engine.open_session(nullptr);

  /// The exact reply bytes of one command.
  std::string raw(std::initializer_list<std::string_view> argv) {
    std::vector<std::string_view> v(argv);
    size_t mark = session.out.size();
    engine.execute(session, v);
    std::string out = session.out.substr(mark);
    session.out.resize(mark);
    return out;
  }

  /// The body of the bulk reply EVAL gives for `script`, or the whole reply when it is no
  /// bulk string.
  std::string bulk(const std::string& script) {
    std::string out = raw({"eval", script, "0"});
    size_t body = out.find("\r\n");
    if (out.empty() || out[0] != '$' || body == std::string::npos) {
      return out;
    }
    return out.substr(body + 2, out.size() - body - 4);
  }

  /// The bytes of the Lua string `expression` evaluates to, in lowercase hex.
  std::string hex_of(const std::string& expression) {
    return bulk("local e = " + expression +
                " local h = '' for i = 1, #e do h = h .. "
                "string.format('%02x', string.byte(e, i)) end return h");
  }
};

}  // namespace keyshift::engine::test
