#include "engine/keyspace/hash_value.hpp"

#include <doctest/doctest.h>

#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

using keyshift::engine::HashBuf;
using keyshift::engine::HashExpireCond;
using keyshift::engine::HashField;
using keyshift::engine::HashLimits;
using keyshift::engine::HashValue;
using keyshift::engine::k_hash_no_expire;
using keyshift::engine::ObjEncoding;

namespace {

std::string value_of(const HashValue& h, std::string_view field) {
  HashField f;
  HashBuf buf;
  return h.find(field, f, buf) ? std::string(f.value) : std::string("<none>");
}

std::map<std::string, std::string> contents(const HashValue& h) {
  std::map<std::string, std::string> m;
  h.for_each([&](const HashField& f) { m.emplace(f.field, f.value); });
  return m;
}

std::vector<std::string> field_order(const HashValue& h) {
  std::vector<std::string> v;
  h.for_each([&](const HashField& f) { v.emplace_back(f.field); });
  return v;
}

}  // namespace

TEST_SUITE("engine::hash_value") {
  TEST_CASE("a small hash is a listpack and keeps insertion order") {
    HashValue h(1);
    HashLimits limits;
    CHECK(h.set("b", "1", limits));
    CHECK(h.set("a", "2", limits));
    CHECK_FALSE(h.set("b", "3", limits));
    CHECK(h.encoding() == ObjEncoding::listpack);
    CHECK(h.size() == 2);
    CHECK(value_of(h, "b") == "3");
    CHECK(field_order(h) == std::vector<std::string>{"b", "a"});
    CHECK(h.remove("b"));
    CHECK_FALSE(h.remove("b"));
    CHECK(h.size() == 1);
  }

  TEST_CASE("integers stored in the listpack read back as their text") {
    HashValue h(1);
    HashLimits limits;
    h.set("12", "-7", limits);
    h.set("x", "007", limits);
    CHECK(value_of(h, "12") == "-7");
    CHECK(value_of(h, "x") == "007");
    CHECK(h.contains("12"));
  }

  TEST_CASE("exceeding the entry count converts to hashtable at limit + 1") {
    HashValue h(1);
    HashLimits limits{4, 64};
    for (int i = 0; i < 4; ++i) {
      h.set("f" + std::to_string(i), "v", limits);
    }
    CHECK(h.encoding() == ObjEncoding::listpack);
    h.set("f4", "v", limits);
    CHECK(h.encoding() == ObjEncoding::hashtable);
    CHECK(h.size() == 5);
    // Never back, even when it shrinks.
    for (int i = 0; i < 5; ++i) {
      h.remove("f" + std::to_string(i));
    }
    h.set("a", "b", limits);
    CHECK(h.encoding() == ObjEncoding::hashtable);
  }

  TEST_CASE("a field or value longer than the value limit converts to hashtable") {
    HashLimits limits{128, 8};
    HashValue a(1);
    a.set("f", std::string(8, 'x'), limits);
    CHECK(a.encoding() == ObjEncoding::listpack);
    a.set("f", std::string(9, 'x'), limits);
    CHECK(a.encoding() == ObjEncoding::hashtable);
    CHECK(value_of(a, "f") == std::string(9, 'x'));
    HashValue b(1);
    b.set(std::string(9, 'k'), "v", limits);
    CHECK(b.encoding() == ObjEncoding::hashtable);
  }

  TEST_CASE("convert_for_write looks at every argument first, as HSET does") {
    HashLimits limits{2, 8};
    HashValue h(1);
    std::vector<std::string_view> args{"a", "1", "b", std::string_view("123456789")};
    h.convert_for_write(args, limits);
    CHECK(h.encoding() == ObjEncoding::hashtable);
    HashValue many(1);
    std::vector<std::string_view> three_pairs{"a", "1", "b", "2", "c", "3"};
    many.convert_for_write(three_pairs, limits);
    CHECK(many.encoding() == ObjEncoding::hashtable);
    HashValue fits(1);
    std::vector<std::string_view> two_pairs{"a", "1", "b", "2"};
    fits.convert_for_write(two_pairs, limits);
    CHECK(fits.encoding() == ObjEncoding::listpack);
  }

  TEST_CASE("the hashtable survives growth, value rewrites and removal of every field") {
    HashValue h(42);
    HashLimits limits{0, 64};
    std::map<std::string, std::string> model;
    std::mt19937_64 rng(7);
    for (int i = 0; i < 3000; ++i) {
      std::string f = "field:" + std::to_string(rng() % 700);
      std::string v(rng() % 40, static_cast<char>('a' + i % 26));
      if (rng() % 4 == 0) {
        CHECK(h.remove(f) == (model.erase(f) == 1));
      } else {
        CHECK(h.set(f, v, limits) == model.insert_or_assign(f, v).second);
      }
    }
    CHECK(h.encoding() == ObjEncoding::hashtable);
    CHECK(contents(h) == model);
    for (const auto& [f, v] : model) {
      CHECK(h.remove(f));
    }
    CHECK(h.empty());
  }

  TEST_CASE("bytes() is tracked: it grows with data and falls back when fields go") {
    HashLimits limits{4, 64};
    HashValue h(1);
    size_t empty = h.bytes();
    for (int i = 0; i < 100; ++i) {
      h.set("f" + std::to_string(i), std::string(50, 'v'), limits);
      h.set_expire("f" + std::to_string(i), 2'000'000'000'000 + i, HashExpireCond::none, 0);
    }
    CHECK(h.bytes() > empty + 100 * 50);
    for (int i = 0; i < 100; ++i) {
      h.remove("f" + std::to_string(i));
    }
    // Only the (empty) bucket array, the object and spare vector room remain.
    CHECK(h.bytes() < empty + 4096);
  }

  TEST_CASE("clone is a deep copy in every encoding") {
    HashLimits small{128, 64};
    HashLimits tiny{1, 64};
    for (HashLimits limits : {small, tiny}) {
      HashValue h(3);
      h.set("a", "1", limits);
      h.set("b", "2", limits);
      h.set_expire("a", 5000, HashExpireCond::none, 1000);
      std::unique_ptr<HashValue> c(static_cast<HashValue*>(h.clone()));
      CHECK(c->encoding() == h.encoding());
      CHECK(c->bytes() > 0);
      h.set("a", "changed", limits);
      h.remove("b");
      CHECK(value_of(*c, "a") == "1");
      CHECK(value_of(*c, "b") == "2");
      CHECK(c->expire_of("a") == 5000);
      CHECK(c->min_expire() == 5000);
    }
  }

  TEST_CASE("field TTLs turn a listpack into listpackex, earliest expiry first") {
    HashValue h(1);
    HashLimits limits;
    h.set("a", "1", limits);
    h.set("b", "2", limits);
    h.set("c", "3", limits);
    h.enable_field_expiry();
    CHECK(h.encoding() == ObjEncoding::listpack_ex);
    CHECK_FALSE(h.has_field_expires());
    CHECK(h.set_expire("c", 3000, HashExpireCond::none, 1000) == 1);
    CHECK(h.set_expire("b", 2000, HashExpireCond::none, 1000) == 1);
    CHECK(field_order(h) == std::vector<std::string>{"b", "c", "a"});
    CHECK(h.min_expire() == 2000);
    CHECK(h.expire_of("a") == -1);
    CHECK(h.expire_of("b") == 2000);
    CHECK(h.expire_of("zz") == -2);
    CHECK(value_of(h, "c") == "3");
    // Persisting moves the field behind the ones with a TTL.
    CHECK(h.persist("b") == 1);
    CHECK(h.persist("b") == -1);
    CHECK(h.persist("zz") == -2);
    CHECK(field_order(h) == std::vector<std::string>{"c", "a", "b"});
    CHECK(h.min_expire() == 3000);
  }

  TEST_CASE("NX XX GT LT decide whether a field TTL changes") {
    for (HashLimits limits : {HashLimits{128, 64}, HashLimits{0, 64}}) {
      HashValue h(1);
      h.set("f", "v", limits);
      h.enable_field_expiry();
      CHECK(h.set_expire("f", 5000, HashExpireCond::xx, 0) == 0);
      CHECK(h.set_expire("f", 5000, HashExpireCond::gt, 0) == 0);
      CHECK(h.set_expire("f", 5000, HashExpireCond::lt, 0) == 1);
      CHECK(h.set_expire("f", 6000, HashExpireCond::nx, 0) == 0);
      CHECK(h.set_expire("f", 4000, HashExpireCond::gt, 0) == 0);
      CHECK(h.set_expire("f", 5000, HashExpireCond::gt, 0) == 0);
      CHECK(h.set_expire("f", 6000, HashExpireCond::gt, 0) == 1);
      CHECK(h.set_expire("f", 7000, HashExpireCond::lt, 0) == 0);
      CHECK(h.set_expire("f", 3000, HashExpireCond::xx, 0) == 1);
      CHECK(h.expire_of("f") == 3000);
      CHECK(h.set_expire("nope", 3000, HashExpireCond::none, 0) == -2);
      // A time not after now deletes the field.
      CHECK(h.set_expire("f", 100, HashExpireCond::none, 100) == 2);
      CHECK(h.empty());
    }
  }

  TEST_CASE("expire_due removes exactly the due fields, earliest first") {
    for (HashLimits limits : {HashLimits{128, 64}, HashLimits{0, 64}}) {
      HashValue h(1);
      for (int i = 0; i < 10; ++i) {
        h.set("f" + std::to_string(i), "v", limits);
      }
      h.enable_field_expiry();
      for (int i = 0; i < 10; i += 2) {
        h.set_expire("f" + std::to_string(i), 1000 + i * 100, HashExpireCond::none, 0);
      }
      std::vector<std::string> gone;
      auto collect = [&](std::string_view f) { gone.emplace_back(f); };
      CHECK(h.expire_due(999, 100, collect) == 0);
      CHECK(h.expire_due(1200, 100, collect) == 2);
      CHECK(gone == std::vector<std::string>{"f0", "f2"});
      CHECK(h.expire_due(5000, 1, collect) == 1);
      CHECK(gone.back() == "f4");
      CHECK(h.min_expire() == 1600);
      CHECK(h.expire_due(5000, 100, collect) == 2);
      CHECK_FALSE(h.has_field_expires());
      CHECK(h.size() == 5);
      CHECK(h.min_expire() == k_hash_no_expire);
    }
  }

  TEST_CASE("a listpackex hash keeps its TTLs when it converts to hashtable") {
    HashLimits limits{3, 64};
    HashValue h(1);
    h.set("a", "1", limits);
    h.set("b", "2", limits);
    h.set_expire("a", 9000, HashExpireCond::none, 0);
    h.set("c", "3", limits);
    CHECK(h.encoding() == ObjEncoding::listpack_ex);
    h.set("d", "4", limits);
    CHECK(h.encoding() == ObjEncoding::hashtable);
    CHECK(h.expire_of("a") == 9000);
    CHECK(h.expire_of("b") == -1);
    CHECK(h.min_expire() == 9000);
  }

  TEST_CASE("set drops a field's TTL unless asked to keep it") {
    for (HashLimits limits : {HashLimits{128, 64}, HashLimits{0, 64}}) {
      HashValue h(1);
      h.set("f", "1", limits);
      h.set_expire("f", 9000, HashExpireCond::none, 0);
      h.set("f", "2", limits, true);
      CHECK(h.expire_of("f") == 9000);
      CHECK(value_of(h, "f") == "2");
      h.set("f", "33", limits, true);
      CHECK(h.expire_of("f") == 9000);
      h.set("f", "4", limits);
      CHECK(h.expire_of("f") == -1);
      CHECK_FALSE(h.has_field_expires());
    }
  }

  TEST_CASE("the expiry heap stays ordered under many updates") {
    HashLimits limits{0, 64};
    HashValue h(1);
    std::mt19937_64 rng(3);
    std::map<std::string, int64_t> ttl;
    for (int i = 0; i < 500; ++i) {
      std::string f = "f" + std::to_string(rng() % 100);
      h.set(f, "v", limits, true);
      switch (rng() % 4) {
        case 0:
          h.persist(f);
          ttl.erase(f);
          break;
        case 1:
          h.set(f, std::string(rng() % 10, 'x'), limits);
          ttl.erase(f);
          break;
        default: {
          int64_t t = 10'000 + static_cast<int64_t>(rng() % 100'000);
          h.set_expire(f, t, HashExpireCond::none, 0);
          ttl[f] = t;
        }
      }
    }
    int64_t last = 0;
    size_t n = 0;
    h.expire_due(INT64_MAX - 1, SIZE_MAX, [&](std::string_view f) {
      int64_t t = ttl.at(std::string(f));
      CHECK(t >= last);
      last = t;
      ++n;
    });
    CHECK(n == ttl.size());
  }

  TEST_CASE("random returns stored fields in both encodings") {
    for (HashLimits limits : {HashLimits{128, 64}, HashLimits{0, 64}}) {
      HashValue h(1);
      h.set("a", "1", limits);
      h.set("b", "2", limits);
      std::mt19937_64 rng(1);
      std::map<std::string, int> seen;
      for (int i = 0; i < 200; ++i) {
        HashBuf buf;
        HashField f = h.random(rng, buf);
        CHECK(value_of(h, f.field) == std::string(f.value));
        ++seen[std::string(f.field)];
      }
      CHECK(seen.size() == 2);
    }
  }
}
