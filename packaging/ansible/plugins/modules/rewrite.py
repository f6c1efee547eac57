#!/usr/bin/python3
# keyshift.migrate.rewrite: `keyshift rewrite ... --apply --format json` as an Ansible module.

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: rewrite
short_description: Rewrite a Redis config or the applications using it for a Valkey target
version_added: "0.1.0"
description:
  - Runs C(keyshift rewrite server) or C(keyshift rewrite apps) with C(--apply), which backs
    every file up, writes atomically, validates and restores on failure.
  - keyshift decides what changes; the module reports its JSON object (changed, failed, msg,
    diff) unchanged.
  - In check mode keyshift runs with C(--check) and writes nothing, not even backups.
options:
  kind:
    description: What to rewrite.
    type: str
    required: true
    choices: [server, apps]
  src:
    description:
      - For C(server), the redis.conf to rewrite; for C(apps), the directory to search.
    type: path
    required: true
  target:
    description: The target server (C(--target)), for example C(valkey-8.0) or C(keyshift).
    type: str
  dest:
    description: Where the rewritten server config goes (C(--out)).
    type: path
  profile:
    description: The applications' profile for C(apps) (C(--profile)), for example C(wordops).
    type: str
  backup_dir:
    description: Where keyshift keeps the backups and the manifest C(rewrite rollback) reads.
    type: path
extends_documentation_fragment:
  - keyshift.migrate.keyshift
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
notes:
  - Passwords are redacted by keyshift in the diff and the message.
  - The options are those of keyshift-rewrite(1).
author:
  - keyshift maintainers
"""

EXAMPLES = r"""
- name: Rewrite redis.conf for keyshift serve
  keyshift.migrate.rewrite:
    kind: server
    src: /etc/redis/redis.conf
    target: keyshift
    dest: /etc/keyshift/keyshift.conf
    backup_dir: /var/backups/keyshift

- name: Point WordPress and nginx at the new socket
  keyshift.migrate.rewrite:
    kind: apps
    src: /var/www
    profile: wordops
"""

RETURN = r"""
msg:
  description: keyshift's summary of what changed or would change.
  returned: always
  type: str
exit_status:
  description:
    - keyshift's exit status (0 nothing changed, 2 something changed); not C(rc), which
      Ansible would read as a failure when it is 2.
  returned: always
  type: int
changes:
  description: Every change, with file, line, directive, action, before, after and reason.
  returned: when keyshift printed its JSON object
  type: list
  elements: dict
files:
  description: The files keyshift wrote or would write.
  returned: when keyshift printed its JSON object
  type: list
backup_dir:
  description: Where the backups are.
  returned: when something was written
  type: str
"""

import json

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.keyshift.migrate.plugins.module_utils.keyshift import \
    common_argument_spec


def keyshift_argv(module):
    p = module.params
    argv = [p["keyshift"], "rewrite", p["kind"], p["src"]]
    for option, flag in (("target", "--target"), ("dest", "--out"), ("profile", "--profile"),
                         ("backup_dir", "--backup-dir")):
        if p[option]:
            argv += [flag, p[option]]
    argv += list(p["extra_args"]) + ["--apply", "--format", "json", "--detailed-exitcode"]
    if module.check_mode:
        argv.append("--check")
    return argv


def main():
    module = AnsibleModule(
        argument_spec=common_argument_spec(
            kind=dict(type="str", required=True, choices=["server", "apps"]),
            src=dict(type="path", required=True),
            target=dict(type="str"),
            dest=dict(type="path"),
            profile=dict(type="str"),
            backup_dir=dict(type="path"),
        ),
        supports_check_mode=True,
    )
    argv = keyshift_argv(module)
    rc, out, err = module.run_command(argv)
    try:
        report = json.loads(out)
    except ValueError:
        module.fail_json(msg="keyshift printed no JSON: %s" % (err or out).strip(),
                         exit_status=rc, cmd=argv)
    result = dict(changed=bool(report.get("changed")), msg=report.get("msg", ""), exit_status=rc)
    for key in ("changes", "files", "backup_dir", "warnings"):
        if key in report:
            result[key] = report[key]
    if module._diff and report.get("diff"):
        result["diff"] = report["diff"]
    if report.get("failed") or rc not in (0, 2):
        module.fail_json(**result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
