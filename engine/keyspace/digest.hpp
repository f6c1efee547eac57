#pragma once

#include "engine/util/sha1.hpp"

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace keyshift::engine {

// DEBUG DIGEST / DEBUG DIGEST-VALUE, bit-exact with Valkey 8.0, over neutral values so that
// any keyspace (the engine's, an RDB reader's, a live server's replies) can be digested.
//
// A value digest starts from a seed: all zero for DEBUG DIGEST-VALUE, key_digest_seed(key)
// for a key inside DEBUG DIGEST. The key is mixed in *before* the value, so a finished
// DIGEST-VALUE cannot be turned into the key's dataset contribution afterwards; digest the
// value once per seed you need.

/// The type tag mixed into every value digest; the numbers are Valkey's OBJ_* codes.
enum class DigestType : uint32_t {
  string = 0,
  list = 1,
  set = 2,
  zset = 3,
  hash = 4,
  module = 5,
  stream = 6,
};

/// How sorted-set scores become text before they are digested.
enum class ScoreFormat : uint8_t {
  grisu2,      // Valkey 8, Redis 7.2+: fpconv's Grisu2 text, e.g. "2.37", "1e+308", "-0".
  printf_17g,  // Redis 7.0 and older: printf "%.17g", e.g. "2.3700000000000001".
};

/// A 20-byte digest state; all zero means "nothing digested yet".
class Digest {
 public:
  /// Size of a digest in bytes.
  static constexpr size_t k_size = 20;

  /// The all-zero digest (the seed of DEBUG DIGEST-VALUE).
  Digest() = default;
  /// A digest holding exactly these bytes.
  explicit Digest(const Sha1Hash& bytes) : m_bytes(bytes) {}

  /// XORs SHA1(data) in; order-independent, for unordered elements (Valkey's xorDigest).
  void xor_in(std::string_view data);
  /// XORs SHA1(data) in, then replaces the state by its own SHA-1, so that order and
  /// element boundaries matter (Valkey's mixDigest).
  void mix_in(std::string_view data);
  /// XORs another digest's bytes in unchanged (no hashing); combines partial XOR sums.
  void xor_raw(const Digest& other);

  /// The 20 raw bytes.
  const Sha1Hash& bytes() const { return m_bytes; }
  /// The 20 raw bytes as a string, to feed a digest into xor_in / mix_in.
  std::string_view view() const;
  /// True when every byte is zero.
  bool is_zero() const;
  /// 40 lowercase hex digits, as DEBUG DIGEST replies.
  std::string hex() const;

  /// Byte-wise equality.
  bool operator==(const Digest&) const = default;

 private:
  Sha1Hash m_bytes{};
};

/// Seed for a key's contribution to DEBUG DIGEST: the key name mixed into zero.
Digest key_digest_seed(std::string_view key);

/// Digest of a string value; integer-encoded strings must be passed as their decimal text.
Digest digest_string(std::string_view value, bool has_expire, const Digest& seed = {});
/// Digest of an integer-encoded string value (digested as its decimal text).
Digest digest_string(int64_t value, bool has_expire, const Digest& seed = {});

/// Digest of a list: elements in head-to-tail order.
class ListDigestBuilder {
 public:
  /// Starts a list digest from `seed`.
  explicit ListDigestBuilder(const Digest& seed = {});
  /// Appends the next element (head to tail).
  void add(std::string_view element);
  /// Appends the next element stored as an integer.
  void add(int64_t element);
  /// The finished digest; `has_expire` if the key has a TTL.
  Digest finish(bool has_expire) const;

 private:
  Digest m_state;
};

/// Digest of a set: members in any order.
class SetDigestBuilder {
 public:
  /// Starts a set digest from `seed`.
  explicit SetDigestBuilder(const Digest& seed = {});
  /// Adds a member; each member must be added once.
  void add(std::string_view member);
  /// Adds a member stored as an integer (intset / listpack integer).
  void add(int64_t member);
  /// The finished digest; `has_expire` if the key has a TTL.
  Digest finish(bool has_expire) const;

 private:
  Digest m_state;
};

/// Digest of a sorted set: (member, score) pairs in any order.
class ZSetDigestBuilder {
 public:
  /// Starts a sorted-set digest from `seed`; `format` picks the server generation to match.
  explicit ZSetDigestBuilder(const Digest& seed = {}, ScoreFormat format = ScoreFormat::grisu2);
  /// Adds a member with its score.
  void add(std::string_view member, double score);
  /// Adds a member stored as an integer (listpack integer) with its score.
  void add(int64_t member, double score);
  /// The finished digest; `has_expire` if the key has a TTL.
  Digest finish(bool has_expire) const;

 private:
  Digest m_state;
  ScoreFormat m_format;
};

/// Digest of a hash: (field, value) pairs in any order.
class HashDigestBuilder {
 public:
  /// Starts a hash digest from `seed`.
  explicit HashDigestBuilder(const Digest& seed = {});
  /// Adds a field with its value (integers as decimal text); `has_ttl` when the field has
  /// its own expire time (Redis 7.4 hash-field expiration).
  void add(std::string_view field, std::string_view value, bool has_ttl = false);
  /// The finished digest; `has_expire` if the key has a TTL.
  Digest finish(bool has_expire) const;

 private:
  Digest m_state;
};

/// Digest of a stream: live entries in ID order with their fields as XRANGE shows them.
/// Consumer groups, the last ID, entries-added and deleted entries are not part of it.
class StreamDigestBuilder {
 public:
  /// Starts a stream digest from `seed`.
  explicit StreamDigestBuilder(const Digest& seed = {});
  /// Starts the next entry, IDs ascending.
  void add_entry(uint64_t id_ms, uint64_t id_seq);
  /// Appends a field of the current entry, in entry order.
  void add_field(std::string_view field, std::string_view value);
  /// The finished digest; `has_expire` if the key has a TTL.
  Digest finish(bool has_expire) const;

 private:
  Digest m_state;
};

/// DEBUG DIGEST of a whole dataset; keys may be added in any order.
class DatasetDigest {
 public:
  /// Adds a key of database `db`, digested by a builder seeded with key_digest_seed(key).
  void add(int db, const Digest& key_digest);
  /// The dataset digest; all zero when no key was added.
  Digest digest() const;
  /// digest().hex(), the DEBUG DIGEST reply.
  std::string hex() const { return digest().hex(); }

 private:
  // Per database, the XOR of SHA1(key digest); the databases are only chained in digest(),
  // in ascending id order, because the chaining is order-dependent.
  std::map<int, Digest> m_databases;
};

/// A score as the chosen server generation formats it for digests. Not the reply text:
/// Valkey's replies print integral scores without an exponent ("1e+17" here).
std::string format_score_for_digest(double score, ScoreFormat format);

}  // namespace keyshift::engine
