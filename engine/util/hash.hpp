#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

namespace keyshift::engine {

/// A fast 64-bit hash of `data` for the keyspace tables, keyed by `seed` so that each
/// engine has its own layout (hash flooding resistance is not a goal; spread is).
inline uint64_t hash_bytes(std::string_view data, uint64_t seed) {
  constexpr uint64_t k_m1 = 0xa0761d6478bd642full;
  constexpr uint64_t k_m2 = 0xe7037ed1a0b428dbull;
  auto mix = [](uint64_t a, uint64_t b) {
    __uint128_t r = static_cast<__uint128_t>(a) * b;
    return static_cast<uint64_t>(r) ^ static_cast<uint64_t>(r >> 64);
  };
  auto read64 = [](const char* p) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    return v;
  };
  auto read32 = [](const char* p) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return static_cast<uint64_t>(v);
  };
  const char* p = data.data();
  size_t len = data.size();
  uint64_t h = seed ^ mix(seed ^ k_m1, len ^ k_m2);
  uint64_t a = 0;
  uint64_t b = 0;
  if (len <= 16) {
    if (len >= 4) {
      a = (read32(p) << 32) | read32(p + ((len >> 3) << 2));
      b = (read32(p + len - 4) << 32) | read32(p + len - 4 - ((len >> 3) << 2));
    } else if (len > 0) {
      a = (static_cast<uint64_t>(static_cast<uint8_t>(p[0])) << 16) |
          (static_cast<uint64_t>(static_cast<uint8_t>(p[len >> 1])) << 8) |
          static_cast<uint8_t>(p[len - 1]);
    }
  } else {
    size_t i = len;
    while (i > 16) {
      h = mix(read64(p) ^ k_m1, read64(p + 8) ^ h);
      p += 16;
      i -= 16;
    }
    a = read64(p + i - 16);
    b = read64(p + i - 8);
  }
  return mix(k_m1 ^ len, mix(a ^ k_m1, b ^ h));
}

}  // namespace keyshift::engine
