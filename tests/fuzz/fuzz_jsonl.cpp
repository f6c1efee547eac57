// libFuzzer target for the JSON Lines reader of `import` and `verify` (what `rdb dump`
// writes): any bytes read as a dump are loaded into an engine line by line or refused with
// an error naming the line, never crash; whatever loaded can be read back. Built by
// tests/fuzz/fuzz.sh.
#include "compat/dump/jsonl_reader.hpp"
#include "engine/engine.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace {

namespace ks = keyshift::engine;

struct Target {
  ks::ManualClock clock;
  ks::Engine engine;
  Target() : engine(config(), clock) {}
  static ks::EngineConfig config() {
    ks::EngineConfig c;
    c.enable_debug_command = ks::EnableMode::yes;
    return c;
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Target* t = new Target();
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto parsed = keyshift::compat::read_dump_lines(
      text, [](ks::RdbKey&) -> ks::Expected<bool, std::string> { return true; });
  if (!parsed && parsed.error().find("line ") == std::string::npos) {
    __builtin_trap();  // an error names the line
  }
  auto loaded = keyshift::compat::load_jsonl(t->engine, text);
  if (loaded && *loaded > 0) {
    (void)t->engine.run({"DEBUG", "DIGEST"});
    (void)t->engine.run({"SCAN", "0", "COUNT", "1000"});
  }
  (void)t->engine.run({"FLUSHALL"});
  return 0;
}
