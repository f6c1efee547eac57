#include "engine/keyspace/stream_value.hpp"

#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

using keyshift::engine::Listpack;
using keyshift::engine::StreamEntryView;
using keyshift::engine::StreamId;
using keyshift::engine::StreamLimits;
using keyshift::engine::StreamNodeReader;
using keyshift::engine::StreamTrim;
using keyshift::engine::StreamValue;

namespace {

std::vector<std::string> ids_of(const StreamValue& s, bool rev = false) {
  std::vector<std::string> out;
  s.range({}, StreamId::max(), rev, [&](const StreamEntryView& e) {
    out.push_back(e.id.text());
    return true;
  });
  return out;
}

void add(StreamValue& s, uint64_t ms, std::vector<std::string_view> fv, StreamLimits limits = {}) {
  s.append({ms, 0}, fv, limits);
}

/// The raw elements of a node listpack, integers as text.
std::vector<std::string> elements(const Listpack& lp) {
  std::vector<std::string> out;
  for (Listpack::Pos p = lp.first(); p != Listpack::k_none; p = lp.next(p)) {
    out.push_back(lp.get(p).to_string());
  }
  return out;
}

}  // namespace

TEST_SUITE("engine::stream_value") {
  TEST_CASE("entries are stored in Valkey's node layout, reusing the master's fields") {
    StreamValue s;
    add(s, 5, {"a", "1", "b", "2"});
    add(s, 7, {"a", "3", "b", "4"});
    add(s, 9, {"c", "5"});
    REQUIRE(s.nodes().size() == 1);
    CHECK(s.nodes().begin()->first == StreamId{5, 0});
    // count, deleted, master field count, fields, 0; then flags, ms delta, seq delta,
    // [field count, fields and values | values], lp-count.
    CHECK(elements(s.nodes().begin()->second) ==
          std::vector<std::string>{"3", "0", "2", "a", "b", "0", "2", "0", "0", "1", "2", "5", "2",
                                   "2", "0", "3", "4", "5", "0", "4", "0", "1", "c", "5", "6"});
    CHECK(s.length() == 3);
    CHECK(s.first_id() == StreamId{5, 0});
    CHECK(s.last_id() == StreamId{9, 0});
    CHECK(s.entries_added() == 3);
    CHECK(ids_of(s) == std::vector<std::string>{"5-0", "7-0", "9-0"});
    CHECK(ids_of(s, true) == std::vector<std::string>{"9-0", "7-0", "5-0"});
  }

  TEST_CASE("a node closes at stream-node-max-entries or stream-node-max-bytes") {
    StreamValue s;
    StreamLimits by_entries{0, 3};
    for (uint64_t i = 1; i <= 7; ++i) {
      add(s, i, {"f", "v"}, by_entries);
    }
    CHECK(s.nodes().size() == 3);
    StreamValue t;
    StreamLimits by_bytes{64, 0};
    for (uint64_t i = 1; i <= 10; ++i) {
      add(t, i, {"field", std::string(20, 'x')}, by_bytes);
    }
    CHECK(t.nodes().size() > 3);
    for (const auto& [master, lp] : t.nodes()) {
      CHECK(lp.byte_size() < 64 + 40);
    }
    CHECK(ids_of(t).size() == 10);
  }

  TEST_CASE("removing entries flags them, and a node goes with its last live entry") {
    StreamValue s;
    for (uint64_t i = 1; i <= 6; ++i) {
      add(s, i, {"f", "v"}, {0, 3});
    }
    CHECK(s.remove({2, 0}));
    CHECK_FALSE(s.remove({2, 0}));
    CHECK_FALSE(s.remove({99, 0}));
    CHECK(s.contains({1, 0}));
    CHECK_FALSE(s.contains({2, 0}));
    std::vector<std::string> el = elements(s.nodes().begin()->second);
    CHECK(el[0] == "2");  // live
    CHECK(el[1] == "1");  // deleted
    CHECK(s.remove({1, 0}));
    CHECK(s.remove({3, 0}));
    CHECK(s.nodes().size() == 1);
    CHECK(s.length() == 3);
    StreamId first;
    CHECK(s.edge_id(true, first));
    CHECK(first == StreamId{4, 0});
  }

  TEST_CASE("trimming removes whole nodes first and flags entries only when exact") {
    auto make = [] {
      auto s = std::make_unique<StreamValue>();
      for (uint64_t i = 1; i <= 10; ++i) {
        add(*s, i, {"f", "v"}, {0, 4});
      }
      return s;
    };
    auto s = make();
    StreamTrim approx{StreamTrim::Strategy::maxlen, true, 0, 5, {}};
    CHECK(s->trim(approx) == 4);  // the second node would leave 2 < 5
    CHECK(s->length() == 6);
    StreamTrim exact{StreamTrim::Strategy::maxlen, false, 0, 5, {}};
    CHECK(s->trim(exact) == 1);
    CHECK(s->first_id() == StreamId{6, 0});
    s = make();
    StreamTrim minid{StreamTrim::Strategy::minid, false, 0, 0, {7, 0}};
    CHECK(s->trim(minid) == 6);
    CHECK(ids_of(*s).front() == "7-0");
    s = make();
    StreamTrim limited{StreamTrim::Strategy::maxlen, true, 3, 0, {}};
    CHECK(s->trim(limited) == 0);  // a whole node is 4 entries, over the limit of 3
  }

  TEST_CASE("a clone shares nothing and holds the same bytes") {
    StreamValue s;
    for (uint64_t i = 1; i <= 300; ++i) {
      add(s, i, {"f", std::to_string(i)});
    }
    auto* g = s.create_group("g", {0, 0}, 0);
    REQUIRE(g != nullptr);
    auto* c = s.create_consumer(*g, "c", 1000);
    s.add_pending(*g, {3, 0}, c, 1000, 1);
    std::unique_ptr<StreamValue> copy(static_cast<StreamValue*>(s.clone()));
    CHECK(copy->bytes() <= s.bytes());  // the copy's listpacks are sized exactly
    CHECK(s.remove({3, 0}));
    CHECK(copy->contains({3, 0}));
    auto* cg = copy->group("g");
    REQUIRE(cg != nullptr);
    REQUIRE(cg->pel.size() == 1);
    CHECK(cg->pel.begin()->second.consumer == cg->consumers.at("c").get());
    CHECK(copy->delete_consumer(*cg, cg->consumers.at("c").get()) == 1);
    CHECK(g->pel.size() == 1);
  }

  TEST_CASE("the read counter estimate follows Valkey's rules") {
    StreamValue s;
    CHECK(s.estimate_distance({5, 0}) == 0);  // nothing ever added
    for (uint64_t i = 1; i <= 5; ++i) {
      add(s, i, {"f", "v"});
    }
    CHECK(s.estimate_distance({5, 0}) == 5);   // the last ID
    CHECK(s.estimate_distance({6, 0}) == -1);  // the future
    CHECK(s.estimate_distance({1, 0}) == 1);   // the first entry, no tombstones
    CHECK(s.estimate_distance({0, 5}) == 0);   // before the first entry
    CHECK(s.remove({3, 0}));
    s.set_max_deleted_id({3, 0});
    CHECK(s.estimate_distance({1, 0}) == -1);  // a tombstone ahead
    CHECK(s.range_has_tombstones({2, 0}, StreamId::max()));
    CHECK_FALSE(s.range_has_tombstones({4, 0}, StreamId::max()));
  }

  TEST_CASE("the node reader walks a node one entry at a time") {
    StreamValue s;
    add(s, 1, {"a", "1"});
    add(s, 2, {"b", "2", "c", "3"});
    const auto& [master, lp] = *s.nodes().begin();
    StreamNodeReader reader(master, lp);
    StreamEntryView e;
    Listpack::Pos p = reader.decode(reader.first_entry(), e, true);
    CHECK(e.id == StreamId{1, 0});
    REQUIRE(e.fields.size() == 1);
    CHECK(e.fields[0].first.to_string() == "a");
    CHECK(e.fields[0].second.to_string() == "1");
    p = reader.decode(p, e, false);
    CHECK(e.id == StreamId{2, 0});
    CHECK(e.fields.empty());
    CHECK(p == Listpack::k_none);
  }
}
