#include "engine/keyspace/digest.hpp"

#include "engine/util/grisu2.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace keyshift::engine {

namespace {

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
