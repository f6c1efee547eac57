#include "migrate/plan/plan_model.hpp"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <array>
#include <utility>

namespace keyshift::migrate {
namespace {

constexpr std::array<std::pair<ActionKind, std::string_view>, 10> k_kinds{{
    {ActionKind::exec, "exec"},
    {ActionKind::shell, "shell"},
    {ActionKind::call, "call"},
    {ActionKind::wait_up, "wait_up"},
    {ActionKind::wait_down, "wait_down"},
    {ActionKind::file_exists, "file_exists"},
    {ActionKind::rollback_runs, "rollback_runs"},
    {ActionKind::remove_file, "remove_file"},
    {ActionKind::make_dir, "make_dir"},
    {ActionKind::wait_synced, "wait_synced"},
}};

}  // namespace

std::string toml_quote(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (u < 0x20 || u == 0x7f) {
      out += fmt::format("\\u{:04x}", u);
    } else {
      out += c;
    }
  }
  out += '"';
  return out;
}

namespace {

std::string quoted(std::string_view text) {
  return toml_quote(text);
}

void put(std::string& out, std::string_view key, std::string_view value) {
  if (!value.empty()) {
    out += fmt::format("{} = {}\n", key, quoted(value));
  }
}

void put_server(std::string& out, std::string_view table, const PlanServer& s) {
  out += fmt::format("\n[{}]\n", table);
  put(out, "kind", s.kind);
  put(out, "version", s.version);
  put(out, "url", s.url);
  put(out, "tcp_url", s.tcp_url);
  put(out, "config_file", s.config_file);
  put(out, "data_file", s.data_file);
  put(out, "unix_socket", s.unix_socket);
  if (s.port != 0) {
    out += fmt::format("port = {}\n", s.port);
  }
  put(out, "start", s.start);
  put(out, "stop", s.stop);
}

void put_array(std::string& out, std::string_view key, const std::vector<std::string>& words) {
  if (words.empty()) {
    return;
  }
  out += fmt::format("{} = [", key);
  for (size_t i = 0; i < words.size(); ++i) {
    out += (i == 0 ? "" : ", ") + quoted(words[i]);
  }
  out += "]\n";
}

void put_actions(std::string& out, std::string_view list, const std::vector<PlanAction>& actions) {
  for (const PlanAction& a : actions) {
    out += fmt::format("[[steps.{}]]\nkind = \"{}\"\n", list, action_kind_name(a.kind));
    put_array(out, "argv", a.argv);
    put(out, "endpoint", a.endpoint);
    put(out, "path", a.path);
    put(out, "when", a.when);
    put(out, "peer", a.peer);
    if (a.max_lag != 0) {
      out += fmt::format("max_lag = {}\n", a.max_lag);
    }
    if (a.timeout_s != 60) {
      out += fmt::format("timeout_s = {}\n", a.timeout_s);
    }
  }
}

std::string str(const toml::table& t, std::string_view key) {
  return t[key].value_or(std::string());
}

PlanServer read_server(const toml::table* t) {
  PlanServer s;
  if (t == nullptr) {
    return s;
  }
  s.kind = str(*t, "kind");
  s.version = str(*t, "version");
  s.url = str(*t, "url");
  s.tcp_url = str(*t, "tcp_url");
  s.config_file = str(*t, "config_file");
  s.data_file = str(*t, "data_file");
  s.unix_socket = str(*t, "unix_socket");
  s.port = static_cast<int>((*t)["port"].value_or(int64_t{0}));
  s.start = str(*t, "start");
  s.stop = str(*t, "stop");
  return s;
}

// Reads one action list of a step; an error names the file, line and member.
std::optional<std::string> read_actions(const toml::table& step, std::string_view list,
                                        const std::string& file, std::vector<PlanAction>& out) {
  const toml::node_view<const toml::node> node = step[list];
  if (!node) {
    return std::nullopt;
  }
  const toml::array* arr = node.as_array();
  auto where = [&](const toml::node& n) {
    return fmt::format("{}:{}: steps.{}", file, n.source().begin.line, list);
  };
  if (arr == nullptr) {
    return where(*node.node()) + ": must be an array of tables";
  }
  for (const toml::node& n : *arr) {
    const toml::table* t = n.as_table();
    if (t == nullptr) {
      return where(n) + ": must be a table";
    }
    PlanAction a;
    std::string kind = str(*t, "kind");
    bool known = false;
    for (const auto& [k, name] : k_kinds) {
      if (name == kind) {
        a.kind = k;
        known = true;
      }
    }
    if (!known) {
      return fmt::format("{}: unknown kind '{}'", where(n), kind);
    }
    if (const toml::array* argv = (*t)["argv"].as_array()) {
      for (const toml::node& word : *argv) {
        if (!word.is_string()) {
          return where(word) + ".argv: every word must be a string";
        }
        a.argv.push_back(word.value_or(std::string()));
      }
    }
    a.endpoint = str(*t, "endpoint");
    a.path = str(*t, "path");
    a.when = str(*t, "when");
    if (!a.when.empty() && a.when != "endpoint_up" && a.when != "endpoint_down") {
      return fmt::format("{}: when = '{}': endpoint_up or endpoint_down", where(n), a.when);
    }
    a.timeout_s = static_cast<int>((*t)["timeout_s"].value_or(int64_t{60}));
    a.peer = str(*t, "peer");
    a.max_lag = (*t)["max_lag"].value_or(int64_t{0});
    if (a.kind == ActionKind::wait_synced && (a.endpoint.empty() || a.peer.empty())) {
      return where(n) + ": wait_synced needs endpoint (the replica) and peer (its primary)";
    }
    out.push_back(std::move(a));
  }
  return std::nullopt;
}

}  // namespace

const PlanStep* MigrationPlan::find(std::string_view name) const {
  for (const PlanStep& s : steps) {
    if (s.name == name) {
      return &s;
    }
  }
  return nullptr;
}

std::string_view action_kind_name(ActionKind kind) {
  for (const auto& [k, name] : k_kinds) {
    if (k == kind) {
      return name;
    }
  }
  return "exec";
}

std::string describe_action(const PlanAction& a) {
  std::string words;
  for (const std::string& w : a.argv) {
    words += (words.empty() ? "" : " ") + w;
  }
  switch (a.kind) {
    case ActionKind::exec:
      return a.path.empty() ? words : fmt::format("{} > {}", words, a.path);
    case ActionKind::shell:
      return fmt::format("sh -c {}", quoted(words));
    case ActionKind::call:
      return fmt::format("{} on {}", words, a.endpoint);
    case ActionKind::wait_up:
      return fmt::format("{} answers PING (within {} s)", a.endpoint, a.timeout_s);
    case ActionKind::wait_down:
      return fmt::format("{} refuses connections (within {} s)", a.endpoint, a.timeout_s);
    case ActionKind::file_exists:
      return fmt::format("{} exists", a.path);
    case ActionKind::rollback_runs:
      return fmt::format("roll back the rewrite runs under {}", a.path);
    case ActionKind::remove_file:
      return fmt::format("remove {}", a.path);
    case ActionKind::make_dir:
      return fmt::format("mkdir -p {}", a.path);
    case ActionKind::wait_synced:
      return fmt::format("{} has applied {}'s stream to within {} bytes (within {} s)", a.endpoint,
                         a.peer, a.max_lag, a.timeout_s);
  }
  return words;
}

std::string render_plan_toml(const MigrationPlan& plan) {
  std::string out =
      "# keyshift migration plan (keyshift-migrate-plan(5)). Read it, edit it if you must,\n"
      "# then run: keyshift migrate apply THIS_FILE\n"
      "[keyshift_migration_plan]\n";
  out += fmt::format("format = {}\n", plan.format);
  put(out, "created", plan.created);
  put(out, "keyshift", plan.keyshift);
  put(out, "strategy", plan.strategy);
  put(out, "strategy_why", plan.strategy_why);
  put(out, "service_manager", plan.service_manager);
  put(out, "state_dir", plan.state_dir);
  put_array(out, "apps", plan.apps);
  put_server(out, "source", plan.source);
  put_server(out, "target", plan.target);
  for (const PreflightCheck& p : plan.preflight) {
    out += "\n[[preflight]]\n";
    put(out, "name", p.name);
    put(out, "verdict", p.verdict);
    put(out, "detail", p.detail);
  }
  for (const PlanStep& s : plan.steps) {
    out += fmt::format("\n# ---- step {} (stage {})\n[[steps]]\n", s.name, s.stage);
    put(out, "name", s.name);
    put(out, "stage", s.stage);
    put(out, "what", s.what);
    put(out, "why", s.why);
    put_actions(out, "run", s.run);
    put_actions(out, "check", s.check);
    put_actions(out, "done_if", s.done_if);
    put_actions(out, "undo", s.undo);
  }
  return out;
}

engine::Expected<MigrationPlan, std::string> parse_plan_toml(std::string_view text,
                                                             const std::string& file) {
  toml::table root;
  try {
    root = toml::parse(text, file);
  } catch (const toml::parse_error& error) {
    return engine::Unexpected{fmt::format("{}:{}:{}: {}", file, error.source().begin.line,
                                          error.source().begin.column, error.description())};
  }
  const toml::table* head = root["keyshift_migration_plan"].as_table();
  if (head == nullptr) {
    return engine::Unexpected{
        fmt::format("{}: not a migration plan (no [keyshift_migration_plan] header)", file)};
  }
  MigrationPlan plan;
  plan.format = static_cast<int>((*head)["format"].value_or(int64_t{0}));
  if (plan.format != k_plan_format) {
    return engine::Unexpected{fmt::format("{}:{}: format {} is not one this keyshift reads ({})",
                                          file, head->source().begin.line, plan.format,
                                          k_plan_format)};
  }
  plan.created = str(*head, "created");
  plan.keyshift = str(*head, "keyshift");
  plan.strategy = str(*head, "strategy");
  plan.strategy_why = str(*head, "strategy_why");
  plan.service_manager = str(*head, "service_manager");
  plan.state_dir = str(*head, "state_dir");
  if (const toml::array* apps = (*head)["apps"].as_array()) {
    for (const toml::node& n : *apps) {
      plan.apps.push_back(n.value_or(std::string()));
    }
  }
  plan.source = read_server(root["source"].as_table());
  plan.target = read_server(root["target"].as_table());
  if (const toml::array* pre = root["preflight"].as_array()) {
    for (const toml::node& n : *pre) {
      if (const toml::table* t = n.as_table()) {
        plan.preflight.push_back({str(*t, "name"), str(*t, "verdict"), str(*t, "detail")});
      }
    }
  }
  const toml::array* steps = root["steps"].as_array();
  if (steps == nullptr || steps->empty()) {
    return engine::Unexpected{fmt::format("{}: the plan has no [[steps]]", file)};
  }
  for (const toml::node& n : *steps) {
    const toml::table* t = n.as_table();
    if (t == nullptr) {
      return engine::Unexpected{
          fmt::format("{}:{}: steps: must be tables", file, n.source().begin.line)};
    }
    PlanStep s;
    s.name = str(*t, "name");
    s.stage = str(*t, "stage");
    s.what = str(*t, "what");
    s.why = str(*t, "why");
    if (s.name.empty()) {
      return engine::Unexpected{
          fmt::format("{}:{}: a step without a name", file, n.source().begin.line)};
    }
    if (plan.find(s.name) != nullptr) {
      return engine::Unexpected{
          fmt::format("{}:{}: step name '{}' used twice", file, n.source().begin.line, s.name)};
    }
    for (std::string_view list : {"run", "check", "done_if", "undo"}) {
      std::vector<PlanAction>& into = list == "run"       ? s.run
                                      : list == "check"   ? s.check
                                      : list == "done_if" ? s.done_if
                                                          : s.undo;
      if (auto error = read_actions(*t, list, file, into)) {
        return engine::Unexpected{*error};
      }
    }
    plan.steps.push_back(std::move(s));
  }
  return plan;
}

}  // namespace keyshift::migrate
