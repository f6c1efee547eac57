// libFuzzer target for the MONITOR log reader (verify clients, capture --from-monitor-log):
// any bytes read as a log are taken line by line or refused at a line and column inside the
// input, never crash; a command that was read, written back with format_monitor_line, reads
// back to the same arguments. Built by tests/fuzz/fuzz.sh.
#include "compat/monitor/monitor_log.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace c = keyshift::compat;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  uint64_t lines = 1;
  for (char ch : text) {
    lines += ch == '\n' ? 1 : 0;
  }
  auto summary = c::read_monitor_text(text, [&](const c::MonitorEntry& entry) {
    if (entry.args.empty() || entry.line == 0 || entry.line > lines) {
      __builtin_trap();
    }
    if (entry.peer.empty()) {
      return true;  // Redis 2.4's "(db N)" lines name no peer: today's format cannot say that
    }
    std::vector<std::string> args(entry.args.begin(), entry.args.end());
    std::string line = c::format_monitor_line(entry.time_us, entry.db, entry.peer, args);
    c::MonitorLineParser parser;
    c::MonitorEntry back;
    auto read = parser.parse(line, 1, back);
    if (!read || !*read || back.args.size() != args.size()) {
      std::fprintf(stderr, "re-formatted line does not read back: %s (%s)\n", line.c_str(),
                   read ? "no command" : read.error().message.c_str());
      std::abort();
    }
    for (size_t i = 0; i < args.size(); ++i) {
      if (back.args[i] != args[i]) {
        __builtin_trap();
      }
    }
    return true;
  });
  if (!summary && (summary.error().line == 0 || summary.error().line > lines)) {
    __builtin_trap();  // an error names a line of the input
  }
  return 0;
}
