#pragma once

#include <type_traits>
#include <utility>
#include <variant>

namespace keyshift::engine {

/// Marks an error being returned through Expected, so the two alternatives stay apart even
/// when they have the same type.
template <typename E>
struct Unexpected {
  E error;
};

template <typename E>
Unexpected(E) -> Unexpected<E>;

/// A value or an error that carries details (a message, a location). Result<T> in status.hpp
/// covers failures that are a bare OpStatus; this is for the rest. Never throws.
template <typename T, typename E>
class Expected {
 public:
  /// Holds a value.
  Expected(T value) : m_storage(std::in_place_index<0>, std::move(value)) {}  // NOLINT
  /// Holds an error.
  template <typename U, typename = std::enable_if_t<std::is_constructible_v<E, U&&>>>
  Expected(Unexpected<U> error)  // NOLINT: implicit so that `return Unexpected{...};` works
      : m_storage(std::in_place_index<1>, std::move(error.error)) {}

  /// True when a value is present.
  explicit operator bool() const { return m_storage.index() == 0; }
  /// True when a value is present.
  bool has_value() const { return m_storage.index() == 0; }
  /// The value; only valid when present.
  T& value() & { return std::get<0>(m_storage); }
  const T& value() const& { return std::get<0>(m_storage); }
  T&& value() && { return std::get<0>(std::move(m_storage)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  /// The error; only valid when no value is present.
  E& error() & { return std::get<1>(m_storage); }
  const E& error() const& { return std::get<1>(m_storage); }
  E&& error() && { return std::get<1>(std::move(m_storage)); }

 private:
  std::variant<T, E> m_storage;
};

}  // namespace keyshift::engine
