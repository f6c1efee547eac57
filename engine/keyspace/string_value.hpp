#pragma once

#include "engine/keyspace/entry.hpp"
#include "engine/keyspace/object.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

namespace keyshift::engine {

/// A string value too large to keep inside its entry; it grows in place for APPEND and
/// SETRANGE.
class HeapString final : public HeapObject {
 public:
  explicit HeapString(std::string_view data) : m_data(data) {}
  /// Takes `data` over without copying it (a value built whole, such as a grown bitmap).
  explicit HeapString(std::string&& data) : m_data(std::move(data)) {}
  size_t bytes() const override { return sizeof(*this) + m_data.capacity(); }
  HeapObject* clone() const override { return new HeapString(m_data); }
  std::string& data() { return m_data; }
  const std::string& data() const { return m_data; }

 private:
  std::string m_data;
};

/// Strings longer than this live in a HeapString instead of inline.
inline constexpr size_t k_inline_string_max = 256;
/// Longest string Valkey keeps as embstr (OBJECT ENCODING).
inline constexpr size_t k_embstr_max = 44;

/// Room for `string_of` to print an integer value.
struct IntBuffer {
  char data[24];
};

/// The bytes of a string entry (integers are printed into `buf`).
std::string_view string_of(const Entry* e, IntBuffer& buf);

/// The ValueSpec to store `value` as a string, choosing the encoding Valkey would
/// (int for canonical integers that fit, embstr up to 44 bytes, raw beyond). A HeapString
/// is allocated for long values; ownership passes to the entry that stores the spec.
Entry::ValueSpec make_string_spec(std::string_view value);
/// The ValueSpec for an integer value.
Entry::ValueSpec make_int_spec(int64_t value);
/// Like make_string_spec but never int-encoded and reported as raw (APPEND, SETRANGE
/// results, as Valkey leaves them).
Entry::ValueSpec make_raw_string_spec(std::string_view value);
/// make_raw_string_spec that moves a long `value` into its HeapString instead of copying.
Entry::ValueSpec make_raw_string_spec(std::string&& value);

}  // namespace keyshift::engine
