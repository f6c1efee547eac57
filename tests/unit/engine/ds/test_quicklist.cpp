#include "tests/unit/engine/corpus_json.hpp"

#include "engine/ds/listpack.hpp"
#include "engine/ds/lzf.hpp"
#include "engine/ds/quicklist.hpp"

#include <doctest/doctest.h>

#include <deque>
#include <random>
#include <string>
#include <string_view>
#include <vector>

using keyshift::engine::Listpack;
using keyshift::engine::lzf_compress;
using keyshift::engine::lzf_decompress;
using keyshift::engine::Quicklist;

using keyshift::test::from_hex;

namespace {

std::string compress(std::string_view in) {
  std::string out(in.size() + in.size() / 16 + 64, '\0');
  size_t n = lzf_compress(in.data(), in.size(), out.data(), out.size());
  out.resize(n);
  return out;
}

std::vector<std::string> forward(const Quicklist& ql) {
  std::vector<std::string> out;
  for (Quicklist::Cursor c(ql, 0, true); c.valid(); c.advance()) {
    out.push_back(c.value().to_string());
  }
  return out;
}

std::vector<std::string> backward(const Quicklist& ql) {
  std::vector<std::string> out;
  for (Quicklist::Cursor c(ql, -1, false); c.valid(); c.advance()) {
    out.insert(out.begin(), c.value().to_string());
  }
  return out;
}

std::vector<std::string> as_vector(const std::deque<std::string>& d) {
  return {d.begin(), d.end()};
}

void require_valid(const Quicklist& ql) {
  std::string why;
  bool ok = ql.check(&why);
  CAPTURE(why);
  REQUIRE(ok);
}

size_t compressed_nodes(const Quicklist& ql) {
  size_t n = 0;
  for (auto* node = ql.head(); node != nullptr; node = node->next()) {
    n += node->compressed() ? 1 : 0;
  }
  return n;
}

}  // namespace

TEST_SUITE("engine::quicklist") {
  TEST_CASE("LZF round-trips empty, tiny, repetitive, random and long-distance inputs") {
    std::mt19937_64 rng(1);
    std::vector<std::string> inputs = {"a", "abc", "abcabcabcabcabcabcabc",
                                       std::string(100000, 'z')};
    std::string random(20000, '\0');
    for (auto& c : random) {
      c = static_cast<char>(rng());
    }
    inputs.push_back(random);
    std::string far;  // matches exactly 8192 and 8193 bytes back
    for (int i = 0; i < 3; ++i) {
      far += random.substr(0, 8192);
      far += "x";
    }
    inputs.push_back(far);
    std::string text;
    for (int i = 0; i < 2000; ++i) {
      text += "element-" + std::to_string(i % 97) + ",";
    }
    inputs.push_back(text);
    for (const auto& in : inputs) {
      CAPTURE(in.size());
      std::string c = compress(in);
      REQUIRE(!c.empty());
      auto back = lzf_decompress(c, in.size());
      REQUIRE(back);
      CHECK(*back == in);
    }
    CHECK(compress(std::string(100000, 'z')).size() < 1200);
  }

  TEST_CASE("LZF compression reports 0 when the output does not fit") {
    std::mt19937_64 rng(2);
    std::string random(1000, '\0');
    for (auto& c : random) {
      c = static_cast<char>(rng());
    }
    std::string out(random.size(), '\0');
    CHECK(lzf_compress(random.data(), random.size(), out.data(), out.size()) == 0);
    CHECK(lzf_compress("", 0, out.data(), out.size()) == 0);
  }

  TEST_CASE("LZF decompresses a stream redis-server wrote into its listpack") {
    // DUMP of RPUSH l "hello world 0".."hello world 6" (40 elements, cycling) from
    // redis-server 7.0: the node's LZF payload and its 607-byte listpack.
    const std::string lzf = from_hex(
        "145f02000028008d68656c6c6f20776f726c6420300ee0040e0031e0050e0032e0050e0033e0050e00"
        "34e0050e0035e0050e0036e0050ee0ff688176e1ca3a010eff");
    auto raw = lzf_decompress(lzf, 607);
    REQUIRE(raw);
    Listpack expected;
    for (int i = 0; i < 40; ++i) {
      expected.append("hello world " + std::to_string(i % 7));
    }
    CHECK(*raw == expected.data());
    Listpack adopted;
    CHECK(Listpack::adopt(*raw, adopted));
    CHECK(adopted.size() == 40);
  }

  TEST_CASE("LZF decompression rejects corrupt or oversized streams without overrunning") {
    std::string c = compress(std::string(5000, 'q') + "tail");
    std::string out(5004, '\0');
    CHECK(lzf_decompress(c.data(), c.size(), out.data(), 5003) == 0);  // too small
    CHECK(!lzf_decompress(c, 5003));
    CHECK(!lzf_decompress(from_hex("05616263"), 6));   // literal runs past input
    CHECK(!lzf_decompress(from_hex("0061200a"), 10));  // reference before the start
    CHECK(!lzf_decompress(from_hex("00612000"), 10));  // decodes to 4 bytes, not 10
    CHECK(!lzf_decompress(from_hex("0061e0"), 20));    // long reference cut short
    std::mt19937_64 rng(3);
    for (int i = 0; i < 2000; ++i) {
      std::string junk(rng() % 40, '\0');
      for (auto& ch : junk) {
        ch = static_cast<char>(rng());
      }
      std::string buf(64, '\0');
      size_t n = lzf_decompress(junk.data(), junk.size(), buf.data(), buf.size());
      CHECK(n <= buf.size());
    }
  }

  TEST_CASE("a byte fill splits nodes at the byte limit and pushes keep order") {
    Quicklist ql(-2, 0);
    std::deque<std::string> ref;
    for (int i = 0; i < 2000; ++i) {
      std::string v = "value-" + std::to_string(i);
      if (i % 2 == 0) {
        ql.push_tail(v);
        ref.push_back(v);
      } else {
        ql.push_head(v);
        ref.push_front(v);
      }
    }
    require_valid(ql);
    CHECK(ql.size() == 2000);
    CHECK(ql.node_count() > 1);
    for (auto* n = ql.head(); n != nullptr; n = n->next()) {
      CHECK(n->sz() <= 8192);
    }
    CHECK(forward(ql) == as_vector(ref));
    CHECK(backward(ql) == as_vector(ref));
  }

  TEST_CASE("a count fill puts at most that many entries in a node") {
    Quicklist ql(3, 0);
    for (int i = 0; i < 10; ++i) {
      ql.push_tail(std::to_string(i));
    }
    require_valid(ql);
    CHECK(ql.node_count() == 4);
    for (auto* n = ql.head(); n != nullptr; n = n->next()) {
      CHECK(n->count() <= 3);
    }
    // Fill 0 means one entry per node.
    Quicklist one(0, 0);
    for (int i = 0; i < 5; ++i) {
      one.push_head("x");
    }
    CHECK(one.node_count() == 5);
  }

  TEST_CASE("limits follow Valkey's fill levels and safety cap") {
    size_t sz = 0;
    size_t count = 0;
    Quicklist::node_limit(-1, sz, count);
    CHECK(sz == 4096);
    Quicklist::node_limit(-5, sz, count);
    CHECK(sz == 65536);
    Quicklist::node_limit(-9, sz, count);
    CHECK(sz == 65536);
    Quicklist::node_limit(128, sz, count);
    CHECK(count == 128);
    CHECK(Quicklist::exceeds_limit(128, 8193, 2));
    CHECK(!Quicklist::exceeds_limit(128, 8192, 128));
    CHECK(Quicklist::exceeds_limit(128, 100, 129));
    CHECK(Quicklist::is_large_element(8193, -2));
    CHECK(!Quicklist::is_large_element(8192, -2));
    CHECK(Quicklist::is_large_element(4097, -1));
    CHECK(Quicklist::is_large_element(8193, 5));
  }

  TEST_CASE("large elements live in plain nodes and read back as strings") {
    Quicklist ql(-2, 0);
    ql.push_tail("a");
    std::string big(10000, 'B');
    ql.push_tail(big);
    ql.push_tail("c");
    ql.push_head(big);
    require_valid(ql);
    CHECK(ql.node_count() == 4);
    CHECK(ql.head()->is_plain());
    CHECK(ql.get(ql.locate(2)) == big);
    CHECK(forward(ql) == std::vector<std::string>{big, "a", big, "c"});
    // Replacing a plain element with a small one moves it into a packed neighbour.
    ql.replace(ql.locate(2), "small");
    require_valid(ql);
    CHECK(forward(ql) == std::vector<std::string>{big, "a", "small", "c"});
    // A large value replacing a packed element gets its own node.
    ql.replace(ql.locate(1), big);
    require_valid(ql);
    CHECK(forward(ql) == std::vector<std::string>{big, big, "small", "c"});
    std::string out;
    CHECK(ql.pop_head(out));
    CHECK(out == big);
    require_valid(ql);
  }

  TEST_CASE("inserting into the middle of a full node splits it and merges neighbours") {
    Quicklist ql(4, 0);
    for (int i = 0; i < 8; ++i) {
      ql.push_tail(std::to_string(i));  // [0 1 2 3] [4 5 6 7]
    }
    CHECK(ql.node_count() == 2);
    ql.insert(ql.locate(1), true, "x");  // split after 1: [0 1 x] [2 3] -> merges
    require_valid(ql);
    CHECK(forward(ql) == std::vector<std::string>{"0", "1", "x", "2", "3", "4", "5", "6", "7"});
    CHECK(ql.node_count() == 3);
    // At a full node's tail with room in the next node, the value goes to its head.
    Quicklist q2(2, 0);
    for (int i = 0; i < 3; ++i) {
      q2.push_tail(std::to_string(i));  // [0 1] [2]
    }
    q2.insert(q2.locate(1), true, "y");
    CHECK(q2.node_count() == 2);
    CHECK(q2.head()->next()->count() == 2);
    CHECK(forward(q2) == std::vector<std::string>{"0", "1", "y", "2"});
    // Before the head of a full node with a full previous node: a new node.
    q2.insert(q2.locate(2), false, "z");
    require_valid(q2);
    CHECK(forward(q2) == std::vector<std::string>{"0", "1", "z", "y", "2"});
  }

  TEST_CASE("deleting ranges removes whole nodes and trims partial ones") {
    Quicklist ql(5, 0);
    std::deque<std::string> ref;
    for (int i = 0; i < 23; ++i) {
      ql.push_tail(std::to_string(i));
      ref.push_back(std::to_string(i));
    }
    ql.del_range(3, 9);
    ref.erase(ref.begin() + 3, ref.begin() + 12);
    require_valid(ql);
    CHECK(forward(ql) == as_vector(ref));
    ql.del_range(-4, 100);
    ref.erase(ref.end() - 4, ref.end());
    CHECK(forward(ql) == as_vector(ref));
    ql.del_range(0, 1000);
    CHECK(ql.size() == 0);
    CHECK(ql.node_count() == 0);
    require_valid(ql);
  }

  TEST_CASE("erase returns the next position in either direction") {
    Quicklist ql(2, 0);
    for (std::string_view s : {"a", "x", "b", "x", "x", "c"}) {
      ql.push_tail(s);
    }
    for (auto loc = ql.locate(0); loc;) {
      if (ql.get(loc) == "x") {
        loc = ql.erase(loc, true);
      } else {
        if (loc.offset + 1 < loc.node->count()) {
          loc.offset++;
        } else {
          loc = {loc.node->next(), 0};
        }
      }
    }
    require_valid(ql);
    CHECK(forward(ql) == std::vector<std::string>{"a", "b", "c"});
    auto loc = ql.erase(ql.locate(-1), false);
    CHECK(ql.get(loc) == "b");
    loc = ql.erase(ql.locate(0), false);
    CHECK(!loc);
    CHECK(forward(ql) == std::vector<std::string>{"b"});
  }

  TEST_CASE("interior nodes are compressed beyond the depth and read back intact") {
    Quicklist ql(-1, 1);
    std::deque<std::string> ref;
    for (int i = 0; i < 3000; ++i) {
      std::string v = "compressible element number " + std::to_string(i % 50);
      ql.push_tail(v);
      ref.push_back(v);
    }
    require_valid(ql);
    REQUIRE(ql.node_count() > 4);
    CHECK(!ql.head()->compressed());
    CHECK(!ql.tail()->compressed());
    CHECK(compressed_nodes(ql) == ql.node_count() - 2);
    CHECK(forward(ql) == as_vector(ref));
    CHECK(backward(ql) == as_vector(ref));
    // Mutations deep inside compressed nodes.
    ql.insert(ql.locate(1500), false, "inserted");
    ref.insert(ref.begin() + 1500, "inserted");
    ql.replace(ql.locate(2000), "replaced");
    ref[2000] = "replaced";
    ql.del_range(100, 700);
    ref.erase(ref.begin() + 100, ref.begin() + 800);
    require_valid(ql);
    CHECK(forward(ql) == as_vector(ref));
    CHECK(ql.get(ql.locate(1500 - 700)) == "inserted");
    // Raw node bytes of a compressed node are its listpack.
    for (auto* n = ql.head(); n != nullptr; n = n->next()) {
      std::string scratch;
      Listpack lp;
      CHECK(Listpack::adopt(n->raw(scratch), lp));
      CHECK(lp.size() == n->count());
    }
    auto copy = ql.clone();
    require_valid(*copy);
    CHECK(forward(*copy) == as_vector(ref));
    CHECK(copy->bytes() <= ql.bytes());  // the copy holds no spare capacity
  }

  TEST_CASE("a depth of two keeps two nodes raw at each end") {
    Quicklist ql(2, 2);
    for (int i = 0; i < 40; ++i) {
      ql.push_tail(std::string(60, static_cast<char>('a' + i % 3)));
    }
    require_valid(ql);
    auto* n = ql.head();
    CHECK(!n->compressed());
    CHECK(!n->next()->compressed());
    CHECK(n->next()->next()->compressed());
    CHECK(!ql.tail()->prev()->compressed());
    CHECK(compressed_nodes(ql) == ql.node_count() - 4);
  }

  TEST_CASE("the only listpack can be taken back out") {
    Quicklist ql(-2, 0);
    Listpack lp;
    lp.append("a");
    lp.append("b");
    ql.append_listpack(std::move(lp));
    ql.append_listpack(Listpack());
    CHECK(ql.node_count() == 1);
    CHECK(ql.size() == 2);
    Listpack back = ql.take_single_listpack();
    CHECK(back.size() == 2);
    CHECK(ql.size() == 0);
    CHECK(ql.bytes() == 0);
  }

  TEST_CASE("random operations keep order, structure and byte accounting") {
    for (int fill : {-1, -2, 1, 4, 64}) {
      for (int depth : {0, 1, 3}) {
        CAPTURE(fill);
        CAPTURE(depth);
        std::mt19937_64 rng(static_cast<uint64_t>(fill * 31 + depth));
        Quicklist ql(fill, depth);
        std::deque<std::string> ref;
        auto value = [&]() -> std::string {
          switch (rng() % 5) {
            case 0:
              return std::to_string(rng() % 1000);
            case 1:
              return std::string(rng() % 9000, 'L');
            default:
              return "item:" + std::to_string(rng() % 300);
          }
        };
        for (int step = 0; step < 1500; ++step) {
          int op = static_cast<int>(rng() % 9);
          std::string out;
          if (ref.empty() || op <= 1) {
            std::string v = value();
            if (rng() % 2 == 0) {
              ql.push_head(v);
              ref.push_front(v);
            } else {
              ql.push_tail(v);
              ref.push_back(v);
            }
          } else if (op == 2) {
            REQUIRE(ql.pop_head(out));
            CHECK(out == ref.front());
            ref.pop_front();
          } else if (op == 3) {
            REQUIRE(ql.pop_tail(out));
            CHECK(out == ref.back());
            ref.pop_back();
          } else if (op == 4) {
            size_t i = rng() % ref.size();
            bool after = rng() % 2 == 0;
            std::string v = value();
            ql.insert(ql.locate(static_cast<int64_t>(i)), after, v);
            ref.insert(ref.begin() + static_cast<ptrdiff_t>(i + (after ? 1 : 0)), v);
          } else if (op == 5) {
            size_t i = rng() % ref.size();
            std::string v = value();
            REQUIRE(ql.replace_at(static_cast<int64_t>(i), v));
            ref[i] = v;
          } else if (op == 6) {
            size_t i = rng() % ref.size();
            ql.erase(ql.locate(static_cast<int64_t>(i)), rng() % 2 == 0);
            ref.erase(ref.begin() + static_cast<ptrdiff_t>(i));
          } else if (op == 7) {
            size_t i = rng() % ref.size();
            size_t n = rng() % 6;
            ql.del_range(static_cast<int64_t>(i), static_cast<int64_t>(n));
            ref.erase(ref.begin() + static_cast<ptrdiff_t>(i),
                      ref.begin() + static_cast<ptrdiff_t>(std::min(ref.size(), i + n)));
          } else {
            size_t i = rng() % ref.size();
            CHECK(ql.get(ql.locate(static_cast<int64_t>(i))) == ref[i]);
            CHECK(ql.get(ql.locate(static_cast<int64_t>(i) - static_cast<int64_t>(ref.size()))) ==
                  ref[i]);
          }
          REQUIRE(ql.size() == ref.size());
          if (step % 50 == 0) {
            require_valid(ql);
            REQUIRE(forward(ql) == as_vector(ref));
          }
        }
        require_valid(ql);
        REQUIRE(forward(ql) == as_vector(ref));
        REQUIRE(backward(ql) == as_vector(ref));
      }
    }
  }
}
