#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

// What a capture may keep of the data it sees. Two rewrites of the recorded bytes, both
// with no I/O, applied before anything is written:
// - reply redaction (always, with request redaction): secrets a server sends back (CONFIG
//   GET requirepass/masterauth/..., ACL GETUSER passwords, ACL LIST password hashes) are
//   replaced, recognised by the shape of the reply, since a recorder does not pair replies
//   with requests;
// - anonymisation (`--anonymize`): every argument and reply string that is not a command
//   name, subcommand, option word or number becomes a keyed hash of the same length
//   (HMAC-SHA-256 of the bytes under a key of the capture's own, letters and digits), so
//   lengths, RESP framing, equal values and hash tags (the part in braces is hashed alone)
//   survive and a capture can leave the building.
namespace keyshift::compat::capture {

/// False for a reply that cannot hold a secret (no "pass", "auth" or "user " in an aggregate): the
/// one scan most replies cost.
bool reply_may_hold_secret(std::string_view reply);
/// Replaces the secrets in one top-level reply; returns true when it changed `reply`.
bool redact_reply(std::string& reply);

/// Rewrites requests and replies in place with keyed hashes of the same length.
class Anonymizer {
 public:
  /// Hashes under `key` (32 random bytes per capture: the same key maps equal bytes alike).
  explicit Anonymizer(const std::array<uint8_t, 32>& key) : m_key(key) {}
  /// A fresh random key from the system's generator.
  static Anonymizer with_random_key();

  /// One request as the client sent it (multibulk or inline), rewritten in place.
  void request(std::string& bytes) const;
  /// One top-level reply, rewritten in place.
  void reply(std::string& bytes) const;
  /// `text` hashed to the same length, hash tags kept: "{user1000}.name" keeps its braces,
  /// and every key with the tag {user1000} gets the same hashed tag.
  std::string hash(std::string_view text) const;

 private:
  /// Overwrites `n` bytes at `at` with the hash of those bytes (tags kept).
  void rewrite(char* at, size_t n) const;
  void fill(std::string_view part, char* out) const;

  std::array<uint8_t, 32> m_key;
};

}  // namespace keyshift::compat::capture
