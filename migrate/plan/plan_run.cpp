#include "migrate/plan/plan_run.hpp"

#include "compat/process/child_process.hpp"
#include "compat/report/json_text.hpp"
#include "engine/resp/connection.hpp"
#include "engine/util/atomic_file.hpp"
#include "migrate/rewrite/apply.hpp"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace keyshift::migrate {
namespace {

namespace fs = std::filesystem;

constexpr std::array<std::pair<StepState, std::string_view>, 5> k_states{{
    {StepState::pending, "pending"},
    {StepState::running, "running"},
    {StepState::done, "done"},
    {StepState::failed, "failed"},
    {StepState::undone, "undone"},
}};

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string toml_string(std::string_view text) {
  return toml_quote(text);
}

// The journal as TOML, written whole through engine's AtomicFile (temp, fsync, rename, fsync
// of the directory), so a kill at any moment leaves the previous or the next version.
std::optional<std::string> write_journal(const std::string& state_dir, const Journal& journal) {
  std::string out = "# keyshift migrate journal: one entry per step, rewritten after each change\n";
  out += fmt::format("plan_file = {}\nplan_sha1 = {}\n", toml_string(journal.plan_file),
                     toml_string(journal.plan_sha1));
  for (const JournalEntry& e : journal.steps) {
    out += fmt::format(
        "\n[[steps]]\nname = {}\nstate = \"{}\"\nstarted_ms = {}\nfinished_ms = {}\n"
        "message = {}\n",
        toml_string(e.name), step_state_name(e.state), e.started_ms, e.finished_ms,
        toml_string(e.message));
  }
  std::error_code ec;
  fs::create_directories(state_dir, ec);
  std::string path = (fs::path(state_dir) / k_journal_name).string();
  if (auto error = engine::write_file_atomically(path, out, 0600)) {
    return fmt::format("{}: {}", path, error->message());
  }
  return std::nullopt;
}

std::string substitute(std::string text, const MigrationPlan& plan, const std::string& state_dir) {
  auto replace_all = [&](std::string_view from, const std::string& to) {
    for (size_t at = text.find(from); at != std::string::npos;
         at = text.find(from, at + to.size())) {
      text.replace(at, from.size(), to);
    }
  };
  replace_all("{state_dir}", state_dir);
  replace_all("{keyshift}", plan.keyshift);
  return text;
}

// Whether a server answers: PONG, or NOAUTH from one that wants a password. LOADING is not up.
bool endpoint_up(const std::string& url) {
  auto endpoint = engine::parse_redis_url(url);
  if (!endpoint) {
    return false;
  }
  auto conn = engine::RespConnection::connect(*endpoint, std::chrono::milliseconds(1000));
  if (!conn) {
    return conn.error().find("NOAUTH") != std::string::npos;
  }
  auto reply = conn->call({"PING"});
  return reply && (!reply->is_error() || reply->str.rfind("NOAUTH", 0) == 0);
}

// One field of INFO `section` on `url`, or nullopt when the server cannot be asked.
std::optional<std::string> info_field(const std::string& url, const char* section,
                                      std::string_view field) {
  auto endpoint = engine::parse_redis_url(url);
  if (!endpoint) {
    return std::nullopt;
  }
  auto conn = engine::RespConnection::connect(*endpoint, std::chrono::milliseconds(2000));
  if (!conn) {
    return std::nullopt;
  }
  auto reply = conn->call({"INFO", section});
  if (!reply || reply->is_error()) {
    return std::nullopt;
  }
  std::string key = std::string(field) + ":";
  for (size_t at = 0; at < reply->str.size();) {
    size_t end = reply->str.find('\n', at);
    std::string_view line(reply->str.data() + at,
                          (end == std::string::npos ? reply->str.size() : end) - at);
    at = end == std::string::npos ? reply->str.size() : end + 1;
    if (line.starts_with(key)) {
      line.remove_prefix(key.size());
      while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) {
        line.remove_suffix(1);
      }
      return std::string(line);
    }
  }
  return std::string();
}

// How many bytes `replica` is behind `primary`: the primary's offset is read first, so a
// replica at or past it had applied everything written before the question (no atomic read of
// two servers needed). nullopt while the link is down or a server does not answer.
std::optional<int64_t> replica_lag(const std::string& replica, const std::string& primary) {
  auto primary_offset = info_field(primary, "replication", "master_repl_offset");
  if (!primary_offset || primary_offset->empty()) {
    return std::nullopt;
  }
  auto link = info_field(replica, "replication", "master_link_status");
  auto replica_offset = info_field(replica, "replication", "slave_repl_offset");
  if (!link || *link != "up" || !replica_offset || replica_offset->empty()) {
    return std::nullopt;
  }
  int64_t behind = std::strtoll(primary_offset->c_str(), nullptr, 10) -
                   std::strtoll(replica_offset->c_str(), nullptr, 10);
  return std::max<int64_t>(behind, 0);
}

struct Runner {
  const MigrationPlan& plan;
  std::string state_dir;
  const RunOptions& options;

  void say(const std::string& line) const {
    if (options.print) {
      options.print(line);
    }
  }

  std::string sub(const std::string& text) const { return substitute(text, plan, state_dir); }

  std::vector<std::string> argv_of(const PlanAction& a) const {
    std::vector<std::string> argv;
    for (const std::string& w : a.argv) {
      argv.push_back(sub(w));
    }
    return argv;
  }

  void log(const std::string& step, std::string_view text) const {
    std::error_code ec;
    fs::create_directories(fs::path(state_dir) / "logs", ec);
    std::ofstream out(fs::path(state_dir) / "logs" / (step + ".log"), std::ios::app);
    out << text;
  }

  // Polls `ready` every 20 ms (a cutover waits on it) until it holds or `timeout_s` passes.
  static bool wait(const std::function<bool()>& ready, int timeout_s) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
    while (true) {
      if (ready()) {
        return true;
      }
      if (std::chrono::steady_clock::now() >= deadline) {
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

  std::optional<std::string> run_program(const std::string& step, const PlanAction& a,
                                         std::vector<std::string> argv) const {
    std::string shown = describe_action(a);
    log(step, fmt::format("$ {}\n", sub(shown)));
    auto result = compat::run_process(argv, std::chrono::seconds(a.timeout_s));
    log(step, result.output);
    if (!a.path.empty() && a.kind == ActionKind::exec) {
      std::string out_path = sub(a.path);
      if (auto error = engine::write_file_atomically(out_path, result.output)) {
        return fmt::format("{}: {}", out_path, error->message());
      }
    }
    if (result.timed_out) {
      return fmt::format("'{}' did not finish within {} s", sub(shown), a.timeout_s);
    }
    if (result.status != 0) {
      std::string tail = result.output.size() > 2000
                             ? result.output.substr(result.output.size() - 2000)
                             : result.output;
      while (!tail.empty() && (tail.back() == '\n' || tail.back() == ' ')) {
        tail.pop_back();
      }
      return fmt::format("'{}' exited with {}{}{}", sub(shown), result.status,
                         tail.empty() ? "" : ": ", tail);
    }
    return std::nullopt;
  }

  // Runs one action; returns why it failed.
  std::optional<std::string> run(const std::string& step, const PlanAction& a) const {
    std::string endpoint = sub(a.endpoint);
    if (!a.when.empty()) {
      bool up = endpoint_up(endpoint);
      if ((a.when == "endpoint_up") != up) {
        log(step, fmt::format("# skipped ({}: {} is {})\n", describe_action(a), endpoint,
                              up ? "up" : "down"));
        return std::nullopt;
      }
    }
    switch (a.kind) {
      case ActionKind::exec:
        return run_program(step, a, argv_of(a));
      case ActionKind::shell: {
        std::string script;
        for (const std::string& w : argv_of(a)) {
          script += (script.empty() ? "" : " ") + w;
        }
        return run_program(step, a, {"/bin/sh", "-c", script});
      }
      case ActionKind::call: {
        auto url = engine::parse_redis_url(endpoint);
        if (!url) {
          return fmt::format("{}: {}", endpoint, url.error());
        }
        auto conn = engine::RespConnection::connect(*url, std::chrono::seconds(a.timeout_s));
        if (!conn) {
          return conn.error();
        }
        auto reply = conn->call(argv_of(a));
        if (!reply) {
          return reply.error();
        }
        log(step, fmt::format("> {}\n{}\n", describe_action(a), reply->str));
        if (reply->is_error()) {
          return fmt::format("{}: {}", describe_action(a), reply->str);
        }
        return std::nullopt;
      }
      case ActionKind::wait_up:
        if (!wait([&] { return endpoint_up(endpoint); }, a.timeout_s)) {
          return fmt::format("{} did not answer PING within {} s", endpoint, a.timeout_s);
        }
        return std::nullopt;
      case ActionKind::wait_down:
        if (!wait([&] { return !endpoint_up(endpoint); }, a.timeout_s)) {
          return fmt::format("{} still answers after {} s", endpoint, a.timeout_s);
        }
        return std::nullopt;
      case ActionKind::file_exists:
        if (!fs::exists(sub(a.path))) {
          return fmt::format("{}: missing", sub(a.path));
        }
        return std::nullopt;
      case ActionKind::remove_file: {
        std::error_code ec;
        fs::remove(sub(a.path), ec);
        if (ec) {
          return fmt::format("{}: {}", sub(a.path), ec.message());
        }
        return std::nullopt;
      }
      case ActionKind::rollback_runs:
        return rollback_runs(step, sub(a.path));
      case ActionKind::wait_synced: {
        std::optional<int64_t> lag;
        std::string peer = sub(a.peer);
        bool synced = wait(
            [&] {
              lag = replica_lag(endpoint, peer);
              return lag && *lag <= a.max_lag;
            },
            a.timeout_s);
        log(step, fmt::format("# lag of {} behind {}: {}\n", endpoint, peer,
                              lag ? std::to_string(*lag) + " bytes" : "link not up"));
        if (!synced) {
          return fmt::format("{} not within {} bytes of {} after {} s (lag: {})", endpoint,
                             a.max_lag, peer, a.timeout_s,
                             lag ? std::to_string(*lag) + " bytes" : "link not up");
        }
        return std::nullopt;
      }
      case ActionKind::make_dir: {
        std::error_code ec;
        fs::create_directories(sub(a.path), ec);
        if (ec) {
          return fmt::format("{}: {}", sub(a.path), ec.message());
        }
        return std::nullopt;
      }
    }
    return std::nullopt;
  }

  // Rolls back every rewrite run (a directory holding a manifest) under `root`, newest
  // first, through rewrite's own rollback_run; a rolled-back run is renamed so a rerun of
  // the undo does not restore it twice.
  std::optional<std::string> rollback_runs(const std::string& step, const std::string& root) const {
    std::error_code ec;
    std::vector<fs::path> runs;
    for (const auto& e : fs::directory_iterator(root, ec)) {
      if (e.is_directory() && fs::exists(e.path() / k_manifest_name)) {
        runs.push_back(e.path());
      }
    }
    std::sort(runs.begin(), runs.end(), [](const fs::path& a, const fs::path& b) {
      std::error_code e1;
      std::error_code e2;
      return fs::last_write_time(a / k_manifest_name, e1) >
             fs::last_write_time(b / k_manifest_name, e2);
    });
    for (const fs::path& run_dir : runs) {
      RollbackResult r = rollback_run(run_dir.string(), false, false);
      if (!r.ok) {
        return fmt::format("rollback of {}: {}", run_dir.string(), r.error);
      }
      for (const std::string& f : r.restored) {
        log(step, fmt::format("restored {}\n", f));
      }
      fs::path done = run_dir;
      done += ".rolled-back";
      fs::rename(run_dir, done, ec);
    }
    return std::nullopt;
  }

  // Runs a list; the first failure ends it.
  std::optional<std::string> run_all(const std::string& step,
                                     const std::vector<PlanAction>& list) const {
    for (const PlanAction& a : list) {
      if (auto error = run(step, a)) {
        return error;
      }
    }
    return std::nullopt;
  }

  // True when a step's done_if tests exist and all pass (nothing to do).
  bool already_done(const PlanStep& s) const {
    if (s.done_if.empty()) {
      return false;
    }
    for (const PlanAction& a : s.done_if) {
      PlanAction quiet = a;
      if (quiet.kind == ActionKind::wait_up || quiet.kind == ActionKind::wait_down) {
        quiet.timeout_s = 0;
      }
      if (run(s.name, quiet)) {
        return false;
      }
    }
    return true;
  }
};

std::string plan_hash(const std::string& plan_file) {
  std::ifstream in(plan_file, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return content_hash(text.str());
}

// Undoes `steps` (indices into the plan, newest first) and journals each; stops at the first
// undo that fails, leaving the rest for a rerun.
std::optional<std::string> undo_steps(const Runner& runner, Journal& journal,
                                      const std::vector<size_t>& steps, RunResult& result) {
  for (size_t i : steps) {
    const PlanStep& s = runner.plan.steps[i];
    runner.say(fmt::format("undo {}", s.name));
    if (auto error = runner.run_all(s.name, s.undo)) {
      JournalEntry& e = journal.entry(s.name);
      e.message = "undo failed: " + *error;
      write_journal(runner.state_dir, journal);
      return fmt::format("undo of {} failed: {}", s.name, *error);
    }
    JournalEntry& e = journal.entry(s.name);
    e.state = StepState::undone;  // its times stay those of the run, for the report
    if (auto error = write_journal(runner.state_dir, journal)) {
      return error;
    }
    result.undone.push_back(s.name);
  }
  return std::nullopt;
}

bool needs_undo(const JournalEntry* e) {
  return e != nullptr && (e->state == StepState::done || e->state == StepState::running ||
                          e->state == StepState::failed);
}

engine::Expected<Journal, std::string> open_journal(const MigrationPlan& plan,
                                                    const RunOptions& options,
                                                    const std::string& state_dir) {
  auto journal = read_journal(state_dir);
  if (!journal) {
    return journal;
  }
  journal->plan_file = fs::absolute(options.plan_file).string();
  journal->plan_sha1 = plan_hash(options.plan_file);
  for (const PlanStep& s : plan.steps) {
    journal->entry(s.name);
  }
  return journal;
}

void diff_of(const Runner& runner, const PlanStep& s, RunResult& result) {
  for (const PlanAction& a : s.run) {
    std::vector<std::string> argv = runner.argv_of(a);
    auto apply = std::find(argv.begin(), argv.end(), "--apply");
    if (a.kind != ActionKind::exec || apply == argv.end()) {
      continue;
    }
    argv.erase(apply);
    auto dry = compat::run_process(argv, std::chrono::seconds(a.timeout_s));
    runner.say(dry.output);
    result.diffs.push_back(StepDiff{.step = s.name, .diff = dry.output});
  }
}

void append_json_list(std::string& out, std::string_view key,
                      const std::vector<std::string>& list) {
  out += fmt::format(",\"{}\":[", key);
  for (size_t i = 0; i < list.size(); ++i) {
    out += i == 0 ? "" : ",";
    compat::append_json_string(out, list[i]);
  }
  out += "]";
}

// The "steps" member: every plan step with its journal state and times.
void append_steps_json(std::string& out, const MigrationPlan& plan, const Journal& journal) {
  out += ",\"steps\":[";
  bool first = true;
  for (const PlanStep& s : plan.steps) {
    const JournalEntry* e = journal.find(s.name);
    out += first ? "{\"name\":" : ",{\"name\":";
    first = false;
    compat::append_json_string(out, s.name);
    out += ",\"stage\":";
    compat::append_json_string(out, s.stage);
    out += ",\"state\":";
    compat::append_json_string(out, step_state_name(e ? e->state : StepState::pending));
    out += fmt::format(",\"started_ms\":{},\"finished_ms\":{},\"message\":", e ? e->started_ms : 0,
                       e ? e->finished_ms : 0);
    compat::append_json_string(out, e ? e->message : std::string());
    out += "}";
  }
  out += "]";
}

}  // namespace

JournalEntry& Journal::entry(const std::string& name) {
  for (JournalEntry& e : steps) {
    if (e.name == name) {
      return e;
    }
  }
  steps.push_back(JournalEntry{.name = name});
  return steps.back();
}

const JournalEntry* Journal::find(const std::string& name) const {
  for (const JournalEntry& e : steps) {
    if (e.name == name) {
      return &e;
    }
  }
  return nullptr;
}

std::string_view step_state_name(StepState state) {
  for (const auto& [s, name] : k_states) {
    if (s == state) {
      return name;
    }
  }
  return "pending";
}

std::string state_dir_of(const MigrationPlan& plan, const RunOptions& options) {
  return options.state_dir.empty() ? plan.state_dir : options.state_dir;
}

engine::Expected<Journal, std::string> read_journal(const std::string& state_dir) {
  Journal journal;
  std::string path = (fs::path(state_dir) / k_journal_name).string();
  if (!fs::exists(path)) {
    return journal;
  }
  toml::table root;
  try {
    root = toml::parse_file(path);
  } catch (const toml::parse_error& error) {
    return engine::Unexpected{fmt::format("{}:{}:{}: {}", path, error.source().begin.line,
                                          error.source().begin.column, error.description())};
  }
  journal.plan_file = root["plan_file"].value_or(std::string());
  journal.plan_sha1 = root["plan_sha1"].value_or(std::string());
  if (const toml::array* steps = root["steps"].as_array()) {
    for (const toml::node& n : *steps) {
      const toml::table* t = n.as_table();
      if (t == nullptr) {
        continue;
      }
      JournalEntry e;
      e.name = (*t)["name"].value_or(std::string());
      std::string state = (*t)["state"].value_or(std::string("pending"));
      bool known = false;
      for (const auto& [s, name] : k_states) {
        if (name == state) {
          e.state = s;
          known = true;
        }
      }
      if (!known) {
        return engine::Unexpected{
            fmt::format("{}:{}: unknown state '{}'", path, n.source().begin.line, state)};
      }
      e.started_ms = (*t)["started_ms"].value_or(int64_t{0});
      e.finished_ms = (*t)["finished_ms"].value_or(int64_t{0});
      e.message = (*t)["message"].value_or(std::string());
      journal.steps.push_back(std::move(e));
    }
  }
  return journal;
}

RunResult apply_migration(const MigrationPlan& plan, const RunOptions& options) {
  RunResult result;
  Runner runner{plan, state_dir_of(plan, options), options};
  auto opened = open_journal(plan, options, runner.state_dir);
  if (!opened) {
    return RunResult{.ok = false, .error = opened.error()};
  }
  Journal& journal = *opened;
  if (!options.step.empty() && plan.find(options.step) == nullptr) {
    return RunResult{.ok = false, .error = fmt::format("--step {}: no such step", options.step)};
  }
  if (!options.until.empty() && plan.find(options.until) == nullptr) {
    return RunResult{.ok = false, .error = fmt::format("--until {}: no such step", options.until)};
  }
  if (!options.check) {
    if (auto error = write_journal(runner.state_dir, journal)) {
      return RunResult{.ok = false, .error = *error};
    }
  }
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const PlanStep& s = plan.steps[i];
    if (!options.step.empty() && s.name != options.step) {
      continue;
    }
    if (journal.entry(s.name).state == StepState::done) {
      result.skipped.push_back(s.name);
    } else if (options.check) {
      bool in_place = runner.already_done(s);
      runner.say(fmt::format("would {} {}: {}", in_place ? "skip (already in place)" : "run",
                             s.name, s.what));
      for (const PlanAction& a : s.run) {
        runner.say("    " + runner.sub(describe_action(a)));
      }
      if (options.diff) {
        diff_of(runner, s, result);
      }
      result.ran.push_back(s.name);
    } else {
      JournalEntry& e = journal.entry(s.name);
      e.state = StepState::running;
      e.started_ms = now_ms();
      e.message.clear();
      if (auto error = write_journal(runner.state_dir, journal)) {
        return RunResult{.ok = false, .error = *error};
      }
      if (s.name == options.kill_at_step) {
        ::raise(SIGKILL);
      }
      runner.say(fmt::format("step {}: {}", s.name, s.what));
      std::optional<std::string> failure;
      if (runner.already_done(s)) {
        e.message = "already in place";
      } else {
        failure = runner.run_all(s.name, s.run);
        if (!failure && s.name + "/ran" == options.kill_at_step) {
          ::raise(SIGKILL);
        }
        if (!failure) {
          failure = runner.run_all(s.name, s.check);
          if (failure) {
            *failure = "check failed: " + *failure;
          }
        }
      }
      JournalEntry& after = journal.entry(s.name);
      after.finished_ms = now_ms();
      if (failure) {
        after.state = StepState::failed;
        after.message = *failure;
        write_journal(runner.state_dir, journal);
        result.ok = false;
        result.error = fmt::format("step {} failed: {}", s.name, *failure);
        std::vector<size_t> stage;
        for (size_t j = i + 1; j-- > 0;) {
          if (plan.steps[j].stage == s.stage && needs_undo(journal.find(plan.steps[j].name))) {
            stage.push_back(j);
          }
        }
        runner.say(fmt::format("{}; undoing stage {}", result.error, s.stage));
        if (auto error = undo_steps(runner, journal, stage, result)) {
          result.error += "; " + *error;
        }
        return result;
      }
      after.state = StepState::done;
      if (auto error = write_journal(runner.state_dir, journal)) {
        return RunResult{.ok = false, .error = *error};
      }
      result.ran.push_back(s.name);
    }
    if (s.name == options.until) {
      break;
    }
  }
  return result;
}

RunResult rollback_migration(const MigrationPlan& plan, const RunOptions& options) {
  RunResult result;
  Runner runner{plan, state_dir_of(plan, options), options};
  auto opened = open_journal(plan, options, runner.state_dir);
  if (!opened) {
    return RunResult{.ok = false, .error = opened.error()};
  }
  std::vector<size_t> todo;
  for (size_t j = plan.steps.size(); j-- > 0;) {
    if (needs_undo(opened->find(plan.steps[j].name))) {
      todo.push_back(j);
    }
  }
  if (options.check) {
    for (size_t j : todo) {
      runner.say(fmt::format("would undo {}", plan.steps[j].name));
      for (const PlanAction& a : plan.steps[j].undo) {
        runner.say("    " + runner.sub(describe_action(a)));
      }
      result.undone.push_back(plan.steps[j].name);
    }
    return result;
  }
  if (auto error = undo_steps(runner, *opened, todo, result)) {
    result.ok = false;
    result.error = *error;
  }
  return result;
}

std::optional<int64_t> follow_lag(const MigrationPlan& plan, const Journal& journal) {
  auto state = [&](const char* name) {
    const JournalEntry* e = journal.find(name);
    return e ? e->state : StepState::pending;
  };
  if (plan.strategy != "replica" || plan.find("promote-target") == nullptr ||
      state("follow-source") != StepState::done || state("promote-target") == StepState::done) {
    return std::nullopt;
  }
  return replica_lag(plan.target.url, plan.source.url);
}

std::string render_status(const MigrationPlan& plan, const Journal& journal, bool json,
                          std::optional<int64_t> lag) {
  size_t done = 0;
  std::string next;
  for (const PlanStep& s : plan.steps) {
    const JournalEntry* e = journal.find(s.name);
    if (e != nullptr && e->state == StepState::done) {
      ++done;
    } else if (next.empty()) {
      next = s.name;
    }
  }
  if (json) {
    std::string out = "{\"strategy\":";
    compat::append_json_string(out, plan.strategy);
    out += fmt::format(",\"steps_total\":{},\"steps_done\":{},\"lag_bytes\":{},\"next\":",
                       plan.steps.size(), done, lag ? std::to_string(*lag) : "null");
    if (next.empty()) {
      out += "null";
    } else {
      compat::append_json_string(out, next);
    }
    append_steps_json(out, plan, journal);
    out += ",\"changed\":false,\"failed\":false,\"msg\":";
    compat::append_json_string(out, fmt::format("{} of {} steps done", done, plan.steps.size()));
    out += "}\n";
    return out;
  }
  std::string out = fmt::format("migration {} -> {} ({} strategy): {} of {} steps done{}\n",
                                plan.source.url, plan.target.url, plan.strategy, done,
                                plan.steps.size(), next.empty() ? "" : ", next " + next);
  if (lag) {
    out += fmt::format("  the target is {} bytes behind the source\n", *lag);
  }
  for (const PlanStep& s : plan.steps) {
    const JournalEntry* e = journal.find(s.name);
    StepState st = e ? e->state : StepState::pending;
    std::string took;
    if (e != nullptr && e->finished_ms >= e->started_ms && e->started_ms > 0 &&
        st != StepState::running) {
      took = fmt::format(" ({:.1f} s)", static_cast<double>(e->finished_ms - e->started_ms) / 1000);
    }
    out += fmt::format("  {:<8} {:<20} {:<10}{}{}\n", step_state_name(st), s.name, s.stage, took,
                       e && !e->message.empty() ? "  " + e->message : "");
  }
  return out;
}

std::string render_run_json(const MigrationPlan& plan, const Journal& journal,
                            const RunResult& result, std::string_view action, bool check) {
  const std::vector<std::string>& changes = action == "rollback" ? result.undone : result.ran;
  std::string out = fmt::format(
      "{{\"changed\":{},\"failed\":{},\"check\":{},\"msg\":", !changes.empty(), !result.ok, check);
  std::string_view verb =
      action == "rollback" ? (check ? "would undo" : "undid") : (check ? "would run" : "ran");
  std::string msg = result.ok ? fmt::format("{} {} step(s), {} already done", verb, changes.size(),
                                            result.skipped.size())
                              : result.error;
  compat::append_json_string(out, msg);
  append_json_list(out, "ran", result.ran);
  append_json_list(out, "skipped", result.skipped);
  append_json_list(out, "undone", result.undone);
  append_steps_json(out, plan, journal);
  out += ",\"diff\":[";
  for (size_t i = 0; i < result.diffs.size(); ++i) {
    out += i == 0 ? "{\"step\":" : ",{\"step\":";
    compat::append_json_string(out, result.diffs[i].step);
    out += ",\"prepared\":";
    compat::append_json_string(out, result.diffs[i].diff);
    out += "}";
  }
  out += "]}\n";
  return out;
}

}  // namespace keyshift::migrate
