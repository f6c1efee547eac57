#include "engine/ds/intset.hpp"

#include "engine/util/memory.hpp"

#include <cstring>
#include <utility>

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

Intset::~Intset() {
  MemoryCounter::raw_deallocate(m_blob);
}

Intset::Intset(const Intset& other) {
  if (other.m_blob != nullptr) {
    size_t n = other.blob_size();
    m_blob = static_cast<uint8_t*>(MemoryCounter::raw_allocate(n));
    std::memcpy(m_blob, other.m_blob, n);
  }
}

Intset& Intset::operator=(const Intset& other) {
  if (this != &other) {
    Intset copy(other);
    *this = std::move(copy);
  }
  return *this;
}

Intset& Intset::operator=(Intset&& other) noexcept {
  if (this != &other) {
    MemoryCounter::raw_deallocate(m_blob);
    m_blob = other.m_blob;
    other.m_blob = nullptr;
  }
  return *this;
}

std::string_view Intset::blob() const {
  // An empty set reads as the header Valkey would write for it.
  static constexpr char k_empty[k_header_size] = {2, 0, 0, 0, 0, 0, 0, 0};
  if (m_blob == nullptr) {
    return {k_empty, k_header_size};
  }
  return {reinterpret_cast<const char*>(m_blob), blob_size()};
}

size_t Intset::bytes() const {
  return m_blob == nullptr ? 0 : MemoryCounter::usable_size(m_blob);
}

void Intset::shrink_to_fit() {
  if (m_blob == nullptr) {
    return;
  }
  size_t n = blob_size();
  size_t have = MemoryCounter::usable_size(m_blob);
  if (have == n) {
    return;
  }
  // realloc keeps a block that shrinks by less than half, so copy into an exact one and
  // keep whichever is smaller.
  auto* exact = static_cast<uint8_t*>(MemoryCounter::raw_allocate(n));
  if (MemoryCounter::usable_size(exact) >= have) {
    MemoryCounter::raw_deallocate(exact);
    return;
  }
  std::memcpy(exact, m_blob, n);
  MemoryCounter::raw_deallocate(m_blob);
  m_blob = exact;
}

void Intset::reserve(size_t n) {
  if (n == 0) {
    return;
  }
  size_t need = k_header_size + n * encoding();
  if (m_blob == nullptr) {
    m_blob = static_cast<uint8_t*>(MemoryCounter::raw_allocate(need));
    write_u32(0, 2);
    write_u32(4, 0);
  } else if (need > MemoryCounter::usable_size(m_blob)) {
    m_blob = static_cast<uint8_t*>(MemoryCounter::raw_reallocate(m_blob, need));
  }
}

void Intset::grow_to(size_t n) {
  if (m_blob == nullptr) {
    m_blob = static_cast<uint8_t*>(MemoryCounter::raw_allocate(n));
    write_u32(0, 2);
    write_u32(4, 0);
    return;
  }
  if (n > MemoryCounter::usable_size(m_blob)) {
    // An eighth of headroom keeps one-by-one inserts amortized without doubling the memory.
    m_blob = static_cast<uint8_t*>(MemoryCounter::raw_reallocate(m_blob, n + n / 8 + 8));
  }
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
  return static_cast<uint32_t>(load_le(m_blob + offset, 4));
}

void Intset::write_u32(size_t offset, uint32_t v) {
  store_le(m_blob + offset, 4, v);
}

int64_t Intset::read_at(uint32_t pos, uint32_t width) const {
  const uint8_t* p = m_blob + k_header_size + static_cast<size_t>(pos) * width;
  return sign_extend(load_le(p, width), width);
}

void Intset::write_at(uint32_t pos, uint32_t width, int64_t value) {
  uint8_t* p = m_blob + k_header_size + static_cast<size_t>(pos) * width;
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
  grow_to(k_header_size + static_cast<size_t>(n + 1) * width);
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
  grow_to(k_header_size + static_cast<size_t>(n + 1) * width);
  uint8_t* base = m_blob + k_header_size;
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
  uint8_t* base = m_blob + k_header_size;
  if (pos + 1 < n) {
    std::memmove(base + static_cast<size_t>(pos) * width,
                 base + static_cast<size_t>(pos + 1) * width,
                 static_cast<size_t>(n - pos - 1) * width);
  }
  if (n == 1) {
    // The last member leaves: an empty set keeps no blob.
    MemoryCounter::raw_deallocate(m_blob);
    m_blob = nullptr;
    return true;
  }
  write_u32(4, n - 1);
  size_t need = k_header_size + static_cast<size_t>(n - 1) * width;
  if (MemoryCounter::usable_size(m_blob) > 2 * need + 64) {
    m_blob = static_cast<uint8_t*>(MemoryCounter::raw_reallocate(m_blob, need));
  }
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
  s.m_blob = static_cast<uint8_t*>(MemoryCounter::raw_allocate(blob.size()));
  std::memcpy(s.m_blob, blob.data(), blob.size());
  return s;
}

}  // namespace keyshift::engine
