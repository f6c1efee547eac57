#include "engine/ds/lzf.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <vector>

namespace keyshift::engine {
namespace {

constexpr size_t k_max_literal = 32;
constexpr size_t k_max_offset = 8192;  // 13 bits, stored minus one
constexpr size_t k_max_match = 264;    // 7 + 255 + 2
constexpr unsigned k_hash_bits = 14;
constexpr unsigned k_min_hash_bits = 8;

uint32_t hash3(const uint8_t* p, unsigned bits) {
  uint32_t v = static_cast<uint32_t>(p[0]) << 16 | static_cast<uint32_t>(p[1]) << 8 | p[2];
  return (v * 2654435761u) >> (32 - bits);
}

/// Appends literal bytes [from, to) as runs of at most 32; false when out of room.
bool emit_literals(const uint8_t* in, size_t from, size_t to, uint8_t* out, size_t out_cap,
                   size_t& op) {
  while (from < to) {
    size_t n = to - from < k_max_literal ? to - from : k_max_literal;
    if (out_cap - op < n + 1) {
      return false;
    }
    out[op++] = static_cast<uint8_t>(n - 1);
    std::memcpy(out + op, in + from, n);
    op += n;
    from += n;
  }
  return true;
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
  if (in_len == 0) {
    return 0;
  }
  // Positions plus one, so zero means "never seen". The table has about as many slots as
  // the input has bytes: most values are short, and clearing 64 KiB for each of them was
  // most of what compressing them cost.
  unsigned bits = k_min_hash_bits;
  while (bits < k_hash_bits && (size_t{1} << bits) < in_len) {
    ++bits;
  }
  std::array<uint32_t, size_t{1} << k_hash_bits> table;
  std::fill_n(table.begin(), size_t{1} << bits, 0u);
  size_t op = 0;
  size_t ip = 0;
  size_t literal_start = 0;
  while (ip + 2 < in_len) {
    uint32_t h = hash3(in + ip, bits);
    size_t candidate = table[h];
    table[h] = static_cast<uint32_t>(ip + 1);
    if (candidate != 0) {
      size_t ref = candidate - 1;
      size_t distance = ip - ref;
      if (distance <= k_max_offset && std::memcmp(in + ref, in + ip, 3) == 0) {
        size_t limit = in_len - ip < k_max_match ? in_len - ip : k_max_match;
        size_t len = 3;
        while (len < limit && in[ref + len] == in[ip + len]) {
          ++len;
        }
        if (!emit_literals(in, literal_start, ip, out, out_cap, op)) {
          return 0;
        }
        size_t code = len - 2;
        size_t off = distance - 1;
        size_t need = code < 7 ? 2 : 3;
        if (out_cap - op < need) {
          return 0;
        }
        if (code < 7) {
          out[op++] = static_cast<uint8_t>(code << 5 | off >> 8);
        } else {
          out[op++] = static_cast<uint8_t>(7u << 5 | off >> 8);
          out[op++] = static_cast<uint8_t>(code - 7);
        }
        out[op++] = static_cast<uint8_t>(off & 0xFF);
        // Index the positions inside the match so later data can refer to them.
        size_t end = ip + len;
        for (size_t i = ip + 1; i < end && i + 2 < in_len; ++i) {
          table[hash3(in + i, bits)] = static_cast<uint32_t>(i + 1);
        }
        ip = end;
        literal_start = ip;
        continue;
      }
    }
    ++ip;
  }
  if (!emit_literals(in, literal_start, in_len, out, out_cap, op)) {
    return 0;
  }
  return op;
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
