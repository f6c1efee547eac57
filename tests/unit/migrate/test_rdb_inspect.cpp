#include "tests/unit/engine/corpus_json.hpp"
#include "tests/unit/test_paths.hpp"

#include "engine/persistence/rdb_format.hpp"
#include "migrate/rdb_convert.hpp"
#include "migrate/rdb_inspect.hpp"

#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

using keyshift::migrate::inspect_rdb;
using keyshift::migrate::judge_target;
using keyshift::migrate::parse_rdb_target;
using keyshift::migrate::RdbInspectOptions;
using keyshift::migrate::RdbReport;
using keyshift::migrate::RdbReportDetail;
using keyshift::migrate::RdbTarget;
using keyshift::migrate::RdbVerdict;
using keyshift::test::decode_bytes;
using keyshift::test::Json;
using keyshift::test::JsonReader;
using keyshift::test::read_file;

namespace {

const std::filesystem::path k_corpus = test::rdb_corpus_dir();

/// 2026-01-01T00:00:00Z: before every far-future TTL of the generated files.
constexpr int64_t k_now_ms = 1767225600000;

struct CorpusFile {
  std::string name;
  std::string bytes;
  Json truth;
};

/// The corpus files the engine's reader reads: every file some server loads, and the
/// module file (its value is self-describing, so it is skipped).
std::vector<std::string> readable_files() {
  std::vector<std::string> out;
  for (const auto& entry : std::filesystem::directory_iterator(k_corpus)) {
    std::string name = entry.path().filename().string();
    if (entry.path().extension() != ".rdb") {
      continue;
    }
    Json truth = JsonReader(read_file(entry.path().string() + ".json")).parse();
    if (!truth.at("loadable_by").items.empty() || name == "rdbtools--redis_40_with_module.rdb") {
      out.push_back(name);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

CorpusFile load(const std::string& name) {
  CorpusFile f{name, read_file(k_corpus / name), {}};
  f.truth = JsonReader(read_file(k_corpus / (name + ".json"))).parse();
  return f;
}

RdbReport inspect(const std::string& bytes, RdbInspectOptions options = {}) {
  if (options.now_ms == 0) {
    options.now_ms = k_now_ms;
  }
  auto r = inspect_rdb(bytes, options);
  REQUIRE_MESSAGE(r.has_value(), r.error().message, " at ", r.error().offset);
  return *r;
}

uint64_t number(const Json& j) {
  return std::stoull(j.text);
}

bool has_ttl(const Json& key) {
  const Json* expire = key.find("expire_ms");
  return expire != nullptr && expire->kind != Json::Kind::null;
}

}  // namespace

TEST_SUITE("migrate::rdb_inspect") {
  TEST_CASE("counts per db and per type equal the ground truth of every readable file") {
    std::vector<std::string> files = readable_files();
    REQUIRE(files.size() >= 50);
    for (const auto& name : files) {
      CAPTURE(name);
      CorpusFile f = load(name);
      RdbReport r = inspect(f.bytes);
      const Json& s = f.truth.at("structure");
      CHECK(r.total_keys == number(s.at("total_keys")));
      CHECK(r.summary.version == static_cast<int>(number(s.at("version"))));

      std::map<std::string, uint64_t> want_types;
      for (const auto& [type, count] : s.at("types").fields) {
        want_types[type] = number(count);
      }
      std::map<std::string, uint64_t> got_types;
      for (const auto& [type, count] : r.types) {
        got_types[std::string(keyshift::engine::rdb::type_name(type))] = count.keys;
      }
      CHECK(got_types == want_types);

      std::map<std::string, uint64_t> want_dbs;
      for (const auto& [db, count] : s.at("dbs").fields) {
        want_dbs[db] = number(count);
      }
      std::map<std::string, uint64_t> got_dbs;
      for (const auto& [db, stats] : r.dbs) {
        got_dbs[std::to_string(db)] = stats.keys;
      }
      CHECK(got_dbs == want_dbs);

      // Bytes per type and expires per db, summed from the per-key ground truth.
      std::map<std::string, uint64_t> want_bytes;
      std::map<uint64_t, uint64_t> want_expires;
      uint64_t want_field_ttl_hashes = 0;
      for (const auto& k : s.at("keys").items) {
        want_bytes[k.at("rdb_type_name").text] += number(k.at("value_bytes_in_file"));
        if (has_ttl(k)) {
          ++want_expires[number(k.at("db"))];
        }
        uint64_t type = number(k.at("rdb_type"));
        if (type >= 22 && type <= 25) {
          ++want_field_ttl_hashes;
        }
      }
      for (const auto& [type, count] : r.types) {
        CHECK(count.value_bytes == want_bytes[std::string(keyshift::engine::rdb::type_name(type))]);
      }
      for (const auto& [db, stats] : r.dbs) {
        CHECK(stats.expires == want_expires[db]);
      }
      CHECK(r.field_ttl_hashes == want_field_ttl_hashes);

      CHECK(r.libraries.size() == s.at("functions").items.size());
      for (size_t i = 0; i < r.libraries.size() && i < s.at("functions").items.size(); ++i) {
        CHECK("#!lua name=" + r.libraries[i].name == s.at("functions").items[i].at("header").text);
      }
      CHECK(r.module_aux.size() == s.at("module_aux").items.size());
      CHECK(r.slot_info_records == number(s.at("slot_info_records")));

      const Json* valid = s.find("checksum_valid");
      std::string_view status = keyshift::migrate::checksum_status(r.summary);
      if (valid != nullptr && valid->kind == Json::Kind::boolean) {
        CHECK(status == "verified");
      } else {
        CHECK((status == "disabled" || status == "absent"));
        CHECK((status == "absent") == (r.summary.version < 5));
      }
    }
  }

  TEST_CASE("the biggest keys are the ground truth's largest values, biggest first") {
    CorpusFile f = load("redis70-strings.rdb");
    RdbInspectOptions options;
    options.top_keys = 3;
    RdbReport r = inspect(f.bytes, options);
    std::vector<std::pair<uint64_t, std::string>> want;
    for (const auto& k : f.truth.at("structure").at("keys").items) {
      std::string key = k.at("key_is_hex").text == "true"
                            ? keyshift::test::from_hex(k.at("key").text)
                            : k.at("key").text;
      want.emplace_back(number(k.at("value_bytes_in_file")), key);
    }
    std::stable_sort(want.begin(), want.end(),
                     [](const auto& a, const auto& b) { return a.first > b.first; });
    REQUIRE(r.biggest.size() == 3);
    for (size_t i = 0; i < 3; ++i) {
      CHECK(r.biggest[i].value_bytes == want[i].first);
      CHECK(r.biggest[i].key == want[i].second);
    }
  }

  TEST_CASE("key prefixes count the first segment before the delimiter") {
    CorpusFile f = load("redis74-cluster-slotinfo.rdb");
    RdbReport r = inspect(f.bytes);
    std::map<std::string, uint64_t> want;
    uint64_t without = 0;
    for (const auto& k : f.truth.at("structure").at("keys").items) {
      const std::string& key = k.at("key").text;
      size_t at = key.find(':');
      if (at == std::string::npos) {
        ++without;
      } else {
        ++want[key.substr(0, at)];
      }
    }
    CHECK(r.distinct_prefixes == want.size());
    CHECK(r.without_delimiter.keys == without);
    uint64_t listed = 0;
    for (const auto& p : r.prefixes) {
      CHECK(p.count.keys == want[p.prefix]);
      listed += p.count.keys;
    }
    CHECK(listed + r.without_delimiter.keys <= r.total_keys);
    CHECK(std::is_sorted(r.prefixes.begin(), r.prefixes.end(),
                         [](const auto& a, const auto& b) { return a.count.keys > b.count.keys; }));
  }

  TEST_CASE("TTL buckets move with the clock") {
    CorpusFile f = load("redis70-expire-multidb.rdb");
    uint64_t with_ttl = 0;
    int64_t latest = 0;
    for (const auto& k : f.truth.at("structure").at("keys").items) {
      if (has_ttl(k)) {
        ++with_ttl;
        latest = std::max<int64_t>(latest, std::stoll(k.at("expire_ms").text));
      }
    }
    REQUIRE(with_ttl > 0);
    RdbReport now = inspect(f.bytes);
    CHECK(now.ttl.no_ttl == now.total_keys - with_ttl);
    CHECK(now.ttl.expired + now.ttl.under_1h + now.ttl.under_1d + now.ttl.under_30d +
              now.ttl.longer ==
          with_ttl);
    CHECK(now.ttl.longer == with_ttl);  // every TTL is years ahead

    RdbInspectOptions later;
    later.now_ms = latest + 1;
    later.target = RdbTarget::valkey_8_0;
    RdbReport after = inspect(f.bytes, later);
    CHECK(after.ttl.expired == with_ttl);
    REQUIRE(after.target.has_value());
    CHECK(after.target->notes.size() == 1);

    later.now_ms = latest - 3600 * 1000 + 1;  // the last key has less than an hour left
    CHECK(inspect(f.bytes, later).ttl.under_1h >= 1);
  }

  TEST_CASE("field TTLs are counted per hash and per field") {
    CorpusFile f = load("redis74-hash-field-ttl.rdb");
    RdbReport r = inspect(f.bytes);
    uint64_t fields = 0;
    for (const auto& k : f.truth.at("servers").at("redis-7.4.1").at("keys").items) {
      if (const Json* ttls = k.find("field_ttls")) {
        for (const auto& field : ttls->items) {
          if (std::stoll(field.at("hpexpiretime").text) >= 0) {
            ++fields;
          }
        }
      }
    }
    CHECK(r.field_ttl_hashes == 8);
    CHECK(r.fields_with_ttl == fields);
    CHECK(fields > 0);
  }

  TEST_CASE("the verdict for a target matches which servers loaded each file") {
    const std::map<std::string, RdbTarget> servers = {
        {"redis-7.0.15", RdbTarget::redis_7_0},
        {"redis-7.4.1", RdbTarget::redis_7_4},
        {"valkey-8.0.1", RdbTarget::valkey_8_0},
    };
    for (const auto& name : readable_files()) {
      CAPTURE(name);
      CorpusFile f = load(name);
      RdbReport r = inspect(f.bytes);
      for (const auto& [server, target] : servers) {
        CAPTURE(server);
        bool loaded = false;
        for (const auto& s : f.truth.at("loadable_by").items) {
          loaded = loaded || s.text == server;
        }
        RdbVerdict v = judge_target(r, target, false).verdict;
        CHECK((v == RdbVerdict::loads_as_is) == loaded);
      }
    }
  }

  TEST_CASE("a Redis 7.4 file with field TTLs needs conversion for Valkey 8.0") {
    CorpusFile f = load("redis74-hash-field-ttl.rdb");
    RdbInspectOptions options;
    options.target = parse_rdb_target("valkey-8.0");
    RdbReport r = inspect(f.bytes, options);
    REQUIRE(r.target.has_value());
    CHECK(r.target->verdict == RdbVerdict::needs_conversion);
    REQUIRE(r.target->changes.size() == 2);
    CHECK(r.target->changes[0].find("RDB version 12 -> 11") != std::string::npos);
    CHECK(r.target->changes[1].find("field TTLs") != std::string::npos);
    CHECK(r.target->blockers.empty());
    CHECK(judge_target(r, RdbTarget::redis_7_4, false).verdict == RdbVerdict::loads_as_is);
    // Lines with no corpus file of their own are judged by the knowledge base's facts:
    // Redis 8 reads what 7.4 wrote, Valkey 8.1 reads no more than 8.0.
    CHECK(judge_target(r, RdbTarget::redis_8_0, false).verdict == RdbVerdict::loads_as_is);
    CHECK(judge_target(r, RdbTarget::redis_8_4, false).verdict == RdbVerdict::loads_as_is);
    CHECK(judge_target(r, RdbTarget::valkey_8_1, false).verdict == RdbVerdict::needs_conversion);
    CHECK(judge_target(r, RdbTarget::redis_6_2, false).verdict != RdbVerdict::loads_as_is);
    CHECK(parse_rdb_target("redis-8.2.1") == RdbTarget::redis_8_2);
    CHECK(parse_rdb_target("valkey-9.1") == RdbTarget::valkey_9_1);
    CHECK_FALSE(parse_rdb_target("keydb-6.3"));
  }

  TEST_CASE("Valkey 8 files need conversion for Redis 7.0: version and newer encodings") {
    CorpusFile f = load("valkey8-streams.rdb");
    RdbReport r = inspect(f.bytes);
    auto t = judge_target(r, RdbTarget::redis_7_0, false);
    CHECK(t.verdict == RdbVerdict::needs_conversion);
    REQUIRE(t.changes.size() == 2);
    CHECK(t.changes[0].find("11 -> 10") != std::string::npos);
    CHECK(t.changes[1].find("STREAM_LISTPACKS_3") != std::string::npos);
    CHECK(judge_target(r, RdbTarget::valkey_7_2, false).verdict == RdbVerdict::loads_as_is);
    CHECK(judge_target(r, RdbTarget::redis_7_2, false).verdict == RdbVerdict::loads_as_is);
  }

  TEST_CASE("module keys block the move unless they are skipped") {
    CorpusFile f = load("rdbtools--redis_40_with_module.rdb");
    RdbReport r = inspect(f.bytes);
    REQUIRE(r.module_keys.size() == 1);
    CHECK(r.module_keys.begin()->first == "ReJSON-RL");
    auto blocked = judge_target(r, RdbTarget::valkey_8_0, false);
    CHECK(blocked.verdict == RdbVerdict::cannot_move);
    CHECK(blocked.blockers.at(0).find("ReJSON-RL") != std::string::npos);
    auto skipped = judge_target(r, RdbTarget::valkey_8_0, true);
    CHECK(skipped.verdict == RdbVerdict::needs_conversion);
    CHECK(skipped.blockers.empty());
  }

  TEST_CASE("a Valkey-only function library cannot move to Redis") {
    CorpusFile f = load("valkey8-functions.rdb");
    RdbReport r = inspect(f.bytes);
    REQUIRE(r.libraries.size() == 3);
    CHECK(r.libraries[0].name == "valkey_only");
    CHECK(r.libraries[0].uses_valkey_api);
    CHECK_FALSE(r.libraries[1].uses_valkey_api);
    CHECK_FALSE(r.libraries[2].uses_valkey_api);
    CHECK(judge_target(r, RdbTarget::redis_7_4, false).verdict == RdbVerdict::cannot_move);
    CHECK(judge_target(r, RdbTarget::valkey_8_0, false).verdict == RdbVerdict::loads_as_is);
  }

  TEST_CASE("a corrupt or truncated file is an error with its offset") {
    auto corrupt = inspect_rdb(read_file(k_corpus / "redis-assets--corrupt_ziplist.rdb"), {});
    REQUIRE_FALSE(corrupt.has_value());
    CHECK(corrupt.error().offset > 0);
    CHECK_FALSE(corrupt.error().message.empty());

    std::string whole = read_file(k_corpus / "valkey8-hashes.rdb");
    auto cut = inspect_rdb(std::string_view(whole).substr(0, whole.size() / 2), {});
    REQUIRE_FALSE(cut.has_value());
    CHECK(cut.error().offset <= whole.size() / 2);

    std::string flipped = whole;
    flipped[flipped.size() - 20] ^= 1;
    CHECK_FALSE(inspect_rdb(flipped, {}).has_value());
    CHECK_FALSE(inspect_rdb("", {}).has_value());
  }

  TEST_CASE("the JSON report is valid JSON whatever bytes the keys hold") {
    CorpusFile f = load("redis70-strings.rdb");
    RdbInspectOptions options;
    options.top_keys = 100;
    options.target = RdbTarget::valkey_8_0;
    RdbReport r = inspect(f.bytes, options);
    Json j = JsonReader(keyshift::migrate::render_rdb_json(r, "x.rdb", RdbReportDetail::inspect))
                 .parse();
    CHECK(j.at("ok").text == "true");
    CHECK(number(j.at("total_keys")) == 50);
    CHECK(j.at("biggest_keys").items.size() == 50);
    CHECK(j.at("target").at("verdict").text == "loads as is");
    bool saw_hex = false;
    for (const auto& k : j.at("biggest_keys").items) {
      saw_hex = saw_hex || k.at("key").kind == Json::Kind::object;
    }
    CHECK(saw_hex);
    CHECK(j.at("checksum").at("status").text == "verified");

    Json check =
        JsonReader(keyshift::migrate::render_rdb_json(r, "x.rdb", RdbReportDetail::check)).parse();
    CHECK(check.find("biggest_keys") == nullptr);
    CHECK(number(check.at("dbs").items.at(0).at("keys")) == 50);

    Json error = JsonReader(keyshift::migrate::render_rdb_error_json(std::string_view("b\xff.rdb"),
                                                                     12, "bad \x01 byte"))
                     .parse();
    CHECK(error.at("ok").text == "false");
    CHECK(error.at("file").at("hex").text == "62ff2e726462");
    CHECK(number(error.at("error").at("offset")) == 12);
  }

  TEST_CASE("the text report escapes binary keys and states the verdict") {
    CorpusFile f = load("redis70-strings.rdb");
    RdbInspectOptions options;
    options.top_keys = 100;
    options.target = RdbTarget::redis_7_4;
    RdbReport r = inspect(f.bytes, options);
    std::string text = keyshift::migrate::render_rdb_text(r, "x.rdb", RdbReportDetail::inspect);
    CHECK(std::none_of(text.begin(), text.end(), [](char c) {
      auto u = static_cast<unsigned char>(c);
      return (u < 0x20 && c != '\n') || u == 0x7f;
    }));
    CHECK(text.find("\\x00") != std::string::npos);
    CHECK(text.find("... (") != std::string::npos);  // the 300-byte key is cut
    CHECK(text.find("target redis-7.4: loads as is") != std::string::npos);
    std::string check = keyshift::migrate::render_rdb_text(r, "x.rdb", RdbReportDetail::check);
    CHECK(check.find("status       OK") != std::string::npos);
    CHECK(check.find("biggest") == std::string::npos);
  }

  TEST_CASE("Valkey 9.0 loads its own files and Redis' up to 11; the others need conversion") {
    auto has = [](const std::vector<std::string>& lines, std::string_view what) {
      return std::any_of(lines.begin(), lines.end(),
                         [&](const std::string& l) { return l.find(what) != std::string::npos; });
    };
    CorpusFile hfe = load("redis74-hash-field-ttl.rdb");
    RdbReport redis74 = inspect(hfe.bytes);
    auto t = judge_target(redis74, RdbTarget::valkey_9_0, false);
    CHECK(t.verdict == RdbVerdict::needs_conversion);
    CHECK(has(t.changes, "refuses Redis' versions 12-79"));
    CHECK(has(t.changes, "rewritten as Valkey 9's HASH_2"));
    CHECK(judge_target(inspect(load("redis70-strings.rdb").bytes), RdbTarget::valkey_9_0, false)
              .verdict == RdbVerdict::loads_as_is);
    REQUIRE(parse_rdb_target("valkey-9.0") == RdbTarget::valkey_9_0);

    // The same data in Valkey 9's own format (written by rdb convert --rdb-version 80).
    std::filesystem::path out =
        std::filesystem::temp_directory_path() / ("ks-inspect-v9-" + std::to_string(::getpid()));
    keyshift::migrate::RdbConvertOptions options;
    options.rdb_version = 80;
    options.now_ms = k_now_ms;
    auto converted = keyshift::migrate::convert_rdb(hfe.bytes, out.string(), options);
    REQUIRE_MESSAGE(converted.ok, converted.error);
    std::string v9 = read_file(out);
    std::filesystem::remove(out);
    RdbReport r = inspect(v9);
    CHECK(r.summary.valkey_magic);
    // A Redis 7.4 hash whose fields lost every TTL keeps its field-TTL type there; here it
    // is a plain hash.
    CHECK(r.field_ttl_hashes > 0);
    CHECK(r.field_ttl_hashes <= redis74.field_ttl_hashes);
    CHECK(r.fields_with_ttl == redis74.fields_with_ttl);
    CHECK(judge_target(r, RdbTarget::valkey_9_0, false).verdict == RdbVerdict::loads_as_is);
    auto to8 = judge_target(r, RdbTarget::valkey_8_0, false);
    CHECK(to8.verdict == RdbVerdict::needs_conversion);
    CHECK(has(to8.changes, "RDB version 80 -> 11"));
    CHECK(has(to8.changes, "--field-ttl"));
    auto to74 = judge_target(r, RdbTarget::redis_7_4, false);
    CHECK(to74.verdict == RdbVerdict::needs_conversion);
    CHECK(has(to74.changes, "RDB version 80 -> 12"));
    CHECK(has(to74.changes, "HASH_2 keys"));
  }
  TEST_CASE("Valkey 9.2's RDB 81 loads in 9.2 only; its Path Hashes move nowhere else") {
    auto has = [](const std::vector<std::string>& lines, std::string_view what) {
      return std::any_of(lines.begin(), lines.end(),
                         [&](const std::string& l) { return l.find(what) != std::string::npos; });
    };
    // VALKEY081: a string and a Path Hash (type 23: one path, two fields); checksum off.
    std::string file = "VALKEY081";
    file += std::string("\x00\x01s\x01v", 5);
    file += std::string(
        "\x17\x02ph\x01\x02/a\x02\x01"
        "f\x01"
        "1\x01"
        "g\x01"
        "2",
        17);
    file += "\xff" + std::string(8, '\0');
    RdbReport r = inspect(file);
    CHECK(r.summary.version == 81);
    CHECK(r.total_keys == 2);
    CHECK(r.kinds.at(keyshift::engine::RdbKind::path_hash).keys == 1);
    std::string text = keyshift::migrate::render_rdb_text(r, "f.rdb", RdbReportDetail::inspect);
    CHECK(text.find("PATH_HASH") != std::string::npos);
    CHECK(text.find("pathhash") != std::string::npos);
    REQUIRE(parse_rdb_target("valkey-9.2") == RdbTarget::valkey_9_2);
    CHECK(judge_target(r, RdbTarget::valkey_9_2, false).verdict == RdbVerdict::loads_as_is);
    auto to90 = judge_target(r, RdbTarget::valkey_9_0, false);
    CHECK(to90.verdict == RdbVerdict::cannot_move);
    CHECK(has(to90.changes, "RDB version 81 -> 80"));
    CHECK(has(to90.blockers, "1 Path Hash keys (Valkey 9.2's type 23): valkey-9.0 has no such"));
    auto to80 = judge_target(r, RdbTarget::valkey_8_0, false);
    CHECK(to80.verdict == RdbVerdict::cannot_move);
    CHECK(has(to80.changes, "RDB version 81 -> 11"));
    // Without the Path Hash the same file only needs its version rewritten for 9.0.
    std::string plain =
        "VALKEY081" + std::string("\x00\x01s\x01v", 5) + "\xff" + std::string(8, '\0');
    RdbReport p = inspect(plain);
    auto plain90 = judge_target(p, RdbTarget::valkey_9_0, false);
    CHECK(plain90.verdict == RdbVerdict::needs_conversion);
    CHECK(has(plain90.changes, "RDB version 81 -> 80"));
    CHECK(judge_target(p, RdbTarget::valkey_9_2, false).verdict == RdbVerdict::loads_as_is);
    // And Redis' files up to 11 load in 9.2 as in 9.0.
    CHECK(judge_target(inspect(load("redis70-strings.rdb").bytes), RdbTarget::valkey_9_2, false)
              .verdict == RdbVerdict::loads_as_is);
  }
}
