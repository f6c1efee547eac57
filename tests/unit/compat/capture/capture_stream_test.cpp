#include "compat/capture/capture_stream.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

namespace capture = keyshift::compat::capture;

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
