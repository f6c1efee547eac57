#include "tests/unit/engine/corpus_json.hpp"
#include "tests/unit/test_paths.hpp"

#include "engine/ds/intset.hpp"
#include "engine/ds/listpack.hpp"
#include "engine/engine.hpp"
#include "engine/persistence/rdb_load.hpp"
#include "engine/persistence/rdb_writer.hpp"
#include "engine/util/clock.hpp"
#include "engine/util/mapped_file.hpp"

#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

using keyshift::engine::EnableMode;
using keyshift::engine::Engine;
using keyshift::engine::EngineConfig;
using keyshift::engine::Intset;
using keyshift::engine::Listpack;
using keyshift::engine::load_rdb;
using keyshift::engine::ManualClock;
using keyshift::engine::MappedFile;
using keyshift::engine::RdbLoadOptions;
using keyshift::engine::RdbWriteOptions;
using keyshift::engine::RespValue;
using keyshift::engine::save_rdb;
using keyshift::engine::Session;
using keyshift::test::decode_bytes;
using keyshift::test::from_hex;
using keyshift::test::Json;
using keyshift::test::JsonReader;
using keyshift::test::read_file;

namespace {

const std::filesystem::path k_corpus = test::rdb_corpus_dir();

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

/// Every key of the current database with its encoding and digest, sorted by key.
std::vector<std::string> describe_keys(Loaded& l) {
  std::vector<std::string> out;
  for (const RespValue& k : l.run({"KEYS", "*"}).elements) {
    RespValue d = l.run({"DEBUG", "DIGEST-VALUE", k.str});
    out.push_back(k.str + " " + l.run({"OBJECT", "ENCODING", k.str}).str + " " +
                  (d.elements.empty() ? std::string() : d.elements[0].str) + " " +
                  std::to_string(l.run({"PEXPIRETIME", k.str}).integer));
  }
  std::sort(out.begin(), out.end());
  return out;
}

/// Fills two databases with a few thousand keys of every type, small and large, so that the
/// file is well over the size from which a load reads on a second thread.
void fill_big(Loaded& l) {
  for (int db : {0, 2}) {
    l.run({"SELECT", std::to_string(db)});
    for (int i = 0; i < 4000; ++i) {
      std::string n = std::to_string(i);
      l.run({"SET", "s:" + n, "value " + n + std::string(static_cast<size_t>(i % 300), 'v')});
      l.run({"SET", "i:" + n, std::to_string(i * 7919)});
      l.run({"RPUSH", "l:" + n, "a" + n, n, "-" + n, "tail"});
      l.run({"SADD", "si:" + n, n, "7", "-3"});
      l.run({"SADD", "ss:" + n, "m" + n, "x", "y"});
      l.run({"HSET", "h:" + n, "f", n, "g", "text " + n});
      l.run({"ZADD", "z:" + n, "1.5", "a", std::to_string(i), "b", "-2", "c" + n});
      if (i % 5 == 0) {
        l.run({"PEXPIREAT", "s:" + n, std::to_string(k_now_ms + 1000 * i + 1)});
      }
    }
    std::vector<std::string> hash{"HSET", "big:hash"};
    std::vector<std::string> zset{"ZADD", "big:zset"};
    std::vector<std::string> set{"SADD", "big:set"};
    std::vector<std::string> list{"RPUSH", "big:list"};
    for (int i = 0; i < 700; ++i) {
      std::string n = std::to_string(i);
      hash.insert(hash.end(), {"field" + n, "value" + n});
      zset.insert(zset.end(), {std::to_string(i % 97) + ".25", "member" + n});
      set.push_back("member" + n);
      list.insert(list.end(), {"element" + n, "e" + n, n});
    }
    l.run(hash);
    l.run(zset);
    l.run(set);
    l.run(list);
  }
  l.run({"SELECT", "0"});
}

/// A directory removed at the end of the test.
struct TempDir {
  std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("ks-load-" + std::to_string(::getpid()));
  TempDir() { std::filesystem::create_directories(path); }
  ~TempDir() { std::filesystem::remove_all(path); }
};

/// An RDB string of up to 16383 raw bytes.
std::string rdb_string(std::string_view s) {
  std::string out;
  if (s.size() < 64) {
    out.push_back(static_cast<char>(s.size()));
  } else {
    out.push_back(static_cast<char>(0x40 | (s.size() >> 8)));
    out.push_back(static_cast<char>(s.size() & 0xFF));
  }
  out.append(s);
  return out;
}

/// A version-11 file of `records` (type byte, key, value) with the checksum disabled.
std::string rdb_file(const std::vector<std::string>& records) {
  std::string out = "REDIS0011";
  for (const std::string& r : records) {
    out += r;
  }
  out.push_back('\xff');
  out.append(8, '\0');
  return out;
}

std::string listpack_of(const std::vector<std::string>& elements) {
  Listpack lp;
  for (const std::string& e : elements) {
    lp.append(e);
  }
  return std::string(lp.data());
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

  TEST_CASE("every file Redis 7.4 loads with field TTLs gives Redis 7.4's digests") {
    int files = 0;
    int hashes = 0;
    for (const auto& entry : std::filesystem::directory_iterator(k_corpus)) {
      if (entry.path().extension() != ".rdb") {
        continue;
      }
      Json doc = JsonReader(read_file(entry.path().string() + ".json")).parse();
      const Json* truth = server_keys(doc, "redis-7.4.1");
      if (truth == nullptr ||
          std::none_of(truth->items.begin(), truth->items.end(),
                       [](const Json& t) { return t.find("field_ttls") != nullptr; })) {
        continue;
      }
      CAPTURE(entry.path().filename().string());
      Loaded l;
      auto stats = load_rdb(l.engine, read_file(entry.path()));
      REQUIRE_MESSAGE(stats.has_value(), stats.error().message, " at ", stats.error().offset);
      ++files;
      for (const Json& t : truth->items) {
        std::string key = key_of(t);
        CAPTURE(key);
        l.run({"SELECT", t.at("db").text});
        RespValue digest = l.run({"DEBUG", "DIGEST-VALUE", key});
        REQUIRE(digest.elements.size() == 1);
        CHECK(digest.elements[0].str == t.at("digest_value").text);
        hashes += t.find("field_ttls") != nullptr ? 1 : 0;
      }
      CHECK(l.run({"DEBUG", "DIGEST"}).str ==
            doc.at("servers").at("redis-7.4.1").at("digest").text);
    }
    MESSAGE(files, " files with field TTLs, ", hashes, " such hashes match Redis 7.4");
    CHECK(files >= 1);
    CHECK(hashes >= 7);
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

  TEST_CASE("a file big enough to be read on a second thread loads like the engine it came from") {
    Loaded a;
    fill_big(a);
    TempDir dir;
    std::string path = (dir.path / "big.rdb").string();
    auto saved = save_rdb(a.engine, path, RdbWriteOptions{});
    REQUIRE_MESSAGE(saved.has_value(), saved.error());
    auto file = MappedFile::open(path);
    REQUIRE(file.has_value());
    REQUIRE(file->data().size() > (size_t{3} << 19));  // well above the threaded load's 1 MiB

    Loaded b;
    auto stats = load_rdb(b.engine, file->data());
    REQUIRE_MESSAGE(stats.has_value(), stats.error().message, " at ", stats.error().offset);
    CHECK(stats->keys_loaded == saved->keys);
    CHECK(stats->summary.checksum_verified);
    CHECK(b.run({"DEBUG", "DIGEST"}).str == a.run({"DEBUG", "DIGEST"}).str);
    for (const char* db : {"0", "2"}) {
      a.run({"SELECT", db});
      b.run({"SELECT", db});
      CHECK(describe_keys(b) == describe_keys(a));
    }

    // A second load into the same engine stops at the first key, a duplicate, and names it.
    auto again = load_rdb(b.engine, file->data());
    REQUIRE_FALSE(again.has_value());
    CHECK(again.error().message.find("duplicate key") != std::string::npos);
    CHECK(again.error().offset > 9);
    CHECK(b.run({"DEBUG", "DIGEST"}).str == a.run({"DEBUG", "DIGEST"}).str);

    // A file cut short fails at the cut with the keys before it loaded.
    Loaded c;
    size_t cut = file->data().size() / 2;
    auto cut_short = load_rdb(c.engine, file->data().substr(0, cut));
    REQUIRE_FALSE(cut_short.has_value());
    CHECK(cut_short.error().offset <= cut);
    CHECK(cut_short.error().message.find("unexpected end of data") != std::string::npos);
    CHECK(c.run({"DBSIZE"}).integer > 0);
  }

  TEST_CASE("values read by the inserting thread load and fail exactly as the reader's own") {
    Loaded a;
    fill_big(a);
    TempDir dir;
    std::string path = (dir.path / "big.rdb").string();
    auto saved = save_rdb(a.engine, path, RdbWriteOptions{});
    REQUIRE_MESSAGE(saved.has_value(), saved.error());
    auto file = MappedFile::open(path);
    REQUIRE(file.has_value());
    std::string bytes(file->data());

    auto load = [&](std::string_view data, RdbLoadOptions::Share share, Loaded& into) {
      RdbLoadOptions options;
      options.share = share;
      return load_rdb(into.engine, data, options);
    };
    // Half the TTLs have passed by the time of this load: expired keys are dropped in both.
    Loaded reader_side;
    Loaded inserter_side;
    reader_side.clock.advance_ms(2'000'000);
    inserter_side.clock.advance_ms(2'000'000);
    auto r = load(bytes, RdbLoadOptions::Share::never, reader_side);
    auto i = load(bytes, RdbLoadOptions::Share::always, inserter_side);
    REQUIRE_MESSAGE(r.has_value(), r.error().message);
    REQUIRE_MESSAGE(i.has_value(), i.error().message);
    CHECK(i->keys_loaded == r->keys_loaded);
    CHECK(i->expired_skipped == r->expired_skipped);
    CHECK(r->expired_skipped > 0);
    for (const char* db : {"0", "2"}) {
      reader_side.run({"SELECT", db});
      inserter_side.run({"SELECT", db});
      CHECK(describe_keys(inserter_side) == describe_keys(reader_side));
    }

    // The file's last hash listpack broken: the same error at the same byte either way.
    struct Finder : keyshift::engine::RdbVisitor {
      uint64_t end = 0;
      bool on_key(keyshift::engine::RdbKey& k) override {
        if (k.value.rdb_type == 16) {
          end = k.value_offset + k.value_bytes;  // a hash listpack: its last byte is 0xFF
        }
        return true;
      }
    } finder;
    REQUIRE(keyshift::engine::read_rdb(bytes, finder).has_value());
    REQUIRE(finder.end > bytes.size() / 2);
    std::string broken = bytes;
    REQUIRE(broken[finder.end - 1] == '\xff');
    broken[finder.end - 1] = '\x00';
    Loaded r2;
    Loaded i2;
    auto re = load(broken, RdbLoadOptions::Share::never, r2);
    auto ie = load(broken, RdbLoadOptions::Share::always, i2);
    REQUIRE_FALSE(re.has_value());
    REQUIRE_FALSE(ie.has_value());
    CHECK(ie.error().offset == re.error().offset);
    CHECK(ie.error().message == re.error().message);
    CHECK(re.error().message.find("listpack") != std::string::npos);

    // An LZF string whose key has a TTL, read when that TTL has passed: the inserting side
    // still reads the expired value, and fails on it as the reader does.
    struct LzfFinder : keyshift::engine::RdbVisitor {
      std::string_view file;
      uint64_t ulen_low = 0;  // the last byte of the uncompressed-length field
      bool on_key(keyshift::engine::RdbKey& k) override {
        auto byte = [&](uint64_t at) { return static_cast<uint8_t>(file[at]); };
        uint64_t at = k.value_offset;
        if (k.expire_ms < 0 || k.value.rdb_type != 0 || byte(at) != 0xC3) {
          return true;
        }
        ++at;  // past the LZF marker: the compressed, then the uncompressed length
        at += (byte(at) >> 6) == 0 ? 1 : (byte(at) >> 6) == 1 ? 2 : 0;
        if ((byte(at) >> 6) == 1) {
          ulen_low = at + 1;
        }
        return true;
      }
    } lzf;
    lzf.file = bytes;
    REQUIRE(keyshift::engine::read_rdb(bytes, lzf).has_value());
    REQUIRE(lzf.ulen_low > 0);
    std::string bad_lzf = bytes;
    bad_lzf[lzf.ulen_low] = static_cast<char>(bad_lzf[lzf.ulen_low] + 1);
    Loaded r3;
    Loaded i3;
    r3.clock.advance_ms(int64_t{1} << 40);  // every TTL has passed
    i3.clock.advance_ms(int64_t{1} << 40);
    auto rl = load(bad_lzf, RdbLoadOptions::Share::never, r3);
    auto il = load(bad_lzf, RdbLoadOptions::Share::always, i3);
    REQUIRE_FALSE(rl.has_value());
    REQUIRE_FALSE(il.has_value());
    CHECK(il.error().offset == rl.error().offset);
    CHECK(il.error().message == rl.error().message);
    CHECK(rl.error().message.find("LZF") != std::string::npos);
  }

  TEST_CASE("listpack and intset blocks are taken as they are, within the encoding limits") {
    // A set listpack of integers stays a listpack (Valkey's RDB_TYPE_SET_LISTPACK load does
    // not turn it into an intset); a hash listpack keeps its field order.
    std::string set_lp = listpack_of({"3", "1", "2"});
    std::string hash_lp = listpack_of({"b", "2", "a", "1"});
    Intset ints;
    for (int64_t v : {5, -1, 70000}) {
      ints.insert(v);
    }
    std::vector<std::string> list_nodes{listpack_of({"x", "y"}), listpack_of({"z"})};
    std::string quicklist = "\x02";
    for (const std::string& node : list_nodes) {
      quicklist += "\x02" + rdb_string(node);  // container 2: a packed listpack node
    }
    std::string bytes =
        rdb_file({"\x14" + rdb_string("set") + rdb_string(set_lp),
                  "\x10" + rdb_string("hash") + rdb_string(hash_lp),
                  "\x0b" + rdb_string("ints") + rdb_string(ints.blob()),
                  "\x12" + rdb_string("list") + quicklist,
                  "\x14" + rdb_string("repeats") + rdb_string(listpack_of({"a", "b", "a"})),
                  "\x10" + rdb_string("field-twice") +
                      rdb_string(listpack_of({"f", "1", "g", "2", "f", "3"}))});
    Loaded l;
    auto stats = load_rdb(l.engine, bytes);
    REQUIRE_MESSAGE(stats.has_value(), stats.error().message, " at ", stats.error().offset);
    CHECK(l.run({"OBJECT", "ENCODING", "set"}).str == "listpack");
    CHECK(l.run({"SCARD", "set"}).integer == 3);
    CHECK(l.run({"SISMEMBER", "set", "2"}).integer == 1);
    CHECK(l.run({"OBJECT", "ENCODING", "hash"}).str == "listpack");
    RespValue keys = l.run({"HKEYS", "hash"});
    REQUIRE(keys.elements.size() == 2);
    CHECK(keys.elements[0].str == "b");
    CHECK(l.run({"OBJECT", "ENCODING", "ints"}).str == "intset");
    CHECK(l.run({"SISMEMBER", "ints", "70000"}).integer == 1);
    CHECK(l.run({"OBJECT", "ENCODING", "list"}).str == "quicklist");
    CHECK(l.run({"LRANGE", "list", "0", "-1"}).elements.size() == 3);
    CHECK(l.run({"LINDEX", "list", "2"}).str == "z");
    // Repeated members or fields are dropped as the element-by-element build always did.
    CHECK(l.run({"SCARD", "repeats"}).integer == 2);
    CHECK(l.run({"HLEN", "field-twice"}).integer == 2);
    CHECK(l.run({"HGET", "field-twice", "f"}).str == "3");

    // Over the configured limits, as Valkey's load: a table.
    Loaded small;
    small.run({"CONFIG", "SET", "set-max-intset-entries", "2"});
    small.run({"CONFIG", "SET", "set-max-listpack-entries", "2"});
    small.run({"CONFIG", "SET", "hash-max-listpack-entries", "1"});
    stats = load_rdb(small.engine, bytes);
    REQUIRE(stats.has_value());
    CHECK(small.run({"OBJECT", "ENCODING", "set"}).str == "hashtable");
    CHECK(small.run({"OBJECT", "ENCODING", "ints"}).str == "hashtable");
    CHECK(small.run({"OBJECT", "ENCODING", "hash"}).str == "hashtable");
    CHECK(small.run({"HGET", "hash", "a"}).str == "1");
    CHECK(small.run({"SISMEMBER", "ints", "-1"}).integer == 1);

    // A corrupt block is refused with its offset, as before.
    std::string bad_lp = set_lp;
    bad_lp[bad_lp.size() - 2] = '\x7f';  // the last entry's backlen
    auto bad = load_rdb(l.engine, rdb_file({"\x14" + rdb_string("bad") + rdb_string(bad_lp)}));
    REQUIRE_FALSE(bad.has_value());
    CHECK(bad.error().message.find("invalid listpack") != std::string::npos);
    CHECK(bad.error().offset == 9 + 1 + 4);
  }

  TEST_CASE("repeated members are found in listpacks of every size, integers and text alike") {
    // 40 and 300 members: the hashed check and the sorted one for oversized listpacks.
    for (size_t size : {size_t{40}, size_t{300}}) {
      CAPTURE(size);
      std::vector<std::string> distinct;
      for (size_t i = 0; i < size; ++i) {
        distinct.push_back(i % 2 == 0 ? std::to_string(i * 7) : "m" + std::to_string(i));
      }
      std::vector<std::string> repeated = distinct;
      repeated.push_back(std::to_string((size / 2) * 7));  // an integer seen before
      std::vector<std::string> text_repeat = distinct;
      text_repeat.push_back("m1");
      std::string bytes =
          rdb_file({"\x14" + rdb_string("distinct") + rdb_string(listpack_of(distinct)),
                    "\x14" + rdb_string("int-twice") + rdb_string(listpack_of(repeated)),
                    "\x14" + rdb_string("text-twice") + rdb_string(listpack_of(text_repeat))});
      Loaded l;
      l.run({"CONFIG", "SET", "set-max-listpack-entries", "1000"});
      auto stats = load_rdb(l.engine, bytes);
      REQUIRE_MESSAGE(stats.has_value(), stats.error().message);
      CHECK(l.run({"SCARD", "distinct"}).integer == static_cast<int64_t>(size));
      CHECK(l.run({"SCARD", "int-twice"}).integer == static_cast<int64_t>(size));
      CHECK(l.run({"SCARD", "text-twice"}).integer == static_cast<int64_t>(size));
    }
  }

  TEST_CASE("a sorted-set listpack is taken as it is only when ordered and without repeats") {
    std::string bytes = rdb_file(
        {"\x11" + rdb_string("ordered") + rdb_string(listpack_of({"a", "1", "b", "1.5", "c", "7"})),
         "\x11" + rdb_string("ties") + rdb_string(listpack_of({"x", "2", "y", "2", "10", "3"})),
         "\x11" + rdb_string("unordered") + rdb_string(listpack_of({"b", "5", "a", "1"})),
         "\x11" + rdb_string("member-twice") +
             rdb_string(listpack_of({"m", "1", "n", "2", "m", "3"})),
         "\x11" + rdb_string("big") +
             rdb_string(listpack_of({"p", "1", "q", "2", "r", "3", "s", "4"}))});
    Loaded l;
    l.run({"CONFIG", "SET", "zset-max-listpack-entries", "3"});
    auto stats = load_rdb(l.engine, bytes);
    REQUIRE_MESSAGE(stats.has_value(), stats.error().message, " at ", stats.error().offset);
    CHECK(l.run({"OBJECT", "ENCODING", "ordered"}).str == "listpack");
    CHECK(l.run({"ZSCORE", "ordered", "b"}).str == "1.5");
    CHECK(l.run({"ZRANK", "ties", "10"}).integer == 2);
    RespValue unordered = l.run({"ZRANGE", "unordered", "0", "-1"});
    REQUIRE(unordered.elements.size() == 2);
    CHECK(unordered.elements[0].str == "a");
    CHECK(l.run({"ZCARD", "member-twice"}).integer == 2);
    // The build adds a listpack's members back to front: the first one in the file wins.
    CHECK(l.run({"ZSCORE", "member-twice", "m"}).str == "1");
    // Over zset-max-listpack-entries, as Valkey's load: a skiplist in score order.
    CHECK(l.run({"OBJECT", "ENCODING", "big"}).str == "skiplist");
    RespValue big = l.run({"ZRANGE", "big", "0", "-1", "WITHSCORES"});
    REQUIRE(big.elements.size() == 8);
    CHECK(big.elements[0].str == "p");
    CHECK(big.elements[7].str == "4");
    // A score that is not a number is refused with the blob's offset.
    auto bad = load_rdb(
        l.engine, rdb_file({"\x11" + rdb_string("bad") + rdb_string(listpack_of({"a", "one"}))}));
    REQUIRE_FALSE(bad.has_value());
    CHECK(bad.error().message.find("invalid score 'one'") != std::string::npos);
  }

  TEST_CASE("field TTLs go to Valkey 9's format as HASH_2 and load back with their TTLs") {
    Loaded a;
    const int64_t when = k_now_ms + 86'400'000;
    a.run({"HSET", "hf", "f", "1", "g", "2"});
    a.run({"HPEXPIREAT", "hf", std::to_string(when), "FIELDS", "1", "g"});
    a.run({"HSET", "plain", "f", "1"});
    a.run({"SADD", "set", "a", "b"});
    TempDir dir;
    std::string path = (dir.path / "v9.rdb").string();
    RdbWriteOptions options;
    options.version = 80;
    auto saved = save_rdb(a.engine, path, options);
    REQUIRE_MESSAGE(saved.has_value(), saved.error());
    auto file = MappedFile::open(path);
    REQUIRE(file.has_value());
    std::string_view bytes = file->data();
    CHECK(bytes.substr(0, 9) == "VALKEY080");
    // Type 22 (Valkey's HASH_2), the key, two fields; the others keep RDB 11's types.
    CHECK(bytes.find(std::string("\x16\x02hf\x02", 5)) != std::string_view::npos);
    CHECK(bytes.find(std::string("\x10\x05plain", 7)) != std::string_view::npos);
    Loaded b;
    auto loaded = load_rdb(b.engine, bytes);
    REQUIRE_MESSAGE(loaded.has_value(), loaded.error().message);
    CHECK(loaded->summary.version == 80);
    CHECK(b.run({"DEBUG", "DIGEST"}).str == a.run({"DEBUG", "DIGEST"}).str);
    RespValue ttl = b.run({"HPEXPIRETIME", "hf", "FIELDS", "2", "f", "g"});
    REQUIRE(ttl.elements.size() == 2);
    CHECK(ttl.elements[0].integer == -1);
    CHECK(ttl.elements[1].integer == when);
  }

  TEST_CASE("Valkey 9.2's RDB 81 is written as VALKEY081 and loads back like RDB 80") {
    Loaded a;
    const int64_t when = k_now_ms + 86'400'000;
    a.run({"HSET", "hf", "f", "1", "g", "2"});
    a.run({"HPEXPIREAT", "hf", std::to_string(when), "FIELDS", "1", "g"});
    a.run({"RPUSH", "l", "a", "b"});
    a.run({"XADD", "x", "1-1", "f", "v"});
    TempDir dir;
    std::string path = (dir.path / "v92.rdb").string();
    RdbWriteOptions options;
    options.version = 81;
    auto saved = save_rdb(a.engine, path, options);
    REQUIRE_MESSAGE(saved.has_value(), saved.error());
    auto file = MappedFile::open(path);
    REQUIRE(file.has_value());
    std::string_view bytes = file->data();
    CHECK(bytes.substr(0, 9) == "VALKEY081");
    CHECK(bytes.find("valkey-ver\x05"
                     "9.2.0") != std::string_view::npos);
    CHECK(bytes.find(std::string("\x16\x02hf\x02", 5)) != std::string_view::npos);
    Loaded b;
    auto loaded = load_rdb(b.engine, bytes);
    REQUIRE_MESSAGE(loaded.has_value(), loaded.error().message);
    CHECK(loaded->summary.version == 81);
    CHECK(b.run({"DEBUG", "DIGEST"}).str == a.run({"DEBUG", "DIGEST"}).str);
    options.version = 82;
    auto refused = save_rdb(a.engine, path, options);
    REQUIRE_FALSE(refused.has_value());
    CHECK(refused.error() == "cannot write RDB version 82 (10, 11, 12, 80 or 81)");
  }

  TEST_CASE("a Path Hash fails a load naming its key, or is skipped and counted when asked") {
    // VALKEY081 with a string and a Path Hash (type 23: one path, one field), no checksum.
    std::string file = "VALKEY081";
    file += std::string(1, '\0') + rdb_string("s") + rdb_string("v");
    file += "\x17" + rdb_string("ph") + "\x01" + rdb_string("/a") + "\x01" + rdb_string("f") +
            rdb_string("v");
    file += "\xff" + std::string(8, '\0');
    Loaded l;
    auto failed = load_rdb(l.engine, file);
    REQUIRE_FALSE(failed.has_value());
    CHECK(failed.error().message.find("ph") != std::string::npos);
    CHECK(failed.error().message.find("a Path Hash (Valkey 9.2's type 23) has no keyshift type") !=
          std::string::npos);
    CHECK(failed.error().offset == 9 + 5);  // the Path Hash's type byte
    Loaded k;
    RdbLoadOptions skip;
    skip.skip_unsupported = true;
    auto stats = load_rdb(k.engine, file, skip);
    REQUIRE_MESSAGE(stats.has_value(), stats.error().message);
    CHECK(stats->keys_loaded == 1);
    CHECK(stats->skipped_unsupported == 1);
    CHECK(k.run({"EXISTS", "ph"}).integer == 0);
  }
}
