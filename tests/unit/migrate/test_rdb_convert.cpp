#include "tests/unit/engine/corpus_json.hpp"
#include "tests/unit/test_paths.hpp"

#include "engine/persistence/rdb_reader.hpp"
#include "migrate/rdb_convert.hpp"

#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <utility>
#include <vector>

using keyshift::engine::RdbKey;
using keyshift::migrate::convert_rdb;
using keyshift::migrate::FieldTtlPolicy;
using keyshift::migrate::RdbConvertOptions;
using keyshift::migrate::RdbConvertReport;
using keyshift::test::read_file;

namespace {

const std::filesystem::path k_corpus = test::rdb_corpus_dir();

/// 2026-01-01T00:00:00Z: before every far-future TTL of the generated files.
constexpr int64_t k_now_ms = 1767225600000;

/// A scratch directory removed at the end of the test.
struct TempDir {
  std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("keyshift-convert-" + std::to_string(::getpid()));
  TempDir() { std::filesystem::create_directories(path); }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

/// Every key of a file, by (db, key).
struct Collector : keyshift::engine::RdbVisitor {
  std::map<std::pair<uint64_t, std::string>, RdbKey> keys;
  bool on_key(RdbKey& k) override {
    keys[{k.db, k.key}] = std::move(k);
    return true;
  }
};

Collector read_back(const std::string& path, int& version) {
  Collector c;
  std::string bytes = read_file(path);
  auto summary = keyshift::engine::read_rdb(bytes, c);
  REQUIRE_MESSAGE(summary.has_value(), summary.error().message);
  version = summary->version;
  return c;
}

RdbConvertReport convert(const std::string& name, const std::string& out,
                         RdbConvertOptions options) {
  options.now_ms = k_now_ms;
  return convert_rdb(read_file(k_corpus / name), out, options);
}

}  // namespace

TEST_SUITE("migrate::rdb_convert") {
  TEST_CASE("Field TTLs fail the conversion by default, naming the hashes and writing nothing") {
    TempDir dir;
    auto r = convert("redis74-hash-field-ttl.rdb", dir.file("out.rdb"), {});
    CHECK_FALSE(r.ok);
    CHECK(r.blocked_field_ttls.count == 7);
    CHECK(r.error.find("hfe:hashtable-600") != std::string::npos);
    CHECK(r.error.find("--field-ttl") != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(dir.file("out.rdb")));
  }

  TEST_CASE("drop-ttl keeps every field without its TTL in an RDB 11 file") {
    TempDir dir;
    RdbConvertOptions options;
    options.rules.field_ttl = FieldTtlPolicy::drop_ttl;
    auto r = convert("redis74-hash-field-ttl.rdb", dir.file("out.rdb"), options);
    REQUIRE_MESSAGE(r.ok, r.error);
    CHECK(r.field_ttls_dropped.count == 7);
    Collector in;
    REQUIRE(keyshift::engine::read_rdb(read_file(k_corpus / "redis74-hash-field-ttl.rdb"), in));
    int version = 0;
    Collector out = read_back(dir.file("out.rdb"), version);
    CHECK(version == 11);
    REQUIRE(out.keys.size() == in.keys.size());
    for (auto& [id, key] : in.keys) {
      CAPTURE(id.second);
      const RdbKey& got = out.keys.at(id);
      CHECK(got.expire_ms == key.expire_ms);
      std::map<std::string, std::string> want_fields;
      for (const auto& f : key.value.hash) {
        want_fields[f.field] = f.value;
      }
      std::map<std::string, std::string> got_fields;
      for (const auto& f : got.value.hash) {
        got_fields[f.field] = f.value;
        CHECK(f.expire_ms == -1);
      }
      CHECK(got_fields == want_fields);
    }
  }

  TEST_CASE("drop-field removes the fields with a TTL and drops hashes left empty") {
    TempDir dir;
    RdbConvertOptions options;
    options.rules.field_ttl = FieldTtlPolicy::drop_field;
    options.rdb_version = 10;
    auto r = convert("redis74-hash-field-ttl.rdb", dir.file("out.rdb"), options);
    REQUIRE_MESSAGE(r.ok, r.error);
    REQUIRE(r.hashes_emptied.count == 1);
    CHECK(r.hashes_emptied.keys[0].key == "hfe:listpack-all-ttl");
    Collector in;
    REQUIRE(keyshift::engine::read_rdb(read_file(k_corpus / "redis74-hash-field-ttl.rdb"), in));
    int version = 0;
    Collector out = read_back(dir.file("out.rdb"), version);
    CHECK(version == 10);
    CHECK(out.keys.count({0, "hfe:listpack-all-ttl"}) == 0);
    CHECK(out.keys.size() == in.keys.size() - 1);
    for (const auto& [id, key] : out.keys) {
      std::map<std::string, std::string> want_fields;
      for (const auto& f : in.keys.at(id).value.hash) {
        if (f.expire_ms < 0) {
          want_fields[f.field] = f.value;
        }
      }
      std::map<std::string, std::string> got_fields;
      for (const auto& f : key.value.hash) {
        got_fields[f.field] = f.value;
      }
      CHECK_MESSAGE(got_fields == want_fields, id.second);
    }
  }

  TEST_CASE("RDB 12 keeps field TTLs without any policy") {
    TempDir dir;
    RdbConvertOptions options;
    options.rdb_version = 12;
    auto r = convert("redis74-hash-field-ttl.rdb", dir.file("out.rdb"), options);
    REQUIRE_MESSAGE(r.ok, r.error);
    int version = 0;
    Collector out = read_back(dir.file("out.rdb"), version);
    CHECK(version == 12);
    bool any_ttl = false;
    for (const auto& f : out.keys.at({0, "hfe:hashtable-600"}).value.hash) {
      any_ttl = any_ttl || f.expire_ms >= 0;
    }
    CHECK(any_ttl);
  }

  TEST_CASE("--db-map moves keys and --exclude leaves streams out") {
    TempDir dir;
    RdbConvertOptions options;
    options.rules.exclude = {"stream*"};
    options.rules.db_map = {{9, 3}, {15, 0}};
    auto r = convert("valkey8-expire-multidb.rdb", dir.file("out.rdb"), options);
    CHECK_FALSE(r.ok);  // db 15's copy of "same-name-every-db" collides in db 0
    CHECK(r.error.find("same-name-every-db") != std::string::npos);
    options.rules.db_map = {{9, 3}, {15, 20}};
    r = convert("valkey8-expire-multidb.rdb", dir.file("out.rdb"), options);
    REQUIRE_MESSAGE(r.ok, r.error);
    CHECK(r.filtered.count == 1);
    CHECK(r.moved.count == 10);
    int version = 0;
    Collector out = read_back(dir.file("out.rdb"), version);
    CHECK(out.keys.count({3, "db9:string"}) == 1);
    CHECK(out.keys.count({9, "db9:string"}) == 0);
    CHECK(out.keys.count({20, "db15:ttl"}) == 1);
    CHECK(out.keys.at({20, "db15:ttl"}).expire_ms == 4102444800015);
    CHECK(out.keys.count({0, "stream-with-ttl"}) == 0);
  }

  TEST_CASE("--match keeps only matching keys") {
    TempDir dir;
    RdbConvertOptions options;
    options.rules.match = {"db1:*"};
    auto r = convert("valkey8-expire-multidb.rdb", dir.file("out.rdb"), options);
    REQUIRE_MESSAGE(r.ok, r.error);
    CHECK(r.keys_written == 4);
    int version = 0;
    Collector out = read_back(dir.file("out.rdb"), version);
    CHECK(out.keys.size() == 4);
  }

  TEST_CASE("Function libraries are carried over as FUNCTION2 records") {
    struct Functions : keyshift::engine::RdbVisitor {
      std::vector<std::string> code;
      void on_function(std::string_view c) override { code.emplace_back(c); }
      bool on_key(RdbKey&) override { return true; }
    };
    TempDir dir;
    Functions in;
    std::string bytes = read_file(k_corpus / "valkey8-functions.rdb");
    REQUIRE(keyshift::engine::read_rdb(bytes, in).has_value());
    REQUIRE(in.code.size() == 3);
    for (int version : {10, 11}) {
      RdbConvertOptions options;
      options.rdb_version = version;
      auto r = convert("valkey8-functions.rdb", dir.file("out.rdb"), options);
      REQUIRE_MESSAGE(r.ok, r.error);
      CHECK(r.functions_kept == 3);
      Functions out;
      REQUIRE(keyshift::engine::read_rdb(read_file(dir.file("out.rdb")), out).has_value());
      CHECK(out.code == in.code);
    }
  }

  TEST_CASE("Streams are carried with their nodes, metadata, groups, PEL and consumers") {
    TempDir dir;
    for (const char* name : {"valkey8-streams.rdb", "redis70-streams.rdb", "redis74-streams.rdb",
                             "rdbtools--redis_50_with_streams.rdb"}) {
      Collector in;
      std::string bytes = read_file(k_corpus / name);
      REQUIRE(keyshift::engine::read_rdb(bytes, in).has_value());
      for (int version : {10, 11}) {
        CAPTURE(name);
        CAPTURE(version);
        RdbConvertOptions options;
        options.rdb_version = version;
        auto r = convert(name, dir.file("out.rdb"), options);
        REQUIRE_MESSAGE(r.ok, r.error);
        int out_version = 0;
        Collector out = read_back(dir.file("out.rdb"), out_version);
        CHECK(out_version == version);
        int streams = 0;
        for (const auto& [where, k] : in.keys) {
          if (k.value.kind != keyshift::engine::RdbKind::stream) {
            continue;
          }
          CAPTURE(k.key);
          REQUIRE(out.keys.count(where) == 1);
          const auto& a = k.value.stream;
          const auto& b = out.keys.at(where).value.stream;
          CHECK(out.keys.at(where).value.rdb_type == (version == 10 ? 19 : 21));
          REQUIRE(a.nodes.size() == b.nodes.size());
          for (size_t i = 0; i < a.nodes.size(); ++i) {
            CHECK(a.nodes[i].master == b.nodes[i].master);
            CHECK(a.nodes[i].listpack == b.nodes[i].listpack);
          }
          CHECK(a.length == b.length);
          CHECK(a.last_id == b.last_id);
          CHECK(b.has_v2_metadata);
          if (a.has_v2_metadata) {
            CHECK(a.first_id == b.first_id);
            CHECK(a.max_deleted_id == b.max_deleted_id);
            CHECK(a.entries_added == b.entries_added);
          }
          REQUIRE(a.groups.size() == b.groups.size());
          for (size_t g = 0; g < a.groups.size(); ++g) {
            const auto& ga = a.groups[g];
            const auto& gb = b.groups[g];
            CHECK(ga.name == gb.name);
            CHECK(ga.last_delivered == gb.last_delivered);
            if (a.has_v2_metadata) {
              CHECK(ga.entries_read == gb.entries_read);
            }
            REQUIRE(ga.pending.size() == gb.pending.size());
            for (size_t p = 0; p < ga.pending.size(); ++p) {
              CHECK(ga.pending[p].id == gb.pending[p].id);
              CHECK(ga.pending[p].delivery_time_ms == gb.pending[p].delivery_time_ms);
              CHECK(ga.pending[p].delivery_count == gb.pending[p].delivery_count);
            }
            REQUIRE(ga.consumers.size() == gb.consumers.size());
            for (size_t c = 0; c < ga.consumers.size(); ++c) {
              CHECK(ga.consumers[c].name == gb.consumers[c].name);
              CHECK(ga.consumers[c].seen_time_ms == gb.consumers[c].seen_time_ms);
              CHECK(ga.consumers[c].pending == gb.consumers[c].pending);
              if (version >= 11 && ga.consumers[c].active_time_ms >= 0) {
                CHECK(ga.consumers[c].active_time_ms == gb.consumers[c].active_time_ms);
              }
            }
          }
          ++streams;
        }
        CHECK(streams > 0);
      }
    }
  }

  TEST_CASE("Module keys block the conversion unless --skip-modules drops them") {
    TempDir dir;
    auto r = convert("rdbtools--redis_40_with_module.rdb", dir.file("out.rdb"), {});
    CHECK_FALSE(r.ok);
    CHECK(r.blocked_modules.count == 1);
    RdbConvertOptions options;
    options.rules.skip_modules = true;
    r = convert("rdbtools--redis_40_with_module.rdb", dir.file("out.rdb"), options);
    REQUIRE_MESSAGE(r.ok, r.error);
    CHECK(r.modules_dropped.count == 1);
    CHECK(r.keys_written == 1);
  }

  TEST_CASE("Path Hash keys block the conversion, naming them; --exclude leaves them out") {
    TempDir dir;
    // VALKEY081 with a string and a Path Hash (type 23), checksum off.
    std::string file = "VALKEY081";
    file += std::string("\x00\x01s\x01v", 5);
    file += std::string(
        "\x17\x02ph\x01\x02/a\x01\x01"
        "f\x01"
        "1",
        13);
    file += "\xff" + std::string(8, '\0');
    RdbConvertOptions options;
    options.now_ms = k_now_ms;
    options.rdb_version = 81;
    auto r = convert_rdb(file, dir.file("out.rdb"), options);
    CHECK_FALSE(r.ok);
    CHECK(r.blocked_path_hashes.count == 1);
    CHECK(r.error ==
          "cannot convert: 1 Path Hash key(s) (Valkey 9.2's type 23), which keyshift cannot "
          "rewrite (leave them out with --exclude): db0 \"ph\"");
    CHECK_FALSE(std::filesystem::exists(dir.file("out.rdb")));
    options.rules.exclude = {"ph"};
    r = convert_rdb(file, dir.file("out.rdb"), options);
    REQUIRE_MESSAGE(r.ok, r.error);
    CHECK(r.keys_written == 1);
    CHECK(r.input_version == 81);
    CHECK(read_file(dir.file("out.rdb")).substr(0, 9) == "VALKEY081");
    options.rdb_version = 82;
    r = convert_rdb(file, dir.file("out.rdb"), options);
    CHECK(r.error == "RDB version 82 cannot be written (10, 11, 12, 80 or 81)");
  }

  TEST_CASE("Expired keys are dropped and counted") {
    TempDir dir;
    auto r = convert("rdbtools--keys_with_expiry.rdb", dir.file("out.rdb"), {});
    REQUIRE_MESSAGE(r.ok, r.error);
    CHECK(r.expired.count == 1);
    CHECK(r.keys_written == 0);
  }

  TEST_CASE("The output may replace the input: every key is read before the rename") {
    TempDir dir;
    std::filesystem::copy_file(k_corpus / "valkey8-hashes.rdb", dir.file("same.rdb"));
    std::string bytes = read_file(dir.file("same.rdb"));
    RdbConvertOptions options;
    options.rdb_version = 10;
    options.now_ms = k_now_ms;
    auto r = convert_rdb(bytes, dir.file("same.rdb"), options);
    REQUIRE_MESSAGE(r.ok, r.error);
    int version = 0;
    Collector out = read_back(dir.file("same.rdb"), version);
    CHECK(version == 10);
    CHECK(out.keys.size() == 8);
  }

  TEST_CASE("The JSON report names every change") {
    TempDir dir;
    RdbConvertOptions options;
    options.rules.field_ttl = FieldTtlPolicy::drop_field;
    auto r = convert("redis74-hash-field-ttl.rdb", dir.file("out.rdb"), options);
    auto j =
        keyshift::test::JsonReader(keyshift::migrate::render_convert_json(r, "in", "out")).parse();
    CHECK(j.at("ok").text == "true");
    CHECK(j.at("changes").at("hashes_emptied").at("count").text == "1");
    CHECK(j.at("changes").at("fields_dropped").at("keys").items.size() == 7);
  }

  TEST_CASE("Valkey 9's format (80) keeps field TTLs, and converts back to Redis versions") {
    TempDir dir;
    RdbConvertOptions options;
    options.rdb_version = 80;
    auto r = convert("redis74-hash-field-ttl.rdb", dir.file("v9.rdb"), options);
    REQUIRE_MESSAGE(r.ok, r.error);
    CHECK(r.output_version == 80);
    CHECK(read_file(dir.file("v9.rdb")).substr(0, 9) == "VALKEY080");
    int version = 0;
    Collector v9 = read_back(dir.file("v9.rdb"), version);
    CHECK(version == 80);
    const RdbKey& big = v9.keys.at({0, "hfe:hashtable-600"});
    CHECK(big.value.rdb_type == 122);  // HASH_2, renumbered apart from Redis' 22
    size_t ttls = 0;
    for (const auto& f : big.value.hash) {
      ttls += f.expire_ms >= 0 ? 1 : 0;
    }
    CHECK(ttls > 0);

    // Back to Redis 7.4's format with the same field TTLs, and to RDB 11 only with a policy.
    RdbConvertOptions back;
    back.rdb_version = 12;
    back.now_ms = k_now_ms;
    auto r12 = convert_rdb(read_file(dir.file("v9.rdb")), dir.file("r12.rdb"), back);
    REQUIRE_MESSAGE(r12.ok, r12.error);
    CHECK(r12.input_version == 80);
    Collector again = read_back(dir.file("r12.rdb"), version);
    CHECK(version == 12);
    size_t ttls12 = 0;
    for (const auto& f : again.keys.at({0, "hfe:hashtable-600"}).value.hash) {
      ttls12 += f.expire_ms >= 0 ? 1 : 0;
    }
    CHECK(ttls12 == ttls);
    back.rdb_version = 11;
    auto r11 = convert_rdb(read_file(dir.file("v9.rdb")), dir.file("r11.rdb"), back);
    CHECK_FALSE(r11.ok);
    CHECK(r11.error.find("--field-ttl") != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(dir.file("r11.rdb")));
  }
}
