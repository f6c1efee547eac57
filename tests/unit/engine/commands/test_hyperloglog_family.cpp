#include "tests/unit/engine/commands/command_test_util.hpp"

#include "engine/ds/hyperloglog.hpp"
#include "engine/engine.hpp"

#include <doctest/doctest.h>

#include <string>

using keyshift::engine::Engine;
using keyshift::engine::EngineConfig;
using keyshift::engine::ManualClock;
using keyshift::engine::RespValue;
namespace hll = keyshift::engine::hll;

namespace {

struct Fixture : keyshift::engine::command_test::ReplyFixture {
  /// PFADDs e1..en to `key` in one command per element.
  void fill(std::string_view key, int n, std::string_view prefix = "e") {
    for (int i = 1; i <= n; ++i) {
      std::string ele = std::string(prefix) + std::to_string(i);
      engine.run({"PFADD", key, ele});
    }
  }
};

// Bytes redis-server 7.0 (the same format as Valkey 8.0.1) stores for PFADD h a b c,
// before and after PFCOUNT caches the cardinality.
const std::string k_abc_stale("HYLL\x01\0\0\0\0\0\0\0\0\0\0\x80`\xf3\x80P\xb1\x84K\xfb\x80\x42Z",
                              27);
const std::string k_abc_cached("HYLL\x01\0\0\0\x03\0\0\0\0\0\0\0`\xf3\x80P\xb1\x84K\xfb\x80\x42Z",
                               27);

}  // namespace

TEST_SUITE("engine::hyperloglog") {
  TEST_CASE("an empty HLL is a sparse header and one XZERO over all registers") {
    std::string h = hll::create();
    CHECK(h == std::string("HYLL\x01\0\0\0\0\0\0\0\0\0\0\0\x7f\xff", 18));
    CHECK(hll::looks_valid(h));
    CHECK(hll::estimate(h) == 0);
    CHECK(hll::cached_cardinality(h) == 0);
    CHECK(hll::decode_sparse(h) == "Z:16384");
  }

  TEST_CASE("the validity check wants the magic, a known encoding and the dense size") {
    CHECK_FALSE(hll::looks_valid("HYLL"));
    CHECK_FALSE(hll::looks_valid(std::string("HYLX\x01\0\0\0\0\0\0\0\0\0\0\0\x7f\xff", 18)));
    CHECK_FALSE(hll::looks_valid(std::string("HYLL\x02\0\0\0\0\0\0\0\0\0\0\0\x7f\xff", 18)));
    CHECK_FALSE(hll::looks_valid(std::string("HYLL\0\0\0\0\0\0\0\0\0\0\0\0\x7f\xff", 18)));
    std::string dense(hll::k_dense_size, '\0');
    dense.replace(0, 4, "HYLL");
    CHECK(hll::looks_valid(dense));
  }

  TEST_CASE("sparse updates split runs and merge equal neighbours as Valkey does") {
    std::string h = hll::create();
    CHECK(hll::set_register(h, 100, 3, 3000) == 1);
    CHECK(hll::decode_sparse(h) == "Z:100 v:3,1 Z:16283");
    CHECK(hll::set_register(h, 100, 2, 3000) == 0);
    CHECK(hll::set_register(h, 101, 3, 3000) == 1);
    CHECK(hll::decode_sparse(h) == "Z:100 v:3,2 Z:16282");
    CHECK(hll::set_register(h, 0, 1, 3000) == 1);
    CHECK(hll::set_register(h, 2, 1, 3000) == 1);
    CHECK(hll::decode_sparse(h) == "v:1,1 z:1 v:1,1 Z:97 v:3,2 Z:16282");
    CHECK(hll::set_register(h, 1, 1, 3000) == 1);
    CHECK(hll::decode_sparse(h) == "v:1,3 Z:97 v:3,2 Z:16282");
    CHECK(hll::set_register(h, 101, 5, 3000) == 1);
    CHECK(hll::decode_sparse(h) == "v:1,3 Z:97 v:3,1 v:5,1 Z:16282");
    CHECK_FALSE(hll::cached_cardinality(h).has_value());
  }

  TEST_CASE("a value over 32 or growth past the sparse limit converts to dense") {
    std::string h = hll::create();
    CHECK(hll::set_register(h, 7, 40, 3000) == 1);
    CHECK(h.size() == hll::k_dense_size);
    CHECK(hll::encoding(h) == hll::k_dense);
    CHECK(hll::dense_register(h, 7) == 40);
    CHECK(hll::dense_register(h, 8) == 0);
    std::string s = hll::create();
    // XZERO splits into XZERO VAL XZERO: 18 + 3 bytes fits in 21, 24 does not.
    CHECK(hll::set_register(s, 1000, 1, 21) == 1);
    CHECK(hll::encoding(s) == hll::k_sparse);
    CHECK(hll::set_register(s, 3000, 1, 21) == 1);
    CHECK(hll::encoding(s) == hll::k_dense);
    CHECK(hll::dense_register(s, 1000) == 1);
    CHECK(hll::dense_register(s, 3000) == 1);
    CHECK(hll::set_register(s, hll::k_registers - 1, 63, 21) == 1);
    CHECK(hll::dense_register(s, hll::k_registers - 1) == 63);
    CHECK(hll::dense_register(s, hll::k_registers - 2) == 0);
  }

  TEST_CASE("a sparse HLL whose runs do not cover 16384 registers is corrupt") {
    std::string h = hll::create();
    h.back() = '\x00';  // XZERO of 16129 registers
    CHECK_FALSE(hll::estimate(h).has_value());
    CHECK_FALSE(hll::to_dense(h));
    hll::Registers max{};
    CHECK_FALSE(hll::merge_into(max, h));
  }
}

TEST_SUITE("engine::hyperloglog_family") {
  TEST_CASE("PFADD stores the bytes redis-server stores and PFCOUNT caches the count") {
    Fixture f;
    CHECK(f.num({"PFADD", "h", "a", "b", "c"}) == 1);
    CHECK(f.str({"GET", "h"}) == k_abc_stale);
    CHECK(f.num({"PFADD", "h", "a"}) == 0);
    CHECK(f.str({"PFDEBUG", "DECODE", "h"}) == "Z:8436 v:1,1 Z:4274 v:2,1 Z:3068 v:1,1 Z:603");
    CHECK(f.num({"PFCOUNT", "h"}) == 3);
    CHECK(f.str({"GET", "h"}) == k_abc_cached);
    CHECK(f.num({"PFADD", "new"}) == 1);
    CHECK(f.num({"PFADD", "new"}) == 0);
    CHECK(f.num({"PFCOUNT", "new"}) == 0);
    CHECK(f.num({"PFCOUNT", "missing"}) == 0);
  }

  TEST_CASE("counts match redis-server's for sparse and dense HLLs and their union") {
    Fixture f;
    f.fill("s", 300);
    CHECK(f.str({"PFDEBUG", "ENCODING", "s"}) == "sparse");
    CHECK(f.num({"STRLEN", "s"}) == 713);
    CHECK(f.num({"PFCOUNT", "s"}) == 302);
    f.fill("d", 2000);
    CHECK(f.str({"PFDEBUG", "ENCODING", "d"}) == "dense");
    CHECK(f.num({"STRLEN", "d"}) == static_cast<int64_t>(hll::k_dense_size));
    CHECK(f.num({"PFCOUNT", "d"}) == 2000);
    CHECK(f.num({"PFCOUNT", "d", "s", "missing"}) == 2000);
  }

  TEST_CASE("PFMERGE keeps sparse unless a source is dense and counts the union") {
    Fixture f;
    f.fill("a", 100, "x");
    f.fill("b", 100, "y");
    CHECK(f.str({"PFMERGE", "u", "a", "b"}) == "OK");
    CHECK(f.str({"PFDEBUG", "ENCODING", "u"}) == "sparse");
    CHECK(f.num({"PFCOUNT", "u"}) == f.num({"PFCOUNT", "a", "b"}));
    CHECK(f.num({"PFADD", "b", "z"}) == 1);
    CHECK(f.num({"PFDEBUG", "TODENSE", "b"}) == 1);
    CHECK(f.num({"PFDEBUG", "TODENSE", "b"}) == 0);
    CHECK(f.str({"PFMERGE", "u2", "a", "b"}) == "OK");
    CHECK(f.str({"PFDEBUG", "ENCODING", "u2"}) == "dense");
    CHECK(f.num({"PFCOUNT", "u2"}) == f.num({"PFCOUNT", "a", "b"}));
    CHECK(f.str({"PFMERGE", "empty"}) == "OK");
    CHECK(f.num({"PFCOUNT", "empty"}) == 0);
  }

  TEST_CASE("the sparse limit comes from hll-sparse-max-bytes") {
    Fixture f;
    CHECK(f.str({"CONFIG", "SET", "hll-sparse-max-bytes", "30"}) == "OK");
    f.fill("h", 10);
    CHECK(f.str({"PFDEBUG", "ENCODING", "h"}) == "dense");
  }

  TEST_CASE("HLL errors use Valkey's texts") {
    Fixture f;
    f.run({"SET", "str", "hello"});
    f.run({"RPUSH", "list", "x"});
    CHECK(f.err({"PFADD", "str", "a"}) == "WRONGTYPE Key is not a valid HyperLogLog string value.");
    CHECK(f.err({"PFCOUNT", "str"}) == "WRONGTYPE Key is not a valid HyperLogLog string value.");
    CHECK(f.err({"PFADD", "list", "a"}).starts_with("WRONGTYPE Operation against a key"));
    CHECK(f.err({"PFMERGE", "d", "str"}) ==
          "WRONGTYPE Key is not a valid HyperLogLog string value.");
    CHECK(f.err({"PFDEBUG", "ENCODING", "missing"}) == "ERR The specified key does not exist");
    f.run({"PFADD", "h", "a"});
    CHECK(f.err({"PFDEBUG", "NOPE", "h"}) == "ERR Unknown PFDEBUG subcommand 'NOPE'");
    f.run({"PFDEBUG", "TODENSE", "h"});
    CHECK(f.err({"PFDEBUG", "DECODE", "h"}) == "ERR HLL encoding is not sparse");
    std::string bad = hll::create();
    bad.back() = '\x00';
    f.run({"SET", "bad", bad});
    CHECK(f.num({"PFCOUNT", "bad"}) == 0);  // the valid cached count is trusted, as in Valkey
    hll::invalidate_cache(bad);
    f.run({"SET", "bad", bad});
    CHECK(f.err({"PFCOUNT", "bad"}) == "INVALIDOBJ Corrupted HLL object detected");
    CHECK(f.err({"PFMERGE", "d", "bad"}) == "INVALIDOBJ Corrupted HLL object detected");
  }

  TEST_CASE("PFDEBUG GETREG converts to dense and lists every register") {
    Fixture f;
    f.run({"PFADD", "h", "a", "b", "c"});
    RespValue regs = f.run({"PFDEBUG", "GETREG", "h"});
    REQUIRE(regs.type == RespValue::Type::array);
    REQUIRE(regs.elements.size() == hll::k_registers);
    CHECK(regs.elements[8436].integer == 1);
    CHECK(regs.elements[12711].integer == 2);
    CHECK(regs.elements[15780].integer == 1);
    CHECK(regs.elements[0].integer == 0);
    CHECK(f.str({"PFDEBUG", "ENCODING", "h"}) == "dense");
    CHECK(f.num({"PFCOUNT", "h"}) == 3);
  }

  TEST_CASE("an HLL keeps its TTL across PFADD") {
    Fixture f;
    f.run({"PFADD", "h", "a"});
    f.run({"EXPIRE", "h", "1000"});
    f.run({"PFADD", "h", "b", "c", "d"});
    CHECK(f.num({"TTL", "h"}) == 1000);
  }
}
