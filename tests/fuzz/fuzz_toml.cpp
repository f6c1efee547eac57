// libFuzzer target for keyshift's TOML readers: any bytes read as a rewrite target catalog
// (targets.toml's format) and as a migration plan are taken or refused with an error naming
// the file, line and column, never crash or throw; a plan that was taken renders to TOML
// that reads back to the same rendering. Built by tests/fuzz/fuzz.sh.
#include "migrate/plan/plan_model.hpp"
#include "migrate/rewrite/target_table.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace mg = keyshift::migrate;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto catalog = mg::parse_target_catalog(text, "fuzz.toml");
  if (!catalog && catalog.error().find("fuzz.toml") == std::string::npos) {
    __builtin_trap();  // an error names the file
  }
  auto plan = mg::parse_plan_toml(text, "plan.toml");
  if (plan) {
    std::string rendered = mg::render_plan_toml(*plan);
    auto again = mg::parse_plan_toml(rendered, "rendered.toml");
    if (!again || mg::render_plan_toml(*again) != rendered) {
      __builtin_trap();
    }
  } else if (plan.error().find("plan.toml") == std::string::npos) {
    __builtin_trap();
  }
  return 0;
}
