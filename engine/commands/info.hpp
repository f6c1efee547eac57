#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace keyshift::engine {

class Engine;

/// What keyshift reports itself as (INFO, HELLO): Valkey 8.0.1, with the Redis version
/// Valkey 8 claims for clients that gate features on redis_version.
inline constexpr std::string_view k_redis_version = "7.2.4";
inline constexpr std::string_view k_server_name = "valkey";
inline constexpr std::string_view k_valkey_version = "8.0.1";

/// The text INFO replies with for its arguments `sections` (section names, "default", "all"
/// or "everything", any case; empty means "default"), in Valkey 8's sections, field names
/// and order. Values keyshift does not track are reported as Valkey reports an idle server.
std::string generate_info(Engine& engine, std::span<const std::string_view> sections);

/// Valkey's bytesToHuman(): "1.50K", "3.00M", "512B".
std::string bytes_to_human(uint64_t n);

}  // namespace keyshift::engine
