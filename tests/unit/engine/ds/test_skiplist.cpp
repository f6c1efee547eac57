#include "engine/ds/skiplist.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

using keyshift::engine::MemoryCounter;
using keyshift::engine::parse_lex_range;
using keyshift::engine::parse_score_range;
using keyshift::engine::ZLexRange;
using keyshift::engine::ZNode;
using keyshift::engine::ZScoreRange;
using keyshift::engine::ZSkiplist;

namespace {

using Ref = std::set<std::pair<double, std::string>>;

std::vector<std::pair<double, std::string>> walk(const ZSkiplist& sl) {
  std::vector<std::pair<double, std::string>> out;
  for (ZNode* n = sl.first(); n != nullptr; n = n->next()) {
    out.emplace_back(n->score(), std::string(n->member()));
  }
  return out;
}

std::vector<std::pair<double, std::string>> walk_back(const ZSkiplist& sl) {
  std::vector<std::pair<double, std::string>> out;
  for (ZNode* n = sl.last(); n != nullptr; n = n->backward()) {
    out.emplace_back(n->score(), std::string(n->member()));
  }
  return out;
}

void check_matches(const ZSkiplist& sl, const Ref& ref) {
  std::vector<std::pair<double, std::string>> expected(ref.begin(), ref.end());
  REQUIRE(sl.size() == ref.size());
  REQUIRE(walk(sl) == expected);
  std::vector<std::pair<double, std::string>> back(expected.rbegin(), expected.rend());
  REQUIRE(walk_back(sl) == back);
  uint64_t rank = 1;
  for (const auto& [score, member] : expected) {
    REQUIRE(sl.rank(score, member) == rank);
    ZNode* n = sl.at_rank(rank);
    REQUIRE(n != nullptr);
    REQUIRE(n->member() == member);
    ++rank;
  }
  CHECK(sl.at_rank(0) == nullptr);
  CHECK(sl.at_rank(ref.size() + 1) == nullptr);
}

ZScoreRange score_range(std::string_view min, std::string_view max) {
  ZScoreRange r;
  REQUIRE(parse_score_range(min, max, r));
  return r;
}

}  // namespace

TEST_SUITE("engine::skiplist") {
  TEST_CASE("inserts keep (score, member) order, ranks and the backward links") {
    MemoryCounter mem;
    {
      ZSkiplist sl(mem, 7);
      Ref ref;
      std::mt19937_64 rng(1);
      for (int i = 0; i < 2000; ++i) {
        double score = static_cast<double>(rng() % 50);
        std::string member = "m" + std::to_string(rng() % 5000);
        if (ref.count({score, member}) != 0) {
          continue;
        }
        bool dup_member = false;
        for (const auto& p : ref) {
          dup_member = dup_member || p.second == member;
        }
        if (dup_member) {
          continue;
        }
        sl.insert(score, member);
        ref.emplace(score, member);
      }
      check_matches(sl, ref);
      CHECK(sl.rank(1000, "nope") == 0);
    }
    CHECK(mem.used() == 0);
  }

  TEST_CASE("update_score moves a node and keeps the same allocation") {
    MemoryCounter mem;
    ZSkiplist sl(mem, 3);
    Ref ref;
    std::vector<ZNode*> nodes;
    for (int i = 0; i < 200; ++i) {
      std::string m = "k" + std::to_string(i);
      nodes.push_back(sl.insert(i, m));
      ref.emplace(i, m);
    }
    std::mt19937_64 rng(9);
    for (int round = 0; round < 500; ++round) {
      ZNode* n = nodes[rng() % nodes.size()];
      double to = static_cast<double>(rng() % 300) - 50;
      ref.erase({n->score(), std::string(n->member())});
      sl.update_score(n, to);
      ref.emplace(to, std::string(n->member()));
      CHECK(n->score() == to);
    }
    check_matches(sl, ref);
  }

  TEST_CASE("nth_in_range finds the n-th node of a score range from either end") {
    MemoryCounter mem;
    ZSkiplist sl(mem, 5);
    for (int i = 0; i < 100; ++i) {
      sl.insert(i, "e" + std::to_string(i));
    }
    ZScoreRange r = score_range("10", "(20");
    CHECK(sl.nth_in_range(r, 0)->score() == 10);
    CHECK(sl.nth_in_range(r, 9)->score() == 19);
    CHECK(sl.nth_in_range(r, 10) == nullptr);
    CHECK(sl.nth_in_range(r, -1)->score() == 19);
    CHECK(sl.nth_in_range(r, -10)->score() == 10);
    CHECK(sl.nth_in_range(r, -11) == nullptr);
    CHECK(sl.nth_in_range(r, INT64_MIN) == nullptr);
    CHECK(sl.nth_in_range(score_range("(99", "+inf"), 0) == nullptr);
    CHECK(sl.nth_in_range(score_range("5", "4"), 0) == nullptr);
    CHECK(sl.nth_in_range(score_range("-inf", "+inf"), 99)->score() == 99);
  }

  TEST_CASE("lex ranges follow Valkey's bounds") {
    MemoryCounter mem;
    ZSkiplist sl(mem, 5);
    for (char c = 'a'; c <= 'z'; ++c) {
      sl.insert(0, std::string(1, c));
    }
    ZLexRange r;
    REQUIRE(parse_lex_range("[c", "(f", r));
    CHECK(sl.nth_in_lex_range(r, 0)->member() == "c");
    CHECK(sl.nth_in_lex_range(r, -1)->member() == "e");
    CHECK(sl.nth_in_lex_range(r, 3) == nullptr);
    REQUIRE(parse_lex_range("-", "+", r));
    CHECK(sl.nth_in_lex_range(r, 25)->member() == "z");
    REQUIRE(parse_lex_range("+", "-", r));
    CHECK(r.empty());
    REQUIRE(parse_lex_range("[b", "[b", r));
    CHECK_FALSE(r.empty());
    REQUIRE(parse_lex_range("(b", "[b", r));
    CHECK(r.empty());
    CHECK_FALSE(parse_lex_range("b", "[c", r));
    CHECK_FALSE(parse_lex_range("", "[c", r));
    CHECK_FALSE(parse_lex_range("+x", "[c", r));
  }

  TEST_CASE("score range parsing accepts what strtod does, and rejects NaN and junk") {
    ZScoreRange r;
    CHECK(parse_score_range("(1.5", "+inf", r));
    CHECK(r.minex);
    CHECK(r.min == 1.5);
    CHECK(parse_score_range(" 1", "0x10", r));
    CHECK(r.max == 16);
    CHECK(parse_score_range("", "(", r));  // empty text reads as 0
    CHECK_FALSE(parse_score_range("nan", "1", r));
    CHECK_FALSE(parse_score_range("1x", "1", r));
    CHECK_FALSE(parse_score_range("1", "((1", r));
  }

  TEST_CASE("erasing ranges by score, lex and rank unlinks exactly the range") {
    MemoryCounter mem;
    {
      ZSkiplist sl(mem, 11);
      Ref ref;
      for (int i = 0; i < 300; ++i) {
        std::string m = "n" + std::to_string(1000 + i);
        sl.insert(i / 3, m);
        ref.emplace(i / 3, m);
      }
      std::vector<ZNode*> freed;
      size_t n = sl.erase_score_range(score_range("(10", "20"), [&](ZNode* x) {
        freed.push_back(x);
        ref.erase({x->score(), std::string(x->member())});
      });
      CHECK(n == 30);
      for (ZNode* x : freed) {
        sl.free_node(x);
      }
      check_matches(sl, ref);
      n = sl.erase_rank_range(5, 9, [&](ZNode* x) {
        ref.erase({x->score(), std::string(x->member())});
        sl.free_node(x);
      });
      CHECK(n == 5);
      check_matches(sl, ref);
      ZLexRange lex;
      REQUIRE(parse_lex_range("-", "[n1100", lex));
      n = sl.erase_lex_range(lex, [&](ZNode* x) {
        ref.erase({x->score(), std::string(x->member())});
        sl.free_node(x);
      });
      CHECK(n > 0);
      check_matches(sl, ref);
    }
    CHECK(mem.used() == 0);
  }
}
