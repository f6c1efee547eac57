#include "compat/capture/capture_file.hpp"

#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace capture = keyshift::compat::capture;

namespace {

capture::CaptureHeader sample_header() {
  capture::CaptureHeader h;
  h.add("source.redis_version", "7.0.15");
  h.add("capture.listen", "127.0.0.1:7000");
  return h;
}

std::vector<capture::CaptureEvent> sample_events() {
  std::vector<capture::CaptureEvent> out;
  capture::CaptureEvent open;
  open.kind = capture::EventKind::open;
  open.conn_id = 1;
  open.start_ns = open.end_ns = 1'700'000'000'000'000'000;
  open.peer = "127.0.0.1:51234";
  out.push_back(open);
  capture::CaptureEvent req;
  req.kind = capture::EventKind::request;
  req.conn_id = 1;
  req.start_ns = 1'700'000'000'000'001'000;
  req.end_ns = 1'700'000'000'000'002'000;
  req.batch = 3;
  req.db = 5;
  req.resp = 3;
  req.client_name = "app";
  req.client_lib = "redis-py 4.3";
  req.flags = capture::k_flag_redacted;
  req.bytes = std::string("*2\r\n$3\r\nGET\r\n$3\r\nk\0y\r\n", 22);
  out.push_back(req);
  capture::CaptureEvent rep = req;
  rep.kind = capture::EventKind::reply;
  rep.flags = capture::k_flag_none;
  rep.bytes = "$-1\r\n";
  out.push_back(rep);
  capture::CaptureEvent close;
  close.kind = capture::EventKind::close;
  close.conn_id = 1;
  out.push_back(close);
  return out;
}

std::string encode_file(const std::vector<capture::CaptureEvent>& events) {
  std::string out;
  capture::encode_header(sample_header(), out);
  for (const auto& e : events) {
    capture::encode_event(capture::view_of(e), out);
  }
  capture::encode_end(events.size(), out);
  return out;
}

bool same(const capture::CaptureEvent& a, const capture::CaptureEvent& b) {
  return a.kind == b.kind && a.flags == b.flags && a.conn_id == b.conn_id &&
         a.start_ns == b.start_ns && a.end_ns == b.end_ns && a.batch == b.batch && a.db == b.db &&
         a.resp == b.resp && a.peer == b.peer && a.client_name == b.client_name &&
         a.client_lib == b.client_lib && a.bytes == b.bytes;
}

std::vector<capture::CaptureEvent> read_all(capture::CaptureFileReader& r) {
  std::vector<capture::CaptureEvent> out;
  capture::CaptureEvent e;
  while (r.next(e)) {
    out.push_back(e);
  }
  return out;
}

}  // namespace

TEST_SUITE("compat::capture_file") {
  TEST_CASE("every field of every event survives a round trip through the encoding") {
    auto events = sample_events();
    std::string bytes = encode_file(events);
    auto r = capture::CaptureFileReader::from_bytes(bytes);
    REQUIRE(r.has_value());
    CHECK(r->version() == capture::k_capture_version);
    REQUIRE(r->header().find("source.redis_version") != nullptr);
    CHECK(*r->header().find("source.redis_version") == "7.0.15");
    CHECK(r->header().find("missing") == nullptr);
    auto back = read_all(*r);
    REQUIRE(back.size() == events.size());
    for (size_t i = 0; i < events.size(); ++i) {
      CHECK(same(back[i], events[i]));
    }
    CHECK(r->complete());
    CHECK_FALSE(r->damage().has_value());
  }

  TEST_CASE("encoded_size is exactly what encode_event appends") {
    for (const auto& e : sample_events()) {
      std::string out;
      capture::encode_event(capture::view_of(e), out);
      CHECK(out.size() == capture::encoded_size(capture::view_of(e)));
    }
  }

  TEST_CASE("a file cut at any byte offset reads every whole record before the cut") {
    auto events = sample_events();
    std::string bytes = encode_file(events);
    std::string header;
    capture::encode_header(sample_header(), header);
    // Where each record ends, so the reader's damage offset can be checked.
    std::vector<size_t> ends{header.size()};
    for (const auto& e : events) {
      ends.push_back(ends.back() + capture::encoded_size(capture::view_of(e)));
    }
    for (size_t cut = 0; cut < bytes.size(); ++cut) {
      CAPTURE(cut);
      std::string_view part(bytes.data(), cut);
      auto r = capture::CaptureFileReader::from_bytes(part);
      if (cut < header.size()) {
        CHECK_FALSE(r.has_value());
        continue;
      }
      REQUIRE(r.has_value());
      auto back = read_all(*r);
      size_t whole = 0;
      while (whole < events.size() && ends[whole + 1] <= cut) {
        ++whole;
      }
      CHECK(back.size() == whole);
      for (size_t i = 0; i < back.size(); ++i) {
        CHECK(same(back[i], events[i]));
      }
      CHECK_FALSE(r->complete());
      REQUIRE(r->damage().has_value());
      CHECK(r->damage()->offset == ends[whole]);
    }
  }

  TEST_CASE("a flipped byte in a record stops reading there with the record's offset") {
    auto events = sample_events();
    std::string bytes = encode_file(events);
    std::string header;
    capture::encode_header(sample_header(), header);
    size_t second = header.size() + capture::encoded_size(capture::view_of(events[0]));
    bytes[second + 30] = static_cast<char>(bytes[second + 30] ^ 0x40);
    auto r = capture::CaptureFileReader::from_bytes(bytes);
    REQUIRE(r.has_value());
    CHECK(read_all(*r).size() == 1);
    REQUIRE(r->damage().has_value());
    CHECK(r->damage()->offset == second);
    CHECK(r->damage()->reason.find("checksum") != std::string::npos);
  }

  TEST_CASE("a file that does not start with the magic is refused") {
    std::string bytes = encode_file(sample_events());
    bytes[0] = 'X';
    auto r = capture::CaptureFileReader::from_bytes(bytes);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().offset == 0);
    CHECK(r.error().message.find("magic") != std::string::npos);
    CHECK_FALSE(capture::CaptureFileReader::from_bytes("*1\r\n$4\r\nPING\r\n").has_value());
  }

  TEST_CASE("a file of another format version is refused, naming both versions") {
    std::string bytes = encode_file(sample_events());
    bytes[capture::k_capture_magic.size()] = 2;
    auto r = capture::CaptureFileReader::from_bytes(bytes);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().message.find("version 2") != std::string::npos);
    CHECK(r.error().message.find("version 1") != std::string::npos);
  }

  TEST_CASE(
      "the writer renames its file into place on close and leaves a readable temp file "
      "before") {
    char dir_template[] = "/tmp/keyshift-capture-test-XXXXXX";
    REQUIRE(::mkdtemp(dir_template) != nullptr);
    std::string path = std::string(dir_template) + "/out.ksc";
    auto w = capture::CaptureFileWriter::create(path, sample_header());
    REQUIRE(w.has_value());
    auto events = sample_events();
    for (const auto& e : events) {
      CHECK_FALSE(w->append(capture::view_of(e)).has_value());
    }
    CHECK_FALSE(w->flush().has_value());
    {
      // Before close: the temporary file reads up to its tail, without the end record.
      auto r = capture::CaptureFileReader::open(w->temp_path());
      REQUIRE(r.has_value());
      CHECK(read_all(*r).size() == events.size());
      CHECK_FALSE(r->complete());
      CHECK(r->damage().has_value());
    }
    CHECK(::access(path.c_str(), F_OK) != 0);
    std::string temp = w->temp_path();
    CHECK_FALSE(w->close().has_value());
    CHECK(::access(temp.c_str(), F_OK) != 0);
    auto r = capture::CaptureFileReader::open(path);
    REQUIRE(r.has_value());
    CHECK(read_all(*r).size() == events.size());
    CHECK(r->complete());
    std::remove(path.c_str());
    ::rmdir(dir_template);
  }
}
