#include "tests/unit/engine/corpus_json.hpp"
#include "tests/unit/test_paths.hpp"

#include "engine/keyspace/digest.hpp"
#include "engine/util/sha1.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <numbers>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace {

using keyshift::engine::DatasetDigest;
using keyshift::engine::Digest;
using keyshift::engine::digest_string;
using keyshift::engine::format_score_for_digest;
using keyshift::engine::HashDigestBuilder;
using keyshift::engine::key_digest_seed;
using keyshift::engine::ListDigestBuilder;
using keyshift::engine::ScoreFormat;
using keyshift::engine::SetDigestBuilder;
using keyshift::engine::Sha1;
using keyshift::engine::sha1;
using keyshift::engine::sha1_hex;
using keyshift::engine::StreamDigestBuilder;
using keyshift::engine::ZSetDigestBuilder;
using keyshift::test::decode_bytes;
using keyshift::test::from_hex;
using keyshift::test::Json;
using keyshift::test::JsonReader;
using keyshift::test::read_file;

std::pair<uint64_t, uint64_t> parse_stream_id(const std::string& id) {
  const size_t dash = id.find('-');
  return {std::stoull(id.substr(0, dash)), std::stoull(id.substr(dash + 1))};
}

// Digests one corpus key starting from `seed`; false when the value cannot be rebuilt.
bool digest_corpus_value(const Json& key, const Digest& seed, ScoreFormat format, Digest& out) {
  const std::string& type = key.at("type").text;
  const Json& value = key.at("value");
  const bool has_expire = key.at("pexpiretime").text != "-1";
  std::string a;
  std::string b;
  // Redis 7.4's hash-field TTLs: the fields that have one are digested with a mark.
  std::vector<std::string> ttl_fields;
  if (const Json* field_ttls = key.find("field_ttls")) {
    for (const Json& ft : field_ttls->items) {
      if (ft.at("hpexpiretime").text != "-1") {
        if (!decode_bytes(ft.at("field"), a)) {
          return false;
        }
        ttl_fields.push_back(a);
      }
    }
  }
  if (type == "string") {
    if (!decode_bytes(value, a)) {
      return false;
    }
    out = digest_string(a, has_expire, seed);
    return true;
  }
  if (type == "list") {
    ListDigestBuilder builder(seed);
    for (const Json& element : value.items) {
      if (!decode_bytes(element, a)) {
        return false;
      }
      builder.add(a);
    }
    out = builder.finish(has_expire);
    return true;
  }
  if (type == "set") {
    SetDigestBuilder builder(seed);
    for (const Json& member : value.items) {
      if (!decode_bytes(member, a)) {
        return false;
      }
      builder.add(a);
    }
    out = builder.finish(has_expire);
    return true;
  }
  if (type == "zset") {
    ZSetDigestBuilder builder(seed, format);
    for (const Json& pair : value.items) {
      if (!decode_bytes(pair.items.at(0), a)) {
        return false;
      }
      // The corpus keeps the score text the server replied with; it parses back exactly.
      builder.add(a, std::strtod(pair.items.at(1).text.c_str(), nullptr));
    }
    out = builder.finish(has_expire);
    return true;
  }
  if (type == "hash") {
    HashDigestBuilder builder(seed);
    for (const Json& pair : value.items) {
      if (!decode_bytes(pair.items.at(0), a) || !decode_bytes(pair.items.at(1), b)) {
        return false;
      }
      builder.add(a, b, std::find(ttl_fields.begin(), ttl_fields.end(), a) != ttl_fields.end());
    }
    out = builder.finish(has_expire);
    return true;
  }
  if (type == "stream") {
    StreamDigestBuilder builder(seed);
    for (const Json& entry : value.at("entries").items) {
      const auto [ms, seq] = parse_stream_id(entry.items.at(0).text);
      builder.add_entry(ms, seq);
      const auto& fields = entry.items.at(1).items;
      for (size_t i = 0; i + 1 < fields.size(); i += 2) {
        if (!decode_bytes(fields[i], a) || !decode_bytes(fields[i + 1], b)) {
          return false;
        }
        builder.add_field(a, b);
      }
    }
    out = builder.finish(has_expire);
    return true;
  }
  return false;
}

struct CorpusTally {
  int files = 0;
  int values = 0;
  int values_skipped = 0;
  int datasets = 0;
  int datasets_skipped = 0;
};

// Checks every DEBUG DIGEST-VALUE and, when every value could be rebuilt, DEBUG DIGEST of one
// server's entry in a ground-truth file.
void check_server_entry(const std::string& file, const std::string& server, const Json& entry,
                        CorpusTally& tally) {
  // Redis 7.0 printed scores with %.17g; 7.4 and Valkey 8 share fpconv.
  const ScoreFormat format =
      server.rfind("redis-7.0", 0) == 0 ? ScoreFormat::printf_17g : ScoreFormat::grisu2;
  DatasetDigest dataset;
  bool complete = true;
  for (const Json& key : entry.at("keys").items) {
    const std::string name =
        key.at("key_is_hex").text == "true" ? from_hex(key.at("key").text) : key.at("key").text;
    const int db = std::stoi(key.at("db").text);
    Digest value_digest;
    Digest key_digest;
    if (!digest_corpus_value(key, Digest{}, format, value_digest) ||
        !digest_corpus_value(key, key_digest_seed(name), format, key_digest)) {
      complete = false;
      ++tally.values_skipped;
      continue;
    }
    INFO(file, " ", server, " db ", db, " key ", key.at("key").text);
    CHECK(value_digest.hex() == key.at("digest_value").text);
    dataset.add(db, key_digest);
    ++tally.values;
  }
  if (!complete) {
    ++tally.datasets_skipped;
    return;
  }
  INFO(file, " ", server, " DEBUG DIGEST");
  CHECK(dataset.hex() == entry.at("digest").text);
  ++tally.datasets;
}

Digest digest_of_hex(std::string_view hex) {
  keyshift::engine::Sha1Hash bytes{};
  const std::string raw = from_hex(hex);
  std::copy(raw.begin(), raw.end(), bytes.begin());
  return Digest(bytes);
}

}  // namespace

TEST_SUITE("engine::sha1") {
  TEST_CASE("the FIPS 180 and RFC 3174 test vectors hash to their published values") {
    CHECK(sha1_hex(sha1("")) == "da39a3ee5e6b4b0d3255bfef95601890afd80709");
    CHECK(sha1_hex(sha1("abc")) == "a9993e364706816aba3e25717850c26c9cd0d89d");
    CHECK(sha1_hex(sha1("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")) ==
          "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
    CHECK(sha1_hex(sha1("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmno"
                        "ijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu")) ==
          "a49b2446a02c645bf419f995b67091253a04a259");
    CHECK(sha1_hex(sha1("The quick brown fox jumps over the lazy dog")) ==
          "2fd4e1c67a2d28fced849ee1bb76e7391b93eb12");
  }

  TEST_CASE("a million 'a' characters hash to the published value however they are split") {
    const std::string chunk(1000, 'a');
    Sha1 in_chunks;
    for (int i = 0; i < 1000; ++i) {
      in_chunks.update(chunk);
    }
    CHECK(sha1_hex(in_chunks.finish()) == "34aa973cd4c4daa4f61eeb2bdbad27316534016f");

    Sha1 bytewise;
    const std::string million(1000000, 'a');
    for (size_t i = 0; i < million.size(); i += 7) {
      bytewise.update(std::string_view(million).substr(i, 7));
    }
    CHECK(sha1_hex(bytewise.finish()) == "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
  }

  TEST_CASE("messages around the padding boundary hash like one-shot messages") {
    // 55, 56 and 64 bytes put the length field in the same block, the next block, or alone.
    for (size_t size : {55u, 56u, 63u, 64u, 65u, 119u, 120u}) {
      const std::string message(size, 'x');
      Sha1 split;
      split.update(std::string_view(message).substr(0, size / 3));
      split.update(std::string_view(message).substr(size / 3));
      CHECK(split.finish() == sha1(message));
    }
    CHECK(sha1_hex(sha1(std::string(64, 'a'))) == "0098ba824b5c16427bd7a1122a5a442a25ec644d");
  }

  TEST_CASE("finish leaves the hasher usable for a longer message") {
    Sha1 running;
    running.update("ab");
    CHECK(running.finish() == sha1("ab"));
    running.update("c");
    CHECK(sha1_hex(running.finish()) == "a9993e364706816aba3e25717850c26c9cd0d89d");
  }
}

TEST_SUITE("engine::digest") {
  TEST_CASE("an empty dataset digests to forty zeros") {
    DatasetDigest dataset;
    CHECK(dataset.hex() == "0000000000000000000000000000000000000000");
    CHECK(dataset.digest().is_zero());
    CHECK(Digest{}.hex() == std::string(40, '0'));
  }

  TEST_CASE("xor_in ignores order and mix_in does not") {
    Digest ab;
    ab.xor_in("a");
    ab.xor_in("b");
    Digest ba;
    ba.xor_in("b");
    ba.xor_in("a");
    CHECK(ab == ba);

    Digest mixed_ab;
    mixed_ab.mix_in("a");
    mixed_ab.mix_in("b");
    Digest mixed_ba;
    mixed_ba.mix_in("b");
    mixed_ba.mix_in("a");
    CHECK(mixed_ab != mixed_ba);

    Digest foo_bar;
    foo_bar.mix_in("foo");
    foo_bar.mix_in("bar");
    Digest fo_obar;
    fo_obar.mix_in("fo");
    fo_obar.mix_in("obar");
    CHECK(foo_bar != fo_obar);
  }

  TEST_CASE("mix_in is SHA1 of the state after xoring in SHA1 of the data") {
    Digest state;
    state.mix_in("abc");
    CHECK(state.bytes() ==
          sha1(std::string_view(reinterpret_cast<const char*>(sha1("abc").data()), 20)));
  }

  TEST_CASE("integer strings digest as their decimal text") {
    CHECK(digest_string(int64_t{-42}, false) == digest_string("-42", false));
    CHECK(digest_string(std::numeric_limits<int64_t>::min(), true) ==
          digest_string("-9223372036854775808", true));
    ListDigestBuilder ints;
    ints.add(int64_t{7});
    ListDigestBuilder texts;
    texts.add("7");
    CHECK(ints.finish(false) == texts.finish(false));
  }

  TEST_CASE("pinned values from the ground-truth corpus match") {
    // redis70-zsets.rdb.json, valkey-8.0.1: zset:incr = {m: 1.5}.
    ZSetDigestBuilder zset;
    zset.add("m", 1.5);
    CHECK(zset.finish(false).hex() == "0b67afcf657d7aa53a5226bcca2f55ea7f2fff48");
    // redis70-zsets.rdb.json, valkey-8.0.1: zset:forced-skiplist = {x: 1, y: 2, z: inf}.
    ZSetDigestBuilder skiplist;
    skiplist.add("z", std::numeric_limits<double>::infinity());
    skiplist.add("x", 1.0);
    skiplist.add("y", 2.0);
    CHECK(skiplist.finish(false).hex() == "1af6b800ebb8f762bbe1fbace3bd830d86668774");
    // valkey8-streams.rdb.json, valkey-8.0.1: stream:emptied and stream:empty-with-group
    // have no entries, so only the type tag is digested.
    CHECK(StreamDigestBuilder{}.finish(false).hex() == "06bd01623de1d087bbd377851096317b1af476a2");
  }

  TEST_CASE("a set digest does not depend on insertion order") {
    SetDigestBuilder forward;
    SetDigestBuilder backward;
    for (int i = 0; i < 100; ++i) {
      forward.add(int64_t{i});
      backward.add(int64_t{99 - i});
    }
    CHECK(forward.finish(false) == backward.finish(false));
  }

  TEST_CASE("a hash digest pairs each field with its value") {
    HashDigestBuilder straight;
    straight.add("f1", "v1");
    straight.add("f2", "v2");
    HashDigestBuilder swapped;
    swapped.add("f1", "v2");
    swapped.add("f2", "v1");
    HashDigestBuilder reordered;
    reordered.add("f2", "v2");
    reordered.add("f1", "v1");
    CHECK(straight.finish(false) != swapped.finish(false));
    CHECK(straight.finish(false) == reordered.finish(false));
  }

  TEST_CASE("a hash field with a TTL carries Redis 7.4's mark inside its own pair digest") {
    HashDigestBuilder marked;
    marked.add("f", "v", true);
    marked.add("g", "w");
    // The mark goes into the pair's digest before the pair joins the hash, so it is not the
    // same as marking the hash once.
    HashDigestBuilder plain;
    plain.add("f", "v");
    plain.add("g", "w");
    Digest outside = plain.finish(false);
    outside.xor_in("!!hexpire!!");
    CHECK(marked.finish(false) != plain.finish(false));
    CHECK(marked.finish(false) != outside);
    // redis74-hash-field-ttl.rdb.json, redis-7.4.1: hfe:binary-field-ttl = {"\0\xff":
    // "\1\2" with a TTL, ok: fine}.
    HashDigestBuilder binary;
    binary.add(std::string_view("\0\xff", 2), "\x01\x02", true);
    binary.add("ok", "fine");
    CHECK(binary.finish(false).hex() == "4b80dd8b23da88e6125318b2e38e691bec6aeaf8");
  }

  TEST_CASE("the expire flag is an order-independent mark, not the expire time") {
    const Digest plain = digest_string("v", false);
    Digest marked = plain;
    marked.xor_in("!!expire!!");
    CHECK(digest_string("v", true) == marked);
  }

  TEST_CASE("the same key in another database changes the dataset digest") {
    const Digest key = digest_string("v", false, key_digest_seed("k"));
    DatasetDigest in_db0;
    in_db0.add(0, key);
    DatasetDigest in_db1;
    in_db1.add(1, key);
    CHECK(in_db0.hex() != in_db1.hex());

    // Keys are combined per database, so the order keys are added in does not matter.
    const Digest other = digest_string("w", false, key_digest_seed("j"));
    DatasetDigest forward;
    forward.add(0, key);
    forward.add(3, other);
    forward.add(0, other);
    DatasetDigest backward;
    backward.add(0, other);
    backward.add(3, other);
    backward.add(0, key);
    CHECK(forward.hex() == backward.hex());
  }

  TEST_CASE("xor_raw combines partial sums without hashing") {
    const Digest a = digest_of_hex("00112233445566778899aabbccddeeff00112233");
    Digest b = digest_of_hex("ffffffffffffffffffffffffffffffffffffffff");
    b.xor_raw(a);
    CHECK(b.hex() == "ffeeddccbbaa99887766554433221100ffeeddcc");
  }

  TEST_CASE("scores are formatted like fpconv for Valkey and like %.17g for Redis 7.0") {
    // Expected texts were printed by Valkey 8.0.1's own deps/fpconv for these doubles.
    const double inf = std::numeric_limits<double>::infinity();
    CHECK(format_score_for_digest(1.5, ScoreFormat::grisu2) == "1.5");
    CHECK(format_score_for_digest(2.37, ScoreFormat::grisu2) == "2.37");
    CHECK(format_score_for_digest(2.37, ScoreFormat::printf_17g) == "2.3700000000000001");
    CHECK(format_score_for_digest(0.1, ScoreFormat::grisu2) == "0.1");
    CHECK(format_score_for_digest(42, ScoreFormat::grisu2) == "42");
    CHECK(format_score_for_digest(0.0, ScoreFormat::grisu2) == "0");
    CHECK(format_score_for_digest(-0.0, ScoreFormat::grisu2) == "-0");
    CHECK(format_score_for_digest(-0.0, ScoreFormat::printf_17g) == "-0");
    CHECK(format_score_for_digest(inf, ScoreFormat::grisu2) == "inf");
    CHECK(format_score_for_digest(-inf, ScoreFormat::grisu2) == "-inf");
    CHECK(format_score_for_digest(-inf, ScoreFormat::printf_17g) == "-inf");
    CHECK(format_score_for_digest(1e308, ScoreFormat::grisu2) == "1e+308");
    CHECK(format_score_for_digest(-1e308, ScoreFormat::grisu2) == "-1e+308");
    CHECK(format_score_for_digest(1e-300, ScoreFormat::grisu2) == "1e-300");
    CHECK(format_score_for_digest(1e17, ScoreFormat::grisu2) == "1e+17");
    // Trailing zeros are written out only up to seven of them.
    CHECK(format_score_for_digest(1e16, ScoreFormat::grisu2) == "1e+16");
    CHECK(format_score_for_digest(1e7, ScoreFormat::grisu2) == "10000000");
    CHECK(format_score_for_digest(1e8, ScoreFormat::grisu2) == "1e+8");
    CHECK(format_score_for_digest(1e-6, ScoreFormat::grisu2) == "0.000001");
    CHECK(format_score_for_digest(1e-7, ScoreFormat::grisu2) == "1e-7");
    CHECK(format_score_for_digest(1.5e-7, ScoreFormat::grisu2) == "1.5e-7");
    CHECK(format_score_for_digest(12345678901234567.0, ScoreFormat::grisu2) == "12345678901234568");
    CHECK(format_score_for_digest(std::numbers::pi, ScoreFormat::grisu2) == "3.141592653589793");
    CHECK(format_score_for_digest(5e-324, ScoreFormat::grisu2) == "5e-324");
    CHECK(format_score_for_digest(std::numeric_limits<double>::max(), ScoreFormat::grisu2) ==
          "1.7976931348623157e+308");
  }

  TEST_CASE("every DEBUG DIGEST-VALUE and DEBUG DIGEST in the RDB corpus is reproduced") {
    const std::filesystem::path corpus = test::rdb_corpus_dir();
    REQUIRE_MESSAGE(std::filesystem::is_directory(corpus), "no corpus at ", corpus.string());
    CorpusTally tally;
    for (const auto& file : std::filesystem::directory_iterator(corpus)) {
      const std::string name = file.path().filename().string();
      if (name.size() < 9 || name.substr(name.size() - 9) != ".rdb.json") {
        continue;
      }
      const std::string text = read_file(file.path());
      const Json root = JsonReader(text).parse();
      ++tally.files;
      for (const auto& [server, entry] : root.at("servers").fields) {
        const Json* loaded = entry.find("loaded");
        if (loaded == nullptr || loaded->text != "true") {
          continue;
        }
        check_server_entry(name, server, entry, tally);
      }
    }
    MESSAGE("corpus: ", tally.files, " files, ", tally.values, " values (", tally.values_skipped,
            " not rebuildable), ", tally.datasets, " datasets (", tally.datasets_skipped,
            " skipped)");
    CHECK(tally.values > 0);
    CHECK(tally.datasets > 0);
  }
}
