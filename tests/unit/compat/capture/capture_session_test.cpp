#include "compat/capture/capture_session.hpp"

#include <doctest/doctest.h>

#include <string>
#include <string_view>
#include <vector>

namespace capture = keyshift::compat::capture;

namespace {

std::vector<std::string_view> args_of(const std::vector<std::string>& words) {
  return std::vector<std::string_view>(words.begin(), words.end());
}

std::vector<std::string> redacted(const std::vector<std::string>& words) {
  auto out = capture::redact_request(args_of(words));
  return out ? *out : std::vector<std::string>{};
}

const std::string k_r(capture::k_redacted_value);

}  // namespace

TEST_SUITE("compat::capture_session") {
  TEST_CASE("AUTH loses its password and keeps its user name") {
    CHECK(redacted({"AUTH", "pw"}) == std::vector<std::string>{"AUTH", k_r});
    CHECK(redacted({"auth", "alice", "pw"}) == std::vector<std::string>{"auth", "alice", k_r});
  }

  TEST_CASE("HELLO AUTH loses the password and keeps SETNAME") {
    CHECK(redacted({"HELLO", "3", "AUTH", "u", "pw", "SETNAME", "n"}) ==
          std::vector<std::string>{"HELLO", "3", "AUTH", "u", k_r, "SETNAME", "n"});
    CHECK_FALSE(capture::redact_request(args_of({"HELLO", "3"})).has_value());
  }

  TEST_CASE("MIGRATE loses the AUTH and AUTH2 passwords but not its keys") {
    CHECK(
        redacted({"MIGRATE", "h", "1", "", "0", "10", "AUTH", "pw", "KEYS", "AUTH"}) ==
        std::vector<std::string>{"MIGRATE", "h", "1", "", "0", "10", "AUTH", k_r, "KEYS", "AUTH"});
    CHECK(redacted({"MIGRATE", "h", "1", "k", "0", "10", "COPY", "AUTH2", "u", "pw"}) ==
          std::vector<std::string>{"MIGRATE", "h", "1", "k", "0", "10", "COPY", "AUTH2", "u", k_r});
  }

  TEST_CASE("CONFIG SET loses requirepass and masterauth values only") {
    CHECK(redacted({"CONFIG", "SET", "maxmemory", "1gb", "REQUIREPASS", "pw", "masterauth", "x"}) ==
          std::vector<std::string>{"CONFIG", "SET", "maxmemory", "1gb", "REQUIREPASS", k_r,
                                   "masterauth", k_r});
    CHECK_FALSE(capture::redact_request(args_of({"CONFIG", "SET", "maxmemory", "1"})).has_value());
    CHECK_FALSE(capture::redact_request(args_of({"CONFIG", "GET", "requirepass"})).has_value());
  }

  TEST_CASE("ACL SETUSER loses its password rules") {
    CHECK(redacted({"ACL", "SETUSER", "bob", "<old", "!abc"}) ==
          std::vector<std::string>{"ACL", "SETUSER", "bob", k_r, k_r});
    CHECK(redacted({"ACL", "SETUSER", "bob", "on", ">pw", "#abc", "~*"}) ==
          std::vector<std::string>{"ACL", "SETUSER", "bob", "on", k_r, k_r, "~*"});
  }

  TEST_CASE("ordinary commands are left alone") {
    CHECK_FALSE(capture::redact_request(args_of({"SET", "AUTH", "pw"})).has_value());
    CHECK_FALSE(capture::redact_request({}).has_value());
  }

  TEST_CASE("SELECT, HELLO and CLIENT SETNAME/SETINFO change the recorded state") {
    capture::SessionState s;
    CHECK(s.db() == 0);
    CHECK(s.resp() == 2);
    s.apply(args_of({"SELECT", "7"}));
    CHECK(s.db() == 7);
    s.apply(args_of({"select", "nope"}));
    CHECK(s.db() == 7);
    s.apply(args_of({"HELLO", "3", "AUTH", "u", "p", "SETNAME", "app"}));
    CHECK(s.resp() == 3);
    CHECK(s.client_name() == "app");
    s.apply(args_of({"CLIENT", "SETNAME", "other"}));
    CHECK(s.client_name() == "other");
    s.apply(args_of({"CLIENT", "SETINFO", "lib-name", "redis-py"}));
    CHECK(s.client_lib() == "redis-py");
    s.apply(args_of({"CLIENT", "SETINFO", "LIB-VER", "5.0"}));
    CHECK(s.client_lib() == "redis-py 5.0");
    s.apply(args_of({"RESET"}));
    CHECK(s.db() == 0);
    CHECK(s.resp() == 2);
    CHECK(s.client_name().empty());
  }

  TEST_CASE("CLIENT REPLY OFF and SKIP mark the requests that get no reply") {
    capture::SessionState s;
    CHECK_FALSE(s.apply(args_of({"GET", "a"})));
    CHECK(s.apply(args_of({"CLIENT", "REPLY", "SKIP"})));
    CHECK(s.apply(args_of({"GET", "a"})));
    CHECK_FALSE(s.apply(args_of({"GET", "a"})));
    CHECK(s.apply(args_of({"CLIENT", "REPLY", "OFF"})));
    CHECK(s.apply(args_of({"SET", "a", "1"})));
    CHECK_FALSE(s.apply(args_of({"CLIENT", "REPLY", "ON"})));
    CHECK_FALSE(s.apply(args_of({"GET", "a"})));
  }
}
