#pragma once

#include "engine/keyspace/digest.hpp"

namespace keyshift::engine {

class Entry;

/// The digest of the value in `e`, seeded with `seed` (Valkey's xorObjectDigest): DEBUG
/// DIGEST-VALUE with a zero seed, DEBUG DIGEST's per-key part with key_digest_seed(key).
/// Shared by DEBUG and by verify's in-process comparison of two engines.
Digest value_digest(const Entry* e, const Digest& seed);

}  // namespace keyshift::engine
