#include "engine/util/cluster_slot.hpp"

#include <doctest/doctest.h>

#include <string>

using keyshift::engine::crc16_xmodem;
using keyshift::engine::key_hash_slot;
using keyshift::engine::key_hash_tag;

TEST_SUITE("engine::cluster_slot") {
  TEST_CASE("crc16 gives the XMODEM check value") {
    CHECK(crc16_xmodem("123456789") == 0x31C3);
    CHECK(crc16_xmodem("") == 0);
  }

  TEST_CASE("slots match what CLUSTER KEYSLOT documents") {
    CHECK(key_hash_slot("somekey") == 11058);
    CHECK(key_hash_slot("foo") == 12182);
    CHECK(key_hash_slot("foo{hash_tag}") == 2515);
    CHECK(key_hash_slot("") == 0);
  }

  TEST_CASE("a hash tag is what lies between the first brace and the next closing one") {
    CHECK(key_hash_tag("{user1000}.following") == "user1000");
    CHECK(key_hash_slot("{user1000}.following") == key_hash_slot("{user1000}.followers"));
    CHECK(key_hash_tag("foo{bar}{zap}") == "bar");
    CHECK(key_hash_tag("foo{{bar}}zap") == "{bar");
  }

  TEST_CASE("an empty or unclosed tag hashes the whole key") {
    CHECK(key_hash_tag("foo{}{bar}") == "foo{}{bar}");
    CHECK(key_hash_tag("foo{bar") == "foo{bar");
    CHECK(key_hash_tag("}foo{") == "}foo{");
  }

  TEST_CASE("keys with binary bytes hash every byte") {
    std::string key("a\0b", 3);
    CHECK(key_hash_slot(key) != key_hash_slot("a"));
    CHECK(key_hash_slot(key) < 16384);
  }
}
