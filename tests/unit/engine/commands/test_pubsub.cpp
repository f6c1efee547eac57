#include "tests/unit/engine/commands/conn_test_util.hpp"

#include "engine/engine.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace keyshift::engine::conn_test;
using keyshift::engine::EngineConfig;
using keyshift::engine::RespValue;
using keyshift::engine::Session;

namespace {

constexpr auto k_push = RespValue::Type::push;

bool is_message(const RespValue& v, std::string_view channel, std::string_view payload,
                RespValue::Type type = RespValue::Type::array) {
  return is_strings(v, {"message", channel, payload}, type);
}

}  // namespace

TEST_SUITE("engine::pubsub") {
  TEST_CASE("SUBSCRIBE confirms each channel with the running count and PUBLISH delivers") {
    Fixture f;
    Session& sub = f.client();
    Session& pub = f.client();
    f.send(sub, {"SUBSCRIBE", "a", "b", "a"});
    auto replies = Fixture::drain(sub);
    REQUIRE(replies.size() == 3);
    CHECK(is_confirm(replies[0], "subscribe", "a", 1));
    CHECK(is_confirm(replies[1], "subscribe", "b", 2));
    CHECK(is_confirm(replies[2], "subscribe", "a", 2));
    CHECK(is_int(f.run(pub, {"PUBLISH", "a", "hello"}), 1));
    CHECK(is_int(f.run(pub, {"PUBLISH", "nobody", "x"}), 0));
    auto msgs = Fixture::drain(sub);
    REQUIRE(msgs.size() == 1);
    CHECK(is_message(msgs[0], "a", "hello"));
  }

  TEST_CASE("PSUBSCRIBE matches globs, and a channel and pattern match both deliver") {
    Fixture f;
    Session& sub = f.client();
    Session& pub = f.client();
    f.send(sub, {"SUBSCRIBE", "news.tech"});
    f.send(sub, {"PSUBSCRIBE", "news.*", "x?"});
    auto replies = Fixture::drain(sub);
    REQUIRE(replies.size() == 3);
    CHECK(is_confirm(replies[1], "psubscribe", "news.*", 2));
    CHECK(is_confirm(replies[2], "psubscribe", "x?", 3));
    CHECK(is_int(f.run(pub, {"PUBLISH", "news.tech", "m1"}), 2));
    CHECK(is_int(f.run(pub, {"PUBLISH", "xy", "m2"}), 1));
    CHECK(is_int(f.run(pub, {"PUBLISH", "xyz", "m3"}), 0));
    auto msgs = Fixture::drain(sub);
    REQUIRE(msgs.size() == 3);
    CHECK(is_message(msgs[0], "news.tech", "m1"));
    CHECK(is_strings(msgs[1], {"pmessage", "news.*", "news.tech", "m1"}));
    CHECK(is_strings(msgs[2], {"pmessage", "x?", "xy", "m2"}));
    CHECK(is_int(f.run(pub, {"PUBSUB", "NUMPAT"}), 2));
  }

  TEST_CASE("UNSUBSCRIBE without arguments leaves every channel; with none it confirms null") {
    Fixture f;
    Session& sub = f.client();
    f.send(sub, {"SUBSCRIBE", "a", "b"});
    f.send(sub, {"PSUBSCRIBE", "p*"});
    Fixture::drain(sub);
    f.send(sub, {"UNSUBSCRIBE"});
    auto replies = Fixture::drain(sub);
    REQUIRE(replies.size() == 2);
    CHECK(is_confirm(replies[0], "unsubscribe", "a", 2));
    CHECK(is_confirm(replies[1], "unsubscribe", "b", 1));
    CHECK(sub.has(keyshift::engine::k_session_pubsub));  // the pattern remains
    f.send(sub, {"UNSUBSCRIBE"});
    replies = Fixture::drain(sub);
    REQUIRE(replies.size() == 1);
    CHECK(is_confirm(replies[0], "unsubscribe", "", 1));
    f.send(sub, {"PUNSUBSCRIBE", "p*", "q*"});
    replies = Fixture::drain(sub);
    REQUIRE(replies.size() == 2);
    CHECK(is_confirm(replies[0], "punsubscribe", "p*", 0));
    CHECK(is_confirm(replies[1], "punsubscribe", "q*", 0));
    CHECK(!sub.has(keyshift::engine::k_session_pubsub));
  }

  TEST_CASE("UNSUBSCRIBE outside subscribed mode is a NOSUB error") {
    Fixture f;
    Session& c = f.client();
    CHECK(is_err(f.run(c, {"UNSUBSCRIBE"}),
                 "NOSUB 'unsubscribe' command executed not in subscribed mode"));
    CHECK(is_err(f.run(c, {"PUNSUBSCRIBE", "x"}),
                 "NOSUB 'punsubscribe' command executed not in subscribed mode"));
    CHECK(is_err(f.run(c, {"SUNSUBSCRIBE"}),
                 "NOSUB 'sunsubscribe' command executed not in subscribed mode"));
  }

  TEST_CASE("a RESP2 subscriber may only (un)subscribe, PING, QUIT and RESET") {
    Fixture f;
    Session& sub = f.client();
    f.send(sub, {"SUBSCRIBE", "a"});
    Fixture::drain(sub);
    CHECK(is_err(f.run(sub, {"GET", "k"}),
                 "ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / "
                 "RESET are allowed in this context"));
    CHECK(is_err(f.run(sub, {"CONFIG", "GET", "x"}),
                 "ERR Can't execute 'config|get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / "
                 "QUIT / RESET are allowed in this context"));
    RespValue pong = f.run(sub, {"PING"});
    CHECK(is_strings(pong, {"pong", ""}));
    CHECK(is_strings(f.run(sub, {"PING", "hi"}), {"pong", "hi"}));
    CHECK(is_simple(f.run(sub, {"RESET"}), "RESET"));
    CHECK(!sub.has(keyshift::engine::k_session_pubsub));
    CHECK(is_null(f.run(sub, {"GET", "k"})));
  }

  TEST_CASE("a RESP3 subscriber gets pushes and may run any command") {
    Fixture f;
    Session& sub = f.client();
    Session& pub = f.client();
    f.run(sub, {"HELLO", "3"});
    f.send(sub, {"SUBSCRIBE", "a"});
    auto replies = Fixture::drain(sub);
    REQUIRE(replies.size() == 1);
    CHECK(is_confirm(replies[0], "subscribe", "a", 1, k_push));
    CHECK(is_null(f.run(sub, {"GET", "k"})));
    CHECK(is_simple(f.run(sub, {"PING"}), "PONG"));
    f.run(pub, {"PUBLISH", "a", "m"});
    auto msgs = Fixture::drain(sub);
    REQUIRE(msgs.size() == 1);
    CHECK(is_message(msgs[0], "a", "m", k_push));
  }

  TEST_CASE("CLIENT REPLY OFF and SKIP drop replies but not subscription confirmations") {
    for (int resp : {2, 3}) {
      CAPTURE(resp);
      auto type = resp == 3 ? k_push : RespValue::Type::array;
      Fixture f;
      Session& sub = f.client();
      Session& pub = f.client();
      f.run(sub, {"HELLO", std::to_string(resp)});
      Session& skipper = f.client();
      f.run(skipper, {"HELLO", std::to_string(resp)});
      f.send(skipper, {"CLIENT", "REPLY", "SKIP"});
      f.send(skipper, {"SUBSCRIBE", "first"});
      auto replies = Fixture::drain(skipper);
      REQUIRE(replies.size() == 1);
      CHECK(is_confirm(replies[0], "subscribe", "first", 1, type));
      // A RESP2 subscriber may not run CLIENT, so OFF comes first.
      f.send(sub, {"CLIENT", "REPLY", "OFF"});
      f.send(sub, {"SUBSCRIBE", "ch"});
      f.send(sub, {"PSUBSCRIBE", "c*"});
      f.send(sub, {"PING"});
      replies = Fixture::drain(sub);
      REQUIRE(replies.size() == 2);
      CHECK(is_confirm(replies[0], "subscribe", "ch", 1, type));
      CHECK(is_confirm(replies[1], "psubscribe", "c*", 2, type));
      CHECK(is_int(f.run(pub, {"PUBLISH", "ch", "hi"}), 2));
      CHECK(Fixture::drain(sub).size() == 2);
      f.send(sub, {"UNSUBSCRIBE", "ch"});
      replies = Fixture::drain(sub);
      REQUIRE(replies.size() == 1);
      CHECK(is_confirm(replies[0], "unsubscribe", "ch", 1, type));
    }
  }

  TEST_CASE("sharded channels are apart from channels and patterns") {
    Fixture f;
    Session& sub = f.client();
    Session& pub = f.client();
    f.send(sub, {"SUBSCRIBE", "c"});
    f.send(sub, {"PSUBSCRIBE", "*"});
    f.send(sub, {"SSUBSCRIBE", "c", "d"});
    auto replies = Fixture::drain(sub);
    REQUIRE(replies.size() == 4);
    CHECK(is_confirm(replies[2], "ssubscribe", "c", 1));
    CHECK(is_confirm(replies[3], "ssubscribe", "d", 2));
    CHECK(is_int(f.run(pub, {"SPUBLISH", "c", "s"}), 1));
    auto msgs = Fixture::drain(sub);
    REQUIRE(msgs.size() == 1);
    CHECK(is_strings(msgs[0], {"smessage", "c", "s"}));
    CHECK(is_int(f.run(pub, {"PUBLISH", "d", "x"}), 1));  // only the pattern
    Fixture::drain(sub);
    RespValue numsub = f.run(pub, {"PUBSUB", "SHARDNUMSUB", "c", "zz"});
    REQUIRE(numsub.elements.size() == 4);
    CHECK(is_int(numsub.elements[1], 1));
    CHECK(is_int(numsub.elements[3], 0));
    RespValue shard = f.run(pub, {"PUBSUB", "SHARDCHANNELS"});
    CHECK(shard.elements.size() == 2);
    f.send(sub, {"SUNSUBSCRIBE"});
    replies = Fixture::drain(sub);
    REQUIRE(replies.size() == 2);
    CHECK(is_confirm(replies[1], "sunsubscribe", "d", 0));
  }

  TEST_CASE("PUBSUB CHANNELS, NUMSUB and NUMPAT report active subscriptions") {
    Fixture f;
    Session& s1 = f.client();
    Session& s2 = f.client();
    Session& c = f.client();
    f.send(s1, {"SUBSCRIBE", "news", "sport"});
    f.send(s2, {"SUBSCRIBE", "news"});
    f.send(s2, {"PSUBSCRIBE", "n*"});
    RespValue all = f.run(c, {"PUBSUB", "CHANNELS"});
    CHECK(all.elements.size() == 2);
    CHECK(is_strings(f.run(c, {"PUBSUB", "CHANNELS", "n*"}), {"news"}));
    RespValue numsub = f.run(c, {"PUBSUB", "NUMSUB", "news", "sport", "none"});
    REQUIRE(numsub.elements.size() == 6);
    CHECK(is_int(numsub.elements[1], 2));
    CHECK(is_int(numsub.elements[3], 1));
    CHECK(is_int(numsub.elements[5], 0));
    CHECK(f.run(c, {"PUBSUB", "NUMSUB"}).elements.empty());
    CHECK(is_int(f.run(c, {"PUBSUB", "NUMPAT"}), 1));
    CHECK(is_err(f.run(c, {"PUBSUB", "CHANNELS", "a", "b"}),
                 "ERR unknown subcommand or wrong number of arguments for 'CHANNELS'. Try PUBSUB "
                 "HELP."));
    CHECK(is_err(f.run(c, {"PUBSUB", "NUMPAT", "x"}),
                 "ERR wrong number of arguments for 'pubsub|numpat' command"));
    CHECK(is_err(f.run(c, {"PUBSUB", "FOO"}), "ERR unknown subcommand 'FOO'. Try PUBSUB HELP."));
    RespValue help = f.run(c, {"PUBSUB", "HELP"});
    REQUIRE(help.elements.size() == 14);
    CHECK(is_simple(help.elements[0],
                    "PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"));
    // Closing a connection drops its subscriptions.
    f.engine.close_session(s1);
    CHECK(is_strings(f.run(c, {"PUBSUB", "CHANNELS"}), {"news"}));
    RespValue info = f.run(c, {"INFO", "stats"});
    CHECK(info.str.find("pubsub_channels:1\r\n") != std::string::npos);
    CHECK(info.str.find("pubsub_patterns:1\r\n") != std::string::npos);
  }

  TEST_CASE("CLIENT LIST counts sub=, psub= and ssub= and flags the client P") {
    Fixture f;
    Session& sub = f.client();
    f.send(sub, {"SUBSCRIBE", "a", "b"});
    f.send(sub, {"PSUBSCRIBE", "p"});
    f.send(sub, {"SSUBSCRIBE", "s"});
    CHECK(sub.sub_count() == 2);
    CHECK(sub.psub_count() == 1);
    CHECK(sub.ssub_count() == 1);
    Session& c = f.client();
    RespValue list = f.run(c, {"CLIENT", "LIST"});
    CHECK(list.str.find("flags=P db=0 sub=2 psub=1 ssub=1 multi=-1") != std::string::npos);
  }

  TEST_CASE("SUBSCRIBE may be queued in MULTI; SSUBSCRIBE fails when EXEC runs it") {
    Fixture f;
    Session& c = f.client();
    f.run(c, {"MULTI"});
    f.run(c, {"SUBSCRIBE", "a"});
    f.run(c, {"SSUBSCRIBE", "b"});
    f.send(c, {"EXEC"});
    auto replies = Fixture::drain(c);
    REQUIRE(replies.size() == 1);
    REQUIRE(replies[0].elements.size() == 2);
    CHECK(is_confirm(replies[0].elements[0], "subscribe", "a", 1));
    CHECK(
        is_err(replies[0].elements[1], "ERR SSUBSCRIBE isn't allowed for a DENY BLOCKING client"));
    CHECK(c.has(keyshift::engine::k_session_pubsub));
  }

  TEST_CASE("keyspace events are off by default and follow notify-keyspace-events") {
    Fixture f;
    Session& sub = f.client();
    Session& c = f.client();
    f.send(sub, {"PSUBSCRIBE", "__key*__:*"});
    Fixture::drain(sub);
    f.run(c, {"SET", "k", "v"});
    CHECK(sub.out.empty());

    CHECK(is_ok(f.run(c, {"CONFIG", "SET", "notify-keyspace-events", "KEA"})));
    RespValue got = f.run(c, {"CONFIG", "GET", "notify-keyspace-events"});
    REQUIRE(got.elements.size() == 2);
    CHECK(is_bulk(got.elements[1], "AKE"));
    f.run(c, {"SET", "k", "v"});
    auto msgs = Fixture::drain(sub);
    REQUIRE(msgs.size() == 2);
    CHECK(is_strings(msgs[0], {"pmessage", "__key*__:*", "__keyspace@0__:k", "set"}));
    CHECK(is_strings(msgs[1], {"pmessage", "__key*__:*", "__keyevent@0__:set", "k"}));

    // Only keyevent notifications of the string class.
    f.run(c, {"CONFIG", "SET", "notify-keyspace-events", "E$"});
    f.run(c, {"SELECT", "3"});
    f.run(c, {"INCRBY", "n", "5"});
    f.run(c, {"EXPIRE", "n", "100"});  // generic class: off
    msgs = Fixture::drain(sub);
    REQUIRE(msgs.size() == 1);
    CHECK(is_strings(msgs[0], {"pmessage", "__key*__:*", "__keyevent@3__:incrby", "n"}));
    CHECK(is_err(f.run(c, {"CONFIG", "SET", "notify-keyspace-events", "KQ"}),
                 "ERR CONFIG SET failed (possibly related to argument 'notify-keyspace-events') - "
                 "Invalid event class character. Use 'Ag$lshzxeKEtmdn'."));
  }

  TEST_CASE("new-key and key-miss events come only when asked for by n and m") {
    Fixture f;
    Session& sub = f.client();
    Session& c = f.client();
    f.send(sub, {"PSUBSCRIBE", "__keyevent@*__:*"});
    Fixture::drain(sub);
    f.run(c, {"CONFIG", "SET", "notify-keyspace-events", "EA"});  // A has neither n nor m
    f.run(c, {"GET", "missing"});
    f.run(c, {"SET", "fresh", "v"});
    auto msgs = Fixture::drain(sub);
    REQUIRE(msgs.size() == 1);
    CHECK(is_strings(msgs[0], {"pmessage", "__keyevent@*__:*", "__keyevent@0__:set", "fresh"}));

    f.run(c, {"CONFIG", "SET", "notify-keyspace-events", "Enm"});
    f.run(c, {"GET", "missing"});
    f.run(c, {"SET", "fresh", "again"});  // exists: no new event
    f.run(c, {"RPUSH", "list", "a"});
    f.run(c, {"SET", "src", "v"});
    f.run(c, {"RENAME", "src", "dst"});
    f.run(c, {"MOVE", "dst", "2"});
    f.run(c, {"EXISTS", "nothing"});
    msgs = Fixture::drain(sub);
    std::vector<std::pair<std::string, std::string>> got;
    for (const RespValue& m : msgs) {
      REQUIRE(m.elements.size() == 4);
      got.emplace_back(m.elements[2].str, m.elements[3].str);
    }
    std::vector<std::pair<std::string, std::string>> want{
        {"__keyevent@0__:keymiss", "missing"}, {"__keyevent@0__:new", "list"},
        {"__keyevent@0__:new", "src"},         {"__keyevent@0__:new", "dst"},
        {"__keyevent@2__:new", "dst"},         {"__keyevent@0__:keymiss", "nothing"}};
    CHECK(got == want);
  }

  TEST_CASE("string and generic writes publish Valkey's event names") {
    Fixture f;
    Session& sub = f.client();
    Session& c = f.client();
    f.run(c, {"CONFIG", "SET", "notify-keyspace-events", "Eg$"});
    f.send(sub, {"PSUBSCRIBE", "__keyevent@0__:*"});
    Fixture::drain(sub);
    f.run(c, {"SET", "a", "1", "EX", "100"});
    f.run(c, {"SETRANGE", "a", "0", "2"});
    f.run(c, {"APPEND", "a", "x"});
    f.run(c, {"INCRBYFLOAT", "f", "1.5"});
    f.run(c, {"PERSIST", "a"});
    f.run(c, {"RENAME", "a", "b"});
    f.run(c, {"MOVE", "b", "1"});
    f.run(c, {"COPY", "f", "g"});
    f.run(c, {"DEL", "f", "g", "nothing"});
    f.run(c, {"GETSET", "h", "1"});
    f.run(c, {"GETDEL", "h"});
    auto msgs = Fixture::drain(sub);
    std::vector<std::string> events;
    for (const RespValue& m : msgs) {
      REQUIRE(m.elements.size() == 4);
      events.push_back(m.elements[2].str.substr(std::string("__keyevent@0__:").size()) + " " +
                       m.elements[3].str);
    }
    std::vector<std::string> expected = {
        "set a",     "expire a",      "setrange a",  "append a",    "incrbyfloat f",
        "persist a", "rename_from a", "rename_to b", "move_from b", "copy_to g",
        "del f",     "del g",         "set h",       "del h",
    };
    CHECK(events == expected);
  }

  TEST_CASE("expired events come from lazy and active expiry, evicted from eviction") {
    Fixture f;
    Session& sub = f.client();
    Session& c = f.client();
    f.run(c, {"CONFIG", "SET", "notify-keyspace-events", "Exe"});
    f.send(sub, {"SUBSCRIBE", "__keyevent@0__:expired", "__keyevent@0__:evicted"});
    Fixture::drain(sub);
    f.run(c, {"SET", "lazy", "1", "PX", "10"});
    f.clock.advance_ms(20);
    CHECK(is_null(f.run(c, {"GET", "lazy"})));
    auto msgs = Fixture::drain(sub);
    REQUIRE(msgs.size() == 1);
    CHECK(is_message(msgs[0], "__keyevent@0__:expired", "lazy"));

    f.run(c, {"SET", "active", "1", "PX", "10"});
    f.clock.advance_ms(20);
    for (int i = 0; i < 20 && f.engine.db(0).size() != 0; ++i) {
      f.engine.cron();
    }
    msgs = Fixture::drain(sub);
    REQUIRE(msgs.size() == 1);
    CHECK(is_message(msgs[0], "__keyevent@0__:expired", "active"));

    f.run(c, {"CONFIG", "SET", "maxmemory-policy", "allkeys-random"});
    f.run(c, {"SET", "victim", "1"});
    f.engine.config().maxmemory = 1;
    f.engine.perform_evictions();
    f.engine.config().maxmemory = 0;
    msgs = Fixture::drain(sub);
    REQUIRE(msgs.size() == 1);
    CHECK(is_message(msgs[0], "__keyevent@0__:evicted", "victim"));
  }
  TEST_CASE("messages a RESP3 client publishes to itself follow its reply, even a whole EXEC") {
    Fixture f;
    Session& c = f.client();
    f.run(c, {"HELLO", "3"});
    f.send(c, {"SUBSCRIBE", "self"});
    Fixture::drain(c);
    f.send(c, {"PUBLISH", "self", "one"});
    auto out = Fixture::drain(c);
    REQUIRE(out.size() == 2);
    CHECK(is_int(out[0], 1));
    CHECK(is_message(out[1], "self", "one", k_push));

    f.run(c, {"MULTI"});
    f.run(c, {"PUBLISH", "self", "two"});
    f.run(c, {"GET", "k"});
    f.send(c, {"EXEC"});
    out = Fixture::drain(c);
    REQUIRE(out.size() == 2);
    REQUIRE(out[0].elements.size() == 2);
    CHECK(is_int(out[0].elements[0], 1));
    CHECK(is_message(out[1], "self", "two", k_push));

    // A key expiring in the middle of MGET does not split the array reply.
    f.run(c, {"CONFIG", "SET", "notify-keyspace-events", "Ex"});
    f.send(c, {"SUBSCRIBE", "__keyevent@0__:expired"});
    Fixture::drain(c);
    f.run(c, {"SET", "a", "1", "PX", "5"});
    f.run(c, {"SET", "b", "2"});
    f.clock.advance_ms(10);
    f.send(c, {"MGET", "a", "b"});
    out = Fixture::drain(c);
    REQUIRE(out.size() == 2);
    CHECK(out[0].type == RespValue::Type::array);
    CHECK(out[0].elements.size() == 2);
    CHECK(is_message(out[1], "__keyevent@0__:expired", "a", k_push));
  }
}
