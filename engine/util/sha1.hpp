#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace keyshift::engine {

/// A finished SHA-1 hash: 20 bytes, most significant byte first.
using Sha1Hash = std::array<uint8_t, 20>;

/// Incremental SHA-1 (FIPS 180-4). Only for compatibility with Valkey's digests and script
/// ids: SHA-1 is broken as a collision-resistant hash, so never use it for security.
class Sha1 {
 public:
  /// Starts an empty message.
  Sha1() = default;

  /// Appends bytes to the message.
  void update(std::span<const uint8_t> data);
  /// Appends the bytes of a string to the message.
  void update(std::string_view data);
  /// Hash of everything appended so far; the message may still be extended afterwards.
  Sha1Hash finish() const;

 private:
  static constexpr size_t k_block_size = 64;

  void compress(const uint8_t* block);

  std::array<uint32_t, 5> m_state{0x67452301u, 0xefcdab89u, 0x98badcfeu, 0x10325476u, 0xc3d2e1f0u};
  std::array<uint8_t, k_block_size> m_pending{};
  size_t m_pending_size = 0;
  uint64_t m_message_bytes = 0;
};

/// SHA-1 of one buffer.
Sha1Hash sha1(std::string_view data);
/// SHA-1 of one byte buffer.
Sha1Hash sha1(std::span<const uint8_t> data);
/// Lowercase hex of a hash, as Valkey prints digests and script ids.
std::string sha1_hex(const Sha1Hash& hash);

}  // namespace keyshift::engine
