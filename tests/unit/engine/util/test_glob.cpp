#include "engine/util/glob.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <string>

namespace {

using keyshift::engine::glob_match;
using keyshift::engine::GlobCase;

bool nocase(std::string_view pattern, std::string_view text) {
  return glob_match(pattern, text, GlobCase::insensitive);
}

}  // namespace

TEST_SUITE("engine::glob") {
  TEST_CASE("literal patterns match only the same bytes") {
    CHECK(glob_match("hello", "hello"));
    CHECK_FALSE(glob_match("hello", "hell"));
    CHECK_FALSE(glob_match("hell", "hello"));
    CHECK_FALSE(glob_match("hello", "Hello"));
    CHECK(glob_match("", ""));
    CHECK_FALSE(glob_match("", "a"));
  }

  TEST_CASE("a star matches any run of bytes including none") {
    CHECK(glob_match("*", "anything"));
    CHECK(glob_match("h*o", "hello"));
    CHECK(glob_match("h*o", "ho"));
    CHECK(glob_match("*llo", "hello"));
    CHECK(glob_match("he*", "he"));
    CHECK(glob_match("a*b*c", "axxbyyc"));
    CHECK_FALSE(glob_match("a*b*c", "axxbyy"));
    CHECK(glob_match("***a", "bba"));
    CHECK(glob_match("a**", "a"));
    CHECK(glob_match("user:*:name", "user:42:name"));
    CHECK_FALSE(glob_match("user:*:name", "user:42:age"));
  }

  TEST_CASE("a star does not match an empty text, as in Valkey") {
    // stringmatchlen() never enters its loop for an empty string, so "*" fails on "".
    CHECK_FALSE(glob_match("*", ""));
    CHECK_FALSE(glob_match("**", ""));
  }

  TEST_CASE("a question mark matches exactly one byte") {
    CHECK(glob_match("h?llo", "hello"));
    CHECK(glob_match("h?llo", "hallo"));
    CHECK_FALSE(glob_match("h?llo", "hllo"));
    CHECK(glob_match("???", "abc"));
    CHECK_FALSE(glob_match("???", "ab"));
    CHECK(glob_match("?", "\xff"));
  }

  TEST_CASE("a bracket set matches one listed byte") {
    CHECK(glob_match("h[ae]llo", "hello"));
    CHECK(glob_match("h[ae]llo", "hallo"));
    CHECK_FALSE(glob_match("h[ae]llo", "hillo"));
    CHECK_FALSE(glob_match("h[ae]llo", "hllo"));
  }

  TEST_CASE("a caret negates a bracket set") {
    CHECK(glob_match("h[^e]llo", "hallo"));
    CHECK_FALSE(glob_match("h[^e]llo", "hello"));
    CHECK(glob_match("[^abc]", "d"));
    CHECK_FALSE(glob_match("[^abc]", "b"));
  }

  TEST_CASE("ranges match inclusive and may be written backwards") {
    CHECK(glob_match("[a-c]", "a"));
    CHECK(glob_match("[a-c]", "c"));
    CHECK_FALSE(glob_match("[a-c]", "d"));
    CHECK(glob_match("[c-a]", "b"));
    CHECK(glob_match("key[0-9]", "key7"));
    CHECK_FALSE(glob_match("key[0-9]", "keyx"));
    CHECK(glob_match("[^0-9]", "x"));
    CHECK_FALSE(glob_match("[^0-9]", "5"));
    CHECK(glob_match("[a-cx-z]", "y"));
  }

  TEST_CASE("a backslash takes the next byte literally") {
    CHECK(glob_match("a\\*b", "a*b"));
    CHECK_FALSE(glob_match("a\\*b", "axb"));
    CHECK(glob_match("\\?", "?"));
    CHECK_FALSE(glob_match("\\?", "x"));
    CHECK(glob_match("[\\]]", "]"));
    CHECK(glob_match("[\\^a]", "^"));
    CHECK(glob_match("a\\\\b", "a\\b"));
    // A trailing backslash stands for itself.
    CHECK(glob_match("a\\", "a\\"));
  }

  TEST_CASE("edge cases of brackets follow stringmatchlen") {
    // An unclosed set runs to the end of the pattern; an empty one matches nothing.
    CHECK(glob_match("[abc", "b"));
    CHECK_FALSE(glob_match("[abc", "d"));
    CHECK_FALSE(glob_match("x[", "x["));
    CHECK_FALSE(glob_match("[", "["));
    // "[]" is an empty set directly closed.
    CHECK_FALSE(glob_match("[]", "]"));
    // A leading '-' is a plain byte, but "b-]" is a range from 'b' to ']' that eats the
    // closing bracket.
    CHECK(glob_match("[-a]", "-"));
    CHECK_FALSE(glob_match("[ab-]", "-"));
    CHECK(glob_match("[ab-]", "a"));
    CHECK(glob_match("[a-]", "_"));
    CHECK_FALSE(glob_match("[a-]", "b"));
    CHECK(glob_match("[^", "x"));
  }

  TEST_CASE("case-insensitive matching folds letters only") {
    CHECK(nocase("HELLO", "hello"));
    CHECK(nocase("h*O", "HellO"));
    CHECK(nocase("[A-C]", "b"));
    CHECK(nocase("[abc]", "B"));
    CHECK_FALSE(nocase("[abc]", "D"));
    CHECK(nocase("MaxMemory*", "maxmemory-policy"));
    // An escaped byte inside a set is compared exactly, even without case.
    CHECK_FALSE(nocase("[\\A]", "a"));
    // Ends are folded after ordering, so [Z-a] covers nothing once folded to [z-a].
    CHECK_FALSE(nocase("[Z-a]", "_"));
    CHECK(glob_match("[Z-a]", "_"));
  }

  TEST_CASE("bytes above 0x7f compare as signed chars in ranges") {
    // Valkey compares range ends as (signed) char, so [a-\xff] is [\xff-a].
    CHECK(glob_match("[a-\xff]", "\x01"));
    CHECK_FALSE(glob_match("[a-\xff]", "b"));
    CHECK(glob_match("\xe9t\xe9", "\xe9t\xe9"));
  }

  TEST_CASE("patterns with many stars finish quickly") {
    std::string text(5000, 'a');
    std::string pattern;
    for (int i = 0; i < 50; ++i) {
      pattern += "a*";
    }
    pattern += "b";
    CHECK_FALSE(glob_match(pattern, text));
    CHECK(glob_match(pattern.substr(0, pattern.size() - 1), text));
  }

  TEST_CASE("random patterns never read past their end") {
    // Short random inputs over the special bytes; run under ASan this catches overruns.
    uint32_t state = 12345;
    auto next = [&state] {
      state = state * 1103515245u + 12345u;
      return state >> 16;
    };
    const std::string alphabet = "ab*?[]^-\\";
    for (int i = 0; i < 20000; ++i) {
      std::string pattern;
      std::string text;
      for (uint32_t n = next() % 8; n > 0; --n) {
        pattern += alphabet[next() % alphabet.size()];
      }
      for (uint32_t n = next() % 8; n > 0; --n) {
        text += alphabet[next() % alphabet.size()];
      }
      bool sensitive = glob_match(pattern, text);
      bool insensitive = glob_match(pattern, text, GlobCase::insensitive);
      // Without letters that differ in case the two modes must agree.
      CHECK(sensitive == insensitive);
    }
  }
}
