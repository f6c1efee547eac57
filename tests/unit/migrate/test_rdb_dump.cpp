#include "tests/unit/engine/corpus_json.hpp"
#include "tests/unit/test_paths.hpp"

#include "engine/util/split_args.hpp"
#include "migrate/rdb_dump.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

using keyshift::migrate::dump_rdb;
using keyshift::migrate::RdbDumpFormat;
using keyshift::migrate::RdbDumpOptions;
using keyshift::test::decode_bytes;
using keyshift::test::Json;
using keyshift::test::JsonReader;
using keyshift::test::read_file;

namespace {

const std::filesystem::path k_corpus = test::rdb_corpus_dir();

std::string dump(const std::string& bytes, const RdbDumpOptions& options) {
  std::string out;
  auto stats = dump_rdb(bytes, options, [&out](std::string_view chunk) { out += chunk; });
  REQUIRE_MESSAGE(stats.has_value(), stats.error().message);
  return out;
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    out.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

std::string bytes_of(const Json& j) {
  std::string out;
  REQUIRE(decode_bytes(j, out));
  return out;
}

std::vector<std::string> strings_of(const Json& array) {
  std::vector<std::string> out;
  for (const Json& item : array.items) {
    out.push_back(bytes_of(item));
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> pairs_of(const Json& array) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const Json& item : array.items) {
    out.emplace_back(bytes_of(item.items.at(0)), bytes_of(item.items.at(1)));
  }
  std::sort(out.begin(), out.end());
  return out;
}

/// Compares one dumped key with the ground truth's view of it from a live server.
void check_same_value(const Json& got, const Json& want, const std::string& what) {
  const std::string type = want.at("type").text;
  CHECK_MESSAGE(got.at("type").text == type, what);
  const Json& g = got.at("value");
  const Json& w = want.at("value");
  if (type == "string") {
    std::string expected;
    if (decode_bytes(w, expected)) {
      CHECK_MESSAGE(bytes_of(g) == expected, what);
    } else {  // only the length survives in the ground truth
      CHECK_MESSAGE(bytes_of(g).size() == std::stoull(w.at("len").text), what);
    }
  } else if (type == "list") {
    CHECK_MESSAGE(strings_of(g) == strings_of(w), what);
  } else if (type == "set") {
    auto a = strings_of(g);
    auto b = strings_of(w);
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    CHECK_MESSAGE(a == b, what);
  } else if (type == "hash") {
    CHECK_MESSAGE(pairs_of(g) == pairs_of(w), what);
  } else if (type == "zset") {
    auto a = pairs_of(g);
    auto b = pairs_of(w);
    REQUIRE_MESSAGE(a.size() == b.size(), what);
    for (size_t i = 0; i < a.size(); ++i) {
      CHECK_MESSAGE(a[i].first == b[i].first, what);
      CHECK_MESSAGE(std::stod(a[i].second) == std::stod(b[i].second), what, " ", a[i].first);
    }
  }
}

}  // namespace

TEST_SUITE("migrate::rdb_dump") {
  TEST_CASE("The JSON dump of each valkey8 file holds every ground-truth key with its value") {
    for (const char* name :
         {"valkey8-strings.rdb", "valkey8-lists.rdb", "valkey8-sets.rdb", "valkey8-zsets.rdb",
          "valkey8-hashes.rdb", "valkey8-expire-multidb.rdb", "valkey8-streams.rdb"}) {
      CAPTURE(name);
      std::string bytes = read_file(k_corpus / name);
      Json truth = JsonReader(read_file(k_corpus / (std::string(name) + ".json"))).parse();
      std::map<std::pair<uint64_t, std::string>, Json> dumped;
      for (const std::string& line : lines(dump(bytes, {}))) {
        Json j = JsonReader(line).parse();
        dumped[{std::stoull(j.at("db").text), bytes_of(j.at("key"))}] = j;
      }
      const Json& keys = truth.at("servers").at("valkey-8.0.1").at("keys");
      CHECK(dumped.size() == keys.items.size());
      for (const Json& want : keys.items) {
        std::string key = want.at("key_is_hex").kind == Json::Kind::boolean &&
                                  want.at("key_is_hex").text == "true"
                              ? keyshift::test::from_hex(want.at("key").text)
                              : want.at("key").text;
        auto it = dumped.find({std::stoull(want.at("db").text), key});
        REQUIRE_MESSAGE(it != dumped.end(), key);
        const Json& got = it->second;
        const std::string expire = want.at("pexpiretime").text;
        if (expire == "-1") {
          CHECK_MESSAGE(got.at("expire_ms").kind == Json::Kind::null, key);
        } else {
          CHECK_MESSAGE(got.at("expire_ms").text == expire, key);
        }
        check_same_value(got, want, key);
      }
    }
  }

  TEST_CASE("Field TTLs of a Redis 7.4 hash are listed as field and expire time pairs") {
    std::string bytes = read_file(k_corpus / "redis74-hash-field-ttl.rdb");
    bool seen = false;
    for (const std::string& line : lines(dump(bytes, {}))) {
      Json j = JsonReader(line).parse();
      if (j.at("key").text == "hfe:listpack-some-ttl") {
        seen = true;
        const Json& ttls = j.at("field_ttls");
        REQUIRE(ttls.items.size() == 3);
        CHECK(ttls.items[0].items.size() == 2);
        CHECK(std::stoll(ttls.items[0].items[1].text) > 4000000000000);
      }
      if (j.at("key").text == "hfe:plain-no-ttl") {
        CHECK(j.find("field_ttls") == nullptr);
      }
    }
    CHECK(seen);
  }

  TEST_CASE("--db and --match keep only the selected keys") {
    std::string bytes = read_file(k_corpus / "valkey8-expire-multidb.rdb");
    RdbDumpOptions options;
    options.format = RdbDumpFormat::keys;
    options.db = 9;
    auto out = lines(dump(bytes, options));
    CHECK(out.size() == 5);
    for (const std::string& line : out) {
      CHECK(line.rfind("9 ", 0) == 0);
    }
    options.db.reset();
    options.match = "db1*:ttl";
    out = lines(dump(bytes, options));
    REQUIRE(out.size() == 2);
    CHECK(out[0] == "1 string 4102444800001 \"db1:ttl\"");
  }

  TEST_CASE("The keys format quotes non-printable bytes as redis-cli does") {
    CHECK(keyshift::engine::quote_repr(std::string_view("a b\n\"\\\x00\xff", 8)) ==
          "\"a b\\n\\\"\\\\\\x00\\xff\"");
  }

  TEST_CASE("The RESP dump selects the database and splits big collections") {
    std::string bytes = read_file(k_corpus / "valkey8-lists.rdb");
    RdbDumpOptions options;
    options.format = RdbDumpFormat::resp;
    options.match = "list:big-5000";
    std::string out = dump(bytes, options);
    CHECK(out.rfind("*2\r\n$6\r\nSELECT\r\n$1\r\n0\r\n", 0) == 0);
    // 5000 elements in commands of at most 1000: five RPUSH with 1002 arguments each.
    size_t count = 0;
    for (size_t pos = 0; (pos = out.find("*1002\r\n$5\r\nRPUSH\r\n", pos)) != std::string::npos;
         ++pos) {
      ++count;
    }
    CHECK(count == 5);
  }

  TEST_CASE("The RESP dump keeps TTLs, exact scores and field TTLs") {
    RdbDumpOptions options;
    options.format = RdbDumpFormat::resp;
    std::string out = dump(read_file(k_corpus / "valkey8-expire-multidb.rdb"), options);
    CHECK(out.find("$4\r\nPXAT\r\n$13\r\n4102444800123\r\n") != std::string::npos);
    CHECK(out.find("$9\r\nPEXPIREAT\r\n$13\r\nlist-with-ttl\r\n") != std::string::npos);
    out = dump(read_file(k_corpus / "valkey8-zsets.rdb"), options);
    CHECK(out.find("$19\r\n0.10000000000000001\r\n$9\r\npoint-one\r\n") != std::string::npos);
    CHECK(out.find("$4\r\n-inf\r\n$7\r\nneg-inf\r\n") != std::string::npos);
    out = dump(read_file(k_corpus / "redis74-hash-field-ttl.rdb"), options);
    CHECK(out.find("$10\r\nHPEXPIREAT\r\n") != std::string::npos);
    CHECK(out.find("$6\r\nFIELDS\r\n") != std::string::npos);
  }

  TEST_CASE("The RESP dump rebuilds streams with their IDs, metadata and groups") {
    RdbDumpOptions options;
    options.format = RdbDumpFormat::resp;
    std::string out = dump(read_file(k_corpus / "valkey8-streams.rdb"), options);
    CHECK(out.find("$6\r\nXSETID\r\n") != std::string::npos);
    CHECK(out.find("$12\r\nENTRIESADDED\r\n") != std::string::npos);
    CHECK(out.find("$6\r\nCREATE\r\n") != std::string::npos);
    CHECK(out.find("$6\r\nXCLAIM\r\n") != std::string::npos);
  }

  TEST_CASE("A damaged file is an error naming the offset") {
    std::string bytes = read_file(k_corpus / "valkey8-hashes.rdb");
    bytes.resize(bytes.size() / 2);
    auto r = dump_rdb(bytes, {}, [](std::string_view) {});
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().offset > 0);
  }
}
