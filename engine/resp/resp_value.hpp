#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace keyshift::engine {

/// A decoded RESP2/RESP3 reply, as a client sees it.
struct RespValue {
  enum class Type : uint8_t {
    simple,      // +
    error,       // -
    integer,     // :
    bulk,        // $
    null,        // $-1, *-1, _
    array,       // *
    map,         // % (elements alternate key, value)
    set,         // ~
    push,        // >
    double_,     // ,
    boolean,     // #
    verbatim,    // =
    big_number,  // (
    attribute,   // |
  };

  Type type = Type::null;
  std::string str;      // simple, error, bulk, verbatim, big_number, double text
  int64_t integer = 0;  // integer, boolean
  std::vector<RespValue> elements;

  /// True for an error reply.
  bool is_error() const { return type == Type::error; }
  /// Renders the value the way redis-cli does (for tests and diagnostics).
  std::string to_display() const;
};

/// Result of trying to decode one reply from a buffer.
enum class RespParse : uint8_t { ok, need_more, error };

/// Decodes one reply from `data`; on ok sets `consumed` to its size in bytes.
RespParse parse_resp(std::string_view data, RespValue& out, size_t& consumed);

}  // namespace keyshift::engine
