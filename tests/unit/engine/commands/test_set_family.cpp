#include "tests/unit/engine/commands/command_test_util.hpp"

#include "engine/engine.hpp"
#include "engine/keyspace/set_value.hpp"
#include "engine/util/clock.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace {

using keyshift::engine::Engine;
using keyshift::engine::EngineConfig;
using keyshift::engine::ManualClock;
using keyshift::engine::RespValue;
using keyshift::engine::Session;
namespace ks = keyshift::engine;

using keyshift::engine::command_test::err;
using keyshift::engine::command_test::num;

/// The shared harness plus set shortcuts.
struct Harness : keyshift::engine::command_test::Harness {
  using keyshift::engine::command_test::Harness::Harness;
  using keyshift::engine::command_test::Harness::raw;
  /// SADD key with every member of `members`.
  RespValue sadd(std::string_view key, const std::vector<std::string>& members) {
    std::vector<std::string> argv{"SADD", std::string(key)};
    argv.insert(argv.end(), members.begin(), members.end());
    return raw(argv);
  }
  std::string encoding(std::string_view key) { return raw({"OBJECT", "ENCODING", key}).str; }
};

/// The elements of an array or set reply as strings, sorted.
std::vector<std::string> sorted(const RespValue& v) {
  std::vector<std::string> out;
  for (const RespValue& e : v.elements) {
    out.push_back(e.str);
  }
  std::sort(out.begin(), out.end());
  return out;
}

/// The elements of an array or set reply as strings, in reply order.
std::vector<std::string> strings(const RespValue& v) {
  std::vector<std::string> out;
  for (const RespValue& e : v.elements) {
    out.push_back(e.str);
  }
  return out;
}

std::vector<std::string> numbered(std::string_view prefix, int from, int to) {
  std::vector<std::string> out;
  for (int i = from; i <= to; ++i) {
    out.push_back(std::string(prefix) + std::to_string(i));
  }
  return out;
}

/// The "event key" pairs of the keyevent notifications waiting in `sub`'s output.
std::vector<std::string> drain_events(Session& sub) {
  std::vector<std::string> out;
  std::string_view data(sub.out);
  while (!data.empty()) {
    RespValue v;
    size_t used = 0;
    REQUIRE(ks::parse_resp(data, v, used) == ks::RespParse::ok);
    data.remove_prefix(used);
    if (v.elements.size() == 4 && v.elements[0].str == "pmessage") {
      std::string_view channel = v.elements[2].str;
      out.push_back(std::string(channel.substr(channel.find(':') + 1)) + " " + v.elements[3].str);
    }
  }
  sub.out.clear();
  return out;
}

constexpr std::string_view k_wrongtype =
    "WRONGTYPE Operation against a key holding the wrong kind of value";

}  // namespace

TEST_SUITE("engine::set_type") {
  TEST_CASE("the encoding follows Valkey's creation and conversion rules") {
    ks::SetLimits limits;
    ks::SetValue* s = ks::SetValue::create("12", 1, limits, 1);
    CHECK(s->encoding() == ks::ObjEncoding::intset);
    delete s;
    s = ks::SetValue::create("a", 1, limits, 1);
    CHECK(s->encoding() == ks::ObjEncoding::listpack);
    delete s;
    s = ks::SetValue::create("a", 129, limits, 1);
    CHECK(s->encoding() == ks::ObjEncoding::hashtable);
    delete s;
    s = ks::SetValue::create("1", 513, limits, 1);
    CHECK(s->encoding() == ks::ObjEncoding::hashtable);
    delete s;
  }

  TEST_CASE("members keep their identity across every conversion") {
    ks::SetLimits limits{4, 3, 5};
    ks::SetValue s(ks::ObjEncoding::intset, 7);
    CHECK(s.add("3", limits));
    CHECK(s.add("-1", limits));
    CHECK_FALSE(s.add("3", limits));
    CHECK(s.encoding() == ks::ObjEncoding::intset);
    CHECK(s.add("x", limits));
    CHECK(s.encoding() == ks::ObjEncoding::listpack);
    CHECK(s.contains("3"));
    CHECK(s.contains(ks::SetMember::of_int(-1)));
    CHECK_FALSE(s.contains("03"));
    CHECK(s.add("y", limits));
    CHECK(s.encoding() == ks::ObjEncoding::hashtable);
    CHECK(s.size() == 4);
    CHECK(s.contains("-1"));
    CHECK(s.contains(ks::SetMember::of_int(3)));
    CHECK(s.remove(ks::SetMember::of_int(3)));
    CHECK(s.remove("x"));
    CHECK_FALSE(s.remove("x"));
    CHECK(s.size() == 2);
  }

  TEST_CASE("bytes() is exact: it returns to the empty size after removals") {
    ks::SetLimits limits;
    ks::SetValue s(ks::ObjEncoding::hashtable, 3);
    size_t empty_bytes = s.bytes();
    for (int i = 0; i < 1000; ++i) {
      s.add("member:" + std::to_string(i), limits);
    }
    CHECK(s.bytes() > empty_bytes + 1000 * 8);
    for (int i = 0; i < 1000; ++i) {
      CHECK(s.remove("member:" + std::to_string(i)));
    }
    CHECK(s.empty());
    // Buckets may remain (the table only shrinks to its minimum), but no node does.
    CHECK(s.bytes() < empty_bytes + 1024);
  }

  TEST_CASE("clone keeps the encoding and shares nothing") {
    ks::SetLimits limits;
    for (auto enc : {ks::ObjEncoding::intset, ks::ObjEncoding::listpack}) {
      ks::SetValue s(enc, 1);
      s.add("1", limits);
      s.add("2", limits);
      auto* c = static_cast<ks::SetValue*>(s.clone());
      CHECK(c->encoding() == enc);
      CHECK(c->size() == 2);
      s.remove("1");
      CHECK(c->contains("1"));
      delete c;
    }
    ks::SetValue h(ks::ObjEncoding::hashtable, 1);
    h.add("a", limits);
    auto* c = static_cast<ks::SetValue*>(h.clone());
    CHECK(c->encoding() == ks::ObjEncoding::hashtable);
    CHECK(c->contains("a"));
    delete c;
  }

  TEST_CASE("an intset set exposes Valkey's blob and can adopt one") {
    ks::SetLimits limits;
    ks::SetValue s(ks::ObjEncoding::intset, 1);
    s.add("5", limits);
    s.add("1", limits);
    auto blob = ks::Intset::from_blob(s.intset().blob());
    REQUIRE(blob.has_value());
    ks::SetValue* adopted = ks::SetValue::adopt(std::move(*blob), 1);
    CHECK(adopted->encoding() == ks::ObjEncoding::intset);
    CHECK(adopted->contains("5"));
    delete adopted;
  }
}

TEST_SUITE("engine::set_family") {
  TEST_CASE("SADD counts new members, SCARD and SISMEMBER read them") {
    Harness h;
    CHECK(h({"SADD", "s", "a", "b", "a"}) == num(2));
    CHECK(h({"SADD", "s", "b", "c"}) == num(1));
    CHECK(h({"SCARD", "s"}) == num(3));
    CHECK(h({"SCARD", "missing"}) == num(0));
    CHECK(h({"SISMEMBER", "s", "a"}) == num(1));
    CHECK(h({"SISMEMBER", "s", "z"}) == num(0));
    CHECK(h({"SISMEMBER", "missing", "a"}) == num(0));
    CHECK(h({"TYPE", "s"}) == "set");
  }

  TEST_CASE("SMISMEMBER answers per member and treats a missing key as empty") {
    Harness h;
    h({"SADD", "s", "a", "1"});
    RespValue r = h.raw({"SMISMEMBER", "s", "a", "b", "1"});
    REQUIRE(r.elements.size() == 3);
    CHECK(r.elements[0].integer == 1);
    CHECK(r.elements[1].integer == 0);
    CHECK(r.elements[2].integer == 1);
    r = h.raw({"SMISMEMBER", "missing", "a"});
    REQUIRE(r.elements.size() == 1);
    CHECK(r.elements[0].integer == 0);
  }

  TEST_CASE("every set command refuses a key of another type") {
    Harness h;
    h({"SET", "str", "x"});
    h({"SADD", "s", "a"});
    for (auto argv : std::vector<std::vector<std::string>>{
             {"SADD", "str", "a"},
             {"SREM", "str", "a"},
             {"SCARD", "str"},
             {"SISMEMBER", "str", "a"},
             {"SMISMEMBER", "str", "a"},
             {"SMEMBERS", "str"},
             {"SRANDMEMBER", "str"},
             {"SRANDMEMBER", "str", "2"},
             {"SPOP", "str"},
             {"SPOP", "str", "2"},
             {"SMOVE", "str", "s", "a"},
             {"SMOVE", "s", "str", "a"},
             {"SINTER", "s", "str"},
             {"SINTERSTORE", "d", "s", "str"},
             {"SINTERCARD", "2", "s", "str"},
             {"SUNION", "s", "str"},
             {"SUNIONSTORE", "d", "s", "str"},
             {"SDIFF", "s", "str"},
             {"SDIFFSTORE", "d", "s", "str"},
             {"SSCAN", "str", "0"},
         }) {
      CAPTURE(argv[0]);
      RespValue r = h.raw(argv);
      CHECK(r.is_error());
      CHECK(r.str == k_wrongtype);
    }
    // A missing key before the wrong one does not hide the error.
    CHECK(h({"SINTER", "missing", "str"}) == err(k_wrongtype));
    CHECK(h({"GET", "str"}) == "\"x\"");
  }

  TEST_CASE("small integer sets are intsets and convert at set-max-intset-entries") {
    Harness h;
    h.sadd("s", numbered("", 1, 512));
    CHECK(h.encoding("s") == "intset");
    h({"SADD", "s", "513"});
    CHECK(h.encoding("s") == "hashtable");
    CHECK(h({"SCARD", "s"}) == num(513));
    // Removing back below the limit never converts back.
    h({"SREM", "s", "513", "512"});
    CHECK(h.encoding("s") == "hashtable");
  }

  TEST_CASE("a string joining a small intset makes a listpack, a large one a hashtable") {
    Harness h;
    h({"SADD", "small", "1", "2", "3"});
    h({"SADD", "small", "a"});
    CHECK(h.encoding("small") == "listpack");
    CHECK(h({"SISMEMBER", "small", "2"}) == num(1));

    h.sadd("big", numbered("", 1, 128));
    CHECK(h.encoding("big") == "intset");
    h({"SADD", "big", "a"});
    CHECK(h.encoding("big") == "hashtable");

    h.sadd("long", numbered("", 1, 3));
    h({"SADD", "long", std::string(65, 'x')});
    CHECK(h.encoding("long") == "hashtable");
  }

  TEST_CASE("the longest integer text counts against set-max-listpack-value") {
    Harness h;
    CHECK(h({"CONFIG", "SET", "set-max-listpack-value", "3"}) == "OK");
    h({"SADD", "s", "12345"});
    h({"SADD", "s", "ab"});
    CHECK(h.encoding("s") == "hashtable");
    h({"SADD", "t", "123"});
    h({"SADD", "t", "ab"});
    CHECK(h.encoding("t") == "listpack");
  }

  TEST_CASE("string sets are listpacks up to set-max-listpack-entries and -value") {
    Harness h;
    h.sadd("s", numbered("m", 1, 128));
    CHECK(h.encoding("s") == "listpack");
    h({"SADD", "s", "m129"});
    CHECK(h.encoding("s") == "hashtable");

    h({"SADD", "v", std::string(64, 'v')});
    CHECK(h.encoding("v") == "listpack");
    h({"SADD", "v", std::string(65, 'v')});
    CHECK(h.encoding("v") == "hashtable");

    // A new set sized for more than the listpack limit starts as a hashtable.
    h.sadd("n", numbered("m", 1, 129));
    CHECK(h.encoding("n") == "hashtable");
    // The argument count alone converts an existing listpack (duplicates included).
    h({"SADD", "d", "a"});
    std::vector<std::string> dups(129, "a");
    h.sadd("d", dups);
    CHECK(h.encoding("d") == "hashtable");
    CHECK(h({"SCARD", "d"}) == num(1));
  }

  TEST_CASE("the limits follow CONFIG SET") {
    Harness h;
    CHECK(h({"CONFIG", "SET", "set-max-intset-entries", "2"}) == "OK");
    CHECK(h({"CONFIG", "GET", "set-max-intset-entries"}) ==
          "1) \"set-max-intset-entries\"\n2) \"2\"");
    h({"SADD", "s", "1", "2"});
    CHECK(h.encoding("s") == "intset");
    h({"SADD", "s", "3"});
    CHECK(h.encoding("s") == "hashtable");
    CHECK(h({"CONFIG", "SET", "set-max-listpack-entries", "1"}) == "OK");
    h({"SADD", "t", "a"});
    CHECK(h.encoding("t") == "listpack");
    h({"SADD", "t", "b"});
    CHECK(h.encoding("t") == "hashtable");
  }

  TEST_CASE("SREM counts removed members and deletes the emptied key") {
    Harness h;
    h({"SADD", "s", "a", "b", "1"});
    CHECK(h({"SREM", "s", "a", "zz"}) == num(1));
    CHECK(h({"SREM", "missing", "a"}) == num(0));
    CHECK(h({"SREM", "s", "b", "1", "b"}) == num(2));
    CHECK(h({"EXISTS", "s"}) == num(0));
  }

  TEST_CASE("SMOVE moves one member and handles missing, same and emptied keys") {
    Harness h;
    h({"SADD", "src", "a", "b"});
    CHECK(h({"SMOVE", "missing", "dst", "a"}) == num(0));
    CHECK(h({"SMOVE", "src", "dst", "zz"}) == num(0));
    CHECK(h({"SMOVE", "src", "src", "a"}) == num(1));
    CHECK(h({"SMOVE", "src", "src", "zz"}) == num(0));
    CHECK(h({"SMOVE", "src", "dst", "a"}) == num(1));
    CHECK(h({"SISMEMBER", "dst", "a"}) == num(1));
    CHECK(h({"SISMEMBER", "src", "a"}) == num(0));
    h({"SADD", "dst", "b"});
    // Already in the destination: still moved out of the source (which empties).
    CHECK(h({"SMOVE", "src", "dst", "b"}) == num(1));
    CHECK(h({"EXISTS", "src"}) == num(0));
    CHECK(h({"SCARD", "dst"}) == num(2));
    // A created destination takes the encoding its first member asks for.
    h({"SADD", "ints", "5", "6"});
    CHECK(h({"SMOVE", "ints", "newints", "5"}) == num(1));
    CHECK(h.encoding("newints") == "intset");
    // Moving an integer into a listpack keeps it there.
    CHECK(h({"SMOVE", "ints", "dst", "6"}) == num(1));
    CHECK(h.encoding("dst") == "listpack");
    CHECK(h({"SISMEMBER", "dst", "6"}) == num(1));
  }

  TEST_CASE("SMEMBERS replies an array in RESP2 and a set in RESP3") {
    Harness h;
    h({"SADD", "s", "3", "1", "2"});
    RespValue r = h.raw({"SMEMBERS", "s"});
    CHECK(r.type == RespValue::Type::array);
    CHECK(strings(r) == std::vector<std::string>{"1", "2", "3"});  // intset order
    CHECK(h.raw({"SMEMBERS", "missing"}).elements.empty());
    h.session.resp = 3;
    r = h.raw({"SMEMBERS", "s"});
    CHECK(r.type == RespValue::Type::set);
    CHECK(h.raw({"SMEMBERS", "missing"}).type == RespValue::Type::set);
    h({"SADD", "l", "b", "a", "c"});
    CHECK(strings(h.raw({"SMEMBERS", "l"})) ==
          std::vector<std::string>{"b", "a", "c"});  // listpack order
  }

  TEST_CASE("SRANDMEMBER without a count returns one member or nil") {
    Harness h;
    CHECK(h({"SRANDMEMBER", "missing"}) == "(nil)");
    h({"SADD", "s", "a", "b", "c"});
    std::string m = h.raw({"SRANDMEMBER", "s"}).str;
    CHECK((m == "a" || m == "b" || m == "c"));
    CHECK(h({"SRANDMEMBER", "s", "1", "2"}) == err("ERR syntax error"));
    CHECK(h({"SCARD", "s"}) == num(3));
  }

  TEST_CASE("SRANDMEMBER with a count: unique when positive, repeated when negative") {
    Harness h;
    CHECK(h.raw({"SRANDMEMBER", "missing", "5"}).elements.empty());
    CHECK(h({"SRANDMEMBER", "s", "x"}) == err("ERR value is not an integer or out of range"));
    CHECK(h({"SRANDMEMBER", "s", "-9223372036854775808"}) ==
          err("ERR value is out of range, value must between -9223372036854775807 and "
              "9223372036854775807"));
    struct Shape {
      std::string key;
      std::vector<std::string> members;
      std::string encoding;
    };
    std::vector<Shape> shapes{{"ints", numbered("", 1, 50), "intset"},
                              {"lp", numbered("m", 1, 50), "listpack"},
                              {"ht", numbered("m", 1, 300), "hashtable"}};
    for (const Shape& s : shapes) {
      CAPTURE(s.encoding);
      h.sadd(s.key, s.members);
      REQUIRE(h.encoding(s.key) == s.encoding);
      std::set<std::string> all(s.members.begin(), s.members.end());
      CHECK(h.raw({"SRANDMEMBER", s.key, "0"}).elements.empty());
      for (std::string count : {"1", "5", "20", "40", "49"}) {
        RespValue r = h.raw({"SRANDMEMBER", s.key, count});
        CHECK(r.type == RespValue::Type::array);
        std::vector<std::string> got = sorted(r);
        CHECK(got.size() == std::stoul(count));
        CHECK(std::adjacent_find(got.begin(), got.end()) == got.end());
        for (const std::string& m : got) {
          CHECK(all.count(m) == 1);
        }
      }
      // More than the set: the whole set.
      CHECK(sorted(h.raw({"SRANDMEMBER", s.key, "100000"})).size() == s.members.size());
      // Negative: exactly |count| draws, repetitions allowed, all members seen eventually.
      RespValue r = h.raw({"SRANDMEMBER", s.key, "-2000"});
      CHECK(r.elements.size() == 2000);
      std::set<std::string> seen;
      for (const RespValue& e : r.elements) {
        CHECK(all.count(e.str) == 1);
        seen.insert(e.str);
      }
      CHECK(seen.size() == std::min<size_t>(s.members.size(), seen.size()));
      CHECK(seen.size() > s.members.size() / 2);
    }
    // RESP3 keeps the array shape.
    h.session.resp = 3;
    CHECK(h.raw({"SRANDMEMBER", "lp", "3"}).type == RespValue::Type::array);
  }

  TEST_CASE("SRANDMEMBER draws members evenly in every encoding (chi-square, as Valkey)") {
    Harness h;
    h({"CONFIG", "SET", "set-max-listpack-value", "32"});
    struct Shape {
      std::string encoding;
      std::vector<std::string> members;
    };
    std::vector<Shape> shapes{
        {"listpack",
         {"1", "5", "10", "50", "125", "MARY", "PATRICIA", "LINDA", "BARBARA", "ELIZABETH"}},
        {"intset", numbered("", 0, 9)},
        {"hashtable",
         {"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", "1", "5", "10", "50", "125", "MARY", "PATRICIA",
          "LINDA", "BARBARA"}}};
    auto chi_square = [](const std::vector<std::string>& draws) {
      std::map<std::string, int> counts;
      for (const std::string& d : draws) {
        ++counts[d];
      }
      double expected = static_cast<double>(draws.size() / counts.size());
      double x2 = 0;
      for (const auto& [member, n] : counts) {
        x2 += (n - expected) * (n - expected) / expected;
      }
      return x2;
    };
    for (const Shape& shape : shapes) {
      CAPTURE(shape.encoding);
      h({"DEL", "myset"});
      for (const std::string& m : shape.members) {
        h({"SADD", "myset", m});
      }
      REQUIRE(h.encoding("myset") == shape.encoding);
      // df = 9: 40 has a probability of 0.00001.
      CHECK(chi_square(strings(h.raw({"SRANDMEMBER", "myset", "-1000"}))) < 40);
      for (int size : {8, 2}) {
        std::vector<std::string> all;
        for (int i = 0; i < 1000 / size; ++i) {
          for (std::string& m : strings(h.raw({"SRANDMEMBER", "myset", std::to_string(size)}))) {
            all.push_back(std::move(m));
          }
        }
        CHECK(chi_square(all) < 40);
      }
    }
  }

  TEST_CASE("SPOP without a count pops one member and deletes the emptied key") {
    Harness h;
    CHECK(h({"SPOP", "missing"}) == "(nil)");
    h({"SADD", "s", "a", "b"});
    std::string first = h.raw({"SPOP", "s"}).str;
    std::string second = h.raw({"SPOP", "s"}).str;
    CHECK(std::set<std::string>{first, second} == std::set<std::string>{"a", "b"});
    CHECK(h({"EXISTS", "s"}) == num(0));
    CHECK(h({"SPOP", "s", "1", "2"}) == err("ERR syntax error"));
  }

  TEST_CASE("SPOP with a count validates it and replies a set") {
    Harness h;
    h({"SADD", "s", "a", "b", "c"});
    CHECK(h({"SPOP", "s", "-1"}) == err("ERR value is out of range, must be positive"));
    CHECK(h({"SPOP", "s", "x"}) == err("ERR value is out of range, must be positive"));
    CHECK(h({"SPOP", "missing", "x"}) == err("ERR value is out of range, must be positive"));
    CHECK(h.raw({"SPOP", "missing", "3"}).elements.empty());
    CHECK(h.raw({"SPOP", "s", "0"}).elements.empty());
    CHECK(h({"SCARD", "s"}) == num(3));
    h.session.resp = 3;
    CHECK(h.raw({"SPOP", "s", "0"}).type == RespValue::Type::set);
    CHECK(h.raw({"SPOP", "missing", "2"}).type == RespValue::Type::set);
    RespValue r = h.raw({"SPOP", "s", "2"});
    CHECK(r.type == RespValue::Type::set);
    CHECK(r.elements.size() == 2);
    r = h.raw({"SPOP", "s", "5"});
    CHECK(r.type == RespValue::Type::set);
    CHECK(r.elements.size() == 1);
    CHECK(h({"EXISTS", "s"}) == num(0));
  }

  TEST_CASE("SPOP with a count pops distinct members in every strategy and encoding") {
    Harness h;
    struct Case {
      std::vector<std::string> members;
      int count;
    };
    std::vector<Case> cases{{numbered("", 1, 100), 10},  {numbered("", 1, 100), 95},
                            {numbered("m", 1, 100), 10}, {numbered("m", 1, 100), 95},
                            {numbered("m", 1, 600), 50}, {numbered("m", 1, 600), 590},
                            {numbered("", 1, 600), 590}, {numbered("", 1, 10), 10}};
    for (const Case& c : cases) {
      CAPTURE(c.members.size());
      CAPTURE(c.count);
      h({"DEL", "s"});
      h.sadd("s", c.members);
      RespValue r = h.raw({"SPOP", "s", std::to_string(c.count)});
      std::vector<std::string> popped = sorted(r);
      CHECK(popped.size() == static_cast<size_t>(c.count));
      CHECK(std::adjacent_find(popped.begin(), popped.end()) == popped.end());
      std::vector<std::string> left = sorted(h.raw({"SMEMBERS", "s"}));
      CHECK(left.size() + popped.size() == c.members.size());
      std::vector<std::string> both;
      std::set_intersection(left.begin(), left.end(), popped.begin(), popped.end(),
                            std::back_inserter(both));
      CHECK(both.empty());
    }
  }

  TEST_CASE("SPOP rebuilding a large set picks the survivors' encoding") {
    Harness h;
    h.sadd("ht", numbered("m", 1, 600));
    REQUIRE(h.encoding("ht") == "hashtable");
    h({"SPOP", "ht", "590"});
    CHECK(h.encoding("ht") == "listpack");
    CHECK(h({"SCARD", "ht"}) == num(10));

    h.sadd("ints", numbered("", 1, 400));
    h({"SPOP", "ints", "390"});
    CHECK(h.encoding("ints") == "intset");

    // Survivors popped from a hashtable arrive as strings: a listpack even if numeric.
    h.sadd("htints", numbered("", 1, 600));
    REQUIRE(h.encoding("htints") == "hashtable");
    h({"SPOP", "htints", "590"});
    CHECK(h.encoding("htints") == "listpack");
  }

  TEST_CASE("SINTER, SINTERSTORE and SMEMBERS-like edge cases") {
    Harness h;
    h({"SADD", "a", "1", "2", "3", "x"});
    h({"SADD", "b", "2", "3", "4", "x"});
    h({"SADD", "c", "3", "x", "9"});
    CHECK(sorted(h.raw({"SINTER", "a", "b", "c"})) == std::vector<std::string>{"3", "x"});
    CHECK(sorted(h.raw({"SINTER", "a", "a"})) == std::vector<std::string>{"1", "2", "3", "x"});
    CHECK(h.raw({"SINTER", "a", "missing"}).elements.empty());
    h.session.resp = 3;
    CHECK(h.raw({"SINTER", "a", "b"}).type == RespValue::Type::set);
    CHECK(h.raw({"SINTER", "a", "missing"}).type == RespValue::Type::set);
    h.session.resp = 2;

    CHECK(h({"SINTERSTORE", "d", "a", "b"}) == num(3));
    CHECK(sorted(h.raw({"SMEMBERS", "d"})) == std::vector<std::string>{"2", "3", "x"});
    CHECK(h.encoding("d") == "listpack");
    // An empty result deletes the destination, whatever its type.
    h({"SET", "d", "string"});
    CHECK(h({"SINTERSTORE", "d", "a", "missing"}) == num(0));
    CHECK(h({"EXISTS", "d"}) == num(0));
    h({"SET", "d", "string"});
    h({"SADD", "e", "zz"});
    CHECK(h({"SINTERSTORE", "d", "a", "e"}) == num(0));
    CHECK(h({"EXISTS", "d"}) == num(0));
    // The destination may be a source.
    CHECK(h({"SINTERSTORE", "a", "a", "c"}) == num(2));
    CHECK(sorted(h.raw({"SMEMBERS", "a"})) == std::vector<std::string>{"3", "x"});
  }

  TEST_CASE("SINTERSTORE stores the best encoding and drops the destination's TTL") {
    Harness h;
    h.sadd("ht", numbered("", 1, 600));
    h.sadd("ht2", numbered("", 1, 600));
    REQUIRE(h.encoding("ht") == "hashtable");
    CHECK(h({"SINTERSTORE", "d", "ht", "ht2"}) == num(600));
    CHECK(h.encoding("d") == "hashtable");  // too many for an intset
    h({"SREM", "ht", "1"});
    h({"SADD", "small", "5", "6", "7"});
    CHECK(h({"SINTERSTORE", "d", "ht", "small"}) == num(3));
    CHECK(h.encoding("d") == "intset");
    h.sadd("strs", numbered("m", 1, 300));
    h.sadd("strs2", numbered("m", 1, 200));
    CHECK(h({"SINTERSTORE", "d", "strs", "strs2"}) == num(200));
    CHECK(h.encoding("d") == "hashtable");
    h({"EXPIRE", "d", "100"});
    h({"SINTERSTORE", "d", "small", "small"});
    CHECK(h({"TTL", "d"}) == num(-1));
  }

  TEST_CASE("Valkey's encoding cases: big integers, variadic limits, integer results") {
    Harness h;
    h({"SADD", "big", "213244124402402314402033402"});
    CHECK(h.encoding("big") == "listpack");
    CHECK(h({"SISMEMBER", "big", "213244124402402314402033402"}) == num(1));

    // A new key created by one SADD of exactly the listpack limit stays a listpack.
    std::vector<std::string> args{"a"};
    for (const std::string& n : numbered("", 0, 126)) {
      args.push_back(n);
    }
    h.sadd("lp", args);
    CHECK(h.encoding("lp") == "listpack");
    h({"SADD", "lp2", "a"});
    h.sadd("lp2", args);
    CHECK(h.encoding("lp2") == "listpack");
    CHECK(h({"SCARD", "lp2"}) == num(128));
    h({"SADD", "lp2", "b"});
    CHECK(h.encoding("lp2") == "hashtable");

    // Intersections of listpacks or hashtables that hold only integers store an intset.
    h({"SADD", "set1", "a", "b", "c", "1", "3", "6", "x", "y", "z"});
    h({"SADD", "set2", "e", "f", "g", "1", "2", "3", "u", "v", "w"});
    CHECK(h({"SINTERSTORE", "res", "set1", "set2"}) == num(2));
    CHECK(h.encoding("res") == "intset");
    h({"DEL", "set1", "set2"});
    h({"SADD", "set1", "a", "b", "c", "444", "555", "666"});
    h({"SADD", "set2", "e", "f", "g", "111", "222", "333"});
    h.sadd("set1", numbered("", 1, 129));
    h.sadd("set2", numbered("", 1, 129));
    REQUIRE(h.encoding("set1") == "hashtable");
    CHECK(h({"SINTERSTORE", "res", "set1", "set2"}) == num(129));
    CHECK(h.encoding("res") == "intset");
  }

  TEST_CASE("SINTERCARD counts up to LIMIT and checks its arguments") {
    Harness h;
    h({"SADD", "a", "1", "2", "3", "4"});
    h({"SADD", "b", "2", "3", "4", "5"});
    CHECK(h({"SINTERCARD", "2", "a", "b"}) == num(3));
    CHECK(h({"SINTERCARD", "2", "a", "b", "LIMIT", "2"}) == num(2));
    CHECK(h({"SINTERCARD", "2", "a", "b", "limit", "0"}) == num(3));
    CHECK(h({"SINTERCARD", "1", "a"}) == num(4));
    CHECK(h({"SINTERCARD", "2", "a", "missing"}) == num(0));
    CHECK(h({"SINTERCARD", "0", "a"}) == err("ERR numkeys should be greater than 0"));
    CHECK(h({"SINTERCARD", "x", "a"}) == err("ERR numkeys should be greater than 0"));
    CHECK(h({"SINTERCARD", "3", "a", "b"}) ==
          err("ERR Number of keys can't be greater than number of args"));
    CHECK(h({"SINTERCARD", "1", "a", "LIMIT", "-1"}) == err("ERR LIMIT can't be negative"));
    CHECK(h({"SINTERCARD", "1", "a", "LIMIT", "x"}) == err("ERR LIMIT can't be negative"));
    CHECK(h({"SINTERCARD", "1", "a", "LIMIT"}) == err("ERR syntax error"));
    CHECK(h({"SINTERCARD", "1", "a", "b"}) == err("ERR syntax error"));
  }

  TEST_CASE("SUNION, SDIFF and their STORE forms") {
    Harness h;
    h({"SADD", "a", "1", "2", "3"});
    h({"SADD", "b", "3", "4"});
    h({"SADD", "c", "x", "1"});
    CHECK(strings(h.raw({"SUNION", "a", "b", "missing"})) ==
          std::vector<std::string>{"1", "2", "3", "4"});
    CHECK(sorted(h.raw({"SUNION", "a", "c"})) == std::vector<std::string>{"1", "2", "3", "x"});
    CHECK(strings(h.raw({"SDIFF", "a", "b"})) == std::vector<std::string>{"1", "2"});
    CHECK(sorted(h.raw({"SDIFF", "a", "b", "c"})) == std::vector<std::string>{"2"});
    CHECK(h.raw({"SDIFF", "a", "a"}).elements.empty());
    CHECK(h.raw({"SDIFF", "missing", "a"}).elements.empty());
    CHECK(sorted(h.raw({"SDIFF", "a", "missing"})) == std::vector<std::string>{"1", "2", "3"});
    h.session.resp = 3;
    CHECK(h.raw({"SUNION", "a"}).type == RespValue::Type::set);
    CHECK(h.raw({"SDIFF", "missing"}).type == RespValue::Type::set);
    h.session.resp = 2;

    CHECK(h({"SUNIONSTORE", "u", "a", "b"}) == num(4));
    CHECK(h.encoding("u") == "intset");
    CHECK(h({"SUNIONSTORE", "u", "a", "c"}) == num(4));
    CHECK(h.encoding("u") == "listpack");
    CHECK(h({"SDIFFSTORE", "d", "a", "b"}) == num(2));
    CHECK(sorted(h.raw({"SMEMBERS", "d"})) == std::vector<std::string>{"1", "2"});
    CHECK(h({"SDIFFSTORE", "d", "a", "a"}) == num(0));
    CHECK(h({"EXISTS", "d"}) == num(0));
    CHECK(h({"SUNIONSTORE", "d", "missing"}) == num(0));

    // Large unions move on to a hashtable.
    h.sadd("big1", numbered("m", 1, 100));
    h.sadd("big2", numbered("m", 101, 200));
    CHECK(h({"SUNIONSTORE", "u", "big1", "big2"}) == num(200));
    CHECK(h.encoding("u") == "hashtable");
    CHECK(h({"SDIFFSTORE", "d", "u", "big1"}) == num(100));
    CHECK(h({"SISMEMBER", "d", "m150"}) == num(1));
    CHECK(h({"SISMEMBER", "d", "m50"}) == num(0));
  }

  TEST_CASE("SSCAN returns small sets whole and walks a hashtable to cursor 0") {
    Harness h;
    h({"SADD", "ints", "1", "2", "3"});
    RespValue r = h.raw({"SSCAN", "ints", "0"});
    REQUIRE(r.elements.size() == 2);
    CHECK(r.elements[0].str == "0");
    CHECK(strings(r.elements[1]) == std::vector<std::string>{"1", "2", "3"});
    r = h.raw({"SSCAN", "ints", "0", "MATCH", "2*"});
    CHECK(strings(r.elements[1]) == std::vector<std::string>{"2"});
    r = h.raw({"SSCAN", "missing", "0"});
    CHECK(r.elements[0].str == "0");
    CHECK(r.elements[1].elements.empty());

    h.sadd("ht", numbered("m", 1, 1000));
    std::set<std::string> seen;
    std::string cursor = "0";
    int rounds = 0;
    do {
      r = h.raw({"SSCAN", "ht", cursor, "COUNT", "20"});
      cursor = r.elements[0].str;
      for (const RespValue& e : r.elements[1].elements) {
        seen.insert(e.str);
      }
      ++rounds;
    } while (cursor != "0" && rounds < 10000);
    CHECK(seen.size() == 1000);
    CHECK(rounds > 10);

    r = h.raw({"SSCAN", "ht", "0", "MATCH", "m99*", "COUNT", "10000"});
    CHECK(r.elements[0].str == "0");
    CHECK(sorted(r.elements[1]) == std::vector<std::string>{"m99", "m990", "m991", "m992", "m993",
                                                            "m994", "m995", "m996", "m997", "m998",
                                                            "m999"});
  }

  TEST_CASE("SSCAN checks the cursor and options") {
    Harness h;
    h({"SADD", "s", "a"});
    CHECK(h({"SSCAN", "s", "x"}) == err("ERR invalid cursor"));
    CHECK(h({"SSCAN", "s", "-1"}) == err("ERR invalid cursor"));
    CHECK(h({"SSCAN", "s", "0", "COUNT", "0"}) == err("ERR syntax error"));
    CHECK(h({"SSCAN", "s", "0", "COUNT", "x"}) ==
          err("ERR value is not an integer or out of range"));
    CHECK(h({"SSCAN", "s", "0", "TYPE", "set"}) == err("ERR syntax error"));
    CHECK(h({"SSCAN", "s", "0", "NOVALUES"}) ==
          err("ERR NOVALUES option can only be used in HSCAN"));
    CHECK(h({"SSCAN", "s", "0", "NOSCORES"}) ==
          err("ERR NOSCORES option can only be used in ZSCAN"));
    CHECK(h({"SSCAN", "s", "0", "MATCH"}) == err("ERR syntax error"));
    // Options are read after the key: a missing key answers an empty page.
    CHECK(h.raw({"SSCAN", "missing", "0", "COUNT", "0"}).elements.size() == 2);
  }

  TEST_CASE("DEBUG DIGEST-VALUE of a set matches Valkey's in every encoding") {
    EngineConfig cfg;
    cfg.enable_debug_command = ks::EnableMode::yes;
    Harness h(cfg);
    h({"SADD", "s", "1", "2", "3"});
    CHECK(h.raw({"DEBUG", "DIGEST-VALUE", "s"}).elements[0].str ==
          "2a462a3f51a1db89738ebbeef0c47ce1bbc85246");
    h({"SADD", "t", "a", "b", "1"});
    CHECK(h.encoding("t") == "listpack");
    CHECK(h.raw({"DEBUG", "DIGEST-VALUE", "t"}).elements[0].str ==
          "e8f32bbb1ad9bf537c8867de4f19fec9e001296d");
    CHECK(h.raw({"DEBUG", "DIGEST"}).str == "449e2b8e1816011cd4f670e2eb26dc453d2f1f81");
    // The same members as a hashtable digest the same.
    h({"CONFIG", "SET", "set-max-listpack-entries", "0"});
    h({"SADD", "u", "a", "b", "1"});
    CHECK(h.encoding("u") == "hashtable");
    CHECK(h.raw({"DEBUG", "DIGEST-VALUE", "u"}).elements[0].str ==
          "e8f32bbb1ad9bf537c8867de4f19fec9e001296d");
  }

  TEST_CASE("writes emit Valkey's keyspace events and only when something changed") {
    Harness h;
    Session& sub = h.engine.open_session(nullptr);
    h({"CONFIG", "SET", "notify-keyspace-events", "Egs"});
    std::vector<std::string_view> psub{"PSUBSCRIBE", "__keyevent@0__:*"};
    h.engine.execute(sub, psub);
    sub.out.clear();
    h({"SADD", "s", "a", "b"});
    h({"SADD", "s", "a"});
    h({"SREM", "s", "zz"});
    h({"SREM", "s", "a"});
    h({"SMOVE", "s", "d", "b"});
    h({"SMOVE", "s", "d", "b"});
    h({"SPOP", "d"});
    h({"SADD", "x", "1", "2", "3"});
    h({"SPOP", "x", "5"});
    h({"SADD", "a", "1", "2"});
    h({"SADD", "b", "2", "3"});
    h({"SPOP", "b", "0"});
    h({"SINTERSTORE", "dst", "a", "b"});
    h({"SUNIONSTORE", "dst", "a", "b"});
    h({"SDIFFSTORE", "dst", "a", "a"});
    h({"SINTERSTORE", "dst", "a", "missing"});
    h({"SADD", "c", "1", "2", "3", "4", "5", "6"});
    h({"SPOP", "c", "2"});
    h({"SREM", "c", "1", "2", "3", "4", "5", "6"});
    CHECK(drain_events(sub) ==
          std::vector<std::string>{"sadd s", "srem s", "srem s", "del s", "sadd d", "spop d",
                                   "del d", "sadd x", "spop x", "del x", "sadd a", "sadd b",
                                   "sinterstore dst", "sunionstore dst", "del dst", "sadd c",
                                   "spop c", "srem c", "del c"});
  }

  TEST_CASE("set writes invalidate WATCH") {
    Harness h;
    Session& other = h.engine.open_session(nullptr);
    h({"SADD", "s", "a"});
    for (std::vector<std::string> write : std::vector<std::vector<std::string>>{
             {"SADD", "s", "b"},
             {"SREM", "s", "b"},
             {"SPOP", "s", "0"},
             {"SINTERSTORE", "s", "s", "s"},
         }) {
      CAPTURE(write[0]);
      CHECK(h({"WATCH", "s"}) == "OK");
      std::vector<std::string_view> argv(write.begin(), write.end());
      h.engine.run(other, argv);
      CHECK(h({"MULTI"}) == "OK");
      h({"SCARD", "s"});
      bool aborted = h.raw({"EXEC"}).type == RespValue::Type::null;
      // SPOP with a zero count changes nothing and leaves the transaction alone.
      CHECK(aborted == (write[0] != "SPOP"));
    }
  }

  TEST_CASE("COPY duplicates a set with its encoding") {
    Harness h;
    h({"SADD", "s", "1", "x"});
    CHECK(h({"COPY", "s", "c"}) == num(1));
    CHECK(h.encoding("c") == "listpack");
    h({"SREM", "s", "x"});
    CHECK(h({"SISMEMBER", "c", "x"}) == num(1));
  }

  TEST_CASE("memory returns to the baseline after sets grow, convert and go") {
    Harness h;
    h({"SET", "anchor", "x"});
    uint64_t baseline = h.engine.memory().used();
    // At most three keys live at once so that the key table itself never resizes.
    auto check_round = [&](std::initializer_list<std::string_view> keys) {
      CHECK(h.engine.memory().used() > baseline);
      std::vector<std::string> del{"DEL"};
      del.insert(del.end(), keys.begin(), keys.end());
      h.raw(del);
      CHECK(h.engine.memory().used() == baseline);
    };
    h.sadd("s", numbered("", 1, 100));
    h({"SADD", "s", "word"});            // intset -> listpack
    h.sadd("s", numbered("w", 1, 200));  // listpack -> hashtable
    h({"SREM", "s", "w1", "w2", "1"});
    h({"SPOP", "s", "3"});
    h({"SPOP", "s"});
    h({"SPOP", "s", "280"});  // rebuilt as a listpack
    h({"SPOP", "s", "2"});
    check_round({"s"});

    h.sadd("t", numbered("", 1, 600));  // intset -> hashtable
    h.sadd("s", numbered("", 590, 700));
    h({"SADD", "s", "x"});
    h({"SINTERSTORE", "i", "s", "t"});
    check_round({"s", "t", "i"});

    h.sadd("t", numbered("", 1, 600));
    h.sadd("s", numbered("m", 1, 50));
    h({"SUNIONSTORE", "u", "s", "t"});
    check_round({"s", "t", "u"});

    h.sadd("t", numbered("", 1, 600));
    h.sadd("s", numbered("", 1, 50));
    h({"SDIFFSTORE", "d", "t", "s"});
    check_round({"s", "t", "d"});

    h.sadd("t", numbered("", 1, 600));
    h({"SMOVE", "t", "m", "5"});
    h({"COPY", "t", "t2"});
    check_round({"t", "m", "t2"});

    h({"SADD", "p", "a"});
    h({"SPOP", "p"});
    CHECK(h.engine.memory().used() == baseline);
  }

  TEST_CASE("SADD creating a key keeps its intset without growth headroom") {
    Harness h;
    h.sadd("s", numbered("", 100000, 100019));
    ks::Entry* e = h.engine.db(0).lookup("s", false);
    REQUIRE(e != nullptr);
    ks::SetRef s(static_cast<const ks::Entry*>(e));
    CHECK(e->kind() == ks::Entry::Kind::blob);
    CHECK(h.encoding("s") == "intset");
    // The blob sits in the smallest allocator block that holds it.
    void* exact = ks::MemoryCounter::raw_allocate(s->intset().blob().size());
    CHECK(s->intset().bytes() == ks::MemoryCounter::usable_size(exact));
    ks::MemoryCounter::raw_deallocate(exact);
  }
}
