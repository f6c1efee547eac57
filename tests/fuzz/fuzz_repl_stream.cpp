// libFuzzer target for the replica side of replication (serve as a replica, import --sync,
// verify --snapshot): any bytes a primary could send after its PSYNC reply (keepalive
// newlines, the RDB payload with disk-based or diskless EOF-mark framing, then the command
// stream) are read or refused with an error text, fed in pieces of any size, never crash;
// the replication offset counts exactly the command bytes. The first byte picks full or
// partial sync and the piece size. Built by tests/fuzz/fuzz.sh.
#include "engine/repl/repl_stream.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace {

namespace ks = keyshift::engine;

class Sink : public ks::ReplStreamHandler {
 public:
  bool on_payload_begin(std::optional<uint64_t> size) override {
    m_expected = size;
    m_got = 0;
    return true;
  }
  bool on_payload(std::string_view bytes) override {
    m_got += bytes.size();
    if (m_expected && m_got > *m_expected) {
      __builtin_trap();  // never more payload than announced
    }
    return true;
  }
  bool on_payload_end() override {
    if (m_expected && m_got != *m_expected) {
      __builtin_trap();
    }
    return true;
  }
  bool on_command(std::span<const std::string_view> argv, uint64_t offset) override {
    if (argv.empty() || offset <= m_last_offset) {
      __builtin_trap();  // each command moves the offset on
    }
    m_last_offset = offset;
    return (offset & 7) != 0;  // pause now and then, as a busy replica does
  }

 private:
  std::optional<uint64_t> m_expected;
  uint64_t m_got = 0;
  uint64_t m_last_offset = 0;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) {
    return 0;
  }
  const bool full = (data[0] & 1) != 0;
  const size_t piece = 1 + (data[0] >> 1);
  std::string_view bytes(reinterpret_cast<const char*>(data + 1), size - 1);
  ks::ReplStreamParser parser(full, 1000);
  Sink sink;
  size_t fed = 0;
  do {
    size_t n = std::min(piece, bytes.size() - fed);
    auto r = parser.feed(bytes.substr(fed, n), sink);
    fed += n;
    // A pause keeps the rest; feeding nothing goes on with it.
    for (int i = 0; i < 64 && r && !*r; ++i) {
      r = parser.feed({}, sink);
    }
    if (!r) {
      if (r.error().empty()) {
        __builtin_trap();
      }
      return 0;
    }
  } while (fed < bytes.size());
  if (parser.offset() < 1000 || parser.offset() - 1000 > bytes.size()) {
    __builtin_trap();
  }
  return 0;
}
