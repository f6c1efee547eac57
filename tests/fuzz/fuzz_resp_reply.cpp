// libFuzzer target for the client side of RESP: `parse_resp` (the decoding reader of
// probes and tests) and `ReplyScanner` (the load generators' reply finder, fed in pieces)
// must read any bytes as replies or refuse them, never crash or hang; and where the decoder
// reads whole replies, the scanner must find the same number of them, ending at the same bytes.
// Built by tests/fuzz/fuzz.sh.
#include "engine/resp/reply_scanner.hpp"
#include "engine/resp/resp_value.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace {

using keyshift::engine::ReplyScanner;
using keyshift::engine::RespParse;
using keyshift::engine::RespValue;

// The ends of the replies the decoder reads, until it needs more or refuses.
std::vector<size_t> decoded_ends(std::string_view bytes, bool& refused) {
  std::vector<size_t> ends;
  size_t at = 0;
  refused = false;
  while (at < bytes.size()) {
    RespValue value;
    size_t used = 0;
    RespParse status = keyshift::engine::parse_resp(bytes.substr(at), value, used);
    if (status != RespParse::ok) {
      refused = status == RespParse::error;
      break;
    }
    if (used == 0 || used > bytes.size() - at) {
      __builtin_trap();
    }
    (void)value.to_display();
    at += used;
    ends.push_back(at);
  }
  return ends;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) {
    return 0;
  }
  const size_t piece = 1 + (data[0] & 0x1F);
  std::string_view bytes(reinterpret_cast<const char*>(data + 1), size - 1);
  bool refused = false;
  std::vector<size_t> ends = decoded_ends(bytes, refused);

  // The scanner sees the bytes `piece` at a time; an unconsumed partial line comes again.
  ReplyScanner scanner;
  std::vector<size_t> scanned;
  size_t done = 0;
  size_t avail = 0;
  bool scan_error = false;
  while (done < bytes.size()) {
    avail = std::min(bytes.size(), std::max(avail, done) + piece);
    size_t used = 0;
    auto status = scanner.scan(bytes.data() + done, avail - done, used);
    if (used > avail - done) {
      __builtin_trap();
    }
    done += used;
    if (status == ReplyScanner::Status::error) {
      scan_error = true;
      break;
    }
    if (status == ReplyScanner::Status::reply) {
      scanned.push_back(done);
    } else if (avail == bytes.size() && used == 0) {
      break;  // a partial reply at the end
    }
  }
  // Replies both readers took whole must end at the same bytes (the scanner is looser about
  // what is inside a reply, so it may go on where the decoder refuses).
  size_t common = std::min(ends.size(), scanned.size());
  for (size_t i = 0; i < common; ++i) {
    if (ends[i] != scanned[i]) {
      __builtin_trap();
    }
  }
  (void)scan_error;
  (void)refused;
  return 0;
}
