#!/usr/bin/python3
"""`keyshift rewrite server|apps|rollback` on the fixtures of tests/data/rewrite: golden
outputs, the results accepted by the programs that read them (`keyshift serve`, `nginx -t`,
`php -l`), dry run / --check / --apply / idempotency / rollback, the JSON contract and
redaction, a failed validation that restores the backup, key-prefix collisions.

Run: KEYSHIFT_BIN=build/keyshift /usr/bin/python3 tests/integration/test_rewrite.py
KEYSHIFT_UPDATE_GOLDEN=1 rewrites tests/data/rewrite/golden/ from the current binary (review
the diff before committing).
"""

import difflib
import json
import os
import shutil
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import (REPO, SetupError, Skip, _apt_install, eq, keyshift_bin,  # noqa: E402
                     ok, run_tests, test)

DATA = os.path.join(REPO, "tests", "data", "rewrite")
GOLDEN = os.path.join(DATA, "golden")
SERVER_CASES = [
    # fixture, target
    ("redis-7.0-debian.conf", "valkey-8.1"),
    ("redis-7.0-debian.conf", "keyshift"),
    ("ubuntu-7.0-wordops.conf", "valkey-8.0"),
    ("ubuntu-7.0-wordops.conf", "keyshift"),
    ("redis-7.4.conf", "valkey-7.2"),
    ("redis-7.4.conf", "valkey-8.0"),
    ("redis-8.conf", "valkey-8.1"),
    ("redis-8.conf", "valkey-9.0"),
]
# The default user's password in each fixture.
PASSWORDS = {"ubuntu-7.0-wordops.conf": "s3cret pass"}


def fixture(name):
    if name == "redis-7.0-debian.conf":
        return os.path.join(REPO, "tests", "data", name)
    return os.path.join(DATA, "server", name)


def need(program, package):
    if shutil.which(program) is None:
        _apt_install([package])
    if shutil.which(program) is None:
        raise SetupError("%s missing after apt-get install %s" % (program, package))


def run(*args, cwd=None):
    p = subprocess.run([keyshift_bin()] + list(args), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=60, cwd=cwd)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def run_json(*args, cwd=None):
    rc, out, err = run(*(list(args) + ["--format", "json"]), cwd=cwd)
    try:
        report = json.loads(out)
    except ValueError:
        raise AssertionError("not one JSON object (rc %d): %r %r" % (rc, out[:500], err))
    return rc, report


def read(path):
    with open(path) as f:
        return f.read()


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def tree(root):
    """Every file under root with its contents, for 'nothing was written' checks."""
    out = {}
    for d, _, files in os.walk(root):
        for f in files:
            p = os.path.join(d, f)
            out[os.path.relpath(p, root)] = read(p)
    return out


def golden_diff(name, source, actual):
    """Server configs are long: their golden file is the unified diff from the fixture."""
    diff = "".join(difflib.unified_diff(read(source).splitlines(True), actual.splitlines(True),
                                        "a/" + os.path.basename(source), "b/" + name))
    golden(name + ".diff", diff)


def golden(name, actual):
    path = os.path.join(GOLDEN, name)
    if os.environ.get("KEYSHIFT_UPDATE_GOLDEN") == "1":
        write(path, actual)
    eq(actual, read(path), "golden " + name)


def nginx_t(h, path):
    """nginx -t on a conf.d snippet inside a throw-away prefix (never the system nginx)."""
    prefix = h.path("nginx-%d" % len(os.listdir(h.tmp)))
    os.makedirs(prefix)
    conf = os.path.join(prefix, "nginx.conf")
    write(conf, "pid %s/nginx.pid;\nerror_log %s/error.log;\nevents {}\nhttp {\n"
                "  access_log off;\n  include %s;\n}\n" % (prefix, prefix, path))
    p = subprocess.run(["nginx", "-t", "-q", "-p", prefix + "/", "-c", conf],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=30)
    return p.returncode, p.stdout.decode()


def php_l(path):
    p = subprocess.run(["php", "-n", "-l", path], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=30)
    return p.returncode, p.stdout.decode()


# --------------------------------------------------------------------------------------
# Server configs.
# --------------------------------------------------------------------------------------


@test
def server_rewrites_match_the_golden_files(h):
    for name, target in SERVER_CASES:
        out = h.path("%s.%s.out" % (name, target))
        rc, report = run_json("rewrite", "server", fixture(name), "--target", target,
                              "--out", out, "--apply", "--backup-dir", h.path("backups"))
        eq(rc, 0, "%s %s: %s" % (name, target, report.get("msg")))
        eq(report["changed"], True, name)
        golden_diff("%s.%s" % (name, target), fixture(name), read(out))


@test
def keyshift_serve_starts_with_every_config_rewritten_for_keyshift(h):
    for name, target in SERVER_CASES:
        if target != "keyshift":
            continue
        out = h.path("serve-%s.conf" % name)
        rc, _, err = run("rewrite", "server", fixture(name), "--target", target, "--out", out,
                         "--apply", "--backup-dir", h.path("backups"))
        eq(rc, 0, err)
        # The file's paths (/var/lib/valkey, /run/valkey) belong to the real service; the
        # command line moves them into the test's dir, as valkey-server would take them.
        srv = h.keyshift("--dir", h.tmp, "--logfile", "", "--pidfile", "",
                         "--daemonize", "no", "--supervised", "no",
                         config=read(out), name="serve-" + name.replace(".", "-"),
                         password=PASSWORDS.get(name))
        eq(srv.cli("PING"), "PONG", name)
        srv.stop()
        h.forget(srv)


@test
def keyshift_target_keeps_users_and_renamed_commands(h):
    # The ACL users of lines 47-48 and the renamed commands of lines 49-50 are kept: keyshift
    # serve has both, and the result starts with FLUSHALL gone and CONFIG renamed.
    out = h.path("k74.conf")
    rc, report = run_json("rewrite", "server", fixture("redis-7.4.conf"), "--target", "keyshift",
                          "--out", out, "--apply", "--backup-dir", h.path("b"))
    eq((rc, report["failed"]), (0, False), report["msg"])
    text = open(out).read()
    ok('rename-command FLUSHALL ""\n' in text and
       'rename-command CONFIG "CONFIG_b840fc02d524045429941cc15f59e41cb7be6c52"\n' in text, text)
    # Redis 8's renamed commands are ones Valkey lacks, so they are dropped: what is left,
    # ACL users included, keyshift serve starts with.
    rc, report = run_json("rewrite", "server", fixture("redis-8.conf"), "--target", "keyshift",
                          "--out", out)
    eq((rc, report["failed"]), (0, False), report["msg"])
    ok("user search-reader on >******** ~* +@read\n" in report["diff"][0]["after"],
       "the ACL user is kept")


@test
def redis_8_lines_valkey_refuses_are_commented_out_with_the_reason(h):
    out = h.path("r8.conf")
    rc, report = run_json("rewrite", "server", fixture("redis-8.conf"), "--target", "valkey-8.1",
                          "--out", out)
    eq(rc, 0, report["msg"])
    dropped = {c["directive"] for c in report["changes"] if c["action"] == "dropped"}
    for name in ("loadmodule", "repl-rdb-channel", "lookahead", "search-timeout",
                 "replica-full-sync-buffer-limit", "rename-command"):
        ok(name in dropped, "%s not dropped: %s" % (name, sorted(dropped)))
    after = report["diff"][0]["after"]
    ok("# keyshift rewrite (valkey-8.1): Redis 8 replication" in after, after[:2000])
    ok("\n# repl-rdb-channel yes\n" in after, "the old line stays visible as a comment")
    ok("maxmemory-policy allkeys-lru" in after and "allkeys-lrm\n" not in
       after.replace("was: maxmemory-policy allkeys-lrm\n", ""), "lrm policy translated")
    ok("user search-reader on >******** ~* +@read\n" in after, "ACL -@search removed")
    eq(os.path.exists(out), False, "a dry run writes nothing")
    # The table keeps aliases Valkey still reads: masterauth is not renamed.
    rc, report = run_json("rewrite", "server", fixture("redis-7.4.conf"), "--target",
                          "valkey-8.1", "--out", h.path("r74.conf"))
    after = report["diff"][0]["after"]
    ok("masterauth ********" in after and "primaryauth" not in after, "masterauth kept")
    ok("slowlog-log-slower-than 10000" in after, "slowlog alias kept")


@test
def secrets_are_redacted_in_diffs_and_reports(h):
    for name in ("ubuntu-7.0-wordops.conf", "redis-7.4.conf", "redis-8.conf"):
        for fmt in ("json", "text"):
            rc, out, err = run("rewrite", "server", fixture(name), "--target", "valkey-8.0",
                               "--out", h.path("x.conf"), "--format", fmt)
            eq(rc, 0, err)
            for secret in ("s3cret pass", "replica-secret", "app-password", "Redis8-Secret",
                           "reader-pass", "5e884898da2804715"):
                ok(secret not in out, "%s leaks %r in %s output" % (name, secret, fmt))


@test
def socket_flag_and_rhel_layout_move_paths(h):
    rc, report = run_json("rewrite", "server", fixture("ubuntu-7.0-wordops.conf"), "--target",
                          "valkey-8.0", "--out", h.path("w.conf"), "--socket",
                          "/var/run/valkey/valkey.sock")
    eq(rc, 0, report["msg"])
    eq(report["socket"], {"before": "/var/run/redis/redis-server.sock",
                          "after": "/var/run/valkey/valkey.sock"})
    conf = h.path("rhel/redis.conf")
    write(conf, "port 6379\nunixsocket /run/redis/redis.sock\nlogfile /var/log/redis/redis.log\n"
                "dir /var/lib/redis\n")
    rc, report = run_json("rewrite", "server", conf, "--target", "valkey-8.0", "--out",
                          h.path("rhel/valkey.conf"))
    eq(report["layout"], "rhel")
    eq(report["diff"][0]["after"], "port 6379\nunixsocket /run/valkey/valkey.sock\n"
                                   "logfile /var/log/valkey/valkey.log\ndir /var/lib/valkey\n")


@test
def includes_are_followed_through_globs_and_rewritten_too(h):
    root = h.path("inc")
    write(os.path.join(root, "etc/redis/redis.conf"),
          "include %s/etc/redis/conf.d/*.conf\nport 6379\n" % root)
    write(os.path.join(root, "etc/redis/conf.d/a.conf"), "lookahead 16\nmaxmemory 1gb\n")
    write(os.path.join(root, "etc/redis/conf.d/b.conf"), "logfile %s/var/log/redis/redis-server.log\n"
          % root)
    rc, report = run_json("rewrite", "server", os.path.join(root, "etc/redis/redis.conf"),
                          "--target", "keyshift", "--map-path",
                          "%s/etc/redis=%s/etc/valkey" % (root, root), "--map-path",
                          "%s/var/log/redis=%s/var/log/valkey" % (root, root), "--apply",
                          "--backup-dir", h.path("backups"))
    eq(rc, 0, report["msg"])
    eq(read(os.path.join(root, "etc/valkey/redis.conf")),
       "include %s/etc/valkey/conf.d/*.conf\nport 6379\n" % root)
    ok("# lookahead 16\nmaxmemory 1gb\n" in read(os.path.join(root, "etc/valkey/conf.d/a.conf")),
       "included file rewritten")
    eq(read(os.path.join(root, "etc/valkey/conf.d/b.conf")),
       "logfile %s/var/log/valkey/redis-server.log\n" % root)
    eq(read(os.path.join(root, "etc/redis/conf.d/a.conf")), "lookahead 16\nmaxmemory 1gb\n",
       "the source is never touched")
    rc, out, err = run("serve", "--test-config", os.path.join(root, "etc/valkey/redis.conf"))
    eq(rc, 0, out + err)


@test
def bad_input_names_the_file_and_line_and_writes_nothing(h):
    conf = h.path("bad/redis.conf")
    write(conf, "port 6379\nrequirepass \"unterminated\n")
    rc, report = run_json("rewrite", "server", conf, "--target", "valkey-8.0", "--out",
                          h.path("bad/out.conf"), "--apply", "--backup-dir", h.path("bad/b"))
    eq(rc, 1)
    eq(report["failed"], True)
    ok(conf + ":2:" in report["msg"] and "Unbalanced quotes" in report["msg"], report["msg"])
    eq(os.path.exists(h.path("bad/out.conf")) or os.path.exists(h.path("bad/b")), False)
    rc, out, err = run("rewrite", "server", h.path("missing.conf"), "--target", "valkey-8.0")
    eq(rc, 1)
    ok("missing.conf" in err, err)
    rc, out, err = run("rewrite", "server", conf, "--target", "valkey-6")
    eq(rc, 2, err)
    ok("valkey-8.1" in err, "names the known targets: " + err)


@test
def probe_asks_a_running_server_and_a_throw_away_binary(h):
    srv = h.keyshift(name="probe-target")
    rc, report = run_json("rewrite", "server", fixture("redis-7.0-debian.conf"), "--target",
                          "keyshift", "--out", h.path("p.conf"), "--probe",
                          "redis://127.0.0.1:%d" % srv.port)
    eq(rc, 0, report["msg"])
    ok(report["probe"]["directives"] > 150 and report["probe"]["commands"] > 150,
       report["probe"])
    # Debian's redis-server 7.0 stands in for a target binary: started on a throw-away
    # socket and dir to list what it accepts, then dry-started with the result.
    data = h.path("probe-data")
    os.makedirs(data)
    rc, report = run_json("rewrite", "server", fixture("redis-7.0-debian.conf"), "--target",
                          "valkey-7.2", "--out", h.path("p72.conf"), "--probe",
                          "/usr/bin/redis-server", "--map-path", "/var/lib/redis=" + data,
                          "--apply", "--backup-dir", h.path("b"))
    eq(rc, 0, report["msg"])
    ok(report["probe"]["server"].startswith("redis 7.0"), report["probe"])
    ok(os.path.exists(h.path("p72.conf")), "written after the dry start passed")
    # Configs with a password (requirepass; a default ACL user with one) dry-start too: the
    # server's NOAUTH answer proves it loaded them.
    for name in ("ubuntu-7.0-wordops.conf", "redis-7.4.conf"):
        rc, report = run_json("rewrite", "server", fixture(name), "--target", "valkey-7.2",
                              "--out", h.path("pw-" + name), "--probe", "/usr/bin/redis-server",
                              "--map-path", "/var/lib/redis=" + data)
        eq(rc, 0, "%s: %s" % (name, report["msg"]))
    # A result the binary refuses (redis 7.0 does not know locale-collate): dry run fails,
    # --apply writes, the dry start fails, the new file is removed again.
    for extra in ([], ["--apply", "--backup-dir", h.path("b2")]):
        rc, report = run_json("rewrite", "server", fixture("redis-8.conf"), "--target",
                              "valkey-8.1", "--out", h.path("p8.conf"), "--probe",
                              "/usr/bin/redis-server", "--map-path",
                              "/var/lib/redis=" + data, *extra)
        eq((rc, report["failed"]), (1, True), report["msg"])
        ok("locale-collate" in report["msg"], report["msg"])
        eq(os.path.exists(h.path("p8.conf")), False)
    rc, report = run_json("rewrite", "server", fixture("redis-8.conf"), "--target",
                          "valkey-8.1", "--probe", "/nonexistent/valkey-server")
    eq((rc, report["failed"]), (1, True))
    ok("/nonexistent/valkey-server" in report["msg"], report["msg"])


# --------------------------------------------------------------------------------------
# The contract: dry run, --check, --apply, idempotency, rollback, exit codes.
# --------------------------------------------------------------------------------------


@test
def apply_is_atomic_backed_up_idempotent_and_rolls_back(h):
    root = h.path("contract")
    shutil.copytree(os.path.join(DATA, "apps", "wordops"), root)
    src = h.path("contract-redis.conf")
    shutil.copy(fixture("ubuntu-7.0-wordops.conf"), src)
    os.chmod(src, 0o640)
    dst = h.path("contract-valkey/valkey.conf")
    backups = h.path("contract-backups")
    before = tree(root)
    server = ["rewrite", "server", src, "--target", "keyshift", "--out", dst,
              "--backup-dir", backups, "--detailed-exitcode"]
    apps = ["rewrite", "apps", root, "--profile", "wordops", "--backup-dir", backups,
            "--detailed-exitcode"]

    # Dry run and --check (even with --apply) write nothing, not even backups.
    for extra in ([], ["--check"], ["--apply", "--check"]):
        rc, report = run_json(*(server + extra))
        eq(rc, 2, "changes pending: %s" % report["msg"])
        eq((report["changed"], report["check_mode"], report["backup_dir"]), (True, True, None))
        rc, report = run_json(*(apps + extra))
        eq(rc, 2, report["msg"])
    eq(os.path.exists(dst) or os.path.exists(backups), False)
    eq(tree(root), before)

    # --apply writes, backs up into one run dir with a manifest.
    rc, report = run_json(*(server + ["--apply"]))
    eq(rc, 2, report["msg"])
    eq(report["check_mode"], False)
    eq(os.stat(dst).st_mode & 0o777, 0o640, "new file takes the source's mode")
    rc, apps_report = run_json(*(apps + ["--apply"]))
    eq(rc, 2, apps_report["msg"])
    run_dir = apps_report["backup_dir"]
    ok(run_dir and run_dir.startswith(backups), apps_report)
    manifest = read(os.path.join(run_dir, "manifest.toml"))
    ok("sha1_before" in manifest and "upstream.conf" in manifest, manifest)
    after = tree(root)
    ok(after != before, "files changed")
    ok(not any(".keyshift-" in f or f.endswith(".bak") for f in after), sorted(after))
    eq(sorted(after), sorted(before), "no file added beside the originals")

    # Second --apply: nothing changes, exit 0 with --detailed-exitcode.
    rc, report = run_json(*(server + ["--apply"]))
    eq((rc, report["changed"], report["backup_dir"]), (0, False, None), report["msg"])
    rc, report = run_json(*(apps + ["--apply"]))
    eq((rc, report["changed"]), (0, False), report["msg"])
    eq(tree(root), after)

    # Rollback: dry run first, then for real; the files are as before.
    rc, report = run_json("rewrite", "rollback", run_dir, "--detailed-exitcode")
    eq((rc, report["changed"], report["check_mode"]), (2, True, True), report["msg"])
    eq(tree(root), after)
    rc, report = run_json("rewrite", "rollback", run_dir, "--apply")
    eq(rc, 0, report["msg"])
    eq(tree(root), before)
    rc, report = run_json("rewrite", "rollback", run_dir, "--apply", "--detailed-exitcode")
    eq((rc, report["changed"]), (0, False), "rollback is idempotent too")
    # The server run created its file: rolling it back removes it.
    server_runs = [os.path.join(backups, d) for d in os.listdir(backups)
                   if os.path.exists(os.path.join(backups, d, "manifest.toml")) and
                   dst in read(os.path.join(backups, d, "manifest.toml"))]
    eq(len(server_runs), 1, "one run wrote the server config")
    rc, report = run_json("rewrite", "rollback", server_runs[0], "--apply")
    eq((rc, os.path.exists(dst)), (0, False), report["msg"])
    eq(os.path.exists(os.path.dirname(dst)), False, "the directory the run made is gone too")


@test
def rollback_refuses_a_file_changed_since_the_run(h):
    root = h.path("changed")
    shutil.copytree(os.path.join(DATA, "apps", "laravel"), root)
    rc, report = run_json("rewrite", "apps", root, "--apply", "--backup-dir", h.path("b"))
    eq(rc, 0, report["msg"])
    env = os.path.join(root, ".env")
    write(env, read(env) + "EXTRA=1\n")
    rc, report = run_json("rewrite", "rollback", report["backup_dir"], "--apply")
    eq((rc, report["failed"]), (1, True))
    ok("changed since the run" in report["msg"], report["msg"])
    ok("EXTRA=1" in read(env), "left alone")


@test
def json_report_has_the_ansible_fields(h):
    rc, report = run_json("rewrite", "server", fixture("redis-8.conf"), "--target", "valkey-8.0",
                          "--out", h.path("j.conf"))
    eq(rc, 0)
    for key in ("changed", "failed", "msg", "diff", "warnings", "backup_dir", "rc"):
        ok(key in report, "missing %s" % key)
    eq(report["rc"], 0)
    d = report["diff"][0]
    eq(sorted(d), ["after", "after_header", "before", "before_header"])
    eq(d["after_header"], h.path("j.conf") + " (new file)")
    ok(any("lazyfree-lazy-eviction" in w for w in report["warnings"]), report["warnings"])


# --------------------------------------------------------------------------------------
# Application settings.
# --------------------------------------------------------------------------------------

APP_FILES = [
    "wordops/etc/nginx/conf.d/upstream.conf",
    "wordops/etc/nginx/conf.d/upstream-tcp.conf",
    "wordops/var/www/example.com/wp-config.php",
    "wordops/var/www/site1.example.com/wp-config.php",
    "wordops/var/www/site10.example.com/wp-config.php",
    "wordops/etc/php/8.2/fpm/php.ini",
    "wordops/etc/php/8.2/fpm/pool.d/www-example.conf",
    "wordops/var/www/shop.example.com/wp-config.php",
    "laravel/.env",
    "nextcloud/config/config.php",
    "django/shop/settings.py",
    "django/blog/settings.py",
    "rails/config/cable.yml",
    "rails/config/environments/production.rb",
    "rails/config/initializers/sidekiq.rb",
]
# Every secret of the app fixtures: none may appear in any report.
APP_SECRETS = ("wp-redis-secret", "shop-acl-secret", "laravel-redis-secret",
               "nextcloud-redis-secret", "django-redis-secret", "rails-redis-secret")


def app_copy(h, name):
    root = h.path(name)
    shutil.copytree(os.path.join(DATA, "apps"), root)
    return root


def golden_name(rel, suffix):
    return "apps-%s.%s" % (rel.replace("/", "_"), suffix)


def syntax_check(h, path):
    """The program that reads the file accepts it: php -l, nginx -t, Python's compiler, ruby -c."""
    if path.endswith(".php"):
        return php_l(path)
    if "nginx" in path:
        return nginx_t(h, path)
    if path.endswith(".py"):
        # py_compile without leaving a __pycache__ in the test tree.
        p = subprocess.run(["/usr/bin/python3", "-c",
                            "import sys; compile(open(sys.argv[1]).read(), sys.argv[1], 'exec')",
                            path], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=30)
        return p.returncode, p.stdout.decode()
    if path.endswith(".rb"):
        p = subprocess.run(["ruby", "-c", path], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=30)
        return p.returncode, p.stdout.decode()
    return 0, ""


@test
def apps_socket_move_matches_the_golden_files_and_passes_nginx_and_php(h):
    need("nginx", "nginx")
    need("php", "php-cli")
    root = app_copy(h, "apps-socket")
    rc, report = run_json("rewrite", "apps", root, "--apply", "--backup-dir", h.path("b"))
    eq(rc, 0, report["msg"])
    for rel in APP_FILES:
        golden(golden_name(rel, "socket"), read(os.path.join(root, rel)))
    need("ruby", "ruby")
    for rel in APP_FILES:
        rc, out = syntax_check(h, os.path.join(root, rel))
        eq(rc, 0, rel + ": " + out)
    ok("/run/redis/" not in read(os.path.join(root, "laravel/.env")), "no old socket left")
    shop = read(os.path.join(root, "django/shop/settings.py"))
    ok('"unix:///run/valkey/valkey-server.sock?db=1"' in shop and
       '"redis+socket:///run/valkey/valkey-server.sock"' in shop, shop)


@test
def apps_tcp_to_socket_move_adds_the_wordpress_constants(h):
    root = app_copy(h, "apps-tcp")
    rc, report = run_json("rewrite", "apps", root, "--profile", "generic", "--from-url",
                          "redis://127.0.0.1:6379", "--to-socket", "/var/run/valkey/valkey.sock",
                          "--apply", "--backup-dir", h.path("b"))
    eq(rc, 0, report["msg"])
    need("ruby", "ruby")
    for rel in APP_FILES:
        golden(golden_name(rel, "tcp-to-socket"), read(os.path.join(root, rel)))
        rc, out = syntax_check(h, os.path.join(root, rel))
        eq(rc, 0, rel + ": " + out)
    # Ruby's redis-client has no unix:// URL and Celery needs redis+socket://: reported.
    warnings = "\n".join(report["warnings"])
    ok("production.rb:9: redis://127.0.0.1:6379: Ruby's redis-client takes only" in warnings,
       warnings)
    ok("settings.py:28: a Celery URL reaches a unix socket only as redis+socket://" in warnings,
       warnings)
    eq(read(os.path.join(root, "rails/config/cable.yml")),
       read(os.path.join(DATA, "apps/rails/config/cable.yml")), "Rails URLs left as they were")
    site10 = read(os.path.join(root, "wordops/var/www/site10.example.com/wp-config.php"))
    ok("define( 'WP_REDIS_SCHEME', 'unix' );\ndefine( 'WP_REDIS_PATH', "
       "'/var/run/valkey/valkey.sock' );" in site10, site10)
    rc, out = nginx_t(h, os.path.join(root, "wordops/etc/nginx/conf.d/upstream-tcp.conf"))
    eq(rc, 0, out)
    ok("valkey://" not in json.dumps(report), "never a valkey:// scheme")
    rc, report = run_json("rewrite", "apps", root, "--profile", "generic", "--from-url",
                          "redis://127.0.0.1:6379", "--to-socket", "/var/run/valkey/valkey.sock",
                          "--apply", "--detailed-exitcode", "--backup-dir", h.path("b"))
    eq((rc, report["changed"]), (0, False), "second run: %s" % report["msg"])


@test
def server_config_mapping_drives_the_apps_rewrite(h):
    root = app_copy(h, "apps-from-server")
    rc, report = run_json("rewrite", "apps", os.path.join(root, "nextcloud"), "--server-config",
                          fixture("redis-7.4.conf"), "--socket", "/run/valkey/nc.sock")
    eq(rc, 0, report["msg"])
    ok("'host' => '/run/valkey/nc.sock'," in report["diff"][0]["after"], report["diff"])


@test
def failed_validation_restores_the_backup(h):
    need("php", "php-cli")
    root = h.path("broken")
    path = os.path.join(root, "wp-config.php")
    text = ("<?php\ndefine( 'WP_REDIS_SCHEME', 'unix' );\n"
            "define( 'WP_REDIS_PATH', '/run/redis/redis-server.sock' );\nif ( {\n")
    write(path, text)
    rc, report = run_json("rewrite", "apps", root, "--check")
    eq((rc, report["failed"]), (1, True), "dry run validates copies")
    ok("php -l" in report["msg"], report["msg"])
    rc, report = run_json("rewrite", "apps", root, "--apply", "--backup-dir", h.path("b"))
    eq((rc, report["failed"]), (1, True))
    ok("validation failed" in report["msg"] and "restored" in report["msg"], report["msg"])
    eq(read(path), text, "the original is back")
    need("nginx", "nginx")
    conf = os.path.join(h.path("broken-nginx"), "nginx", "conf.d", "upstream.conf")
    bad = "upstream redis {\n    server unix:/run/redis/redis-server.sock;\n    keepalive;\n}\n"
    write(conf, bad)
    rc, report = run_json("rewrite", "apps", conf, "--apply", "--backup-dir", h.path("b2"))
    eq((rc, report["failed"]), (1, True))
    ok("nginx -t" in report["msg"] and "keepalive" in report["msg"], report["msg"])
    eq(read(conf), bad, "the original is back")
    # Django settings go through Python's compiler, Rails files through ruby -c.
    need("ruby", "ruby")
    for rel, text, checker in (
            ("dj/settings.py", "CACHES = {'default': {'LOCATION': "
                               "'unix:///run/redis/redis-server.sock'}\n", "python3 compile"),
            ("rb/config/initializers/redis.rb", "REDIS = Redis.new(url: "
                                                "'unix:///run/redis/redis-server.sock'\n",
             "ruby -c")):
        path = os.path.join(h.path("broken-code"), rel)
        write(path, text)
        rc, report = run_json("rewrite", "apps", path, "--apply", "--backup-dir", h.path("b3"))
        eq((rc, report["failed"]), (1, True), rel)
        ok(checker in report["msg"] and "restored" in report["msg"], report["msg"])
        eq(read(path), text, "the original is back")
        eq([f for f in os.listdir(os.path.dirname(path)) if f != os.path.basename(path)], [],
           "no .pyc or temp file left beside it")


@test
def prefix_collisions_are_reported_checked_and_fixed(h):
    root = app_copy(h, "prefixes")
    wordops = os.path.join(root, "wordops")
    rc, report = run_json("rewrite", "apps", wordops)
    eq(rc, 0)
    eq([(os.path.basename(os.path.dirname(c["file"])), c["prefix"], c["other_prefix"])
        for c in report["prefix_collisions"]], [("site1.example.com", "site1", "site10")])
    ok(any("site10" in w for w in report["warnings"]), report["warnings"])
    rc, report = run_json("rewrite", "apps", wordops, "--check-prefixes")
    eq((rc, report["failed"]), (1, True), report["msg"])
    renames = h.path("renames.jsonl")
    rc, report = run_json("rewrite", "apps", wordops, "--fix-prefixes", "--apply",
                          "--rename-keys", renames, "--backup-dir", h.path("b"))
    eq(rc, 0, report["msg"])
    site1 = read(os.path.join(wordops, "var/www/site1.example.com/wp-config.php"))
    site10 = read(os.path.join(wordops, "var/www/site10.example.com/wp-config.php"))
    ok("define( 'WP_REDIS_PREFIX', 'site1:' );" in site1, site1)
    ok('define( "WP_REDIS_PREFIX", "site10:" );' in site10, site10)
    eq([json.loads(line)["to_prefix"] for line in read(renames).splitlines()],
       ["site1:", "site10:"])
    ok(any("no longer reached" in w for w in report["warnings"]), report["warnings"])
    rc, report = run_json("rewrite", "apps", wordops, "--check-prefixes")
    eq((rc, report["prefix_collisions"]), (0, []), report["msg"])


@test
def apps_password_and_db_follow_the_url_flags_in_every_format(h):
    need("php", "php-cli")
    need("ruby", "ruby")
    root = app_copy(h, "apps-mapped")
    before = tree(root)
    args = ["rewrite", "apps", root, "--from-url", "redis://127.0.0.1:6379/0",
            "--to-url", "redis://:N3w%20p%24ss'\"@127.0.0.1:6380/4",
            "--from-socket", "/run/redis/redis-server.sock",
            "--backup-dir", h.path("b-mapped"), "--detailed-exitcode"]
    for fmt in ("text", "json"):
        rc, out, err = run(*(args + ["--format", fmt]))
        eq(rc, 2, err)
        for secret in APP_SECRETS + ("N3w", "p$ss", "p%24ss"):
            ok(secret not in out + err, "%s leaks in %s output" % (secret, fmt))
    eq(tree(root), before, "a dry run writes nothing")
    rc, report = run_json(*(args + ["--apply"]))
    eq(rc, 2, report["msg"])
    # Every change names the line it produced, also after lines were added above it.
    afters = {d["after_header"]: d["after"].split("\n") for d in report["diff"]}
    for c in report["changes"]:
        if c["after"]:
            eq(afters[c["file"]][c["line"] - 1], c["after"], "%s:%d" % (c["file"], c["line"]))
    for rel in APP_FILES:
        golden(golden_name(rel, "mapped"), read(os.path.join(root, rel)))
        rc, out = syntax_check(h, os.path.join(root, rel))
        eq(rc, 0, rel + ": " + out)
    # The new password, exactly, as PHP and .env readers see it.
    secret = "N3w p$ss'\""
    p = subprocess.run(["php", "-n", "-r",
                        "define('ABSPATH', '/nonexistent/'); function require_once_() {}"
                        "$t = file_get_contents($argv[1]);"
                        "$t = str_replace('require_once ABSPATH', '// ', $t);"
                        "eval('?>' . $t); echo json_encode([WP_REDIS_PASSWORD, WP_REDIS_DATABASE,"
                        " WP_REDIS_PORT]);",
                        os.path.join(root, "wordops/var/www/shop.example.com/wp-config.php")],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=30)
    eq(json.loads(p.stdout.decode()), [["shop", secret], 4, 6380])
    env = read(os.path.join(root, "laravel/.env"))
    ok('REDIS_PASSWORD="N3w p\\$ss\'\\""' in env, env)
    ok("REDIS_DB=4\n" in env and "REDIS_CACHE_DB=1\n" in env, "db 0 moves, db 1 stays: " + env)
    nc = read(os.path.join(root, "nextcloud/config/config.php"))
    ok("'dbindex' => 4," in nc, nc)
    # A URL's password is percent-encoded; its database moves only from 0.
    shop = read(os.path.join(root, "django/shop/settings.py"))
    ok('"redis://:N3w%20p%24ss%27%22@127.0.0.1:6380/4"' in shop, shop)
    # No old password given: settings without one get the new one too.
    ok('"redis://:N3w%20p%24ss%27%22@127.0.0.1:6380/2"' in shop, shop)
    ok('"redis://10.0.0.7:6379/0"' in shop, "another server is left alone: " + shop)
    ok("# An example left as a comment stays as it is: redis://127.0.0.1:6379/9" in shop, shop)
    ok("valkey://" not in json.dumps(report), "never a valkey:// scheme")
    rc, report = run_json(*(args + ["--apply"]))
    eq((rc, report["changed"]), (0, False), "second run: %s" % report["msg"])
    # Rollback puts every file back.
    runs = [os.path.join(h.path("b-mapped"), d) for d in os.listdir(h.path("b-mapped"))]
    eq(len(runs), 1)
    rc, report = run_json("rewrite", "rollback", runs[0], "--apply")
    eq(rc, 0, report["msg"])
    eq(tree(root), before)


@test
def only_settings_holding_the_old_password_change(h):
    root = h.path("pw-only")
    write(os.path.join(root, "a/.env"), "REDIS_HOST=127.0.0.1\nREDIS_PASSWORD=old\n")
    write(os.path.join(root, "b/.env"), "REDIS_HOST=127.0.0.1\nREDIS_PASSWORD=other\n")
    write(os.path.join(root, "c/.env"), "REDIS_HOST=10.0.0.9\nREDIS_PASSWORD=old\n")
    rc, report = run_json("rewrite", "apps", root, "--from-url", "redis://:old@127.0.0.1:6379",
                          "--to-url", "redis://:new@127.0.0.1:6379", "--apply",
                          "--backup-dir", h.path("b"))
    eq(rc, 0, report["msg"])
    eq(read(os.path.join(root, "a/.env")), "REDIS_HOST=127.0.0.1\nREDIS_PASSWORD=new\n")
    eq(read(os.path.join(root, "b/.env")), "REDIS_HOST=127.0.0.1\nREDIS_PASSWORD=other\n")
    eq(read(os.path.join(root, "c/.env")), "REDIS_HOST=10.0.0.9\nREDIS_PASSWORD=old\n")
    rc, out, err = run("rewrite", "apps", root, "--to-url", "redis://127.0.0.1:6379/x")
    eq(rc, 2, err)
    ok("--to-url" in err, err)


@test
def server_rewrite_mapping_feeds_password_port_and_socket_to_the_apps(h):
    # The Redis config and the config `rewrite server` wrote, then edited by the admin:
    # a new requirepass and port. `rewrite apps --server-config --server-out` follows both.
    src = h.path("srv/redis.conf")
    write(src, "port 6379\nunixsocket /run/redis/redis-server.sock\nrequirepass old-secret\n")
    dst = h.path("srv/valkey.conf")
    rc, report = run_json("rewrite", "server", src, "--target", "valkey-8.0", "--out", dst,
                          "--apply", "--backup-dir", h.path("b"))
    eq(rc, 0, report["msg"])
    write(dst, read(dst).replace("requirepass old-secret", "requirepass new-secret")
          .replace("port 6379", "port 6390"))
    root = h.path("srv-apps")
    write(os.path.join(root, "tcp/.env"),
          "REDIS_HOST=127.0.0.1\nREDIS_PORT=6379\nREDIS_PASSWORD=old-secret\n")
    write(os.path.join(root, "sock/.env"),
          "REDIS_URL=unix://:old-secret@/run/redis/redis-server.sock?db=2\n")
    rc, report = run_json("rewrite", "apps", root, "--server-config", src, "--server-out", dst,
                          "--apply", "--backup-dir", h.path("b"))
    eq(rc, 0, report["msg"])
    eq(read(os.path.join(root, "tcp/.env")),
       "REDIS_HOST=127.0.0.1\nREDIS_PORT=6390\nREDIS_PASSWORD=new-secret\n")
    eq(read(os.path.join(root, "sock/.env")),
       "REDIS_URL=unix://:new-secret@/run/valkey/valkey-server.sock?db=2\n")
    ok("new-secret" not in json.dumps(report) and "old-secret" not in json.dumps(report),
       "redacted")
    eq(report["mapping"], {"from_sockets": ["/run/redis/redis-server.sock"],
                           "from": "127.0.0.1:6379",
                           "to": "unix:///run/valkey/valkey-server.sock",
                           "tcp_to": "127.0.0.1:6390", "password_changes": True, "db": None})
    rc, report = run_json("rewrite", "apps", root, "--server-config", src, "--server-out",
                          h.path("srv/missing.conf"))
    eq((rc, report["failed"]), (1, True))
    ok("missing.conf" in report["msg"], report["msg"])


@test
def rollback_removes_the_directories_the_run_created(h):
    root = h.path("dirs")
    src = os.path.join(root, "etc/redis/redis.conf")
    shutil.copytree(os.path.join(DATA, "server"), os.path.dirname(src))
    shutil.copy(fixture("redis-7.0-debian.conf"), src)
    before = tree(root)
    dirs_before = sorted(d for d, _, _ in os.walk(root))
    out = os.path.join(root, "etc/valkey/conf.d/valkey.conf")
    rc, report = run_json("rewrite", "server", src, "--target", "valkey-8.0", "--out", out,
                          "--apply", "--backup-dir", h.path("b"))
    eq(rc, 0, report["msg"])
    manifest = read(os.path.join(report["backup_dir"], "manifest.toml"))
    ok("created_dirs = [ '%s/etc/valkey', '%s/etc/valkey/conf.d' ]" % (root, root) in manifest,
       manifest)
    rc, report2 = run_json("rewrite", "rollback", report["backup_dir"], "--detailed-exitcode")
    eq(rc, 2, report2["msg"])
    ok("2 directory(ies) the run created would be removed" in report2["msg"], report2["msg"])
    ok(os.path.exists(out), "dry run")
    rc, report2 = run_json("rewrite", "rollback", report["backup_dir"], "--apply")
    eq(rc, 0, report2["msg"])
    eq(tree(root), before)
    eq(sorted(d for d, _, _ in os.walk(root)), dirs_before, "no directory left behind")
    # A directory that holds a file someone else put there stays, with a warning.
    rc, report = run_json("rewrite", "server", src, "--target", "valkey-8.0", "--out", out,
                          "--apply", "--backup-dir", h.path("b"))
    write(os.path.join(root, "etc/valkey/other.conf"), "x\n")
    rc, report2 = run_json("rewrite", "rollback", report["backup_dir"], "--apply")
    eq(rc, 0, report2["msg"])
    eq(os.path.exists(os.path.dirname(out)), False)
    eq(os.path.exists(os.path.join(root, "etc/valkey/other.conf")), True)
    ok(any("holds other files now" in w for w in report2["warnings"]), report2["warnings"])


@test
def a_config_the_probed_binary_refuses_restores_the_previous_file(h):
    # Debian's redis-server 7.0 as the target binary: redis 7.0 does not know
    # locale-collate, which the Redis 8 fixture keeps for valkey-8.1.
    data = h.path("probe-restore-data")
    os.makedirs(data)
    out = h.path("probe-restore/valkey.conf")
    write(out, "# the previous config\nport 6379\n")
    rc, report = run_json("rewrite", "server", fixture("redis-8.conf"), "--target", "valkey-8.1",
                          "--out", out, "--probe", "/usr/bin/redis-server", "--map-path",
                          "/var/lib/redis=" + data, "--apply", "--backup-dir", h.path("b"))
    eq((rc, report["failed"]), (1, True), report["msg"])
    ok("dry start" in report["msg"] and "restored" in report["msg"], report["msg"])
    eq(read(out), "# the previous config\nport 6379\n", "the backup is back")
    eq(os.listdir(os.path.dirname(out)), ["valkey.conf"], "no temp file left")


@test
def rewritten_configs_start_a_real_valkey_server_when_one_is_given(h):
    """KEYSHIFT_VALKEY_SERVER=/path/to/valkey-server (8.0 unless KEYSHIFT_VALKEY_TARGET says)
    probes and dry-starts every fixture rewritten for it (not in CI, which has only Debian's
    redis-server)."""
    binary = os.environ.get("KEYSHIFT_VALKEY_SERVER")
    if not binary:
        raise Skip("KEYSHIFT_VALKEY_SERVER is not set")
    data = h.path("valkey-data")
    os.makedirs(data)
    target = os.environ.get("KEYSHIFT_VALKEY_TARGET", "valkey-8.0")
    for name in sorted({name for name, _ in SERVER_CASES}):
        out = h.path("real-%s-%s.conf" % (name, target))
        rc, report = run_json("rewrite", "server", fixture(name), "--target", target, "--out",
                              out, "--probe", binary, "--map-path", "/var/lib/redis=" + data,
                              "--apply", "--backup-dir", h.path("b"))
        eq(rc, 0, "%s %s: %s" % (name, target, report["msg"]))
        ok(report["probe"]["server"].startswith("valkey"), report["probe"])


if __name__ == "__main__":
    run_tests()
