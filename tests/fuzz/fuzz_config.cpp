// libFuzzer target for the configuration readers: any bytes read as a valkey.conf (lines
// split and unquoted, includes resolved against an in-memory filesystem that holds the input
// itself, so an include loop must be refused, then every directive applied to a fresh
// EngineConfig) and as CONFIG SET name/value pairs (one a line, tab between name and value)
// are taken or refused with Valkey's message, never crash; whatever was taken must render
// to a file that reads back. Built by tests/fuzz/fuzz.sh.
#include "engine/server/config.hpp"
#include "engine/server/config_file.hpp"
#include "engine/server/config_table.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace {

namespace ks = keyshift::engine;

std::vector<std::string> config_set_pairs(std::string_view text) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) {
      end = text.size();
    }
    std::string_view line = text.substr(pos, end - pos);
    size_t tab = line.find('\t');
    out.emplace_back(line.substr(0, tab));
    out.emplace_back(tab == std::string_view::npos ? std::string_view() : line.substr(tab + 1));
    pos = end + 1;
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  ks::MemoryConfigFilesystem fs("/etc");
  fs.add_file("/etc/valkey.conf", std::string(text));
  fs.add_file("/etc/included.conf", "maxmemory 1mb\n");
  std::vector<std::string> warnings;
  auto directives = ks::read_config_file(fs, "/etc/valkey.conf");
  if (directives) {
    ks::EngineConfig config;
    if (!ks::apply_directives(*directives, config, warnings)) {
      // What was taken renders to a file that reads back to the same file text.
      std::string rendered = ks::render_config(config);
      auto again = ks::parse_config_text(rendered, "rendered.conf");
      if (!again) {
        __builtin_trap();
      }
      ks::EngineConfig reread;
      if (ks::apply_directives(*again, reread, warnings) || ks::render_config(reread) != rendered) {
        __builtin_trap();
      }
    }
  } else if (directives.error().message.empty()) {
    __builtin_trap();
  }
  ks::EngineConfig config;
  std::vector<std::string> pairs = config_set_pairs(text);
  (void)ks::config_set(config, pairs, ks::ClientLocality::local);
  for (size_t i = 0; i + 1 < pairs.size(); i += 2) {
    (void)ks::parse_memory(pairs[i + 1]);
  }
  return 0;
}
