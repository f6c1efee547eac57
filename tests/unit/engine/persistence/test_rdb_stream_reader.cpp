#include "tests/unit/test_paths.hpp"

#include "engine/persistence/rdb_reader.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

using keyshift::engine::RdbKey;
using keyshift::engine::RdbReadOptions;
using keyshift::engine::RdbStreamReader;
using keyshift::engine::RdbVisitor;
using keyshift::engine::read_rdb;

namespace {

const std::filesystem::path k_corpus = test::rdb_corpus_dir();

std::string slurp(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

/// Every key and top-level record rendered as text, so two reads compare with one ==.
class Render : public RdbVisitor {
 public:
  explicit Render(const RdbStreamReader* stream = nullptr, bool defer = false)
      : m_stream(stream), m_defer(defer) {}

  void on_aux(std::string_view name, std::string_view value) override {
    text += "aux " + std::string(name) + "=" + std::string(value) + "\n";
  }
  void on_select_db(uint64_t db) override { text += "select " + std::to_string(db) + "\n"; }
  void on_function(std::string_view code) override { text += "function " + std::string(code); }
  void on_module_aux(std::string_view name) override { text += "module aux " + std::string(name); }
  bool defer_value(uint8_t type) override { return m_defer && type != 0; }

  bool on_key(RdbKey& k) override {
    text += "key db" + std::to_string(k.db) + " " + k.key + " at " + std::to_string(k.offset) +
            " ttl " + std::to_string(k.expire_ms) + " idle " + std::to_string(k.idle_s) + " freq " +
            std::to_string(k.freq) + " value " + std::to_string(k.value_offset) + "+" +
            std::to_string(k.value_bytes) + " type " + std::to_string(k.value.rdb_type) + "\n";
    if (k.deferred) {
      if (m_stream != nullptr) {
        // The deferred value's bytes are there to read while the key is handed over.
        std::string_view bytes = m_stream->bytes_at(k.value_offset, k.value_bytes);
        CHECK(bytes.size() == k.value_bytes);
        deferred_bytes += bytes;
      } else {
        deferred_bytes += file.substr(k.value_offset, k.value_bytes);
      }
      return true;
    }
    const auto& v = k.value;
    text += " str " + v.str;
    for (const auto& item : v.items) {
      text += " i " + item;
    }
    for (const auto& [member, score] : v.zset) {
      text += " z " + member + " " + std::to_string(score);
    }
    for (const auto& f : v.hash) {
      text += " h " + f.field + " " + f.value + " " + std::to_string(f.expire_ms);
    }
    text += " nodes " + std::to_string(v.list_nodes.size()) + " entries " +
            std::to_string(v.stream.length) + " groups " + std::to_string(v.stream.groups.size()) +
            "\n";
    return true;
  }

  std::string text;
  std::string deferred_bytes;
  std::string_view file;

 private:
  const RdbStreamReader* m_stream;
  bool m_defer;
};

/// What a whole read gave: the rendering, then the summary or the error.
std::string whole(const std::string& file, bool defer) {
  Render r(nullptr, defer);
  r.file = file;
  RdbReadOptions options;
  auto summary = read_rdb(file, r, options);
  std::string out = r.text + r.deferred_bytes;
  if (!summary) {
    return out + "error at " + std::to_string(summary.error().offset) + ": " +
           summary.error().message;
  }
  return out + "keys " + std::to_string(summary->keys) + " end " +
         std::to_string(summary->end_offset) + " crc " + std::to_string(summary->checksum_verified);
}

/// The same file fed in pieces of random sizes up to `max_piece`.
std::string streamed(const std::string& file, bool defer, size_t max_piece, std::mt19937& rng) {
  RdbReadOptions options;
  Render r(nullptr, defer);
  RdbStreamReader reader(r, options);
  r = Render(&reader, defer);
  std::uniform_int_distribution<size_t> piece(1, max_piece);
  size_t at = 0;
  std::string failure;
  while (at < file.size()) {
    size_t n = std::min(piece(rng), file.size() - at);
    auto fed = reader.feed(std::string_view(file).substr(at, n));
    at += n;
    if (!fed) {
      failure = "error at " + std::to_string(fed.error().offset) + ": " + fed.error().message;
      break;
    }
  }
  if (!failure.empty()) {
    return r.text + r.deferred_bytes + failure;
  }
  auto summary = reader.finish();
  std::string out = r.text + r.deferred_bytes;
  if (!summary) {
    return out + "error at " + std::to_string(summary.error().offset) + ": " +
           summary.error().message;
  }
  return out + "keys " + std::to_string(summary->keys) + " end " +
         std::to_string(summary->end_offset) + " crc " + std::to_string(summary->checksum_verified);
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

}  // namespace

TEST_SUITE("engine::rdb_stream_reader") {
  TEST_CASE("every corpus file fed in random pieces reads as read_rdb reads it whole") {
    auto files = corpus_files();
    REQUIRE_MESSAGE(!files.empty(), "no RDB corpus at ", k_corpus.string());
    std::mt19937 rng(20261202);
    int compared = 0;
    for (const auto& path : files) {
      std::string file = slurp(path);
      for (bool defer : {false, true}) {
        std::string expected = whole(file, defer);
        for (size_t max_piece : {size_t{1}, size_t{7}, size_t{300}, size_t{70000}}) {
          if (max_piece == 1 && file.size() > 200'000) {
            continue;  // byte by byte only for the small files: the same paths, less time
          }
          INFO(path.filename().string(), " defer ", defer, " pieces up to ", max_piece);
          CHECK(streamed(file, defer, max_piece, rng) == expected);
          ++compared;
        }
      }
    }
    MESSAGE("compared ", compared, " streamed reads of ", files.size(), " corpus files");
  }

  TEST_CASE("a file cut short is an error only when the stream ends, at read_rdb's offset") {
    auto files = corpus_files();
    REQUIRE(!files.empty());
    std::string file = slurp(files.front());
    for (const auto& path : files) {
      std::string f = slurp(path);
      if (f.size() > file.size() && f.size() < 100'000) {
        file = f;
      }
    }
    std::string cut = file.substr(0, file.size() * 2 / 3);
    Render r;
    RdbStreamReader reader(r);
    auto fed = reader.feed(cut);
    REQUIRE(fed.has_value());
    CHECK_FALSE(*fed);
    CHECK_FALSE(reader.done());
    auto summary = reader.finish();
    REQUIRE_FALSE(summary.has_value());
    Render w;
    auto expected = read_rdb(cut, w);
    REQUIRE_FALSE(expected.has_value());
    CHECK(summary.error().offset == expected.error().offset);
    CHECK(summary.error().message == expected.error().message);
  }

  TEST_CASE("damage is reported as soon as it is read, not taken for missing bytes") {
    auto files = corpus_files();
    REQUIRE(!files.empty());
    std::string file;
    for (const auto& path : files) {
      std::string f = slurp(path);
      if (f.size() > 1000 && f.starts_with("REDIS0009")) {
        file = f;
        break;
      }
    }
    REQUIRE(!file.empty());
    std::string bad = file;
    bad[bad.size() - 3] = static_cast<char>(bad[bad.size() - 3] ^ 0x5A);  // in the CRC64
    Render w;
    auto expected = read_rdb(bad, w);
    REQUIRE_FALSE(expected.has_value());
    Render r;
    RdbStreamReader reader(r);
    auto fed = reader.feed(bad);
    REQUIRE_FALSE(fed.has_value());
    CHECK(fed.error().offset == expected.error().offset);
    CHECK(fed.error().message == expected.error().message);
  }
}
