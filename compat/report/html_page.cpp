#include "compat/report/html_page.hpp"

#include "compat/report/json_text.hpp"

#include <fmt/core.h>

namespace keyshift::compat {

std::string html_escape(std::string_view text) {
  bool utf8 = is_valid_utf8(text);
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    auto b = static_cast<unsigned char>(c);
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        if ((b < 0x20 && c != '\t' && c != '\n') || b == 0x7f || (b >= 0x80 && !utf8)) {
          out += fmt::format("\\x{:02x}", b);
        } else {
          out += c;
        }
    }
  }
  return out;
}

std::string_view html_page_css() {
  return "body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:1rem;"
         "color:#1f2328;background:#fff;max-width:60rem}\n"
         "h1{font-size:1.4rem}\n.meta{font-size:.9rem;color:#57606a}\n"
         ".warning{border:2px solid #cf222e;background:#ffebe9;padding:.5rem 1rem;"
         "font-weight:bold}\n"
         ".scroll{overflow-x:auto}\ntable{border-collapse:collapse;font-size:.9rem}\n"
         "th,td{border:1px solid #d0d7de;padding:.3rem .5rem;text-align:right;"
         "white-space:nowrap}\n"
         "td:first-child{white-space:normal;min-width:7rem}\n"
         "@media (max-width:40rem){body{margin:.5rem}table{font-size:.75rem}"
         "th,td{padding:.2rem .3rem}th{white-space:normal}}\n"
         "th:first-child,td:first-child{text-align:left}\n"
         ".faster{color:#1a7f37;font-weight:bold}\n.slower{color:#cf222e;font-weight:bold}\n"
         "figure.chart{margin:1.5rem 0}\nfigcaption{font-weight:bold;margin-bottom:.3rem}\n"
         "svg.bars{max-width:40rem;display:block}\n";
}

std::string html_page_start(std::string_view title, std::string_view extra_css) {
  std::string escaped = html_escape(title);
  return fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      "<title>{}</title>\n<style>\n{}{}</style>\n</head>\n<body>\n<h1>{}</h1>\n",
      escaped, html_page_css(), extra_css, escaped);
}

std::string html_page_end() {
  return "</body>\n</html>\n";
}

}  // namespace keyshift::compat
