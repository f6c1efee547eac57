#include "engine/ds/listpack.hpp"

#include "engine/util/memory.hpp"
#include "engine/util/strconv.hpp"

#include <cassert>
#include <cstring>
#include <string>
#include <utility>

namespace keyshift::engine {
namespace {

constexpr uint8_t k_eof = 0xFF;
constexpr uint8_t k_enc_16bit_int = 0xF1;
constexpr uint8_t k_enc_24bit_int = 0xF2;
constexpr uint8_t k_enc_32bit_int = 0xF3;
constexpr uint8_t k_enc_64bit_int = 0xF4;
constexpr uint8_t k_enc_32bit_str = 0xF0;

/// Bytes the backlen of an entry with `len` bytes of encoding+data takes. The thresholds
/// (including the strict "<" ones) decide the byte format, so they follow Valkey's.
size_t backlen_size(uint64_t len) {
  if (len <= 127) {
    return 1;
  }
  if (len < 16383) {
    return 2;
  }
  if (len < 2097151) {
    return 3;
  }
  if (len < 268435455) {
    return 4;
  }
  return 5;
}

/// Writes the backlen of `len` into `dst` (backlen_size(len) bytes): the most significant
/// 7-bit group first without a flag, the following groups with the high bit set, so a
/// reader walking backwards from the last byte knows when to stop.
void write_backlen(uint8_t* dst, uint64_t len) {
  size_t n = backlen_size(len);
  for (size_t i = 0; i < n; ++i) {
    size_t shift = 7 * (n - 1 - i);
    uint8_t group = static_cast<uint8_t>((len >> shift) & 127);
    dst[i] = i == 0 ? group : static_cast<uint8_t>(group | 128);
  }
}

/// Reads a backlen whose last byte is at `last`, not reading below `floor`; sets `used` to
/// the bytes read. Returns UINT64_MAX when malformed.
uint64_t read_backlen(const uint8_t* last, const uint8_t* floor, size_t& used) {
  uint64_t v = 0;
  used = 0;
  const uint8_t* p = last;
  while (true) {
    if (p < floor || used == 5) {
      return UINT64_MAX;
    }
    v |= static_cast<uint64_t>(*p & 127) << (7 * used);
    ++used;
    if ((*p & 128) == 0) {
      return v;
    }
    --p;
  }
}

/// Bytes of encoding+data for a value.
size_t payload_size(const LpValue& v) {
  if (v.is_int()) {
    int64_t i = v.integer();
    if (i >= 0 && i <= 127) {
      return 1;
    }
    if (i >= -4096 && i <= 4095) {
      return 2;
    }
    if (i >= -32768 && i <= 32767) {
      return 3;
    }
    if (i >= -8388608 && i <= 8388607) {
      return 4;
    }
    if (i >= INT32_MIN && i <= INT32_MAX) {
      return 5;
    }
    return 9;
  }
  size_t len = v.str().size();
  if (len < 64) {
    return 1 + len;
  }
  if (len < 4096) {
    return 2 + len;
  }
  return 5 + len;
}

/// Bytes the encoding header of the entry starting with `b0` needs before its length is
/// known (0 for an invalid first byte).
size_t header_bytes(uint8_t b0) {
  if ((b0 & 0x80) == 0 || (b0 & 0xC0) == 0x80) {
    return 1;
  }
  if ((b0 & 0xE0) == 0xC0 || (b0 & 0xF0) == 0xE0) {
    return 2;
  }
  switch (b0) {
    case k_enc_16bit_int:
    case k_enc_24bit_int:
    case k_enc_32bit_int:
    case k_enc_64bit_int:
      return 1;
    case k_enc_32bit_str:
      return 5;
    default:
      return 0;
  }
}

/// Encoding+data bytes of the entry at `p`, whose header bytes are readable.
uint64_t payload_at(const uint8_t* p) {
  uint8_t b0 = p[0];
  if ((b0 & 0x80) == 0) {
    return 1;
  }
  if ((b0 & 0xC0) == 0x80) {
    return 1 + static_cast<uint64_t>(b0 & 0x3F);
  }
  if ((b0 & 0xE0) == 0xC0) {
    return 2;
  }
  if ((b0 & 0xF0) == 0xE0) {
    return 2 + ((static_cast<uint64_t>(b0 & 0x0F) << 8) | p[1]);
  }
  switch (b0) {
    case k_enc_16bit_int:
      return 3;
    case k_enc_24bit_int:
      return 4;
    case k_enc_32bit_int:
      return 5;
    case k_enc_64bit_int:
      return 9;
    case k_enc_32bit_str:
      return 5 + (static_cast<uint64_t>(p[1]) | static_cast<uint64_t>(p[2]) << 8 |
                  static_cast<uint64_t>(p[3]) << 16 | static_cast<uint64_t>(p[4]) << 24);
    default:
      return 0;
  }
}

uint64_t read_le(const uint8_t* p, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) {
    v |= static_cast<uint64_t>(p[i]) << (8 * i);
  }
  return v;
}

void write_le(uint8_t* p, uint64_t v, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    p[i] = static_cast<uint8_t>(v >> (8 * i));
  }
}

/// Sign-extends the low `bits` bits of `u`.
int64_t sign_extend(uint64_t u, unsigned bits) {
  if (bits == 64) {
    return static_cast<int64_t>(u);
  }
  uint64_t sign = uint64_t{1} << (bits - 1);
  uint64_t mask = (uint64_t{1} << bits) - 1;
  u &= mask;
  return static_cast<int64_t>((u ^ sign) - sign);
}

}  // namespace

// --- LpValue ------------------------------------------------------------------------------

std::string LpValue::to_string() const {
  if (m_is_int) {
    return i64_to_string(m_int);
  }
  return std::string(m_str);
}

std::string_view LpValue::view(char* buf) const {
  if (m_is_int) {
    return {buf, format_i64(m_int, buf)};
  }
  return m_str;
}

bool LpValue::equals(std::string_view s) const {
  if (!m_is_int) {
    return m_str == s;
  }
  char buf[24];
  return view(buf) == s;
}

bool LpValue::operator==(const LpValue& o) const {
  if (m_is_int && o.m_is_int) {
    return m_int == o.m_int;
  }
  char buf[24];
  return o.equals(view(buf));
}

// --- Validation ---------------------------------------------------------------------------

bool lp_string_to_int(std::string_view s, int64_t& out) {
  return !s.empty() && s.size() <= 20 && parse_i64(s, out);
}

LpCheck validate_listpack(std::string_view bytes, bool deep) {
  LpCheck r;
  auto fail = [&](size_t offset, const char* problem) {
    r.ok = false;
    r.offset = offset;
    r.problem = problem;
    return r;
  };
  const auto* lp = reinterpret_cast<const uint8_t*>(bytes.data());
  const size_t size = bytes.size();
  if (size < Listpack::k_header_size + 1) {
    return fail(0, "shorter than a header and terminator");
  }
  if (read_le(lp, 4) != size) {
    return fail(0, "total bytes in the header differ from the blob size");
  }
  if (lp[size - 1] != k_eof) {
    return fail(size - 1, "missing terminator");
  }
  if (!deep) {
    return r;
  }
  const size_t end = size - 1;  // offset of the terminator
  size_t p = Listpack::k_header_size;
  size_t count = 0;
  while (p < end) {
    uint8_t b0 = lp[p];
    if (b0 == k_eof) {
      return fail(p, "terminator before the end");
    }
    size_t hdr = header_bytes(b0);
    if (hdr == 0) {
      return fail(p, "invalid entry encoding");
    }
    if (hdr > end - p) {
      return fail(p, "entry header runs past the end");
    }
    uint64_t payload = payload_at(lp + p);
    uint64_t back = backlen_size(payload);
    if (payload > end - p || back > end - p - payload) {
      return fail(p, "entry runs past the end");
    }
    size_t next = p + static_cast<size_t>(payload + back);
    size_t used = 0;
    uint64_t stored = read_backlen(lp + next - 1, lp + p + payload, used);
    if (stored != payload || used != back) {
      return fail(p + static_cast<size_t>(payload), "backlen does not match the entry");
    }
    ++count;
    p = next;
  }
  uint64_t header_count = read_le(lp + 4, 2);
  if (header_count != Listpack::k_count_unknown && header_count != count) {
    return fail(4, "element count in the header is wrong");
  }
  r.count = count;
  return r;
}

// --- Listpack -----------------------------------------------------------------------------

Listpack::~Listpack() {
  MemoryCounter::raw_deallocate(m_lp);
}

Listpack::Listpack(const Listpack& other) {
  if (other.m_lp != nullptr) {
    size_t n = other.total();
    m_lp = static_cast<uint8_t*>(MemoryCounter::raw_allocate(n));
    std::memcpy(m_lp, other.m_lp, n);
  }
}

Listpack& Listpack::operator=(const Listpack& other) {
  if (this != &other) {
    Listpack copy(other);
    *this = std::move(copy);
  }
  return *this;
}

Listpack& Listpack::operator=(Listpack&& other) noexcept {
  if (this != &other) {
    MemoryCounter::raw_deallocate(m_lp);
    m_lp = other.m_lp;
    other.m_lp = nullptr;
  }
  return *this;
}

bool Listpack::adopt(std::string_view bytes, Listpack& out, LpCheck* check) {
  LpCheck c = validate_listpack(bytes, true);
  if (check != nullptr) {
    *check = c;
  }
  if (!c.ok) {
    return false;
  }
  out = from_trusted(bytes, c.count);  // an "unknown" count becomes exact when it fits
  return true;
}

Listpack Listpack::from_trusted(std::string_view bytes, size_t count) {
  Listpack lp;
  if (count == 0) {
    return lp;
  }
  lp.m_lp = static_cast<uint8_t*>(MemoryCounter::raw_allocate(bytes.size()));
  std::memcpy(lp.m_lp, bytes.data(), bytes.size());
  write_le(lp.m_lp + 4, count < k_count_unknown ? count : k_count_unknown, 2);
  return lp;
}

size_t Listpack::total() const {
  return static_cast<size_t>(read_le(m_lp, 4));
}

uint16_t Listpack::header_count() const {
  return static_cast<uint16_t>(read_le(m_lp + 4, 2));
}

size_t Listpack::size() const {
  if (m_lp == nullptr) {
    return 0;
  }
  uint16_t c = header_count();
  if (c != k_count_unknown) {
    return c;
  }
  // As Valkey's lpLength: a count too large for the header is found by walking.
  size_t n = 0;
  for (Pos p = first(); p != k_none; p = next(p)) {
    ++n;
  }
  return n;
}

std::string_view Listpack::data() const {
  static constexpr char k_empty[] = {k_header_size + 1, 0, 0, 0, 0, 0, static_cast<char>(k_eof)};
  if (m_lp == nullptr) {
    return {k_empty, sizeof(k_empty)};
  }
  return {reinterpret_cast<const char*>(m_lp), total()};
}

size_t Listpack::bytes() const {
  return m_lp == nullptr ? 0 : MemoryCounter::usable_size(m_lp);
}

void Listpack::shrink_to_fit() {
  if (m_lp == nullptr) {
    return;
  }
  size_t n = total();
  size_t have = MemoryCounter::usable_size(m_lp);
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
  std::memcpy(exact, m_lp, n);
  MemoryCounter::raw_deallocate(m_lp);
  m_lp = exact;
}

void Listpack::materialize() {
  if (m_lp != nullptr) {
    return;
  }
  m_lp = static_cast<uint8_t*>(MemoryCounter::raw_allocate(k_header_size + 1));
  write_le(m_lp, k_header_size + 1, 4);
  write_le(m_lp + 4, 0, 2);
  m_lp[k_header_size] = k_eof;
}

void Listpack::resize(size_t new_total) {
  size_t have = MemoryCounter::usable_size(m_lp);
  if (new_total > have) {
    // An eighth of headroom: appends stay amortized O(1) without doubling the memory.
    m_lp =
        static_cast<uint8_t*>(MemoryCounter::raw_reallocate(m_lp, new_total + new_total / 8 + 16));
  } else if (have > 2 * new_total + 64) {
    // Give memory back once most of the block is unused (after pops, trims, merges).
    m_lp = static_cast<uint8_t*>(MemoryCounter::raw_reallocate(m_lp, new_total));
  }
}

void Listpack::update_header(size_t new_total, int64_t delta) {
  uint16_t c = header_count();
  size_t count = 0;
  if (c != k_count_unknown) {
    count = static_cast<size_t>(static_cast<int64_t>(c) + delta);
  } else if (delta < 0) {
    // Below 65535 elements the header holds the exact count again: walk once to find it.
    write_le(m_lp, new_total, 4);
    write_le(m_lp + 4, 0, 2);  // placeholder: the walk needs only the terminator
    for (Pos p = first(); p != k_none && m_lp[p] != k_eof; p += entry_size(p)) {
      ++count;
    }
  } else {
    count = k_count_unknown;
  }
  if (count == 0) {
    MemoryCounter::raw_deallocate(m_lp);
    m_lp = nullptr;
    return;
  }
  write_le(m_lp, new_total, 4);
  write_le(m_lp + 4, count < k_count_unknown ? count : k_count_unknown, 2);
}

void Listpack::insert_raw(Pos at, const uint8_t* src, size_t n, size_t count) {
  size_t old_total = total();
  resize(old_total + n);
  std::memmove(m_lp + at + n, m_lp + at, old_total - at);
  std::memcpy(m_lp + at, src, n);
  update_header(old_total + n, static_cast<int64_t>(count));
}

void Listpack::append_all(const Listpack& other) {
  if (other.m_lp == nullptr) {
    return;
  }
  materialize();
  size_t n = other.total() - k_header_size - 1;
  // `other` may be this listpack: copy its entries aside before the block moves.
  std::string tmp(reinterpret_cast<const char*>(other.m_lp) + k_header_size, n);
  insert_raw(total() - 1, reinterpret_cast<const uint8_t*>(tmp.data()), n, other.size());
}

void Listpack::prepend_all(const Listpack& other) {
  if (other.m_lp == nullptr) {
    return;
  }
  materialize();
  size_t n = other.total() - k_header_size - 1;
  std::string tmp(reinterpret_cast<const char*>(other.m_lp) + k_header_size, n);
  insert_raw(k_header_size, reinterpret_cast<const uint8_t*>(tmp.data()), n, other.size());
}

size_t Listpack::entry_size(Pos p) const {
  uint64_t payload = payload_at(m_lp + p);
  return static_cast<size_t>(payload + backlen_size(payload));
}

Listpack::Pos Listpack::last() const {
  if (m_lp == nullptr) {
    return k_none;
  }
  return prev(total() - 1);
}

Listpack::Pos Listpack::next(Pos p) const {
  Pos n = p + entry_size(p);
  return m_lp[n] == k_eof ? k_none : n;
}

Listpack::Pos Listpack::prev(Pos p) const {
  if (p <= k_header_size) {
    return k_none;
  }
  size_t used = 0;
  uint64_t payload = read_backlen(m_lp + p - 1, m_lp, used);
  return p - used - static_cast<size_t>(payload);
}

Listpack::Pos Listpack::seek(int64_t index) const {
  int64_t n = static_cast<int64_t>(size());
  if (index < 0) {
    index += n;
  }
  if (index < 0 || index >= n) {
    return k_none;
  }
  // Walk from the nearer end.
  if (index <= n / 2) {
    Pos p = first();
    for (int64_t i = 0; i < index; ++i) {
      p = next(p);
    }
    return p;
  }
  Pos p = last();
  for (int64_t i = n - 1; i > index; --i) {
    p = prev(p);
  }
  return p;
}

LpValue Listpack::get(Pos p) const {
  const uint8_t* e = m_lp + p;
  uint8_t b0 = e[0];
  if ((b0 & 0x80) == 0) {
    return LpValue::of_int(b0 & 0x7F);
  }
  if ((b0 & 0xC0) == 0x80) {
    return LpValue::of_str({reinterpret_cast<const char*>(e + 1), static_cast<size_t>(b0 & 0x3F)});
  }
  if ((b0 & 0xE0) == 0xC0) {
    return LpValue::of_int(sign_extend((static_cast<uint64_t>(b0 & 0x1F) << 8) | e[1], 13));
  }
  if ((b0 & 0xF0) == 0xE0) {
    size_t len = (static_cast<size_t>(b0 & 0x0F) << 8) | e[1];
    return LpValue::of_str({reinterpret_cast<const char*>(e + 2), len});
  }
  switch (b0) {
    case k_enc_16bit_int:
      return LpValue::of_int(sign_extend(read_le(e + 1, 2), 16));
    case k_enc_24bit_int:
      return LpValue::of_int(sign_extend(read_le(e + 1, 3), 24));
    case k_enc_32bit_int:
      return LpValue::of_int(sign_extend(read_le(e + 1, 4), 32));
    case k_enc_64bit_int:
      return LpValue::of_int(static_cast<int64_t>(read_le(e + 1, 8)));
    default:
      break;
  }
  assert(b0 == k_enc_32bit_str);
  return LpValue::of_str(
      {reinterpret_cast<const char*>(e + 5), static_cast<size_t>(read_le(e + 1, 4))});
}

LpValue Listpack::encode_arg(std::string_view s) {
  int64_t v = 0;
  if (lp_string_to_int(s, v)) {
    return LpValue::of_int(v);
  }
  return LpValue::of_str(s);
}

size_t Listpack::encoded_entry_size(const LpValue& v) {
  size_t payload = payload_size(v);
  return payload + backlen_size(payload);
}

void Listpack::write_entry(uint8_t* dst, const LpValue& v, size_t payload) {
  if (v.is_int()) {
    int64_t i = v.integer();
    auto u = static_cast<uint64_t>(i);
    switch (payload) {
      case 1:
        dst[0] = static_cast<uint8_t>(i);
        break;
      case 2:
        dst[0] = static_cast<uint8_t>(0xC0 | ((u >> 8) & 0x1F));
        dst[1] = static_cast<uint8_t>(u);
        break;
      case 3:
        dst[0] = k_enc_16bit_int;
        write_le(dst + 1, u, 2);
        break;
      case 4:
        dst[0] = k_enc_24bit_int;
        write_le(dst + 1, u, 3);
        break;
      case 5:
        dst[0] = k_enc_32bit_int;
        write_le(dst + 1, u, 4);
        break;
      default:
        dst[0] = k_enc_64bit_int;
        write_le(dst + 1, u, 8);
        break;
    }
  } else {
    std::string_view s = v.str();
    size_t len = s.size();
    size_t hdr = 0;
    if (len < 64) {
      dst[0] = static_cast<uint8_t>(0x80 | len);
      hdr = 1;
    } else if (len < 4096) {
      dst[0] = static_cast<uint8_t>(0xE0 | (len >> 8));
      dst[1] = static_cast<uint8_t>(len);
      hdr = 2;
    } else {
      dst[0] = k_enc_32bit_str;
      write_le(dst + 1, len, 4);
      hdr = 5;
    }
    if (len != 0) {
      std::memcpy(dst + hdr, s.data(), len);
    }
  }
  write_backlen(dst + payload, payload);
}

Listpack::Pos Listpack::insert_at(Pos at, const LpValue& v) {
  size_t payload = payload_size(v);
  size_t total_size = payload + backlen_size(payload);
  // The value may view this listpack's own bytes, which the resize may move: encode it
  // aside first in that case.
  if (!v.is_int() && !v.str().empty() && m_lp != nullptr) {
    const auto* s = reinterpret_cast<const uint8_t*>(v.str().data());
    if (s >= m_lp && s < m_lp + total()) {
      std::string tmp(total_size, '\0');
      write_entry(reinterpret_cast<uint8_t*>(tmp.data()), v, payload);
      insert_raw(at, reinterpret_cast<const uint8_t*>(tmp.data()), total_size, 1);
      return at;
    }
  }
  materialize();
  size_t old_total = total();
  resize(old_total + total_size);
  std::memmove(m_lp + at + total_size, m_lp + at, old_total - at);
  write_entry(m_lp + at, v, payload);
  update_header(old_total + total_size, 1);
  return at;
}

Listpack::Pos Listpack::append(std::string_view s) {
  return append(encode_arg(s));
}
Listpack::Pos Listpack::append(int64_t v) {
  return append(LpValue::of_int(v));
}
Listpack::Pos Listpack::append(const LpValue& v) {
  return insert_at(m_lp == nullptr ? k_header_size : total() - 1, v);
}
Listpack::Pos Listpack::prepend(std::string_view s) {
  return prepend(encode_arg(s));
}
Listpack::Pos Listpack::prepend(const LpValue& v) {
  return insert_at(k_header_size, v);
}

Listpack::Pos Listpack::insert_before(Pos p, const LpValue& v) {
  return insert_at(p, v);
}

Listpack::Pos Listpack::insert_after(Pos p, const LpValue& v) {
  return insert_at(p + entry_size(p), v);
}

Listpack::Pos Listpack::replace(Pos p, const LpValue& v) {
  if (!v.is_int() && !v.str().empty()) {
    const auto* s = reinterpret_cast<const uint8_t*>(v.str().data());
    if (s >= m_lp && s < m_lp + total()) {
      std::string copy(v.str());
      return replace(p, LpValue::of_str(copy));
    }
  }
  size_t payload = payload_size(v);
  size_t new_entry = payload + backlen_size(payload);
  size_t old_entry = entry_size(p);
  size_t old_total = total();
  size_t new_total = old_total - old_entry + new_entry;
  size_t tail = old_total - p - old_entry;
  if (new_entry > old_entry) {
    resize(new_total);
    std::memmove(m_lp + p + new_entry, m_lp + p + old_entry, tail);
  } else if (new_entry < old_entry) {
    std::memmove(m_lp + p + new_entry, m_lp + p + old_entry, tail);
    resize(new_total);
  }
  write_entry(m_lp + p, v, payload);
  update_header(new_total, 0);
  return p;
}

Listpack::Pos Listpack::erase(Pos p) {
  return erase(p, 1);
}

Listpack::Pos Listpack::erase(Pos p, size_t count) {
  Pos end = p;
  size_t removed = 0;
  while (removed < count && m_lp[end] != k_eof) {
    end += entry_size(end);
    ++removed;
  }
  size_t old_total = total();
  std::memmove(m_lp + p, m_lp + end, old_total - end);
  size_t new_total = old_total - (end - p);
  resize(new_total);
  update_header(new_total, -static_cast<int64_t>(removed));
  return m_lp == nullptr || m_lp[p] == k_eof ? k_none : p;
}

void Listpack::erase_range(int64_t index, size_t count) {
  int64_t n = static_cast<int64_t>(size());
  if (index < 0) {
    index += n;
  }
  if (index < 0) {
    index = 0;
  }
  if (index >= n || count == 0) {
    return;
  }
  erase(seek(index), count);
}

void Listpack::clear() {
  MemoryCounter::raw_deallocate(m_lp);
  m_lp = nullptr;
}

Listpack::Pos Listpack::find(std::string_view value, Pos start, size_t skip) const {
  int64_t as_int = 0;
  bool value_is_int = lp_string_to_int(value, as_int);
  size_t skipping = 0;
  for (Pos p = start; p != k_none && m_lp[p] != k_eof; p += entry_size(p)) {
    if (skipping > 0) {
      --skipping;
      continue;
    }
    LpValue v = get(p);
    bool match = v.is_int() ? (value_is_int && v.integer() == as_int) : v.str() == value;
    if (match) {
      return p;
    }
    skipping = skip;
  }
  return k_none;
}

}  // namespace keyshift::engine
