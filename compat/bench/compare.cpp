#include "compat/bench/compare.hpp"

#include "compat/bench/load.hpp"
#include "compat/report/html_page.hpp"
#include "compat/report/json_text.hpp"
#include "compat/report/json_value.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>

namespace keyshift::compat {
namespace {

/// The options that shape the load; two runs compare only when they agree on all of them.
constexpr std::string_view k_compared_options[] = {
    "mode",      "transport", "clients",  "threads", "pipeline", "requests",
    "test_time", "data_size", "keyspace", "dbnum",   "command"};
constexpr std::string_view k_compared_workload[] = {"ratio", "key_pattern", "key_minimum",
                                                    "key_maximum", "prefill"};

std::string value_text(const JsonValue& v) {
  switch (v.type) {
    case JsonValue::Type::null:
      return "none";
    case JsonValue::Type::boolean:
      return v.boolean ? "true" : "false";
    case JsonValue::Type::number:
      if (v.number == std::floor(v.number) && std::fabs(v.number) < 1e15) {
        return fmt::format("{}", static_cast<int64_t>(v.number));
      }
      return fmt::format("{:g}", v.number);
    case JsonValue::Type::string:
      return v.string;
    case JsonValue::Type::array: {
      std::string out;
      for (const auto& e : v.array) {
        out += out.empty() ? "" : " ";
        out += value_text(e);
      }
      return out;
    }
    case JsonValue::Type::object:
      return "{...}";
  }
  return "";
}

const JsonValue& member(const JsonValue& obj, std::string_view key, JsonValue::Type type,
                        const std::string& file, std::string_view where) {
  const JsonValue* v = obj.find(key);
  if (v == nullptr || v->type != type) {
    throw BenchError(
        fmt::format("{}: not a keyshift bench --json file: {}{} is missing or has "
                    "the wrong type",
                    file, where, key));
  }
  return *v;
}

double number_or_zero(const JsonValue& obj, std::string_view key) {
  const JsonValue* v = obj.find(key);
  return v != nullptr && v->type == JsonValue::Type::number ? v->number : 0;
}

std::string text_or(const JsonValue& obj, std::string_view key, std::string fallback) {
  const JsonValue* v = obj.find(key);
  return v != nullptr && v->type == JsonValue::Type::string ? v->string : fallback;
}

const char* direction_word(Direction d) {
  switch (d) {
    case Direction::faster:
      return "faster";
    case Direction::slower:
      return "slower";
    case Direction::same:
      return "same";
    case Direction::only_before:
      return "only before";
    case Direction::only_after:
      return "only after";
  }
  return "";
}

bool both(const ComparedTest& t) {
  return t.direction != Direction::only_before && t.direction != Direction::only_after;
}

std::string num(double v, int decimals) {
  return fmt::format("{:.{}f}", v, decimals);
}

std::string change_text(const ComparedTest& t) {
  if (!both(t)) {
    return "-";
  }
  return fmt::format("{:+.1f}%", t.rps_change_pct);
}

std::string pair_text(const ComparedTest& t, double SavedTest::*field, int decimals) {
  std::string b = t.direction == Direction::only_after ? "-" : num(t.before.*field, decimals);
  std::string a = t.direction == Direction::only_before ? "-" : num(t.after.*field, decimals);
  return b + " -> " + a;
}

std::string settings_line(const SavedRun& run) {
  std::string out;
  for (const auto& [k, v] : run.settings) {
    out += out.empty() ? "" : ", ";
    out += k + " " + v;
  }
  return out;
}

std::string render_text(const Comparison& c) {
  std::string out = "keyshift bench compare\n";
  out +=
      fmt::format("  before: {} ({}, {})\n", c.before.file, c.before.server, c.before.started_at);
  out += fmt::format("  after:  {} ({}, {})\n", c.after.file, c.after.server, c.after.started_at);
  out += fmt::format("  settings: {}\n", settings_line(c.before));
  for (const auto& d : c.differences) {
    out += fmt::format("  WARNING: settings differ: {}\n", d);
  }
  size_t w = 4;
  for (const auto& t : c.tests) {
    w = std::max(w, t.name.size());
  }
  out +=
      fmt::format("\n{:<{}}  {:>12}  {:>12}  {:>8}  {:>20}  {:>20}  {}\n", "test", w, "rps before",
                  "rps after", "change", "p50 ms before->after", "p99 ms before->after", "verdict");
  for (const auto& t : c.tests) {
    std::string rb = t.direction == Direction::only_after ? "-" : num(t.before.rps, 2);
    std::string ra = t.direction == Direction::only_before ? "-" : num(t.after.rps, 2);
    out += fmt::format("{:<{}}  {:>12}  {:>12}  {:>8}  {:>20}  {:>20}  {}\n", t.name, w, rb, ra,
                       change_text(t), pair_text(t, &SavedTest::p50_ms, 3),
                       pair_text(t, &SavedTest::p99_ms, 3), direction_word(t.direction));
  }
  out += fmt::format("\nverdict: requests/s change beyond +/-{:.0f}% (faster: more requests/s)\n",
                     k_same_band_pct);
  return out;
}

std::string render_markdown(const Comparison& c) {
  std::string out = "## keyshift bench compare\n\n";
  out += fmt::format("- **before**: `{}` ({}, {})\n", c.before.file, c.before.server,
                     c.before.started_at);
  out +=
      fmt::format("- **after**: `{}` ({}, {})\n", c.after.file, c.after.server, c.after.started_at);
  out += fmt::format("- **settings**: {}\n", settings_line(c.before));
  if (!c.differences.empty()) {
    out += "\n> **WARNING: the runs' settings differ, the numbers are not comparable:**\n";
    for (const auto& d : c.differences) {
      out += fmt::format("> - {}\n", d);
    }
  }
  out +=
      "\n| test | requests/s before | requests/s after | change | p50 ms (before → after) "
      "| p99 ms (before → after) | verdict |\n";
  out += "|---|---:|---:|---:|---:|---:|---|\n";
  for (const auto& t : c.tests) {
    std::string rb = t.direction == Direction::only_after ? "-" : num(t.before.rps, 2);
    std::string ra = t.direction == Direction::only_before ? "-" : num(t.after.rps, 2);
    std::string p50 = pair_text(t, &SavedTest::p50_ms, 3);
    std::string p99 = pair_text(t, &SavedTest::p99_ms, 3);
    out += fmt::format("| {} | {} | {} | {} | {} | {} | {} |\n", t.name, rb, ra, change_text(t),
                       p50.replace(p50.find(" -> "), 4, " → "),
                       p99.replace(p99.find(" -> "), 4, " → "),
                       t.direction == Direction::faster   ? "**faster**"
                       : t.direction == Direction::slower ? "**slower**"
                                                          : direction_word(t.direction));
  }
  return out;
}

std::string csv_field(std::string_view text) {
  std::string out = "\"";
  for (char ch : text) {
    out += ch;
    if (ch == '"') {
      out += '"';
    }
  }
  return out + "\"";
}

std::string render_csv(const Comparison& c) {
  std::string out =
      "test,rps_before,rps_after,rps_change_pct,p50_before_ms,p50_after_ms,p99_before_ms,"
      "p99_after_ms,verdict,settings_match\n";
  for (const auto& t : c.tests) {
    bool has_b = t.direction != Direction::only_after;
    bool has_a = t.direction != Direction::only_before;
    out += fmt::format("{},{},{},{},{},{},{},{},{},{}\n", csv_field(t.name),
                       has_b ? num(t.before.rps, 2) : "", has_a ? num(t.after.rps, 2) : "",
                       both(t) ? num(t.rps_change_pct, 2) : "",
                       has_b ? num(t.before.p50_ms, 3) : "", has_a ? num(t.after.p50_ms, 3) : "",
                       has_b ? num(t.before.p99_ms, 3) : "", has_a ? num(t.after.p99_ms, 3) : "",
                       direction_word(t.direction), c.differences.empty() ? "yes" : "no");
  }
  return out;
}

void append_run_json(std::string& out, const SavedRun& r) {
  out += "{\"file\": ";
  append_json_string(out, r.file);
  out += ", \"server\": ";
  append_json_string(out, r.server);
  out += ", \"started_at\": ";
  append_json_string(out, r.started_at);
  out += "}";
}

std::string render_json(const Comparison& c) {
  std::string out = "{\n  \"before\": ";
  append_run_json(out, c.before);
  out += ",\n  \"after\": ";
  append_run_json(out, c.after);
  out += ",\n  \"settings_differ\": [";
  for (size_t i = 0; i < c.differences.size(); ++i) {
    out += i == 0 ? "" : ", ";
    append_json_string(out, c.differences[i]);
  }
  out += fmt::format("],\n  \"same_band_pct\": {:.1f},\n  \"tests\": [", k_same_band_pct);
  for (size_t i = 0; i < c.tests.size(); ++i) {
    const ComparedTest& t = c.tests[i];
    bool has_b = t.direction != Direction::only_after;
    bool has_a = t.direction != Direction::only_before;
    out += i == 0 ? "\n    {\"name\": " : ",\n    {\"name\": ";
    append_json_string(out, t.name);
    out += fmt::format(
        ", \"rps_before\": {}, \"rps_after\": {}, \"rps_change_pct\": {}, "
        "\"p50_before_ms\": {}, \"p50_after_ms\": {}, \"p99_before_ms\": {}, "
        "\"p99_after_ms\": {}, \"verdict\": \"{}\"}}",
        has_b ? num(t.before.rps, 2) : "null", has_a ? num(t.after.rps, 2) : "null",
        both(t) ? num(t.rps_change_pct, 2) : "null", has_b ? num(t.before.p50_ms, 3) : "null",
        has_a ? num(t.after.p50_ms, 3) : "null", has_b ? num(t.before.p99_ms, 3) : "null",
        has_a ? num(t.after.p99_ms, 3) : "null", direction_word(t.direction));
  }
  out += "\n  ]\n}\n";
  return out;
}

/// One horizontal grouped bar chart (before/after per test) as inline SVG. Each test's name
/// sits on its own line above its bars, so long names need no label column and the chart
/// stays readable when a phone scales it down.
std::string svg_chart(const Comparison& c, const std::string& title, double SavedTest::*field,
                      int decimals, bool higher_is_better) {
  constexpr int k_left = 4;
  constexpr int k_bar_area = 300;
  constexpr int k_width = k_left + k_bar_area + 80;
  constexpr int k_label_h = 16;
  constexpr int k_bar_h = 14;
  constexpr int k_group_h = k_label_h + 2 * k_bar_h + 12;
  double max = 0;
  for (const auto& t : c.tests) {
    max = std::max({max, t.before.*field, t.after.*field});
  }
  if (max <= 0) {
    max = 1;
  }
  int height = 26 + static_cast<int>(c.tests.size()) * k_group_h;
  std::string out = fmt::format(
      "<figure class=\"chart\"><figcaption>{} <small>({})</small></figcaption>\n"
      "<svg class=\"bars\" role=\"img\" aria-label=\"{}\" viewBox=\"0 0 {} {}\" "
      "width=\"100%\" preserveAspectRatio=\"xMinYMin meet\" "
      "xmlns=\"http://www.w3.org/2000/svg\">\n",
      html_escape(title), higher_is_better ? "longer is better" : "shorter is better",
      html_escape(title), k_width, height);
  out += fmt::format(
      "<rect x=\"{}\" y=\"4\" width=\"12\" height=\"12\" fill=\"#9aa5b1\"/>"
      "<text x=\"{}\" y=\"14\" font-size=\"12\">before</text>"
      "<rect x=\"{}\" y=\"4\" width=\"12\" height=\"12\" fill=\"#1f6feb\"/>"
      "<text x=\"{}\" y=\"14\" font-size=\"12\">after</text>\n",
      k_left, k_left + 16, k_left + 80, k_left + 96);
  int y = 26;
  for (const auto& t : c.tests) {
    out += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"12\" font-weight=\"bold\">{}</text>\n",
                       k_left, y + 12, html_escape(t.name));
    const std::pair<const char*, const SavedTest*> bars[] = {
        {"#9aa5b1", t.direction == Direction::only_after ? nullptr : &t.before},
        {"#1f6feb", t.direction == Direction::only_before ? nullptr : &t.after}};
    int by = y + k_label_h;
    for (const auto& [color, test] : bars) {
      if (test != nullptr) {
        double v = test->*field;
        int w = static_cast<int>(std::lround(v / max * k_bar_area));
        out += fmt::format(
            "<rect class=\"bar\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" "
            "fill=\"{}\"/><text x=\"{}\" y=\"{}\" font-size=\"11\">{}</text>\n",
            k_left, by, std::max(w, 1), k_bar_h, color, k_left + w + 4, by + k_bar_h - 3,
            num(v, decimals));
      }
      by += k_bar_h + 2;
    }
    y += k_group_h;
  }
  out += "</svg></figure>\n";
  return out;
}

std::string render_html(const Comparison& c) {
  std::string out = html_page_start("keyshift bench compare");
  out += fmt::format(
      "<p class=\"meta\">before: <b>{}</b> ({}, {})<br>after: <b>{}</b> ({}, "
      "{})<br>settings: {}</p>\n",
      html_escape(c.before.file), html_escape(c.before.server), html_escape(c.before.started_at),
      html_escape(c.after.file), html_escape(c.after.server), html_escape(c.after.started_at),
      html_escape(settings_line(c.before)));
  if (!c.differences.empty()) {
    out +=
        "<div class=\"warning\" id=\"settings-differ\">WARNING: the runs' settings differ, "
        "the numbers are not comparable:<ul>\n";
    for (const auto& d : c.differences) {
      out += fmt::format("<li>{}</li>\n", html_escape(d));
    }
    out += "</ul></div>\n";
  }
  out +=
      "<div class=\"scroll\"><table id=\"comparison\">\n<thead><tr><th>test</th>"
      "<th>requests/s before</th><th>requests/s after</th><th>change</th>"
      "<th>p50 ms before → after</th><th>p99 ms before → after</th><th>verdict</th></tr>"
      "</thead>\n<tbody>\n";
  for (const auto& t : c.tests) {
    std::string rb = t.direction == Direction::only_after ? "-" : num(t.before.rps, 2);
    std::string ra = t.direction == Direction::only_before ? "-" : num(t.after.rps, 2);
    std::string p50 = pair_text(t, &SavedTest::p50_ms, 3);
    std::string p99 = pair_text(t, &SavedTest::p99_ms, 3);
    out += fmt::format(
        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
        "<td class=\"{}\">{}</td></tr>\n",
        html_escape(t.name), rb, ra, change_text(t), p50.replace(p50.find(" -> "), 4, " → "),
        p99.replace(p99.find(" -> "), 4, " → "),
        t.direction == Direction::faster   ? "faster"
        : t.direction == Direction::slower ? "slower"
                                           : "same",
        direction_word(t.direction));
  }
  out += "</tbody></table></div>\n";
  out += fmt::format("<p class=\"meta\">verdict: requests/s change beyond ±{:.0f}%.</p>\n",
                     k_same_band_pct);
  out += svg_chart(c, "Requests per second", &SavedTest::rps, 0, true);
  out += svg_chart(c, "p50 latency (ms)", &SavedTest::p50_ms, 3, false);
  out += svg_chart(c, "p99 latency (ms)", &SavedTest::p99_ms, 3, false);
  out += html_page_end();
  return out;
}

}  // namespace

SavedRun read_saved_run(std::string_view json, const std::string& file) {
  JsonValue doc;
  try {
    doc = parse_json(json);
  } catch (const JsonError& e) {
    throw BenchError(fmt::format("{}: error at byte {}: {}", file, e.offset, e.what()));
  }
  if (doc.type != JsonValue::Type::object || text_or(doc, "format", "") != "keyshift-bench") {
    throw BenchError(
        fmt::format("{}: not a keyshift bench --json file (no \"format\": "
                    "\"keyshift-bench\")",
                    file));
  }
  if (number_or_zero(doc, "version") != 1) {
    throw BenchError(fmt::format("{}: unsupported keyshift bench file version", file));
  }
  SavedRun run;
  run.file = file;
  run.started_at = text_or(doc, "started_at", "");
  const JsonValue& options = member(doc, "options", JsonValue::Type::object, file, "");
  for (std::string_view key : k_compared_options) {
    const JsonValue* v = options.find(key);
    run.settings.emplace_back(std::string(key), v == nullptr ? "none" : value_text(*v));
  }
  const JsonValue* workload = options.find("workload");
  if (workload != nullptr && workload->type == JsonValue::Type::object) {
    for (std::string_view key : k_compared_workload) {
      const JsonValue* v = workload->find(key);
      run.settings.emplace_back(std::string(key), v == nullptr ? "none" : value_text(*v));
    }
  }
  const JsonValue& target = member(doc, "target", JsonValue::Type::object, file, "");
  run.server = fmt::format("{} {} at {} ({})", text_or(target, "server_name", "?"),
                           text_or(target, "server_version", "?"), text_or(options, "target", "?"),
                           text_or(options, "transport", "?"));
  const JsonValue& tests = member(doc, "tests", JsonValue::Type::array, file, "");
  for (size_t i = 0; i < tests.array.size(); ++i) {
    const JsonValue& t = tests.array[i];
    std::string where = fmt::format("tests[{}].", i);
    SavedTest st;
    st.name = member(t, "name", JsonValue::Type::string, file, where).string;
    st.rps = member(t, "rps", JsonValue::Type::number, file, where).number;
    const JsonValue& lat = member(t, "latency_ms", JsonValue::Type::object, file, where);
    st.p50_ms = member(lat, "p50", JsonValue::Type::number, file, where + "latency_ms.").number;
    st.p99_ms = member(lat, "p99", JsonValue::Type::number, file, where + "latency_ms.").number;
    run.tests.push_back(std::move(st));
  }
  return run;
}

Comparison compare_runs(const SavedRun& before, const SavedRun& after) {
  Comparison c;
  c.before = before;
  c.after = after;
  for (const auto& [k, v] : before.settings) {
    std::string other = "none";
    for (const auto& [k2, v2] : after.settings) {
      if (k2 == k) {
        other = v2;
      }
    }
    if (other != v) {
      c.differences.push_back(fmt::format("{}: {} -> {}", k, v, other));
    }
  }
  for (const auto& [k2, v2] : after.settings) {
    bool known = std::any_of(before.settings.begin(), before.settings.end(),
                             [&k2](const auto& p) { return p.first == k2; });
    if (!known) {
      c.differences.push_back(fmt::format("{}: none -> {}", k2, v2));
    }
  }
  for (const auto& b : before.tests) {
    ComparedTest t;
    t.name = b.name;
    t.before = b;
    auto it = std::find_if(after.tests.begin(), after.tests.end(),
                           [&b](const SavedTest& a) { return a.name == b.name; });
    if (it == after.tests.end()) {
      t.direction = Direction::only_before;
    } else {
      t.after = *it;
      t.rps_change_pct = b.rps > 0 ? (it->rps - b.rps) / b.rps * 100.0 : 0;
      t.direction = t.rps_change_pct > k_same_band_pct    ? Direction::faster
                    : t.rps_change_pct < -k_same_band_pct ? Direction::slower
                                                          : Direction::same;
    }
    c.tests.push_back(std::move(t));
  }
  for (const auto& a : after.tests) {
    bool seen = std::any_of(before.tests.begin(), before.tests.end(),
                            [&a](const SavedTest& b) { return b.name == a.name; });
    if (!seen) {
      ComparedTest t;
      t.name = a.name;
      t.after = a;
      t.direction = Direction::only_after;
      c.tests.push_back(std::move(t));
    }
  }
  return c;
}

CompareFormat parse_compare_format(std::string_view text) {
  if (text == "text") {
    return CompareFormat::text;
  }
  if (text == "markdown") {
    return CompareFormat::markdown;
  }
  if (text == "csv") {
    return CompareFormat::csv;
  }
  if (text == "json") {
    return CompareFormat::json;
  }
  if (text == "html") {
    return CompareFormat::html;
  }
  throw BenchError(fmt::format("unknown format '{}': use text, markdown, csv, json or html", text));
}

std::string render_comparison(const Comparison& cmp, CompareFormat format) {
  switch (format) {
    case CompareFormat::markdown:
      return render_markdown(cmp);
    case CompareFormat::csv:
      return render_csv(cmp);
    case CompareFormat::json:
      return render_json(cmp);
    case CompareFormat::html:
      return render_html(cmp);
    case CompareFormat::text:
      break;
  }
  return render_text(cmp);
}

}  // namespace keyshift::compat
