#pragma once

#include <stdexcept>
#include <string>

namespace keyshift::cli {

/// A failure the user can fix (bad flag, bad file); main prints it and exits with `code`.
class UserError : public std::runtime_error {
 public:
  UserError(const std::string& message, int code = 1) : std::runtime_error(message), m_code(code) {}
  /// The process exit code.
  int code() const { return m_code; }

 private:
  int m_code;
};

}  // namespace keyshift::cli
