#include "compat/capture/tcp_reassembly.hpp"

#include "compat/capture/capture_stream.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

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

namespace {

struct Collect : capture::EventSink {
  std::vector<capture::CaptureEvent> events;
  void emit(const capture::CaptureEventView& e, size_t) override {
    capture::CaptureEvent c;
    c.kind = e.kind;
    c.flags = e.flags;
    c.bytes = std::string(e.bytes);
    c.batch = e.batch;
    events.push_back(std::move(c));
  }
};

}  // namespace

TEST_SUITE("compat::capture::stream_recorder") {
  TEST_CASE("requests and replies are cut where RESP says, across reads") {
    capture::StreamRecorder rec(1, true);
    Collect sink;
    rec.open("127.0.0.1:1", 1, sink);
    std::string req = "*2\r\n$4\r\nAUTH\r\n$6\r\nsecret\r\n*1\r\n$4\r\nPING\r\n";
    rec.client_bytes(req.data(), 10, 2, 2, sink);
    rec.client_bytes(req.data() + 10, req.size() - 10, 3, 3, sink);
    std::string rep = "+OK\r\n+PONG\r\n";
    rec.server_bytes(rep.data(), rep.size(), 4, 4, sink);
    REQUIRE(sink.events.size() == 5);
    CHECK(sink.events[1].kind == capture::EventKind::request);
    CHECK((sink.events[1].flags & capture::k_flag_redacted) != 0);
    CHECK(sink.events[1].bytes.find("secret") == std::string::npos);
    CHECK(sink.events[2].bytes == "*1\r\n$4\r\nPING\r\n");
    CHECK(sink.events[3].bytes == "+OK\r\n");
    CHECK(sink.events[4].bytes == "+PONG\r\n");
  }

  TEST_CASE("mid-stream, requests start at the first multibulk start and earlier replies go") {
    capture::StreamRecorder rec(1, true);
    rec.start_mid_stream();
    Collect sink;
    rec.open("127.0.0.1:1", 1, sink);
    std::string early_reply = "$5\r\nhello\r\n";
    rec.server_bytes(early_reply.data(), early_reply.size(), 1, 1, sink);
    // The tail of a SET value, then a GET: the value's bytes hold a "*" that is no request.
    std::string tail = "lue*\r\n*3x\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n";
    rec.client_bytes(tail.data(), tail.size(), 2, 2, sink);
    std::string reply = "$1\r\nv\r\n";
    rec.server_bytes(reply.data(), reply.size(), 3, 3, sink);
    REQUIRE(sink.events.size() == 3);
    CHECK((sink.events[0].flags & capture::k_flag_partial) != 0);
    CHECK(sink.events[1].bytes == "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n");
    CHECK(sink.events[2].bytes == "$1\r\nv\r\n");
    CHECK(rec.counts().skipped_bytes == early_reply.size() + 11);
  }

  TEST_CASE("mid-stream, a request start cut between reads is kept until it completes") {
    capture::StreamRecorder rec(1, true);
    rec.start_mid_stream();
    Collect sink;
    std::string a = "junk\r\n*1\r";
    std::string b = "\n$4\r\nPING\r\n";
    rec.client_bytes(a.data(), a.size(), 1, 1, sink);
    CHECK(sink.events.empty());
    rec.client_bytes(b.data(), b.size(), 2, 2, sink);
    REQUIRE(sink.events.size() == 1);
    CHECK(sink.events[0].bytes == "*1\r\n$4\r\nPING\r\n");
  }

  TEST_CASE("lost bytes stop the recording with a drop event that counts them") {
    capture::StreamRecorder rec(1, true);
    Collect sink;
    rec.lose(42, 1, sink);
    std::string req = "*1\r\n$4\r\nPING\r\n";
    rec.client_bytes(req.data(), req.size(), 2, 2, sink);
    REQUIRE(sink.events.size() == 1);
    CHECK(sink.events[0].kind == capture::EventKind::drop);
    CHECK(sink.events[0].bytes == "42");
    CHECK(rec.stopped());
  }
}
