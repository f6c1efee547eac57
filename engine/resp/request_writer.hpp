#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

// The client side of requests: load generators write many requests per second, so these
// write into caller-owned memory and never allocate once a template is built.
namespace keyshift::engine {

/// Appends `args` as one RESP multibulk request (an array of bulk strings) to `out`.
void append_request(std::string& out, std::span<const std::string_view> args);
/// The same for owned arguments.
void append_request(std::string& out, std::span<const std::string> args);
/// The same for a list written in place: append_request(out, {"SELECT", db}).
void append_request(std::string& out, std::initializer_list<std::string_view> args);

/// Bytes `append_request` writes for `args`.
size_t request_size(std::span<const std::string_view> args);
/// The same for owned arguments.
size_t request_size(std::span<const std::string> args);

/// Writes `args` as one request at `dst` (request_size(args) bytes); returns the end. The
/// form for clients that queue requests in a flat buffer of their own.
char* write_request(char* dst, std::span<const std::string_view> args);
/// The same for owned arguments.
char* write_request(char* dst, std::span<const std::string> args);

/// Writes `value` as decimal at `dst`; returns the end. `dst` needs 20 bytes.
char* write_decimal(char* dst, uint64_t value);

/// Writes a RESP bulk header ("$<len>\r\n") at `dst`; returns the end. Needs 24 bytes.
char* write_bulk_header(char* dst, size_t length);

/// A request encoded once whose `__rand_int__` placeholders are rewritten per request, as
/// redis-benchmark does: each placeholder is 12 characters, and so is its 12-digit
/// zero-padded replacement, so the request keeps its size and needs no re-encoding.
class RequestTemplate {
 public:
  /// The placeholder text (12 characters).
  static constexpr std::string_view k_placeholder = "__rand_int__";

  RequestTemplate() = default;
  /// Encodes `args` as a multibulk request and records where every placeholder is.
  static RequestTemplate multibulk(std::span<const std::string_view> args);
  /// Takes `bytes` as they are (an inline command such as "PING\r\n"); no placeholders.
  static RequestTemplate raw(std::string bytes);

  /// The encoded request (placeholders still literal).
  std::string_view bytes() const { return m_bytes; }
  /// Number of placeholders.
  size_t slots() const { return m_slots.size(); }
  /// Copies the request to `dst` (bytes().size() bytes) and, when `randomize`, fills each
  /// placeholder with `next()` % 10^12 as 12 zero-padded digits.
  template <typename Next>
  void write(char* dst, bool randomize, Next&& next) const {
    std::memcpy(dst, m_bytes.data(), m_bytes.size());
    if (!randomize) {
      return;
    }
    for (uint32_t at : m_slots) {
      uint64_t r = next();
      char* p = dst + at + 11;
      for (int i = 0; i < 12; ++i) {
        *p-- = static_cast<char>('0' + r % 10);
        r /= 10;
      }
    }
  }

 private:
  std::string m_bytes;
  std::vector<uint32_t> m_slots;
};

}  // namespace keyshift::engine
