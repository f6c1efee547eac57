#include "engine/repl/repl_stream.hpp"

#include <doctest/doctest.h>

#include <optional>
#include <random>
#include <string>
#include <vector>

using keyshift::engine::ReplStreamHandler;
using keyshift::engine::ReplStreamParser;

namespace {

/// Records everything the parser hands over.
class Record : public ReplStreamHandler {
 public:
  void on_keepalive() override { ++keepalives; }
  bool on_payload_begin(std::optional<uint64_t> size) override {
    began = true;
    declared = size;
    return true;
  }
  bool on_payload(std::string_view bytes) override {
    CHECK_FALSE(ended);
    payload += bytes;
    return true;
  }
  bool on_payload_end() override {
    ended = true;
    return true;
  }
  bool on_command(std::span<const std::string_view> argv, uint64_t offset) override {
    std::string text;
    for (std::string_view a : argv) {
      text += (text.empty() ? "" : " ") + std::string(a);
    }
    commands.push_back(text);
    offsets.push_back(offset);
    return pause_after == 0 || commands.size() % pause_after != 0;
  }
  void on_stream_bytes(std::string_view bytes) override { raw += bytes; }

  int keepalives = 0;
  bool began = false;
  bool ended = false;
  std::optional<uint64_t> declared;
  std::string payload;
  std::vector<std::string> commands;
  std::vector<uint64_t> offsets;
  std::string raw;
  size_t pause_after = 0;
};

std::string resp(std::initializer_list<std::string_view> args) {
  std::string out = "*" + std::to_string(args.size()) + "\r\n";
  for (std::string_view a : args) {
    out += "$" + std::to_string(a.size()) + "\r\n" + std::string(a) + "\r\n";
  }
  return out;
}

/// Feeds `bytes` in pieces of random sizes (1..max_piece), resuming after pauses.
void feed_in_pieces(ReplStreamParser& parser, Record& r, const std::string& bytes, size_t max_piece,
                    std::mt19937& rng) {
  std::uniform_int_distribution<size_t> piece(1, max_piece);
  size_t at = 0;
  while (at < bytes.size()) {
    size_t n = std::min(piece(rng), bytes.size() - at);
    auto fed = parser.feed(std::string_view(bytes).substr(at, n), r);
    REQUIRE(fed.has_value());
    while (!*fed) {
      fed = parser.feed({}, r);
      REQUIRE(fed.has_value());
    }
    at += n;
  }
}

const std::string k_mark = "0123456789abcdef0123456789abcdef01234567";

}  // namespace

TEST_SUITE("engine::repl_stream") {
  TEST_CASE("a disk-based payload after keepalive newlines, then commands with their offsets") {
    std::string rdb = "REDIS0011 pretend payload with \r\n and $ inside";
    std::string c1 = resp({"SELECT", "0"});
    std::string c2 = resp({"SET", "k", "v"});
    std::string c3 = resp({"PING"});
    std::string stream = "\n\n\n$" + std::to_string(rdb.size()) + "\r\n" + rdb + c1 + c2 + c3;
    std::mt19937 rng(7);
    for (size_t max_piece : {size_t{1}, size_t{2}, size_t{5}, size_t{64}, stream.size()}) {
      ReplStreamParser parser(true, 1000);
      Record r;
      feed_in_pieces(parser, r, stream, max_piece, rng);
      CHECK(r.keepalives == 3);
      REQUIRE(r.declared.has_value());
      CHECK(*r.declared == rdb.size());
      CHECK(r.payload == rdb);
      CHECK(r.ended);
      REQUIRE(r.commands.size() == 3);
      CHECK(r.commands[1] == "SET k v");
      // The offset counts every byte of every command, the PING included, from FULLRESYNC's.
      CHECK(r.offsets[0] == 1000 + c1.size());
      CHECK(r.offsets[1] == 1000 + c1.size() + c2.size());
      CHECK(r.offsets[2] == 1000 + c1.size() + c2.size() + c3.size());
      CHECK(parser.offset() == r.offsets[2]);
      CHECK(parser.payload_bytes() == rdb.size());
    }
  }

  TEST_CASE("a diskless payload ends at its EOF mark, however the mark is split across reads") {
    // The payload ends with bytes that are a prefix of the mark: they must not be taken
    // for it, nor lost.
    std::string rdb = "REDIS0011" + std::string(100, 'x') + k_mark.substr(0, 39) + "tail";
    std::string c1 = resp({"SET", "a", "1"});
    std::string stream = "\n$EOF:" + k_mark + "\r\n" + rdb + k_mark + c1;
    std::mt19937 rng(11);
    for (size_t max_piece :
         {size_t{1}, size_t{3}, size_t{39}, size_t{40}, size_t{41}, size_t{97}, stream.size()}) {
      for (int round = 0; round < 20; ++round) {
        ReplStreamParser parser(true, 5);
        Record r;
        feed_in_pieces(parser, r, stream, max_piece, rng);
        INFO("pieces up to ", max_piece);
        CHECK(r.keepalives == 1);
        CHECK_FALSE(r.declared.has_value());
        CHECK(r.payload == rdb);
        CHECK(r.ended);
        REQUIRE(r.commands.size() == 1);
        CHECK(r.commands[0] == "SET a 1");
        CHECK(r.offsets[0] == 5 + c1.size());
      }
    }
  }

  TEST_CASE("every split of a command stream gives the same commands, offsets and counted bytes") {
    std::string stream;
    std::string counted;  // what a replica passes on to its replicas
    std::vector<std::string> expected;
    std::vector<uint64_t> offsets;
    uint64_t off = 77;
    for (int i = 0; i < 50; ++i) {
      std::string value(static_cast<size_t>(i * 37 % 300), static_cast<char>('a' + i % 26));
      std::string key = "key:" + std::to_string(i);
      std::string c = resp({"SET", key, value});
      stream += c;
      counted += c;
      off += c.size();
      expected.push_back("SET " + key + " " + value);
      offsets.push_back(off);
      if (i % 10 == 0) {
        stream += "\n";  // an out-of-band newline: skipped and not counted
      }
    }
    std::mt19937 rng(3);
    for (size_t pause : {size_t{0}, size_t{1}, size_t{7}}) {
      for (size_t max_piece : {size_t{1}, size_t{13}, size_t{500}, stream.size()}) {
        ReplStreamParser parser(false, 77);
        Record r;
        r.pause_after = pause;
        feed_in_pieces(parser, r, stream, max_piece, rng);
        CHECK(r.commands == expected);
        CHECK(r.offsets == offsets);
        CHECK(r.raw == counted);
        CHECK_FALSE(r.began);
      }
    }
  }

  TEST_CASE("protocol faults are errors naming what was wrong") {
    Record r;
    ReplStreamParser a(true, 0);
    auto bad_header = a.feed("+OK\r\n", r);
    REQUIRE_FALSE(bad_header.has_value());
    CHECK(bad_header.error().find("not '$'") != std::string::npos);

    ReplStreamParser b(true, 0);
    auto aborted = b.feed("-ERR no\r\n", r);
    REQUIRE_FALSE(aborted.has_value());
    CHECK(aborted.error().find("aborted") != std::string::npos);

    ReplStreamParser c(true, 0);
    auto short_mark = c.feed("$EOF:abc\r\n", r);
    REQUIRE_FALSE(short_mark.has_value());

    ReplStreamParser d(false, 0);
    auto inline_cmd = d.feed("SET a b\r\n", r);
    REQUIRE_FALSE(inline_cmd.has_value());
    CHECK(inline_cmd.error().find("inline") != std::string::npos);
  }
}
