#pragma once

#include <cassert>
#include <cstdint>
#include <utility>
#include <variant>

namespace keyshift::engine {

/// Outcome of a keyspace operation; the command layer maps it to a reply.
enum class OpStatus : uint8_t {
  ok,
  key_not_found,
  wrong_type,
  not_an_integer,
  not_a_float,
  out_of_range,
  overflow,
  syntax_error,
  skipped,  // a condition (NX/XX/...) was not met
  out_of_memory,
  invalid_value,
};

/// A value or the status explaining why there is none; never throws.
template <typename T>
class Result {
 public:
  /// Holds a value.
  Result(T value) : m_value(std::move(value)) {}  // NOLINT: implicit by design
  /// Holds a failure status (must not be ok).
  Result(OpStatus status) : m_value(status) { assert(status != OpStatus::ok); }  // NOLINT
  /// True when a value is present.
  explicit operator bool() const { return std::holds_alternative<T>(m_value); }
  /// The value; only valid when present.
  T& value() { return std::get<T>(m_value); }
  const T& value() const { return std::get<T>(m_value); }
  T& operator*() { return value(); }
  const T& operator*() const { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  /// ok when a value is present, else the failure.
  OpStatus status() const { return *this ? OpStatus::ok : std::get<OpStatus>(m_value); }

 private:
  std::variant<T, OpStatus> m_value;
};

}  // namespace keyshift::engine
