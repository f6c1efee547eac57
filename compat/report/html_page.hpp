#pragma once

#include <string>
#include <string_view>

// The page style of keyshift's HTML reports (bench compare; verify and replay to come): one
// self-contained file, no scripts, no external resources, readable on a phone, so a report
// can be mailed or attached to a ticket as it is.
namespace keyshift::compat {

/// `text` made safe for HTML text and quoted attribute values: & < > " ' become entities;
/// bytes a page must not hold (C0 controls but tab and newline, DEL, and every byte of 0x80
/// and above when `text` is not valid UTF-8) are shown as \xNN, so a binary key stays
/// visible and the page stays valid UTF-8.
std::string html_escape(std::string_view text);

/// The style every report page shares: body, headings, .meta lines, the .warning box,
/// tables (in a .scroll box for narrow screens), .faster/.slower verdicts and figure.chart
/// SVG bar charts.
std::string_view html_page_css();

/// The start of a page: doctype, head (charset, viewport, `title` escaped, the shared style
/// followed by `extra_css`), the body's opening and an <h1> of `title`.
std::string html_page_start(std::string_view title, std::string_view extra_css = {});

/// Closes what html_page_start opened.
std::string html_page_end();

}  // namespace keyshift::compat
