#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace keyshift::engine {

/// Valkey's HyperLogLog, kept as the bytes of an ordinary string value so that GET, DUMP,
/// RESTORE and RDB carry it unchanged: a 16-byte header ("HYLL", encoding, 3 zero bytes,
/// the cached cardinality little endian with bit 63 meaning "stale") and then either the
/// sparse opcodes (ZERO 00xxxxxx, XZERO 01xxxxxx yyyyyyyy, VAL 1vvvvvxx) or 16384 6-bit
/// registers packed LSB first (dense).
namespace hll {

inline constexpr int k_precision = 14;
inline constexpr size_t k_registers = size_t{1} << k_precision;
inline constexpr size_t k_header_size = 16;
inline constexpr size_t k_dense_size = k_header_size + (k_registers * 6 + 7) / 8;
inline constexpr uint8_t k_dense = 0;
inline constexpr uint8_t k_sparse = 1;
/// Valkey's default for hll-sparse-max-bytes.
inline constexpr size_t k_default_sparse_max_bytes = 3000;

/// One byte per register, as PFMERGE and a multi-key PFCOUNT accumulate them.
using Registers = std::array<uint8_t, k_registers>;

/// Valkey's MurmurHash64A (little-endian block reads on every host).
uint64_t murmur_hash64a(std::string_view data, uint64_t seed);

/// The register an element lands in and the run length of its hash (1..51).
struct Pattern {
  size_t index;
  uint8_t count;
};
Pattern pattern_of(std::string_view element);

/// An empty HLL as PFADD creates it: sparse, one XZERO covering every register.
std::string create();

/// True if `bytes` passes Valkey's check for a HyperLogLog string (magic, known encoding,
/// exact dense size).
bool looks_valid(std::string_view bytes);

/// The header's encoding byte (k_dense or k_sparse); `bytes` must look valid.
inline uint8_t encoding(std::string_view bytes) {
  return static_cast<uint8_t>(bytes[4]);
}

/// Raises register `index` to `count` if lower: 1 if it changed, 0 if not, -1 when the
/// sparse data is corrupt. A sparse HLL that would grow past `sparse_max_bytes`, or needs
/// a value over 32, is converted to dense first. Does not touch the cached cardinality.
int set_register(std::string& hll, size_t index, uint8_t count, size_t sparse_max_bytes);

/// Adds one element: set_register at the element's pattern.
int add(std::string& hll, std::string_view element, size_t sparse_max_bytes);

/// Converts a sparse HLL to dense (a dense one is left alone); false if corrupt.
bool to_dense(std::string& hll);

/// Folds the registers of `hll` into `max`; false if its sparse data is corrupt.
bool merge_into(Registers& max, std::string_view hll);

/// The cardinality estimate of a valid HLL's registers; nullopt if corrupt.
std::optional<uint64_t> estimate(std::string_view hll);
/// The cardinality estimate of loose registers.
uint64_t estimate(const Registers& registers);

/// The cached cardinality, or nullopt when the cache is marked stale.
std::optional<uint64_t> cached_cardinality(std::string_view hll);
/// Stores `card` as the cached cardinality (valid).
void set_cached_cardinality(std::string& hll, uint64_t card);
/// Marks the cached cardinality stale.
void invalidate_cache(std::string& hll);

/// Register `index` of a dense HLL.
uint8_t dense_register(std::string_view hll, size_t index);

/// PFDEBUG DECODE's text for a sparse HLL ("z:N", "Z:N", "v:V,N" separated by spaces).
std::string decode_sparse(std::string_view hll);

}  // namespace hll
}  // namespace keyshift::engine
