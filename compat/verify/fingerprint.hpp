#pragma once

#include <cstdint>
#include <string>
#include <string_view>

// A value's fingerprint computed on the client from replies read in chunks, for servers
// that do not allow DEBUG DIGEST-VALUE or whose digests differ by server generation (Redis
// 7.0 prints sorted-set scores with %.17g). Two independent 64-bit lanes: equal values
// give equal fingerprints whatever the server, and an accidental match of different values
// is out of reach. Not Valkey's digest: it only has to agree with itself.
namespace keyshift::compat {

/// The value types verify reads.
enum class ValueKind : uint8_t { string, list, set, zset, hash, stream };

/// The kind named by a TYPE reply ("string", "list", ...); false for anything else.
bool value_kind_from_type(std::string_view type, ValueKind& out);

/// 128 bits.
struct Fingerprint {
  uint64_t lo = 0;
  uint64_t hi = 0;
  bool operator==(const Fingerprint&) const = default;
  /// 32 lowercase hex digits.
  std::string hex() const;
};

/// Builds the fingerprint of one value from its pieces. Ordered pieces (string chunks,
/// list elements, stream IDs and fields) are chained, so order and boundaries matter;
/// unordered ones (set members, hash and sorted-set pairs) are summed, so order does not,
/// but each must be added once: the readers drop SCAN's repeats before they get here.
class FingerprintBuilder {
 public:
  /// Starts the fingerprint of a value of `kind` (the kind is part of it).
  explicit FingerprintBuilder(ValueKind kind);
  /// Chains an ordered piece; `tag` tells pieces of different roles apart (an ID from a
  /// field of a stream).
  void add_ordered(std::string_view piece, uint8_t tag = 0);
  /// Adds an unordered member (a set member).
  void add_member(std::string_view member);
  /// Adds an unordered pair (a hash field and its value).
  void add_pair(std::string_view first, std::string_view second);
  /// Adds a sorted-set member with its score, compared as a double so that "%.17g" and
  /// shortest-form texts of the same score agree; false when `score` is not a number.
  bool add_scored(std::string_view member, std::string_view score);
  /// Pieces, members and pairs added so far.
  uint64_t count() const { return m_count; }
  /// The fingerprint of everything added.
  Fingerprint finish() const;

 private:
  ValueKind m_kind;
  uint64_t m_chain_lo;
  uint64_t m_chain_hi;
  uint64_t m_sum_lo = 0;
  uint64_t m_sum_hi = 0;
  uint64_t m_count = 0;
};

}  // namespace keyshift::compat
