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
  o.to.address.unix_path = "/run/valkey/valkey-server.sock";
  return o;
}

m::AppsRewriteOptions tcp_to_socket() {
  m::AppsRewriteOptions o;
  o.from.address.host = "127.0.0.1";
  o.from.address.port = 6379;
  o.to.address.unix_path = "/var/run/valkey/valkey.sock";
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
    tcp.from.address.host = "127.0.0.1";
    tcp.from.address.port = 6379;
    tcp.to.address.host = "127.0.0.1";
    tcp.to.address.port = 6380;
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
    CHECK(after("/etc/php/8.2/mods-available/redis.ini",
                "session.save_path = \"127.0.0.1:6379, 10.0.0.2:6379\"\n", tcp_to_socket()) ==
          "session.save_path = \"unix:///var/run/valkey/valkey.sock, 10.0.0.2:6379\"\n");
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

  TEST_CASE("a new password and database reach every URL form of the server") {
    m::AppsRewriteOptions o;
    o.from.address.host = "127.0.0.1";
    o.from.address.port = 6379;
    o.from.set_password("old");
    o.to = o.from;
    o.to.set_password("n w");
    o.to.set_db(3);
    o.from_sockets = {"/run/redis/redis-server.sock"};
    o.same_server = {m::KnownEndpoint::unix_socket("/run/valkey/valkey-server.sock")};
    auto url = [&](const char* text, m::UrlClient client = m::UrlClient::generic) {
      return m::rewrite_server_url(text, o, client).url.value_or("(unchanged)");
    };
    CHECK(url("redis://:old@127.0.0.1:6379/0") == "redis://:n%20w@127.0.0.1:6379/3");
    CHECK(url("redis://app:old@localhost:6379") == "redis://app:n%20w@localhost:6379/3");
    CHECK(url("redis://:other@127.0.0.1:6379/0") == "redis://:other@127.0.0.1:6379/3");
    CHECK(url("redis://:old@127.0.0.1:6379/1") == "redis://:n%20w@127.0.0.1:6379/1");
    CHECK(url("redis://:old@10.0.0.1:6379/0") == "(unchanged)");
    CHECK(url("unix:///run/valkey/valkey-server.sock?db=0&password=old") ==
          "unix:///run/valkey/valkey-server.sock?db=3&password=n%20w");
    CHECK(url("tcp://127.0.0.1:6379?auth=old&database=0", m::UrlClient::phpredis) ==
          "tcp://127.0.0.1:6379?auth=n%20w&database=3");
    CHECK(url("tcp://127.0.0.1:6379?auth[]=u&auth[]=old", m::UrlClient::phpredis) ==
          "tcp://127.0.0.1:6379?auth[]=u&auth[]=n%20w&database=3");
    // No password in the setting and an old one given: it is another account, left alone.
    CHECK(url("redis://127.0.0.1:6379") == "redis://127.0.0.1:6379/3");
    o.from.set_password(std::nullopt);
    CHECK(url("redis://127.0.0.1:6379") == "redis://:n%20w@127.0.0.1:6379/3");
    CHECK(url("tcp://127.0.0.1:6379", m::UrlClient::phpredis) ==
          "tcp://127.0.0.1:6379?database=3&auth=n%20w");
    CHECK(url("rediss://127.0.0.1:6379/0") == "rediss://:n%20w@127.0.0.1:6379/3");
  }

  TEST_CASE("a move that a client cannot follow is a problem, not a rewrite") {
    auto o = tcp_to_socket();
    CHECK(m::rewrite_server_url("rediss://127.0.0.1:6379", o, m::UrlClient::generic)
              .problem.find("TLS") != std::string::npos);
    m::UrlRewrite ruby = m::rewrite_server_url("redis://127.0.0.1:6379/1", o, m::UrlClient::ruby);
    CHECK_FALSE(ruby.url);
    CHECK(ruby.problem.find("path:") != std::string::npos);
    auto back = socket_move();
    back.to = m::KnownEndpoint::tcp("127.0.0.1", 6380);
    CHECK(m::rewrite_endpoint_url("unix:///run/redis/redis-server.sock?db=2&x=1", back) ==
          "redis://127.0.0.1:6380/2?x=1");
    CHECK(m::rewrite_server_url("unix:///run/redis/redis-server.sock?database=2", back,
                                m::UrlClient::phpredis)
              .url == "tcp://127.0.0.1:6380?database=2");
  }

  TEST_CASE("an endpoint tells an empty password and database 0 from unknown ones") {
    m::KnownEndpoint e = m::KnownEndpoint::tcp("127.0.0.1", 6379);
    CHECK_FALSE(e.empty());
    CHECK_FALSE(e.password());
    CHECK_FALSE(e.db());
    e.set_password("");
    e.set_db(0);
    CHECK(e.password() == "");
    CHECK(e.db() == 0);
    e.set_password(std::nullopt);
    CHECK_FALSE(e.password());
    CHECK(m::KnownEndpoint{}.empty());
    CHECK(m::KnownEndpoint::unix_socket("/run/x.sock").address.unix_path == "/run/x.sock");
  }

  TEST_CASE("--from-url and --to-url name a server with its password and database") {
    auto e = m::parse_endpoint_url("redis://u:p%40ss@127.0.0.1:6380/2");
    REQUIRE(e);
    CHECK((e->address.host == "127.0.0.1" && e->address.port == 6380 && e->password() == "p@ss" &&
           e->db() == 2));
    e = m::parse_endpoint_url("unix:///run/valkey/valkey.sock?db=4&password=x");
    REQUIRE(e);
    CHECK((e->address.unix_path == "/run/valkey/valkey.sock" && e->password() == "x" &&
           e->db() == 4));
    e = m::parse_endpoint_url("127.0.0.1:6390");
    REQUIRE(e);
    CHECK((e->address.port == 6390 && !e->password() && !e->db()));
    CHECK_FALSE(m::parse_endpoint_url("redis://127.0.0.1:6379/x"));
    CHECK_FALSE(m::parse_endpoint_url("redis://127.0.0.1:99999"));
    CHECK_FALSE(m::parse_endpoint_url("http://127.0.0.1"));
  }

  TEST_CASE("wp-config: password (string or ACL pair) and database change, or are added") {
    m::AppsRewriteOptions o;
    o.from.address.host = "127.0.0.1";
    o.from.address.port = 6379;
    o.to = o.from;
    o.to.set_password("it's");
    o.to.set_db(2);
    std::string pair =
        "<?php\ndefine( 'WP_REDIS_PASSWORD', [ 'shop', 'old' ] );\n"
        "define( 'WP_REDIS_DATABASE', '0' );\n";
    CHECK(after("/var/www/a/wp-config.php", pair, o) ==
          "<?php\ndefine( 'WP_REDIS_PASSWORD', [ 'shop', 'it\\'s' ] );\n"
          "define( 'WP_REDIS_DATABASE', '2' );\n");
    std::string bare = "<?php\ndefine( 'WP_REDIS_PREFIX', 'a:' );\nrequire 'x.php';\n";
    CHECK(after("/var/www/a/wp-config.php", bare, o) ==
          "<?php\ndefine( 'WP_REDIS_PREFIX', 'a:' );\ndefine( 'WP_REDIS_DATABASE', 2 );\n"
          "define( 'WP_REDIS_PASSWORD', 'it\\'s' );\nrequire 'x.php';\n");
    std::string other = "<?php\ndefine( 'WP_REDIS_HOST', '10.0.0.3' );\n";
    CHECK(after("/var/www/a/wp-config.php", other, o) == other);
    // A socket path in WP_REDIS_HOST (phpredis' form) moving to TCP.
    auto back = socket_move();
    back.to = m::KnownEndpoint::tcp("127.0.0.1", 6380);
    CHECK(after("/var/www/a/wp-config.php",
                "<?php\ndefine( 'WP_REDIS_HOST', '/run/redis/redis-server.sock' );\n"
                "define( 'WP_REDIS_PORT', 0 );\n",
                back) ==
          "<?php\ndefine( 'WP_REDIS_HOST', '127.0.0.1' );\ndefine( 'WP_REDIS_PORT', 6380 );\n");
  }

  TEST_CASE("wp-config: URLs in multi-line server arrays move; cluster nodes never to a socket") {
    std::string servers =
        "<?php\ndefine( 'WP_REDIS_SERVERS', [\n    'tcp://127.0.0.1:6379?alias=a',\n"
        "    'tcp://10.0.0.2:6379',\n] );\ndefine( 'WP_REDIS_CLUSTER', [ "
        "'tcp://127.0.0.1:6379' ] );\nrequire 'x.php';\n";
    m::AppsRewrite r = m::rewrite_apps({{"/var/www/a/wp-config.php", servers}},
                                       *m::find_app_profile("wordpress"), tcp_to_socket());
    REQUIRE(r.plan.files.size() == 1);
    CHECK(
        r.plan.files[0].after ==
        "<?php\ndefine( 'WP_REDIS_SERVERS', [\n    'unix:///var/run/valkey/valkey.sock?alias=a',\n"
        "    'tcp://10.0.0.2:6379',\n] );\ndefine( 'WP_REDIS_CLUSTER', [ "
        "'tcp://127.0.0.1:6379' ] );\ndefine( 'WP_REDIS_SCHEME', 'unix' );\n"
        "define( 'WP_REDIS_PATH', '/var/run/valkey/valkey.sock' );\nrequire 'x.php';\n");
    REQUIRE(r.plan.warnings.size() == 1);
    CHECK(r.plan.warnings[0].find("wp-config.php:6: WP_REDIS_CLUSTER") != std::string::npos);
  }

  TEST_CASE(".env and Nextcloud: password and database of the server's settings") {
    m::AppsRewriteOptions o = socket_move();
    o.from.set_password("old");
    o.to.set_password("new pw");
    o.to.set_db(5);
    CHECK(after("/srv/app/.env",
                "REDIS_HOST=/run/redis/redis-server.sock\nREDIS_PASSWORD=old\nREDIS_DB=0\n"
                "REDIS_CACHE_DB=1\n",
                o) ==
          "REDIS_HOST=/run/valkey/valkey-server.sock\nREDIS_PASSWORD=\"new pw\"\nREDIS_DB=5\n"
          "REDIS_CACHE_DB=1\n");
    std::string nc =
        "<?php\n$CONFIG = array (\n  'redis' => [\n    'host' => '/run/redis/redis-server.sock',\n"
        "    'port' => 0,\n    'password' => 'old',\n  ],\n);\n";
    CHECK(after("/var/www/nc/config/config.php", nc, o) ==
          "<?php\n$CONFIG = array (\n  'redis' => [\n    'host' => "
          "'/run/valkey/valkey-server.sock',\n    'dbindex' => 5,\n    'port' => 0,\n"
          "    'password' => 'new pw',\n  ],\n);\n");
    // Back to TCP on another port, with no 'port' line: one is added.
    auto back = socket_move();
    back.to = m::KnownEndpoint::tcp("127.0.0.1", 6380);
    CHECK(after("/var/www/nc/config/config.php",
                "<?php\n$CONFIG = array (\n  'redis' => [\n    'host' => "
                "'/run/redis/redis-server.sock',\n  ],\n);\n",
                back) ==
          "<?php\n$CONFIG = array (\n  'redis' => [\n    'host' => '127.0.0.1',\n"
          "    'port' => 6380,\n  ],\n);\n");
  }

  TEST_CASE("Django settings and Rails config: URLs in literals, comments left alone") {
    std::string py =
        "CACHES = {'default': {'LOCATION': ['unix:///run/redis/redis-server.sock?db=1']}}\n"
        "# 'unix:///run/redis/redis-server.sock'\n";
    CHECK(after("/srv/shop/settings.py", py, socket_move(), "django") ==
          "CACHES = {'default': {'LOCATION': ['unix:///run/valkey/valkey-server.sock?db=1']}}\n"
          "# 'unix:///run/redis/redis-server.sock'\n");
    m::AppsRewriteOptions port;
    port.from.address.host = "127.0.0.1";
    port.from.address.port = 6379;
    port.to = m::KnownEndpoint::tcp("127.0.0.1", 6380);
    CHECK(after("/srv/app/config/cable.yml", "production:\n  url: redis://localhost:6379/1\n", port,
                "rails") == "production:\n  url: redis://127.0.0.1:6380/1\n");
    CHECK(after("/srv/app/config/initializers/redis.rb",
                "Redis.new(url: \"redis://127.0.0.1:6379/0\")\n", port,
                "rails") == "Redis.new(url: \"redis://127.0.0.1:6380/0\")\n");
    CHECK(m::classify_app_file("/srv/app/config/routes.rb", "", *m::find_app_profile("rails")) ==
          m::AppFormat::unknown);
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

  TEST_CASE("rollback removes the directories the run created, and only empty ones") {
    namespace fs = std::filesystem;
    char tmpl[] = "/tmp/keyshift-unit-apply-XXXXXX";
    REQUIRE(::mkdtemp(tmpl) != nullptr);
    std::string dir = tmpl;
    m::RewritePlan plan;
    m::PlannedFile f;
    f.path = dir + "/etc/valkey/conf.d/a.conf";
    f.source = dir + "/a.conf";
    f.after = "port 6379\n";
    plan.files.push_back(f);
    m::ApplyOptions options;
    options.backup_root = dir + "/backups";
    options.run_name = "run";
    m::ApplyResult applied = m::apply_plan(plan, options);
    REQUIRE(applied.ok);
    CHECK(slurp(applied.run_dir + "/manifest.toml").find("created_dirs") != std::string::npos);
    m::RollbackResult dry = m::rollback_run(applied.run_dir, true, false);
    CHECK(dry.removed_dirs ==
          std::vector<std::string>{dir + "/etc/valkey/conf.d", dir + "/etc/valkey", dir + "/etc"});
    CHECK(fs::exists(f.path));
    m::RollbackResult done = m::rollback_run(applied.run_dir, false, false);
    CHECK(done.ok);
    CHECK_FALSE(fs::exists(dir + "/etc"));
    // Again, with a stranger's file in one of the directories: that one stays.
    options.run_name = "run2";
    applied = m::apply_plan(plan, options);
    REQUIRE(applied.ok);
    { std::ofstream(dir + "/etc/valkey/other") << "x"; }
    done = m::rollback_run(applied.run_dir, false, false);
    CHECK(done.ok);
    CHECK_FALSE(fs::exists(dir + "/etc/valkey/conf.d"));
    CHECK(fs::exists(dir + "/etc/valkey/other"));
    CHECK(done.warnings.size() == 2);
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
