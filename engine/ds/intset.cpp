#include "engine/ds/intset.hpp"

#include <cstring>

namespace keyshift::engine {
namespace {

// The blob is little-endian regardless of the host; these helpers assemble bytes.
uint64_t load_le(const uint8_t* p, uint32_t width) {
  uint64_t v = 0;
  for (uint32_t i = 0; i < width; ++i) {
    v |= static_cast<uint64_t>(p[i]) << (8 * i);
  }
  return v;
}

void store_le(uint8_t* p, uint32_t width, uint64_t v) {
  for (uint32_t i = 0; i < width; ++i) {
    p[i] = static_cast<uint8_t>(v >> (8 * i));
  }
}

int64_t sign_extend(uint64_t v, uint32_t width) {
  switch (width) {
    case 2:
      return static_cast<int16_t>(static_cast<uint16_t>(v));
    case 4:
      return static_cast<int32_t>(static_cast<uint32_t>(v));
    default:
      return static_cast<int64_t>(v);
  }
}

}  // namespace

Intset::Intset() : m_blob(k_header_size, 0) {
  write_u32(0, 2);
}

uint32_t Intset::width_for(int64_t value) {
  if (value < INT32_MIN || value > INT32_MAX) {
    return 8;
  }
  if (value < INT16_MIN || value > INT16_MAX) {
    return 4;
  }
  return 2;
}

uint32_t Intset::read_u32(size_t offset) const {
  return static_cast<uint32_t>(load_le(m_blob.data() + offset, 4));
}

void Intset::write_u32(size_t offset, uint32_t v) {
  store_le(m_blob.data() + offset, 4, v);
}

int64_t Intset::read_at(uint32_t pos, uint32_t width) const {
  const uint8_t* p = m_blob.data() + k_header_size + static_cast<size_t>(pos) * width;
  return sign_extend(load_le(p, width), width);
}

void Intset::write_at(uint32_t pos, uint32_t width, int64_t value) {
  uint8_t* p = m_blob.data() + k_header_size + static_cast<size_t>(pos) * width;
  store_le(p, width, static_cast<uint64_t>(value));
}

bool Intset::search(int64_t value, uint32_t& pos) const {
  uint32_t n = size();
  if (n == 0) {
    pos = 0;
    return false;
  }
  // Appends and prepends are common (ascending loads), so check the ends first.
  if (value > max()) {
    pos = n;
    return false;
  }
  if (value < min()) {
    pos = 0;
    return false;
  }
  uint32_t width = encoding();
  uint32_t lo = 0;
  uint32_t hi = n;  // search in [lo, hi)
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    int64_t cur = read_at(mid, width);
    if (cur == value) {
      pos = mid;
      return true;
    }
    if (cur < value) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  pos = lo;
  return false;
}

void Intset::upgrade_and_add(int64_t value, uint32_t width) {
  uint32_t old_width = encoding();
  uint32_t n = size();
  // A value that needs a wider encoding is outside the current range: below every
  // member when negative, above every member otherwise.
  bool front = value < 0;
  m_blob.resize(k_header_size + static_cast<size_t>(n + 1) * width);
  // Walk from the back so that wider writes never clobber unread narrower values.
  for (uint32_t i = n; i-- > 0;) {
    write_at(i + (front ? 1 : 0), width, read_at(i, old_width));
  }
  write_u32(0, width);
  write_at(front ? 0 : n, width, value);
  write_u32(4, n + 1);
}

bool Intset::insert(int64_t value) {
  uint32_t width = width_for(value);
  if (width > encoding()) {
    upgrade_and_add(value, width);
    return true;
  }
  uint32_t pos = 0;
  if (search(value, pos)) {
    return false;
  }
  uint32_t n = size();
  width = encoding();
  m_blob.resize(k_header_size + static_cast<size_t>(n + 1) * width);
  uint8_t* base = m_blob.data() + k_header_size;
  if (pos < n) {
    std::memmove(base + static_cast<size_t>(pos + 1) * width,
                 base + static_cast<size_t>(pos) * width, static_cast<size_t>(n - pos) * width);
  }
  write_at(pos, width, value);
  write_u32(4, n + 1);
  return true;
}

bool Intset::erase(int64_t value) {
  uint32_t width = encoding();
  if (width_for(value) > width) {
    return false;
  }
  uint32_t pos = 0;
  if (!search(value, pos)) {
    return false;
  }
  uint32_t n = size();
  uint8_t* base = m_blob.data() + k_header_size;
  if (pos + 1 < n) {
    std::memmove(base + static_cast<size_t>(pos) * width,
                 base + static_cast<size_t>(pos + 1) * width,
                 static_cast<size_t>(n - pos - 1) * width);
  }
  m_blob.resize(k_header_size + static_cast<size_t>(n - 1) * width);
  write_u32(4, n - 1);
  return true;
}

bool Intset::contains(int64_t value) const {
  uint32_t pos = 0;
  return width_for(value) <= encoding() && search(value, pos);
}

bool Intset::validate(std::string_view blob, bool deep) {
  if (blob.size() < k_header_size) {
    return false;
  }
  const auto* p = reinterpret_cast<const uint8_t*>(blob.data());
  auto width = static_cast<uint32_t>(load_le(p, 4));
  if (width != 2 && width != 4 && width != 8) {
    return false;
  }
  uint64_t count = load_le(p + 4, 4);
  if (k_header_size + count * width != blob.size()) {
    return false;
  }
  // An empty intset is never stored (empty sets are deleted).
  if (count == 0) {
    return false;
  }
  if (!deep) {
    return true;
  }
  int64_t prev = sign_extend(load_le(p + k_header_size, width), width);
  for (uint64_t i = 1; i < count; ++i) {
    int64_t cur = sign_extend(load_le(p + k_header_size + i * width, width), width);
    if (cur <= prev) {
      return false;
    }
    prev = cur;
  }
  return true;
}

std::optional<Intset> Intset::from_blob(std::string_view blob, bool deep) {
  if (!validate(blob, deep)) {
    return std::nullopt;
  }
  Intset s;
  s.m_blob.assign(reinterpret_cast<const uint8_t*>(blob.data()),
                  reinterpret_cast<const uint8_t*>(blob.data()) + blob.size());
  return s;
}

}  // namespace keyshift::engine
