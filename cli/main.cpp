// keyshift: move a Redis server to Valkey in place, with an embedded Valkey-compatible engine.
#include "cli/subcommands.hpp"
#include "cli/user_error.hpp"

#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <cstdio>
#include <string>
#include <vector>

namespace {

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1);
  std::vector<size_t> cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) {
    prev[j] = j;
  }
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

/// The closest known name to `word`, or empty when nothing is close.
std::string did_you_mean(const std::string& word, const std::vector<std::string>& known) {
  std::string best;
  size_t best_d = 3;
  for (const auto& k : known) {
    size_t d = edit_distance(word, k);
    if (d < best_d || (k.rfind(word, 0) == 0 && word.size() >= 2 && best.empty())) {
      best = k;
      best_d = d;
    }
  }
  return best;
}

std::vector<std::string> names_of(CLI::App& app, bool subcommands) {
  std::vector<std::string> out;
  if (subcommands) {
    for (const CLI::App* s : app.get_subcommands({})) {
      out.push_back(s->get_name());
    }
  } else {
    for (const CLI::Option* o : app.get_options()) {
      for (const auto& l : o->get_lnames()) {
        out.push_back("--" + l);
      }
    }
  }
  return out;
}

/// The deepest subcommand given ("rdb check"): it owns the words that were not understood.
CLI::App* deepest(CLI::App& app) {
  CLI::App* where = &app;
  while (!where->get_subcommands().empty()) {
    where = where->get_subcommands().back();
  }
  return where;
}

/// Names the first word nobody took and suggests the closest subcommand or flag; exit 2.
int report_unknown(CLI::App& app) {
  CLI::App* where = deepest(app);
  std::vector<std::string> extras = where->remaining();
  if (extras.empty()) {
    extras = app.remaining();
  }
  std::string word = extras.empty() ? std::string() : extras.front();
  bool is_flag = word.rfind("-", 0) == 0;
  std::string hint = did_you_mean(word, names_of(*where, !is_flag));
  fmt::print(stderr, "keyshift: unknown {} '{}'{}\nRun 'keyshift --help' for usage.\n",
             is_flag ? "option" : "subcommand", word,
             hint.empty() ? "" : fmt::format("; did you mean '{}'?", hint));
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "keyshift: move a Redis server to Valkey in place, with no data lost and proof that\n"
      "the apps still work. Every subcommand runs against an embedded Valkey-compatible\n"
      "engine unless given a server.",
      "keyshift"};
  app.set_version_flag("-V,--version", std::string("keyshift ") + KEYSHIFT_VERSION);
  app.require_subcommand(1);
  app.fallthrough(false);
  keyshift::cli::add_serve(app);
  keyshift::cli::add_rdb(app);
  keyshift::cli::add_rewrite(app);
  keyshift::cli::add_bench(app);
  keyshift::cli::add_import(app);
  keyshift::cli::add_verify(app);
  keyshift::cli::add_kb(app);
  keyshift::cli::add_capture(app);
  keyshift::cli::add_replay(app);
  keyshift::cli::add_migrate(app);

  CLI::App* help = app.add_subcommand("help", "Show help for keyshift or one subcommand");
  std::string help_topic;
  help->add_option("subcommand", help_topic, "Subcommand to describe");
  help->callback([&]() {
    if (help_topic.empty()) {
      std::fputs(app.help().c_str(), stdout);
      return;
    }
    for (CLI::App* s : app.get_subcommands({})) {
      if (s->get_name() == help_topic) {
        std::fputs(s->help().c_str(), stdout);
        return;
      }
    }
    std::string hint = did_you_mean(help_topic, names_of(app, true));
    throw keyshift::cli::UserError(
        fmt::format("keyshift: unknown subcommand '{}'{}", help_topic,
                    hint.empty() ? "" : fmt::format("; did you mean '{}'?", hint)),
        2);
  });

  try {
    try {
      app.parse(argc, argv);
    } catch (const CLI::ExtrasError&) {
      return report_unknown(app);
    } catch (const CLI::RequiredError& e) {
      CLI::App* where = deepest(app);
      if (!app.remaining().empty() || !where->remaining().empty()) {
        return report_unknown(app);
      }
      if (where->get_require_subcommand_min() > 0) {
        std::fputs(where->help().c_str(), stderr);
        return 2;
      }
      fmt::print(stderr, "keyshift: {}\n", e.what());
      return 2;
    } catch (const CLI::ParseError& e) {
      if (e.get_exit_code() == 0) {
        return app.exit(e);
      }
      fmt::print(stderr, "keyshift: {}\nRun 'keyshift --help' for usage.\n", e.what());
      return 2;
    }
  } catch (const keyshift::cli::UserError& e) {
    // An empty message: the report already said everything (JSON on stdout).
    if (e.what()[0] != '\0') {
      fmt::print(stderr, "{}\n", e.what());
    }
    return e.code();
  } catch (const std::exception& e) {
    fmt::print(stderr, "keyshift: internal error: {}\n", e.what());
    return 1;
  }
  return 0;
}
