#include "tests/unit/engine/corpus_json.hpp"

#include "engine/engine.hpp"
#include "engine/persistence/rdb_load.hpp"
#include "engine/util/clock.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

using keyshift::engine::EnableMode;
using keyshift::engine::Engine;
using keyshift::engine::EngineConfig;
using keyshift::engine::load_rdb;
using keyshift::engine::ManualClock;
using keyshift::engine::RdbLoadOptions;
using keyshift::engine::RespValue;
using keyshift::engine::Session;
using keyshift::test::decode_bytes;
using keyshift::test::from_hex;
using keyshift::test::Json;
using keyshift::test::JsonReader;
using keyshift::test::read_file;

namespace {

const std::filesystem::path k_corpus = std::filesystem::path(KEYSHIFT_SHARED_DIR) / "corpus/rdb";

// After the corpus was written (late 2026) and before its far-future TTLs (2100).
constexpr int64_t k_now_ms = 1'800'000'000'000;

struct Loaded {
  ManualClock clock{k_now_ms};
  Engine engine;
  Session& session;

  Loaded() : engine(config(), clock), session(engine.open_session(nullptr)) {}
  static EngineConfig config() {
    EngineConfig c;
    c.enable_debug_command = EnableMode::yes;
    return c;
  }
  RespValue run(std::vector<std::string> argv) {
    std::vector<std::string_view> views(argv.begin(), argv.end());
    return engine.run(session, views);
  }
};

const Json* server_keys(const Json& doc, std::string_view server) {
  const Json* s = doc.at("servers").find(server);
  if (s == nullptr || s->find("loaded") == nullptr || s->at("loaded").text != "true") {
    return nullptr;
  }
  return s->find("keys");
}

std::string key_of(const Json& t) {
  std::string key;
  if (t.at("key_is_hex").text == "true") {
    return from_hex(t.at("key").text);
  }
  REQUIRE(decode_bytes(t.at("key"), key));
  return key;
}

/// A ground-truth JSON value as one comparable string.
std::string canonical(const Json& j) {
  switch (j.kind) {
    case Json::Kind::null:
      return "null";
    case Json::Kind::array: {
      std::string out = "[";
      for (const Json& i : j.items) {
        out += (out.size() > 1 ? "," : "") + canonical(i);
      }
      return out + "]";
    }
    case Json::Kind::object: {
      std::string bytes;
      if (j.find("hex") != nullptr && decode_bytes(j, bytes)) {
        return bytes;  // a binary string, written as {"hex": ...}
      }
      std::string out = "{";
      for (const auto& [k, v] : j.fields) {
        out += (out.size() > 1 ? "," : "") + k + ":" + canonical(v);
      }
      return out + "}";
    }
    default:
      return j.text;
  }
}

/// A RESP3 reply in the same form as canonical(Json).
std::string canonical(const RespValue& v) {
  switch (v.type) {
    case RespValue::Type::null:
      return "null";
    case RespValue::Type::integer:
      return std::to_string(v.integer);
    case RespValue::Type::array: {
      std::string out = "[";
      for (const RespValue& i : v.elements) {
        out += (out.size() > 1 ? "," : "") + canonical(i);
      }
      return out + "]";
    }
    case RespValue::Type::map: {
      std::string out = "{";
      for (size_t i = 0; i + 1 < v.elements.size(); i += 2) {
        out += (out.size() > 1 ? "," : "") + v.elements[i].str + ":" + canonical(v.elements[i + 1]);
      }
      return out + "}";
    }
    default:
      return v.str;
  }
}

}  // namespace

TEST_SUITE("engine::rdb_load") {
  TEST_CASE("every stream Valkey 8 loads shows Valkey's XINFO STREAM FULL after loading") {
    int streams = 0;
    for (const auto& entry : std::filesystem::directory_iterator(k_corpus)) {
      if (entry.path().extension() != ".rdb") {
        continue;
      }
      Json doc = JsonReader(read_file(entry.path().string() + ".json")).parse();
      const Json* truth = server_keys(doc, "valkey-8.0.1");
      if (truth == nullptr) {
        continue;
      }
      CAPTURE(entry.path().filename().string());
      Loaded l;
      RdbLoadOptions options;
      options.skip_unsupported = true;
      REQUIRE(load_rdb(l.engine, read_file(entry.path()), options).has_value());
      l.session.resp = 3;
      for (const Json& t : truth->items) {
        if (t.at("type").text != "stream") {
          continue;
        }
        std::string key = key_of(t);
        CAPTURE(key);
        l.run({"SELECT", t.at("db").text});
        RespValue full = l.run({"XINFO", "STREAM", key, "FULL", "COUNT", "0"});
        CHECK(canonical(full) == canonical(t.at("value")));
        ++streams;
      }
    }
    MESSAGE(streams, " streams match Valkey's XINFO STREAM FULL");
    CHECK(streams >= 20);
  }

  TEST_CASE("every file Valkey 8 loads gives Valkey's digests, encodings and TTLs per key") {
    int files = 0;
    int keys = 0;
    int streams = 0;
    for (const auto& entry : std::filesystem::directory_iterator(k_corpus)) {
      if (entry.path().extension() != ".rdb") {
        continue;
      }
      Json doc = JsonReader(read_file(entry.path().string() + ".json")).parse();
      const Json* truth = server_keys(doc, "valkey-8.0.1");
      if (truth == nullptr) {
        continue;
      }
      CAPTURE(entry.path().filename().string());
      Loaded l;
      RdbLoadOptions options;
      options.skip_unsupported = true;  // module values: the engine cannot hold them
      auto stats = load_rdb(l.engine, read_file(entry.path()), options);
      REQUIRE_MESSAGE(stats.has_value(), stats.error().message, " at ", stats.error().offset);
      ++files;
      for (const Json& t : truth->items) {
        std::string type = t.at("type").text;
        if (type == "none") {
          continue;
        }
        streams += type == "stream" ? 1 : 0;
        std::string key = key_of(t);
        CAPTURE(key);
        std::string db = t.at("db").text;
        l.run({"SELECT", db});
        RespValue digest = l.run({"DEBUG", "DIGEST-VALUE", key});
        REQUIRE(digest.elements.size() == 1);
        CHECK(digest.elements[0].str == t.at("digest_value").text);
        CHECK(l.run({"OBJECT", "ENCODING", key}).str == t.at("encoding").text);
        CHECK(l.run({"PEXPIRETIME", key}).integer == std::stoll(t.at("pexpiretime").text));
        ++keys;
      }
    }
    MESSAGE("loaded ", files, " files; ", keys, " keys match Valkey 8 (", streams, " streams)");
    CHECK(files >= 20);
    CHECK(streams >= 20);
  }

  TEST_CASE("a Redis 7.4 dump with field TTLs loads with its field TTLs") {
    std::filesystem::path file = k_corpus / "redis74-hash-field-ttl.rdb";
    Json doc = JsonReader(read_file(file.string() + ".json")).parse();
    const Json* truth = server_keys(doc, "redis-7.4.1");
    REQUIRE(truth != nullptr);
    Loaded l;
    auto stats = load_rdb(l.engine, read_file(file));
    REQUIRE(stats.has_value());
    int fields = 0;
    for (const Json& t : truth->items) {
      std::string key = key_of(t);
      CAPTURE(key);
      CHECK(l.run({"HLEN", key}).integer == static_cast<int64_t>(t.at("value").items.size()));
      const Json* ttls = t.find("field_ttls");
      if (ttls == nullptr) {
        continue;
      }
      for (const Json& ft : ttls->items) {
        std::string field;
        REQUIRE(decode_bytes(ft.at("field"), field));
        RespValue r = l.run({"HPEXPIRETIME", key, "FIELDS", "1", field});
        REQUIRE(r.elements.size() == 1);
        CHECK(r.elements[0].integer == std::stoll(ft.at("hpexpiretime").text));
        ++fields;
      }
    }
    CHECK(fields > 600);
  }

  TEST_CASE("streams load with their metadata, groups, pending entries and consumers") {
    for (const char* name : {"valkey8-streams.rdb", "redis70-streams.rdb", "redis74-streams.rdb"}) {
      CAPTURE(name);
      std::filesystem::path file = k_corpus / name;
      Json doc = JsonReader(read_file(file.string() + ".json")).parse();
      Loaded l;
      auto stats = load_rdb(l.engine, read_file(file));
      REQUIRE_MESSAGE(stats.has_value(), stats.error().message);
      int groups = 0;
      for (const Json& k : doc.at("structure").at("keys").items) {
        std::string key = key_of(k);
        CAPTURE(key);
        const Json& d = k.at("detail");
        RespValue info = l.run({"XINFO", "STREAM", key});
        REQUIRE(info.elements.size() >= 20);
        auto field = [&](std::string_view f) -> const RespValue& {
          for (size_t i = 0; i + 1 < info.elements.size(); i += 2) {
            if (info.elements[i].str == f) {
              return info.elements[i + 1];
            }
          }
          FAIL("no field " << f);
          return info.elements[0];
        };
        CHECK(field("length").integer == std::stoll(d.at("length").text));
        CHECK(field("last-generated-id").str == d.at("last_id").text);
        CHECK(field("max-deleted-entry-id").str == d.at("max_deleted_entry_id").text);
        CHECK(field("entries-added").integer == std::stoll(d.at("entries_added").text));
        CHECK(field("recorded-first-entry-id").str == d.at("first_id").text);
        CHECK(field("groups").integer == static_cast<int64_t>(d.at("groups").items.size()));
        groups += static_cast<int>(d.at("groups").items.size());
      }
      CHECK(groups >= 3);
    }
  }

  TEST_CASE("keys already expired on disk are skipped, and a duplicate key fails") {
    Loaded l;
    auto bytes = read_file(k_corpus / "valkey8-expire-multidb.rdb");
    RdbLoadOptions options;
    options.skip_unsupported = true;
    auto first = load_rdb(l.engine, bytes, options);
    REQUIRE(first.has_value());
    CHECK(first->keys_loaded > 0);
    auto again = load_rdb(l.engine, bytes, options);
    REQUIRE_FALSE(again.has_value());
    CHECK(again.error().message.find("duplicate key") != std::string::npos);

    ManualClock late(4'200'000'000'000);  // after 2100: the absolute TTLs have passed
    Engine engine(EngineConfig{}, late);
    auto stats = load_rdb(engine, bytes, options);
    REQUIRE(stats.has_value());
    CHECK(stats->expired_skipped > 0);
    CHECK(stats->keys_loaded + stats->expired_skipped + stats->skipped_unsupported ==
          stats->summary.keys);
  }
}
