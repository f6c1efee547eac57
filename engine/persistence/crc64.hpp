#pragma once

#include <cstdint>
#include <string_view>

namespace keyshift::engine {

/// CRC-64/Jones (reflected, init 0), the checksum of RDB files and DUMP payloads; extends
/// `crc` over `data`.
uint64_t crc64(uint64_t crc, std::string_view data);

}  // namespace keyshift::engine
