#include "compat/report/html_page.hpp"

#include <doctest/doctest.h>

#include <string>

using keyshift::compat::html_escape;
using keyshift::compat::html_page_css;
using keyshift::compat::html_page_end;
using keyshift::compat::html_page_start;

TEST_SUITE("compat::html_page") {
  TEST_CASE("markup characters become entities and plain text stays as it is") {
    CHECK(html_escape("a<b>&\"c'd") == "a&lt;b&gt;&amp;&quot;c&#39;d");
    CHECK(html_escape("SET key:1 value\twith tab\n") == "SET key:1 value\twith tab\n");
    CHECK(html_escape("") == "");
  }

  TEST_CASE("valid UTF-8 passes through while binary bytes are shown as \\xNN") {
    CHECK(html_escape("caf\xc3\xa9 \xe2\x86\x92") == "caf\xc3\xa9 \xe2\x86\x92");
    // One invalid byte makes the whole text binary: every high byte is shown escaped.
    CHECK(html_escape("caf\xc3\xa9\xff") == "caf\\xc3\\xa9\\xff");
    CHECK(html_escape(std::string("a\0b\x1b\x7f", 5)) == "a\\x00b\\x1b\\x7f");
  }

  TEST_CASE("a page opens with the escaped title and the shared style, then the extra style") {
    std::string page = html_page_start("run <1> & 2", ".x{color:red}\n");
    CHECK(
        page.starts_with("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">"));
    CHECK(page.find("<title>run &lt;1&gt; &amp; 2</title>") != std::string::npos);
    CHECK(page.find("<h1>run &lt;1&gt; &amp; 2</h1>") != std::string::npos);
    size_t css = page.find(std::string(html_page_css()));
    size_t extra = page.find(".x{color:red}\n</style>");
    REQUIRE(css != std::string::npos);
    REQUIRE(extra != std::string::npos);
    CHECK(css < extra);
    CHECK(page.find("<script") == std::string::npos);
    CHECK(page.ends_with("<body>\n<h1>run &lt;1&gt; &amp; 2</h1>\n"));
  }

  TEST_CASE("the end closes the body and the document") {
    CHECK(html_page_end() == "</body>\n</html>\n");
  }

  TEST_CASE("the shared style covers tables, warnings, verdicts and charts") {
    std::string css(html_page_css());
    for (const char* rule : {"table{", ".warning{", ".meta{", ".faster{", ".slower{",
                             "figure.chart{", "svg.bars{", "@media (max-width:40rem)"}) {
      CHECK_MESSAGE(css.find(rule) != std::string::npos, rule);
    }
  }
}
