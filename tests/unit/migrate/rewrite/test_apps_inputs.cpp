#include "tests/unit/migrate/rewrite/builtin_catalog.hpp"

#include "compat/process/child_process.hpp"
#include "engine/server/config_file.hpp"
#include "migrate/rewrite/apps_inputs.hpp"
#include "migrate/rewrite/target_table.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace m = keyshift::migrate;
namespace e = keyshift::engine;
namespace fs = std::filesystem;

namespace {

const m::TargetCatalog& catalog() {
  return m::testing::builtin_catalog();
}

// A scratch directory (removed afterwards) with files put into it.
struct Tree {
  Tree() : dir("keyshift-apps-"), root(dir.path()) { REQUIRE_FALSE(root.empty()); }
  std::string put(const std::string& relative, const std::string& text) {
    fs::path p = fs::path(root) / relative;
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << text;
    return p.string();
  }
  keyshift::compat::ScratchDir dir;
  std::string root;
};

std::vector<std::string> relative(const std::vector<std::string>& names, const std::string& root) {
  std::vector<std::string> out;
  for (const auto& n : names) {
    out.push_back(fs::relative(n, root).string());
  }
  return out;
}

}  // namespace

TEST_SUITE("migrate::rewrite::apps_inputs") {
  TEST_CASE("profiles with a usual place look there, the others need paths") {
    CHECK(m::default_app_paths("wordops") ==
          std::vector<std::string>{"/etc/nginx/conf.d", "/var/www", "/etc/php"});
    CHECK(m::default_app_paths("wordpress") == std::vector<std::string>{"/var/www"});
    CHECK(m::default_app_paths("php") == std::vector<std::string>{"/etc/php"});
    CHECK(m::default_app_paths("nextcloud") ==
          std::vector<std::string>{"/var/www/nextcloud/config", "/etc/php"});
    CHECK(m::default_app_paths("generic").empty());
    CHECK(m::default_app_paths("laravel").empty());
  }

  TEST_CASE("the walk keeps settings files, sorted, and skips dependencies and big files") {
    Tree t;
    t.put("site/wp-config.php", "<?php\n");
    t.put("site/.env", "REDIS_HOST=127.0.0.1\n");
    t.put("site/readme.txt", "not settings\n");
    t.put("site/node_modules/pkg/.env", "REDIS_HOST=x\n");
    t.put("site/.git/config.php", "<?php\n");
    t.put("site/vendor/a/b.ini", "x\n");
    t.put("site/a/b/c/d/e/f/g/deep.conf", "too deep\n");
    t.put("site/a/b/c/d/e/ok.conf", "deep enough\n");
    t.put("site/big.ini", std::string((2U << 20) + 1, 'x'));
    std::string single = t.put("other/app.ini", "x\n");
    auto names = m::find_app_files({t.root + "/site", single}, true);
    REQUIRE(names);
    CHECK(relative(*names, t.root) == std::vector<std::string>{"other/app.ini", "site/.env",
                                                               "site/a/b/c/d/e/ok.conf",
                                                               "site/wp-config.php"});
  }

  TEST_CASE("a named path that is missing is an error, a default place is skipped") {
    Tree t;
    t.put("x/.env", "A=1\n");
    std::string missing = t.root + "/nope";
    auto named = m::find_app_files({t.root + "/x", missing}, true);
    REQUIRE_FALSE(named);
    CHECK(named.error() == missing + ": no such file or directory");
    auto defaults = m::find_app_files({t.root + "/x", missing}, false);
    REQUIRE(defaults);
    CHECK(defaults->size() == 1);
  }

  TEST_CASE("files are read with absolute normalised paths, a missing one names itself") {
    Tree t;
    t.put("a/.env", "REDIS_PORT=6379\n");
    auto files = m::read_app_files({t.root + "/a/../a/.env"});
    REQUIRE(files);
    REQUIRE(files->size() == 1);
    CHECK((*files)[0].path == t.root + "/a/.env");
    CHECK((*files)[0].contents == "REDIS_PORT=6379\n");
    auto missing = m::read_app_files({t.root + "/gone.env"});
    REQUIRE_FALSE(missing);
    CHECK(missing.error() == t.root + "/gone.env: cannot read");
  }

  TEST_CASE("the server rewrite's endpoints: socket moves, same port stays the same server") {
    e::MemoryConfigFilesystem fs;
    fs.add_file("/etc/redis/redis.conf",
                "port 6379\nunixsocket /run/redis/redis-server.sock\nrequirepass old-secret\n");
    m::AppsRewriteOptions options;
    auto warnings = m::map_server_endpoints(fs, catalog(), "/etc/redis/redis.conf", "",
                                            m::Layout::debian, options);
    REQUIRE_MESSAGE(warnings, (warnings ? "" : warnings.error()));
    CHECK(warnings->empty());
    CHECK(options.from_sockets == std::vector<std::string>{"/run/redis/redis-server.sock"});
    CHECK(options.to.address.unix_path == "/run/valkey/valkey-server.sock");
    CHECK(options.from.address.host.empty());
    REQUIRE(options.same_server.size() == 1);
    CHECK(options.same_server[0].address.port == 6379);
    CHECK(options.from.password() == "old-secret");
    CHECK_FALSE(options.to.password().has_value());
  }

  TEST_CASE("a written server config's new port and password are followed") {
    e::MemoryConfigFilesystem fs;
    fs.add_file("/srv/redis.conf",
                "port 6379\nunixsocket /run/redis/redis-server.sock\nrequirepass old-secret\n");
    fs.add_file("/srv/valkey.conf",
                "port 6390\nunixsocket /run/valkey/valkey-server.sock\nrequirepass new-secret\n");
    m::AppsRewriteOptions options;
    auto warnings = m::map_server_endpoints(fs, catalog(), "/srv/redis.conf", "/srv/valkey.conf",
                                            m::Layout::debian, options);
    REQUIRE_MESSAGE(warnings, (warnings ? "" : warnings.error()));
    CHECK(options.from.address.host == "127.0.0.1");
    CHECK(options.from.address.port == 6379);
    CHECK(options.to.address.unix_path == "/run/valkey/valkey-server.sock");
    REQUIRE(options.tcp_to.has_value());
    CHECK(options.tcp_to->address.port == 6390);
    CHECK(options.to.password() == "new-secret");
    CHECK(options.same_server.empty());
  }

  TEST_CASE("a dropped requirepass warns that apps still send it") {
    e::MemoryConfigFilesystem fs;
    fs.add_file("/srv/redis.conf", "port 6379\nrequirepass old\n");
    fs.add_file("/srv/valkey.conf", "port 6379\n");
    m::AppsRewriteOptions options;
    auto warnings = m::map_server_endpoints(fs, catalog(), "/srv/redis.conf", "/srv/valkey.conf",
                                            m::Layout::debian, options);
    REQUIRE(warnings);
    REQUIRE(warnings->size() == 1);
    CHECK((*warnings)[0].find("requirepass was removed") == 0);
  }

  TEST_CASE("a missing --server-out and a broken config are errors naming the file") {
    e::MemoryConfigFilesystem fs;
    fs.add_file("/srv/redis.conf", "port 6379\n");
    m::AppsRewriteOptions options;
    auto missing = m::map_server_endpoints(fs, catalog(), "/srv/redis.conf", "/srv/missing.conf",
                                           m::Layout::debian, options);
    REQUIRE_FALSE(missing);
    CHECK(missing.error() == "--server-out /srv/missing.conf: no such file");
    auto gone = m::read_server_endpoints(fs, catalog(), "/srv/gone.conf", m::Layout::debian, "");
    REQUIRE_FALSE(gone);
    CHECK(gone.error().find("/srv/gone.conf") == 0);
  }
}
