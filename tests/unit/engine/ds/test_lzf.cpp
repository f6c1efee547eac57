#include "engine/ds/lzf.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

using keyshift::engine::lzf_compress;
using keyshift::engine::lzf_decompress;
using keyshift::engine::lzf_decompressed_size;

namespace {

/// Text with runs and repeats at every distance from 1 byte (runs) to a few hundred, so
/// that compressed streams hold short and long, overlapping and distant back references.
std::string compressible(std::mt19937_64& rng, size_t size) {
  std::string s;
  while (s.size() < size) {
    switch (rng() % 4) {
      case 0:
        s.append(1 + rng() % 300, static_cast<char>('a' + rng() % 3));
        break;
      case 1:
        if (!s.empty()) {
          size_t back = 1 + rng() % std::min<size_t>(s.size(), 400);
          size_t len = 3 + rng() % 270;
          for (size_t i = 0; i < len; ++i) {
            s.push_back(s[s.size() - back]);
          }
        }
        break;
      default:
        for (size_t n = 1 + rng() % 40; n > 0; --n) {
          s.push_back(static_cast<char>(rng()));
        }
    }
  }
  s.resize(size);
  return s;
}

}  // namespace

TEST_SUITE("engine::lzf") {
  TEST_CASE("compressed data of every shape and size decompresses to the original") {
    std::mt19937_64 rng(7);
    size_t compressed_cases = 0;
    for (size_t size = 4; size < 6000; size += 1 + size / 8) {
      for (int round = 0; round < 4; ++round) {
        std::string in = compressible(rng, size);
        std::vector<char> packed(in.size());
        size_t n = lzf_compress(in.data(), in.size(), packed.data(), packed.size());
        if (n == 0) {
          continue;  // did not shrink: stored raw in a file
        }
        ++compressed_cases;
        std::string out(in.size(), '\0');
        REQUIRE(lzf_decompress(packed.data(), n, out.data(), out.size()) == in.size());
        CHECK(out == in);
        CHECK(lzf_decompressed_size(packed.data(), n, in.size()) == in.size());
        // One byte less room fails cleanly, never writing past the buffer (ASan build).
        std::vector<char> small(in.size() - 1);
        CHECK(lzf_decompress(packed.data(), n, small.data(), small.size()) == 0);
      }
    }
    CHECK(compressed_cases > 150);
  }

  TEST_CASE("a stream cut short or pointing before its start is refused") {
    std::mt19937_64 rng(11);
    std::string in = compressible(rng, 4000);
    std::vector<char> packed(in.size());
    size_t n = lzf_compress(in.data(), in.size(), packed.data(), packed.size());
    REQUIRE(n > 0);
    std::string out(in.size(), '\0');
    for (size_t cut = 0; cut < n; cut += 1 + cut / 16) {
      CHECK(lzf_decompress(packed.data(), cut, out.data(), out.size()) != in.size());
    }
    // A back reference as the very first instruction refers to nothing.
    std::string bad(400, '\x20');
    bad[0] = '\xE0';
    CHECK(lzf_decompress(bad.data(), bad.size(), out.data(), out.size()) == 0);
  }
}
