#include "engine/util/cluster_slot.hpp"

#include <array>

namespace keyshift::engine {
namespace {

constexpr std::array<uint16_t, 256> make_crc16_table() {
  std::array<uint16_t, 256> table{};
  for (uint32_t byte = 0; byte < 256; ++byte) {
    auto crc = static_cast<uint16_t>(byte << 8);
    for (int bit = 0; bit < 8; ++bit) {
      crc = (crc & 0x8000) != 0 ? static_cast<uint16_t>((crc << 1) ^ 0x1021)
                                : static_cast<uint16_t>(crc << 1);
    }
    table[byte] = crc;
  }
  return table;
}

constexpr std::array<uint16_t, 256> k_crc16_table = make_crc16_table();

}  // namespace

uint16_t crc16_xmodem(std::string_view data) {
  uint16_t crc = 0;
  for (char ch : data) {
    auto index = static_cast<uint8_t>((crc >> 8) ^ static_cast<uint8_t>(ch));
    crc = static_cast<uint16_t>((crc << 8) ^ k_crc16_table[index]);
  }
  return crc;
}

std::string_view key_hash_tag(std::string_view key) {
  size_t open = key.find('{');
  if (open == std::string_view::npos) {
    return key;
  }
  size_t close = key.find('}', open + 1);
  if (close == std::string_view::npos || close == open + 1) {
    return key;
  }
  return key.substr(open + 1, close - open - 1);
}

uint16_t key_hash_slot(std::string_view key) {
  return static_cast<uint16_t>(crc16_xmodem(key_hash_tag(key)) & (k_cluster_slots - 1));
}

}  // namespace keyshift::engine
