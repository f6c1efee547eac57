// keyshift kb: what the version knowledge base knows (compat/kb): the server lines, each
// line's command table, how two lines differ, and the behaviour notes with their sources.
#include "cli/subcommands.hpp"
#include "cli/user_error.hpp"
#include "compat/kb/kb_report.hpp"
#include "compat/kb/knowledge_base.hpp"

#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <cstdio>
#include <memory>
#include <string>

namespace keyshift::cli {
namespace {

struct KbCliOptions {
  std::string profile;
  std::string from;
  std::string to;
  std::string format = "text";
};

compat::kb::ProfileId profile_or_fail(const std::string& name) {
  auto id = compat::kb::find_profile(name);
  if (!id) {
    std::string known;
    for (compat::kb::ProfileId p : compat::kb::all_profiles()) {
      known += known.empty() ? "" : ", ";
      known += compat::kb::profile_info(p).name;
    }
    throw UserError(fmt::format("keyshift: kb: unknown server line '{}' (known: {})", name, known),
                    2);
  }
  return *id;
}

void print(const std::string& text) {
  std::fputs(text.c_str(), stdout);
  std::fflush(stdout);
}

}  // namespace

void add_kb(CLI::App& app) {
  CLI::App* kb =
      app.add_subcommand("kb", "Show what keyshift knows about Redis and Valkey releases");
  kb->require_subcommand(1);
  kb->footer(
      "Usage:\n"
      "  keyshift kb profiles [--format text|json]\n"
      "  keyshift kb commands PROFILE [--format text|json]\n"
      "  keyshift kb diff FROM TO [--format text|json]\n"
      "  keyshift kb notes [PROFILE] [--format text|json]\n"
      "PROFILE is a release line such as redis-7.0 or valkey-8.0 (a patch version is accepted).\n"
      "See man keyshift-kb.\n");
  auto opts = std::make_shared<KbCliOptions>();
  auto add_format = [&](CLI::App* sub) {
    sub->add_option("--format", opts->format, "Output format: text or json")
        ->check(CLI::IsMember({"text", "json"}));
  };

  CLI::App* profiles = kb->add_subcommand("profiles", "List the release lines and their sources");
  add_format(profiles);
  profiles->callback([opts]() { print(compat::kb::render_profiles(opts->format == "json")); });

  CLI::App* commands = kb->add_subcommand("commands", "Print a release line's command table");
  commands->add_option("profile", opts->profile, "Release line, e.g. valkey-8.0")->required();
  add_format(commands);
  commands->callback([opts]() {
    print(compat::kb::render_commands(profile_or_fail(opts->profile), opts->format == "json"));
  });

  CLI::App* diff = kb->add_subcommand("diff", "What a client of FROM may miss on TO");
  diff->add_option("from", opts->from, "Release line moved from, e.g. redis-7.4")->required();
  diff->add_option("to", opts->to, "Release line moved to, e.g. valkey-8.0")->required();
  add_format(diff);
  diff->callback([opts]() {
    auto d = compat::kb::diff_profiles(profile_or_fail(opts->from), profile_or_fail(opts->to));
    print(compat::kb::render_diff(d, opts->format == "json"));
  });

  CLI::App* notes = kb->add_subcommand("notes", "Print the behaviour notes and their sources");
  notes->add_option("profile", opts->profile, "Only the notes that apply to this release line");
  add_format(notes);
  notes->callback([opts]() {
    std::optional<compat::kb::ProfileId> id;
    if (!opts->profile.empty()) {
      id = profile_or_fail(opts->profile);
    }
    print(compat::kb::render_notes(id, opts->format == "json"));
  });
}

}  // namespace keyshift::cli
