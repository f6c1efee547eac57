#!/usr/bin/python3
# keyshift.migrate.migrate: `keyshift migrate plan|apply|rollback|status` as an Ansible module.

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: migrate
short_description: Plan, apply, roll back or show a keyshift migration of a Redis server
version_added: "0.1.0"
description:
  - C(command=plan) runs C(keyshift migrate plan), which asks the running source what it is,
    runs the preflight checks and writes the plan (keyshift-migrate-plan(5)); an existing plan
    is kept unless O(force) is set, so a second run reports unchanged.
  - C(command=apply) runs C(keyshift migrate apply PLAN --format json), running every step not yet done,
    journaled, resumable after a crash; a failed check undoes its stage. Steps already done
    are skipped, so a second apply reports unchanged.
  - C(command=rollback) runs C(keyshift migrate rollback PLAN --format json), going back to the source,
    writes made on the target synced back first.
  - C(command=status) reports the journal and never changes anything.
  - In check mode apply and rollback run with C(--check) (and C(--diff) in diff mode, for the file
    diffs of the rewrite steps); plan writes its plan into a temporary file and returns its
    path, so a following apply in check mode can read it.
options:
  command:
    description: What to do.
    type: str
    choices: [plan, apply, rollback, status]
    default: apply
  plan:
    description: The plan file (written by C(plan), read by the others).
    type: path
    required: true
  force:
    description: With C(plan), write a new plan even when O(plan) exists.
    type: bool
    default: false
  source:
    description: With C(plan), the running source (C(--from)), for example C(unix:///run/redis/redis-server.sock).
    type: str
  to:
    description: With C(plan), the target.
    type: str
    choices: [keyshift, valkey-server]
    default: valkey-server
  strategy:
    description:
      - With C(plan), C(replica) (the target follows the source live; the cutover waits for
        lag 0 under CLIENT PAUSE WRITE) or C(snapshot) (SAVE, stop, convert, start).
    type: str
    choices: [replica, snapshot]
    default: replica
  service_manager:
    description: With C(plan), C(systemd) or C(command) (the four commands below).
    type: str
    choices: [systemd, command]
    default: systemd
  source_start:
    description: Shell command starting the source (C(service_manager=command)).
    type: str
  source_stop:
    description: Shell command stopping the source.
    type: str
  target_start:
    description: Shell command starting the target.
    type: str
  target_stop:
    description: Shell command stopping the target.
    type: str
  target_binary:
    description: valkey-server's path (default found on PATH).
    type: path
  target_config:
    description: Where the target's config goes.
    type: path
  target_socket:
    description: The target's unix socket.
    type: path
  target_dir:
    description: The target's data directory.
    type: path
  target_port:
    description: The target's TCP port (replica default none, snapshot default the source's).
    type: int
  apps:
    description: Application files or directories C(rewrite apps) points at the target.
    type: list
    elements: path
    default: []
  apps_profile:
    description: C(rewrite apps --profile), for example C(wordops).
    type: str
  web_user:
    description: Who must reach the target's socket (the socket-group preflight).
    type: str
  state_dir:
    description: Journal, backups and reports (with C(plan); the others take the plan's).
    type: path
  bench_requests:
    description: Requests per bench test before and after; 0 skips the benches.
    type: int
extends_documentation_fragment:
  - keyshift.migrate.keyshift
attributes:
  check_mode:
    support: full
  diff_mode:
    support: partial
    details: apply and rollback in check mode show the rewrite steps' file diffs.
notes:
  - The options of C(plan) are those of keyshift-migrate(1); passwords in diffs are redacted by
    keyshift.
author:
  - keyshift maintainers
"""

EXAMPLES = r"""
- name: Plan the move of Debian's redis-server to valkey-server
  keyshift.migrate.migrate:
    command: plan
    plan: /var/lib/keyshift/migrate/plan.toml
    source: unix:///run/redis/redis-server.sock
    to: valkey-server
    strategy: replica
    apps: [/etc/nginx/conf.d, /var/www]
  register: planned

- name: Run it
  keyshift.migrate.migrate:
    command: apply
    plan: "{{ planned.plan_file }}"

- name: Go back to Redis
  keyshift.migrate.migrate:
    command: rollback
    plan: /var/lib/keyshift/migrate/plan.toml
"""

RETURN = r"""
msg:
  description: keyshift's summary, or why it failed.
  returned: always
  type: str
plan_file:
  description: The plan read or written (a temporary file for C(plan) in check mode).
  returned: always
  type: str
strategy:
  description: The plan's strategy.
  returned: when the plan could be read
  type: str
preflight:
  description: The plan's preflight checks (name, verdict, detail).
  returned: with C(plan)
  type: list
  elements: dict
source:
  description: The plan's source (kind, version, url, data_file, ...).
  returned: when the plan could be read
  type: dict
target:
  description: The plan's target.
  returned: when the plan could be read
  type: dict
ran:
  description: Steps run (or, in check mode, that would run).
  returned: with apply
  type: list
  elements: str
skipped:
  description: Steps already done.
  returned: with apply
  type: list
  elements: str
undone:
  description: Steps undone.
  returned: with apply and rollback
  type: list
  elements: str
steps:
  description: Every step with its journal state, times and message.
  returned: with apply, rollback and status
  type: list
  elements: dict
"""

import os
import tempfile

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.keyshift.migrate.plugins.module_utils.keyshift import (
    add_options, common_argument_spec, run_json)

try:
    import tomllib  # Python 3.11
except ImportError:  # pragma: no cover - older Pythons report less
    tomllib = None

PLAN_FLAGS = (("to", "--to"), ("strategy", "--strategy"), ("service_manager", "--service-manager"),
              ("source_start", "--source-start"), ("source_stop", "--source-stop"),
              ("target_start", "--target-start"), ("target_stop", "--target-stop"),
              ("target_binary", "--target-binary"), ("target_config", "--target-config"),
              ("target_socket", "--target-socket"), ("target_dir", "--target-dir"),
              ("target_port", "--target-port"), ("apps_profile", "--apps-profile"),
              ("web_user", "--web-user"), ("state_dir", "--state-dir"),
              ("bench_requests", "--bench-requests"))


def plan_facts(path):
    """What the plan says of itself, for the caller's later tasks."""
    if tomllib is None:
        return {}
    try:
        with open(path, "rb") as f:
            plan = tomllib.load(f)
    except (OSError, ValueError):
        return {}
    head = plan.get("keyshift_migration_plan", {})
    return dict(strategy=head.get("strategy", ""), source=plan.get("source", {}),
                target=plan.get("target", {}), preflight=plan.get("preflight", []))


def make_plan(module):
    p = module.params
    if os.path.exists(p["plan"]) and not p["force"]:
        module.exit_json(changed=False, plan_file=p["plan"], msg="%s exists" % p["plan"],
                         **plan_facts(p["plan"]))
    if not p["source"]:
        module.fail_json(msg="command=plan needs source (the running server's URL)")
    out = p["plan"]
    if module.check_mode:
        fd, out = tempfile.mkstemp(prefix="keyshift-plan-", suffix=".toml")
        os.close(fd)
        os.unlink(out)
    argv = add_options([p["keyshift"], "migrate", "plan", "--from", p["source"]], p, PLAN_FLAGS)
    if p["apps"]:
        argv += ["--apps"] + list(p["apps"])
    argv += list(p["extra_args"]) + ["--out", out]
    rc, stdout, stderr = module.run_command(argv)
    facts = plan_facts(out)
    failed = [c for c in facts.get("preflight", []) if c.get("verdict") == "fail"]
    if rc != 0 or not os.path.exists(out):
        why = "; ".join("%s: %s" % (c.get("name"), c.get("detail")) for c in failed)
        module.fail_json(msg="keyshift migrate plan exited with %d: %s" % (
            rc, why or (stderr or stdout).strip()), plan_file=out, exit_status=rc, **facts)
    module.exit_json(changed=True, plan_file=out, msg=stdout.strip(), exit_status=rc, **facts)


def main():
    module = AnsibleModule(
        argument_spec=common_argument_spec(
            command=dict(type="str", default="apply", choices=["plan", "apply", "rollback",
                                                               "status"]),
            plan=dict(type="path", required=True),
            force=dict(type="bool", default=False),
            source=dict(type="str"),
            to=dict(type="str", default="valkey-server", choices=["keyshift", "valkey-server"]),
            strategy=dict(type="str", default="replica", choices=["replica", "snapshot"]),
            service_manager=dict(type="str", default="systemd", choices=["systemd", "command"]),
            source_start=dict(type="str"),
            source_stop=dict(type="str"),
            target_start=dict(type="str"),
            target_stop=dict(type="str"),
            target_binary=dict(type="path"),
            target_config=dict(type="path"),
            target_socket=dict(type="path"),
            target_dir=dict(type="path"),
            target_port=dict(type="int"),
            apps=dict(type="list", elements="path", default=[]),
            apps_profile=dict(type="str"),
            web_user=dict(type="str"),
            state_dir=dict(type="path"),
            bench_requests=dict(type="int"),
        ),
        supports_check_mode=True,
    )
    p = module.params
    if p["command"] == "plan":
        make_plan(module)
    if not os.path.exists(p["plan"]):
        module.fail_json(msg="%s: no such plan (run command=plan first)" % p["plan"])
    argv = [p["keyshift"], "migrate", p["command"], p["plan"], "--format", "json"]
    if module.check_mode and p["command"] != "status":
        argv.append("--check")
        if module._diff and p["command"] == "apply":
            argv.append("--diff")
    argv += list(p["extra_args"])
    rc, report = run_json(module, argv, ok_status=(0, 1))
    result = dict(changed=bool(report.get("changed")) and p["command"] != "status",
                  msg=report.get("msg", ""), plan_file=p["plan"], exit_status=rc,
                  **plan_facts(p["plan"]))
    for key in ("ran", "skipped", "undone", "steps", "steps_done", "steps_total", "next"):
        if key in report:
            result[key] = report[key]
    if module._diff and report.get("diff"):
        result["diff"] = [dict(prepared=d.get("prepared", "")) for d in report["diff"]]
    if report.get("failed") or rc != 0:
        module.fail_json(**result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
