// The pure parts of import --follow: which notify-keyspace-events flags a follow needs, and
// which key a keyspace channel names.

#include "migrate/import/keyspace_follow.hpp"

#include <doctest/doctest.h>

#include <string>

namespace keyshift::migrate {

TEST_SUITE("migrate::keyspace_follow") {
  TEST_CASE("flags that already report every key change are left as they are") {
    CHECK(keyspace_flags_for_follow("KA") == "KA");
    CHECK(keyspace_flags_for_follow("AKE") == "AKE");
    CHECK(keyspace_flags_for_follow("Kg$lshzxetd") == "Kg$lshzxetd");
  }

  TEST_CASE("missing keyspace or event classes are added to what the server has") {
    CHECK(keyspace_flags_for_follow("") == "KA");
    CHECK(keyspace_flags_for_follow("Ex") == "ExKA");
    CHECK(keyspace_flags_for_follow("A") == "AK");
    CHECK(keyspace_flags_for_follow("Kg$") == "Kg$A");
  }

  TEST_CASE("a keyspace channel names its database and key, colons and all") {
    uint64_t db = 99;
    std::string key;
    REQUIRE(parse_keyspace_channel("__keyspace@3__:user:1:name", db, key));
    CHECK(db == 3);
    CHECK(key == "user:1:name");
    REQUIRE(parse_keyspace_channel("__keyspace@0__:", db, key));
    CHECK(key.empty());
  }

  TEST_CASE("other channels are not keyspace channels") {
    uint64_t db = 0;
    std::string key;
    CHECK_FALSE(parse_keyspace_channel("__keyevent@0__:set", db, key));
    CHECK_FALSE(parse_keyspace_channel("__keyspace@x__:k", db, key));
    CHECK_FALSE(parse_keyspace_channel("__keyspace@1_:k", db, key));
  }
}

}  // namespace keyshift::migrate
