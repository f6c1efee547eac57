#include "tests/unit/engine/commands/conn_test_util.hpp"

#include "engine/engine.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace keyshift::engine::conn_test;
using keyshift::engine::EngineConfig;
using keyshift::engine::RespValue;
using keyshift::engine::Session;

namespace {

bool is_null_array_resp2(Session& s) {
  return s.out == "*-1\r\n";
}

}  // namespace

TEST_SUITE("engine::transactions") {
  TEST_CASE("MULTI queues commands and EXEC runs them in order, replying with every result") {
    Fixture f;
    Session& c = f.client();
    CHECK(is_ok(f.run(c, {"MULTI"})));
    CHECK(is_simple(f.run(c, {"SET", "k", "1"}), "QUEUED"));
    CHECK(is_simple(f.run(c, {"INCR", "k"}), "QUEUED"));
    CHECK(is_simple(f.run(c, {"GET", "k"}), "QUEUED"));
    CHECK(is_simple(f.run(c, {"PING"}), "QUEUED"));
    RespValue r = f.run(c, {"EXEC"});
    REQUIRE(r.type == RespValue::Type::array);
    REQUIRE(r.elements.size() == 4);
    CHECK(is_ok(r.elements[0]));
    CHECK(is_int(r.elements[1], 2));
    CHECK(is_bulk(r.elements[2], "2"));
    CHECK(is_simple(r.elements[3], "PONG"));
    CHECK(is_bulk(f.run(c, {"GET", "k"}), "2"));
  }

  TEST_CASE("EXEC and DISCARD without MULTI are errors, and DISCARD drops the queue") {
    Fixture f;
    Session& c = f.client();
    CHECK(is_err(f.run(c, {"EXEC"}), "ERR EXEC without MULTI"));
    CHECK(is_err(f.run(c, {"DISCARD"}), "ERR DISCARD without MULTI"));
    f.run(c, {"MULTI"});
    f.run(c, {"SET", "k", "v"});
    CHECK(is_ok(f.run(c, {"DISCARD"})));
    CHECK(is_null(f.run(c, {"GET", "k"})));
    CHECK(is_err(f.run(c, {"EXEC"}), "ERR EXEC without MULTI"));
  }

  TEST_CASE("MULTI and WATCH inside MULTI are refused and doom the transaction") {
    Fixture f;
    Session& c = f.client();
    f.run(c, {"MULTI"});
    CHECK(is_err(f.run(c, {"MULTI"}), "ERR Command not allowed inside a transaction"));
    CHECK(
        is_err(f.run(c, {"EXEC"}), "EXECABORT Transaction discarded because of previous errors."));
    f.run(c, {"MULTI"});
    CHECK(is_err(f.run(c, {"WATCH", "x"}), "ERR Command not allowed inside a transaction"));
    CHECK(
        is_err(f.run(c, {"EXEC"}), "EXECABORT Transaction discarded because of previous errors."));
    // The client is out of MULTI afterwards.
    CHECK(is_simple(f.run(c, {"PING"}), "PONG"));
  }

  TEST_CASE("an unknown command or a wrong arity while queueing aborts the whole EXEC") {
    Fixture f;
    Session& c = f.client();
    f.run(c, {"MULTI"});
    f.run(c, {"SET", "a", "1"});
    CHECK(is_err(f.run(c, {"NOSUCHCMD", "x"}),
                 "ERR unknown command 'NOSUCHCMD', with args beginning with: 'x' "));
    CHECK(is_simple(f.run(c, {"SET", "b", "2"}), "QUEUED"));
    CHECK(
        is_err(f.run(c, {"EXEC"}), "EXECABORT Transaction discarded because of previous errors."));
    CHECK(is_int(f.run(c, {"EXISTS", "a", "b"}), 0));

    f.run(c, {"MULTI"});
    CHECK(is_err(f.run(c, {"GET"}), "ERR wrong number of arguments for 'get' command"));
    CHECK(
        is_err(f.run(c, {"EXEC"}), "EXECABORT Transaction discarded because of previous errors."));
  }

  TEST_CASE("errors raised by a command while EXEC runs it do not stop the others") {
    Fixture f;
    Session& c = f.client();
    f.run(c, {"SET", "s", "text"});
    f.run(c, {"MULTI"});
    f.run(c, {"INCR", "s"});
    f.run(c, {"SET", "t", "1"});
    RespValue r = f.run(c, {"EXEC"});
    REQUIRE(r.elements.size() == 2);
    CHECK(is_err(r.elements[0], "ERR value is not an integer or out of range"));
    CHECK(is_ok(r.elements[1]));
  }

  TEST_CASE("a WATCHed key written by another client makes EXEC reply a null array") {
    Fixture f;
    Session& a = f.client();
    Session& b = f.client();
    f.run(a, {"SET", "x", "30"});
    CHECK(is_ok(f.run(a, {"WATCH", "x"})));
    f.run(b, {"SET", "x", "40"});
    f.run(a, {"MULTI"});
    f.run(a, {"SET", "x", "50"});
    f.send(a, {"EXEC"});
    CHECK(is_null_array_resp2(a));
    a.out.clear();
    CHECK(is_bulk(f.run(a, {"GET", "x"}), "40"));
    // After a failed EXEC the key is no longer watched.
    f.run(a, {"MULTI"});
    f.run(a, {"PING"});
    f.run(b, {"SET", "x", "60"});
    CHECK(f.run(a, {"EXEC"}).elements.size() == 1);
  }

  TEST_CASE("EXEC on unmodified WATCHed keys runs, and UNWATCH forgets a modification") {
    Fixture f;
    Session& a = f.client();
    Session& b = f.client();
    f.run(a, {"WATCH", "x", "y"});
    f.run(a, {"WATCH", "z"});
    f.run(a, {"MULTI"});
    f.run(a, {"PING"});
    CHECK(f.run(a, {"EXEC"}).elements.size() == 1);

    f.run(a, {"WATCH", "x"});
    f.run(b, {"SET", "x", "1"});
    CHECK(is_ok(f.run(a, {"UNWATCH"})));
    f.run(a, {"MULTI"});
    f.run(a, {"PING"});
    CHECK(f.run(a, {"EXEC"}).elements.size() == 1);
    CHECK(is_ok(f.run(a, {"UNWATCH"})));
  }

  TEST_CASE("the client's own writes before MULTI and DISCARD clear the WATCH state") {
    Fixture f;
    Session& a = f.client();
    f.run(a, {"WATCH", "x"});
    f.run(a, {"SET", "x", "10"});
    f.run(a, {"MULTI"});
    f.run(a, {"DISCARD"});
    f.run(a, {"MULTI"});
    f.run(a, {"INCR", "x"});
    RespValue r = f.run(a, {"EXEC"});
    REQUIRE(r.elements.size() == 1);
    CHECK(is_int(r.elements[0], 11));
  }

  TEST_CASE("WATCH remembers the database of the key") {
    Fixture f;
    Session& a = f.client();
    f.run(a, {"SELECT", "5"});
    f.run(a, {"SET", "x", "30"});
    f.run(a, {"WATCH", "x"});
    f.run(a, {"SELECT", "1"});
    f.run(a, {"SET", "x", "10"});
    f.run(a, {"SELECT", "5"});
    f.run(a, {"MULTI"});
    f.run(a, {"PING"});
    CHECK(f.run(a, {"EXEC"}).elements.size() == 1);
  }

  TEST_CASE("every kind of write breaks a WATCH: EXPIRE, DEL, RENAME, MOVE, APPEND, INCRBYFLOAT") {
    Fixture f;
    Session& a = f.client();
    Session& b = f.client();
    auto broken_by = [&](std::initializer_list<std::string_view> write, std::string_view key) {
      f.run(b, {"FLUSHALL"});
      f.run(b, {"SET", "x", "1"});
      f.run(b, {"SET", "y", "2"});
      f.run(a, {"WATCH", key});
      f.run(b, write);
      f.run(a, {"MULTI"});
      f.run(a, {"PING"});
      f.send(a, {"EXEC"});
      bool broken = is_null_array_resp2(a);
      a.out.clear();
      return broken;
    };
    CHECK(broken_by({"EXPIRE", "x", "10"}, "x"));
    CHECK(broken_by({"DEL", "x"}, "x"));
    CHECK(broken_by({"RENAME", "x", "z"}, "z"));
    CHECK(broken_by({"MOVE", "x", "3"}, "x"));
    CHECK(broken_by({"APPEND", "x", "more"}, "x"));
    CHECK(broken_by({"INCRBYFLOAT", "x", "1.5"}, "x"));
    CHECK(broken_by({"SETRANGE", "x", "0", "a"}, "x"));
    CHECK(broken_by({"GETDEL", "x"}, "x"));
    CHECK(broken_by({"MSET", "y", "1", "x", "2"}, "x"));
    CHECK(broken_by({"COPY", "y", "x", "REPLACE"}, "x"));
    CHECK(broken_by({"PERSIST", "x"}, "x") == false);  // no TTL: nothing changed
    CHECK(broken_by({"GET", "x"}, "x") == false);
    CHECK(broken_by({"SET", "x", "1", "NX"}, "x") == false);
  }

  TEST_CASE("a WATCHed key that expires before EXEC fails it, even when nothing reclaimed it") {
    Fixture f;
    Session& a = f.client();
    f.run(a, {"DEBUG", "SET-ACTIVE-EXPIRE", "0"});
    f.run(a, {"SET", "k", "1", "PX", "100"});
    f.run(a, {"WATCH", "k"});
    f.clock.advance_ms(101);
    f.run(a, {"MULTI"});
    f.run(a, {"INCR", "k"});
    f.send(a, {"EXEC"});
    CHECK(is_null_array_resp2(a));
  }

  TEST_CASE("a key reclaimed by lazy or active expiry breaks the WATCH") {
    Fixture f;
    Session& a = f.client();
    Session& b = f.client();
    f.run(a, {"SET", "k", "1", "PX", "100"});
    f.run(a, {"WATCH", "k"});
    f.clock.advance_ms(200);
    CHECK(is_null(f.run(b, {"GET", "k"})));  // lazy expiry
    f.run(a, {"MULTI"});
    f.run(a, {"PING"});
    f.send(a, {"EXEC"});
    CHECK(is_null_array_resp2(a));
    a.out.clear();

    f.run(a, {"SET", "j", "1", "PX", "100"});
    f.run(a, {"WATCH", "j"});
    f.clock.advance_ms(200);
    for (int i = 0; i < 20 && f.engine.db(0).size() != 0; ++i) {
      f.engine.cron();  // active expiry
    }
    REQUIRE(f.engine.db(0).size() == 0);
    f.run(a, {"MULTI"});
    f.run(a, {"PING"});
    f.send(a, {"EXEC"});
    CHECK(is_null_array_resp2(a));
  }

  TEST_CASE("WATCHing a key that is already stale does not fail EXEC, nor does reclaiming it") {
    Fixture f;
    Session& a = f.client();
    f.run(a, {"DEBUG", "SET-ACTIVE-EXPIRE", "0"});
    f.run(a, {"SET", "x", "foo", "PX", "1"});
    f.clock.advance_ms(2);
    f.run(a, {"WATCH", "x"});
    f.run(a, {"MULTI"});
    f.run(a, {"PING"});
    CHECK(f.run(a, {"EXEC"}).elements.size() == 1);

    f.run(a, {"SET", "x", "foo", "PX", "1"});
    f.clock.advance_ms(2);
    f.run(a, {"WATCH", "x"});
    CHECK(is_int(f.run(a, {"EXISTS", "x"}), 0));  // reclaims it
    f.run(a, {"MULTI"});
    f.run(a, {"PING"});
    CHECK(f.run(a, {"EXEC"}).elements.size() == 1);

    f.run(a, {"SET", "x", "foo", "PX", "1"});
    f.clock.advance_ms(2);
    f.run(a, {"WATCH", "x"});
    f.run(a, {"FLUSHDB"});
    f.run(a, {"MULTI"});
    f.run(a, {"PING"});
    CHECK(f.run(a, {"EXEC"}).elements.size() == 1);
  }

  TEST_CASE("FLUSHDB and FLUSHALL break WATCHes of existing keys only") {
    Fixture f;
    Session& a = f.client();
    for (std::string_view flush : {"FLUSHDB", "FLUSHALL"}) {
      f.run(a, {"SET", "x", "30"});
      f.run(a, {"WATCH", "x"});
      f.run(a, {flush});
      f.run(a, {"MULTI"});
      f.run(a, {"PING"});
      f.send(a, {"EXEC"});
      CHECK(is_null_array_resp2(a));
      a.out.clear();

      f.run(a, {"WATCH", "x"});  // missing now
      f.run(a, {flush});
      f.run(a, {"MULTI"});
      f.run(a, {"PING"});
      CHECK(f.run(a, {"EXEC"}).elements.size() == 1);
    }
  }

  TEST_CASE("SWAPDB breaks WATCHes of keys that exist on either side") {
    Fixture f;
    Session& a = f.client();
    f.run(a, {"SET", "x", "30"});
    f.run(a, {"WATCH", "x"});
    f.run(a, {"SWAPDB", "0", "1"});
    f.run(a, {"MULTI"});
    f.run(a, {"PING"});
    f.send(a, {"EXEC"});
    CHECK(is_null_array_resp2(a));
    a.out.clear();

    f.run(a, {"FLUSHALL"});
    f.run(a, {"SELECT", "1"});
    f.run(a, {"SET", "x", "30"});
    f.run(a, {"SELECT", "0"});
    f.run(a, {"WATCH", "x"});
    f.run(a, {"SWAPDB", "0", "1"});
    f.run(a, {"MULTI"});
    f.run(a, {"PING"});
    f.send(a, {"EXEC"});
    CHECK(is_null_array_resp2(a));
    a.out.clear();

    f.run(a, {"FLUSHALL"});
    f.run(a, {"WATCH", "x"});
    f.run(a, {"SWAPDB", "0", "1"});  // missing on both sides
    f.run(a, {"MULTI"});
    f.run(a, {"PING"});
    CHECK(f.run(a, {"EXEC"}).elements.size() == 1);
  }

  TEST_CASE("an aborted EXEC replies with RESP3's null") {
    Fixture f;
    Session& a = f.client();
    Session& b = f.client();
    f.run(a, {"HELLO", "3"});
    f.run(a, {"WATCH", "x"});
    f.run(b, {"SET", "x", "1"});
    f.run(a, {"MULTI"});
    f.run(a, {"PING"});
    f.send(a, {"EXEC"});
    CHECK(a.out == "_\r\n");
  }

  TEST_CASE("EXEC is refused with EXECABORT when its queued commands need memory over maxmemory") {
    Fixture f;
    Session& a = f.client();
    f.run(a, {"SET", "filler", std::string(1000, 'x')});
    REQUIRE(f.engine.used_memory() > 1);
    f.run(a, {"MULTI"});
    f.run(a, {"SET", "k", "v"});
    f.engine.config().maxmemory = 1;
    CHECK(is_err(f.run(a, {"EXEC"}),
                 "EXECABORT Transaction discarded because of: OOM command not allowed when used "
                 "memory > 'maxmemory'."));
    // A command refused while queueing for OOM also dooms the transaction.
    f.run(a, {"MULTI"});
    CHECK(is_err(f.run(a, {"SET", "k", "v"}),
                 "OOM command not allowed when used memory > 'maxmemory'."));
    f.engine.config().maxmemory = 0;
    CHECK(
        is_err(f.run(a, {"EXEC"}), "EXECABORT Transaction discarded because of previous errors."));
    // Read-only queues still run when over the limit.
    f.run(a, {"MULTI"});
    f.run(a, {"GET", "k"});
    f.engine.config().maxmemory = 1;
    CHECK(f.run(a, {"EXEC"}).elements.size() == 1);
    f.engine.config().maxmemory = 0;
  }

  TEST_CASE("EXEC refused for its arity quotes the reason without the ERR code") {
    Fixture f;
    Session& a = f.client();
    f.run(a, {"MULTI"});
    CHECK(is_err(f.run(a, {"EXEC", "x"}),
                 "EXECABORT Transaction discarded because of: wrong number of arguments for "
                 "'exec' command"));
    // The transaction is gone.
    CHECK(is_err(f.run(a, {"EXEC"}), "ERR EXEC without MULTI"));
  }

  TEST_CASE("commandstats and the command counter count each command EXEC ran") {
    Fixture f;
    Session& a = f.client();
    f.run(a, {"MULTI"});
    f.run(a, {"SET", "k", "1"});
    f.run(a, {"INCR", "k"});
    f.run(a, {"INCR", "k"});
    uint64_t before = f.engine.stats().total_commands_processed;
    f.run(a, {"EXEC"});
    CHECK(f.engine.stats().total_commands_processed == before + 4);
    CHECK(f.engine.registry().find("incr")->stats.calls == 2);
    CHECK(f.engine.registry().find("set")->stats.calls == 1);
    CHECK(f.engine.registry().find("exec")->stats.calls == 1);
    CHECK(f.engine.registry().find("multi")->stats.calls == 1);
  }

  TEST_CASE("MONITOR shows MULTI, then the queued commands as EXEC runs them, then EXEC") {
    Fixture f;
    Session& m = f.client();
    Session& a = f.client();
    f.run(m, {"MONITOR"});
    f.run(a, {"MULTI"});
    f.run(a, {"SET", "k", "1"});
    f.run(a, {"EXEC"});
    std::string log = m.out;
    size_t multi = log.find("\"MULTI\"");
    size_t set = log.find("\"SET\" \"k\" \"1\"");
    size_t exec = log.find("\"EXEC\"");
    REQUIRE(multi != std::string::npos);
    REQUIRE(set != std::string::npos);
    REQUIRE(exec != std::string::npos);
    CHECK(multi < set);
    CHECK(set < exec);
  }

  TEST_CASE("CLIENT LIST shows multi= with the queue length and watch= with the WATCH count") {
    Fixture f;
    Session& a = f.client();
    f.run(a, {"WATCH", "x", "y"});
    f.run(a, {"MULTI"});
    f.run(a, {"SET", "k", "1"});
    CHECK(a.multi_count() == 1);
    CHECK(a.watch_count() == 2);
    Session& b = f.client();
    RespValue list = f.run(b, {"CLIENT", "LIST"});
    CHECK(list.str.find("flags=x db=0 sub=0 psub=0 ssub=0 multi=1 watch=2") != std::string::npos);
    CHECK(list.str.find("multi=-1 watch=0") != std::string::npos);
  }

  TEST_CASE("RESET leaves MULTI and forgets WATCHes; QUIT is not queued") {
    Fixture f;
    Session& a = f.client();
    Session& b = f.client();
    f.run(a, {"WATCH", "x"});
    f.run(a, {"MULTI"});
    f.run(a, {"SET", "k", "1"});
    CHECK(is_simple(f.run(a, {"RESET"}), "RESET"));
    CHECK(!a.has(keyshift::engine::k_session_multi));
    CHECK(a.watch_count() == 0);
    CHECK(is_err(f.run(a, {"EXEC"}), "ERR EXEC without MULTI"));
    f.run(b, {"MULTI"});
    CHECK(is_ok(f.run(b, {"QUIT"})));
  }

  TEST_CASE("INFO clients reports watching clients and watched keys") {
    Fixture f;
    Session& a = f.client();
    Session& b = f.client();
    f.run(a, {"WATCH", "x", "y"});
    f.run(b, {"WATCH", "x"});
    RespValue info = f.run(a, {"INFO", "clients"});
    CHECK(info.str.find("watching_clients:2\r\n") != std::string::npos);
    CHECK(info.str.find("total_watched_keys:2\r\n") != std::string::npos);
    f.engine.close_session(b);
    info = f.run(a, {"INFO", "clients"});
    CHECK(info.str.find("watching_clients:1\r\n") != std::string::npos);
  }
}
