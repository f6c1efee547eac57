#pragma once

#include "migrate/plan/plan_model.hpp"
#include "migrate/plan/plan_run.hpp"

#include <string>

// `keyshift migrate report`: what a migration did and the proof, from the journal and the
// files its steps left in the state directory (bench runs, verify's JSON, rewrite backups).
namespace keyshift::migrate {

/// Output formats of the report.
enum class ReportFormat { text, markdown, html };

/// Parses a --format value ("text", "markdown", "html"); nothing for anything else.
std::optional<ReportFormat> parse_report_format(std::string_view text);

/// The report: steps and their times, the measured downtime, the data verification, the
/// bench table (per test requests/s and p50 before -> after, change in %) and the config
/// diffs (secrets redacted). The HTML is one self-contained page.
std::string render_migration_report(const MigrationPlan& plan, const Journal& journal,
                                    const std::string& state_dir, ReportFormat format);

}  // namespace keyshift::migrate
