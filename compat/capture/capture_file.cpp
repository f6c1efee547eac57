#include "compat/capture/capture_file.hpp"

#include "engine/persistence/crc64.hpp"

#include <cstring>

namespace keyshift::compat::capture {
namespace {

// The record kind byte of the end record; event kinds are EventKind's values.
constexpr uint8_t k_end_kind = 0xFF;
// Bytes of an event body before its four strings, and the four length words.
constexpr size_t k_event_fixed = 1 + 2 + 8 + 8 + 8 + 8 + 4 + 1 + 4 * 4;
constexpr size_t k_len_size = 4;
constexpr size_t k_crc_size = 8;

template <typename T>
void put(std::string& out, T value) {
  char raw[sizeof(T)];
  auto u = static_cast<std::make_unsigned_t<T>>(value);
  for (size_t i = 0; i < sizeof(T); ++i) {
    raw[i] = static_cast<char>((u >> (8 * i)) & 0xFF);
  }
  out.append(raw, sizeof(T));
}

/// `value` little-endian at `p`; returns the end.
template <typename T>
char* store(char* p, T value) {
  auto u = static_cast<std::make_unsigned_t<T>>(value);
  for (size_t i = 0; i < sizeof(T); ++i) {
    p[i] = static_cast<char>((u >> (8 * i)) & 0xFF);
  }
  return p + sizeof(T);
}

void put_string(std::string& out, std::string_view s) {
  put<uint32_t>(out, static_cast<uint32_t>(s.size()));
  out.append(s);
}

template <typename T>
T get(const char* p) {
  std::make_unsigned_t<T> u = 0;
  for (size_t i = 0; i < sizeof(T); ++i) {
    u |= static_cast<std::make_unsigned_t<T>>(static_cast<unsigned char>(p[i])) << (8 * i);
  }
  return static_cast<T>(u);
}

// Appends the body's CRC after a body that starts at `body_at` in `out`.
void close_body(std::string& out, size_t body_at) {
  std::string_view body(out.data() + body_at, out.size() - body_at);
  put<uint64_t>(out, engine::crc64(0, body));
}

bool known_kind(uint8_t kind) {
  return kind >= static_cast<uint8_t>(EventKind::open) &&
         kind <= static_cast<uint8_t>(EventKind::drop);
}

// Reads length-prefixed strings from a body, bounded by its end.
struct BodyCursor {
  const char* p;
  const char* end;

  bool string(std::string& out) {
    if (static_cast<size_t>(end - p) < k_len_size) {
      return false;
    }
    auto n = get<uint32_t>(p);
    p += k_len_size;
    if (static_cast<size_t>(end - p) < n) {
      return false;
    }
    out.assign(p, n);
    p += n;
    return true;
  }
};

}  // namespace

const std::string* CaptureHeader::find(std::string_view key) const {
  for (const auto& [k, v] : fields) {
    if (k == key) {
      return &v;
    }
  }
  return nullptr;
}

void CaptureHeader::add(std::string key, std::string value) {
  fields.emplace_back(std::move(key), std::move(value));
}

CaptureEventView view_of(const CaptureEvent& event) {
  return CaptureEventView{event.kind,   event.flags,       event.conn_id,    event.start_ns,
                          event.end_ns, event.batch,       event.db,         event.resp,
                          event.peer,   event.client_name, event.client_lib, event.bytes};
}

void encode_header(const CaptureHeader& header, std::string& out) {
  out.append(k_capture_magic);
  put<uint32_t>(out, k_capture_version);
  size_t len_at = out.size();
  put<uint32_t>(out, 0);
  size_t body_at = out.size();
  put<uint32_t>(out, static_cast<uint32_t>(header.fields.size()));
  for (const auto& [k, v] : header.fields) {
    put_string(out, k);
    put_string(out, v);
  }
  auto body_len = static_cast<uint32_t>(out.size() - body_at);
  for (size_t i = 0; i < 4; ++i) {
    out[len_at + i] = static_cast<char>((body_len >> (8 * i)) & 0xFF);
  }
  close_body(out, body_at);
}

size_t encoded_size(const CaptureEventView& e) {
  return k_len_size + k_event_fixed + e.peer.size() + e.client_name.size() + e.client_lib.size() +
         e.bytes.size() + k_crc_size;
}

void encode_event(const CaptureEventView& e, std::string& out) {
  // Sized once and written in place: the proxy and the pcap import encode every event, and
  // one append per field (each checking the capacity) was a tenth of their time.
  size_t body_len =
      k_event_fixed + e.peer.size() + e.client_name.size() + e.client_lib.size() + e.bytes.size();
  size_t at = out.size();
  out.resize(at + k_len_size + body_len + k_crc_size);
  char* p = out.data() + at;
  p = store<uint32_t>(p, static_cast<uint32_t>(body_len));
  char* body = p;
  p = store<uint8_t>(p, static_cast<uint8_t>(e.kind));
  p = store<uint16_t>(p, e.flags);
  p = store<uint64_t>(p, e.conn_id);
  p = store<int64_t>(p, e.start_ns);
  p = store<int64_t>(p, e.end_ns);
  p = store<uint64_t>(p, e.batch);
  p = store<uint32_t>(p, e.db);
  p = store<uint8_t>(p, e.resp);
  for (std::string_view s : {e.peer, e.client_name, e.client_lib, e.bytes}) {
    p = store<uint32_t>(p, static_cast<uint32_t>(s.size()));
    if (!s.empty()) {
      std::memcpy(p, s.data(), s.size());
    }
    p += s.size();
  }
  store<uint64_t>(p, engine::crc64(0, std::string_view(body, body_len)));
}

void encode_end(uint64_t events, std::string& out) {
  put<uint32_t>(out, 1 + 8);
  size_t body_at = out.size();
  put<uint8_t>(out, k_end_kind);
  put<uint64_t>(out, events);
  close_body(out, body_at);
}

// ---- writer ----

engine::Expected<CaptureFileWriter, engine::FileError> CaptureFileWriter::create(
    const std::string& path, const CaptureHeader& header) {
  auto file = engine::AtomicFile::create(path, 0600);
  if (!file) {
    return engine::Unexpected{std::move(file.error())};
  }
  CaptureFileWriter writer(std::move(file.value()));
  encode_header(header, writer.m_buffer);
  // The header reaches the disk at once: a capture killed early is still a capture.
  if (auto error = writer.flush()) {
    return engine::Unexpected{std::move(*error)};
  }
  return writer;
}

std::optional<engine::FileError> CaptureFileWriter::append(const CaptureEventView& event) {
  encode_event(event, m_buffer);
  ++m_events;
  if (m_buffer.size() >= k_buffer_limit) {
    return flush();
  }
  return std::nullopt;
}

std::optional<engine::FileError> CaptureFileWriter::append_encoded(std::string_view records,
                                                                   uint64_t events) {
  m_events += events;
  if (m_buffer.empty() && records.size() >= k_buffer_limit) {
    return m_file.write(records);
  }
  m_buffer.append(records);
  if (m_buffer.size() >= k_buffer_limit) {
    return flush();
  }
  return std::nullopt;
}

std::optional<engine::FileError> CaptureFileWriter::flush() {
  if (m_buffer.empty()) {
    return std::nullopt;
  }
  auto error = m_file.write(m_buffer);
  m_buffer.clear();
  return error;
}

std::optional<engine::FileError> CaptureFileWriter::close() {
  encode_end(m_events, m_buffer);
  if (auto error = flush()) {
    return error;
  }
  return m_file.commit();
}

// ---- reader ----

engine::Expected<CaptureFileReader, CaptureOpenError> CaptureFileReader::open(
    const std::string& path) {
  auto map = engine::MappedFile::open(path, engine::MappedFile::Access::streaming);
  if (!map) {
    return engine::Unexpected{CaptureOpenError{0, map.error().message()}};
  }
  CaptureFileReader reader;
  reader.m_map.emplace(std::move(map.value()));
  reader.m_data = reader.m_map->data();
  return parse(std::move(reader));
}

engine::Expected<CaptureFileReader, CaptureOpenError> CaptureFileReader::from_bytes(
    std::string_view bytes) {
  CaptureFileReader reader;
  reader.m_data = bytes;
  return parse(std::move(reader));
}

engine::Expected<CaptureFileReader, CaptureOpenError> CaptureFileReader::parse(
    CaptureFileReader reader) {
  std::string_view d = reader.m_data;
  if (d.size() < k_capture_magic.size() || d.substr(0, k_capture_magic.size()) != k_capture_magic) {
    return engine::Unexpected{CaptureOpenError{0, "not a keyshift capture file (bad magic)"}};
  }
  size_t pos = k_capture_magic.size();
  if (d.size() < pos + 8) {
    return engine::Unexpected{CaptureOpenError{pos, "truncated header"}};
  }
  reader.m_version = get<uint32_t>(d.data() + pos);
  if (reader.m_version != k_capture_version) {
    return engine::Unexpected{CaptureOpenError{
        pos, "unsupported capture format version " + std::to_string(reader.m_version) +
                 " (this keyshift reads version " + std::to_string(k_capture_version) + ")"}};
  }
  auto body_len = get<uint32_t>(d.data() + pos + 4);
  pos += 8;
  if (body_len > k_max_record_body || d.size() - pos < size_t{body_len} + k_crc_size) {
    return engine::Unexpected{CaptureOpenError{pos, "truncated header"}};
  }
  std::string_view body = d.substr(pos, body_len);
  if (engine::crc64(0, body) != get<uint64_t>(d.data() + pos + body_len)) {
    return engine::Unexpected{CaptureOpenError{pos, "header checksum mismatch"}};
  }
  BodyCursor c{body.data(), body.data() + body.size()};
  if (body.size() < 4) {
    return engine::Unexpected{CaptureOpenError{pos, "malformed header"}};
  }
  auto count = get<uint32_t>(c.p);
  c.p += 4;
  for (uint32_t i = 0; i < count; ++i) {
    std::string k;
    std::string v;
    if (!c.string(k) || !c.string(v)) {
      return engine::Unexpected{CaptureOpenError{pos, "malformed header"}};
    }
    reader.m_header.add(std::move(k), std::move(v));
  }
  if (c.p != c.end) {
    return engine::Unexpected{CaptureOpenError{pos, "malformed header"}};
  }
  reader.m_pos = pos + body_len + k_crc_size;
  return reader;
}

void CaptureFileReader::fail(uint64_t at, std::string reason) {
  m_done = true;
  m_damage = CaptureDamage{at, std::move(reason)};
}

bool CaptureFileReader::next(CaptureEvent& out) {
  if (m_done) {
    return false;
  }
  std::string_view d = m_data;
  size_t at = m_pos;
  if (at == d.size()) {
    fail(at, "no end record (the capture was not closed: killed, or still being written)");
    return false;
  }
  if (d.size() - at < k_len_size) {
    fail(at, "truncated record length");
    return false;
  }
  auto body_len = get<uint32_t>(d.data() + at);
  if (body_len == 0 || body_len > k_max_record_body) {
    fail(at, "impossible record length " + std::to_string(body_len));
    return false;
  }
  if (d.size() - at - k_len_size < size_t{body_len} + k_crc_size) {
    fail(at, "truncated record");
    return false;
  }
  std::string_view body = d.substr(at + k_len_size, body_len);
  if (engine::crc64(0, body) != get<uint64_t>(body.data() + body_len)) {
    fail(at, "record checksum mismatch");
    return false;
  }
  auto kind = static_cast<uint8_t>(body[0]);
  if (kind == k_end_kind) {
    if (body_len != 9) {
      fail(at, "malformed end record");
      return false;
    }
    auto events = get<uint64_t>(body.data() + 1);
    if (events != m_events) {
      fail(at, "end record counts " + std::to_string(events) + " events, the file holds " +
                   std::to_string(m_events));
      return false;
    }
    m_done = true;
    m_complete = true;
    if (at + k_len_size + body_len + k_crc_size != d.size()) {
      m_complete = false;
      m_damage =
          CaptureDamage{at + k_len_size + body_len + k_crc_size, "bytes after the end record"};
    }
    return false;
  }
  if (!known_kind(kind) || body_len < k_event_fixed) {
    fail(at, "unknown or malformed record");
    return false;
  }
  const char* p = body.data();
  out.kind = static_cast<EventKind>(kind);
  out.flags = get<uint16_t>(p + 1);
  out.conn_id = get<uint64_t>(p + 3);
  out.start_ns = get<int64_t>(p + 11);
  out.end_ns = get<int64_t>(p + 19);
  out.batch = get<uint64_t>(p + 27);
  out.db = get<uint32_t>(p + 35);
  out.resp = static_cast<uint8_t>(p[39]);
  BodyCursor c{p + 40, body.data() + body.size()};
  if (!c.string(out.peer) || !c.string(out.client_name) || !c.string(out.client_lib) ||
      !c.string(out.bytes) || c.p != c.end) {
    fail(at, "malformed record");
    return false;
  }
  m_pos = at + k_len_size + body_len + k_crc_size;
  ++m_events;
  // A mapped file's pages behind the reader are given back, so memory stays bounded.
  if (m_map && m_pos - m_dropped > (size_t{1} << 24)) {
    m_map->drop(m_dropped, m_pos);
    m_dropped = m_pos;
  }
  return true;
}

}  // namespace keyshift::compat::capture
