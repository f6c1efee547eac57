#include "tests/unit/migrate/rewrite/builtin_catalog.hpp"

#include "engine/server/config_file.hpp"
#include "engine/server/config_table.hpp"
#include "migrate/rewrite/server_rewrite.hpp"
#include "migrate/rewrite/target_table.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>

namespace m = keyshift::migrate;
namespace e = keyshift::engine;

namespace {

const m::TargetCatalog& catalog() {
  return m::testing::builtin_catalog();
}

m::ServerRewrite rewrite(e::MemoryConfigFilesystem& fs, const std::string& target,
                         m::ServerRewriteOptions options = {}) {
  if (options.source.empty()) {
    options.source = "/etc/redis/redis.conf";
  }
  auto result = m::rewrite_server_config(fs, options, *catalog().find(target), catalog().redis);
  REQUIRE(result);
  return std::move(*result);
}

bool has_change(const m::RewritePlan& plan, const std::string& directive,
                const std::string& action) {
  return std::any_of(plan.changes.begin(), plan.changes.end(), [&](const m::Change& c) {
    return c.directive == directive && c.action == action;
  });
}

}  // namespace

TEST_SUITE("migrate::rewrite::target_table") {
  TEST_CASE("the built-in table has every target and resolves inheritance") {
    CHECK(catalog().names() == std::vector<std::string>{"keyshift", "valkey-7.2", "valkey-8.0",
                                                        "valkey-8.1", "valkey-9.0"});
    const m::TargetTable& v72 = *catalog().find("valkey-7.2");
    const m::TargetTable& v81 = *catalog().find("valkey-8.1");
    const m::TargetTable& v90 = *catalog().find("valkey-9.0");
    CHECK(v72.accepts("server_cpulist"));
    CHECK_FALSE(v72.accepts("server-cpulist"));
    CHECK(v72.translate.at("server-cpulist") == "server_cpulist");
    CHECK(v81.accepts("commandlog-execution-slower-than"));
    CHECK(v81.accepts("dynamic-hz"));  // deprecated, still read
    CHECK(v81.aliases.at("masterauth") == "primaryauth");
    CHECK_FALSE(v81.accepts("tls-auth-clients-user"));
    CHECK(v90.accepts("tls-auth-clients-user"));
    CHECK(v90.accepts("commandlog-execution-slower-than"));
    CHECK(v90.values.size() == 2);  // the lrm policies, from valkey-7.2
    CHECK(catalog().redis.redis_only.count("repl-rdb-channel") == 1);
  }

  TEST_CASE("the keyshift target accepts exactly what keyshift serve reads") {
    const m::TargetTable& ks = *catalog().find("keyshift");
    std::vector<std::string> missing;
    for (const e::DirectiveSpec& spec : e::directive_table()) {
      for (std::string_view name : {spec.name, spec.alias}) {
        if (!name.empty() && !ks.accepts(name) && spec.type != e::DirectiveType::statement) {
          missing.emplace_back(name);
        }
      }
    }
    CHECK(missing == std::vector<std::string>{});
    std::vector<std::string> extra;
    for (const std::string& name : ks.directives) {
      if (e::find_directive(name) == nullptr) {
        extra.push_back(name);
      }
    }
    for (const std::string& name : extra) {
      MESSAGE("in the keyshift table, unknown to keyshift serve: " << name);
    }
    CHECK(extra.empty());
  }

  TEST_CASE("a broken table is refused with its name and line") {
    auto bad = m::parse_target_catalog("schema = 1\n[targets.x\n", "mine.toml");
    REQUIRE_FALSE(bad);
    CHECK(bad.error().rfind("mine.toml:2:", 0) == 0);
    auto loop = m::parse_target_catalog(
        "schema = 1\n[targets.a]\nserver='v'\ninherits='b'\n[targets.b]\nserver='v'\n"
        "inherits='a'\n",
        "loop.toml");
    REQUIRE_FALSE(loop);
    CHECK(loop.error().find("loop") != std::string::npos);
  }
}

TEST_SUITE("migrate::rewrite::server") {
  TEST_CASE("untouched lines stay byte for byte; paths follow the Debian layout") {
    e::MemoryConfigFilesystem fs;
    std::string text =
        "# Redis\n\nbind 127.0.0.1 -::1\nsave 900 1\nsave 300 10\nunixsocket "
        "/run/redis/redis-server.sock\npidfile /run/redis/redis-server.pid\ndir /var/lib/redis\n"
        "masterauth \"a b\"\n";
    fs.add_file("/etc/redis/redis.conf", text);
    m::ServerRewrite r = rewrite(fs, "valkey-8.1");
    REQUIRE(r.plan.files.size() == 1);
    const m::PlannedFile& f = r.plan.files[0];
    CHECK(f.path == "/etc/valkey/valkey.conf");
    CHECK_FALSE(f.exists);
    CHECK(f.after ==
          "# Redis\n\nbind 127.0.0.1 -::1\nsave 900 1\nsave 300 10\nunixsocket "
          "/run/valkey/valkey-server.sock\npidfile /run/valkey/valkey-server.pid\ndir "
          "/var/lib/valkey\nmasterauth \"a b\"\n");
    CHECK(r.before.address.unix_path == "/run/redis/redis-server.sock");
    CHECK(r.after.address.unix_path == "/run/valkey/valkey-server.sock");
    CHECK(r.layout == m::Layout::debian);
  }

  TEST_CASE("refused directives are commented out with the reason, translated or fixed") {
    e::MemoryConfigFilesystem fs;
    fs.add_file("/etc/redis/redis.conf",
                "loadmodule /usr/lib/redis/modules/redisearch.so\nsearch.timeout 5\n"
                "lookahead 16\nfoo-bar 1\nserver-cpulist 0-1\nmaxmemory-policy ALLKEYS-LRM\n"
                "rename-command HGETDEL \"\"\nrename-command FLUSHALL \"\"\n"
                "user a on >p ~* +@all -@search +ft.search\n");
    m::ServerRewrite r = rewrite(fs, "valkey-7.2");
    const std::string& after = r.plan.files[0].after;
    CHECK(after.find("# loadmodule /usr/lib/redis/modules/redisearch.so\n") != std::string::npos);
    CHECK(after.find("\n# search.timeout 5\n") != std::string::npos);
    CHECK(after.find("\n# lookahead 16\n") != std::string::npos);
    CHECK(after.find("unknown to valkey-7.2") != std::string::npos);
    CHECK(after.find("\nserver_cpulist 0-1\n") != std::string::npos);
    CHECK(after.find("\nmaxmemory-policy allkeys-lru\n") != std::string::npos);
    CHECK(after.find("\n# rename-command HGETDEL \"\"\n") != std::string::npos);
    CHECK(after.find("\nrename-command FLUSHALL \"\"\n") != std::string::npos);
    CHECK(after.find("\nuser a on >p ~* +@all\n") != std::string::npos);
    CHECK(has_change(r.plan, "foo-bar", "dropped"));
    CHECK(has_change(r.plan, "server-cpulist", "translated"));
    CHECK(has_change(r.plan, "maxmemory-policy", "value"));
    CHECK(has_change(r.plan, "user", "acl"));
  }

  TEST_CASE("rewriting the result again changes nothing") {
    e::MemoryConfigFilesystem fs;
    fs.add_file("/etc/redis/redis.conf",
                "lookahead 16\ndir /var/lib/redis\nmaxmemory-policy allkeys-lrm\n");
    m::ServerRewrite first = rewrite(fs, "valkey-8.1");
    fs.add_file("/etc/valkey/valkey.conf", first.plan.files[0].after);
    m::ServerRewriteOptions again;
    again.source = "/etc/valkey/valkey.conf";
    m::ServerRewrite second = rewrite(fs, "valkey-8.1", again);
    CHECK_FALSE(second.plan.changed());
    CHECK(second.plan.changes.empty());
  }

  TEST_CASE("includes are followed through globs and planned at their new paths") {
    e::MemoryConfigFilesystem fs;
    fs.add_file("/etc/redis/redis.conf", "include /etc/redis/conf.d/*.conf\nport 6380\n");
    fs.add_file("/etc/redis/conf.d/b.conf", "repl-rdb-channel yes\n");
    fs.add_file("/etc/redis/conf.d/a.conf", "maxmemory 1gb\n");
    fs.add_file("/etc/redis/conf.d/.hidden.conf", "lookahead 1\n");
    m::ServerRewrite r = rewrite(fs, "keyshift");
    REQUIRE(r.plan.files.size() == 3);
    CHECK(r.plan.files[0].after == "include /etc/valkey/conf.d/*.conf\nport 6380\n");
    CHECK(r.plan.files[1].path == "/etc/valkey/conf.d/a.conf");
    CHECK(r.plan.files[2].path == "/etc/valkey/conf.d/b.conf");
    CHECK(r.plan.files[2].after.find("# repl-rdb-channel yes") != std::string::npos);
    CHECK(r.after.address.port == 6380);
    std::vector<std::string> warnings;
    CHECK_FALSE(m::check_with_engine(r.plan, "/etc/valkey/valkey.conf", "/", warnings));
  }

  TEST_CASE("a missing plain include fails with the line; a glob may match nothing") {
    e::MemoryConfigFilesystem fs;
    fs.add_file("/etc/redis/redis.conf", "port 1\ninclude /etc/redis/local.conf\n");
    m::ServerRewriteOptions options;
    options.source = "/etc/redis/redis.conf";
    auto r = m::rewrite_server_config(fs, options, *catalog().find("valkey-8.0"), catalog().redis);
    REQUIRE_FALSE(r);
    CHECK(r.error().line == 2);
    fs.add_file("/etc/redis/redis.conf", "include /etc/redis/none/*.conf\n");
    CHECK(m::rewrite_server_config(fs, options, *catalog().find("valkey-8.0"), catalog().redis));
  }

  TEST_CASE("the ACL file and TLS files move with the config; module ACL rules go") {
    e::MemoryConfigFilesystem fs;
    fs.add_file("/etc/redis/redis.conf",
                "aclfile /etc/redis/users.acl\ntls-cert-file /etc/redis/tls/r.crt\n"
                "tls-client-cert-file /etc/redis/tls/r.crt\ntls-key-file /etc/redis/tls/r.key\n");
    fs.add_file("/etc/redis/users.acl", "user app on >pw ~* +@all -@json\nuser default off\n");
    fs.add_file("/etc/redis/tls/r.crt", "CERT");
    m::ServerRewrite r = rewrite(fs, "valkey-8.0");
    REQUIRE(r.plan.files.size() == 3);
    CHECK(r.plan.files[1].path == "/etc/valkey/users.acl");
    CHECK(r.plan.files[1].kind == m::FileKind::server_file);
    CHECK(r.plan.files[1].after == "user app on >pw ~* +@all\nuser default off\n");
    CHECK(r.plan.files[2].path == "/etc/valkey/tls/r.crt");
    CHECK(r.plan.files[2].after == "CERT");
    CHECK(std::any_of(r.plan.warnings.begin(), r.plan.warnings.end(), [](const std::string& w) {
      return w.find("/etc/redis/tls/r.key") != std::string::npos &&
             w.find("copy it to /etc/valkey/tls/r.key") != std::string::npos;
    }));
    CHECK(r.plan.files[0].after.find("tls-key-file /etc/valkey/tls/r.key") != std::string::npos);
  }

  TEST_CASE("--socket replaces the socket or adds one") {
    e::MemoryConfigFilesystem fs;
    fs.add_file("/etc/redis/redis.conf", "port 6379");
    m::ServerRewriteOptions options;
    options.socket = "/var/run/valkey/valkey.sock";
    m::ServerRewrite r = rewrite(fs, "valkey-8.0", options);
    CHECK(
        r.plan.files[0].after.ends_with("port 6379\n# keyshift rewrite: unix socket requested "
                                        "with --socket\nunixsocket /var/run/valkey/valkey.sock\n"));
    CHECK(r.after.address.unix_path == "/var/run/valkey/valkey.sock");
  }

  TEST_CASE("the engine check names the line keyshift serve would refuse") {
    m::RewritePlan plan;
    m::PlannedFile f;
    f.path = "/etc/valkey/valkey.conf";
    f.after = "port 1\nmaxmemory lots\n";
    plan.files.push_back(f);
    std::vector<std::string> warnings;
    auto error = m::check_with_engine(plan, f.path, "/", warnings);
    REQUIRE(error);
    CHECK(error->rfind("/etc/valkey/valkey.conf:2:", 0) == 0);
  }

  TEST_CASE("--port puts the target on another port, or adds one the source left implicit") {
    e::MemoryConfigFilesystem fs;
    fs.add_file("/etc/redis/redis.conf", "port 6379\nbind 127.0.0.1\n");
    m::ServerRewrite r = rewrite(fs, "keyshift", {.port = 6380});
    CHECK(r.plan.files[0].after.rfind("port 6380\n", 0) == 0);
    CHECK(r.before.address.port == 6379);
    CHECK(r.after.address.port == 6380);
    CHECK(has_change(r.plan, "port", "port"));
    e::MemoryConfigFilesystem bare;
    bare.add_file("/etc/redis/redis.conf", "bind 127.0.0.1\n");
    m::ServerRewrite none = rewrite(bare, "keyshift", {.port = 0});
    CHECK(none.plan.files[0].after.find("\nport 0\n") != std::string::npos);
    CHECK(none.after.address.port == 0);
  }
}
