#include "engine/repl/backlog.hpp"

#include <doctest/doctest.h>

#include <string>

using keyshift::engine::decide_psync;
using keyshift::engine::PsyncDecision;
using keyshift::engine::PsyncHistory;
using keyshift::engine::ReplBacklog;

namespace {

const std::string k_id(40, 'a');
const std::string k_old(40, 'b');

PsyncHistory history() {
  PsyncHistory h;
  h.replid = k_id;
  h.replid2 = k_old;
  h.second_offset = 50;
  h.has_backlog = true;
  h.backlog_first = 41;
  h.backlog_histlen = 60;  // bytes 41..100
  return h;
}

}  // namespace

TEST_SUITE("ReplBacklog") {
  TEST_CASE("a new backlog starts after the offset it is created at and holds nothing") {
    ReplBacklog b(16, 100);
    CHECK(b.histlen() == 0);
    CHECK(b.first_byte_offset() == 101);
    CHECK(b.end_offset() == 100);
    CHECK(b.copy_after(100).empty());
  }

  TEST_CASE("bytes are addressed by stream offset until they fall out of the capacity") {
    ReplBacklog b(8, 0);
    b.append("abcde");
    CHECK(b.histlen() == 5);
    CHECK(b.first_byte_offset() == 1);
    CHECK(b.copy_after(0) == "abcde");
    CHECK(b.copy_after(3) == "de");
    b.append("fghij");  // wraps: the oldest two bytes go
    CHECK(b.histlen() == 8);
    CHECK(b.end_offset() == 10);
    CHECK(b.first_byte_offset() == 3);
    CHECK(b.copy_after(2) == "cdefghij");
    CHECK(b.copy_after(7) == "hij");
    CHECK(b.copy_after(10).empty());
  }

  TEST_CASE("an append larger than the capacity keeps only its tail") {
    ReplBacklog b(4, 10);
    b.append("xy");
    b.append("0123456789");
    CHECK(b.histlen() == 4);
    CHECK(b.end_offset() == 22);
    CHECK(b.first_byte_offset() == 19);
    CHECK(b.copy_after(18) == "6789");
    b.append("ab");
    CHECK(b.copy_after(18) == "89ab");
  }

  TEST_CASE("many small appends around the ring keep every offset right") {
    ReplBacklog b(7, 0);
    std::string all;
    for (int i = 0; i < 50; ++i) {
      std::string piece(static_cast<size_t>(i % 3 + 1), static_cast<char>('a' + i % 26));
      b.append(piece);
      all += piece;
      uint64_t from = all.size() - b.histlen();
      CHECK(b.copy_after(from) == all.substr(from));
    }
  }

  TEST_CASE("resizing keeps the newest bytes that fit") {
    ReplBacklog b(8, 0);
    b.append("abcdefghij");
    b.resize(4);
    CHECK(b.histlen() == 4);
    CHECK(b.end_offset() == 10);
    CHECK(b.copy_after(6) == "ghij");
    b.resize(16);
    CHECK(b.histlen() == 4);
    b.append("kl");
    CHECK(b.copy_after(6) == "ghijkl");
  }
}

TEST_SUITE("decide_psync") {
  TEST_CASE("a question mark asks for a full sync, which is no failed partial attempt") {
    CHECK(decide_psync(history(), "?", -1) == PsyncDecision::full_requested);
  }

  TEST_CASE("the current history continues from any offset the backlog holds, or its end") {
    CHECK(decide_psync(history(), k_id, 41) == PsyncDecision::partial);
    CHECK(decide_psync(history(), k_id, 101) == PsyncDecision::partial);
    CHECK(decide_psync(history(), k_id, 40) == PsyncDecision::full_backlog);
    CHECK(decide_psync(history(), k_id, 102) == PsyncDecision::full_backlog);
  }

  TEST_CASE("the previous history continues only up to where it ended") {
    CHECK(decide_psync(history(), k_old, 50) == PsyncDecision::partial);
    CHECK(decide_psync(history(), k_old, 51) == PsyncDecision::full_replid);
  }

  TEST_CASE("an unknown history or a missing backlog means a full sync") {
    CHECK(decide_psync(history(), std::string(40, 'c'), 60) == PsyncDecision::full_replid);
    PsyncHistory h = history();
    h.has_backlog = false;
    CHECK(decide_psync(h, k_id, 60) == PsyncDecision::full_backlog);
  }
}
