#include "migrate/import/import_common.hpp"

#include <doctest/doctest.h>

namespace m = keyshift::migrate;
namespace d = keyshift::migrate::import_detail;
namespace ks = keyshift::engine;

namespace {

ks::RdbKey key_of(std::string name, ks::RdbKind kind, int64_t expire_ms = -1) {
  ks::RdbKey k;
  k.key = std::move(name);
  k.value.kind = kind;
  k.expire_ms = expire_ms;
  return k;
}

m::PendingKey pending_of(ks::RdbKind kind) {
  m::PendingKey p;
  p.kind = static_cast<uint8_t>(kind);
  return p;
}

}  // namespace

TEST_SUITE("migrate::import_common") {
  TEST_CASE("a kept key goes on renamed and moved, and its changes are counted") {
    m::KeyRules rules;
    rules.rename = {{std::nullopt, "old:", "new:", {}}};
    rules.db_map = {{0, 3}};
    m::ImportReport report;
    m::KeyEffects effects;
    auto k = key_of("old:1", ks::RdbKind::string);
    CHECK(d::screen_key(rules, k, 1'000, report, effects) == d::Screen::keep);
    CHECK(k.key == "new:1");
    CHECK(effects.target_db == 3);
    CHECK(report.counts.renamed == 1);
    CHECK(report.counts.moved == 1);
    CHECK(report.blocked.empty());
  }

  TEST_CASE("filtered and expired keys are dropped and counted apart") {
    m::KeyRules rules;
    rules.exclude = {"tmp:*"};
    m::ImportReport report;
    m::KeyEffects effects;
    auto filtered = key_of("tmp:1", ks::RdbKind::string);
    CHECK(d::screen_key(rules, filtered, 1'000, report, effects) == d::Screen::drop);
    auto expired = key_of("gone", ks::RdbKind::string, 500);
    CHECK(d::screen_key(rules, expired, 1'000, report, effects) == d::Screen::drop);
    CHECK(report.counts.filtered == 1);
    CHECK(report.counts.expired == 1);
    CHECK(report.error.empty());
  }

  TEST_CASE("a module key without --skip-modules blocks the move and the error names it") {
    m::KeyRules rules;
    m::ImportReport report;
    m::KeyEffects effects;
    auto k = key_of("doc", ks::RdbKind::module);
    REQUIRE(d::screen_key(rules, k, 1'000, report, effects) == d::Screen::block);
    std::string error = d::blocked_error(report);
    CHECK(error.find("cannot import: module keys") == 0);
    CHECK(error.find(d::key_ref(0, "doc")) != std::string::npos);
    rules.skip_modules = true;
    CHECK(d::screen_key(rules, k, 1'000, report, effects) == d::Screen::drop);
    CHECK(report.counts.modules_dropped == 1);
  }

  TEST_CASE("each acknowledged write is counted by its outcome and written ones by type") {
    m::ImportCounts counts;
    d::count_write(pending_of(ks::RdbKind::hash), m::WriteOutcome::written, counts);
    d::count_write(pending_of(ks::RdbKind::hash), m::WriteOutcome::written, counts);
    d::count_write(pending_of(ks::RdbKind::list), m::WriteOutcome::conflict_skipped, counts);
    d::count_write(pending_of(ks::RdbKind::zset), m::WriteOutcome::expired_in_flight, counts);
    CHECK(counts.written == 2);
    CHECK(counts.written_by_type.size() == 1);
    CHECK(counts.written_by_type["hash"] == 2);
    CHECK(counts.conflicts_skipped == 1);
    CHECK(counts.expired_in_flight == 1);
  }
}
