#include "migrate/rewrite/report.hpp"

#include "compat/report/json_text.hpp"
#include "migrate/rewrite/diff.hpp"

#include <fmt/format.h>

namespace keyshift::migrate {
namespace {

std::string before_header(const PlannedFile& file) {
  if (!file.exists && file.source != file.path) {
    return file.source;
  }
  return file.path;
}

std::string after_header(const PlannedFile& file) {
  return file.path + (file.exists ? "" : " (new file)");
}

void member(std::string& out, std::string_view key, std::string_view text) {
  compat::append_json_string(out, key);
  out += ": ";
  compat::append_json_bytes(out, text);
}

}  // namespace

std::string render_rewrite_text(const RewriteReport& report, bool show_diff) {
  std::string out;
  const RewritePlan& plan = *report.plan;
  if (show_diff) {
    for (const PlannedFile& file : plan.files) {
      if (!file.changed()) {
        continue;
      }
      out += unified_diff(redact_secrets(file.before), redact_secrets(file.after),
                          before_header(file), after_header(file));
    }
  }
  if (!plan.changes.empty()) {
    out += show_diff && !out.empty() ? "\n" : "";
    out += "Changes:\n";
    for (const Change& c : plan.changes) {
      std::string where = c.line > 0 ? fmt::format("{}:{}", c.file, c.line) : c.file;
      out += fmt::format("  {:<10} {}  {}\n", c.action, where, c.directive);
      if (!c.before.empty() || !c.after.empty()) {
        std::string before = redact_secrets(c.before);
        std::string after = redact_secrets(c.after);
        if (!before.empty()) {
          out += fmt::format("      - {}\n", before);
        }
        if (!after.empty()) {
          out += fmt::format("      + {}\n", after);
        }
      }
      out += fmt::format("      why: {}\n", c.reason);
    }
  }
  for (const std::string& w : report.warnings) {
    out += fmt::format("warning: {}\n", redact_secrets(w));
  }
  if (!report.backup_dir.empty()) {
    out += fmt::format("backup: {} (undo with: keyshift rewrite rollback {})\n", report.backup_dir,
                       report.backup_dir);
  }
  out += report.msg + "\n";
  return out;
}

std::string render_rewrite_json(const RewriteReport& report) {
  const RewritePlan& plan = *report.plan;
  std::string out = "{";
  out += fmt::format("\"changed\": {}, \"failed\": {}, \"check_mode\": {}, ",
                     report.changed ? "true" : "false", report.failed ? "true" : "false",
                     report.check_mode ? "true" : "false");
  member(out, "msg", redact_secrets(report.msg));
  out += fmt::format(", \"rc\": {}, \"diff\": [", report.rc);
  bool first = true;
  for (const PlannedFile& file : plan.files) {
    if (!file.changed()) {
      continue;
    }
    out += first ? "" : ", ";
    first = false;
    out += "{";
    member(out, "before_header", before_header(file));
    out += ", ";
    member(out, "after_header", after_header(file));
    out += ", ";
    member(out, "before", redact_secrets(file.before));
    out += ", ";
    member(out, "after", redact_secrets(file.after));
    out += "}";
  }
  out += "], \"files\": [";
  first = true;
  for (const PlannedFile& file : plan.files) {
    out += first ? "{" : ", {";
    first = false;
    member(out, "path", file.path);
    out += ", ";
    member(out, "source", file.source);
    out += fmt::format(", \"changed\": {}, \"new\": {}}}", file.changed() ? "true" : "false",
                       file.exists ? "false" : "true");
  }
  out += "], \"changes\": [";
  first = true;
  for (const Change& c : plan.changes) {
    out += first ? "{" : ", {";
    first = false;
    member(out, "file", c.file);
    out += fmt::format(", \"line\": {}, ", c.line);
    member(out, "directive", c.directive);
    out += ", ";
    member(out, "action", c.action);
    out += ", ";
    member(out, "before", redact_secrets(c.before));
    out += ", ";
    member(out, "after", redact_secrets(c.after));
    out += ", ";
    member(out, "reason", c.reason);
    out += "}";
  }
  out += "], \"warnings\": [";
  first = true;
  for (const std::string& w : report.warnings) {
    out += first ? "" : ", ";
    first = false;
    compat::append_json_bytes(out, redact_secrets(w));
  }
  out += "], \"backup_dir\": ";
  if (report.backup_dir.empty()) {
    out += "null";
  } else {
    compat::append_json_bytes(out, report.backup_dir);
  }
  out += ", \"written\": [";
  first = true;
  for (const std::string& w : report.written) {
    out += first ? "" : ", ";
    first = false;
    compat::append_json_bytes(out, w);
  }
  out += "]";
  if (!report.extra_json.empty()) {
    out += ", " + report.extra_json;
  }
  out += "}\n";
  return out;
}

}  // namespace keyshift::migrate
