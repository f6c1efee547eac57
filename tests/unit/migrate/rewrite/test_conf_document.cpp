#include "engine/util/split_args.hpp"
#include "migrate/rewrite/conf_document.hpp"
#include "migrate/rewrite/diff.hpp"
#include "migrate/rewrite/layout.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

namespace m = keyshift::migrate;

TEST_SUITE("migrate::rewrite::conf_document") {
  TEST_CASE("a parsed file renders back byte for byte, CRLF and a missing last newline too") {
    std::string text = "# comment\r\n\r\n  save 900 1\r\nrequirepass \"a b\"\nport 6379";
    auto doc = m::parse_conf_document(text, "x.conf");
    REQUIRE(doc);
    CHECK(doc->render() == text);
    REQUIRE(doc->lines.size() == 5);
    CHECK_FALSE(doc->lines[0].directive);
    CHECK(doc->lines[2].name == "save");
    CHECK(doc->lines[2].args == std::vector<std::string>{"900", "1"});
    CHECK(doc->lines[3].args == std::vector<std::string>{"a b"});
    CHECK(doc->lines[4].eol.empty());
  }

  TEST_CASE("names are lower-cased and a '#' inside a line is not a comment") {
    auto doc = m::parse_conf_document("MaxMemory 1GB\nrequirepass a#b\n", "x.conf");
    REQUIRE(doc);
    CHECK(doc->lines[0].name == "maxmemory");
    CHECK(doc->lines[1].args == std::vector<std::string>{"a#b"});
  }

  TEST_CASE("unbalanced quotes fail with the file and line") {
    auto doc = m::parse_conf_document("port 1\nrequirepass \"open\n", "bad.conf");
    REQUIRE_FALSE(doc);
    CHECK(doc.error().file == "bad.conf");
    CHECK(doc.error().line == 2);
  }

  TEST_CASE("replacing an argument keeps the spacing, or quotes when the value needs it") {
    auto doc = m::parse_conf_document("dir   /var/lib/redis\t# x\nlogfile \"/a b/c\"\n", "x");
    REQUIRE(doc);
    CHECK(m::replace_directive_arg(doc->lines[0], 0, "/var/lib/valkey") ==
          "dir   /var/lib/valkey\t# x");
    CHECK(m::replace_directive_arg(doc->lines[1], 0, "/d") == "logfile /d");
    CHECK(keyshift::engine::quote_arg("") == "\"\"");
    CHECK(keyshift::engine::quote_arg("a\"b\n") == "\"a\\\"b\\n\"");
    CHECK(keyshift::engine::quote_arg("plain") == "plain");
  }
}

TEST_SUITE("migrate::rewrite::conf_document") {
  TEST_CASE("a directive of any bytes reads back with the same arguments") {
    const std::vector<std::string> args{"caf\xc3\xa9", "a b", "", "it's", "\x80\xff\x01", "x\\y"};
    std::string line = m::format_directive("requirepass", args);
    CHECK(line ==
          "requirepass \"caf\\xc3\\xa9\" \"a b\" \"\" \"it's\" \"\\x80\\xff\\x01\" \"x\\\\y\"");
    auto doc = m::parse_conf_document(line + "\n", "x.conf");
    REQUIRE(doc);
    REQUIRE(doc->lines.size() == 1);
    CHECK(doc->lines[0].name == "requirepass");
    CHECK(doc->lines[0].args == args);
  }
}

TEST_SUITE("migrate::rewrite::layout") {
  TEST_CASE("Debian paths move to the valkey package's paths") {
    m::PathMapper debian(m::Layout::debian);
    CHECK(debian.map("/var/lib/redis") == "/var/lib/valkey");
    CHECK(debian.map("/var/log/redis/redis-server.log") == "/var/log/valkey/valkey-server.log");
    CHECK(debian.map("/run/redis/redis-server.sock") == "/run/valkey/valkey-server.sock");
    CHECK(debian.map("/var/run/redis/redis-server.pid") == "/var/run/valkey/valkey-server.pid");
    CHECK(debian.map("/etc/redis/redis.conf") == "/etc/valkey/valkey.conf");
    CHECK(debian.map("/etc/redis/redis-cache.conf") == "/etc/valkey/valkey-cache.conf");
    CHECK(debian.map("/run/redis-cache/redis-server.sock") ==
          "/run/valkey-cache/valkey-server.sock");
    CHECK(debian.map("/etc/redis/users.acl") == "/etc/valkey/users.acl");
    CHECK(debian.map("/etc/ssl/redis.crt") == "/etc/ssl/redis.crt");
    CHECK(debian.map("/var/lib/redisfoo") == "/var/lib/redisfoo");
  }

  TEST_CASE("RHEL paths and explicit maps") {
    m::PathMapper rhel(m::Layout::rhel);
    CHECK(rhel.map("/run/redis/redis.sock") == "/run/valkey/valkey.sock");
    CHECK(rhel.map("/var/log/redis/redis.log") == "/var/log/valkey/valkey.log");
    CHECK(rhel.map("/etc/redis.conf") == "/etc/valkey/valkey.conf");
    m::PathMapper custom(m::Layout::custom, {{"/srv/redis", "/srv/valkey"}, {"/srv", "/x"}});
    CHECK(custom.map("/srv/redis/data") == "/srv/valkey/data");
    CHECK(custom.map("/srv/other") == "/x/other");
    CHECK(custom.map("/var/lib/redis") == "/var/lib/redis");
  }

  TEST_CASE("the layout is detected from the file names a config uses") {
    CHECK(m::detect_layout({"/var/log/redis/redis-server.log"}) == m::Layout::debian);
    CHECK(m::detect_layout({"/run/redis/redis.sock"}) == m::Layout::rhel);
    CHECK_FALSE(m::detect_layout({"/tmp/x.log"}).has_value());
  }
}

TEST_SUITE("migrate::rewrite::diff") {
  TEST_CASE("a unified diff shows the changed line with three lines of context") {
    std::string a = "1\n2\n3\n4\n5\n6\n7\n8\n9\n";
    std::string b = "1\n2\n3\n4\nfive\n6\n7\n8\n9\n";
    CHECK(m::unified_diff(a, b, "a/x", "b/x") ==
          "--- a/x\n+++ b/x\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n");
    CHECK(m::unified_diff(a, a, "a", "b").empty());
  }

  TEST_CASE("distant changes make separate hunks; additions and a missing newline show") {
    std::string a = "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\n";
    std::string b = "A\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\nl";
    std::string d = m::unified_diff(a, b, "x", "y");
    CHECK(d.find("@@ -1,4 +1,4 @@\n-a\n+A\n") != std::string::npos);
    CHECK(d.find("@@ -9,3 +9,4 @@\n i\n j\n k\n+l\n\\ No newline at end of file\n") !=
          std::string::npos);
  }

  TEST_CASE("secrets are redacted in config, PHP, .env and URL forms") {
    CHECK(m::redact_secrets("requirepass \"s3cret pass\"\n") == "requirepass ********\n");
    CHECK(m::redact_secrets("masterauth x\n# requirepass doc\n") ==
          "masterauth ********\n# requirepass doc\n");
    CHECK(m::redact_secrets("user app on >pw #abc ~* +@all\n") ==
          "user app on >******** #******** ~* +@all\n");
    CHECK(m::redact_secrets("define( 'WP_REDIS_PASSWORD', 'pw' );") ==
          "define( 'WP_REDIS_PASSWORD', '********' );");
    CHECK(m::redact_secrets("    'password' => \"pw\",") == "    'password' => \"********\",");
    CHECK(m::redact_secrets("REDIS_PASSWORD=\"pw\"\nREDIS_PASSWORD=null\n") ==
          "REDIS_PASSWORD=\"********\"\nREDIS_PASSWORD=null\n");
    CHECK(m::redact_secrets("REDIS_URL=redis://u:pw@h:1/0") ==
          "REDIS_URL=redis://u:********@h:1/0");
    CHECK(m::redact_secrets("x = \"tcp://h:1?auth=pw&db=1\"") ==
          "x = \"tcp://h:1?auth=********&db=1\"");
    CHECK(m::redact_secrets("'tcp://h:1?database=0&password=pw'") ==
          "'tcp://h:1?database=0&password=********'");
    CHECK(m::redact_secrets("define( 'WP_REDIS_PASSWORD', [ 'user', 'pw' ] );") ==
          "define( 'WP_REDIS_PASSWORD', [ '********', '********' ] );");
    CHECK(m::redact_secrets("  password: s3cret\n") == "  password: ********\n");
    CHECK(m::redact_secrets("    password: \"pw\",\n") == "    password: \"********\",\n");
    CHECK(m::redact_secrets("\"PASSWORD\": \"pw\"") == "\"PASSWORD\": \"********\"");
  }
}
