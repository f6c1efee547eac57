// libFuzzer target for the capture file reader (keyshift-capture(5), read by replay, capture
// info and verify clients). Odd first byte: the rest is read as a file, which must be taken
// record by record or stopped at damage with an offset inside the file, never crash. Even
// first byte: the rest is cut into events that are written with the file's own encoder (so
// the checksums hold and the reader gets past them) and must read back field for field.
// Built by tests/fuzz/fuzz.sh.
#include "compat/capture/capture_file.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace {

namespace cap = keyshift::compat::capture;

void read_all(std::string_view bytes) {
  auto reader = cap::CaptureFileReader::from_bytes(bytes);
  if (!reader) {
    if (reader.error().offset > bytes.size() || reader.error().message.empty()) {
      __builtin_trap();
    }
    return;
  }
  cap::CaptureEvent event;
  while (reader->next(event)) {
  }
  if (reader->damage() && reader->damage()->offset > bytes.size()) {
    __builtin_trap();
  }
}

// Takes `n` bytes from the front of `in` (fewer at its end).
std::string_view take(std::string_view& in, size_t n) {
  std::string_view out = in.substr(0, std::min(n, in.size()));
  in.remove_prefix(out.size());
  return out;
}

void round_trip(std::string_view in) {
  cap::CaptureHeader header;
  header.add("source.redis_version", std::string(take(in, in.empty() ? 0 : in[0] & 7)));
  std::vector<cap::CaptureEvent> events;
  while (in.size() >= 4) {
    cap::CaptureEvent e;
    e.kind = static_cast<cap::EventKind>(1 + static_cast<uint8_t>(in[0]) % 5);
    e.flags = static_cast<uint8_t>(in[1]);
    e.conn_id = static_cast<uint8_t>(in[2]);
    e.db = static_cast<uint8_t>(in[3]) & 15;
    e.start_ns = static_cast<int64_t>(events.size()) * 1000;
    e.end_ns = e.start_ns + static_cast<uint8_t>(in[3]);
    size_t len = static_cast<uint8_t>(in[3]) >> 4;
    in.remove_prefix(4);
    e.peer = std::string(take(in, len & 3));
    e.client_name = std::string(take(in, len >> 2));
    e.bytes = std::string(take(in, len * 3));
    events.push_back(std::move(e));
  }
  std::string file;
  cap::encode_header(header, file);
  for (const cap::CaptureEvent& e : events) {
    cap::encode_event(cap::view_of(e), file);
  }
  cap::encode_end(events.size(), file);
  auto reader = cap::CaptureFileReader::from_bytes(file);
  if (!reader) {
    __builtin_trap();
  }
  cap::CaptureEvent back;
  size_t i = 0;
  while (reader->next(back)) {
    if (i >= events.size() || back.kind != events[i].kind || back.conn_id != events[i].conn_id ||
        back.bytes != events[i].bytes || back.db != events[i].db) {
      __builtin_trap();
    }
    ++i;
  }
  if (i != events.size() || !reader->complete()) {
    __builtin_trap();
  }
  // Every cut of the good file is read or refused, never crashes.
  read_all(std::string_view(file).substr(0, file.size() / 2));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) {
    return 0;
  }
  std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
  if ((data[0] & 1) != 0) {
    read_all(rest);
  } else {
    round_trip(rest);
  }
  return 0;
}
