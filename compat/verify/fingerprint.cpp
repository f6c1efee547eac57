#include "compat/verify/fingerprint.hpp"

#include "engine/util/hash.hpp"
#include "engine/util/strconv.hpp"

#include <array>
#include <bit>
#include <cstring>

namespace keyshift::compat {
namespace {

// Fixed seeds: a fingerprint must be the same in every process, for both sides.
constexpr uint64_t k_seed_lo = 0x6b657973686966ull;  // "keyshif"
constexpr uint64_t k_seed_hi = 0x7665726966792121ull;

uint64_t combine(uint64_t a, uint64_t b, uint64_t seed) {
  std::array<char, 16> bytes;
  std::memcpy(bytes.data(), &a, 8);
  std::memcpy(bytes.data() + 8, &b, 8);
  return engine::hash_bytes(std::string_view(bytes.data(), bytes.size()), seed);
}

/// A piece's hash with its role byte in front, per lane.
uint64_t piece_hash(std::string_view piece, uint8_t tag, uint64_t seed) {
  return engine::hash_bytes(piece, seed ^ (static_cast<uint64_t>(tag) * 0x9e3779b97f4a7c15ull));
}

}  // namespace

bool value_kind_from_type(std::string_view type, ValueKind& out) {
  static constexpr std::array<std::pair<std::string_view, ValueKind>, 6> k_kinds{{
      {"string", ValueKind::string},
      {"list", ValueKind::list},
      {"set", ValueKind::set},
      {"zset", ValueKind::zset},
      {"hash", ValueKind::hash},
      {"stream", ValueKind::stream},
  }};
  for (const auto& [name, kind] : k_kinds) {
    if (name == type) {
      out = kind;
      return true;
    }
  }
  return false;
}

std::string Fingerprint::hex() const {
  static constexpr char k_digits[] = "0123456789abcdef";
  std::string out(32, '0');
  for (int i = 0; i < 16; ++i) {
    out[static_cast<size_t>(15 - i)] = k_digits[(hi >> (4 * i)) & 15];
    out[static_cast<size_t>(31 - i)] = k_digits[(lo >> (4 * i)) & 15];
  }
  return out;
}

FingerprintBuilder::FingerprintBuilder(ValueKind kind)
    : m_kind(kind),
      m_chain_lo(k_seed_lo + static_cast<uint64_t>(kind)),
      m_chain_hi(k_seed_hi + static_cast<uint64_t>(kind)) {}

void FingerprintBuilder::add_ordered(std::string_view piece, uint8_t tag) {
  m_chain_lo = combine(m_chain_lo, piece_hash(piece, tag, k_seed_lo), k_seed_lo);
  m_chain_hi = combine(m_chain_hi, piece_hash(piece, tag, k_seed_hi), k_seed_hi);
  ++m_count;
}

void FingerprintBuilder::add_member(std::string_view member) {
  // Summed, not XORed: a member added twice by mistake changes the result instead of
  // cancelling out.
  m_sum_lo += piece_hash(member, 1, k_seed_lo);
  m_sum_hi += piece_hash(member, 1, k_seed_hi);
  ++m_count;
}

void FingerprintBuilder::add_pair(std::string_view first, std::string_view second) {
  m_sum_lo += combine(piece_hash(first, 2, k_seed_lo), piece_hash(second, 3, k_seed_lo), k_seed_lo);
  m_sum_hi += combine(piece_hash(first, 2, k_seed_hi), piece_hash(second, 3, k_seed_hi), k_seed_hi);
  ++m_count;
}

bool FingerprintBuilder::add_scored(std::string_view member, std::string_view score) {
  double value = 0;
  if (!engine::parse_double(score, value)) {
    return false;
  }
  uint64_t bits = std::bit_cast<uint64_t>(value);
  add_pair(member, std::string_view(reinterpret_cast<const char*>(&bits), sizeof(bits)));
  return true;
}

Fingerprint FingerprintBuilder::finish() const {
  Fingerprint f;
  f.lo = combine(combine(m_chain_lo, m_sum_lo, k_seed_lo), m_count, k_seed_lo);
  f.hi = combine(combine(m_chain_hi, m_sum_hi, k_seed_hi), m_count ^ static_cast<uint64_t>(m_kind),
                 k_seed_hi);
  return f;
}

}  // namespace keyshift::compat
