#include "engine/util/sha1.hpp"

#include <algorithm>
#include <bit>
#include <cstring>

namespace keyshift::engine {

namespace {

uint32_t load_be32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

}  // namespace

void Sha1::update(std::span<const uint8_t> data) {
  m_message_bytes += data.size();
  const uint8_t* in = data.data();
  size_t left = data.size();
  if (m_pending_size > 0) {
    const size_t take = std::min(left, k_block_size - m_pending_size);
    std::memcpy(m_pending.data() + m_pending_size, in, take);
    m_pending_size += take;
    in += take;
    left -= take;
    if (m_pending_size < k_block_size) {
      return;
    }
    compress(m_pending.data());
    m_pending_size = 0;
  }
  // Whole blocks are hashed straight from the caller's buffer to avoid a copy per block.
  for (; left >= k_block_size; in += k_block_size, left -= k_block_size) {
    compress(in);
  }
  if (left > 0) {
    std::memcpy(m_pending.data(), in, left);
    m_pending_size = left;
  }
}

void Sha1::update(std::string_view data) {
  update(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(data.data()), data.size()));
}

Sha1Hash Sha1::finish() const {
  // Padding runs on a copy so that finish() can be asked for a running hash.
  Sha1 tail = *this;
  const uint64_t bit_length = m_message_bytes * 8;
  std::array<uint8_t, k_block_size + 8> padding{};
  padding[0] = 0x80;
  const size_t used = m_pending_size + 1;
  const size_t zeros =
      used <= k_block_size - 8 ? k_block_size - 8 - used : 2 * k_block_size - 8 - used;
  size_t padding_size = 1 + zeros;
  for (int shift = 56; shift >= 0; shift -= 8) {
    padding[padding_size++] = static_cast<uint8_t>(bit_length >> shift);
  }
  tail.update(std::span<const uint8_t>(padding.data(), padding_size));

  Sha1Hash out{};
  for (size_t i = 0; i < tail.m_state.size(); ++i) {
    out[4 * i] = static_cast<uint8_t>(tail.m_state[i] >> 24);
    out[4 * i + 1] = static_cast<uint8_t>(tail.m_state[i] >> 16);
    out[4 * i + 2] = static_cast<uint8_t>(tail.m_state[i] >> 8);
    out[4 * i + 3] = static_cast<uint8_t>(tail.m_state[i]);
  }
  return out;
}

void Sha1::compress(const uint8_t* block) {
  // A 16-word ring replaces the 80-word schedule: word t only needs words t-3, t-8, t-14, t-16.
  std::array<uint32_t, 16> w;
  for (size_t i = 0; i < w.size(); ++i) {
    w[i] = load_be32(block + 4 * i);
  }
  uint32_t a = m_state[0];
  uint32_t b = m_state[1];
  uint32_t c = m_state[2];
  uint32_t d = m_state[3];
  uint32_t e = m_state[4];
  for (int t = 0; t < 80; ++t) {
    uint32_t word = 0;
    if (t < 16) {
      word = w[t];
    } else {
      word = std::rotl(w[(t + 13) & 15] ^ w[(t + 8) & 15] ^ w[(t + 2) & 15] ^ w[t & 15], 1);
      w[t & 15] = word;
    }
    uint32_t f = 0;
    uint32_t k = 0;
    if (t < 20) {
      f = (b & c) | (~b & d);
      k = 0x5a827999u;
    } else if (t < 40) {
      f = b ^ c ^ d;
      k = 0x6ed9eba1u;
    } else if (t < 60) {
      f = (b & c) | (b & d) | (c & d);
      k = 0x8f1bbcdcu;
    } else {
      f = b ^ c ^ d;
      k = 0xca62c1d6u;
    }
    const uint32_t next = std::rotl(a, 5) + f + e + k + word;
    e = d;
    d = c;
    c = std::rotl(b, 30);
    b = a;
    a = next;
  }
  m_state[0] += a;
  m_state[1] += b;
  m_state[2] += c;
  m_state[3] += d;
  m_state[4] += e;
}

Sha1Hash sha1(std::string_view data) {
  Sha1 hasher;
  hasher.update(data);
  return hasher.finish();
}

Sha1Hash sha1(std::span<const uint8_t> data) {
  Sha1 hasher;
  hasher.update(data);
  return hasher.finish();
}

std::string sha1_hex(const Sha1Hash& hash) {
  static constexpr char k_digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(hash.size() * 2);
  for (const uint8_t byte : hash) {
    out.push_back(k_digits[byte >> 4]);
    out.push_back(k_digits[byte & 15]);
  }
  return out;
}

}  // namespace keyshift::engine
