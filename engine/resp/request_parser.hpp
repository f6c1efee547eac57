#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace keyshift::engine {

/// Limits a server applies while reading requests.
struct RequestLimits {
  uint64_t proto_max_bulk_len = 512ull * 1024 * 1024;
  bool auth_required = false;  // unauthenticated clients get tighter length limits
};

/// Incremental parser of client requests: RESP multibulk arrays and inline commands.
///
/// The caller keeps the bytes of the current command at a stable base address between
/// calls (it may move them, since arguments are kept as offsets from the command start).
class RequestParser {
 public:
  enum class Status : uint8_t { need_more, ready, empty, error };

  /// One argument as an offset and length from the start of the command.
  struct Slice {
    size_t offset;
    size_t length;
  };

  /// Parses from `base` (the start of the current command) with `available` bytes.
  /// On `ready`, `slices()` holds the arguments and `consumed()` the command's size.
  /// On `empty` (a blank inline line or `*0`), `consumed()` bytes are to be skipped.
  Status parse(const char* base, size_t available, const RequestLimits& limits);
  /// Arguments of the command that is ready.
  const std::vector<Slice>& slices() const { return m_slices; }
  /// Bytes the ready (or empty) command took.
  size_t consumed() const { return m_pos; }
  /// The protocol error text after `error` (without the leading '-').
  std::string_view error() const { return m_error; }
  /// Forgets the current command; call after consuming a ready or empty one.
  void reset();
  /// True while in the middle of a command (some of it already parsed).
  bool in_progress() const { return m_pos != 0; }
  /// Bytes still wanted for the current bulk argument, when known (for read sizing).
  size_t pending_bulk() const { return m_bulk_len > 0 ? static_cast<size_t>(m_bulk_len) : 0; }

 private:
  Status parse_inline(const char* base, size_t available);
  Status parse_multibulk(const char* base, size_t available, const RequestLimits& limits);
  Status fail(std::string message);

  std::vector<Slice> m_slices;
  std::vector<char> m_inline_storage;
  size_t m_pos = 0;
  int64_t m_args_left = 0;
  int64_t m_bulk_len = -1;
  bool m_multibulk = false;
  std::string m_error;

 public:
  /// Inline commands unquote into a private buffer; arguments then point there.
  /// Returns the argument views for the ready command, resolving either source.
  void args(const char* base, std::vector<std::string_view>& out) const;
};

}  // namespace keyshift::engine
