#include "compat/capture/capture_anonymize.hpp"

#include "engine/resp/request_writer.hpp"

#include <doctest/doctest.h>

#include <array>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace capture = keyshift::compat::capture;

namespace {

std::string request(std::vector<std::string_view> args) {
  std::string out;
  keyshift::engine::append_request(out, std::span<const std::string_view>(args));
  return out;
}

capture::Anonymizer fixed(uint8_t seed) {
  std::array<uint8_t, 32> key{};
  key.fill(seed);
  return capture::Anonymizer(key);
}

}  // namespace

TEST_SUITE("capture anonymize") {
  TEST_CASE("keys and values become hashes of the same length; words and numbers stay") {
    capture::Anonymizer a = fixed(1);
    std::string set = request({"SET", "user:1000:name", "Alice Smith", "EX", "60", "NX"});
    std::string before = set;
    a.request(set);
    CHECK(set.size() == before.size());
    CHECK(set.find("user:1000") == std::string::npos);
    CHECK(set.find("Alice") == std::string::npos);
    CHECK(set.find("$3\r\nSET\r\n") != std::string::npos);
    CHECK(set.find("$2\r\nEX\r\n$2\r\n60\r\n$2\r\nNX\r\n") != std::string::npos);
    // The same bytes hash alike in a later request and in a reply: GET still finds them.
    std::string get = request({"GET", "user:1000:name"});
    a.request(get);
    CHECK(set.find(get.substr(get.find("$14\r\n"))) != std::string::npos);
    std::string reply = "$11\r\nAlice Smith\r\n";
    a.reply(reply);
    CHECK(set.find(reply) != std::string::npos);
  }

  TEST_CASE("a hash tag is hashed alone so keys that share it still share a slot") {
    capture::Anonymizer a = fixed(2);
    std::string x = a.hash("{user1000}.following");
    std::string y = a.hash("{user1000}.followers");
    CHECK(x.size() == 20);
    CHECK(x[0] == '{');
    CHECK(x[9] == '}');
    CHECK(x.substr(0, 10) == y.substr(0, 10));
    CHECK(x.substr(1, 8) != "user1000");
    CHECK(a.hash("no-tag") != fixed(3).hash("no-tag"));  // another key, other hashes
  }

  TEST_CASE("subcommands and the option words of a command are kept") {
    capture::Anonymizer a = fixed(4);
    std::string r = request({"CLIENT", "SETNAME", "billing-worker"});
    a.request(r);
    CHECK(r.find("$6\r\nCLIENT\r\n$7\r\nSETNAME\r\n") != std::string::npos);
    CHECK(r.find("billing") == std::string::npos);
    std::string z = request({"ZADD", "board", "GT", "CH", "12.5", "alice"});
    a.request(z);
    CHECK(z.find("$2\r\nGT\r\n$2\r\nCH\r\n$4\r\n12.5\r\n") != std::string::npos);
    CHECK(z.find("alice") == std::string::npos);
    std::string inline_req = "SET greeting hello\r\n";
    a.request(inline_req);
    CHECK(inline_req.starts_with("SET "));
    CHECK(inline_req.find("hello") == std::string::npos);
    CHECK(inline_req.size() == 20);
  }

  TEST_CASE("scripts, their SHA-1s and function names still run") {
    capture::Anonymizer a = fixed(6);
    std::string body = "return redis.call('GET', KEYS[1])";
    std::string eval = request({"EVAL", body, "1", "session:9"});
    a.request(eval);
    CHECK(eval.find(body) != std::string::npos);
    CHECK(eval.find("session") == std::string::npos);
    std::string load = request({"SCRIPT", "LOAD", body});
    a.request(load);
    CHECK(load.find(body) != std::string::npos);
    std::string fcall = request({"FCALL", "myfunc", "1", "k1"});
    a.request(fcall);
    CHECK(fcall.find("$6\r\nmyfunc\r\n") != std::string::npos);
  }

  TEST_CASE("replies keep their framing, numbers and status words") {
    capture::Anonymizer a = fixed(5);
    std::string r = "*4\r\n$5\r\nfield\r\n$2\r\n42\r\n+OK\r\n:7\r\n";
    std::string before = r;
    a.reply(r);
    CHECK(r.size() == before.size());
    CHECK(r.find("field") == std::string::npos);
    CHECK(r.find("$2\r\n42\r\n+OK\r\n:7\r\n") != std::string::npos);
    std::string verbatim = "=9\r\ntxt:hello\r\n";
    a.reply(verbatim);
    CHECK(verbatim.starts_with("=9\r\ntxt:"));
    CHECK(verbatim.find("hello") == std::string::npos);
  }

  TEST_CASE("secrets in CONFIG GET, ACL GETUSER and ACL LIST replies are redacted") {
    std::string config =
        "*4\r\n$11\r\nrequirepass\r\n$6\r\ns3cret\r\n$9\r\nmaxmemory\r\n$1\r\n0\r\n";
    CHECK(capture::redact_reply(config));
    CHECK(config ==
          "*4\r\n$11\r\nrequirepass\r\n$10\r\n(redacted)\r\n$9\r\nmaxmemory\r\n$1\r\n0\r\n");
    std::string map = "%1\r\n$10\r\nmasterauth\r\n$2\r\npw\r\n";
    CHECK(capture::redact_reply(map));
    CHECK(map.find("pw\r\n") == std::string::npos);
    std::string hash(64, 'a');
    std::string getuser =
        "*4\r\n$5\r\nflags\r\n*1\r\n$2\r\non\r\n$9\r\npasswords\r\n*1\r\n$64\r\n" + hash + "\r\n";
    CHECK(capture::redact_reply(getuser));
    CHECK(getuser.find(hash) == std::string::npos);
    CHECK(getuser.find("$2\r\non\r\n") != std::string::npos);
    std::string line = "user alice on #" + hash + " ~* +@all";
    std::string list = "*1\r\n$" + std::to_string(line.size()) + "\r\n" + line + "\r\n";
    CHECK(capture::redact_reply(list));
    CHECK(list.find(hash) == std::string::npos);
    CHECK(list.find("user alice on #(redacted) ~* +@all") != std::string::npos);
    // Inside an EXEC reply too.
    std::string exec = "*2\r\n+OK\r\n*2\r\n$11\r\nrequirepass\r\n$3\r\nabc\r\n";
    CHECK(capture::redact_reply(exec));
    CHECK(exec.find("abc") == std::string::npos);
    std::string plain = "*2\r\n$4\r\npass\r\n$4\r\nword\r\n";
    CHECK_FALSE(capture::redact_reply(plain));
  }
}
