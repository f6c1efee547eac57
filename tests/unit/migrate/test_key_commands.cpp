#include "migrate/import/key_commands.hpp"

#include <doctest/doctest.h>

#include <string>
#include <string_view>

namespace m = keyshift::migrate;

namespace {

/// The part of a key a cluster hashes for its slot (the hash tag rule of the cluster spec).
std::string_view hashed(std::string_view key) {
  size_t open = key.find('{');
  if (open == std::string_view::npos) {
    return key;
  }
  size_t close = key.find('}', open + 1);
  if (close == std::string_view::npos || close == open + 1) {
    return key;
  }
  return key.substr(open + 1, close - open - 1);
}

}  // namespace

TEST_SUITE("migrate::import::key_commands") {
  TEST_CASE("a temporary key hashes to its key's slot when the key has a tag or no brace") {
    for (std::string_view key :
         {"user:1", "{user}:1", "a{b}c", "x{", "{{a}}", "plain key with spaces", "k{tag}{x}"}) {
      CAPTURE(key);
      std::string temp = m::temporary_key(key);
      CHECK(temp != key);
      CHECK(hashed(temp) == hashed(key));
    }
  }

  TEST_CASE("a key with a stray closing brace still gets a distinct temporary name") {
    for (std::string_view key : {"a}b", "{}x", ""}) {
      CAPTURE(key);
      std::string temp = m::temporary_key(key);
      CHECK(temp != key);
      CHECK(temp.find("keyshift-import-tmp") != std::string::npos);
    }
  }
}
