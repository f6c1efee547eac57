#include "engine/util/split_args.hpp"

#include <doctest/doctest.h>

#include <random>
#include <string>
#include <vector>

using keyshift::engine::quote_arg;
using keyshift::engine::split_args;

namespace {

std::vector<std::string> words_of(std::string_view line) {
  std::vector<std::string> words;
  REQUIRE(split_args(line, words));
  return words;
}

}  // namespace

TEST_SUITE("quote_arg") {
  TEST_CASE("a word of printable ASCII without quotes, backslash or blank stays bare") {
    CHECK(quote_arg("plain") == "plain");
    CHECK(quote_arg("/var/lib/valkey") == "/var/lib/valkey");
    CHECK(quote_arg("a=b,c~*") == "a=b,c~*");
  }

  TEST_CASE("other words are double-quoted with sdscatrepr's escapes") {
    CHECK(quote_arg("") == "\"\"");
    CHECK(quote_arg("a b") == "\"a b\"");
    CHECK(quote_arg("it's") == "\"it's\"");
    CHECK(quote_arg("a\"b\\") == "\"a\\\"b\\\\\"");
    CHECK(quote_arg("\n\r\t\a\b") == "\"\\n\\r\\t\\a\\b\"");
    CHECK(quote_arg(std::string("\0\x1f\x7f", 3)) == "\"\\x00\\x1f\\x7f\"");
    // Bytes from 0x80 are not isprint() in the C locale: Valkey writes them as \x escapes.
    CHECK(quote_arg("caf\xc3\xa9") == "\"caf\\xc3\\xa9\"");
    CHECK(quote_arg("\xff") == "\"\\xff\"");
  }

  TEST_CASE("split_args reads every quoted word back byte for byte") {
    std::mt19937_64 rng(20261201);
    std::uniform_int_distribution<int> byte(0, 255);
    std::uniform_int_distribution<int> length(0, 24);
    for (int round = 0; round < 20000; ++round) {
      std::string word;
      int n = length(rng);
      for (int i = 0; i < n; ++i) {
        word += static_cast<char>(byte(rng));
      }
      std::vector<std::string> words = words_of(quote_arg(word));
      REQUIRE(words.size() == 1);
      REQUIRE(words[0] == word);
    }
  }

  TEST_CASE("a line of quoted random words splits back into the same words") {
    std::mt19937_64 rng(7);
    // Mostly bytes that matter to the splitter: quotes, backslash, blanks, x and hex digits.
    const std::string alphabet = std::string("\"'\\ \t\r\n\0xa0F9\x80\xff", 16);
    std::uniform_int_distribution<size_t> pick(0, alphabet.size() - 1);
    std::uniform_int_distribution<int> length(0, 8);
    for (int round = 0; round < 5000; ++round) {
      std::vector<std::string> words(static_cast<size_t>(length(rng)) + 1);
      std::string line;
      for (std::string& w : words) {
        int n = length(rng);
        for (int i = 0; i < n; ++i) {
          w += alphabet[pick(rng)];
        }
        line += quote_arg(w);
        line += ' ';
      }
      REQUIRE(words_of(line) == words);
    }
  }
}
