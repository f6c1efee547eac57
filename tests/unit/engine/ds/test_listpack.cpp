#include "tests/unit/engine/corpus_json.hpp"

#include "engine/ds/listpack.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

using keyshift::engine::Listpack;
using keyshift::engine::LpCheck;
using keyshift::engine::LpValue;
using keyshift::engine::validate_listpack;

using keyshift::test::from_hex;

namespace {

std::string to_hex(std::string_view bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out.push_back(digits[c >> 4]);
    out.push_back(digits[c & 15]);
  }
  return out;
}

std::vector<std::string> elements(const Listpack& lp) {
  std::vector<std::string> out;
  for (Listpack::Pos p = lp.first(); p != Listpack::k_none; p = lp.next(p)) {
    out.push_back(lp.get(p).to_string());
  }
  return out;
}

std::vector<std::string> elements_backward(const Listpack& lp) {
  std::vector<std::string> out;
  for (Listpack::Pos p = lp.last(); p != Listpack::k_none; p = lp.prev(p)) {
    out.insert(out.begin(), lp.get(p).to_string());
  }
  return out;
}

// The listpack redis-server 7.0 stores for
//   RPUSH l a 0 127 128 -1 4095 4096 -4096 -4097 32767 32768 -32768 -32769 8388607 8388608
//           2147483647 2147483648 -2147483648 -2147483649 9223372036854775807
//           -9223372036854775808 012 -0 +1 ""
// taken from its DUMP (rdbcompression no).
constexpr std::string_view k_reference_hex =
    "82000000190081610200017f01c08002dfff02cfff02f1001003d00002f1ffef03f1ff7f03f20080000"
    "4f1008003f2ff7fff04f2ffff7f04f30000800005f3ffffff7f05f4000000800000000009f30000008005"
    "f4ffffff7fffffffff09f4ffffffffffffff7f09f40000000000000080098330313204822d3003822b3103"
    "8001ff";
const std::vector<std::string> k_reference_values = {"a",
                                                     "0",
                                                     "127",
                                                     "128",
                                                     "-1",
                                                     "4095",
                                                     "4096",
                                                     "-4096",
                                                     "-4097",
                                                     "32767",
                                                     "32768",
                                                     "-32768",
                                                     "-32769",
                                                     "8388607",
                                                     "8388608",
                                                     "2147483647",
                                                     "2147483648",
                                                     "-2147483648",
                                                     "-2147483649",
                                                     "9223372036854775807",
                                                     "-9223372036854775808",
                                                     "012",
                                                     "-0",
                                                     "+1",
                                                     ""};

}  // namespace

TEST_SUITE("engine::listpack") {
  TEST_CASE("an empty listpack is the seven bytes Valkey writes") {
    Listpack lp;
    CHECK(to_hex(lp.data()) == "070000000000ff");
    CHECK(lp.size() == 0);
    CHECK(lp.first() == Listpack::k_none);
    CHECK(lp.last() == Listpack::k_none);
    CHECK(lp.seek(0) == Listpack::k_none);
  }

  TEST_CASE("appending the reference values produces redis-server's exact bytes") {
    Listpack lp;
    for (const auto& v : k_reference_values) {
      lp.append(v);
    }
    CHECK(to_hex(lp.data()) == k_reference_hex);
    CHECK(lp.size() == k_reference_values.size());
    CHECK(elements(lp) == k_reference_values);
    CHECK(elements_backward(lp) == k_reference_values);
  }

  TEST_CASE("adopting the reference bytes reads every value back") {
    Listpack lp;
    LpCheck check;
    REQUIRE(Listpack::adopt(from_hex(k_reference_hex), lp, &check));
    CHECK(check.ok);
    CHECK(lp.size() == 25);
    CHECK(elements(lp) == k_reference_values);
    CHECK(lp.get(lp.seek(1)).is_int());
    CHECK(!lp.get(lp.seek(21)).is_int());  // "012" is not canonical
    CHECK(lp.get(lp.seek(-5)).integer() == INT64_MIN);
    CHECK(to_hex(lp.data()) == k_reference_hex);
  }

  TEST_CASE("every integer encoding boundary round-trips with its entry size") {
    struct Case {
      int64_t v;
      size_t entry;  // encoding + data + backlen
    };
    const Case cases[] = {
        {0, 2},          {127, 2},        {128, 3},       {-1, 3},          {-4096, 3},
        {4095, 3},       {4096, 4},       {-4097, 4},     {32767, 4},       {-32768, 4},
        {32768, 5},      {-32769, 5},     {8388607, 5},   {-8388608, 5},    {8388608, 6},
        {-8388609, 6},   {INT32_MAX, 6},  {INT32_MIN, 6}, {2147483648, 10}, {-2147483649LL, 10},
        {INT64_MAX, 10}, {INT64_MIN, 10},
    };
    for (const auto& c : cases) {
      CAPTURE(c.v);
      Listpack lp;
      Listpack::Pos p = lp.append(std::to_string(c.v));
      CHECK(lp.entry_size(p) == c.entry);
      CHECK(lp.byte_size() == 7 + c.entry);
      LpValue v = lp.get(p);
      REQUIRE(v.is_int());
      CHECK(v.integer() == c.v);
      CHECK(v.to_string() == std::to_string(c.v));
      Listpack lp2;
      lp2.append(c.v);
      CHECK(lp2.data() == lp.data());
      CHECK(validate_listpack(lp.data()).ok);
    }
  }

  TEST_CASE("string length encodings switch at 64 and 4096 bytes with Valkey's headers") {
    struct Case {
      size_t len;
      std::string_view header_hex;
      size_t backlen;
    };
    const Case cases[] = {
        {0, "80", 1},
        {63, "bf", 1},
        {64, "e040", 1},
        {125, "e07d", 1},
        {126, "e07e", 2},
        {4095, "efff", 2},
        {4096, "f000100000", 2},
        {16378, "f0fa3f0000", 3},
        {70000, "f070110100", 3},
    };
    for (const auto& c : cases) {
      CAPTURE(c.len);
      Listpack lp;
      std::string s(c.len, 'x');
      Listpack::Pos p = lp.append(s);
      CHECK(to_hex(lp.data().substr(p, c.header_hex.size() / 2)) == c.header_hex);
      size_t payload = c.header_hex.size() / 2 + c.len;
      CHECK(lp.entry_size(p) == payload + c.backlen);
      CHECK(lp.get(p).str() == s);
      CHECK(validate_listpack(lp.data()).ok);
      // Walking backwards through a multi-byte backlen finds the entry again.
      lp.append("tail");
      CHECK(lp.prev(lp.last()) == p);
    }
  }

  TEST_CASE("backlen bytes follow Valkey's thresholds") {
    // 4097 bytes of payload (12-bit header + 4095): two backlen bytes, high group first.
    Listpack lp;
    Listpack::Pos p = lp.append(std::string(4095, 'y'));
    std::string_view d = lp.data();
    CHECK(to_hex(d.substr(p + 4097, 2)) == "2081");
    Listpack big;
    p = big.append(std::string(16378, 'z'));  // payload 16383: three bytes (strict "<")
    CHECK(big.entry_size(p) == 16383 + 3);
  }

  TEST_CASE("non-canonical integer strings stay strings") {
    for (std::string_view s : {"012", "-0", "+1", " 1", "1 ", "9223372036854775808",
                               "-9223372036854775809", "1e3", "0x10", "-", ""}) {
      CAPTURE(s);
      Listpack lp;
      LpValue v = lp.get(lp.append(s));
      CHECK(!v.is_int());
      CHECK(v.str() == s);
    }
  }

  TEST_CASE("prepend, insert before and after, and seek with negative indexes") {
    Listpack lp;
    lp.append("b");
    lp.prepend("a");
    lp.append("d");
    Listpack::Pos d = lp.seek(-1);
    lp.insert_before(d, "c");
    lp.insert_after(lp.seek(-1), std::string_view("e"));
    CHECK(elements(lp) == std::vector<std::string>{"a", "b", "c", "d", "e"});
    CHECK(lp.get(lp.seek(-5)).str() == "a");
    CHECK(lp.get(lp.seek(2)).str() == "c");
    CHECK(lp.seek(5) == Listpack::k_none);
    CHECK(lp.seek(-6) == Listpack::k_none);
    CHECK(validate_listpack(lp.data()).ok);
  }

  TEST_CASE("replace grows and shrinks entries in place") {
    Listpack lp;
    lp.append("a");
    lp.append("b");
    lp.append("c");
    Listpack::Pos p = lp.seek(1);
    p = lp.replace(p, std::string(5000, 'q'));
    CHECK(lp.get(p).str().size() == 5000);
    p = lp.replace(p, "7");
    CHECK(lp.get(p).integer() == 7);
    CHECK(elements(lp) == std::vector<std::string>{"a", "7", "c"});
    CHECK(lp.byte_size() == 7 + 3 + 2 + 3);
    CHECK(validate_listpack(lp.data()).ok);
  }

  TEST_CASE("a value viewing the listpack's own bytes can be inserted and replaced") {
    Listpack lp;
    lp.append(std::string(100, 'a'));
    for (int i = 0; i < 20; ++i) {
      lp.append(lp.get(lp.first()));
    }
    lp.replace(lp.last(), lp.get(lp.first()));
    for (const auto& s : elements(lp)) {
      CHECK(s == std::string(100, 'a'));
    }
  }

  TEST_CASE("erase single entries and ranges") {
    Listpack lp;
    for (int i = 0; i < 10; ++i) {
      lp.append(std::to_string(i));
    }
    Listpack::Pos p = lp.erase(lp.seek(0));
    CHECK(lp.get(p).integer() == 1);
    CHECK(lp.erase(lp.last()) == Listpack::k_none);
    lp.erase_range(2, 3);  // 3 4 5
    CHECK(elements(lp) == std::vector<std::string>{"1", "2", "6", "7", "8"});
    lp.erase_range(-2, 100);
    CHECK(elements(lp) == std::vector<std::string>{"1", "2", "6"});
    lp.erase_range(10, 1);
    CHECK(lp.size() == 3);
    lp.clear();
    CHECK(to_hex(lp.data()) == "070000000000ff");
  }

  TEST_CASE("find compares integers numerically and skips values") {
    Listpack lp;
    for (std::string_view s : {"f1", "10", "f2", "v2", "10", "x", "012", "y"}) {
      lp.append(s);
    }
    CHECK(lp.find("10", lp.first()) == lp.seek(1));
    CHECK(lp.find("10", lp.first(), 1) == lp.seek(4));  // fields only: 0, 2, 4, 6
    CHECK(lp.find("v2", lp.first(), 1) == Listpack::k_none);
    CHECK(lp.find("012", lp.first(), 1) == lp.seek(6));
    CHECK(lp.find("12", lp.first()) == Listpack::k_none);
    CHECK(lp.find("y", lp.seek(7)) == lp.seek(7));
    CHECK(lp.find("nope", lp.first()) == Listpack::k_none);
  }

  TEST_CASE("values compare by their text") {
    CHECK(LpValue::of_int(12) == LpValue::of_str("12"));
    CHECK(!(LpValue::of_int(12) == LpValue::of_str("012")));
    CHECK(LpValue::of_int(-5).equals("-5"));
    char buf[24];
    CHECK(LpValue::of_int(INT64_MIN).view(buf) == "-9223372036854775808");
  }

  TEST_CASE("a count beyond 65534 is written as unknown and kept exact in memory") {
    Listpack lp;
    for (int i = 0; i < 65536; ++i) {
      lp.append(int64_t{1});
    }
    CHECK(lp.size() == 65536);
    CHECK(to_hex(lp.data().substr(4, 2)) == "ffff");
    LpCheck c = validate_listpack(lp.data());
    CHECK(c.ok);
    CHECK(c.count == 65536);
    lp.erase_range(0, 2);
    CHECK(to_hex(lp.data().substr(4, 2)) == "feff");
    Listpack adopted;
    std::string blob(lp.data());
    blob[4] = blob[5] = static_cast<char>(0xFF);  // "unknown" in a blob is accepted
    REQUIRE(Listpack::adopt(blob, adopted));
    CHECK(adopted.size() == 65534);
    CHECK(adopted.data() == lp.data());
  }

  TEST_CASE("validation reports the offset of the first problem") {
    const std::string good = from_hex(k_reference_hex);
    CHECK(validate_listpack(good).ok);
    CHECK(validate_listpack(good).count == 25);

    LpCheck c = validate_listpack(good.substr(0, 5));
    CHECK(!c.ok);
    CHECK(c.offset == 0);

    std::string bad_total = good;
    bad_total[0] = 0x7F;
    CHECK(validate_listpack(bad_total).offset == 0);
    CHECK(!validate_listpack(bad_total).ok);

    std::string no_eof = good;
    no_eof.back() = 0x00;
    c = validate_listpack(no_eof);
    CHECK(!c.ok);
    CHECK(c.offset == good.size() - 1);

    std::string bad_count = good;
    bad_count[4] = 24;
    c = validate_listpack(bad_count);
    CHECK(!c.ok);
    CHECK(c.offset == 4);
    CHECK(validate_listpack(bad_count, false).ok);  // shallow checks skip entries

    std::string bad_backlen = good;
    bad_backlen[8] = 0x03;  // the backlen of "a" (81 61 02) at offset 8
    c = validate_listpack(bad_backlen);
    CHECK(!c.ok);
    CHECK(c.offset == 8);

    std::string bad_encoding = good;
    bad_encoding[9] = static_cast<char>(0xF8);  // the entry after "a"
    c = validate_listpack(bad_encoding);
    CHECK(!c.ok);
    CHECK(c.offset == 9);

    std::string early_eof = good;
    early_eof[9] = static_cast<char>(0xFF);
    c = validate_listpack(early_eof);
    CHECK(!c.ok);
    CHECK(c.offset == 9);

    // A string length far beyond the blob must not be trusted.
    std::string huge = from_hex("0c0000000100f0ffffff7fff");
    c = validate_listpack(huge);
    CHECK(!c.ok);
    CHECK(c.offset == 6);
    std::string truncated_header = from_hex("090000000100f000ff");
    c = validate_listpack(truncated_header);
    CHECK(!c.ok);
    CHECK(c.offset == 6);

    Listpack lp;
    lp.append("keep");
    CHECK(!Listpack::adopt(bad_backlen, lp, &c));
    CHECK(c.offset == 8);
    CHECK(elements(lp) == std::vector<std::string>{"keep"});
  }

  TEST_CASE("every single-byte corruption of a listpack is caught or still decodes") {
    const std::string good = from_hex(k_reference_hex);
    for (size_t i = 0; i < good.size(); ++i) {
      for (int b : {0x00, 0x7F, 0x80, 0xC0, 0xE0, 0xF0, 0xF4, 0xFF}) {
        std::string bad = good;
        bad[i] = static_cast<char>(b);
        Listpack lp;
        if (Listpack::adopt(bad, lp)) {
          // Whatever was accepted must be walkable both ways with the same count.
          CHECK(elements(lp).size() == lp.size());
          CHECK(elements_backward(lp).size() == lp.size());
        }
      }
    }
  }

  TEST_CASE("random operations match a reference vector") {
    std::mt19937_64 rng(7);
    Listpack lp;
    std::vector<std::string> ref;
    auto random_value = [&]() -> std::string {
      switch (rng() % 4) {
        case 0:
          return std::to_string(static_cast<int64_t>(rng()) >> (rng() % 64));
        case 1:
          return std::string(rng() % 70, static_cast<char>('a' + rng() % 26));
        case 2:
          return std::string(rng() % 5000, 'b');
        default:
          return std::to_string(rng() % 200);
      }
    };
    for (int step = 0; step < 3000; ++step) {
      int op = static_cast<int>(rng() % 6);
      if (ref.empty() || op == 0) {
        std::string v = random_value();
        lp.append(v);
        ref.push_back(v);
      } else if (op == 1) {
        std::string v = random_value();
        lp.prepend(v);
        ref.insert(ref.begin(), v);
      } else if (op == 2) {
        size_t i = rng() % ref.size();
        std::string v = random_value();
        lp.insert_after(lp.seek(static_cast<int64_t>(i)), v);
        ref.insert(ref.begin() + static_cast<ptrdiff_t>(i) + 1, v);
      } else if (op == 3) {
        size_t i = rng() % ref.size();
        std::string v = random_value();
        lp.replace(lp.seek(static_cast<int64_t>(i)), v);
        ref[i] = v;
      } else if (op == 4) {
        size_t i = rng() % ref.size();
        lp.erase(lp.seek(static_cast<int64_t>(i)));
        ref.erase(ref.begin() + static_cast<ptrdiff_t>(i));
      } else {
        size_t i = rng() % ref.size();
        size_t n = rng() % 4;
        lp.erase_range(static_cast<int64_t>(i), n);
        ref.erase(ref.begin() + static_cast<ptrdiff_t>(i),
                  ref.begin() + static_cast<ptrdiff_t>(std::min(ref.size(), i + n)));
      }
      REQUIRE(lp.size() == ref.size());
      if (step % 100 == 0) {
        REQUIRE(validate_listpack(lp.data()).ok);
        REQUIRE(elements(lp) == ref);
        REQUIRE(elements_backward(lp) == ref);
      }
    }
  }
}

TEST_SUITE("engine::listpack") {
  TEST_CASE("whole listpacks append and prepend entry bytes unchanged") {
    Listpack a;
    Listpack b;
    for (std::string_view s : {"1", "two", "-3"}) {
      a.append(s);
    }
    for (std::string_view s : {"x", "4096"}) {
      b.append(s);
    }
    Listpack c = Listpack::from_trusted(a.data(), a.size());
    a.append_all(b);
    CHECK(elements(a) == std::vector<std::string>{"1", "two", "-3", "x", "4096"});
    CHECK(a.size() == 5);
    CHECK(validate_listpack(a.data()).ok);
    c.prepend_all(b);
    CHECK(elements(c) == std::vector<std::string>{"x", "4096", "1", "two", "-3"});
    CHECK(validate_listpack(c.data()).count == 5);
  }
}
