#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

// What a capture learns from each request of a connection, with no I/O: the state the
// connection's later events are recorded under (database, protocol, client name and
// library, CLIENT REPLY mode) and the secrets a request carries, replaced before anything
// is written (AUTH, HELLO AUTH, MIGRATE AUTH/AUTH2, CONFIG SET requirepass/masterauth,
// ACL SETUSER passwords).
namespace keyshift::compat::capture {

/// The text a secret argument is replaced with.
inline constexpr std::string_view k_redacted_value = "(redacted)";

/// The arguments of a request with its secrets replaced, or nullopt when it has none.
std::optional<std::vector<std::string>> redact_request(const std::vector<std::string_view>& args);

/// A connection's state as its requests change it (applied when the request is sent: the
/// capture records what the client asked, whether or not the server agreed).
class SessionState {
 public:
  /// Applies one request; returns true when this request gets no reply (CLIENT REPLY
  /// OFF/SKIP, the command a SKIP skips, anything sent while replies are off).
  bool apply(const std::vector<std::string_view>& args);

  uint32_t db() const { return m_db; }
  uint8_t resp() const { return m_resp; }
  const std::string& client_name() const { return m_name; }
  /// "lib-name lib-ver" from CLIENT SETINFO (either part may be missing).
  std::string client_lib() const;

 private:
  enum class ReplyMode : uint8_t { on, off, skip_next };

  uint32_t m_db = 0;
  uint8_t m_resp = 2;
  std::string m_name;
  std::string m_lib_name;
  std::string m_lib_ver;
  ReplyMode m_reply = ReplyMode::on;
};

}  // namespace keyshift::compat::capture
