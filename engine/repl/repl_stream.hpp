#pragma once

#include "engine/resp/request_parser.hpp"
#include "engine/util/expected.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

// What a primary sends a replica after its PSYNC reply, read without any I/O so that every
// way the bytes can be split is testable: for a full sync the newlines it keeps the link
// alive with, the RDB payload (disk-based `$<len>\r\n` or diskless `$EOF:<40-byte mark>\r\n`
// framing), then the command stream as RESP multibulk with the replication offset counted
// exactly as the primary counts it (every byte of every command, PINGs included; the
// out-of-band newlines not).
namespace keyshift::engine {

/// Receives what ReplStreamParser finds, in stream order. A payload callback that returns
/// false ends the sync (feed() fails); on_command's false only pauses it.
class ReplStreamHandler {
 public:
  virtual ~ReplStreamHandler() = default;
  /// A newline before the payload (the primary is still preparing it).
  virtual void on_keepalive() {}
  /// The payload starts: `size` bytes (disk-based), or until the EOF mark (diskless: none).
  virtual bool on_payload_begin(std::optional<uint64_t> size) = 0;
  /// The payload's next bytes (the EOF mark never among them).
  virtual bool on_payload(std::string_view bytes) = 0;
  /// The payload is complete.
  virtual bool on_payload_end() = 0;
  /// The bytes of the command stream about to be handed over, exactly as the primary sent
  /// them (what a replica passes on to replicas of its own), before on_command.
  virtual void on_stream_bytes(std::string_view raw) { (void)raw; }
  /// One command; `offset` is the replication offset just after it. The views last until
  /// the call returns. False stops the parser after this command (feed() again resumes).
  virtual bool on_command(std::span<const std::string_view> argv, uint64_t offset) = 0;
};

/// The replica side of a primary's stream, fed in pieces of any size.
class ReplStreamParser {
 public:
  enum class Phase : uint8_t { payload_header, payload, commands };

  /// `full_sync`: a payload comes first (after +FULLRESYNC); otherwise commands only
  /// (+CONTINUE). `offset` is the replication offset the stream starts at.
  ReplStreamParser(bool full_sync, uint64_t offset);

  /// Reads `bytes` (after what was fed before): false when a handler stopped it (the rest
  /// is kept; feed({}) goes on), an error text for a protocol violation.
  Expected<bool, std::string> feed(std::string_view bytes, ReplStreamHandler& handler);

  Phase phase() const { return m_phase; }
  /// The replication offset after the last command handed over.
  uint64_t offset() const { return m_offset; }
  /// Payload bytes handed over so far.
  uint64_t payload_bytes() const { return m_payload_done; }
  /// Bytes held for a command (or header line) not yet complete.
  size_t buffered() const { return m_buf.size() - m_pos; }

  /// The length of the diskless EOF mark.
  static constexpr size_t k_eof_mark_len = 40;

 private:
  Expected<bool, std::string> header(ReplStreamHandler& handler);
  Expected<bool, std::string> payload(std::string_view bytes, ReplStreamHandler& handler,
                                      size_t& used);
  Expected<bool, std::string> commands(ReplStreamHandler& handler);

  Phase m_phase;
  uint64_t m_offset;
  std::string m_buf;                       // header lines and commands not yet complete
  size_t m_pos = 0;                        // first unread byte of m_buf
  std::optional<uint64_t> m_payload_left;  // disk-based: bytes still to come
  std::string m_mark;                      // diskless: the EOF mark
  std::string m_tail;                      // diskless: bytes held back that may be the mark
  uint64_t m_payload_done = 0;
  RequestParser m_parser;
  RequestLimits m_limits;
  std::vector<std::string_view> m_args;
};

}  // namespace keyshift::engine
