#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

// `keyshift bench compare`: two saved runs (--json files) side by side, per test, with the
// change in requests/s and latency and which way it went.
namespace keyshift::compat {

/// One test of a saved run, as far as comparisons need it.
struct SavedTest {
  std::string name;
  double rps = 0;
  double p50_ms = 0;
  double p99_ms = 0;
};

/// A saved run: where it came from, the settings that must match, and the tests.
struct SavedRun {
  std::string file;
  std::string started_at;
  std::string server;  // "redis 7.0.15 at 127.0.0.1:6379 (tcp)"
  std::vector<std::pair<std::string, std::string>> settings;  // name, value as text
  std::vector<SavedTest> tests;
};

/// Reads a --json file; throws BenchError naming `file` and the byte offset or member.
SavedRun read_saved_run(std::string_view json, const std::string& file);

/// Which way a change went.
enum class Direction : uint8_t { faster, slower, same, only_before, only_after };

/// One row of the comparison.
struct ComparedTest {
  std::string name;
  SavedTest before;
  SavedTest after;
  double rps_change_pct = 0;  // (after - before) / before * 100
  Direction direction = Direction::same;
};

/// The whole comparison.
struct Comparison {
  SavedRun before;
  SavedRun after;
  std::vector<std::string> differences;  // "clients: 50 -> 100"; empty when comparable
  std::vector<ComparedTest> tests;
};

/// Changes of requests/s within this many percent count as "same" (run-to-run noise).
inline constexpr double k_same_band_pct = 2.0;

/// Pairs the tests by name (before's order, then tests only in after).
Comparison compare_runs(const SavedRun& before, const SavedRun& after);

/// Output formats of the comparison.
enum class CompareFormat : uint8_t { text, markdown, csv, json, html };

/// Parses a --format value; throws BenchError on anything else.
CompareFormat parse_compare_format(std::string_view text);

/// Renders the comparison. The HTML is one self-contained page (inline CSS and SVG bar
/// charts, no scripts, no network) that reads on a phone.
std::string render_comparison(const Comparison& cmp, CompareFormat format);

}  // namespace keyshift::compat
