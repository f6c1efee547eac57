#!/usr/bin/python3
"""The Ansible collection in packaging/ansible (keyshift.migrate): `ansible-galaxy collection
build` makes its tarball, `ansible-galaxy collection install` takes it, `ansible-doc` renders
keyshift.migrate.rewrite, and a playbook (Debian's ansible, connection local) using the
module reports changed and writes nothing in check mode (the diff shown with --diff),
changes the file on the first apply and reports unchanged on the second.
"""

import json
import os
import shutil
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import REPO, Skip, eq, keyshift_bin, ok, run_tests, test  # noqa: E402

TASK = "Rewrite redis.conf with the collection's module"
PLAY = """\
- hosts: all
  gather_facts: false
  tasks:
    - name: %s
      keyshift.migrate.rewrite:
        kind: server
        src: "{{ src }}"
        target: keyshift
        dest: "{{ dst }}"
        backup_dir: "{{ backups }}"
        keyshift: "{{ keyshift }}"
""" % TASK


class Ansible:
    """Runs ansible commands with a private home and the collection installed under it."""

    def __init__(self, h):
        for tool in ("ansible-galaxy", "ansible-doc", "ansible-playbook"):
            if shutil.which(tool) is None:
                raise Skip("%s is not installed (apt-get install ansible)" % tool)
        self.h = h
        home = h.path("ansible-home")
        os.makedirs(home, exist_ok=True)
        self.env = dict(os.environ, ANSIBLE_HOME=home, ANSIBLE_NOCOLOR="1",
                        ANSIBLE_LOCAL_TEMP=os.path.join(home, "tmp"),
                        ANSIBLE_COLLECTIONS_PATH=h.path("collections"),
                        ANSIBLE_PYTHON_INTERPRETER="/usr/bin/python3")

    def run(self, *argv, **env):
        return subprocess.run(list(argv), capture_output=True, text=True, timeout=300,
                              env=dict(self.env, **env), cwd=self.h.tmp)

    def install(self):
        built = self.run("ansible-galaxy", "collection", "build", "--force",
                         os.path.join(REPO, "packaging", "ansible"), "--output-path",
                         self.h.path("dist"))
        eq(built.returncode, 0, "collection build: " + built.stdout + built.stderr)
        tarball = self.h.path("dist/keyshift-migrate-0.1.0.tar.gz")
        ok(os.path.exists(tarball), built.stdout)
        inst = self.run("ansible-galaxy", "collection", "install", "--force", tarball, "-p",
                        self.h.path("collections"))
        eq(inst.returncode, 0, "collection install: " + inst.stdout + inst.stderr)

    def play(self, *flags, src=None, rc=0):
        extra = {"keyshift": keyshift_bin(), "dst": self.h.path("etc/keyshift/keyshift.conf"),
                 "src": src or os.path.join(REPO, "tests", "data", "redis-7.0-debian.conf"),
                 "backups": self.h.path("backups")}
        p = self.run("ansible-playbook", "-i", "localhost,", "-c", "local",
                     self.h.path("play.yml"), "-e", json.dumps(extra), *flags,
                     ANSIBLE_STDOUT_CALLBACK="json")
        try:
            result = json.loads(p.stdout)
        except ValueError:
            raise AssertionError("ansible-playbook printed no JSON (rc %d): %s %s"
                                 % (p.returncode, p.stdout[-2000:], p.stderr[-2000:]))
        eq(p.returncode, rc, p.stdout[-3000:])
        tasks = {t["task"]["name"]: t["hosts"]["localhost"] for t in result["plays"][0]["tasks"]}
        return tasks[TASK]


@test
def the_collection_builds_installs_and_ansible_doc_renders_its_module(h):
    a = Ansible(h)
    a.install()
    doc = a.run("ansible-doc", "keyshift.migrate.rewrite")
    eq(doc.returncode, 0, doc.stdout + doc.stderr)
    ok("check_mode" in doc.stdout and "backup_dir" in doc.stdout and "kind" in doc.stdout,
       doc.stdout)


@test
def the_module_checks_then_applies_then_reports_unchanged(h):
    a = Ansible(h)
    a.install()
    with open(h.path("play.yml"), "w") as f:
        f.write(PLAY)
    dst = h.path("etc/keyshift/keyshift.conf")

    checked = a.play("--check", "--diff")
    eq(checked["changed"], True, checked)
    ok(not os.path.exists(dst) and not os.path.exists(h.path("backups")),
       "check mode wrote something")
    diff = checked.get("diff")
    ok(diff and any("after" in d for d in (diff if isinstance(diff, list) else [diff])),
       "no diff in check mode: %r" % checked)

    applied = a.play()
    eq(applied["changed"], True, applied)
    ok(os.path.exists(dst), "not written")
    ok("diff" not in applied, "diff without --diff")

    again = a.play()
    eq(again["changed"], False, again)

    failed = a.play(src=h.path("no-such-redis.conf"), rc=2)
    eq(failed.get("failed"), True, failed)
    ok("no-such-redis.conf" in failed["msg"], "keyshift's message names the file: %r" % failed)


if __name__ == "__main__":
    run_tests()
