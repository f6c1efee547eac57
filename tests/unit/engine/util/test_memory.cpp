#include "engine/util/memory.hpp"

#include <doctest/doctest.h>

using keyshift::engine::parse_thp_mode;
using keyshift::engine::set_up_heap;
using keyshift::engine::ThpMode;

TEST_SUITE("engine::memory heap setup") {
  TEST_CASE("the bracketed word of the sysfs THP file is the mode") {
    CHECK(parse_thp_mode("always [madvise] never\n") == ThpMode::madvise);
    CHECK(parse_thp_mode("[always] madvise never\n") == ThpMode::always);
    CHECK(parse_thp_mode("always madvise [never]\n") == ThpMode::never);
    CHECK(parse_thp_mode("") == ThpMode::unknown);
    CHECK(parse_thp_mode("always madvise never") == ThpMode::unknown);
  }

  TEST_CASE("no huge-page heap is set up when it is turned off or the kernel has no THP") {
    auto off = set_up_heap(false, false, ThpMode::madvise);
    CHECK_FALSE(off.huge_pages);
    CHECK(off.detail.find("huge-page-heap no") != std::string::npos);
    auto never = set_up_heap(true, false, ThpMode::never);
    CHECK_FALSE(never.huge_pages);
    CHECK_FALSE(never.thp_disabled);
    CHECK(never.detail.find("no transparent huge pages") != std::string::npos);
    auto unknown = set_up_heap(true, true, ThpMode::unknown);
    CHECK_FALSE(unknown.huge_pages);
    CHECK_FALSE(unknown.thp_disabled);
  }
}
