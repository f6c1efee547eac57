#include "engine/resp/reply_scanner.hpp"

#include <doctest/doctest.h>

#include <string>
#include <string_view>
#include <vector>

using keyshift::engine::ReplyScanner;

namespace {

/// Feeds `stream` in pieces of `step` bytes the way a socket reader would (keeping bytes the
/// scanner left) and returns the byte offsets where replies ended.
std::vector<size_t> reply_ends(std::string_view stream, size_t step, ReplyScanner& sc,
                               std::vector<bool>* errors = nullptr,
                               std::vector<bool>* nulls = nullptr) {
  std::vector<size_t> ends;
  std::string pending;
  size_t base = 0;  // stream offset of pending[0]
  for (size_t at = 0; at < stream.size(); at += step) {
    pending.append(stream.substr(at, step));
    size_t pos = 0;
    while (pos < pending.size()) {
      size_t used = 0;
      auto st = sc.scan(pending.data() + pos, pending.size() - pos, used);
      pos += used;
      REQUIRE(st != ReplyScanner::Status::error);
      if (st == ReplyScanner::Status::need_more) {
        break;
      }
      ends.push_back(base + pos);
      if (errors != nullptr) {
        errors->push_back(sc.last_is_error());
      }
      if (nulls != nullptr) {
        nulls->push_back(sc.last_is_null());
      }
    }
    pending.erase(0, pos);
    base += pos;
  }
  return ends;
}

}  // namespace

TEST_SUITE("engine::ReplyScanner") {
  TEST_CASE("every reply type ends where its bytes end, whatever the read sizes") {
    const std::string r1 = "+OK\r\n";
    const std::string r2 = "-ERR wrong\r\n";
    const std::string r3 = ":42\r\n";
    const std::string r4 = "$5\r\nhe\r\no\r\n";  // CRLF inside a bulk is payload
    const std::string r5 = "$-1\r\n";
    const std::string r6 = "*3\r\n$1\r\na\r\n*2\r\n:1\r\n:2\r\n*0\r\n";
    const std::string r7 = "%1\r\n+k\r\n~2\r\n#t\r\n,1.5\r\n";
    const std::string r8 = "|1\r\n+ttl\r\n:3\r\n$3\r\nabc\r\n";  // attribute, then the value
    const std::string r9 = "_\r\n";
    const std::string r10 = "!5\r\nERR x\r\n";
    const std::string stream = r1 + r2 + r3 + r4 + r5 + r6 + r7 + r8 + r9 + r10;
    std::vector<size_t> want;
    size_t at = 0;
    for (const auto* r : {&r1, &r2, &r3, &r4, &r5, &r6, &r7, &r8, &r9, &r10}) {
      at += r->size();
      want.push_back(at);
    }
    for (size_t step : {size_t{1}, size_t{2}, size_t{3}, size_t{7}, stream.size()}) {
      CAPTURE(step);
      ReplyScanner sc;
      std::vector<bool> errors;
      std::vector<bool> nulls;
      CHECK(reply_ends(stream, step, sc, &errors, &nulls) == want);
      CHECK(errors ==
            std::vector<bool>{false, true, false, false, false, false, false, false, false, true});
      CHECK(nulls ==
            std::vector<bool>{false, false, false, false, true, false, false, false, true, false});
    }
  }

  TEST_CASE("the text of a top-level error is kept for the message") {
    ReplyScanner sc;
    std::string_view data = "-WRONGTYPE Operation against a key\r\n";
    size_t used = 0;
    CHECK(sc.scan(data.data(), data.size(), used) == ReplyScanner::Status::reply);
    CHECK(used == data.size());
    CHECK(sc.error_text() == "WRONGTYPE Operation against a key");
  }

  TEST_CASE("an error inside an array does not make the reply an error") {
    ReplyScanner sc;
    std::string_view data = "*2\r\n-ERR inner\r\n:1\r\n";
    size_t used = 0;
    CHECK(sc.scan(data.data(), data.size(), used) == ReplyScanner::Status::reply);
    CHECK_FALSE(sc.last_is_error());
  }

  TEST_CASE("bytes that are not RESP are refused with a reason") {
    for (std::string_view bad : {"?what\r\n", "$x\r\n", "*-5\r\n", "+OK\n"}) {
      CAPTURE(bad);
      ReplyScanner sc;
      size_t used = 0;
      CHECK(sc.scan(bad.data(), bad.size(), used) == ReplyScanner::Status::error);
      CHECK_FALSE(sc.protocol_error().empty());
    }
  }

  TEST_CASE("a partial line is left for the next call") {
    ReplyScanner sc;
    std::string_view data = "+OK\r\n:12";
    size_t used = 0;
    CHECK(sc.scan(data.data(), data.size(), used) == ReplyScanner::Status::reply);
    CHECK(used == 5);
    CHECK(sc.scan(data.data() + 5, data.size() - 5, used) == ReplyScanner::Status::need_more);
    CHECK(used == 0);
  }
}
