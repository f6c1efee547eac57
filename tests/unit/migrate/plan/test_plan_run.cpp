#include "compat/process/child_process.hpp"
#include "migrate/plan/plan_run.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace m = keyshift::migrate;

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

m::PlanAction sh(const std::string& script) {
  return m::PlanAction{.kind = m::ActionKind::shell, .argv = {script}};
}

// Steps that append their name to {state_dir}/log when run and "undo-NAME" when undone.
m::PlanStep logging_step(const std::string& name, const std::string& stage, bool fails = false) {
  m::PlanStep s{.name = name, .stage = stage, .what = name, .why = "test"};
  s.run.push_back(sh("echo " + name + " >> {state_dir}/log"));
  if (fails) {
    s.check.push_back(sh("exit 3"));
  }
  s.undo.push_back(sh("echo undo-" + name + " >> {state_dir}/log"));
  return s;
}

struct Fixture {
  keyshift::compat::ScratchDir dir{"ks-plan-run-"};
  m::MigrationPlan plan;
  m::RunOptions options;

  Fixture() {
    plan.strategy = "snapshot";
    plan.state_dir = dir.path();
    options.plan_file = dir.path() + "/plan.toml";
    std::ofstream(options.plan_file) << "plan";
  }
  std::string log() const { return slurp(dir.path() + "/log"); }
};

}  // namespace

TEST_SUITE("migrate::plan_run") {
  TEST_CASE("the JSON of a run says changed until the plan is done, then not") {
    Fixture f;
    f.plan.steps = {logging_step("a", "one"), logging_step("b", "one")};
    f.options.check = true;
    m::RunResult check = m::apply_migration(f.plan, f.options);
    std::string json =
        m::render_run_json(f.plan, *m::read_journal(f.dir.path()), check, "apply", true);
    CHECK(json.starts_with("{\"changed\":true,\"failed\":false,\"check\":true,"));
    CHECK(json.find("\"msg\":\"would run 2 step(s), 0 already done\"") != std::string::npos);
    CHECK(f.log().empty());
    f.options.check = false;
    REQUIRE(m::apply_migration(f.plan, f.options).ok);
    m::RunResult again = m::apply_migration(f.plan, f.options);
    json = m::render_run_json(f.plan, *m::read_journal(f.dir.path()), again, "apply", false);
    CHECK(json.starts_with("{\"changed\":false,\"failed\":false,\"check\":false,"));
    CHECK(json.find("\"skipped\":[\"a\",\"b\"]") != std::string::npos);
    CHECK(json.find("\"name\":\"b\",\"stage\":\"one\",\"state\":\"done\"") != std::string::npos);
    CHECK(json.ends_with("\"diff\":[]}\n"));
  }

  TEST_CASE("the JSON of a failed run says failed with the error as msg") {
    Fixture f;
    f.plan.steps = {logging_step("a", "one", true)};
    m::RunResult r = m::apply_migration(f.plan, f.options);
    std::string json =
        m::render_run_json(f.plan, *m::read_journal(f.dir.path()), r, "apply", false);
    CHECK(json.find("\"failed\":true") != std::string::npos);
    CHECK(json.find("\"msg\":\"step a failed: check failed:") != std::string::npos);
    CHECK(json.find("\"undone\":[\"a\"]") != std::string::npos);
  }

  TEST_CASE("a second apply skips the steps the journal has as done") {
    Fixture f;
    f.plan.steps = {logging_step("a", "one"), logging_step("b", "one")};
    m::RunResult first = m::apply_migration(f.plan, f.options);
    REQUIRE(first.ok);
    CHECK(first.ran.size() == 2);
    m::RunResult second = m::apply_migration(f.plan, f.options);
    REQUIRE(second.ok);
    CHECK(second.ran.empty());
    CHECK(second.skipped.size() == 2);
    CHECK(f.log() == "a\nb\n");
  }

  TEST_CASE("a step left running by a kill is run again, the done ones are not") {
    Fixture f;
    f.plan.steps = {logging_step("a", "one"), logging_step("b", "one")};
    f.options.until = "a";
    REQUIRE(m::apply_migration(f.plan, f.options).ok);
    // As a kill -9 inside b leaves the journal: b started, not finished.
    std::string path = f.dir.path() + "/journal.toml";
    std::string text = slurp(path);
    size_t at = text.find("name = \"b\"\nstate = \"pending\"");
    REQUIRE(at != std::string::npos);
    text.replace(text.find("pending", at), 7, "running");
    std::ofstream(path) << text;
    REQUIRE(m::read_journal(f.dir.path())->find("b")->state == m::StepState::running);
    f.options.until.clear();
    m::RunResult r = m::apply_migration(f.plan, f.options);
    REQUIRE(r.ok);
    CHECK(r.ran == std::vector<std::string>{"b"});
    CHECK(f.log() == "a\nb\n");
  }

  TEST_CASE("a failed check undoes the done steps of its stage only, newest first") {
    Fixture f;
    f.plan.steps = {logging_step("a", "one"), logging_step("b", "two"), logging_step("c", "two"),
                    logging_step("d", "two", true), logging_step("e", "two")};
    m::RunResult r = m::apply_migration(f.plan, f.options);
    CHECK_FALSE(r.ok);
    CHECK(r.error.find("step d failed: check failed") == 0);
    CHECK(r.undone == std::vector<std::string>{"d", "c", "b"});
    CHECK(f.log() == "a\nb\nc\nd\nundo-d\nundo-c\nundo-b\n");
    auto journal = m::read_journal(f.dir.path());
    REQUIRE(journal.has_value());
    CHECK(journal->find("a")->state == m::StepState::done);
    CHECK(journal->find("c")->state == m::StepState::undone);
    CHECK(journal->find("e")->state == m::StepState::pending);
  }

  TEST_CASE("rollback undoes every done step newest first and only once") {
    Fixture f;
    f.plan.steps = {logging_step("a", "one"), logging_step("b", "two")};
    REQUIRE(m::apply_migration(f.plan, f.options).ok);
    m::RunResult r = m::rollback_migration(f.plan, f.options);
    REQUIRE(r.ok);
    CHECK(r.undone == std::vector<std::string>{"b", "a"});
    CHECK(m::rollback_migration(f.plan, f.options).undone.empty());
    CHECK(f.log() == "a\nb\nundo-b\nundo-a\n");
  }

  TEST_CASE("a step whose done_if passes is journaled done without running") {
    Fixture f;
    m::PlanStep s = logging_step("a", "one");
    s.done_if.push_back(m::PlanAction{.kind = m::ActionKind::file_exists, .path = "{state_dir}"});
    f.plan.steps = {s};
    REQUIRE(m::apply_migration(f.plan, f.options).ok);
    CHECK_FALSE(std::filesystem::exists(f.dir.path() + "/log"));
    auto journal = m::read_journal(f.dir.path());
    CHECK(journal->find("a")->message == "already in place");
  }

  TEST_CASE("--check runs nothing and writes no journal") {
    Fixture f;
    f.plan.steps = {logging_step("a", "one")};
    f.options.check = true;
    m::RunResult r = m::apply_migration(f.plan, f.options);
    CHECK(r.ran == std::vector<std::string>{"a"});
    CHECK_FALSE(std::filesystem::exists(f.dir.path() + "/log"));
    CHECK_FALSE(std::filesystem::exists(f.dir.path() + "/journal.toml"));
  }
}
