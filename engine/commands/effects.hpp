#pragma once

#include "engine/propagation.hpp"

#include <span>
#include <string_view>
#include <vector>

namespace keyshift::engine {

class Engine;

/// Appends to `out` the effects of the write `argv` that just ran in database `db` and
/// replied `reply` (its RESP bytes): the commands that, replayed later or elsewhere, give
/// the same dataset, as Valkey 8.0.1 rewrites them for its AOF and replicas. Relative TTLs
/// become absolute (EXPIRE/PEXPIRE/EXPIREAT/GETEX as PEXPIREAT, SETEX/PSETEX/SET EX|PX|EXAT
/// as SET PXAT, RESTORE ttl as RESTORE ABSTTL, HEXPIRE-style as HPEXPIREAT), a TTL already
/// past as DEL; results the command chose become the result (INCRBYFLOAT as SET KEEPTTL,
/// HINCRBYFLOAT as HSET, SPOP as SREM, XADD's `*` as the ID); blocking pops become the pop
/// they performed, MIGRATE deletes what it moved away. Every other write is propagated as
/// it was sent (known gap: XREADGROUP/XCLAIM/XAUTOCLAIM go as sent, not as Valkey's
/// XCLAIM ... FORCE effects, so replayed delivery times and idle filters use the load time).
void command_effects(Engine& engine, int db, std::span<const std::string_view> argv,
                     std::string_view reply, std::vector<PropagatedCommand>& out);

}  // namespace keyshift::engine
