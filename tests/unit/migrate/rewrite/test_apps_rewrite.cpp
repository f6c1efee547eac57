#include "migrate/rewrite/apply.hpp"
#include "migrate/rewrite/apps_rewrite.hpp"

#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace m = keyshift::migrate;

namespace {

m::AppsRewriteOptions socket_move() {
  m::AppsRewriteOptions o;
  o.from_sockets = {"/run/redis/redis-server.sock"};
  o.to.socket = "/run/valkey/valkey-server.sock";
  return o;
}

m::AppsRewriteOptions tcp_to_socket() {
  m::AppsRewriteOptions o;
  o.from.host = "127.0.0.1";
  o.from.port = 6379;
  o.to.socket = "/var/run/valkey/valkey.sock";
  return o;
}

std::string after(const std::string& path, const std::string& text, m::AppsRewriteOptions o,
                  const std::string& profile = "generic") {
  m::AppsRewrite r = m::rewrite_apps({{path, text}}, *m::find_app_profile(profile), o);
  REQUIRE(r.plan.files.size() == 1);
  return r.plan.files[0].after;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TEST_SUITE("migrate::rewrite::apps") {
  TEST_CASE("endpoint URLs keep their scheme family, user info and query") {
    auto o = socket_move();
    CHECK(m::rewrite_endpoint_url("unix:///run/redis/redis-server.sock?db=1", o) ==
          "unix:///run/valkey/valkey-server.sock?db=1");
    CHECK(m::rewrite_endpoint_url("unix:/run/redis/redis-server.sock", o) ==
          "unix:/run/valkey/valkey-server.sock");
    CHECK(m::rewrite_endpoint_url("redis+socket:///run/redis/redis-server.sock", o) ==
          "redis+socket:///run/valkey/valkey-server.sock");
    CHECK(m::rewrite_endpoint_url("/run/redis/redis-server.sock", o) ==
          "/run/valkey/valkey-server.sock");
    CHECK_FALSE(m::rewrite_endpoint_url("redis://127.0.0.1:6379/0", o));
    CHECK_FALSE(m::rewrite_endpoint_url("/run/other.sock", o));
    auto t = tcp_to_socket();
    CHECK(m::rewrite_endpoint_url("redis://:pw@localhost:6379/2?x=1", t) ==
          "unix://:pw@/var/run/valkey/valkey.sock?db=2&x=1");
    CHECK_FALSE(m::rewrite_endpoint_url("rediss://127.0.0.1:6379", t));
    CHECK_FALSE(m::rewrite_endpoint_url("redis://127.0.0.1:6380", t));
    m::AppsRewriteOptions tcp;
    tcp.from.host = "127.0.0.1";
    tcp.from.port = 6379;
    tcp.to.host = "127.0.0.1";
    tcp.to.port = 6380;
    CHECK(m::rewrite_endpoint_url("rediss://u:p@127.0.0.1:6379/1", tcp) ==
          "rediss://u:p@127.0.0.1:6380/1");
  }

  TEST_CASE("nginx: only server lines inside upstream blocks change") {
    std::string text =
        "upstream redis {\n    server unix:/run/redis/redis-server.sock weight=2;\n"
        "    keepalive 10;\n}\nserver {\n    server_name unix:/run/redis/redis-server.sock;\n}\n";
    CHECK(
        after("/etc/nginx/conf.d/upstream.conf", text, socket_move()) ==
        "upstream redis {\n    server unix:/run/valkey/valkey-server.sock weight=2;\n"
        "    keepalive 10;\n}\nserver {\n    server_name unix:/run/redis/redis-server.sock;\n}\n");
    CHECK(after("/etc/nginx/conf.d/u.conf", "upstream redis {\n  server 127.0.0.1:6379;\n}\n",
                tcp_to_socket()) ==
          "upstream redis {\n  server unix:/var/run/valkey/valkey.sock;\n}\n");
  }

  TEST_CASE("wp-config: socket constants move, a TCP site gets the unix scheme and path") {
    std::string socket_site =
        "<?php\ndefine( 'WP_REDIS_SCHEME', 'unix' );\n"
        "define( \"WP_REDIS_PATH\", \"/run/redis/redis-server.sock\" );\n";
    CHECK(after("/var/www/a/wp-config.php", socket_site, socket_move()) ==
          "<?php\ndefine( 'WP_REDIS_SCHEME', 'unix' );\n"
          "define( \"WP_REDIS_PATH\", \"/run/valkey/valkey-server.sock\" );\n");
    std::string tcp_site =
        "<?php\ndefine('WP_REDIS_HOST', '127.0.0.1');\ndefine('WP_REDIS_PORT', 6379);\n"
        "require_once ABSPATH . 'wp-settings.php';\n";
    CHECK(after("/var/www/a/wp-config.php", tcp_site, tcp_to_socket()) ==
          "<?php\ndefine('WP_REDIS_HOST', '127.0.0.1');\ndefine('WP_REDIS_PORT', 6379);\n"
          "define( 'WP_REDIS_SCHEME', 'unix' );\n"
          "define( 'WP_REDIS_PATH', '/var/run/valkey/valkey.sock' );\n"
          "require_once ABSPATH . 'wp-settings.php';\n");
    std::string other_port = "<?php\ndefine('WP_REDIS_PORT', 6380);\n";
    CHECK(after("/var/www/a/wp-config.php", other_port, tcp_to_socket()) == other_port);
  }

  TEST_CASE("php.ini and FPM pools: each server of session.save_path") {
    CHECK(after("/etc/php/8.2/fpm/php.ini",
                "session.save_path = \"unix:///run/redis/redis-server.sock?database=2\"\n",
                socket_move()) ==
          "session.save_path = \"unix:///run/valkey/valkey-server.sock?database=2\"\n");
    CHECK(after("/etc/php/8.2/fpm/pool.d/www.conf",
                "php_value[session.save_path] = tcp://127.0.0.1:6379?weight=1, "
                "tcp://10.0.0.2:6379\n",
                tcp_to_socket()) ==
          "php_value[session.save_path] = unix:///var/run/valkey/valkey.sock?weight=1, "
          "tcp://10.0.0.2:6379\n");
  }

  TEST_CASE(".env: URLs, socket variables and host/port pairs, quoting kept") {
    CHECK(after("/srv/app/.env",
                "REDIS_URL='unix:///run/redis/redis-server.sock?db=1' # cache\n"
                "REDIS_SOCKET=/run/redis/redis-server.sock\nOTHER=/run/redis/redis-server.sock\n",
                socket_move()) ==
          "REDIS_URL='unix:///run/valkey/valkey-server.sock?db=1' # cache\n"
          "REDIS_SOCKET=/run/valkey/valkey-server.sock\nOTHER=/run/redis/redis-server.sock\n");
    CHECK(after("/srv/app/.env", "REDIS_HOST=127.0.0.1\nREDIS_PORT=6379\n", tcp_to_socket()) ==
          "REDIS_HOST=/var/run/valkey/valkey.sock\nREDIS_PORT=0\n");
  }

  TEST_CASE("Nextcloud: host and port of the redis array only") {
    std::string text =
        "<?php\n$CONFIG = array (\n  'dbhost' => 'localhost',\n  'redis' => [\n"
        "    'host' => 'localhost',\n    'port' => 6379,\n  ],\n);\n";
    CHECK(after("/var/www/nc/config/config.php", text, tcp_to_socket()) ==
          "<?php\n$CONFIG = array (\n  'dbhost' => 'localhost',\n  'redis' => [\n"
          "    'host' => '/var/run/valkey/valkey.sock',\n    'port' => 0,\n  ],\n);\n");
  }

  TEST_CASE("colliding WordPress prefixes are found per database and fixed with ':'") {
    std::vector<m::AppFile> files = {
        {"/var/www/a/wp-config.php", "<?php\ndefine('WP_REDIS_PREFIX', 'site1');\n"},
        {"/var/www/b/wp-config.php", "<?php\ndefine('WP_REDIS_PREFIX', 'site10');\n"},
        {"/var/www/c/wp-config.php",
         "<?php\ndefine('WP_REDIS_PREFIX', 'site');\ndefine('WP_REDIS_DATABASE', 3);\n"},
        {"/var/www/d/wp-config.php", "<?php\ndefine('WP_REDIS_PREFIX', 'x:');\n"},
        {"/var/www/e/wp-config.php", "<?php\ndefine('WP_REDIS_PREFIX', 'x:y');\n"},
    };
    auto o = socket_move();
    m::AppsRewrite found = m::rewrite_apps(files, *m::find_app_profile("wordpress"), o);
    REQUIRE(found.collisions.size() == 1);
    CHECK(found.collisions[0].prefix == "site1");
    CHECK(found.collisions[0].other_prefix == "site10");
    CHECK_FALSE(found.plan.changed());
    o.fix_prefixes = true;
    m::AppsRewrite fixed = m::rewrite_apps(files, *m::find_app_profile("wordpress"), o);
    CHECK(fixed.plan.files[0].after == "<?php\ndefine('WP_REDIS_PREFIX', 'site1:');\n");
    CHECK(fixed.plan.files[1].after == "<?php\ndefine('WP_REDIS_PREFIX', 'site10:');\n");
    CHECK_FALSE(fixed.plan.files[2].changed());
    REQUIRE(fixed.renames.size() == 2);
    CHECK(fixed.renames[0].exclude == std::vector<std::string>{"site10"});
  }
}

TEST_SUITE("migrate::rewrite::apply") {
  TEST_CASE("apply backs up, writes with the old mode, is idempotent and rolls back") {
    namespace fs = std::filesystem;
    char tmpl[] = "/tmp/keyshift-unit-apply-XXXXXX";
    REQUIRE(::mkdtemp(tmpl) != nullptr);
    std::string dir = tmpl;
    std::string path = dir + "/app/.env";
    fs::create_directories(dir + "/app");
    { std::ofstream(path) << "REDIS_HOST=/run/redis/redis-server.sock\n"; }
    ::chmod(path.c_str(), 0640);
    m::AppsRewrite r =
        m::rewrite_apps({{path, slurp(path)}}, *m::find_app_profile("laravel"), socket_move());
    m::ApplyOptions options;
    options.backup_root = dir + "/backups";
    options.run_name = "run";
    m::ApplyResult applied = m::apply_plan(r.plan, options);
    REQUIRE(applied.ok);
    CHECK(applied.run_dir == dir + "/backups/run");
    CHECK(slurp(path) == "REDIS_HOST=/run/valkey/valkey-server.sock\n");
    struct stat st {};
    ::stat(path.c_str(), &st);
    CHECK((st.st_mode & 0777) == 0640);
    CHECK(slurp(applied.run_dir + "/files" + path) == "REDIS_HOST=/run/redis/redis-server.sock\n");
    // The same plan again: the file already holds the result, so nothing is written.
    m::AppsRewrite again =
        m::rewrite_apps({{path, slurp(path)}}, *m::find_app_profile("laravel"), socket_move());
    CHECK(m::apply_plan(again.plan, options).run_dir.empty());
    m::RollbackResult dry = m::rollback_run(applied.run_dir, true, false);
    CHECK(dry.ok);
    CHECK(dry.restored == std::vector<std::string>{path});
    CHECK(slurp(path) == "REDIS_HOST=/run/valkey/valkey-server.sock\n");
    m::RollbackResult done = m::rollback_run(applied.run_dir, false, false);
    CHECK(done.ok);
    CHECK(slurp(path) == "REDIS_HOST=/run/redis/redis-server.sock\n");
    CHECK(m::rollback_run(applied.run_dir, false, false).restored.empty());
    m::RollbackResult missing = m::rollback_run(dir + "/nope", false, false);
    CHECK_FALSE(missing.ok);
    CHECK(missing.error.find("manifest.toml") != std::string::npos);
    fs::remove_all(dir);
  }

  TEST_CASE("a failed validation puts every written file back") {
    namespace fs = std::filesystem;
    char tmpl[] = "/tmp/keyshift-unit-apply-XXXXXX";
    REQUIRE(::mkdtemp(tmpl) != nullptr);
    std::string dir = tmpl;
    m::RewritePlan plan;
    for (const char* name : {"a.conf", "b.conf"}) {
      m::PlannedFile f;
      f.path = dir + "/" + name;
      f.source = f.path;
      f.after = "new\n";
      f.exists = true;
      f.current = "old\n";
      { std::ofstream(f.path) << f.current; }
      plan.files.push_back(f);
    }
    m::PlannedFile created;
    created.path = dir + "/c.conf";
    created.source = created.path;
    created.after = "made\n";
    plan.files.push_back(created);
    m::ApplyOptions options;
    options.backup_root = dir + "/backups";
    options.run_name = "run";
    options.validate = [](const m::PlannedFile& f) -> std::optional<std::string> {
      if (f.path.ends_with("b.conf")) {
        return std::string("refused");
      }
      return std::nullopt;
    };
    m::ApplyResult r = m::apply_plan(plan, options);
    CHECK_FALSE(r.ok);
    CHECK(r.error.find("refused") != std::string::npos);
    CHECK(slurp(dir + "/a.conf") == "old\n");
    CHECK(slurp(dir + "/b.conf") == "old\n");
    CHECK_FALSE(fs::exists(dir + "/c.conf"));
    fs::remove_all(dir);
  }
}
