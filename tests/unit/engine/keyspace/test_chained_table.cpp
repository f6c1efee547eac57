#include "engine/keyspace/chained_table.hpp"
#include "engine/util/hash.hpp"

#include <doctest/doctest.h>

#include <set>
#include <string>
#include <vector>

namespace {

struct Node {
  Node* next = nullptr;
  std::string key;
};

struct Traits {
  static Node*& next(Node* n) { return n->next; }
  static std::string_view key(const Node* n) { return n->key; }
  static uint64_t hash(std::string_view k, uint64_t seed) {
    return keyshift::engine::hash_bytes(k, seed);
  }
};

using Table = keyshift::engine::ChainedTable<Node, Traits>;

}  // namespace

TEST_SUITE("engine::chained_table") {
  TEST_CASE("inserted nodes are found and unlinked nodes are gone, across resizes") {
    keyshift::engine::MemoryCounter mem;
    std::vector<Node> nodes(5000);
    {
      Table t(mem, 42);
      for (size_t i = 0; i < nodes.size(); ++i) {
        nodes[i].key = "key:" + std::to_string(i);
        t.insert(&nodes[i], t.hash(nodes[i].key));
      }
      CHECK(t.size() == 5000);
      for (size_t i = 0; i < nodes.size(); ++i) {
        CHECK(t.find(nodes[i].key) == &nodes[i]);
      }
      for (size_t i = 0; i < nodes.size(); i += 2) {
        Node** link = t.find_link(nodes[i].key, t.hash(nodes[i].key));
        REQUIRE(link != nullptr);
        t.unlink(link);
      }
      CHECK(t.size() == 2500);
      CHECK(t.find("key:0") == nullptr);
      CHECK(t.find("key:1") == &nodes[1]);
      while (t.rehash(100)) {
      }
      CHECK(t.size() == 2500);
    }
    CHECK(mem.used() == 0);
  }

  TEST_CASE("a scan returns every node present for the whole scan while the table grows") {
    keyshift::engine::MemoryCounter mem;
    Table t(mem, 7);
    std::vector<Node> nodes(20000);
    for (size_t i = 0; i < 1000; ++i) {
      nodes[i].key = "a" + std::to_string(i);
      t.insert(&nodes[i], t.hash(nodes[i].key));
    }
    std::set<std::string> seen;
    uint64_t cursor = 0;
    size_t next = 1000;
    do {
      cursor = t.scan(cursor, [&](Node* n) { seen.insert(n->key); });
      // Grow the table between calls so that rehashing happens mid-scan.
      for (int k = 0; k < 40 && next < nodes.size(); ++k, ++next) {
        nodes[next].key = "b" + std::to_string(next);
        t.insert(&nodes[next], t.hash(nodes[next].key));
      }
    } while (cursor != 0);
    for (size_t i = 0; i < 1000; ++i) {
      CHECK(seen.count(nodes[i].key) == 1);
    }
    t.clear([](Node*) {});
  }

  TEST_CASE("a scan returns every node present for the whole scan while the table shrinks") {
    keyshift::engine::MemoryCounter mem;
    Table t(mem, 9);
    std::vector<Node> nodes(8000);
    for (size_t i = 0; i < nodes.size(); ++i) {
      nodes[i].key = "k" + std::to_string(i);
      t.insert(&nodes[i], t.hash(nodes[i].key));
    }
    std::set<std::string> seen;
    uint64_t cursor = 0;
    size_t victim = 100;
    do {
      cursor = t.scan(cursor, [&](Node* n) { seen.insert(n->key); });
      for (int k = 0; k < 200 && victim < nodes.size(); ++k, ++victim) {
        Node** link = t.find_link(nodes[victim].key, t.hash(nodes[victim].key));
        t.unlink(link);
      }
    } while (cursor != 0);
    for (size_t i = 0; i < 100; ++i) {
      CHECK(seen.count(nodes[i].key) == 1);
    }
    t.clear([](Node*) {});
  }

  TEST_CASE("nodes inserted while a resize runs can be unlinked before their bucket moves") {
    // Inserts during a resize go to the new table even when their old bucket was not moved
    // yet; unlinking one must charge the new table, or the resize runs past the old buckets.
    keyshift::engine::MemoryCounter mem;
    std::vector<Node> nodes(700);
    std::set<size_t> linked;
    uint64_t state = 7;
    auto next_random = [&] {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      return state >> 33;
    };
    {
      Table t(mem, 42);
      for (size_t i = 0; i < nodes.size(); ++i) {
        nodes[i].key = "field:" + std::to_string(i);
      }
      for (int step = 0; step < 20000; ++step) {
        size_t i = next_random() % nodes.size();
        Node** link = t.find_link(nodes[i].key, t.hash(nodes[i].key));
        if (next_random() % 4 == 0) {
          if (link != nullptr) {
            t.unlink(link);
            linked.erase(i);
          }
        } else if (link == nullptr) {
          t.insert(&nodes[i], t.hash(nodes[i].key));
          linked.insert(i);
        }
        REQUIRE(t.size() == linked.size());
      }
      size_t walked = 0;
      t.for_each([&](Node*) { ++walked; });
      CHECK(walked == linked.size());
      t.clear([](Node*) {});
    }
    CHECK(mem.used() == 0);
  }
}
