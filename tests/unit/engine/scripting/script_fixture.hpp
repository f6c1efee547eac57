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
};

}  // namespace keyshift::engine::test
