#include "engine/ds/hyperloglog.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

namespace keyshift::engine::hll {
namespace {

constexpr uint64_t k_hash_seed = 0xadc83b19ULL;
constexpr int k_q = 64 - k_precision;
constexpr uint8_t k_register_max = 63;
constexpr int k_val_max_value = 32;
constexpr int k_val_max_len = 4;
constexpr int k_zero_max_len = 64;
constexpr int k_xzero_max_len = 16384;
constexpr double k_alpha_inf = 0.721347520444481703680;
/// Bytes of dense register data; the last register's second byte is past it (Valkey reads
/// the string's terminator there), so it reads as zero and is never written.
constexpr size_t k_dense_bytes = k_dense_size - k_header_size;

uint8_t byte_at(std::string_view s, size_t i) {
  // Valkey's strings carry a NUL after their end, which a truncated XZERO reads.
  return i < s.size() ? static_cast<uint8_t>(s[i]) : 0;
}

bool is_zero(uint8_t b) {
  return (b & 0xc0) == 0;
}
bool is_xzero(uint8_t b) {
  return (b & 0xc0) == 0x40;
}
bool is_val(uint8_t b) {
  return (b & 0x80) != 0;
}
int zero_len(uint8_t b) {
  return (b & 0x3f) + 1;
}
int xzero_len(uint8_t b0, uint8_t b1) {
  return (((b0 & 0x3f) << 8) | b1) + 1;
}
int val_value(uint8_t b) {
  return ((b >> 2) & 0x1f) + 1;
}
int val_len(uint8_t b) {
  return (b & 0x3) + 1;
}
char val_op(int value, int len) {
  return static_cast<char>(0x80 | ((value - 1) << 2) | (len - 1));
}

/// Appends the shortest zero-run opcode for `len` registers.
void append_zeros(std::string& out, int len) {
  if (len > k_zero_max_len) {
    out.push_back(static_cast<char>(0x40 | ((len - 1) >> 8)));
    out.push_back(static_cast<char>((len - 1) & 0xff));
  } else {
    out.push_back(static_cast<char>(len - 1));
  }
}

void set_dense(uint8_t* regs, size_t index, uint8_t value) {
  size_t byte = index * 6 / 8;
  unsigned fb = index * 6 & 7;
  unsigned fb8 = 8 - fb;
  unsigned v = value;
  regs[byte] = static_cast<uint8_t>((regs[byte] & ~(k_register_max << fb)) | (v << fb));
  if (byte + 1 < k_dense_bytes) {
    regs[byte + 1] = static_cast<uint8_t>((regs[byte + 1] & ~(k_register_max >> fb8)) | (v >> fb8));
  }
}

uint8_t get_dense(const uint8_t* regs, size_t index) {
  size_t byte = index * 6 / 8;
  unsigned fb = index * 6 & 7;
  unsigned b0 = regs[byte];
  unsigned b1 = byte + 1 < k_dense_bytes ? regs[byte + 1] : 0;
  return static_cast<uint8_t>(((b0 >> fb) | (b1 << (8 - fb))) & k_register_max);
}

uint8_t* dense_regs(std::string& hll) {
  return reinterpret_cast<uint8_t*>(hll.data()) + k_header_size;
}

/// Raises a dense register; 1 if it changed.
int dense_set(std::string& hll, size_t index, uint8_t count) {
  uint8_t* regs = dense_regs(hll);
  if (count > get_dense(regs, index)) {
    set_dense(regs, index, count);
    return 1;
  }
  return 0;
}

double sigma(double x) {
  if (x == 1.) {
    return std::numeric_limits<double>::infinity();
  }
  double y = 1;
  double z = x;
  double prev = 0;
  do {
    x *= x;
    prev = z;
    z += x * y;
    y += y;
  } while (prev != z);
  return z;
}

double tau(double x) {
  if (x == 0. || x == 1.) {
    return 0.;
  }
  double y = 1.0;
  double z = 1 - x;
  double prev = 0;
  do {
    x = std::sqrt(x);
    prev = z;
    y *= 0.5;
    z -= std::pow(1 - x, 2) * y;
  } while (prev != z);
  return z / 3;
}

/// Ertl's improved estimator over a register histogram, as Valkey computes it.
uint64_t estimate_histogram(const std::array<int, 64>& histo) {
  double m = static_cast<double>(k_registers);
  double z = m * tau((m - histo[k_q + 1]) / m);
  for (int j = k_q; j >= 1; --j) {
    z += histo[static_cast<size_t>(j)];
    z *= 0.5;
  }
  z += m * sigma(histo[0] / m);
  return static_cast<uint64_t>(
      static_cast<double>(std::llroundl(static_cast<long double>(k_alpha_inf * m * m / z))));
}

}  // namespace

uint64_t murmur_hash64a(std::string_view data, uint64_t seed) {
  constexpr uint64_t m = 0xc6a4a7935bd1e995ULL;
  constexpr int r = 47;
  // Valkey passes the length as an int and the seed as an unsigned int.
  auto len = static_cast<int>(data.size());
  uint64_t h = static_cast<uint32_t>(seed) ^ (static_cast<uint64_t>(len) * m);
  const auto* p = reinterpret_cast<const uint8_t*>(data.data());
  size_t blocks = data.size() / 8;
  for (size_t i = 0; i < blocks; ++i, p += 8) {
    uint64_t k = 0;
    for (int b = 7; b >= 0; --b) {
      k = (k << 8) | p[b];
    }
    k *= m;
    k ^= k >> r;
    k *= m;
    h ^= k;
    h *= m;
  }
  size_t tail = data.size() & 7;
  if (tail != 0) {
    for (size_t b = tail; b-- > 0;) {
      h ^= static_cast<uint64_t>(p[b]) << (8 * b);
    }
    h *= m;
  }
  h ^= h >> r;
  h *= m;
  h ^= h >> r;
  return h;
}

Pattern pattern_of(std::string_view element) {
  uint64_t hash = murmur_hash64a(element, k_hash_seed);
  size_t index = hash & (k_registers - 1);
  hash >>= k_precision;
  hash |= uint64_t{1} << k_q;
  return {index, static_cast<uint8_t>(1 + std::countr_zero(hash))};
}

std::string create() {
  std::string s(k_header_size, '\0');
  s[0] = 'H';
  s[1] = 'Y';
  s[2] = 'L';
  s[3] = 'L';
  s[4] = static_cast<char>(k_sparse);
  for (size_t left = k_registers; left > 0;) {
    size_t run = std::min<size_t>(left, k_xzero_max_len);
    append_zeros(s, static_cast<int>(run));
    left -= run;
  }
  return s;
}

bool looks_valid(std::string_view bytes) {
  if (bytes.size() < k_header_size || bytes.substr(0, 4) != "HYLL") {
    return false;
  }
  uint8_t enc = encoding(bytes);
  if (enc > k_sparse) {
    return false;
  }
  return enc != k_dense || bytes.size() == k_dense_size;
}

bool to_dense(std::string& hll) {
  if (encoding(hll) == k_dense) {
    return true;
  }
  std::string dense(k_dense_size, '\0');
  dense.replace(0, k_header_size, hll, 0, k_header_size);
  dense[4] = static_cast<char>(k_dense);
  uint8_t* regs = dense_regs(dense);
  size_t idx = 0;
  std::string_view s = hll;
  for (size_t p = k_header_size; p < s.size();) {
    uint8_t b = byte_at(s, p);
    if (is_zero(b)) {
      idx += static_cast<size_t>(zero_len(b));
      p += 1;
    } else if (is_xzero(b)) {
      idx += static_cast<size_t>(xzero_len(b, byte_at(s, p + 1)));
      p += 2;
    } else {
      auto run = static_cast<size_t>(val_len(b));
      if (idx + run > k_registers) {
        break;
      }
      for (size_t i = 0; i < run; ++i) {
        set_dense(regs, idx++, static_cast<uint8_t>(val_value(b)));
      }
      p += 1;
    }
  }
  if (idx != k_registers) {
    return false;
  }
  hll = std::move(dense);
  return true;
}

int set_register(std::string& hll, size_t index, uint8_t count, size_t sparse_max_bytes) {
  if (encoding(hll) == k_dense) {
    return dense_set(hll, index, count);
  }
  auto promote = [&]() {
    if (!to_dense(hll)) {
      return -1;
    }
    return dense_set(hll, index, count);
  };
  if (count > k_val_max_value) {
    return promote();
  }
  const size_t start = k_header_size;
  size_t end = hll.size();
  // Find the opcode covering `index`.
  size_t p = start;
  size_t prev = std::string::npos;
  size_t first = 0;
  size_t span = 0;
  while (p < end) {
    uint8_t b = byte_at(hll, p);
    size_t oplen = 1;
    if (is_zero(b)) {
      span = static_cast<size_t>(zero_len(b));
    } else if (is_val(b)) {
      span = static_cast<size_t>(val_len(b));
    } else {
      span = static_cast<size_t>(xzero_len(b, byte_at(hll, p + 1)));
      oplen = 2;
    }
    if (index <= first + span - 1) {
      break;
    }
    prev = p;
    p += oplen;
    first += span;
  }
  if (span == 0 || p >= end) {
    return -1;
  }
  uint8_t op = byte_at(hll, p);
  bool in_val = is_val(op);
  bool in_xzero = !in_val && is_xzero(op);
  int runlen = in_val ? val_len(op) : in_xzero ? xzero_len(op, byte_at(hll, p + 1)) : zero_len(op);
  bool rewritten_in_place = false;
  if (in_val) {
    if (val_value(op) >= count) {
      return 0;
    }
    if (runlen == 1) {
      hll[p] = val_op(count, 1);
      rewritten_in_place = true;
    }
  } else if (!in_xzero && runlen == 1) {
    hll[p] = val_op(count, 1);
    rewritten_in_place = true;
  }
  if (!rewritten_in_place) {
    // Split the run into up to three opcodes: before, the new value, after.
    std::string seq;
    size_t last = first + span - 1;
    if (in_val) {
      int cur = val_value(op);
      if (index != first) {
        seq.push_back(val_op(cur, static_cast<int>(index - first)));
      }
      seq.push_back(val_op(count, 1));
      if (index != last) {
        seq.push_back(val_op(cur, static_cast<int>(last - index)));
      }
    } else {
      if (index != first) {
        append_zeros(seq, static_cast<int>(index - first));
      }
      seq.push_back(val_op(count, 1));
      if (index != last) {
        append_zeros(seq, static_cast<int>(last - index));
      }
    }
    size_t oldlen = in_xzero ? 2 : 1;
    if (seq.size() > oldlen && hll.size() + seq.size() - oldlen > sparse_max_bytes) {
      return promote();
    }
    hll.replace(p, std::min(oldlen, hll.size() - p), seq);
    end = hll.size();
  }
  // Merge adjacent VAL opcodes of equal value, looking at up to five opcodes from the one
  // before the change, as Valkey does.
  size_t q = prev != std::string::npos ? prev : start;
  for (int scan = 5; q < end && scan > 0; --scan) {
    uint8_t b = byte_at(hll, q);
    if (is_xzero(b)) {
      q += 2;
      continue;
    }
    if (is_zero(b)) {
      q += 1;
      continue;
    }
    if (q + 1 < end && is_val(byte_at(hll, q + 1))) {
      uint8_t n = byte_at(hll, q + 1);
      int len = val_len(b) + val_len(n);
      if (val_value(b) == val_value(n) && len <= k_val_max_len) {
        hll[q + 1] = val_op(val_value(b), len);
        hll.erase(q, 1);
        end = hll.size();
        continue;
      }
    }
    q += 1;
  }
  invalidate_cache(hll);
  return 1;
}

int add(std::string& hll, std::string_view element, size_t sparse_max_bytes) {
  Pattern pat = pattern_of(element);
  return set_register(hll, pat.index, pat.count, sparse_max_bytes);
}

bool merge_into(Registers& max, std::string_view hll) {
  if (encoding(hll) == k_dense) {
    const auto* regs = reinterpret_cast<const uint8_t*>(hll.data()) + k_header_size;
    for (size_t i = 0; i < k_registers; ++i) {
      max[i] = std::max(max[i], get_dense(regs, i));
    }
    return true;
  }
  size_t i = 0;
  for (size_t p = k_header_size; p < hll.size();) {
    uint8_t b = byte_at(hll, p);
    if (is_zero(b)) {
      i += static_cast<size_t>(zero_len(b));
      p += 1;
    } else if (is_xzero(b)) {
      i += static_cast<size_t>(xzero_len(b, byte_at(hll, p + 1)));
      p += 2;
    } else {
      auto run = static_cast<size_t>(val_len(b));
      if (i + run > k_registers) {
        break;
      }
      auto v = static_cast<uint8_t>(val_value(b));
      for (size_t k = 0; k < run; ++k, ++i) {
        max[i] = std::max(max[i], v);
      }
      p += 1;
    }
  }
  return i == k_registers;
}

std::optional<uint64_t> estimate(std::string_view hll) {
  std::array<int, 64> histo{};
  if (encoding(hll) == k_dense) {
    const auto* regs = reinterpret_cast<const uint8_t*>(hll.data()) + k_header_size;
    for (size_t i = 0; i < k_registers; ++i) {
      ++histo[get_dense(regs, i)];
    }
    return estimate_histogram(histo);
  }
  size_t idx = 0;
  for (size_t p = k_header_size; p < hll.size();) {
    uint8_t b = byte_at(hll, p);
    if (is_zero(b)) {
      idx += static_cast<size_t>(zero_len(b));
      histo[0] += zero_len(b);
      p += 1;
    } else if (is_xzero(b)) {
      int run = xzero_len(b, byte_at(hll, p + 1));
      idx += static_cast<size_t>(run);
      histo[0] += run;
      p += 2;
    } else {
      idx += static_cast<size_t>(val_len(b));
      histo[static_cast<size_t>(val_value(b))] += val_len(b);
      p += 1;
    }
  }
  if (idx != k_registers) {
    return std::nullopt;
  }
  return estimate_histogram(histo);
}

uint64_t estimate(const Registers& registers) {
  std::array<int, 64> histo{};
  for (uint8_t r : registers) {
    ++histo[r & 63];
  }
  return estimate_histogram(histo);
}

std::optional<uint64_t> cached_cardinality(std::string_view hll) {
  if ((byte_at(hll, 15) & 0x80) != 0) {
    return std::nullopt;
  }
  uint64_t card = 0;
  for (size_t i = 8; i-- > 0;) {
    card = (card << 8) | byte_at(hll, 8 + i);
  }
  return card;
}

void set_cached_cardinality(std::string& hll, uint64_t card) {
  for (size_t i = 0; i < 8; ++i) {
    hll[8 + i] = static_cast<char>((card >> (8 * i)) & 0xff);
  }
}

void invalidate_cache(std::string& hll) {
  hll[15] = static_cast<char>(static_cast<uint8_t>(hll[15]) | 0x80);
}

uint8_t dense_register(std::string_view hll, size_t index) {
  return get_dense(reinterpret_cast<const uint8_t*>(hll.data()) + k_header_size, index);
}

std::string decode_sparse(std::string_view hll) {
  std::string out;
  for (size_t p = k_header_size; p < hll.size();) {
    uint8_t b = byte_at(hll, p);
    if (is_zero(b)) {
      out += "z:" + std::to_string(zero_len(b)) + " ";
      p += 1;
    } else if (is_xzero(b)) {
      out += "Z:" + std::to_string(xzero_len(b, byte_at(hll, p + 1))) + " ";
      p += 2;
    } else {
      out += "v:" + std::to_string(val_value(b)) + "," + std::to_string(val_len(b)) + " ";
      p += 1;
    }
  }
  while (!out.empty() && out.back() == ' ') {
    out.pop_back();
  }
  return out;
}

}  // namespace keyshift::engine::hll
