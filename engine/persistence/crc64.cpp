#include "engine/persistence/crc64.hpp"

#include <array>

namespace keyshift::engine {
namespace {

// The Jones polynomial 0xad93d23594c935a9, bit-reversed for the reflected algorithm.
constexpr uint64_t k_poly_reflected = 0x95ac9329ac4bc9b5ULL;

// Slicing-by-8 tables: table[0] is the classic byte table, table[k] advances k more bytes.
constexpr std::array<std::array<uint64_t, 256>, 8> make_tables() {
  std::array<std::array<uint64_t, 256>, 8> t{};
  for (uint64_t i = 0; i < 256; ++i) {
    uint64_t c = i;
    for (int b = 0; b < 8; ++b) {
      c = (c & 1) != 0 ? (c >> 1) ^ k_poly_reflected : c >> 1;
    }
    t[0][i] = c;
  }
  for (size_t i = 0; i < 256; ++i) {
    for (size_t k = 1; k < 8; ++k) {
      t[k][i] = (t[k - 1][i] >> 8) ^ t[0][t[k - 1][i] & 0xFF];
    }
  }
  return t;
}

constexpr auto k_tables = make_tables();

}  // namespace

uint64_t crc64(uint64_t crc, std::string_view data) {
  const auto* p = reinterpret_cast<const unsigned char*>(data.data());
  size_t n = data.size();
  while (n >= 8) {
    uint64_t v = crc ^ (static_cast<uint64_t>(p[0]) | static_cast<uint64_t>(p[1]) << 8 |
                        static_cast<uint64_t>(p[2]) << 16 | static_cast<uint64_t>(p[3]) << 24 |
                        static_cast<uint64_t>(p[4]) << 32 | static_cast<uint64_t>(p[5]) << 40 |
                        static_cast<uint64_t>(p[6]) << 48 | static_cast<uint64_t>(p[7]) << 56);
    crc = k_tables[7][v & 0xFF] ^ k_tables[6][(v >> 8) & 0xFF] ^ k_tables[5][(v >> 16) & 0xFF] ^
          k_tables[4][(v >> 24) & 0xFF] ^ k_tables[3][(v >> 32) & 0xFF] ^
          k_tables[2][(v >> 40) & 0xFF] ^ k_tables[1][(v >> 48) & 0xFF] ^ k_tables[0][v >> 56];
    p += 8;
    n -= 8;
  }
  while (n-- > 0) {
    crc = k_tables[0][(crc ^ *p++) & 0xFF] ^ (crc >> 8);
  }
  return crc;
}

}  // namespace keyshift::engine
