#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace keyshift::engine {

/// Finds where each RESP2/RESP3 reply ends in a stream of bytes without decoding it, for
/// clients that only count replies and spot errors (load generators). It keeps its place
/// across calls, so a reply may arrive in any number of pieces; bulk payloads are skipped
/// in place and never copied, and nothing is allocated except the text of an error.
class ReplyScanner {
 public:
  /// What `scan` stopped at.
  enum class Status : uint8_t {
    reply,      // a whole top-level reply ended; `consumed` bytes were used
    need_more,  // all of `consumed` bytes were used and the reply goes on
    error,      // the bytes are not RESP (see protocol_error()); the stream is unusable
  };

  /// Scans from `data`; stops after one complete top-level reply or at the end of input.
  /// A partial line is left unconsumed: pass it again, followed by more bytes, next time.
  Status scan(const char* data, size_t size, size_t& consumed);

  /// True when the reply that just ended is an error reply (- or !), at its top level.
  bool last_is_error() const { return m_last_error; }
  /// True when the reply that just ended is a null (RESP2 $-1 / *-1, RESP3 _).
  bool last_is_null() const { return m_last_null; }
  /// The text of the last top-level simple error (without '-'), kept for reporting.
  const std::string& error_text() const { return m_error_text; }
  /// Why the stream is not RESP, after Status::error.
  std::string_view protocol_error() const { return m_protocol_error; }

 private:
  static constexpr int k_max_depth = 32;

  bool value_done();

  int64_t m_pending[k_max_depth] = {};  // elements left per open aggregate
  int m_depth = 0;
  int64_t m_bulk_left = 0;  // payload bytes (with CRLF) still to skip
  bool m_top_is_error = false;
  bool m_top_is_null = false;
  bool m_last_error = false;
  bool m_last_null = false;
  std::string m_error_text;
  std::string_view m_protocol_error;
};

}  // namespace keyshift::engine
