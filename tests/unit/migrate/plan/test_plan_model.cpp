#include "migrate/plan/plan_model.hpp"

#include <doctest/doctest.h>

namespace m = keyshift::migrate;

namespace {

m::MigrationPlan sample_plan() {
  m::MigrationPlan plan;
  plan.created = "2026-12-03T12:00:00Z";
  plan.keyshift = "/usr/bin/keyshift";
  plan.strategy = "snapshot";
  plan.strategy_why = "simple \"and\" exact\nwith a newline";
  plan.service_manager = "command";
  plan.state_dir = "/var/lib/keyshift/migrate";
  plan.apps = {"/etc/nginx", "/var/www"};
  plan.source = {.kind = "redis-server",
                 .version = "7.0.15",
                 .url = "unix:///run/redis/r.sock",
                 .port = 6379,
                 .start = "redis-server /etc/redis/redis.conf"};
  plan.preflight.push_back({"disk-space", "ok", "plenty"});
  m::PlanStep step{.name = "stop-source", .stage = "cutover", .what = "stop", .why = "why"};
  step.run.push_back(m::PlanAction{.kind = m::ActionKind::shell,
                                   .argv = {"redis-cli shutdown"},
                                   .endpoint = "unix:///run/redis/r.sock",
                                   .when = "endpoint_up"});
  step.check.push_back(
      m::PlanAction{.kind = m::ActionKind::wait_down, .endpoint = "unix:///x", .timeout_s = 5});
  step.undo.push_back(m::PlanAction{.kind = m::ActionKind::rollback_runs, .path = "{state_dir}/b"});
  plan.steps.push_back(step);
  return plan;
}

}  // namespace

TEST_SUITE("migrate::plan_model") {
  TEST_CASE("a rendered plan reads back as the same plan") {
    m::MigrationPlan plan = sample_plan();
    auto back = m::parse_plan_toml(m::render_plan_toml(plan), "plan.toml");
    REQUIRE(back.has_value());
    CHECK(back->strategy_why == plan.strategy_why);
    CHECK(back->apps == plan.apps);
    CHECK(back->source.port == 6379);
    CHECK(back->source.start == plan.source.start);
    REQUIRE(back->preflight.size() == 1);
    CHECK(back->preflight[0].verdict == "ok");
    REQUIRE(back->steps.size() == 1);
    const m::PlanStep& s = back->steps[0];
    CHECK(s.name == "stop-source");
    REQUIRE(s.run.size() == 1);
    CHECK(s.run[0].kind == m::ActionKind::shell);
    CHECK(s.run[0].argv == std::vector<std::string>{"redis-cli shutdown"});
    CHECK(s.run[0].when == "endpoint_up");
    REQUIRE(s.check.size() == 1);
    CHECK(s.check[0].timeout_s == 5);
    REQUIRE(s.undo.size() == 1);
    CHECK(s.undo[0].path == "{state_dir}/b");
    CHECK(s.done_if.empty());
  }

  TEST_CASE("a file without the header is not a plan") {
    auto r = m::parse_plan_toml("[[steps]]\nname = \"a\"\n", "x.toml");
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().find("x.toml: not a migration plan") == 0);
  }

  TEST_CASE("another format number is refused with its line") {
    auto r = m::parse_plan_toml("\n[keyshift_migration_plan]\nformat = 2\n", "p.toml");
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().find("p.toml:2: format 2") == 0);
  }

  TEST_CASE("an unknown action kind is named with file and line") {
    std::string text =
        "[keyshift_migration_plan]\nformat = 1\n[[steps]]\nname = \"a\"\n"
        "[[steps.run]]\nkind = \"teleport\"\n";
    auto r = m::parse_plan_toml(text, "p.toml");
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().find("p.toml:5: steps.run: unknown kind 'teleport'") == 0);
  }

  TEST_CASE("a step name used twice is refused") {
    std::string text =
        "[keyshift_migration_plan]\nformat = 1\n[[steps]]\nname = \"a\"\n[[steps]]\nname = "
        "\"a\"\n";
    auto r = m::parse_plan_toml(text, "p.toml");
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().find("step name 'a' used twice") != std::string::npos);
  }

  TEST_CASE("broken TOML is named with line and column") {
    auto r = m::parse_plan_toml("[keyshift_migration_plan\n", "p.toml");
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().find("p.toml:1:") == 0);
  }

  TEST_CASE("a wait_synced action keeps its primary and its lag bound") {
    m::MigrationPlan plan = sample_plan();
    plan.steps[0].check.push_back(m::PlanAction{.kind = m::ActionKind::wait_synced,
                                                .endpoint = "unix:///t.sock",
                                                .timeout_s = 120,
                                                .peer = "unix:///s.sock",
                                                .max_lag = 1048576});
    auto back = m::parse_plan_toml(m::render_plan_toml(plan), "plan.toml");
    REQUIRE(back.has_value());
    REQUIRE(back->steps[0].check.size() == 2);
    const m::PlanAction& a = back->steps[0].check[1];
    CHECK(a.kind == m::ActionKind::wait_synced);
    CHECK(a.peer == "unix:///s.sock");
    CHECK(a.max_lag == 1048576);
    CHECK(a.timeout_s == 120);
    CHECK(m::describe_action(a).find("within 1048576 bytes") != std::string::npos);
  }

  TEST_CASE("a wait_synced action without its primary is refused with its line") {
    std::string text =
        "[keyshift_migration_plan]\nformat = 1\n[[steps]]\nname = \"a\"\n[[steps.run]]\n"
        "kind = \"wait_synced\"\nendpoint = \"unix:///t\"\n";
    auto r = m::parse_plan_toml(text, "p.toml");
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().find("p.toml:5: steps.run: wait_synced needs endpoint") == 0);
  }
}
