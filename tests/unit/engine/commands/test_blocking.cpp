#include "tests/unit/engine/commands/conn_test_util.hpp"

#include "engine/engine.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace keyshift::engine::conn_test;
using keyshift::engine::EngineConfig;
using keyshift::engine::k_session_blocked;
using keyshift::engine::RespValue;
using keyshift::engine::Session;

namespace {

/// The single reply waiting in `s.out` (after a client was unblocked), removed.
RespValue take_one(Session& s) {
  auto all = Fixture::drain(s);
  REQUIRE(all.size() == 1);
  return all[0];
}

}  // namespace

TEST_SUITE("engine::blocking") {
  TEST_CASE("BLPOP pops at once from the first non-empty list in argument order") {
    Fixture f;
    Session& c = f.client();
    f.run(c, {"RPUSH", "b", "1", "2"});
    f.run(c, {"RPUSH", "c", "3"});
    CHECK(is_strings(f.run(c, {"BLPOP", "a", "b", "c", "0"}), {"b", "1"}));
    CHECK(is_strings(f.run(c, {"BRPOP", "a", "b", "c", "0"}), {"b", "2"}));
    CHECK(is_strings(f.run(c, {"BRPOP", "b", "c", "0"}), {"c", "3"}));
    f.run(c, {"SET", "s", "x"});
    f.run(c, {"RPUSH", "l", "1"});
    CHECK(is_err(f.run(c, {"BLPOP", "missing", "s", "l", "0"}),
                 "WRONGTYPE Operation against a key holding the wrong kind of value"));
    CHECK(is_strings(f.run(c, {"BLPOP", "missing", "l", "s", "0"}), {"l", "1"}));
  }

  TEST_CASE("timeouts are seconds with fractions, checked as Valkey does") {
    Fixture f;
    Session& c = f.client();
    CHECK(is_err(f.run(c, {"BLPOP", "k", "-1"}), "ERR timeout is negative"));
    CHECK(is_err(f.run(c, {"BLPOP", "k", "-0.5"}), "ERR timeout is negative"));
    CHECK(is_err(f.run(c, {"BLPOP", "k", "abc"}), "ERR timeout is not a float or out of range"));
    CHECK(is_err(f.run(c, {"BLPOP", "k", "nan"}), "ERR timeout is not a float or out of range"));
    CHECK(is_err(f.run(c, {"BLPOP", "k", "1e400"}), "ERR timeout is out of range"));
    CHECK(is_err(f.run(c, {"BRPOPLPUSH", "k", "d", "x"}),
                 "ERR timeout is not a float or out of range"));
    CHECK(is_err(f.run(c, {"BLMOVE", "k", "d", "UP", "LEFT", "0"}), "ERR syntax error"));
    CHECK(is_err(f.run(c, {"BLPOP", "k"}), "ERR wrong number of arguments for 'blpop' command"));
  }

  TEST_CASE("a blocked BLPOP gets no reply until another client pushes, then the element") {
    Fixture f;
    Session& waiter = f.client();
    Session& pusher = f.client();
    f.send(waiter, {"BLPOP", "q", "0"});
    CHECK(waiter.out.empty());
    CHECK(waiter.has(k_session_blocked));
    RespValue info = f.run(pusher, {"INFO", "clients"});
    CHECK(info.str.find("blocked_clients:1\r\n") != std::string::npos);
    CHECK(info.str.find("total_blocking_keys:1\r\n") != std::string::npos);
    CHECK(is_int(f.run(pusher, {"RPUSH", "q", "a", "b"}), 2));
    CHECK(!waiter.has(k_session_blocked));
    CHECK(is_strings(take_one(waiter), {"q", "a"}));
    CHECK(is_int(f.run(pusher, {"LLEN", "q"}), 1));
    info = f.run(pusher, {"INFO", "clients"});
    CHECK(info.str.find("blocked_clients:0\r\n") != std::string::npos);
  }

  TEST_CASE("clients blocked on one key are served first come, first served") {
    Fixture f;
    Session& a = f.client();
    Session& b = f.client();
    Session& c = f.client();
    Session& p = f.client();
    f.send(a, {"BLPOP", "q", "0"});
    f.send(b, {"BRPOP", "q", "0"});
    f.send(c, {"BLPOP", "q", "0"});
    f.run(p, {"RPUSH", "q", "1"});
    CHECK(is_strings(take_one(a), {"q", "1"}));
    CHECK(b.has(k_session_blocked));
    CHECK(c.has(k_session_blocked));
    f.run(p, {"RPUSH", "q", "2", "3"});
    CHECK(is_strings(take_one(b), {"q", "3"}));
    CHECK(is_strings(take_one(c), {"q", "2"}));
    CHECK(is_int(f.run(p, {"EXISTS", "q"}), 0));
  }

  TEST_CASE("a client blocked on several keys is served once, from the key that got data") {
    Fixture f;
    Session& w = f.client();
    Session& p = f.client();
    f.send(w, {"BRPOP", "k1", "k2", "k3", "0"});
    f.run(p, {"RPUSH", "k3", "x"});
    CHECK(is_strings(take_one(w), {"k3", "x"}));
    f.run(p, {"RPUSH", "k1", "y"});
    CHECK(w.out.empty());
    CHECK(is_int(f.run(p, {"LLEN", "k1"}), 1));
  }

  TEST_CASE("a blocked client times out after its deadline with a null array") {
    Fixture f;
    Session& w = f.client();
    f.send(w, {"BLPOP", "q", "0.5"});
    CHECK(f.engine.next_block_deadline_ms() == f.clock.now_ms() + 500);
    f.clock.advance_ms(500);
    f.engine.handle_blocked_timeouts();
    CHECK(w.has(k_session_blocked));  // due once the clock is past the deadline
    f.clock.advance_ms(1);
    f.engine.handle_blocked_timeouts();
    CHECK(!w.has(k_session_blocked));
    CHECK(w.out == "*-1\r\n");
    CHECK(f.engine.next_block_deadline_ms() == -1);
    w.out.clear();
    f.run(w, {"HELLO", "3"});
    f.send(w, {"BRPOP", "q", "0.001"});
    f.clock.advance_ms(2);
    f.engine.cron();
    CHECK(w.out == "_\r\n");
  }

  TEST_CASE("timeout 0 waits forever") {
    Fixture f;
    Session& w = f.client();
    f.send(w, {"BLPOP", "q", "0"});
    CHECK(f.engine.next_block_deadline_ms() == -1);
    f.clock.advance_ms(1000LL * 3600 * 24 * 365);
    f.engine.handle_blocked_timeouts();
    CHECK(w.has(k_session_blocked));
  }

  TEST_CASE("blocking commands inside MULTI answer at once as a timeout") {
    Fixture f;
    Session& c = f.client();
    f.run(c, {"MULTI"});
    f.run(c, {"BLPOP", "q", "0"});
    f.run(c, {"BLMOVE", "q", "d", "LEFT", "RIGHT", "0"});
    f.run(c, {"BLMPOP", "0", "1", "q", "LEFT"});
    f.run(c, {"RPUSH", "q", "v"});
    f.run(c, {"BRPOP", "q", "0"});
    RespValue r = f.run(c, {"EXEC"});
    REQUIRE(r.elements.size() == 5);
    CHECK(is_null(r.elements[0]));
    CHECK(is_null(r.elements[1]));
    CHECK(is_null(r.elements[2]));
    CHECK(is_int(r.elements[3], 1));
    CHECK(is_strings(r.elements[4], {"q", "v"}));
    CHECK(!c.has(k_session_blocked));
    CHECK(!c.has(keyshift::engine::k_session_deny_blocking));
  }

  TEST_CASE("a push inside MULTI/EXEC serves the blocked client after the transaction") {
    Fixture f;
    Session& w = f.client();
    Session& p = f.client();
    f.send(w, {"BLPOP", "q", "0"});
    f.run(p, {"MULTI"});
    f.run(p, {"RPUSH", "q", "a"});
    f.run(p, {"RPUSH", "q", "b"});
    f.run(p, {"LRANGE", "q", "0", "-1"});
    RespValue r = f.run(p, {"EXEC"});
    REQUIRE(r.elements.size() == 3);
    CHECK(is_strings(r.elements[2], {"a", "b"}));  // nothing was served mid-transaction
    CHECK(is_strings(take_one(w), {"q", "a"}));
    // A list pushed and emptied inside one transaction serves nobody.
    f.send(w, {"BLPOP", "q2", "0"});
    f.run(p, {"MULTI"});
    f.run(p, {"RPUSH", "q2", "a"});
    f.run(p, {"LPOP", "q2"});
    f.run(p, {"EXEC"});
    CHECK(w.has(k_session_blocked));
    CHECK(w.out.empty());
  }

  TEST_CASE("a key that becomes another type or is deleted leaves the client blocked") {
    Fixture f;
    Session& w = f.client();
    Session& p = f.client();
    f.send(w, {"BLPOP", "k", "0"});
    f.run(p, {"SET", "k", "string"});
    CHECK(w.has(k_session_blocked));
    CHECK(w.out.empty());  // no WRONGTYPE for the waiting client
    f.run(p, {"DEL", "k"});
    f.run(p, {"SADD", "k", "m"});
    CHECK(w.has(k_session_blocked));
    f.run(p, {"DEL", "k"});
    f.run(p, {"LPUSH", "k", "v"});
    CHECK(is_strings(take_one(w), {"k", "v"}));
  }

  TEST_CASE("BLMOVE and BRPOPLPUSH move once the source gets data, and the push serves more") {
    Fixture f;
    Session& mover = f.client();
    Session& popper = f.client();
    Session& p = f.client();
    f.run(p, {"RPUSH", "src", "x"});
    CHECK(is_bulk(f.run(mover, {"BLMOVE", "src", "dst", "LEFT", "LEFT", "0"}), "x"));
    f.send(mover, {"BLMOVE", "src", "dst", "RIGHT", "LEFT", "0"});
    f.send(popper, {"BLPOP", "dst2", "0"});
    f.run(p, {"DEL", "dst"});
    f.run(p, {"RPUSH", "src", "1", "2"});
    CHECK(is_bulk(take_one(mover), "2"));
    CHECK(is_strings(f.run(p, {"LRANGE", "dst", "0", "-1"}), {"2"}));
    // BRPOPLPUSH into a key another client waits on serves that client too.
    f.send(mover, {"BRPOPLPUSH", "empty", "dst2", "0"});
    f.run(p, {"RPUSH", "empty", "z"});
    CHECK(is_bulk(take_one(mover), "z"));
    CHECK(is_strings(take_one(popper), {"dst2", "z"}));
    // A destination of another type is reported when the move is tried.
    f.run(p, {"SET", "str", "v"});
    f.send(mover, {"BLMOVE", "nolist", "str", "LEFT", "LEFT", "0"});
    f.run(p, {"RPUSH", "nolist", "e"});
    CHECK(is_err(take_one(mover),
                 "WRONGTYPE Operation against a key holding the wrong kind of value"));
    CHECK(is_err(f.run(p, {"BLMOVE", "str", "d", "LEFT", "LEFT", "0"}),
                 "WRONGTYPE Operation against a key holding the wrong kind of value"));
  }

  TEST_CASE("BLMPOP pops up to COUNT elements, now or once served") {
    Fixture f;
    Session& w = f.client();
    Session& p = f.client();
    f.run(p, {"RPUSH", "b", "1", "2", "3"});
    RespValue r = f.run(w, {"BLMPOP", "0", "2", "a", "b", "RIGHT", "COUNT", "2"});
    REQUIRE(r.elements.size() == 2);
    CHECK(is_bulk(r.elements[0], "b"));
    CHECK(is_strings(r.elements[1], {"3", "2"}));
    f.send(w, {"BLMPOP", "0", "1", "c", "LEFT", "COUNT", "10"});
    f.run(p, {"RPUSH", "c", "x", "y"});
    r = take_one(w);
    REQUIRE(r.elements.size() == 2);
    CHECK(is_strings(r.elements[1], {"x", "y"}));
    CHECK(is_err(f.run(w, {"BLMPOP", "0", "0", "a", "LEFT"}),
                 "ERR numkeys should be greater than 0"));
    CHECK(is_err(f.run(w, {"BLMPOP", "0", "3", "a", "LEFT"}), "ERR syntax error"));
    CHECK(is_err(f.run(w, {"BLMPOP", "0", "1", "a", "UP"}), "ERR syntax error"));
    CHECK(is_err(f.run(w, {"BLMPOP", "0", "1", "a", "LEFT", "COUNT", "0"}),
                 "ERR count should be greater than 0"));
    CHECK(is_err(f.run(w, {"BLMPOP", "-1", "1", "a", "LEFT"}), "ERR timeout is negative"));
  }

  TEST_CASE("CLIENT UNBLOCK ends a wait as a timeout or with the UNBLOCKED error") {
    Fixture f;
    Session& w = f.client();
    Session& admin = f.client();
    std::string id = std::to_string(w.id());
    f.send(w, {"BLPOP", "q", "0"});
    CHECK(is_int(f.run(admin, {"CLIENT", "UNBLOCK", id}), 1));
    CHECK(w.out == "*-1\r\n");
    w.out.clear();
    CHECK(is_int(f.run(admin, {"CLIENT", "UNBLOCK", id}), 0));  // not blocked any more
    f.send(w, {"BLMOVE", "q", "d", "LEFT", "LEFT", "0"});
    CHECK(is_int(f.run(admin, {"CLIENT", "UNBLOCK", id, "ERROR"}), 1));
    CHECK(is_err(take_one(w), "UNBLOCKED client unblocked via CLIENT UNBLOCK"));
    CHECK(is_err(f.run(admin, {"CLIENT", "UNBLOCK", id, "MAYBE"}),
                 "ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR"));
    CHECK(is_int(f.run(admin, {"CLIENT", "UNBLOCK", "99999"}), 0));
    RespValue info = f.run(admin, {"INFO", "errorstats"});
    CHECK(info.str.find("errorstat_UNBLOCKED:count=1") != std::string::npos);
  }

  TEST_CASE("SWAPDB, RENAME, MOVE and COPY serve clients waiting for the key they create") {
    Fixture f;
    Session& w = f.client();
    Session& p = f.client();
    f.send(w, {"BLPOP", "k", "0"});
    f.run(p, {"SELECT", "1"});
    f.run(p, {"RPUSH", "k", "from-db1"});
    f.run(p, {"SWAPDB", "0", "1"});
    CHECK(is_strings(take_one(w), {"k", "from-db1"}));

    f.send(w, {"BLPOP", "r", "0"});
    f.run(p, {"SELECT", "0"});
    f.run(p, {"RPUSH", "tmp", "renamed"});
    f.run(p, {"RENAME", "tmp", "r"});
    CHECK(is_strings(take_one(w), {"r", "renamed"}));

    f.send(w, {"BLPOP", "m", "0"});
    f.run(p, {"SELECT", "2"});
    f.run(p, {"RPUSH", "m", "moved"});
    f.run(p, {"MOVE", "m", "0"});
    CHECK(is_strings(take_one(w), {"m", "moved"}));

    f.send(w, {"BLPOP", "c", "0"});
    f.run(p, {"RPUSH", "orig", "copied"});
    f.run(p, {"COPY", "orig", "c", "DB", "0"});
    CHECK(is_strings(take_one(w), {"c", "copied"}));
  }

  TEST_CASE("SORT STORE serves a client waiting for the list it creates") {
    Fixture f;
    Session& w = f.client();
    Session& p = f.client();
    f.send(w, {"BLPOP", "sorted", "0"});
    f.run(p, {"SADD", "src", "3", "1", "2"});
    CHECK(is_int(f.run(p, {"SORT", "src", "STORE", "sorted"}), 3));
    CHECK(is_strings(take_one(w), {"sorted", "1"}));
    CHECK(is_int(f.run(p, {"LLEN", "sorted"}), 2));
  }

  TEST_CASE("a client waits in its own database") {
    Fixture f;
    Session& w = f.client();
    Session& p = f.client();
    f.run(w, {"SELECT", "3"});
    f.send(w, {"BLPOP", "k", "0"});
    f.run(p, {"RPUSH", "k", "db0"});
    CHECK(w.has(k_session_blocked));
    f.run(p, {"SELECT", "3"});
    f.run(p, {"RPUSH", "k", "db3"});
    CHECK(is_strings(take_one(w), {"k", "db3"}));
  }

  TEST_CASE("a closed blocked client is forgotten") {
    Fixture f;
    Session& w = f.client();
    Session& p = f.client();
    f.send(w, {"BLPOP", "k", "1"});
    f.engine.close_session(w);
    CHECK(f.engine.next_block_deadline_ms() == -1);
    f.run(p, {"RPUSH", "k", "v"});
    CHECK(is_int(f.run(p, {"LLEN", "k"}), 1));
  }

  TEST_CASE("a blocking command counts once, when it replies, and MONITOR sees it once") {
    Fixture f;
    Session& m = f.client();
    Session& w = f.client();
    Session& p = f.client();
    f.run(m, {"MONITOR"});
    uint64_t before = f.engine.stats().total_commands_processed;
    f.send(w, {"BLPOP", "k", "0"});
    CHECK(f.engine.registry().find("blpop")->stats.calls == 0);
    CHECK(f.engine.stats().total_commands_processed == before);
    f.run(p, {"RPUSH", "k", "v"});
    CHECK(f.engine.registry().find("blpop")->stats.calls == 1);
    CHECK(f.engine.stats().total_commands_processed == before + 2);
    size_t first = m.out.find("\"BLPOP\"");
    REQUIRE(first != std::string::npos);
    CHECK(m.out.find("\"BLPOP\"", first + 1) == std::string::npos);
    f.send(w, {"BLPOP", "k", "0.01"});
    f.clock.advance_ms(20);
    f.engine.handle_blocked_timeouts();
    CHECK(f.engine.registry().find("blpop")->stats.calls == 2);
  }

  TEST_CASE("CLIENT LIST flags a blocked client b and names its command") {
    Fixture f;
    Session& w = f.client();
    Session& c = f.client();
    f.send(w, {"BLPOP", "k", "0"});
    RespValue list = f.run(c, {"CLIENT", "LIST"});
    std::string line = "id=" + std::to_string(w.id()) + " ";
    size_t at = list.str.find(line);
    REQUIRE(at != std::string::npos);
    std::string mine = list.str.substr(at, list.str.find('\n', at) - at);
    CHECK(mine.find(" flags=b ") != std::string::npos);
    CHECK(mine.find(" cmd=blpop ") != std::string::npos);
  }
}
