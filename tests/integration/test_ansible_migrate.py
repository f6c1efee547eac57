#!/usr/bin/python3
"""The collection's keyshift.migrate.import, verify and migrate modules and its role
keyshift.migrate.redis_to_valkey, driven by Debian's ansible-playbook (connection local)
against a throw-away host tree (test_migrate_plan's: redis-server 7.0 with data, an nginx
upstream and a wp-config.php) moved to keyshift serve through --service-manager command:
check mode reports changed and changes nothing, the first run migrates (data verified, apps
repointed, the handler run), a second run reports unchanged, a failing verify fails the play
with keyshift's message; ansible-doc renders the modules and the role; `ansible-test sanity`
runs on the collection when it can run offline.

Run: KEYSHIFT_BIN=build/keyshift /usr/bin/python3 tests/integration/test_ansible_migrate.py
"""

import json
import os
import shutil
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

os.environ.setdefault("KEYSHIFT_TEST_PORTS", "23460-23499")  # apart from the other migrate tests

import harness  # noqa: E402
from harness import REPO, RespConn, Skip, eq, keyshift_bin, ok, run_tests, test  # noqa: E402

_OWN = len(harness._TESTS)
from test_ansible_collection import Ansible  # noqa: E402
from test_migrate_plan import Host, check_migrated, conn_up, sha  # noqa: E402
del harness._TESTS[_OWN:]  # the shared fixtures only: their own tests run in their files

ROLE_PLAY = """\
- hosts: all
  gather_facts: false
  roles:
    - role: keyshift.migrate.redis_to_valkey
"""

VERIFY_PLAY = """\
- hosts: all
  gather_facts: false
  tasks:
    - name: Verify
      keyshift.migrate.verify:
        source: "{{ src }}"
        target: "{{ dst }}"
        keyshift: "{{ keyshift }}"
"""

IMPORT_PLAY = """\
- hosts: all
  gather_facts: false
  tasks:
    - name: Import
      keyshift.migrate.import:
        source: "{{ src }}"
        dir: "{{ dir }}"
        dbfilename: copy.rdb
        target: valkey-8.0
        mode: scan
        extra_args: [--no-checkpoint]
        keyshift: "{{ keyshift }}"
"""


def role_vars(host):
    return {
        "redis_to_valkey_keyshift": keyshift_bin(),
        "redis_to_valkey_source": "unix://" + host.src_sock,
        "redis_to_valkey_to": "keyshift",
        "redis_to_valkey_strategy": "snapshot",
        "redis_to_valkey_service_manager": "command",
        "redis_to_valkey_source_start": host.source_start,
        "redis_to_valkey_source_stop": host.source_stop,
        "redis_to_valkey_target_start": host.target_start,
        "redis_to_valkey_target_stop": host.target_stop,
        "redis_to_valkey_target_socket": host.dst_sock,
        "redis_to_valkey_target_dir": host.p("var/lib/valkey"),
        "redis_to_valkey_target_config": host.dst_conf,
        "redis_to_valkey_apps": host.apps,
        "redis_to_valkey_apps_profile": "",
        "redis_to_valkey_state_dir": host.p("state"),
        "redis_to_valkey_bench_requests": 0,
        "redis_to_valkey_plan_args": [
            "--layout", "custom",
            "--map-path", "%s=%s" % (host.p("var/log/redis"), host.p("var/log/valkey")),
            "--map-path", "%s=%s" % (host.p("run/redis"), host.p("run/valkey"))],
        "redis_to_valkey_reload_commands": ["touch " + host.p("reloaded")],
    }


def play(a, h, name, text, extra, *flags, rc=0):
    """Runs one playbook; returns {task name: its localhost result} and the stats."""
    path = h.path(name)
    with open(path, "w") as f:
        f.write(text)
    p = a.run("ansible-playbook", "-i", "localhost,", "-c", "local", path, "-e",
              json.dumps(extra), *flags, ANSIBLE_STDOUT_CALLBACK="json")
    try:
        result = json.loads(p.stdout)
    except ValueError:
        raise AssertionError("ansible-playbook printed no JSON (rc %d): %s %s"
                             % (p.returncode, p.stdout[-2000:], p.stderr[-2000:]))
    eq(p.returncode, rc, p.stdout[-4000:])
    tasks = {}
    for t in result["plays"][0]["tasks"]:
        tasks[t["task"]["name"]] = t["hosts"].get("localhost", {})
    return tasks, result["stats"]["localhost"]


@test
def ansible_doc_renders_the_modules_and_the_role(h):
    a = Ansible(h)
    a.install()
    for module, words in (("import", ("dbfilename", "dry-run")),
                          ("verify", ("fail_on_difference", "EQUAL")),
                          ("migrate", ("rollback", "strategy", "plan_file"))):
        doc = a.run("ansible-doc", "keyshift.migrate." + module)
        eq(doc.returncode, 0, doc.stdout + doc.stderr)
        ok(all(w in doc.stdout for w in words), "ansible-doc %s:\n%s" % (module, doc.stdout))
    doc = a.run("ansible-doc", "-t", "role", "keyshift.migrate.redis_to_valkey")
    eq(doc.returncode, 0, doc.stdout + doc.stderr)
    ok("redis_to_valkey_strategy" in doc.stdout, doc.stdout)


@test
def the_role_checks_then_migrates_then_reports_unchanged(h):
    a = Ansible(h)
    a.install()
    host = Host(h, "ahost")
    try:
        host.start_source()
        host.fill()
        extra = role_vars(host)

        tasks, stats = play(a, h, "role.yml", ROLE_PLAY, extra, "--check", "--diff")
        applied = [t for n, t in tasks.items() if "Apply the plan" in n][0]
        eq(applied["changed"], True, applied)
        ok("stop-source" in applied["ran"], "what apply would run: %r" % applied)
        ok(any(host.dst_sock in d.get("prepared", "") for d in applied.get("diff", [])),
           "the apps' diff in check mode: %r" % applied)
        ok(conn_up(host.src_sock) and not conn_up(host.dst_sock), "check mode changed nothing")
        ok(not os.path.exists(host.p("state/plan.toml")), "check mode wrote no plan")
        for path, digest in host.before.items():
            eq(sha(path), digest, "%s untouched by check mode" % path)
        ok(not os.path.exists(host.p("reloaded")), "no handler in check mode")

        tasks, stats = play(a, h, "role.yml", ROLE_PLAY, extra)
        ok(stats["changed"] >= 2, "plan and apply changed: %r" % stats)
        verified = [t for n, t in tasks.items() if "Verify" in n][0]
        eq((verified["changed"], verified["equal"]), (False, True), verified)
        ok(os.path.exists(host.p("reloaded")), "the handler ran")
        check_migrated(host, host.p("state/plan.toml"), [], {})

        os.unlink(host.p("reloaded"))
        tasks, stats = play(a, h, "role.yml", ROLE_PLAY, extra)
        eq(stats["changed"], 0, "a second run changes nothing: %r" % tasks)
        ok(not os.path.exists(host.p("reloaded")), "no handler when nothing changed")

        # A failing verify fails the play with keyshift's words.
        with RespConn(path=host.dst_sock) as c:
            c.command("DEL", "str:7")
        v = {"src": host.p("var/lib/redis/dump.rdb"), "dst": "unix://" + host.dst_sock,
             "keyshift": keyshift_bin()}
        tasks, _ = play(a, h, "verify.yml", VERIFY_PLAY, v, rc=2)
        eq(tasks["Verify"].get("failed"), True, tasks)
        ok("str:7" in tasks["Verify"]["msg"] and "missing_on_target" in tasks["Verify"]["msg"],
           "keyshift's difference in the message: %r" % tasks["Verify"])

        # import: check mode is --dry-run (nothing written), then it writes the file.
        os.makedirs(h.path("imported"))
        i = {"src": "unix://" + host.dst_sock, "dir": h.path("imported"),
             "keyshift": keyshift_bin()}
        tasks, _ = play(a, h, "import.yml", IMPORT_PLAY, i, "--check")
        eq(tasks["Import"]["changed"], True, tasks)
        ok(not os.path.exists(h.path("imported/copy.rdb")), "check mode wrote nothing")
        tasks, _ = play(a, h, "import.yml", IMPORT_PLAY, i)
        ok(tasks["Import"]["changed"] and tasks["Import"]["keys"]["written"] >= 440, tasks)
        ok(os.path.exists(h.path("imported/copy.rdb")), "the data file written")
    finally:
        host.stop_all()


@test
def ansible_test_sanity_passes_on_the_collection(h):
    """ansible-test wants the collection under ansible_collections/NS/NAME and a Python it
    can use without a network: --python with the running one, no venv or container. Skips
    when the installed ansible-test cannot run that way."""
    if shutil.which("ansible-test") is None:
        raise Skip("no ansible-test (Debian's ansible-core ships it)")
    import subprocess
    root = h.path("sanity/ansible_collections/keyshift/migrate")
    shutil.copytree(os.path.join(REPO, "packaging", "ansible"), root,
                    ignore=shutil.ignore_patterns("*.tar.gz", "__pycache__", "tests"))
    subprocess.run(["git", "init", "-q", root], check=True)
    subprocess.run(["git", "-C", root, "add", "-A"], check=True)
    py = "%d.%d" % sys.version_info[:2]
    p = subprocess.run(["ansible-test", "sanity", "--python", py, "--color", "no"], cwd=root,
                       capture_output=True, text=True, timeout=600,
                       env=dict(os.environ, HOME=h.path("sanity")))
    out = p.stdout + p.stderr
    print(out[-3000:])
    # Each sanity test builds a venv and bootstraps pip into it from the network.
    offline = ("Download failed" in out or "does not have pip available" in out
               or "Name or service not known" in out)
    if p.returncode != 0 and offline:
        raise Skip("ansible-test sanity cannot run offline (its venvs fetch pip): "
                   + out.strip().splitlines()[-1][:300])
    eq(p.returncode, 0, "ansible-test sanity: " + out[-4000:])


if __name__ == "__main__":
    run_tests()
