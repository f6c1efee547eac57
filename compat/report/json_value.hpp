#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

// Reading JSON the tools wrote themselves (saved benchmark runs): a small strict parser
// whose errors carry the byte offset, so a damaged file is named precisely.
namespace keyshift::compat {

/// A parsed JSON value; objects keep their members in file order.
struct JsonValue {
  enum class Type : unsigned char { null, boolean, number, string, array, object };
  /// Declared here, defined out of line: clang 14 over libstdc++ 12 cannot decide whether
  /// the implicit one exists while `object`'s pairs of this still incomplete type are checked.
  JsonValue() noexcept;
  Type type = Type::null;
  bool boolean = false;
  double number = 0;
  std::string string;
  std::vector<JsonValue> array;
  std::vector<std::pair<std::string, JsonValue>> object;

  /// The member `key` of an object, or nullptr (also when this is not an object).
  const JsonValue* find(std::string_view key) const;
};

/// Malformed JSON: `offset` is the byte where reading stopped.
class JsonError : public std::runtime_error {
 public:
  JsonError(size_t at, const std::string& message) : std::runtime_error(message), offset(at) {}
  size_t offset;
};

/// Parses one JSON document (RFC 8259; nesting up to 64 levels); throws JsonError.
JsonValue parse_json(std::string_view text);

}  // namespace keyshift::compat
