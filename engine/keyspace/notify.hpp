#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

// Keyspace notification classes: the engine publishes by them, the config table reads and
// prints notify-keyspace-events with them, and KeyspaceSettings holds the bit set.
namespace keyshift::engine {

/// Classes of keyspace events, one bit per notify-keyspace-events letter (Valkey's values,
/// which KeyspaceSettings::notify_keyspace_events holds).
enum NotifyClass : uint32_t {
  k_notify_keyspace = 1u << 0,   // K
  k_notify_keyevent = 1u << 1,   // E
  k_notify_generic = 1u << 2,    // g
  k_notify_string = 1u << 3,     // $
  k_notify_list = 1u << 4,       // l
  k_notify_set = 1u << 5,        // s
  k_notify_hash = 1u << 6,       // h
  k_notify_zset = 1u << 7,       // z
  k_notify_expired = 1u << 8,    // x
  k_notify_evicted = 1u << 9,    // e
  k_notify_stream = 1u << 10,    // t
  k_notify_key_miss = 1u << 11,  // m
  k_notify_loaded = 1u << 12,    // (module key loads; no letter)
  k_notify_module = 1u << 13,    // d
  k_notify_new = 1u << 14,       // n
  // 'A': every type class but key-miss and new.
  k_notify_all = k_notify_generic | k_notify_string | k_notify_list | k_notify_set | k_notify_hash |
                 k_notify_zset | k_notify_expired | k_notify_evicted | k_notify_stream |
                 k_notify_module,
};

/// The bits of a notify-keyspace-events value (Valkey's keyspaceEventsStringToFlags);
/// nullopt on a letter it does not know.
std::optional<int> notify_flags_from_letters(std::string_view letters);
/// The letters of `flags` as Valkey prints them (keyspaceEventsFlagsToString): 'A' for all
/// type classes, hiding an 'n' set with them ("KEAn" prints as "AKE").
std::string notify_letters(int flags);

}  // namespace keyshift::engine
