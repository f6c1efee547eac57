#include "engine/persistence/crc64.hpp"

#include <array>

#if defined(__x86_64__)
#  include <immintrin.h>
#endif

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

namespace {

uint64_t crc64_table(uint64_t crc, std::string_view data);

#if defined(__x86_64__)
// Carry-less multiplication folding (Intel's "Fast CRC Computation for Generic Polynomials
// Using PCLMULQDQ"), in the reflected domain: a 16-byte block X is carried 128*k bits ahead as
// lo(X)*K(128k+63) ^ hi(X)*K(128k-1), where K(n) is x^n mod P bit-reflected (the -1 makes up
// for the product's one-bit shift in the reflected layout). Four blocks are folded side by
// side by 512 bits, then into one; its 16 bytes and the tail go through the table.
constexpr uint64_t k_x127 = 0x381d0015c96f4444ULL;
constexpr uint64_t k_x191 = 0xd9d7be7d505da32cULL;
constexpr uint64_t k_x255 = 0xef3d1d18ed889ed2ULL;
constexpr uint64_t k_x319 = 0x6ba4d760ab38201eULL;
constexpr uint64_t k_x383 = 0x7b3211a760160db8ULL;
constexpr uint64_t k_x447 = 0xa062b2319d66692fULL;
constexpr uint64_t k_x511 = 0xf49784a634f014e4ULL;
constexpr uint64_t k_x575 = 0xaf86efb16d9ab4fbULL;

__attribute__((target("pclmul,sse4.1"))) inline __m128i fold(__m128i x, __m128i k) {
  // k holds K for the low half in its low lane and K for the high half in its high lane.
  return _mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11));
}

__attribute__((target("pclmul,sse4.1"))) uint64_t crc64_clmul(uint64_t crc, std::string_view data) {
  const auto* p = reinterpret_cast<const unsigned char*>(data.data());
  size_t blocks = data.size() / 64;
  auto load = [](const unsigned char* q) {
    return _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
  };
  __m128i a0 = _mm_xor_si128(load(p), _mm_cvtsi64_si128(static_cast<long long>(crc)));
  __m128i a1 = load(p + 16);
  __m128i a2 = load(p + 32);
  __m128i a3 = load(p + 48);
  const __m128i k512 =
      _mm_set_epi64x(static_cast<long long>(k_x511), static_cast<long long>(k_x575));
  for (size_t b = 1; b < blocks; ++b) {
    const unsigned char* q = p + 64 * b;
    a0 = _mm_xor_si128(fold(a0, k512), load(q));
    a1 = _mm_xor_si128(fold(a1, k512), load(q + 16));
    a2 = _mm_xor_si128(fold(a2, k512), load(q + 32));
    a3 = _mm_xor_si128(fold(a3, k512), load(q + 48));
  }
  __m128i x = _mm_xor_si128(
      _mm_xor_si128(
          fold(a0, _mm_set_epi64x(static_cast<long long>(k_x383), static_cast<long long>(k_x447))),
          fold(a1, _mm_set_epi64x(static_cast<long long>(k_x255), static_cast<long long>(k_x319)))),
      _mm_xor_si128(
          fold(a2, _mm_set_epi64x(static_cast<long long>(k_x127), static_cast<long long>(k_x191))),
          a3));
  // Whole 16-byte blocks of the tail are folded in too (by 128 bits each), so the table only
  // sees the last block and under 16 bytes: short records (~200 bytes) spent most of their
  // time in the table on a tail of up to 63 bytes.
  const __m128i k128 =
      _mm_set_epi64x(static_cast<long long>(k_x127), static_cast<long long>(k_x191));
  size_t done = blocks * 64;
  for (; data.size() - done >= 16; done += 16) {
    x = _mm_xor_si128(fold(x, k128), load(p + done));
  }
  alignas(16) unsigned char last[16];
  _mm_store_si128(reinterpret_cast<__m128i*>(last), x);
  uint64_t c = crc64_table(0, std::string_view(reinterpret_cast<const char*>(last), 16));
  return crc64_table(c, data.substr(done));
}

bool has_clmul() {
  return __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
}
#endif

uint64_t crc64_table(uint64_t crc, std::string_view data) {
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

}  // namespace

uint64_t crc64(uint64_t crc, std::string_view data) {
#if defined(__x86_64__)
  // One 64-byte block is where folding starts to pay (capture records are ~200 bytes); the
  // CPU check is a cached read.
  if (data.size() >= 64 && has_clmul()) {
    return crc64_clmul(crc, data);
  }
#endif
  return crc64_table(crc, data);
}

}  // namespace keyshift::engine
