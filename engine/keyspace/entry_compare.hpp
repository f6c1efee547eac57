#pragma once

#include <cstdint>

namespace keyshift::engine {

class Entry;

/// What comparing two values found.
enum class ValueMatch : uint8_t {
  equal,
  /// The values differ (or their types do).
  value,
  /// A hash's fields and values are equal but some field's TTL is further apart than the
  /// tolerance (or set on one side only).
  field_ttl,
};

/// Compares the values of two entries of any engines exactly, element by element (sets,
/// hashes and sorted sets by lookups in the other side, so encodings and orders may
/// differ); streams by their live entries, as DEBUG DIGEST-VALUE and XRANGE see them. The
/// keys' own TTLs are not looked at.
/// Cheaper than digests: no SHA-1 per element, which made verify's in-process pass
/// hash-bound.
ValueMatch compare_values(const Entry* a, const Entry* b, int64_t field_ttl_tolerance_ms);

}  // namespace keyshift::engine
