#pragma once

#include <cstdint>
#include <string_view>

// Where a key lives in a cluster: CRC16 of its hash tag (or the whole key) modulo 16384, as
// Redis and Valkey clusters compute it. Client code (import, verify) and the engine's
// CLUSTER KEYSLOT share it.
namespace keyshift::engine {

/// Slots in a cluster.
inline constexpr uint16_t k_cluster_slots = 16384;

/// CRC16-CCITT in the XMODEM variant (polynomial 0x1021, initial 0, no reflection): the
/// checksum the cluster specification uses.
uint16_t crc16_xmodem(std::string_view data);

/// The part of `key` that is hashed: what lies between the first '{' and the next '}' when
/// that is not empty, else the whole key.
std::string_view key_hash_tag(std::string_view key);

/// The slot of `key` (0..16383).
uint16_t key_hash_slot(std::string_view key);

}  // namespace keyshift::engine
