#pragma once

#include "migrate/rewrite/target_table.hpp"

#include <doctest/doctest.h>

#include <utility>

namespace keyshift::migrate::testing {

/// The compiled-in targets table, parsed once for the whole test binary.
inline const TargetCatalog& builtin_catalog() {
  static const TargetCatalog k_catalog = [] {
    auto c = parse_target_catalog(builtin_target_toml(), "builtin");
    REQUIRE(c);
    return std::move(*c);
  }();
  return k_catalog;
}

}  // namespace keyshift::migrate::testing
