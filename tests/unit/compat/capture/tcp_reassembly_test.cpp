#include "compat/capture/tcp_reassembly.hpp"

#include <doctest/doctest.h>

#include <string>

namespace capture = keyshift::compat::capture;

TEST_SUITE("compat::capture::tcp_reassembly") {
  TEST_CASE("segments in order are delivered as they come") {
    capture::TcpReassembler r;
    r.start_at_syn(1000);
    std::string out;
    r.add(1001, "hello ", out);
    r.add(1007, "world", out);
    CHECK(out == "hello world");
    CHECK(r.stats().delivered == 11);
    CHECK_FALSE(r.damaged());
  }

  TEST_CASE("an out-of-order segment is held until the bytes before it come") {
    capture::TcpReassembler r;
    r.start_at_syn(0);
    std::string out;
    r.add(7, "world", out);
    CHECK(out.empty());
    CHECK(r.held() == 5);
    r.add(1, "hello ", out);
    CHECK(out == "hello world");
    CHECK(r.held() == 0);
    CHECK(r.stats().out_of_order == 1);
  }

  TEST_CASE("retransmits and overlaps deliver only the bytes not yet delivered") {
    capture::TcpReassembler r;
    r.start_at_syn(99);
    std::string out;
    r.add(100, "abcdef", out);
    r.add(100, "abcdef", out);    // whole retransmit
    r.add(103, "defghi", out);    // overlaps the end
    r.add(110, "klm", out);       // held
    r.add(107, "hijklmno", out);  // covers the hole and the held segment
    CHECK(out == "abcdefghijklmno");
    CHECK(r.stats().retransmitted == 6 + 3 + 2 + 3);
    CHECK_FALSE(r.damaged());
  }

  TEST_CASE("sequence numbers wrap around") {
    capture::TcpReassembler r;
    r.start_at_syn(0xfffffffdu);
    std::string out;
    r.add(0xfffffffeu, "ab", out);
    r.add(0u, "cd", out);
    r.add(2u, "ef", out);
    CHECK(out == "abcdef");
  }

  TEST_CASE("a stream without its SYN starts at its first segment with data") {
    capture::TcpReassembler r;
    std::string out;
    r.add(5000, "", out);
    CHECK_FALSE(r.started());
    r.add(5000, "xy", out);
    r.add(5002, "z", out);
    CHECK(out == "xyz");
  }

  TEST_CASE("bytes the peer acknowledged but the capture never saw are a gap") {
    capture::TcpReassembler r;
    r.start_at_syn(0);
    std::string out;
    r.add(1, "abc", out);
    r.acknowledged(4);
    CHECK_FALSE(r.damaged());
    r.add(8, "hij", out);  // 4..7 lost
    r.acknowledged(11);
    CHECK(r.damaged());
    CHECK(r.stats().gap_bytes == 4);
    r.add(11, "more", out);
    CHECK(out == "abc");  // nothing after the gap
  }

  TEST_CASE("the acknowledgement of a FIN is not a gap") {
    capture::TcpReassembler r;
    r.start_at_syn(0);
    std::string out;
    r.add(1, "abc", out);
    r.fin(4);
    r.acknowledged(5);
    CHECK_FALSE(r.damaged());
  }

  TEST_CASE("a truncated segment is a gap of its length") {
    capture::TcpReassembler r;
    r.start_at_syn(0);
    std::string out;
    r.add(1, "abc", out);
    r.lost(4, 100);
    CHECK(r.damaged());
    CHECK(r.stats().gap_bytes == 100);
  }

  TEST_CASE("a cut segment ahead of the stream lets the bytes before it through first") {
    capture::TcpReassembler r;
    r.start_at_syn(0);
    std::string out;
    r.add(1, "abc", out);
    r.lost(7, 50);  // 4..6 not here yet
    CHECK_FALSE(r.damaged());
    r.add(4, "defXYZ", out);  // runs into the cut segment: only "def" counts
    CHECK(out == "abcdef");
    CHECK(r.damaged());
    CHECK(r.stats().gap_bytes == 50);
  }

  TEST_CASE("a cut segment whose earlier bytes never come is a gap at the end") {
    capture::TcpReassembler r;
    r.start_at_syn(0);
    std::string out;
    r.add(1, "abc", out);
    r.lost(10, 5);
    r.finish();
    CHECK(r.damaged());
    CHECK(r.stats().gap_bytes == 6);
  }

  TEST_CASE("a stream that ends with a hole reports the hole as lost") {
    capture::TcpReassembler r;
    r.start_at_syn(0);
    std::string out;
    r.add(1, "abc", out);
    r.add(10, "xyz", out);
    r.finish();
    CHECK(r.damaged());
    CHECK(r.stats().gap_bytes == 6);
    CHECK(out == "abc");
  }

  TEST_CASE("held bytes over the limit are a gap, not unbounded memory") {
    capture::TcpReassembler r(8);
    r.start_at_syn(0);
    std::string out;
    r.add(11, "12345", out);
    CHECK_FALSE(r.damaged());
    r.add(21, "67890", out);
    CHECK(r.damaged());
    CHECK(r.held() == 0);
    CHECK(r.stats().gap_bytes == 10);
  }
}
