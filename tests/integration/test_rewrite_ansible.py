#!/usr/bin/python3
"""The JSON contract of `keyshift rewrite` driven by a real `ansible-playbook` (Debian's
ansible, connection local): a check-mode run reports changed and writes nothing, the first
apply run reports changed and writes, the second reports unchanged.

Run: KEYSHIFT_BIN=build/keyshift /usr/bin/python3 tests/integration/test_rewrite_ansible.py
"""

import json
import os
import shutil
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import (REPO, SetupError, _apt_install, eq, keyshift_bin, ok,  # noqa: E402
                     run_tests, test)

DATA = os.path.join(REPO, "tests", "data", "rewrite")

# The idiom the man page documents: keyshift decides, Ansible reads rc and the JSON.
PLAYBOOK = """\
- hosts: all
  gather_facts: false
  vars:
    check_flag: "{{ ['--check'] if ansible_check_mode else [] }}"
  tasks:
    - name: Rewrite redis.conf for the target
      ansible.builtin.command:
        argv: "{{ [keyshift, 'rewrite', 'server', src, '--target', 'keyshift', '--out', dst,
                  '--apply', '--format', 'json', '--detailed-exitcode',
                  '--backup-dir', backups] + check_flag }}"
      check_mode: false
      register: server
      changed_when: server.rc == 2
      failed_when: server.rc not in [0, 2] or (server.stdout | from_json).failed

    - name: Point the applications at the new socket
      ansible.builtin.command:
        argv: "{{ [keyshift, 'rewrite', 'apps', apps, '--profile', 'wordops', '--apply',
                  '--format', 'json', '--detailed-exitcode', '--backup-dir', backups]
                  + check_flag }}"
      check_mode: false
      register: apps_result
      changed_when: apps_result.rc == 2
      failed_when: apps_result.rc not in [0, 2]

    - name: Show what keyshift said
      ansible.builtin.debug:
        msg: "{{ (server.stdout | from_json).msg }} / {{ (apps_result.stdout | from_json).msg }}"
"""


def ensure_ansible():
    if shutil.which("ansible-playbook") is None:
        _apt_install(["ansible"])
    if shutil.which("ansible-playbook") is None:
        raise SetupError("ansible-playbook missing after apt-get install ansible")


def tree(root):
    out = {}
    for d, _, files in os.walk(root):
        for f in files:
            p = os.path.join(d, f)
            with open(p) as fh:
                out[os.path.relpath(p, root)] = fh.read()
    return out


def play(h, check):
    home = h.path("ansible-home")
    os.makedirs(home, exist_ok=True)
    env = dict(os.environ, ANSIBLE_STDOUT_CALLBACK="json", ANSIBLE_HOME=home,
               ANSIBLE_LOCAL_TEMP=os.path.join(home, "tmp"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_RETRY_FILES_ENABLED="0", ANSIBLE_HOST_KEY_CHECKING="0",
               ANSIBLE_PYTHON_INTERPRETER="/usr/bin/python3")
    extra = {"keyshift": keyshift_bin(), "src": os.path.join(REPO, "tests", "data",
                                                               "redis-7.0-debian.conf"),
             "dst": h.path("etc/valkey/valkey.conf"), "apps": h.path("apps"),
             "backups": h.path("backups")}
    argv = ["ansible-playbook", "-i", "localhost,", "-c", "local", h.path("play.yml"),
            "-e", json.dumps(extra)]
    if check:
        argv.append("--check")
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                       timeout=120, cwd=h.tmp)
    out = p.stdout.decode()
    try:
        result = json.loads(out)
    except ValueError:
        raise AssertionError("ansible output is not JSON (rc %d): %s %s"
                             % (p.returncode, out[-2000:], p.stderr.decode()[-2000:]))
    tasks = {t["task"]["name"]: t["hosts"]["localhost"] for t in result["plays"][0]["tasks"]}
    return p.returncode, tasks


@test
def ansible_check_then_apply_then_apply_again(h):
    ensure_ansible()
    with open(h.path("play.yml"), "w") as f:
        f.write(PLAYBOOK)
    shutil.copytree(os.path.join(DATA, "apps", "wordops"), h.path("apps"))
    before = tree(h.path("apps"))

    rc, tasks = play(h, check=True)
    eq(rc, 0, tasks)
    eq(tasks["Rewrite redis.conf for the target"]["changed"], True)
    eq(tasks["Point the applications at the new socket"]["changed"], True)
    report = json.loads(tasks["Rewrite redis.conf for the target"]["stdout"])
    eq((report["check_mode"], report["backup_dir"]), (True, None))
    eq(os.path.exists(h.path("etc/valkey/valkey.conf")) or os.path.exists(h.path("backups")),
       False, "check mode writes nothing, not even backups")
    eq(tree(h.path("apps")), before)

    rc, tasks = play(h, check=False)
    eq(rc, 0, tasks)
    eq(tasks["Rewrite redis.conf for the target"]["changed"], True)
    eq(tasks["Point the applications at the new socket"]["changed"], True)
    ok(os.path.exists(h.path("etc/valkey/valkey.conf")), "written")
    ok(tree(h.path("apps")) != before, "apps rewritten")
    report = json.loads(tasks["Point the applications at the new socket"]["stdout"])
    ok(report["backup_dir"] and os.path.isdir(report["backup_dir"]), report)

    rc, tasks = play(h, check=False)
    eq(rc, 0, tasks)
    eq(tasks["Rewrite redis.conf for the target"]["changed"], False)
    eq(tasks["Point the applications at the new socket"]["changed"], False)
    ok("nothing to change" in tasks["Show what keyshift said"]["msg"], tasks)


if __name__ == "__main__":
    run_tests()
