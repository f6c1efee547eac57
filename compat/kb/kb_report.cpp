#include "compat/kb/kb_report.hpp"

#include "compat/report/json_text.hpp"

#include <fmt/core.h>

#include <set>
#include <string_view>

namespace keyshift::compat::kb {
namespace {

std::set<std::string_view> words(std::string_view text) {
  std::set<std::string_view> out;
  while (!text.empty()) {
    size_t space = text.find(' ');
    std::string_view w = text.substr(0, space);
    if (!w.empty()) {
      out.insert(w);
    }
    text = space == std::string_view::npos ? std::string_view{} : text.substr(space + 1);
  }
  return out;
}

/// Option words without their "@since".
std::set<std::string_view> option_words(std::string_view arguments) {
  std::set<std::string_view> out;
  for (std::string_view w : words(arguments)) {
    out.insert(w.substr(0, w.find('@')));
  }
  return out;
}

std::string joined(const std::set<std::string_view>& items) {
  std::string out;
  for (std::string_view s : items) {
    if (!out.empty()) {
      out += ' ';
    }
    out += s;
  }
  return out;
}

std::vector<std::string> changes(const KbCommand& a, const KbCommand& b) {
  std::vector<std::string> out;
  if (a.arity != b.arity) {
    out.push_back(fmt::format("arity {} -> {}", a.arity, b.arity));
  }
  std::set<std::string_view> fa = words(a.flags);
  std::set<std::string_view> fb = words(b.flags);
  if (fa != fb) {
    out.push_back(fmt::format("flags [{}] -> [{}]", a.flags, b.flags));
  }
  if (a.first_key != b.first_key || a.last_key != b.last_key || a.step != b.step) {
    out.push_back(fmt::format("key range {} {} {} -> {} {} {}", a.first_key, a.last_key, a.step,
                              b.first_key, b.last_key, b.step));
  }
  if (a.key_specs != b.key_specs) {
    out.push_back(fmt::format("key specs [{}] -> [{}]", a.key_specs, b.key_specs));
  }
  if (a.arguments.starts_with("?") || b.arguments.starts_with("?")) {
    // One side's options are not known: nothing to say about them.
    if (words(a.acl) != words(b.acl)) {
      out.push_back(fmt::format("ACL categories [{}] -> [{}]", a.acl, b.acl));
    }
    return out;
  }
  std::set<std::string_view> oa = option_words(a.arguments);
  std::set<std::string_view> ob = option_words(b.arguments);
  std::set<std::string_view> only_a;
  std::set<std::string_view> only_b;
  for (std::string_view w : oa) {
    if (ob.count(w) == 0) {
      only_a.insert(w);
    }
  }
  for (std::string_view w : ob) {
    if (oa.count(w) == 0) {
      only_b.insert(w);
    }
  }
  if (!only_a.empty()) {
    out.push_back("options missing on the target: " + joined(only_a));
  }
  if (!only_b.empty()) {
    out.push_back("options only on the target: " + joined(only_b));
  }
  if (words(a.acl) != words(b.acl)) {
    out.push_back(fmt::format("ACL categories [{}] -> [{}]", a.acl, b.acl));
  }
  return out;
}

void append_string_field(std::string& out, std::string_view name, std::string_view value,
                         bool comma = true) {
  if (comma) {
    out += ',';
  }
  append_json_string(out, name);
  out += ':';
  append_json_string(out, value);
}

void append_command_json(std::string& out, const KbCommand& c) {
  out += '{';
  append_string_field(out, "name", c.name, false);
  out += fmt::format(",\"arity\":{},\"first_key\":{},\"last_key\":{},\"step\":{}", c.arity,
                     c.first_key, c.last_key, c.step);
  append_string_field(out, "flags", c.flags);
  append_string_field(out, "acl", c.acl);
  append_string_field(out, "key_specs", c.key_specs);
  append_string_field(out, "since", c.since);
  append_string_field(out, "group", c.group);
  append_string_field(out, "tips", c.tips);
  append_string_field(out, "arguments", c.arguments);
  append_string_field(out, "doc_flags", c.doc_flags);
  append_string_field(out, "syntax", c.syntax);
  out += '}';
}

void append_note_json(std::string& out, const KbNote& n) {
  out += '{';
  append_string_field(out, "id", n.id, false);
  append_string_field(out, "applies", n.applies);
  append_string_field(out, "text", n.text);
  append_string_field(out, "source", n.source);
  out += '}';
}

}  // namespace

KbDiff diff_profiles(ProfileId from, ProfileId to) {
  KbDiff d;
  d.from = from;
  d.to = to;
  std::string_view to_project = profile_info(to).project;
  for (const KbCommand* c : commands_of(from)) {
    const KbCommand* t = find_command(to, c->name);
    if (t == nullptr) {
      std::optional<ProfileId> later;
      if (auto first = first_profile_with(to_project, c->name)) {
        later = first;
      }
      d.missing.emplace_back(c, later);
      continue;
    }
    std::vector<std::string> what = changes(*c, *t);
    if (!what.empty()) {
      d.changed.push_back(KbChange{c, t, std::move(what)});
    }
  }
  for (const KbCommand* t : commands_of(to)) {
    if (find_command(from, t->name) == nullptr) {
      d.target_only.push_back(t);
    }
  }
  for (const KbNote* n : notes()) {
    if (applies_to(*n, from) != applies_to(*n, to)) {
      d.notes.push_back(n);
    }
  }
  return d;
}

std::string render_profiles(bool json) {
  std::string out;
  if (json) {
    out += '[';
  }
  bool first = true;
  for (ProfileId id : all_profiles()) {
    const KbProfileInfo& p = profile_info(id);
    if (json) {
      if (!first) {
        out += ',';
      }
      out += '{';
      append_string_field(out, "name", p.name, false);
      append_string_field(out, "project", p.project);
      out +=
          fmt::format(",\"exact\":{},\"commands\":{},\"rdb_version\":{}",
                      p.exact ? "true" : "false", commands_of(id).size(), rdb_version_written(id));
      append_string_field(out, "source", p.how);
      out += '}';
    } else {
      out += fmt::format("{:<11} {:>4} commands  RDB {:<3} {}\n", p.name, commands_of(id).size(),
                         rdb_version_written(id), p.how);
    }
    first = false;
  }
  if (json) {
    out += "]\n";
  }
  return out;
}

std::string render_commands(ProfileId profile, bool json) {
  std::string out;
  auto rows = commands_of(profile);
  if (json) {
    out += '{';
    append_string_field(out, "profile", profile_info(profile).name, false);
    out +=
        fmt::format(",\"exact\":{},\"commands\":[", profile_info(profile).exact ? "true" : "false");
    for (size_t i = 0; i < rows.size(); ++i) {
      if (i > 0) {
        out += ',';
      }
      append_command_json(out, *rows[i]);
    }
    out += "]}\n";
    return out;
  }
  for (const KbCommand* c : rows) {
    out += fmt::format("{:<28} {:>3}  {:<3} {:<3} {:<2} since {:<7} {}\n", c->name, c->arity,
                       c->first_key, c->last_key, c->step, c->since, c->flags);
  }
  return out;
}

std::string render_diff(const KbDiff& d, bool json) {
  std::string_view from = profile_info(d.from).name;
  std::string_view to = profile_info(d.to).name;
  std::string out;
  if (json) {
    out += '{';
    append_string_field(out, "from", from, false);
    append_string_field(out, "to", to);
    out += fmt::format(",\"exact\":{},\"missing\":[",
                       profile_info(d.from).exact && profile_info(d.to).exact ? "true" : "false");
    for (size_t i = 0; i < d.missing.size(); ++i) {
      out += i > 0 ? ",{" : "{";
      append_string_field(out, "name", d.missing[i].first->name, false);
      out += ",\"available_in\":";
      if (d.missing[i].second) {
        append_json_string(out, profile_info(*d.missing[i].second).name);
      } else {
        out += "null";
      }
      out += '}';
    }
    out += "],\"changed\":[";
    for (size_t i = 0; i < d.changed.size(); ++i) {
      out += i > 0 ? ",{" : "{";
      append_string_field(out, "name", d.changed[i].from->name, false);
      out += ",\"what\":[";
      for (size_t j = 0; j < d.changed[i].what.size(); ++j) {
        if (j > 0) {
          out += ',';
        }
        append_json_string(out, d.changed[i].what[j]);
      }
      out += "]}";
    }
    out += "],\"target_only\":[";
    for (size_t i = 0; i < d.target_only.size(); ++i) {
      if (i > 0) {
        out += ',';
      }
      append_json_string(out, d.target_only[i]->name);
    }
    out += "],\"notes\":[";
    for (size_t i = 0; i < d.notes.size(); ++i) {
      if (i > 0) {
        out += ',';
      }
      append_note_json(out, *d.notes[i]);
    }
    out += "]}\n";
    return out;
  }
  out += fmt::format("{} -> {}{}\n", from, to,
                     profile_info(d.from).exact && profile_info(d.to).exact
                         ? ""
                         : " (a derived table is involved: see keyshift kb profiles)");
  out += fmt::format("\nmissing on {} ({}):\n", to, d.missing.size());
  for (const auto& [c, later] : d.missing) {
    out += fmt::format("  {:<28} {}\n", c->name,
                       later ? fmt::format("{} has it", profile_info(*later).name)
                             : std::string("no release of the line has it"));
  }
  out += fmt::format("\nchanged ({}):\n", d.changed.size());
  for (const KbChange& ch : d.changed) {
    for (const std::string& w : ch.what) {
      out += fmt::format("  {:<28} {}\n", ch.from->name, w);
    }
  }
  out += fmt::format("\nonly on {} ({}):\n", to, d.target_only.size());
  for (const KbCommand* c : d.target_only) {
    out += fmt::format("  {}\n", c->name);
  }
  out += fmt::format("\nbehaviour ({}):\n", d.notes.size());
  for (const KbNote* n : d.notes) {
    out += fmt::format("  {} [{}]: {} ({})\n", n->id, n->applies, n->text, n->source);
  }
  return out;
}

std::string render_notes(std::optional<ProfileId> profile, bool json) {
  std::string out;
  if (json) {
    out += '[';
  }
  bool first = true;
  for (const KbNote* n : notes()) {
    if (profile && !applies_to(*n, *profile)) {
      continue;
    }
    if (json) {
      if (!first) {
        out += ',';
      }
      append_note_json(out, *n);
    } else {
      out += fmt::format("{} [{}]\n  {}\n  source: {}\n", n->id, n->applies, n->text, n->source);
    }
    first = false;
  }
  if (json) {
    out += "]\n";
  }
  return out;
}

}  // namespace keyshift::compat::kb
