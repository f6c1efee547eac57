#include "tests/unit/test_paths.hpp"

#include "engine/server/config_file.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <vector>

namespace {

using keyshift::engine::CommandLine;
using keyshift::engine::Directive;
using keyshift::engine::k_command_line_source;
using keyshift::engine::k_stdin_source;
using keyshift::engine::load_config;
using keyshift::engine::MemoryConfigFilesystem;
using keyshift::engine::parse_command_line;
using keyshift::engine::parse_config_text;
using keyshift::engine::parse_memory;
using keyshift::engine::read_config_file;
using keyshift::engine::RealConfigFilesystem;
using Words = std::vector<std::string>;

std::vector<Directive> parse_ok(std::string_view text) {
  auto parsed = parse_config_text(text, "test.conf");
  REQUIRE(parsed);
  return *parsed;
}

Words names(const std::vector<Directive>& directives) {
  Words out;
  for (const Directive& directive : directives) {
    out.push_back(directive.name);
  }
  return out;
}

CommandLine command_line(const Words& args) {
  auto parsed = parse_command_line(args);
  REQUIRE(parsed);
  return *parsed;
}

std::string repo_data_file(std::string_view name) {
  // Not __FILE__: compiler caches may make it relative to the build directory.
  return (test::repo_dir() / "tests/data" / name).string();
}

}  // namespace

TEST_SUITE("engine::config_file") {
  TEST_CASE("comments and blank lines are skipped and lines keep their numbers") {
    auto directives = parse_ok(
        "# a comment\n"
        "\n"
        "   \t\n"
        "port 7000\n"
        "   # indented comment\n"
        "  timeout   30  \n");
    REQUIRE(directives.size() == 2);
    CHECK(directives[0].name == "port");
    CHECK(directives[0].args == Words{"7000"});
    CHECK(directives[0].line == 4);
    CHECK(directives[0].file == "test.conf");
    CHECK(directives[0].text == "port 7000");
    CHECK(directives[1].name == "timeout");
    CHECK(directives[1].args == Words{"30"});
    CHECK(directives[1].line == 6);
  }

  TEST_CASE("directive names are lower-cased but arguments keep their case") {
    auto directives = parse_ok("MaxMemory-Policy AllKeys-LRU\nREQUIREPASS SeCrEt\n");
    CHECK(names(directives) == Words{"maxmemory-policy", "requirepass"});
    CHECK(directives[0].args == Words{"AllKeys-LRU"});
    CHECK(directives[1].args == Words{"SeCrEt"});
  }

  TEST_CASE("a hash inside a line is an ordinary character") {
    auto directives = parse_ok("requirepass pa#ss\nsave 900 1 # trailing\n");
    CHECK(directives[0].args == Words{"pa#ss"});
    CHECK(directives[1].args == Words{"900", "1", "#", "trailing"});
  }

  TEST_CASE("windows line endings are trimmed") {
    auto directives = parse_ok("port 7000\r\ndir /tmp\r\n");
    CHECK(directives[0].args == Words{"7000"});
    CHECK(directives[1].args == Words{"/tmp"});
  }

  TEST_CASE("double quotes take escapes and keep blanks") {
    auto directives = parse_ok(R"(requirepass "a b\tc\nd\x41\x7a\"q\\s\r\a\b\z")"
                               "\n");
    CHECK(directives[0].args == Words{"a b\tc\nd"
                                      "Az\"q\\s\r\a\bz"});
  }

  TEST_CASE("a backslash-x without two hex digits is taken literally") {
    auto directives = parse_ok(R"(requirepass "\xZZ\x4")");
    CHECK(directives[0].args == Words{"xZZx4"});
  }

  TEST_CASE("single quotes take only the quote escape") {
    auto directives = parse_ok(R"(requirepass 'it\'s \n "raw"')");
    CHECK(directives[0].args == Words{R"(it's \n "raw")"});
  }

  TEST_CASE("empty quotes give an empty argument") {
    auto directives = parse_ok("save \"\"\nlogfile ''\n");
    CHECK(directives[0].args == Words{""});
    CHECK(directives[1].args == Words{""});
  }

  TEST_CASE("a quote inside a word opens a quoted part of that word") {
    auto directives = parse_ok(R"(requirepass foo"bar baz")");
    CHECK(directives[0].args == Words{"foobar baz"});
  }

  TEST_CASE("unbalanced quotes are an error naming the file and line") {
    for (std::string_view line :
         {"requirepass \"open", "requirepass 'open", "requirepass \"a\"b", "requirepass 'a'b"}) {
      CAPTURE(line);
      auto parsed = parse_config_text(std::string("port 1\n") + std::string(line) + "\n", "x.conf");
      REQUIRE_FALSE(parsed);
      CHECK(parsed.error().file == "x.conf");
      CHECK(parsed.error().line == 2);
      CHECK(parsed.error().message == "Unbalanced quotes in configuration line");
      CHECK(parsed.error().text == line);
    }
  }

  TEST_CASE("repeated and multi-argument directives are all kept in order") {
    auto directives = parse_ok(
        "save 3600 1\nsave 300 100\nbind 127.0.0.1 ::1\n"
        "client-output-buffer-limit replica 256mb 64mb 60\n");
    CHECK(names(directives) == Words{"save", "save", "bind", "client-output-buffer-limit"});
    CHECK(directives[1].args == Words{"300", "100"});
    CHECK(directives[2].args == Words{"127.0.0.1", "::1"});
    CHECK(directives[3].args.size() == 4);
  }

  TEST_CASE("a file without a final newline still yields its last line") {
    CHECK(parse_ok("port 1\nhz 20").size() == 2);
    CHECK(parse_ok("").empty());
  }

  TEST_CASE("include inserts the named file in place") {
    MemoryConfigFilesystem fs("/etc/valkey");
    fs.add_file("/etc/valkey/valkey.conf", "port 1\ninclude /etc/valkey/extra.conf\nhz 20\n");
    fs.add_file("/etc/valkey/extra.conf", "# extra\ntimeout 5\nmaxmemory 1gb\n");
    auto directives = read_config_file(fs, "/etc/valkey/valkey.conf");
    REQUIRE(directives);
    CHECK(names(*directives) == Words{"port", "timeout", "maxmemory", "hz"});
    CHECK((*directives)[1].file == "/etc/valkey/extra.conf");
    CHECK((*directives)[1].line == 2);
    CHECK((*directives)[3].file == "/etc/valkey/valkey.conf");
    CHECK((*directives)[3].line == 3);
  }

  TEST_CASE("include patterns take every match in sorted order") {
    MemoryConfigFilesystem fs;
    fs.add_file("/etc/valkey/valkey.conf", "include /etc/valkey/conf.d/*.conf\nport 9\n");
    fs.add_file("/etc/valkey/conf.d/20-memory.conf", "maxmemory 2gb\n");
    fs.add_file("/etc/valkey/conf.d/10-net.conf", "port 7000\n");
    fs.add_file("/etc/valkey/conf.d/README", "not a config\n");
    fs.add_file("/etc/valkey/conf.d/.hidden.conf", "bogus\n");
    fs.add_file("/etc/valkey/conf.d/sub/30-deep.conf", "hz 1\n");
    auto directives = read_config_file(fs, "/etc/valkey/valkey.conf");
    REQUIRE(directives);
    CHECK(names(*directives) == Words{"port", "maxmemory", "port"});
    CHECK((*directives)[0].file == "/etc/valkey/conf.d/10-net.conf");
    CHECK((*directives)[1].file == "/etc/valkey/conf.d/20-memory.conf");
  }

  TEST_CASE("include patterns with ? and brackets work and may match nothing") {
    MemoryConfigFilesystem fs;
    fs.add_file("/c/a1.conf", "port 1\n");
    fs.add_file("/c/a2.conf", "port 2\n");
    fs.add_file("/c/b1.conf", "port 3\n");
    fs.add_file("/main.conf",
                "include /c/a?.conf\ninclude /c/[b]1.conf\ninclude /empty.d/*.conf\n");
    auto directives = read_config_file(fs, "/main.conf");
    REQUIRE(directives);
    REQUIRE(directives->size() == 3);
    CHECK((*directives)[2].args == Words{"3"});
  }

  TEST_CASE("a missing plain include is an error at the include line") {
    MemoryConfigFilesystem fs;
    fs.add_file("/main.conf", "port 1\n\ninclude /nope.conf\n");
    auto directives = read_config_file(fs, "/main.conf");
    REQUIRE_FALSE(directives);
    CHECK(directives.error().file == "/main.conf");
    CHECK(directives.error().line == 3);
    CHECK(directives.error().message ==
          "Fatal error, can't open config file '/nope.conf': No such file or directory");
    CHECK(directives.error().text == "include /nope.conf");
  }

  TEST_CASE("errors inside an included file name that file") {
    MemoryConfigFilesystem fs;
    fs.add_file("/main.conf", "include /inc.conf\n");
    fs.add_file("/inc.conf", "port 1\nrequirepass \"x\n");
    auto directives = read_config_file(fs, "/main.conf");
    REQUIRE_FALSE(directives);
    CHECK(directives.error().file == "/inc.conf");
    CHECK(directives.error().line == 2);
  }

  TEST_CASE("relative includes resolve from the working directory, then from dir") {
    MemoryConfigFilesystem fs("/srv");
    fs.add_file("/srv/main.conf", "include local.conf\ndir /data\ninclude after.conf\n");
    fs.add_file("/srv/local.conf", "port 1\n");
    fs.add_file("/data/after.conf", "port 2\n");
    auto directives = read_config_file(fs, "main.conf");
    REQUIRE(directives);
    CHECK(names(*directives) == Words{"port", "dir", "port"});
    CHECK((*directives)[2].args == Words{"2"});
  }

  TEST_CASE("includes nest and an include loop is reported") {
    MemoryConfigFilesystem fs;
    fs.add_file("/a.conf", "include /b.conf\n");
    fs.add_file("/b.conf", "include /c.conf\nport 5\n");
    fs.add_file("/c.conf", "hz 5\n");
    auto nested = read_config_file(fs, "/a.conf");
    REQUIRE(nested);
    CHECK(names(*nested) == Words{"hz", "port"});

    fs.add_file("/loop.conf", "include /loop.conf\n");
    auto looped = read_config_file(fs, "/loop.conf");
    REQUIRE_FALSE(looped);
    CHECK(looped.error().message.find("include loop") != std::string::npos);
  }

  TEST_CASE("an include with the wrong number of arguments is left for the table to reject") {
    MemoryConfigFilesystem fs;
    fs.add_file("/main.conf", "include\ninclude a b\n");
    auto directives = read_config_file(fs, "/main.conf");
    REQUIRE(directives);
    CHECK(directives->size() == 2);
  }

  TEST_CASE("a missing top-level file is an error without a line") {
    MemoryConfigFilesystem fs;
    auto directives = read_config_file(fs, "/etc/valkey/valkey.conf");
    REQUIRE_FALSE(directives);
    CHECK(directives.error().line == 0);
    CHECK(directives.error().message ==
          "Fatal error, can't open config file '/etc/valkey/valkey.conf': No such file or "
          "directory");
  }

  TEST_CASE("command-line options become directives after an optional file") {
    auto line = command_line(
        {"/etc/valkey.conf", "--port", "7000", "--save", "", "--bind", "127.0.0.1", "::1"});
    CHECK(line.config_file == "/etc/valkey.conf");
    CHECK_FALSE(line.config_from_stdin);
    REQUIRE(line.directives.size() == 3);
    CHECK(line.directives[0].name == "port");
    CHECK(line.directives[0].args == Words{"7000"});
    CHECK(line.directives[0].file == k_command_line_source);
    CHECK(line.directives[0].line == 1);
    CHECK(line.directives[1].name == "save");
    CHECK(line.directives[1].args == Words{""});
    CHECK(line.directives[2].args == Words{"127.0.0.1", "::1"});
    CHECK(line.directives[2].line == 3);
    CHECK(line.directives[2].text == "--bind 127.0.0.1 ::1");
  }

  TEST_CASE("without a file the first option starts at once") {
    auto line = command_line({"--port", "7000"});
    CHECK(line.config_file.empty());
    CHECK(line.directives.size() == 1);
  }

  TEST_CASE("option names are lower-cased and may carry their value in the same word") {
    auto line = command_line({"--MaxMemory", "1GB", "--port 7000", "--requirepass \"a b\""});
    REQUIRE(line.directives.size() == 3);
    CHECK(line.directives[0].name == "maxmemory");
    CHECK(line.directives[0].args == Words{"1GB"});
    CHECK(line.directives[1].name == "port");
    CHECK(line.directives[1].args == Words{"7000"});
    CHECK(line.directives[2].args == Words{"a b"});
  }

  TEST_CASE("the word after a bare option is its value even if it starts with dashes") {
    auto line = command_line({"--requirepass", "--secret", "--port", "1"});
    REQUIRE(line.directives.size() == 2);
    CHECK(line.directives[0].args == Words{"--secret"});
    CHECK(line.directives[1].name == "port");
  }

  TEST_CASE("a bare --save before another option or at the end means save \"\"") {
    auto before = command_line({"--save", "--port", "1"});
    REQUIRE(before.directives.size() == 2);
    CHECK(before.directives[0].args == Words{""});
    CHECK(before.directives[1].args == Words{"1"});

    auto last = command_line({"--port", "1", "--save"});
    REQUIRE(last.directives.size() == 2);
    CHECK(last.directives[1].args == Words{""});
  }

  TEST_CASE("a bare option with no value yields a directive without arguments") {
    auto line = command_line({"--port"});
    REQUIRE(line.directives.size() == 1);
    CHECK(line.directives[0].args.empty());
  }

  TEST_CASE("a lone dash first or last asks for config on stdin") {
    CHECK(command_line({"-", "--port", "1"}).config_from_stdin);
    CHECK(command_line({"--port", "1", "-"}).config_from_stdin);
    CHECK(command_line({"valkey.conf", "--port", "1", "-"}).config_from_stdin);
    auto middle = command_line({"--bind", "a", "-", "--port", "1"});
    CHECK_FALSE(middle.config_from_stdin);
    CHECK(middle.directives[0].args == Words{"a", "-"});
  }

  TEST_CASE("words before any option form a directive of their own") {
    auto line = command_line({"valkey.conf", "port", "7000", "--hz", "5"});
    REQUIRE(line.directives.size() == 2);
    CHECK(line.directives[0].name == "port");
    CHECK(line.directives[0].args == Words{"7000"});
  }

  TEST_CASE("an option with unbalanced quotes is an error") {
    Words args{"--requirepass \"open"};
    auto parsed = parse_command_line(args);
    REQUIRE_FALSE(parsed);
    CHECK(parsed.error().file == k_command_line_source);
    CHECK(parsed.error().message == "Unbalanced quotes in configuration line");
  }

  TEST_CASE("load_config reads the file, then stdin, then the options") {
    MemoryConfigFilesystem fs("/srv");
    fs.add_file("/srv/valkey.conf", "port 1\ndir /data\n");
    fs.add_file("/data/late.conf", "hz 7\n");
    auto line = command_line({"valkey.conf", "--include", "late.conf", "--port", "3", "-"});
    auto directives = load_config(fs, line, "port 2\n");
    REQUIRE(directives);
    CHECK(names(*directives) == Words{"port", "dir", "port", "hz", "port"});
    CHECK((*directives)[2].file == k_stdin_source);
    CHECK((*directives)[3].file == "/data/late.conf");
    CHECK((*directives)[4].args == Words{"3"});
  }

  TEST_CASE("load_config without a file uses only the options") {
    MemoryConfigFilesystem fs;
    auto directives = load_config(fs, command_line({"--port", "1"}));
    REQUIRE(directives);
    CHECK(directives->size() == 1);
    auto missing = load_config(fs, command_line({"/nope.conf"}));
    REQUIRE_FALSE(missing);
    CHECK(missing.error().file == "/nope.conf");
  }

  TEST_CASE("memory amounts use decimal and binary units in any case") {
    CHECK(parse_memory("0") == 0u);
    CHECK(parse_memory("100") == 100u);
    CHECK(parse_memory("100b") == 100u);
    CHECK(parse_memory("1k") == 1000u);
    CHECK(parse_memory("1kb") == 1024u);
    CHECK(parse_memory("1K") == 1000u);
    CHECK(parse_memory("1KB") == 1024u);
    CHECK(parse_memory("1Kb") == 1024u);
    CHECK(parse_memory("1m") == 1000000u);
    CHECK(parse_memory("1mb") == 1048576u);
    CHECK(parse_memory("1g") == 1000000000u);
    CHECK(parse_memory("2gb") == 2147483648u);
    CHECK(parse_memory("2GB") == 2147483648u);
    CHECK(parse_memory("18446744073709551615") == UINT64_MAX);
  }

  TEST_CASE("memory amounts reject anything but digits and a unit") {
    for (std::string_view bad :
         {"-1", "+1", " 1", "1 ", "1 kb", "1.5k", "1t", "1kbb", "one", "0x10", "1e3", "1bk"}) {
      CAPTURE(bad);
      CHECK_FALSE(parse_memory(bad).has_value());
    }
  }

  TEST_CASE("memory amounts keep memtoull quirks") {
    // No digits reads as 0, as Valkey's strtoull() on an empty buffer.
    CHECK(parse_memory("") == 0u);
    CHECK(parse_memory("kb") == 0u);
    // Too many digits saturate, and the unit multiplication wraps modulo 2^64.
    CHECK(parse_memory("99999999999999999999999") == UINT64_MAX);
    CHECK(parse_memory("18446744073709551615k") == UINT64_MAX * 1000u);
    CHECK_FALSE(parse_memory(std::string(128, '1')).has_value());
  }

  TEST_CASE("the real filesystem reads files and expands globs") {
    RealConfigFilesystem fs;
    std::string path = repo_data_file("redis-7.0-debian.conf");
    auto text = fs.read_file(path);
    REQUIRE(text);
    CHECK(text->find("bind 127.0.0.1 -::1") != std::string::npos);
    auto matches = fs.glob(repo_data_file("redis-7.0-*.conf"));
    CHECK(matches == Words{path});
    CHECK(fs.glob(repo_data_file("no-such-*.conf")).empty());
    auto missing = fs.read_file(repo_data_file("no-such.conf"));
    REQUIRE_FALSE(missing);
    CHECK(missing.error() == "No such file or directory");
    CHECK_FALSE(fs.current_directory().empty());
  }

  TEST_CASE("Debian's stock redis.conf parses into directives") {
    RealConfigFilesystem fs;
    auto directives = read_config_file(fs, repo_data_file("redis-7.0-debian.conf"));
    REQUIRE(directives);
    CHECK(directives->size() > 60);
    CHECK(directives->front().name == "bind");
    CHECK(directives->front().args == Words{"127.0.0.1", "-::1"});
  }
}
