#include "engine/ds/lzf.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <cstring>
#include <memory>

namespace keyshift::engine {
namespace {

// Valkey's lzf_c.c as built into valkey-server (src/lzfP.h: HLOG 16, VERY_FAST, not
// ULTRA_FAST): its 64 Ki-slot hash of three bytes picks the match candidates, so the same
// table shape is needed here for byte-identical output.
constexpr size_t k_max_literal = 32;
constexpr size_t k_max_offset = 8192;  // 13 bits, stored minus one
constexpr size_t k_max_ref = 264;      // longest back reference: 7 + 255 + 2 bytes
constexpr size_t k_slots = size_t{1} << 16;

/// Valkey's IDX(NEXT(FRST(p), p)): the table slot of the three bytes at `p`. Its rolling
/// value also holds the byte before `p`, but the 16-bit mask drops it.
uint32_t slot_of(const uint8_t* p) {
  uint32_t h = static_cast<uint32_t>(p[0]) << 16 | static_cast<uint32_t>(p[1]) << 8 | p[2];
  return ((h >> 8) - h * 5) & (k_slots - 1);
}

/// All 64 Ki slots, zeroed once: for inputs big enough that clearing them is cheap next to
/// compressing. Holds position + 1, 0 meaning "never seen".
template <typename Pos>
class FullTable {
 public:
  FullTable() : m_slots(new Pos[k_slots]()) {}
  /// The slot's previous content, replaced by `pos1`.
  size_t exchange(uint32_t slot, size_t pos1) {
    size_t old = m_slots[slot];
    m_slots[slot] = static_cast<Pos>(pos1);
    return old;
  }
  void set(uint32_t slot, size_t pos1) { m_slots[slot] = static_cast<Pos>(pos1); }

 private:
  std::unique_ptr<Pos[]> m_slots;
};

/// The same map from slot to position for a short input, kept in an open-addressing table
/// of about twice as many cells as the input has bytes (an input touches at most that many
/// slots), so a 100-byte value clears 1 KiB, not 256 KiB. A cell is slot << 16 | position
/// + 1; 0 is an empty cell.
class SmallTable {
 public:
  static constexpr size_t k_max_input = 8192;

  explicit SmallTable(size_t in_len) {
    while (m_bits < k_max_bits && (size_t{1} << m_bits) < 2 * in_len) {
      ++m_bits;
    }
    std::fill_n(m_cells.begin(), size_t{1} << m_bits, 0u);
  }
  size_t exchange(uint32_t slot, size_t pos1) {
    uint32_t& c = cell(slot);
    size_t old = c & 0xFFFF;
    c = slot << 16 | static_cast<uint32_t>(pos1);
    return old;
  }
  void set(uint32_t slot, size_t pos1) { cell(slot) = slot << 16 | static_cast<uint32_t>(pos1); }

 private:
  uint32_t& cell(uint32_t slot) {
    const uint32_t mask = (uint32_t{1} << m_bits) - 1;
    uint32_t i = ((slot * 40503u) & 0xFFFF) >> (16 - m_bits);
    while (m_cells[i] != 0 && (m_cells[i] >> 16) != slot) {
      i = (i + 1) & mask;
    }
    return m_cells[i];
  }

  static constexpr unsigned k_max_bits = 14;  // 2 * k_max_input cells: 64 KiB of stack
  unsigned m_bits = 4;
  std::array<uint32_t, size_t{1} << k_max_bits> m_cells;
};

/// Length of the common prefix of `a` and `b`, from `from` (already known equal) up to
/// `cap` bytes, eight bytes at a time.
size_t common_prefix(const uint8_t* a, const uint8_t* b, size_t from, size_t cap) {
  size_t n = from;
  while (n + 8 <= cap) {
    uint64_t x;
    uint64_t y;
    std::memcpy(&x, a + n, 8);
    std::memcpy(&y, b + n, 8);
    if (x != y) {
      if constexpr (std::endian::native == std::endian::little) {
        return n + static_cast<size_t>(std::countr_zero(x ^ y)) / 8;
      } else {
        return n + static_cast<size_t>(std::countl_zero(x ^ y)) / 8;
      }
    }
    n += 8;
  }
  while (n < cap && a[n] == b[n]) {
    ++n;
  }
  return n;
}

/// Valkey's lzf_compress step by step (src/lzf_c.c), with indices for pointers: the same
/// candidates, the same match lengths, the same runs, and 0 on exactly the inputs where it
/// runs out of room (that decides whether a value is stored compressed). `Table` maps a
/// slot to the last position + 1 stored there.
///
/// One difference cannot be followed: Valkey does not clear its table (INIT_HTAB 0), so a
/// slot this input never wrote holds a pointer from an earlier call, which is used when it
/// happens to point into the 8 KiB before the current position of this input and the bytes
/// there match. Output for the same bytes is then not even stable across Valkey calls; here
/// the table is clean, which is what Valkey produces whenever no such stale pointer hits.
template <typename Table>
size_t compress_with(Table& table, const uint8_t* in, size_t in_len, uint8_t* out, size_t out_cap) {
  size_t ip = 0;
  size_t op = 1;  // out[op - lit - 1] is the header of the literal run being built
  size_t lit = 0;
  while (ip + 2 < in_len) {
    const size_t ref1 = table.exchange(slot_of(in + ip), ip + 1);
    const size_t ref = ref1 - 1;
    size_t off = 0;
    // ref1 > 1: Valkey's "ref > in_data", so position 0 is never referred to.
    if (ref1 > 1 && (off = ip - ref - 1) < k_max_offset && in[ref + 2] == in[ip + 2] &&
        in[ref] == in[ip] && in[ref + 1] == in[ip + 1]) {
      size_t maxlen = std::min(in_len - ip - 2, k_max_ref);
      if (op + 4 >= out_cap && op - (lit == 0 ? 1 : 0) + 4 >= out_cap) {
        return 0;
      }
      out[op - lit - 1] = static_cast<uint8_t>(lit - 1);  // stop the run
      op -= lit == 0 ? 1 : 0;                             // or undo an empty one
      // Valkey's match loop: when more than 16 bytes may match it first compares bytes
      // 3..18 unrolled, so such a match may reach 19 bytes even where maxlen says 17 or 18
      // (both fit the input); otherwise at least 3 bytes, at most maxlen.
      size_t cap = maxlen > 16 ? std::max<size_t>(maxlen, 19) : std::max<size_t>(maxlen, 3);
      size_t len = common_prefix(in + ref, in + ip, 3, cap);
      len -= 2;  // stored as length - 2
      ++ip;
      if (len < 7) {
        out[op++] = static_cast<uint8_t>((off >> 8) + (len << 5));
      } else {
        out[op++] = static_cast<uint8_t>((off >> 8) + (7 << 5));
        out[op++] = static_cast<uint8_t>(len - 7);
      }
      out[op++] = static_cast<uint8_t>(off);
      lit = 0;
      ++op;  // start a run
      ip += len + 1;
      if (ip >= in_len - 2) {
        break;
      }
      // VERY_FAST: only the last two positions inside the match are indexed.
      table.set(slot_of(in + ip - 2), ip - 1);
      table.set(slot_of(in + ip - 1), ip);
    } else {
      if (op >= out_cap) {
        return 0;
      }
      ++lit;
      out[op++] = in[ip++];
      if (lit == k_max_literal) {
        out[op - lit - 1] = static_cast<uint8_t>(lit - 1);
        lit = 0;
        ++op;
      }
    }
  }
  if (op + 3 > out_cap) {  // at most 3 more bytes are written below
    return 0;
  }
  while (ip < in_len) {
    ++lit;
    out[op++] = in[ip++];
    if (lit == k_max_literal) {
      out[op - lit - 1] = static_cast<uint8_t>(lit - 1);
      lit = 0;
      ++op;
    }
  }
  out[op - lit - 1] = static_cast<uint8_t>(lit - 1);
  op -= lit == 0 ? 1 : 0;
  return op;
}

/// Decodes from `ip`/`op` on with every length checked, writing only when `k_write` (the
/// size-only walk of lzf_decompressed_size takes the same checks); 0 on a corrupt stream.
template <bool k_write>
size_t decode_checked(const uint8_t* in, size_t in_len, uint8_t* out, size_t out_cap, size_t ip,
                      size_t op) {
  while (ip < in_len) {
    size_t ctrl = in[ip++];
    if (ctrl < 32) {
      size_t n = ctrl + 1;
      if (in_len - ip < n || out_cap - op < n) {
        return 0;
      }
      if constexpr (k_write) {
        std::memcpy(out + op, in + ip, n);
      }
      ip += n;
      op += n;
      continue;
    }
    size_t len = ctrl >> 5;
    if (len == 7) {
      if (ip >= in_len) {
        return 0;
      }
      len += in[ip++];
    }
    len += 2;
    if (ip >= in_len) {
      return 0;
    }
    size_t back = ((ctrl & 0x1F) << 8 | in[ip++]) + 1;
    if (back > op || out_cap - op < len) {
      return 0;
    }
    if constexpr (k_write) {
      size_t ref = op - back;
      if (back >= len) {
        std::memcpy(out + op, out + ref, len);  // the common case: source and target apart
      } else {
        // Overlapping (a run): byte by byte, each byte may be one just written.
        for (size_t i = 0; i < len; ++i) {
          out[op + i] = out[ref + i];
        }
      }
    }
    op += len;
  }
  return op;
}

}  // namespace

size_t lzf_compress(const void* in_v, size_t in_len, void* out_v, size_t out_cap) {
  const auto* in = static_cast<const uint8_t*>(in_v);
  auto* out = static_cast<uint8_t*>(out_v);
  if (in_len == 0 || out_cap == 0) {
    return 0;
  }
  if (in_len <= SmallTable::k_max_input) {
    SmallTable table(in_len);
    return compress_with(table, in, in_len, out, out_cap);
  }
  if (in_len < UINT32_MAX) {
    FullTable<uint32_t> table;
    return compress_with(table, in, in_len, out, out_cap);
  }
  FullTable<uint64_t> table;
  return compress_with(table, in, in_len, out, out_cap);
}

size_t lzf_decompress(const void* in_v, size_t in_len, void* out_v, size_t out_cap) {
  const auto* in = static_cast<const uint8_t*>(in_v);
  auto* out = static_cast<uint8_t*>(out_v);
  size_t ip = 0;
  size_t op = 0;
  // Fast path: while both buffers have room for a whole run past its end, literals and
  // back references are copied in fixed 8/32-byte chunks instead of a memcpy call per run
  // (most runs are a few bytes). Overshooting writes land in the room checked for and are
  // overwritten by the runs after them.
  constexpr size_t k_slack = 32 + 264;  // the longest back reference is 264 bytes
  while (in_len - ip > k_slack && out_cap - op > k_slack) {
    size_t ctrl = in[ip++];
    if (ctrl < 32) {
      std::memcpy(out + op, in + ip, 32);
      ip += ctrl + 1;
      op += ctrl + 1;
      continue;
    }
    size_t len = ctrl >> 5;
    if (len == 7) {
      len += in[ip++];
    }
    len += 2;
    size_t back = ((ctrl & 0x1F) << 8 | in[ip++]) + 1;
    if (back > op) {
      return 0;
    }
    const uint8_t* from = out + op - back;
    uint8_t* to = out + op;
    if (back >= 8) {
      // Each 8-byte chunk reads bytes at least 8 behind the ones it writes: correct even
      // when the reference overlaps what it produces.
      for (size_t i = 0; i < len; i += 8) {
        uint64_t chunk;
        std::memcpy(&chunk, from + i, 8);
        std::memcpy(to + i, &chunk, 8);
      }
    } else {
      for (size_t i = 0; i < len; ++i) {
        to[i] = from[i];
      }
    }
    op += len;
  }
  return decode_checked<true>(in, in_len, out, out_cap, ip, op);
}

size_t lzf_decompressed_size(const void* in_v, size_t in_len, size_t out_cap) {
  return decode_checked<false>(static_cast<const uint8_t*>(in_v), in_len, nullptr, out_cap, 0, 0);
}

std::optional<std::string> lzf_decompress(std::string_view in, size_t expected_len) {
  std::string out(expected_len, '\0');
  if (expected_len == 0) {
    return in.empty() ? std::optional<std::string>(out) : std::nullopt;
  }
  size_t n = lzf_decompress(in.data(), in.size(), out.data(), out.size());
  if (n != expected_len) {
    return std::nullopt;
  }
  return out;
}

}  // namespace keyshift::engine
