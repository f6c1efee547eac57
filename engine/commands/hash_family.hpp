#pragma once

#include <cstddef>
#include <cstdint>

namespace keyshift::engine {

class Db;
class Engine;

/// Active expiry of hash fields in `db`, for Engine::cron: removes due fields of the hashes
/// registered with field TTLs (emitting hexpired, and del for a hash left empty) until none
/// is due, a quota of fields is reached or the monotonic `deadline_us` passes. Returns the
/// number of fields removed.
size_t active_expire_hash_fields(Engine& engine, Db& db, int64_t deadline_us);

}  // namespace keyshift::engine
