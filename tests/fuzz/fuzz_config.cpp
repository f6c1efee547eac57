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
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace {

namespace ks = keyshift::engine;

[[noreturn]] void fail(const std::string& what, const std::string& a, const std::string& b) {
  std::fprintf(stderr, "%s\n--- first:\n%s\n--- second:\n%s\n", what.c_str(), a.c_str(), b.c_str());
  std::abort();
}

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

// Valkey keeps bind addresses as words and CONFIG REWRITE writes them joined by spaces, so
// an address with a space in it ("bind 'a b'") reads back as two there too; such an address
// can never be listened on, so keyshift keeps Valkey's behaviour and the check skips it.
bool has_spaced_bind_address(const std::vector<ks::Directive>& directives) {
  for (const ks::Directive& d : directives) {
    if (d.name != "bind") {
      continue;
    }
    for (const std::string& a : d.args) {
      if (a.find_first_of(" \t\r\n\v\f") != std::string::npos) {
        return true;
      }
    }
  }
  return false;
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
    if (!ks::apply_directives(*directives, config, warnings) &&
        !has_spaced_bind_address(*directives)) {
      // What was taken renders to a file that reads back to the same file text.
      std::string rendered = ks::render_config(config);
      auto again = ks::parse_config_text(rendered, "rendered.conf");
      if (!again) {
        __builtin_trap();
      }
      ks::EngineConfig reread;
      if (auto err = ks::apply_directives(*again, reread, warnings)) {
        fail("the rendered config is refused: " + err->message, rendered, err->text);
      }
      if (std::string second = ks::render_config(reread); second != rendered) {
        fail("the rendered config reads back differently", rendered, second);
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
