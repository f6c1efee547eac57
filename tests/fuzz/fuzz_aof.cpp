// libFuzzer target for the AOF reader (serve's load, import --from-aof, verify): any bytes
// read as a single-file AOF (RESP commands, an RDB preamble when they start with "REDIS")
// and as a multi-part manifest are taken or refused with an error naming the file and a byte
// offset (or manifest line) inside the input, never crash; a manifest that was taken renders
// to text that reads back to the same text. Built by tests/fuzz/fuzz.sh.
#include "engine/persistence/aof_reader.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace {

namespace ks = keyshift::engine;

class Count : public ks::AofVisitor {
 public:
  bool on_command(const ks::AofCommand& command) override {
    if (command.argv.empty() || command.offset >= command.file->size) {
      __builtin_trap();
    }
    ++m_commands;
    return true;
  }

 private:
  uint64_t m_commands = 0;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  for (bool truncated_ok : {true, false}) {
    ks::AofFileInfo file;
    file.path = "fuzz.aof";
    file.name = "fuzz.aof";
    file.last = true;
    file.size = size;
    ks::AofReadOptions options;
    options.allow_truncated = truncated_ok;
    Count visitor;
    auto summary = ks::read_aof_bytes(bytes, file, visitor, options);
    if (!summary) {
      if (summary.error().offset > size ||
          summary.error().describe().find("fuzz.aof") == std::string::npos) {
        __builtin_trap();
      }
    } else if (summary->truncated && summary->truncated_at > size) {
      __builtin_trap();
    }
  }
  auto manifest = ks::parse_aof_manifest(bytes, "fuzz.manifest");
  // A manifest of comments only reads as empty, as in Valkey, which never writes one: only
  // manifests with files are formatted back.
  if (manifest && !manifest->entries.empty()) {
    std::string text = ks::format_aof_manifest(*manifest);
    auto again = ks::parse_aof_manifest(text, "again.manifest");
    // A long name of odd bytes, quoted with \x escapes, can outgrow the line limit, as in
    // Valkey, whose names are short: that is the one refusal allowed.
    bool too_long = !again && again.error().message.find("too long line") != std::string::npos;
    if (!too_long && (!again || ks::format_aof_manifest(*again) != text)) {
      __builtin_trap();
    }
  } else if (!manifest && manifest.error().message.empty()) {
    __builtin_trap();
  }
  return 0;
}
