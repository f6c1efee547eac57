#include "migrate/plan/plan_report.hpp"

#include "compat/bench/compare.hpp"
#include "compat/report/html_page.hpp"
#include "compat/report/json_value.hpp"
#include "migrate/rewrite/apply.hpp"
#include "migrate/rewrite/diff.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace keyshift::migrate {
namespace {

namespace fs = std::filesystem;

std::optional<std::string> read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return std::nullopt;
  }
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The report as blocks, rendered once per format so the three say the same.
struct Block {
  enum class Kind { heading, para, table, pre } kind;
  std::string text;
  std::vector<std::vector<std::string>> rows;  ///< table: first row is the header
};

class Doc {
 public:
  void heading(std::string t) { m_blocks.push_back({Block::Kind::heading, std::move(t), {}}); }
  void para(std::string t) { m_blocks.push_back({Block::Kind::para, std::move(t), {}}); }
  void pre(std::string t) { m_blocks.push_back({Block::Kind::pre, std::move(t), {}}); }
  void table(std::vector<std::vector<std::string>> rows) {
    m_blocks.push_back({Block::Kind::table, {}, std::move(rows)});
  }

  std::string render(ReportFormat format, const std::string& title) const {
    std::string out;
    if (format == ReportFormat::html) {
      out = compat::html_page_start(title);
      out += fmt::format("<h1>{}</h1>\n", compat::html_escape(title));
    } else if (format == ReportFormat::markdown) {
      out = fmt::format("# {}\n\n", title);
    } else {
      out = fmt::format("{}\n{}\n\n", title, std::string(title.size(), '='));
    }
    for (const Block& b : m_blocks) {
      out += render_block(b, format);
    }
    if (format == ReportFormat::html) {
      out += compat::html_page_end();
    }
    return out;
  }

 private:
  static std::string render_block(const Block& b, ReportFormat format) {
    switch (b.kind) {
      case Block::Kind::heading:
        return format == ReportFormat::html
                   ? fmt::format("<h2>{}</h2>\n", compat::html_escape(b.text))
               : format == ReportFormat::markdown
                   ? fmt::format("## {}\n\n", b.text)
                   : fmt::format("{}\n{}\n", b.text, std::string(b.text.size(), '-'));
      case Block::Kind::para:
        return format == ReportFormat::html
                   ? fmt::format("<p>{}</p>\n", compat::html_escape(b.text))
                   : b.text + "\n\n";
      case Block::Kind::pre:
        return format == ReportFormat::html
                   ? fmt::format("<pre>{}</pre>\n", compat::html_escape(b.text))
               : format == ReportFormat::markdown ? fmt::format("```diff\n{}```\n\n", b.text)
                                                  : b.text + "\n";
      case Block::Kind::table:
        return render_table(b.rows, format);
    }
    return {};
  }

  static std::string render_table(const std::vector<std::vector<std::string>>& rows,
                                  ReportFormat format) {
    std::string out;
    if (rows.empty()) {
      return out;
    }
    if (format == ReportFormat::html) {
      out = "<table>\n";
      for (size_t r = 0; r < rows.size(); ++r) {
        out += "<tr>";
        for (const std::string& cell : rows[r]) {
          std::string_view tag = r == 0 ? "th" : "td";
          out += fmt::format("<{0}>{1}</{0}>", tag, compat::html_escape(cell));
        }
        out += "</tr>\n";
      }
      return out + "</table>\n";
    }
    if (format == ReportFormat::markdown) {
      for (size_t r = 0; r < rows.size(); ++r) {
        out += "|";
        for (const std::string& cell : rows[r]) {
          out += " " + cell + " |";
        }
        out += "\n";
        if (r == 0) {
          out += "|";
          for (size_t c = 0; c < rows[0].size(); ++c) {
            out += "---|";
          }
          out += "\n";
        }
      }
      return out + "\n";
    }
    std::vector<size_t> width(rows[0].size(), 0);
    for (const auto& row : rows) {
      for (size_t c = 0; c < row.size() && c < width.size(); ++c) {
        width[c] = std::max(width[c], row[c].size());
      }
    }
    for (const auto& row : rows) {
      std::string line;
      for (size_t c = 0; c < row.size() && c < width.size(); ++c) {
        line += fmt::format("{:<{}}  ", row[c], width[c]);
      }
      while (!line.empty() && line.back() == ' ') {
        line.pop_back();
      }
      out += line + "\n";
    }
    return out + "\n";
  }

  std::vector<Block> m_blocks;
};

std::string seconds(int64_t ms) {
  return fmt::format("{:.2f} s", static_cast<double>(ms) / 1000);
}

void add_downtime(Doc& doc, const Journal& journal) {
  const JournalEntry* first = journal.find("pause-source");
  if (first == nullptr || first->state != StepState::done) {
    first = journal.find("stop-source");
  }
  const JournalEntry* serving = journal.find("start-target");
  const JournalEntry* apps = journal.find("rewrite-apps");
  doc.heading("Downtime");
  auto ran = [](const JournalEntry* e) {
    return e != nullptr && e->finished_ms > 0 &&
           (e->state == StepState::done || e->state == StepState::undone);
  };
  if (!ran(first) || !ran(serving)) {
    doc.para("not measured: the cutover has not completed");
    return;
  }
  std::string text =
      fmt::format("writes refused from the pause of the source until the target answered: {}",
                  seconds(serving->finished_ms - first->started_ms));
  if (ran(apps)) {
    text += fmt::format("; until the applications pointed at the target: {}",
                        seconds(apps->finished_ms - first->started_ms));
  }
  bool undone = serving->state == StepState::undone;
  doc.para(text + (undone ? " (since rolled back)." : "."));
}

void add_verify(Doc& doc, const std::string& state_dir) {
  doc.heading("Data verification");
  auto text = read_text(fs::path(state_dir) / "verify.json");
  if (!text) {
    doc.para("not run yet");
    return;
  }
  try {
    compat::JsonValue v = compat::parse_json(*text);
    const compat::JsonValue* equal = v.find("equal");
    const compat::JsonValue* keys = v.find("keys_compared");
    const compat::JsonValue* diffs = v.find("differences_total");
    doc.para(fmt::format("{}: {} keys compared, {} differences",
                         equal != nullptr && equal->boolean ? "EQUAL" : "DIFFERENT",
                         keys != nullptr ? static_cast<uint64_t>(keys->number) : 0,
                         diffs != nullptr ? static_cast<uint64_t>(diffs->number) : 0));
  } catch (const compat::JsonError& e) {
    doc.para(fmt::format("verify.json unreadable at byte {}: {}", e.offset, e.what()));
  }
}

void add_bench(Doc& doc, const std::string& state_dir) {
  doc.heading("Benchmark before -> after");
  auto before = read_text(fs::path(state_dir) / "bench-before.json");
  auto after = read_text(fs::path(state_dir) / "bench-after.json");
  if (!before || !after) {
    doc.para(before ? "the run after the move has not happened yet" : "no benchmark run");
    return;
  }
  try {
    compat::Comparison cmp =
        compat::compare_runs(compat::read_saved_run(*before, "bench-before.json"),
                             compat::read_saved_run(*after, "bench-after.json"));
    doc.para(fmt::format("before: {}; after: {}", cmp.before.server, cmp.after.server));
    std::vector<std::vector<std::string>> rows = {
        {"test", "rps before", "rps after", "change", "p50 before", "p50 after"}};
    for (const compat::ComparedTest& t : cmp.tests) {
      rows.push_back({t.name, fmt::format("{:.0f}", t.before.rps),
                      fmt::format("{:.0f}", t.after.rps), fmt::format("{:+.1f}%", t.rps_change_pct),
                      fmt::format("{:.3f} ms", t.before.p50_ms),
                      fmt::format("{:.3f} ms", t.after.p50_ms)});
    }
    doc.table(rows);
  } catch (const std::exception& e) {
    doc.para(std::string("bench runs unreadable: ") + e.what());
  }
}

void add_diffs(Doc& doc, const std::string& state_dir) {
  doc.heading("Config and application changes");
  std::vector<fs::path> runs;
  std::error_code ec;
  for (const auto& group : fs::directory_iterator(fs::path(state_dir) / "backups", ec)) {
    std::error_code ec2;
    for (const auto& run : fs::directory_iterator(group.path(), ec2)) {
      if (fs::exists(run.path() / k_manifest_name)) {
        runs.push_back(run.path());
      }
    }
  }
  std::sort(runs.begin(), runs.end());
  bool any = false;
  for (const fs::path& run : runs) {
    RollbackResult r = rollback_run(run.string(), true, true);
    for (const PlannedFile& f : r.plan.files) {
      // In a check-mode rollback `after` is the backup and `before` is the file now.
      std::string diff = unified_diff(f.after, f.before, f.path + " (before)", f.path + " (after)");
      if (!diff.empty()) {
        doc.pre(redact_secrets(diff));
        any = true;
      }
    }
  }
  if (!any) {
    doc.para(runs.empty() ? "no files written yet" : "the files are as they were (rolled back)");
  }
}

}  // namespace

std::optional<ReportFormat> parse_report_format(std::string_view text) {
  if (text == "text") {
    return ReportFormat::text;
  }
  if (text == "markdown") {
    return ReportFormat::markdown;
  }
  if (text == "html") {
    return ReportFormat::html;
  }
  return std::nullopt;
}

std::string render_migration_report(const MigrationPlan& plan, const Journal& journal,
                                    const std::string& state_dir, ReportFormat format) {
  Doc doc;
  doc.para(fmt::format("{} {} ({}) -> {} {} ({}), {} strategy; plan made {}", plan.source.kind,
                       plan.source.version, plan.source.url, plan.target.kind, plan.target.version,
                       plan.target.url, plan.strategy, plan.created));
  doc.heading("Steps");
  std::vector<std::vector<std::string>> rows = {{"step", "stage", "state", "took", "note"}};
  for (const PlanStep& s : plan.steps) {
    const JournalEntry* e = journal.find(s.name);
    StepState st = e != nullptr ? e->state : StepState::pending;
    std::string took = e != nullptr && e->started_ms > 0 && e->finished_ms >= e->started_ms
                           ? seconds(e->finished_ms - e->started_ms)
                           : "";
    rows.push_back(
        {s.name, s.stage, std::string(step_state_name(st)), took, e != nullptr ? e->message : ""});
  }
  doc.table(rows);
  add_downtime(doc, journal);
  add_verify(doc, state_dir);
  add_bench(doc, state_dir);
  doc.heading("Preflight");
  std::vector<std::vector<std::string>> pre = {{"check", "verdict", "detail"}};
  for (const PreflightCheck& p : plan.preflight) {
    pre.push_back({p.name, p.verdict, p.detail});
  }
  doc.table(pre);
  add_diffs(doc, state_dir);
  return doc.render(format, "keyshift migration report");
}

}  // namespace keyshift::migrate
