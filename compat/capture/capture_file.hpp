#pragma once

#include "compat/capture/capture_record.hpp"
#include "engine/util/atomic_file.hpp"
#include "engine/util/expected.hpp"
#include "engine/util/file_error.hpp"
#include "engine/util/mapped_file.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

// The capture file, keyshift-capture(5): a header (magic, version, source identity and
// capture settings as key/value pairs) and then length-prefixed records, each closed by a
// CRC-64 of its body, the last one an end record written only by a clean close. A file
// without its end record, or whose tail does not check, is read up to the damage: every
// record before it stays usable, and the reader names the byte offset where it stopped.
namespace keyshift::compat::capture {

/// "KSCAPTR" and a NUL: the first eight bytes of every capture file.
inline constexpr std::string_view k_capture_magic{"KSCAPTR\0", 8};
/// The format version this build writes and the only one it reads.
inline constexpr uint32_t k_capture_version = 1;
/// A record body larger than this is damage, not data (a request is at most 512 MiB).
inline constexpr uint32_t k_max_record_body = 1u << 30;

/// What the header says: ordered key/value pairs ("source.redis_version", "capture.listen").
struct CaptureHeader {
  std::vector<std::pair<std::string, std::string>> fields;

  /// The value of `key`, or nullptr.
  const std::string* find(std::string_view key) const;
  /// Appends a field (keys are not checked for repeats; the first wins on reading).
  void add(std::string key, std::string value);
};

/// An event whose strings are borrowed, for writers that must not copy the bytes first.
struct CaptureEventView {
  EventKind kind = EventKind::request;
  uint16_t flags = k_flag_none;
  uint64_t conn_id = 0;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  uint64_t batch = 0;
  uint32_t db = 0;
  uint8_t resp = 2;
  std::string_view peer;
  std::string_view client_name;
  std::string_view client_lib;
  std::string_view bytes;
};

/// The borrowed view of `event` (valid while `event` lives).
CaptureEventView view_of(const CaptureEvent& event);

/// Appends the file's header (magic, version, fields) to `out`.
void encode_header(const CaptureHeader& header, std::string& out);
/// Appends one event record to `out`.
void encode_event(const CaptureEventView& event, std::string& out);
/// Appends the end record (the count of event records before it) to `out`.
void encode_end(uint64_t events, std::string& out);
/// The size encode_event appends for `event`.
size_t encoded_size(const CaptureEventView& event);

/// Writes a capture file: under a temporary name beside the target, buffered (memory stays
/// bounded by the buffer), then end record, fsync and rename on close(). Destroyed without
/// close() (or killed), the temporary file keeps what was written: readable up to its tail.
class CaptureFileWriter {
 public:
  /// Creates the temporary file for `path` and writes the header.
  static engine::Expected<CaptureFileWriter, engine::FileError> create(const std::string& path,
                                                                       const CaptureHeader& header);

  CaptureFileWriter(CaptureFileWriter&&) noexcept = default;
  CaptureFileWriter& operator=(CaptureFileWriter&&) noexcept = default;

  /// Appends one event (written once the buffer fills).
  std::optional<engine::FileError> append(const CaptureEventView& event);
  /// Appends bytes that are whole records made by encode_event, `events` of them.
  std::optional<engine::FileError> append_encoded(std::string_view records, uint64_t events);
  /// Writes what is buffered to the temporary file (no fsync).
  std::optional<engine::FileError> flush();
  /// Writes the end record, fsyncs and renames the file into place.
  std::optional<engine::FileError> close();
  /// Where the bytes go until close().
  const std::string& temp_path() const { return m_file.temp_path(); }
  /// Event records appended so far.
  uint64_t events() const { return m_events; }

 private:
  explicit CaptureFileWriter(engine::AtomicFile file) : m_file(std::move(file)) {}

  static constexpr size_t k_buffer_limit = 1 << 20;

  engine::AtomicFile m_file;
  std::string m_buffer;
  uint64_t m_events = 0;
};

/// Why a file is not a capture at all (the header could not be read).
struct CaptureOpenError {
  uint64_t offset = 0;  ///< where the header went wrong
  std::string message;  ///< e.g. "not a keyshift capture file (bad magic)"
};

/// Where the records stop being readable and why.
struct CaptureDamage {
  uint64_t offset = 0;  ///< the byte offset of the first record that could not be read
  std::string reason;   ///< e.g. "truncated record", "checksum mismatch", "no end record"
};

/// Reads a capture file record by record from a mapping of it; never throws on bad bytes.
class CaptureFileReader {
 public:
  /// Opens `path` and reads its header; a bad magic, version or header is an error.
  static engine::Expected<CaptureFileReader, CaptureOpenError> open(const std::string& path);
  /// Reads a capture from bytes in memory (tests, pipes); `bytes` must outlive the reader.
  static engine::Expected<CaptureFileReader, CaptureOpenError> from_bytes(std::string_view bytes);

  CaptureFileReader(CaptureFileReader&&) noexcept = default;
  CaptureFileReader& operator=(CaptureFileReader&&) noexcept = default;

  /// The header's fields.
  const CaptureHeader& header() const { return m_header; }
  /// The file's format version.
  uint32_t version() const { return m_version; }
  /// The next event into `out`; false at the end record or at damage (see damage()).
  bool next(CaptureEvent& out);
  /// Set once next() stopped at damage (a missing end record included).
  const std::optional<CaptureDamage>& damage() const { return m_damage; }
  /// True once next() reached a valid end record.
  bool complete() const { return m_complete; }
  /// Bytes of the file.
  uint64_t size() const { return m_data.size(); }

 private:
  CaptureFileReader() = default;
  static engine::Expected<CaptureFileReader, CaptureOpenError> parse(CaptureFileReader reader);
  void fail(uint64_t at, std::string reason);

  std::optional<engine::MappedFile> m_map;  // the file, when read from a path
  std::string_view m_data;
  size_t m_pos = 0;
  size_t m_dropped = 0;  // pages before this offset were given back
  uint32_t m_version = 0;
  uint64_t m_events = 0;
  bool m_done = false;
  bool m_complete = false;
  CaptureHeader m_header;
  std::optional<CaptureDamage> m_damage;
};

}  // namespace keyshift::compat::capture
