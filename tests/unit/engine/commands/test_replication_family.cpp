#include "tests/unit/engine/commands/conn_test_util.hpp"

#include "engine/engine.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace keyshift::engine::conn_test;
using keyshift::engine::k_session_blocked;
using keyshift::engine::RespValue;
using keyshift::engine::Session;

TEST_SUITE("engine::replication_family") {
  TEST_CASE("WAIT and WAITAOF answer at once when nothing needs acknowledging") {
    Fixture f;
    Session& c = f.client();
    f.run(c, {"SET", "k", "v"});
    CHECK(is_int(f.run(c, {"WAIT", "0", "0"}), 0));
    CHECK(is_int(f.run(c, {"WAIT", "-3", "100"}), 0));
    RespValue aof = f.run(c, {"WAITAOF", "0", "0", "0"});
    REQUIRE(aof.elements.size() == 2);
    CHECK(is_int(aof.elements[0], 0));
    CHECK(is_int(aof.elements[1], 0));
  }

  TEST_CASE("WAIT for a replica blocks until its timeout and then counts no replica") {
    Fixture f;
    Session& w = f.client();
    f.send(w, {"WAIT", "1", "500"});
    CHECK(w.has(k_session_blocked));
    CHECK(w.out.empty());
    CHECK(f.engine.next_block_deadline_ms() == f.clock.now_ms() + 500);
    f.clock.advance_ms(501);
    f.engine.handle_blocked_timeouts();
    CHECK(!w.has(k_session_blocked));
    CHECK(w.out == ":0\r\n");
  }

  TEST_CASE("WAITAOF for a replica blocks until its timeout and then answers [0, 0]") {
    Fixture f;
    Session& w = f.client();
    f.send(w, {"WAITAOF", "0", "2", "10"});
    CHECK(w.has(k_session_blocked));
    f.clock.advance_ms(11);
    f.engine.handle_blocked_timeouts();
    CHECK(w.out == "*2\r\n:0\r\n:0\r\n");
  }

  TEST_CASE("timeout 0 waits for ever, and CLIENT UNBLOCK answers as a timeout would") {
    Fixture f;
    Session& w = f.client();
    Session& admin = f.client();
    std::string id = std::to_string(w.id());
    f.send(w, {"WAIT", "2", "0"});
    f.clock.advance_ms(1000LL * 3600 * 24);
    f.engine.handle_blocked_timeouts();
    CHECK(w.has(k_session_blocked));
    CHECK(is_int(f.run(admin, {"CLIENT", "UNBLOCK", id}), 1));
    CHECK(w.out == ":0\r\n");
    w.out.clear();
    f.send(w, {"WAITAOF", "0", "1", "0"});
    CHECK(is_int(f.run(admin, {"CLIENT", "UNBLOCK", id, "TIMEOUT"}), 1));
    CHECK(w.out == "*2\r\n:0\r\n:0\r\n");
    w.out.clear();
    f.send(w, {"WAIT", "1", "0"});
    CHECK(is_int(f.run(admin, {"CLIENT", "UNBLOCK", id, "ERROR"}), 1));
    CHECK(w.out == "-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n");
  }

  TEST_CASE("inside MULTI neither blocks: EXEC holds the counts") {
    Fixture f;
    Session& c = f.client();
    CHECK(is_ok(f.run(c, {"MULTI"})));
    CHECK(is_simple(f.run(c, {"WAIT", "3", "0"}), "QUEUED"));
    CHECK(is_simple(f.run(c, {"WAITAOF", "0", "3", "0"}), "QUEUED"));
    RespValue exec = f.run(c, {"EXEC"});
    CHECK(!c.has(k_session_blocked));
    REQUIRE(exec.elements.size() == 2);
    CHECK(is_int(exec.elements[0], 0));
    REQUIRE(exec.elements[1].elements.size() == 2);
    CHECK(is_int(exec.elements[1].elements[0], 0));
    CHECK(is_int(exec.elements[1].elements[1], 0));
  }

  TEST_CASE("arguments are checked in Valkey's order with Valkey's texts") {
    Fixture f;
    Session& c = f.client();
    CHECK(is_err(f.run(c, {"WAIT", "x", "-1"}), "ERR value is not an integer or out of range"));
    CHECK(is_err(f.run(c, {"WAIT", "0", "1.5"}), "ERR timeout is not an integer or out of range"));
    CHECK(is_err(f.run(c, {"WAIT", "0", "-1"}), "ERR timeout is negative"));
    CHECK(is_err(f.run(c, {"WAIT", "0", "9223372036854775807"}), "ERR timeout is out of range"));
    CHECK(is_err(f.run(c, {"WAITAOF", "2", "x", "x"}),
                 "ERR value is out of range, value must between 0 and 1"));
    CHECK(is_err(f.run(c, {"WAITAOF", "0", "-1", "x"}),
                 "ERR value is out of range, must be positive"));
    CHECK(is_err(f.run(c, {"WAITAOF", "1", "0", "x"}),
                 "ERR timeout is not an integer or out of range"));
    // appendonly is checked after the timeout
    CHECK(is_err(f.run(c, {"WAITAOF", "1", "0", "0"}),
                 "ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled."));
    CHECK(is_err(f.run(c, {"WAIT", "0"}), "ERR wrong number of arguments for 'wait' command"));
    CHECK(is_err(f.run(c, {"WAITAOF", "0", "0"}),
                 "ERR wrong number of arguments for 'waitaof' command"));
  }
}
