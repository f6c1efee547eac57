#include "engine/keyspace/digest.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace keyshift::engine {

namespace {

// ---- Score text, Valkey 8 flavour -------------------------------------------------------
//
// Valkey digests scores as printed by its bundled fpconv_dtoa, a Grisu2 implementation.
// Grisu2 is not always the shortest round-trip text (std::to_chars is), so a different
// shortest-digits algorithm disagrees on about 1 in 700 random doubles. This is an independent
// Grisu2 (Loitsch, PLDI 2010) that reproduces fpconv's choices: its cached-power lookup, its
// boundary computation and its final formatting rules.

// A 64-bit significand with a binary exponent: value = f * 2^e.
struct DiyFp {
  uint64_t f;
  int e;
};

// 10^k for k = -348, -340, ..., 340 as round(10^k / 2^e) with the top bit set. Generated
// with exact rational arithmetic (Python fractions), not taken from another table.
constexpr std::array<DiyFp, 87> k_cached_powers = {
    {{0xfa8fd5a0081c0288, -1220}, {0xbaaee17fa23ebf76, -1193}, {0x8b16fb203055ac76, -1166},
     {0xcf42894a5dce35ea, -1140}, {0x9a6bb0aa55653b2d, -1113}, {0xe61acf033d1a45df, -1087},
     {0xab70fe17c79ac6ca, -1060}, {0xff77b1fcbebcdc4f, -1034}, {0xbe5691ef416bd60c, -1007},
     {0x8dd01fad907ffc3c, -980},  {0xd3515c2831559a83, -954},  {0x9d71ac8fada6c9b5, -927},
     {0xea9c227723ee8bcb, -901},  {0xaecc49914078536d, -874},  {0x823c12795db6ce57, -847},
     {0xc21094364dfb5637, -821},  {0x9096ea6f3848984f, -794},  {0xd77485cb25823ac7, -768},
     {0xa086cfcd97bf97f4, -741},  {0xef340a98172aace5, -715},  {0xb23867fb2a35b28e, -688},
     {0x84c8d4dfd2c63f3b, -661},  {0xc5dd44271ad3cdba, -635},  {0x936b9fcebb25c996, -608},
     {0xdbac6c247d62a584, -582},  {0xa3ab66580d5fdaf6, -555},  {0xf3e2f893dec3f126, -529},
     {0xb5b5ada8aaff80b8, -502},  {0x87625f056c7c4a8b, -475},  {0xc9bcff6034c13053, -449},
     {0x964e858c91ba2655, -422},  {0xdff9772470297ebd, -396},  {0xa6dfbd9fb8e5b88f, -369},
     {0xf8a95fcf88747d94, -343},  {0xb94470938fa89bcf, -316},  {0x8a08f0f8bf0f156b, -289},
     {0xcdb02555653131b6, -263},  {0x993fe2c6d07b7fac, -236},  {0xe45c10c42a2b3b06, -210},
     {0xaa242499697392d3, -183},  {0xfd87b5f28300ca0e, -157},  {0xbce5086492111aeb, -130},
     {0x8cbccc096f5088cc, -103},  {0xd1b71758e219652c, -77},   {0x9c40000000000000, -50},
     {0xe8d4a51000000000, -24},   {0xad78ebc5ac620000, 3},     {0x813f3978f8940984, 30},
     {0xc097ce7bc90715b3, 56},    {0x8f7e32ce7bea5c70, 83},    {0xd5d238a4abe98068, 109},
     {0x9f4f2726179a2245, 136},   {0xed63a231d4c4fb27, 162},   {0xb0de65388cc8ada8, 189},
     {0x83c7088e1aab65db, 216},   {0xc45d1df942711d9a, 242},   {0x924d692ca61be758, 269},
     {0xda01ee641a708dea, 295},   {0xa26da3999aef774a, 322},   {0xf209787bb47d6b85, 348},
     {0xb454e4a179dd1877, 375},   {0x865b86925b9bc5c2, 402},   {0xc83553c5c8965d3d, 428},
     {0x952ab45cfa97a0b3, 455},   {0xde469fbd99a05fe3, 481},   {0xa59bc234db398c25, 508},
     {0xf6c69a72a3989f5c, 534},   {0xb7dcbf5354e9bece, 561},   {0x88fcf317f22241e2, 588},
     {0xcc20ce9bd35c78a5, 614},   {0x98165af37b2153df, 641},   {0xe2a0b5dc971f303a, 667},
     {0xa8d9d1535ce3b396, 694},   {0xfb9b7cd9a4a7443c, 720},   {0xbb764c4ca7a44410, 747},
     {0x8bab8eefb6409c1a, 774},   {0xd01fef10a657842c, 800},   {0x9b10a4e5e9913129, 827},
     {0xe7109bfba19c0c9d, 853},   {0xac2820d9623bf429, 880},   {0x80444b5e7aa7cf85, 907},
     {0xbf21e44003acdd2d, 933},   {0x8e679c2f5e44ff8f, 960},   {0xd433179d9c8cb841, 986},
     {0x9e19db92b4e31ba9, 1013},  {0xeb96bf6ebadf77d9, 1039},  {0xaf87023b9bf0ee6b, 1066}}};
constexpr int k_first_cached_power = -348;
constexpr int k_cached_power_step = 8;
// Grisu2 wants the scaled upper boundary's exponent in this window so that the integral
// part fits 32 bits and the fractional part keeps enough bits.
constexpr int k_min_scaled_exponent = -60;
constexpr int k_max_scaled_exponent = -32;

constexpr uint64_t k_hidden_bit = uint64_t{1} << 52;
constexpr uint64_t k_fraction_mask = k_hidden_bit - 1;
constexpr uint64_t k_exponent_mask = uint64_t{0x7ff} << 52;
constexpr uint64_t k_sign_mask = uint64_t{1} << 63;
constexpr int k_exponent_bias = 1023 + 52;

DiyFp normalized(DiyFp x) {
  const int shift = std::countl_zero(x.f);
  return {x.f << shift, x.e - shift};
}

// Upper 64 bits of the 128-bit product, rounded half up.
DiyFp multiply(DiyFp a, DiyFp b) {
  const __uint128_t product = static_cast<__uint128_t>(a.f) * b.f + (__uint128_t{1} << 63);
  return {static_cast<uint64_t>(product >> 64), a.e + b.e + 64};
}

// Picks the cached power that brings `upper_exponent` into the scaled window and reports
// its decimal exponent. The starting estimate is fpconv's (including its offset): when two
// powers both fit the window the start decides which one is used, and with it the digits.
DiyFp cached_power(int upper_exponent, int& decimal_exponent) {
  const int estimate = static_cast<int>(-(upper_exponent + 87) * 0.30102999566398114);
  int index = (estimate - k_first_cached_power) / k_cached_power_step;
  for (;;) {
    const int scaled = upper_exponent + k_cached_powers[index].e + 64;
    if (scaled < k_min_scaled_exponent) {
      ++index;
    } else if (scaled > k_max_scaled_exponent) {
      --index;
    } else {
      break;
    }
  }
  decimal_exponent = k_first_cached_power + index * k_cached_power_step;
  return k_cached_powers[index];
}

// Moves the last digit down while that brings the result closer to the exact value and
// stays inside the rounding interval.
void round_last_digit(char* digits, int count, uint64_t delta, uint64_t rest, uint64_t unit,
                      uint64_t distance) {
  while (rest < distance && delta - rest >= unit &&
         (rest + unit < distance || distance - rest > rest + unit - distance)) {
    --digits[count - 1];
    rest += unit;
  }
}

// Grisu2 digits of a finite `value` > 0; `exponent` receives the decimal exponent of the
// last digit. Returns the digit count.
int grisu2(uint64_t bits, char* digits, int& exponent) {
  DiyFp v{bits & k_fraction_mask, static_cast<int>((bits & k_exponent_mask) >> 52)};
  if (v.e != 0) {
    v.f += k_hidden_bit;
    v.e -= k_exponent_bias;
  } else {
    v.e = 1 - k_exponent_bias;
  }

  const DiyFp upper_raw = normalized({(v.f << 1) + 1, v.e - 1});
  // At a power of two the next lower double is half as far away (fpconv applies this to
  // the smallest normal too).
  const int lower_shift = v.f == k_hidden_bit ? 2 : 1;
  DiyFp lower_raw{(v.f << lower_shift) - 1, v.e - lower_shift};
  lower_raw.f <<= lower_raw.e - upper_raw.e;
  lower_raw.e = upper_raw.e;

  int power_exponent = 0;
  const DiyFp power = cached_power(upper_raw.e, power_exponent);
  const DiyFp w = multiply(normalized(v), power);
  DiyFp upper = multiply(upper_raw, power);
  DiyFp lower = multiply(lower_raw, power);
  // Shrink the interval by one unit each side to stay safe from the multiplication error.
  ++lower.f;
  --upper.f;
  exponent = -power_exponent;

  const int shift = -upper.e;
  const uint64_t one = uint64_t{1} << shift;
  const uint64_t distance = upper.f - w.f;
  uint64_t delta = upper.f - lower.f;
  uint64_t integral = upper.f >> shift;
  uint64_t fractional = upper.f & (one - 1);

  int count = 0;
  int kappa = 10;
  for (uint64_t divisor = 1000000000; kappa > 0; divisor /= 10) {
    const uint64_t digit = integral / divisor;
    if (digit != 0 || count != 0) {
      digits[count++] = static_cast<char>('0' + digit);
    }
    integral -= digit * divisor;
    --kappa;
    const uint64_t rest = (integral << shift) + fractional;
    if (rest <= delta) {
      exponent += kappa;
      round_last_digit(digits, count, delta, rest, divisor << shift, distance);
      return count;
    }
  }
  uint64_t scale = 1;
  for (;;) {
    fractional *= 10;
    delta *= 10;
    scale *= 10;
    --kappa;
    const uint64_t digit = fractional >> shift;
    if (digit != 0 || count != 0) {
      digits[count++] = static_cast<char>('0' + digit);
    }
    fractional &= one - 1;
    if (fractional < delta) {
      exponent += kappa;
      round_last_digit(digits, count, delta, fractional, one, distance * scale);
      return count;
    }
  }
}

std::string format_grisu2(double value) {
  const uint64_t bits = std::bit_cast<uint64_t>(value);
  const bool negative = (bits & k_sign_mask) != 0;
  std::string out;
  if (negative) {
    out.push_back('-');
  }
  if (value == 0.0) {
    out.push_back('0');  // so -0.0 is "-0"
    return out;
  }
  if ((bits & k_exponent_mask) == k_exponent_mask) {
    out.append((bits & k_fraction_mask) != 0 ? "nan" : "inf");
    return out;
  }

  std::array<char, 24> digits{};
  int exponent = 0;
  int count = grisu2(bits, digits.data(), exponent);
  const int leading_exponent = exponent + count - 1;
  const int magnitude = std::abs(leading_exponent);

  if (exponent >= 0 && magnitude < count + 7) {
    out.append(digits.data(), count);
    out.append(exponent, '0');
    return out;
  }
  if (exponent < 0 && (exponent > -7 || magnitude < 4)) {
    const int point = count + exponent;
    if (point <= 0) {
      out.append("0.");
      out.append(-point, '0');
      out.append(digits.data(), count);
    } else {
      out.append(digits.data(), point);
      out.push_back('.');
      out.append(digits.data() + point, count - point);
    }
    return out;
  }
  // fpconv caps the mantissa to fit its 24-byte buffer and takes the exponent sign from the
  // capped count; Grisu2 never yields that many digits, but keep the rule exact.
  count = std::min(count, negative ? 17 : 18);
  out.push_back(digits[0]);
  if (count > 1) {
    out.push_back('.');
    out.append(digits.data() + 1, count - 1);
  }
  out.push_back('e');
  out.push_back(exponent + count - 1 < 0 ? '-' : '+');
  std::array<char, 8> text{};
  const auto [end, ec] = std::to_chars(text.data(), text.data() + text.size(), magnitude);
  out.append(text.data(), end);
  return out;
}

// ---- Value digests ------------------------------------------------------------------------

std::string_view decimal(int64_t value, std::array<char, 24>& buffer) {
  const auto [end, ec] = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value);
  return {buffer.data(), static_cast<size_t>(end - buffer.data())};
}

// Every value digest starts with the type tag as 4 big-endian bytes mixed into the seed.
Digest start_value(DigestType type, const Digest& seed) {
  const auto code = static_cast<uint32_t>(type);
  const std::array<char, 4> tag{static_cast<char>(code >> 24), static_cast<char>(code >> 16),
                                static_cast<char>(code >> 8), static_cast<char>(code)};
  Digest state = seed;
  state.mix_in(std::string_view(tag.data(), tag.size()));
  return state;
}

// Only the presence of a TTL is digested, never its value, so digests survive a
// relative-TTL round trip.
Digest end_value(Digest state, bool has_expire) {
  if (has_expire) {
    state.xor_in("!!expire!!");
  }
  return state;
}

// Elements of unordered aggregates are digested on their own (from zero), then
// XORed in, so that their order cannot matter but field/value pairing does.
void xor_pair(Digest& state, std::string_view first, std::string_view second) {
  Digest element;
  element.mix_in(first);
  element.mix_in(second);
  state.xor_in(element.view());
}

}  // namespace

// ---- Digest -------------------------------------------------------------------------------

void Digest::xor_in(std::string_view data) {
  const Sha1Hash hash = sha1(data);
  for (size_t i = 0; i < k_size; ++i) {
    m_bytes[i] ^= hash[i];
  }
}

void Digest::mix_in(std::string_view data) {
  xor_in(data);
  m_bytes = sha1(view());
}

void Digest::xor_raw(const Digest& other) {
  for (size_t i = 0; i < k_size; ++i) {
    m_bytes[i] ^= other.m_bytes[i];
  }
}

std::string_view Digest::view() const {
  return {reinterpret_cast<const char*>(m_bytes.data()), m_bytes.size()};
}

bool Digest::is_zero() const {
  return std::all_of(m_bytes.begin(), m_bytes.end(), [](uint8_t b) { return b == 0; });
}

std::string Digest::hex() const {
  return sha1_hex(m_bytes);
}

Digest key_digest_seed(std::string_view key) {
  Digest seed;
  seed.mix_in(key);
  return seed;
}

Digest digest_string(std::string_view value, bool has_expire, const Digest& seed) {
  Digest state = start_value(DigestType::string, seed);
  state.mix_in(value);
  return end_value(state, has_expire);
}

Digest digest_string(int64_t value, bool has_expire, const Digest& seed) {
  std::array<char, 24> buffer;
  return digest_string(decimal(value, buffer), has_expire, seed);
}

// ---- Builders -----------------------------------------------------------------------------

ListDigestBuilder::ListDigestBuilder(const Digest& seed)
    : m_state(start_value(DigestType::list, seed)) {}

void ListDigestBuilder::add(std::string_view element) {
  m_state.mix_in(element);
}

void ListDigestBuilder::add(int64_t element) {
  std::array<char, 24> buffer;
  m_state.mix_in(decimal(element, buffer));
}

Digest ListDigestBuilder::finish(bool has_expire) const {
  return end_value(m_state, has_expire);
}

SetDigestBuilder::SetDigestBuilder(const Digest& seed)
    : m_state(start_value(DigestType::set, seed)) {}

void SetDigestBuilder::add(std::string_view member) {
  m_state.xor_in(member);
}

void SetDigestBuilder::add(int64_t member) {
  std::array<char, 24> buffer;
  m_state.xor_in(decimal(member, buffer));
}

Digest SetDigestBuilder::finish(bool has_expire) const {
  return end_value(m_state, has_expire);
}

ZSetDigestBuilder::ZSetDigestBuilder(const Digest& seed, ScoreFormat format)
    : m_state(start_value(DigestType::zset, seed)), m_format(format) {}

void ZSetDigestBuilder::add(std::string_view member, double score) {
  xor_pair(m_state, member, format_score_for_digest(score, m_format));
}

void ZSetDigestBuilder::add(int64_t member, double score) {
  std::array<char, 24> buffer;
  add(decimal(member, buffer), score);
}

Digest ZSetDigestBuilder::finish(bool has_expire) const {
  return end_value(m_state, has_expire);
}

HashDigestBuilder::HashDigestBuilder(const Digest& seed)
    : m_state(start_value(DigestType::hash, seed)) {}

void HashDigestBuilder::add(std::string_view field, std::string_view value, bool has_ttl) {
  if (!has_ttl) {
    xor_pair(m_state, field, value);
    return;
  }
  // Redis 7.4 (src/debug.c xorObjectDigest, "hash-field expiration") marks a field with a
  // TTL by XORing SHA1("!!hexpire!!") into the field's own digest before it joins the
  // hash's; like "!!expire!!" for keys, the time itself is not digested. Valkey 8 has no
  // field TTLs, so only such hashes digest differently from it.
  Digest element;
  element.mix_in(field);
  element.mix_in(value);
  element.xor_in("!!hexpire!!");
  m_state.xor_in(element.view());
}

Digest HashDigestBuilder::finish(bool has_expire) const {
  return end_value(m_state, has_expire);
}

StreamDigestBuilder::StreamDigestBuilder(const Digest& seed)
    : m_state(start_value(DigestType::stream, seed)) {}

void StreamDigestBuilder::add_entry(uint64_t id_ms, uint64_t id_seq) {
  // "ms.seq" with a dot, not the "ms-seq" of XADD replies.
  std::array<char, 48> text;
  char* end = std::to_chars(text.data(), text.data() + 20, id_ms).ptr;
  *end++ = '.';
  end = std::to_chars(end, text.data() + text.size(), id_seq).ptr;
  m_state.mix_in(std::string_view(text.data(), static_cast<size_t>(end - text.data())));
}

void StreamDigestBuilder::add_field(std::string_view field, std::string_view value) {
  m_state.mix_in(field);
  m_state.mix_in(value);
}

Digest StreamDigestBuilder::finish(bool has_expire) const {
  return end_value(m_state, has_expire);
}

// ---- Dataset ------------------------------------------------------------------------------

void DatasetDigest::add(int db, const Digest& key_digest) {
  m_databases[db].xor_in(key_digest.view());
}

Digest DatasetDigest::digest() const {
  Digest total;
  for (const auto& [db, keys] : m_databases) {
    // The database id is chained in before its keys so the same keys in another database
    // give another digest.
    const auto id = static_cast<uint32_t>(db);
    const std::array<char, 4> tag{static_cast<char>(id >> 24), static_cast<char>(id >> 16),
                                  static_cast<char>(id >> 8), static_cast<char>(id)};
    total.mix_in(std::string_view(tag.data(), tag.size()));
    total.xor_raw(keys);
  }
  return total;
}

// ---- Scores -------------------------------------------------------------------------------

std::string format_score_for_digest(double score, ScoreFormat format) {
  if (format == ScoreFormat::printf_17g) {
    std::array<char, 40> text;
    const int size = std::snprintf(text.data(), text.size(), "%.17g", score);
    return {text.data(), static_cast<size_t>(size)};
  }
  return format_grisu2(score);
}

}  // namespace keyshift::engine
