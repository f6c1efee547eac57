#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace keyshift::engine {

/// Writes RESP2 or RESP3 replies into an output buffer, choosing each type's encoding by
/// the protocol the client negotiated with HELLO.
class ReplyBuilder {
 public:
  /// Appends to `out` using protocol `resp` (2 or 3).
  ReplyBuilder(std::string& out, int resp) : m_out(&out), m_resp(resp) {}

  /// The protocol version in use.
  int resp() const { return m_resp; }
  /// Switches the protocol (HELLO).
  void set_resp(int resp) { m_resp = resp; }
  /// The buffer written to.
  std::string& buffer() { return *m_out; }
  /// Number of error replies written so far (for INFO stats).
  uint64_t error_count() const { return m_errors; }
  /// Error code (first word) of the last error written, e.g. "ERR", "WRONGTYPE".
  std::string_view last_error_code() const { return m_last_error_code; }

  /// +OK
  void ok() { m_out->append("+OK\r\n", 5); }
  /// +text (text must not contain CR/LF).
  void simple(std::string_view text);
  /// -text; `text` starts with the error code, e.g. "ERR syntax error". Newlines in the
  /// text are replaced by spaces as Valkey does.
  void error(std::string_view text);
  /// :n
  void integer(int64_t n);
  /// $len payload
  void bulk(std::string_view data);
  /// A null bulk ($-1 in RESP2, _ in RESP3).
  void null();
  /// A null array (*-1 in RESP2, _ in RESP3).
  void null_array();
  /// An array header of `n` elements.
  void array(size_t n) { header('*', n); }
  /// A map header of `n` pairs (RESP2: an array of 2n).
  void map(size_t n);
  /// A set header (RESP2: an array).
  void set(size_t n);
  /// A push header (RESP2: an array).
  void push(size_t n);
  /// A double (RESP3 ,; RESP2 as a bulk string with %.17g formatting).
  void double_value(double d);
  /// A boolean (RESP3 #t/#f; RESP2 :1/:0).
  void boolean(bool b);
  /// A verbatim string (RESP3 =; RESP2 bulk), `format` is three letters like "txt".
  void verbatim(std::string_view data, std::string_view format = "txt");
  /// Appends pre-encoded protocol bytes.
  void raw(std::string_view bytes) { m_out->append(bytes); }
  /// Starts an array whose length is written later by `end_array`.
  size_t begin_array() { return m_out->size(); }
  /// Completes a `begin_array` started at `mark` with `n` elements.
  void end_array(size_t mark, size_t n) { insert_header(mark, '*', n); }
  /// Starts a map whose length is written later by `end_map`.
  size_t begin_map() { return m_out->size(); }
  /// Completes a `begin_map` started at `mark` with `n` pairs.
  void end_map(size_t mark, size_t n);

 private:
  void header(char type, size_t n);
  void insert_header(size_t mark, char type, size_t n);

  std::string* m_out;
  int m_resp;
  uint64_t m_errors = 0;
  std::string m_last_error_code;
};

}  // namespace keyshift::engine
