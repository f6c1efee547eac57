#pragma once

#include <cstdint>

// The settings the keyspace itself reads. They live here, below server/, so that the
// keyspace never includes the server's config; EngineConfig derives from KeyspaceSettings,
// so CONFIG SET changes what the databases see without any copying.
namespace keyshift::engine {

/// Eviction policy chosen by `maxmemory-policy`.
enum class EvictionPolicy : uint8_t {
  noeviction,
  allkeys_lru,
  allkeys_lfu,
  allkeys_random,
  volatile_lru,
  volatile_lfu,
  volatile_random,
  volatile_ttl,
};

/// What `Db` and the value types read: the access-time policy, the events switch and the
/// set encoding thresholds (Valkey 8.0.1's defaults).
struct KeyspaceSettings {
  /// notify-keyspace-events as Valkey's bit set (NotifyClass in keyspace/notify.hpp); 0 = off.
  uint32_t notify_keyspace_events = 0;

  // Encodings of small sets.
  uint64_t set_max_intset_entries = 512;
  uint64_t set_max_listpack_entries = 128;
  uint64_t set_max_listpack_value = 64;

  /// maxmemory-policy: the LFU policies make the LRU field of an entry an LFU counter.
  EvictionPolicy maxmemory_policy = EvictionPolicy::noeviction;
  int lfu_log_factor = 10;
  int lfu_decay_time = 1;
};

}  // namespace keyshift::engine
