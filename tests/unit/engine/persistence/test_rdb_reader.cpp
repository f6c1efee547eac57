#include "tests/unit/engine/corpus_json.hpp"
#include "tests/unit/test_paths.hpp"

#include "engine/persistence/crc64.hpp"
#include "engine/persistence/rdb_format.hpp"
#include "engine/persistence/rdb_reader.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

using keyshift::engine::crc64;
using keyshift::engine::decode_rdb_value;
using keyshift::engine::RdbKey;
using keyshift::engine::RdbKind;
using keyshift::engine::RdbReadOptions;
using keyshift::engine::RdbValue;
using keyshift::engine::RdbVisitor;
using keyshift::engine::read_rdb;
using keyshift::test::decode_bytes;
using keyshift::test::Json;
using keyshift::test::JsonReader;
using keyshift::test::read_file;

namespace {

const std::filesystem::path k_corpus = test::rdb_corpus_dir();

/// Keeps every key read, and the module aux names.
class Collect : public RdbVisitor {
 public:
  bool on_key(RdbKey& key) override {
    keys.push_back(std::move(key));
    return true;
  }
  void on_module_aux(std::string_view name) override { module_aux.emplace_back(name); }
  void on_function(std::string_view code) override { functions.emplace_back(code); }
  std::vector<RdbKey> keys;
  std::vector<std::string> module_aux;
  std::vector<std::string> functions;
};

std::string_view kind_name(RdbKind k) {
  return keyshift::engine::rdb_kind_name(k);
}

std::string id_text(const keyshift::engine::RdbStreamId& id) {
  return std::to_string(id.ms) + "-" + std::to_string(id.seq);
}

/// Compares a decoded value with the ground truth's "value"; counts what it could compare.
void check_value(const Json& truth, const RdbKey& k, int& compared) {
  const RdbValue& v = k.value;
  const Json& value = truth.at("value");
  std::string a;
  std::string b;
  switch (v.kind) {
    case RdbKind::string:
      if (decode_bytes(value, a)) {
        CHECK(v.str == a);
        ++compared;
      }
      return;
    case RdbKind::list:
    case RdbKind::set: {
      std::vector<std::string> want;
      for (const Json& e : value.items) {
        if (!decode_bytes(e, a)) {
          return;
        }
        want.push_back(a);
      }
      std::vector<std::string> got = v.items;
      if (v.kind == RdbKind::set) {
        std::sort(want.begin(), want.end());
        std::sort(got.begin(), got.end());
      }
      CHECK(got == want);
      ++compared;
      return;
    }
    case RdbKind::zset: {
      std::vector<std::pair<std::string, double>> want;
      for (const Json& e : value.items) {
        if (!decode_bytes(e.items.at(0), a)) {
          return;
        }
        want.emplace_back(a, std::strtod(e.items.at(1).text.c_str(), nullptr));
      }
      auto got = v.zset;
      std::sort(want.begin(), want.end());
      std::sort(got.begin(), got.end());
      CHECK(got == want);
      ++compared;
      return;
    }
    case RdbKind::hash: {
      std::map<std::string, std::string> want;
      for (const Json& e : value.items) {
        if (!decode_bytes(e.items.at(0), a) || !decode_bytes(e.items.at(1), b)) {
          return;
        }
        want[a] = b;
      }
      std::map<std::string, std::string> got;
      std::map<std::string, int64_t> ttls;
      for (const auto& f : v.hash) {
        got[f.field] = f.value;
        ttls[f.field] = f.expire_ms;
      }
      CHECK(got == want);
      if (const Json* field_ttls = truth.find("field_ttls")) {
        for (const Json& ft : field_ttls->items) {
          REQUIRE(decode_bytes(ft.at("field"), a));
          CAPTURE(a);
          CHECK(ttls[a] == std::stoll(ft.at("hpexpiretime").text));
        }
      } else {
        for (const auto& f : v.hash) {
          CHECK(f.expire_ms == -1);
        }
      }
      ++compared;
      return;
    }
    case RdbKind::stream: {
      const auto& s = v.stream;
      CHECK(s.length == std::stoull(value.at("length").text));
      CHECK(id_text(s.last_id) == value.at("last-generated-id").text);
      CHECK(s.entries_added == std::stoull(value.at("entries-added").text));
      CHECK(id_text(s.max_deleted_id) == value.at("max-deleted-entry-id").text);
      const Json& entries = value.at("entries");
      REQUIRE(entries.items.size() == s.entries.size());
      for (size_t i = 0; i < s.entries.size(); ++i) {
        const Json& e = entries.items[i];
        CHECK(id_text(s.entries[i].id) == e.items.at(0).text);
        const Json& fv = e.items.at(1);
        REQUIRE(fv.items.size() == s.entries[i].fields.size() * 2);
        for (size_t j = 0; j < s.entries[i].fields.size(); ++j) {
          if (decode_bytes(fv.items[2 * j], a) && decode_bytes(fv.items[2 * j + 1], b)) {
            CHECK(s.entries[i].fields[j].first == a);
            CHECK(s.entries[i].fields[j].second == b);
          }
        }
      }
      ++compared;
      return;
    }
    case RdbKind::module:
    case RdbKind::path_hash:  // no corpus file holds one
      return;
  }
}

/// The keys of the first server that loaded the file, or nullptr.
const Json* loaded_keys(const Json& doc) {
  for (const auto& [name, server] : doc.at("servers").fields) {
    const Json* loaded = server.find("loaded");
    const Json* keys = server.find("keys");
    if (loaded != nullptr && loaded->text == "true" && keys != nullptr) {
      return keys;
    }
  }
  return nullptr;
}

std::vector<std::filesystem::path> corpus_files() {
  std::vector<std::filesystem::path> files;
  if (std::filesystem::exists(k_corpus)) {
    for (const auto& entry : std::filesystem::directory_iterator(k_corpus)) {
      if (entry.path().extension() == ".rdb") {
        files.push_back(entry.path());
      }
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

/// An RDB length as Valkey's rdbSaveLen writes it (6-bit, 14-bit or 32-bit big-endian).
std::string rdb_len(uint64_t n) {
  std::string out;
  if (n < 64) {
    out.push_back(static_cast<char>(n));
  } else if (n < 16384) {
    out.push_back(static_cast<char>(0x40 | (n >> 8)));
    out.push_back(static_cast<char>(n & 0xFF));
  } else {
    out.push_back('\x80');
    for (int shift = 24; shift >= 0; shift -= 8) {
      out.push_back(static_cast<char>((n >> shift) & 0xFF));
    }
  }
  return out;
}

std::string rdb_str(std::string_view s) {
  return rdb_len(s.size()) + std::string(s);
}

std::string le64(int64_t v) {
  std::string out;
  for (int i = 0; i < 8; ++i) {
    out.push_back(static_cast<char>((static_cast<uint64_t>(v) >> (8 * i)) & 0xFF));
  }
  return out;
}

/// A file in Valkey 9.0's format, written from these upstream facts (valkey-io/valkey:
/// src/rdb.h, src/rdb.c rdbSaveRio/rdbSaveObject/rdbLoadObject, src/cluster_migrateslots.c):
///  - the header is "VALKEY" and the version in three digits (snprintf "VALKEY%03d"); 9.0's
///    RDB_VERSION is 80 (RDB_VERSION_MAP {80, 0x090000});
///  - RDB_TYPE_HASH_2 = 22 (a hash with field-level expiration): the field count, then per
///    field the field and value strings and the expire time as 8 bytes little-endian
///    (rdbSaveMillisecondTime), -1 (EXPIRY_NONE) for a field without one;
///  - RDB_OPCODE_SLOT_IMPORT = 243: the job name (CLUSTER_NAMELEN, 40 bytes) as a string, the
///    number of slot ranges, then each range's start and end slot, as lengths;
///  - the aux field "valkey-ver"; EOF (255) and the CRC64 of everything before it.
/// `records` replace the default keys when given.
std::string valkey9_file(int64_t field_expire, const std::string& records = "",
                         std::string_view version = "080") {
  std::string f = "VALKEY" + std::string(version);
  f += "\xfa" + rdb_str("valkey-ver") + rdb_str("9.0.0");
  f += "\xf3" + rdb_str(std::string(40, 'j')) + rdb_len(2) + rdb_len(0) + rdb_len(99) +
       rdb_len(1000) + rdb_len(16383);
  f += "\xfe" + rdb_len(0) + "\xfb" + rdb_len(2) + rdb_len(0);
  if (records.empty()) {
    f += "\x16" + rdb_str("h") + rdb_len(2) + rdb_str("f1") + rdb_str("v1") + le64(field_expire) +
         rdb_str("f2") + rdb_str("v2") + le64(-1);
    f += std::string(1, '\0') + rdb_str("s") + rdb_str("plain");
  } else {
    f += records;
  }
  f += "\xff";
  return f + le64(static_cast<int64_t>(crc64(0, f)));
}

/// A Valkey 9.2 Path Hash (RDB_TYPE_PATH_HASH = 23, RDB 81; valkey-io/valkey src/rdb.h, and
/// rdbSaveObject/rdbLoadObject for it in PR #4506): the path count, then per path the path
/// string, the field count and that many field and value strings.
std::string path_hash_record(
    std::string_view key,
    const std::vector<std::pair<std::string, std::vector<std::pair<std::string, std::string>>>>&
        paths) {
  std::string r = "\x17" + rdb_str(key) + rdb_len(paths.size());
  for (const auto& [path, fields] : paths) {
    r += rdb_str(path) + rdb_len(fields.size());
    for (const auto& [field, value] : fields) {
      r += rdb_str(field) + rdb_str(value);
    }
  }
  return r;
}

}  // namespace

TEST_SUITE("engine::rdb_reader") {
  TEST_CASE("Valkey 9.2's VALKEY081 is read: its Path Hash, HASH_2 and the other types") {
    const int64_t when = 4'102'444'800'123;
    std::string records =
        "\x16" + rdb_str("h") + rdb_len(1) + rdb_str("f1") + rdb_str("v1") + le64(when) +
        path_hash_record("ph", {{"/a", {{"f1", "v1"}, {"f2", "v2"}}}, {"/a/b", {{"f", "v"}}}}) +
        std::string(1, '\0') + rdb_str("s") + rdb_str("plain");
    std::string file = valkey9_file(when, records, "081");
    for (bool materialize : {true, false}) {
      CAPTURE(materialize);
      Collect got;
      RdbReadOptions options;
      options.materialize = materialize;
      auto r = read_rdb(file, got, options);
      REQUIRE_MESSAGE(r.has_value(), r.error().message, " at ", r.error().offset);
      CHECK(r->version == 81);
      CHECK(r->valkey_magic);
      CHECK(r->checksum_verified);
      REQUIRE(got.keys.size() == 3);
      CHECK(got.keys[0].value.rdb_type ==
            static_cast<uint8_t>(keyshift::engine::rdb::Type::valkey_hash_2));
      CHECK(got.keys[0].value.hash.at(0).expire_ms == when);
      const RdbValue& ph = got.keys[1].value;
      CHECK(got.keys[1].key == "ph");
      CHECK(ph.kind == RdbKind::path_hash);
      CHECK(keyshift::engine::rdb::type_name(ph.rdb_type) == "PATH_HASH");
      REQUIRE(ph.paths.size() == 2);  // always decoded, like the other rare types
      CHECK(ph.paths[0].path == "/a");
      REQUIRE(ph.paths[0].fields.size() == 2);
      CHECK(ph.paths[0].fields[1] == std::make_pair(std::string("f2"), std::string("v2")));
      CHECK(ph.paths[1].path == "/a/b");
      CHECK(ph.paths[1].fields.size() == 1);
      CHECK(got.keys[2].value.str == (materialize ? "plain" : ""));
    }
  }

  TEST_CASE("Valkey 9.2 files with what they cannot hold fail with an offset and a reason") {
    Collect got;
    auto fails = [&](const std::string& records, std::string_view version = "081") {
      auto r = read_rdb(valkey9_file(1, records, version), got);
      REQUIRE_FALSE(r.has_value());
      return r.error();
    };
    std::string no_fields = path_hash_record("p", {{"/x", {}}});
    auto e = fails(no_fields);
    CHECK(e.message == "path hash path without fields");
    std::string file = valkey9_file(1, no_fields, "081");
    CHECK(file.substr(e.offset - 3, 4) == std::string("\x02/x\x00", 4));  // the count 0
    CHECK(fails(path_hash_record("p", {{"/x", {{"f", "1"}}}, {"/x", {{"g", "2"}}}})).message ==
          "path hash path repeats");
    CHECK(fails(path_hash_record("p", {{"/x", {{"f", "1"}, {"f", "2"}}}})).message ==
          "path hash field repeats");
    // A count beyond what is left is refused before anything is allocated.
    e = fails("\x17" + rdb_str("p") + rdb_len(1'000'000));
    CHECK(e.message.rfind("implausible count 1000000 of path hash paths", 0) == 0);
    // Type 23 is no Path Hash in 9.0's RDB 80, and 24/25 exist in neither.
    CHECK(fails(path_hash_record("p", {{"/x", {{"f", "1"}}}}), "080").message ==
          "value type 23 is not a Valkey 80 type");
    CHECK(fails("\x18" + rdb_str("k") + rdb_str("x")).message ==
          "value type 24 is not a Valkey 81 type");
    // A forkless save's inline write command (RDB_OPCODE_UPDATE = 242) cannot be honoured
    // value by value; before 81 the byte is no opcode at all.
    e = fails("\xf2" + rdb_str("SET"));
    CHECK(e.message ==
          "opcode 242 (a write command inlined by a Valkey 9.2 forkless save) is not supported; "
          "save the file again with a forked BGSAVE");
    CHECK(fails("\xf2" + rdb_str("SET"), "080").message == "unknown RDB opcode or value type 242");
    // A file inside 9.2's streaming-compression envelope ("VKCS", version 1, codec 2 = Zstd,
    // flags, stream kind 0 = RDB, then frames).
    std::string vkcs = std::string("VKCS\x01\x02\x00\x00", 8) + std::string(32, '\x28');
    auto r = read_rdb(vkcs, got);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().offset == 0);
    CHECK(r.error().message ==
          "a Valkey 9.2 streaming-compressed file (VKCS envelope, Zstd), which is not "
          "supported; save it again without RDB streaming compression");
    // Cut anywhere inside the Path Hash: an error, never a crash.
    std::string whole = valkey9_file(1, path_hash_record("p", {{"/x", {{"f", "1"}}}}), "081");
    size_t at = whole.find("\x17\x01p");
    REQUIRE(at != std::string::npos);
    for (size_t cut = at + 1; cut < whole.size() - 9; ++cut) {
      Collect partial;
      RdbReadOptions no_crc;
      no_crc.verify_checksum = false;
      CHECK_FALSE(read_rdb(std::string_view(whole).substr(0, cut), partial, no_crc).has_value());
    }
  }

  TEST_CASE("a DUMP payload's type byte means what it means in the payload's RDB version") {
    using keyshift::engine::decode_dump_value;
    std::string hash2 = rdb_len(1) + rdb_str("f") + rdb_str("v") + le64(-1);
    // 22 is Valkey's HASH_2 from 80 on; below, Redis 7.4's pre-GA field-TTL hash, whose
    // layout differs, so the same bytes do not decode.
    for (int version : {80, 81}) {
      CAPTURE(version);
      auto v = decode_dump_value(22, version, hash2);
      REQUIRE_MESSAGE(v.has_value(), v.error().message);
      CHECK(v->kind == RdbKind::hash);
      CHECK(v->hash.at(0).field == "f");
      CHECK(v->hash.at(0).expire_ms == -1);
    }
    CHECK_FALSE(decode_dump_value(22, 12, hash2).has_value());
    std::string path_hash = rdb_len(1) + rdb_str("/p") + rdb_len(1) + rdb_str("f") + rdb_str("v");
    auto ph = decode_dump_value(23, 81, path_hash);
    REQUIRE_MESSAGE(ph.has_value(), ph.error().message);
    CHECK(ph->kind == RdbKind::path_hash);
    auto refused = decode_dump_value(23, 80, path_hash);
    REQUIRE_FALSE(refused.has_value());
    CHECK(refused.error().message == "value type 23 does not exist in RDB version 80");
    CHECK_FALSE(decode_dump_value(24, 81, hash2).has_value());
    // Types every version shares decode the same at 11 and at 81.
    std::string str = rdb_str("text");
    CHECK(decode_dump_value(0, 11, str)->str == "text");
    CHECK(decode_dump_value(0, 81, str)->str == "text");
  }

  TEST_CASE("Valkey 9's format: its magic, HASH_2 with field TTLs and SLOT_IMPORT are read") {
    const int64_t when = 4'102'444'800'123;
    std::string file = valkey9_file(when);
    for (bool materialize : {true, false}) {
      CAPTURE(materialize);
      Collect got;
      RdbReadOptions options;
      options.materialize = materialize;
      auto r = read_rdb(file, got, options);
      REQUIRE_MESSAGE(r.has_value(), r.error().message, " at ", r.error().offset);
      CHECK(r->version == 80);
      CHECK(r->valkey_magic);
      CHECK(r->checksum_verified);
      REQUIRE(got.keys.size() == 2);
      const RdbValue& h = got.keys[0].value;
      CHECK(got.keys[0].key == "h");
      CHECK(h.kind == RdbKind::hash);
      CHECK(h.rdb_type == static_cast<uint8_t>(keyshift::engine::rdb::Type::valkey_hash_2));
      CHECK(keyshift::engine::rdb::type_name(h.rdb_type) == "HASH_2");
      REQUIRE(h.hash.size() == 2);  // field-TTL hashes are always decoded
      CHECK(h.hash[0].field == "f1");
      CHECK(h.hash[0].value == "v1");
      CHECK(h.hash[0].expire_ms == when);
      CHECK(h.hash[1].expire_ms == -1);
      CHECK(got.keys[1].value.kind == RdbKind::string);
    }
  }

  TEST_CASE("Valkey 9 files with what Valkey 9 refuses fail with an offset and a reason") {
    Collect got;
    // An expire time below -1 (rdbLoadObject: itemexpiry < EXPIRY_NONE).
    std::string bad_expire = valkey9_file(-2);
    auto r = read_rdb(bad_expire, got);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().message == "invalid hash field expire time -2");
    CHECK(bad_expire.substr(r.error().offset - 3, 3) == "\x02v1");  // right after the value
    // VALKEY with a version Valkey refuses (79 and below), or newer than 9.2's.
    r = read_rdb(valkey9_file(1, "", "079"), got);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().message == "unsupported RDB version 79 (Valkey 9.0 writes 80, 9.2 writes 81)");
    CHECK(r.error().offset == 6);
    r = read_rdb(valkey9_file(1, "", "082"), got);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().message == "unsupported RDB version 82 (Valkey 9.0 writes 80, 9.2 writes 81)");
    // REDIS with Valkey 9's version.
    std::string redis80 = valkey9_file(1);
    redis80.replace(0, 9, "REDIS0080");
    r = read_rdb(redis80, got);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().message == "unsupported RDB version 80");
    // Redis 7.4's types 23-25 do not exist in Valkey's numbering.
    std::string type23 = "\x17" + rdb_str("k") + rdb_str("x");
    r = read_rdb(valkey9_file(1, type23), got);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().message == "value type 23 is not a Valkey 80 type");
    // A slot range past the 16384 slots.
    std::string range = valkey9_file(1);
    range.replace(range.find(rdb_len(16383)), 2, rdb_len(16384));
    r = read_rdb(range, got);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().message == "invalid SLOT_IMPORT slot range 1000-16384");
    // SLOT_IMPORT is no opcode in a REDIS file.
    std::string redis11 = "REDIS0011\xf3" + rdb_str("j") + rdb_len(0) + "\xff" + le64(0);
    r = read_rdb(redis11, got);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().message == "unknown RDB opcode or value type 243");
  }

  TEST_CASE("crc64 gives the Jones check value and extends in pieces") {
    CHECK(crc64(0, "123456789") == 0xe9c6d914c4b8d9caULL);
    std::string data(1000, '\0');
    for (size_t i = 0; i < data.size(); ++i) {
      data[i] = static_cast<char>(i * 7 + 3);
    }
    uint64_t whole = crc64(0, data);
    CHECK(crc64(crc64(0, std::string_view(data).substr(0, 333)),
                std::string_view(data).substr(333)) == whole);
  }

  TEST_CASE("crc64's folding path agrees with the bit-by-bit definition at every length") {
    // The definition: reflected, polynomial 0xad93d23594c935a9 (reversed 0x95ac9329ac4bc9b5).
    auto reference = [](uint64_t crc, std::string_view d) {
      for (unsigned char ch : d) {
        crc ^= ch;
        for (int b = 0; b < 8; ++b) {
          crc = (crc & 1) != 0 ? (crc >> 1) ^ 0x95ac9329ac4bc9b5ULL : crc >> 1;
        }
      }
      return crc;
    };
    std::string data(5000, '\0');
    uint64_t seed = 88172645463325252ULL;
    for (char& ch : data) {
      seed ^= seed << 13;
      seed ^= seed >> 7;
      seed ^= seed << 17;
      ch = static_cast<char>(seed);
    }
    for (size_t len = 0; len <= data.size(); len += len < 300 ? 1 : 97) {
      CAPTURE(len);
      std::string_view d = std::string_view(data).substr(0, len);
      REQUIRE(crc64(0, d) == reference(0, d));
      REQUIRE(crc64(0xfeedface12345678ULL, d) == reference(0xfeedface12345678ULL, d));
    }
  }

  TEST_CASE("every corpus file a server loads is read with its ground truth's keys and values") {
    auto files = corpus_files();
    REQUIRE_MESSAGE(!files.empty(), "no RDB corpus at ", k_corpus.string());
    int files_read = 0;
    int values_compared = 0;
    for (const auto& path : files) {
      Json doc = JsonReader(read_file(path.string() + ".json")).parse();
      const Json* truth_keys = loaded_keys(doc);
      if (truth_keys == nullptr) {
        continue;  // refused by every server: see the next test cases
      }
      CAPTURE(path.filename().string());
      std::string bytes = read_file(path);
      Collect got;
      RdbReadOptions options;
      options.skip_modules = true;
      auto summary = read_rdb(bytes, got, options);
      REQUIRE_MESSAGE(summary.has_value(), summary.error().message, " at offset ",
                      summary.error().offset);
      CHECK(summary->version == std::stoi(doc.at("rdb_version").text));
      CHECK(summary->end_offset ==
            bytes.size() - std::stoull(doc.at("structure").at("trailing_bytes").text));
      ++files_read;
      std::map<std::pair<uint64_t, std::string>, const RdbKey*> by_key;
      for (const RdbKey& k : got.keys) {
        by_key[{k.db, k.key}] = &k;
      }
      // Keys the server dropped on load (already expired) are in the file but not the truth.
      CHECK(got.keys.size() >= truth_keys->items.size());
      for (const Json& t : truth_keys->items) {
        std::string key;
        if (t.at("key_is_hex").text == "true") {
          key = keyshift::test::from_hex(t.at("key").text);
        } else if (!decode_bytes(t.at("key"), key)) {
          continue;
        }
        CAPTURE(key);
        auto it = by_key.find({std::stoull(t.at("db").text), key});
        REQUIRE(it != by_key.end());
        const RdbKey& k = *it->second;
        CHECK(kind_name(k.value.kind) == t.at("type").text);
        CHECK(k.expire_ms == std::stoll(t.at("pexpiretime").text));
        check_value(t, k, values_compared);
      }
    }
    MESSAGE("read ", files_read, " corpus files, compared ", values_compared, " values");
    CHECK(files_read >= 50);
  }

  TEST_CASE("validating without keeping values accepts and refuses exactly what reading does") {
    auto files = corpus_files();
    int compared = 0;
    for (const auto& path : files) {
      CAPTURE(path.filename().string());
      std::string bytes = read_file(path);
      RdbReadOptions keep;
      keep.skip_modules = true;
      RdbReadOptions check = keep;
      check.materialize = false;
      Collect a;
      Collect b;
      auto full = read_rdb(bytes, a, keep);
      auto light = read_rdb(bytes, b, check);
      REQUIRE(full.has_value() == light.has_value());
      if (!full) {
        CHECK(full.error().offset == light.error().offset);
        continue;
      }
      REQUIRE(a.keys.size() == b.keys.size());
      for (size_t i = 0; i < a.keys.size(); ++i) {
        CHECK(a.keys[i].key == b.keys[i].key);
        CHECK(a.keys[i].value.kind == b.keys[i].value.kind);
        CHECK(a.keys[i].value_bytes == b.keys[i].value_bytes);
      }
      ++compared;
    }
    CHECK(compared >= 50);
    // Corruption is caught the same way: every truncation of one file.
    std::string bytes = read_file(k_corpus / "valkey8-expire-multidb.rdb");
    for (size_t n = 0; n < bytes.size(); n += 3) {
      Collect got;
      RdbReadOptions check;
      check.materialize = false;
      CHECK_FALSE(read_rdb(std::string_view(bytes).substr(0, n), got, check).has_value());
    }
  }

  TEST_CASE("blobs checked on a second thread give the same keys and the same first error") {
    RdbReadOptions here;
    here.materialize = false;
    here.skip_modules = true;
    here.parallel_check_min_bytes = SIZE_MAX;
    RdbReadOptions there = here;
    there.parallel_check_min_bytes = 0;  // every file, however small
    auto same = [&](std::string_view bytes) {
      Collect a;
      Collect b;
      auto one = read_rdb(bytes, a, here);
      auto two = read_rdb(bytes, b, there);
      REQUIRE(one.has_value() == two.has_value());
      if (!one) {
        CHECK(one.error().offset == two.error().offset);
        CHECK(one.error().message == two.error().message);
        return;
      }
      CHECK(a.keys.size() == b.keys.size());
    };
    int files = 0;
    for (const auto& path : corpus_files()) {
      CAPTURE(path.filename().string());
      same(read_file(path));
      ++files;
    }
    CHECK(files >= 50);
    // Every kind of blob (ziplists, listpacks, intsets, quicklist nodes), damaged anywhere.
    for (const char* name : {"redis-assets--encodings.rdb", "valkey8-lists.rdb", "redis70-sets.rdb",
                             "redis-assets--corrupt_ziplist.rdb"}) {
      CAPTURE(name);
      std::string bytes = read_file(k_corpus / name);
      for (size_t n = 9; n < bytes.size(); n += 7) {
        CAPTURE(n);
        same(std::string_view(bytes).substr(0, n));
        std::string flipped = bytes;
        flipped[n] = static_cast<char>(flipped[n] ^ 0x21);
        same(flipped);
      }
    }
  }

  TEST_CASE("a module value stops the read unless module keys are skipped") {
    std::string bytes = read_file(k_corpus / "rdbtools--redis_40_with_module.rdb");
    Collect got;
    auto failed = read_rdb(bytes, got);
    REQUIRE_FALSE(failed.has_value());
    CHECK(failed.error().message.find("ReJSON-RL") != std::string::npos);
    Collect skipped;
    RdbReadOptions options;
    options.skip_modules = true;
    auto ok = read_rdb(bytes, skipped, options);
    REQUIRE(ok.has_value());
    int modules = 0;
    for (const RdbKey& k : skipped.keys) {
      if (k.value.kind == RdbKind::module) {
        ++modules;
        CHECK(k.value.module_name == "ReJSON-RL");
      }
    }
    CHECK(modules == 1);
  }

  TEST_CASE("files every server refuses fail with an offset and a reason") {
    std::string corrupt = read_file(k_corpus / "redis-assets--corrupt_ziplist.rdb");
    Collect got;
    auto r = read_rdb(corrupt, got);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().message.find("ziplist") != std::string::npos);
    CHECK(r.error().offset > 9);
    std::string future = read_file(k_corpus / "valkey-fork--encodings-rdb987.rdb");
    r = read_rdb(future, got);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().message == "unsupported RDB version 987 (Valkey 9.0 writes 80, 9.2 writes 81)");
    r = read_rdb("NOTANRDB0", got);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().message == "not an RDB file (no REDIS or VALKEY magic)");
  }

  TEST_CASE("truncation at every byte and flipped bytes fail cleanly") {
    std::string bytes = read_file(k_corpus / "valkey8-expire-multidb.rdb");
    for (size_t n = 0; n < bytes.size(); ++n) {
      Collect got;
      auto r = read_rdb(std::string_view(bytes).substr(0, n), got);
      CAPTURE(n);
      REQUIRE_FALSE(r.has_value());
      CHECK(r.error().offset <= n);
    }
    // With the checksum on, any flipped byte is caught (by a decoder or by the CRC).
    for (size_t i = 9; i < bytes.size(); i += 7) {
      std::string bad = bytes;
      bad[i] = static_cast<char>(bad[i] ^ 0x5A);
      Collect got;
      CAPTURE(i);
      CHECK_FALSE(read_rdb(bad, got).has_value());
    }
  }

  TEST_CASE("a checksum of zero means the writer disabled it") {
    std::string bytes = read_file(k_corpus / "valkey8-strings-nolzf-nocrc.rdb");
    Collect got;
    auto r = read_rdb(bytes, got);
    REQUIRE(r.has_value());
    CHECK(r->checksum == 0);
    CHECK_FALSE(r->checksum_verified);
    CHECK(got.keys.size() == 50);
  }

  TEST_CASE("a type byte past the newest known names its key and offset, whole or streamed") {
    // A later Redis's value type (26: past Redis 7.4 and 8's HASH_LISTPACK_EX) in RDB 12.
    std::string head = std::string("REDIS0012") + "\xfe" + rdb_len(3) + "\xfb" + rdb_len(1) +
                       rdb_len(0) + std::string(1, '\0') + rdb_str("s") + rdb_str("v");
    const uint64_t at = head.size();
    std::string file = head + "\x1a" + rdb_str("newer:key") + std::string(20, '\x07');
    const std::string want =
        "key \"newer:key\" in db 3 has value type 26, which keyshift does not read (the newest "
        "it knows is 25, Redis 7.4 and 8's HASH_LISTPACK_EX; a later Redis wrote this key)";
    Collect got;
    auto r = read_rdb(file, got);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().offset == at);
    CHECK(r.error().message == want);
    // Fed a byte at a time (a full sync's payload), the record waits for the key's name.
    Collect streamed;
    keyshift::engine::RdbStreamReader stream(streamed);
    std::optional<keyshift::engine::RdbError> error;
    for (char ch : file) {
      auto fed = stream.feed(std::string_view(&ch, 1));
      if (!fed) {
        error = fed.error();
        break;
      }
    }
    REQUIRE(error.has_value());
    CHECK(error->offset == at);
    CHECK(error->message == want);
    // A name that does not read leaves the plain message.
    r = read_rdb(head + "\x1a\xc5", got);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().offset == at);
    CHECK(r.error().message == "unknown RDB opcode or value type 26");
  }

  TEST_CASE("a hostile length is refused before anything is allocated") {
    // A list claiming 2^62 elements, and an LZF string claiming 1 GiB from 3 bytes.
    const char list_bytes[] = {'\x81', '\x40', 0, 0, 0, 0, 0, 0, 0};
    auto r = decode_rdb_value(1, std::string_view(list_bytes, sizeof list_bytes));
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().message.find("implausible count") != std::string::npos);
    const char lzf_bytes[] = {'\xc3', '\x03', '\x80', '\x40', 0, 0, 0, 'a', 'b', 'c'};
    r = decode_rdb_value(0, std::string_view(lzf_bytes, sizeof lzf_bytes));
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().message.find("LZF length") != std::string::npos);
    r = decode_rdb_value(0, "\x05hello");
    REQUIRE(r.has_value());
    CHECK(r->str == "hello");
    r = decode_rdb_value(0, "\x05hello!");
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().message == "1 bytes left after the value");
  }

  TEST_CASE("a value read a batch at a time gives the elements of a whole decode, in order") {
    int values = 0;
    int batched = 0;
    int deleted = 0;
    for (const auto& path : corpus_files()) {
      CAPTURE(path.filename().string());
      std::string bytes = read_file(path);
      Collect got;
      RdbReadOptions options;
      options.skip_modules = true;
      if (!read_rdb(bytes, got, options)) {
        continue;
      }
      for (const RdbKey& k : got.keys) {
        if (k.value.kind == RdbKind::module) {
          continue;
        }
        CAPTURE(k.key);
        std::string_view value = std::string_view(bytes).substr(k.value_offset, k.value_bytes);
        auto whole = decode_rdb_value(k.value.rdb_type, value, options, k.value_offset);
        REQUIRE(whole.has_value());
        // max_bytes 1: every element (node) a batch of its own.
        keyshift::engine::RdbElementReader reader(k.value.rdb_type, value, k.value_offset, options);
        CHECK(reader.kind() == whole->kind);
        RdbValue all;
        RdbValue batch;
        int batches = 0;
        for (;;) {
          auto more = reader.next(batch, 1);
          REQUIRE_MESSAGE(more.has_value(), more.error().message);
          ++batches;
          all.str += batch.str;
          all.items.insert(all.items.end(), batch.items.begin(), batch.items.end());
          all.zset.insert(all.zset.end(), batch.zset.begin(), batch.zset.end());
          for (const auto& f : batch.hash) {
            all.hash.push_back(f);
          }
          for (const auto& e : batch.stream.entries) {
            if (e.deleted) {
              ++deleted;
            } else {
              all.stream.entries.push_back(e);
            }
          }
          if (!*more) {
            all.stream.groups = batch.stream.groups;
            all.stream.last_id = batch.stream.last_id;
            all.stream.entries_added = batch.stream.entries_added;
            break;
          }
        }
        batched += batches > 1 ? 1 : 0;
        CHECK(all.str == whole->str);
        CHECK(all.items == whole->items);
        CHECK(all.zset == whole->zset);
        REQUIRE(all.hash.size() == whole->hash.size());
        for (size_t i = 0; i < all.hash.size(); ++i) {
          CHECK(all.hash[i].field == whole->hash[i].field);
          CHECK(all.hash[i].value == whole->hash[i].value);
          CHECK(all.hash[i].expire_ms == whole->hash[i].expire_ms);
        }
        REQUIRE(all.stream.entries.size() == whole->stream.entries.size());
        for (size_t i = 0; i < all.stream.entries.size(); ++i) {
          CHECK(all.stream.entries[i].id == whole->stream.entries[i].id);
          CHECK(all.stream.entries[i].fields == whole->stream.entries[i].fields);
        }
        CHECK(all.stream.last_id == whole->stream.last_id);
        CHECK(all.stream.entries_added == whole->stream.entries_added);
        CHECK(all.stream.groups.size() == whole->stream.groups.size());
        ++values;
      }
    }
    MESSAGE(values, " values read in batches, ", batched, " in more than one, ", deleted,
            " deleted stream entries");
    CHECK(deleted > 0);
    CHECK(values > 500);
    CHECK(batched > 50);
  }

  TEST_CASE("a damaged value read a batch at a time fails where a whole decode fails") {
    int checked = 0;
    for (const char* name : {"redis70-streams.rdb", "redis70-lists.rdb", "redis70-zsets.rdb",
                             "redis70-hashes.rdb", "rdbtools--linkedlist.rdb"}) {
      std::filesystem::path path = k_corpus / name;
      if (!std::filesystem::exists(path)) {
        continue;
      }
      std::string bytes = read_file(path);
      Collect got;
      REQUIRE(read_rdb(bytes, got).has_value());
      for (const RdbKey& k : got.keys) {
        std::string value = bytes.substr(k.value_offset, k.value_bytes);
        for (size_t cut = 0; cut < value.size(); cut += 1 + value.size() / 50) {
          for (int flip = 0; flip < 2; ++flip) {
            std::string bad = flip == 0 ? value.substr(0, cut) : value;
            if (flip == 1) {
              bad[cut] = static_cast<char>(bad[cut] ^ 0x5A);
            }
            auto whole = decode_rdb_value(k.value.rdb_type, bad, {}, 100);
            keyshift::engine::RdbElementReader reader(k.value.rdb_type, bad, 100);
            RdbValue batch;
            std::optional<keyshift::engine::RdbError> error;
            for (;;) {
              auto more = reader.next(batch, 64);
              if (!more) {
                error = more.error();
                break;
              }
              if (!*more) {
                break;
              }
            }
            REQUIRE(whole.has_value() == !error.has_value());
            if (error) {
              CHECK(error->offset == whole.error().offset);
              CHECK(error->message == whole.error().message);
            }
            ++checked;
          }
        }
      }
    }
    CHECK(checked > 100);
  }

  TEST_CASE("streams checked a node at a time accept and refuse exactly what reading does") {
    int streams = 0;
    for (const auto& path : corpus_files()) {
      CAPTURE(path.filename().string());
      std::string bytes = read_file(path);
      RdbReadOptions keep;
      keep.skip_modules = true;
      RdbReadOptions light = keep;
      light.materialize = false;
      light.keep_streams = false;
      Collect a;
      Collect b;
      auto full = read_rdb(bytes, a, keep);
      auto checked = read_rdb(bytes, b, light);
      REQUIRE(full.has_value() == checked.has_value());
      if (!full) {
        CHECK(full.error().offset == checked.error().offset);
        CHECK(full.error().message == checked.error().message);
        continue;
      }
      REQUIRE(a.keys.size() == b.keys.size());
      for (size_t i = 0; i < a.keys.size(); ++i) {
        if (a.keys[i].value.kind != RdbKind::stream) {
          continue;
        }
        ++streams;
        const auto& s = a.keys[i].value.stream;
        const auto& t = b.keys[i].value.stream;
        CHECK(t.entries.empty());
        CHECK(t.length == s.length);
        CHECK(t.last_id == s.last_id);
        CHECK(t.first_id == s.first_id);
        CHECK(t.entries_added == s.entries_added);
        CHECK(t.groups.size() == s.groups.size());
        // Damage inside the stream fails where the full read fails.
        std::string cut = bytes;
        size_t at = a.keys[i].value_offset + a.keys[i].value_bytes / 2;
        cut[at] = static_cast<char>(cut[at] ^ 0x21);
        Collect c;
        Collect d;
        auto r1 = read_rdb(cut, c, keep);
        auto r2 = read_rdb(cut, d, light);
        REQUIRE(r1.has_value() == r2.has_value());
        if (!r1) {
          CHECK(r1.error().offset == r2.error().offset);
        }
      }
    }
    CHECK(streams > 10);
  }
}
