#!/usr/bin/python3
# keyshift.migrate.import: `keyshift import ... --format json` as an Ansible module.

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: import
short_description: Copy a Redis dataset (a live server, an RDB or AOF file) into a target
version_added: "0.1.0"
description:
  - Runs C(keyshift import SOURCE --format json) and returns its report. A live source is read
    as a replica (C(mode=sync)) or by SCAN and DUMP (C(mode=scan)); a file is checked whole
    before any key is written.
  - The target is a live server (O(to)) or a data file keyshift writes atomically for a target
    version (O(dir), O(dbfilename), O(target)).
  - In check mode keyshift runs with C(--dry-run), reading and judging everything and writing
    nothing; the task reports changed when keys would be written.
options:
  source:
    description: A server URL (C(redis://), C(unix://)) or an RDB, AOF or JSON Lines file.
    type: str
    required: true
  to:
    description: A live target server's URL (C(--to)); without it a data file is written.
    type: str
  dir:
    description: The directory the data file goes to (no O(to)).
    type: path
  dbfilename:
    description: The data file's name (no O(to)).
    type: str
  target:
    description: The server the data must suit (C(--target)), for example C(valkey-8.0).
    type: str
  mode:
    description: How a live source is read.
    type: str
    choices: [sync, scan]
  until:
    description: With C(mode=sync), when to stop (C(caught-up), C(sigterm) or a path).
    type: str
  conflict:
    description: What to do with keys the target already has (C(--conflict)).
    type: str
  checkpoint:
    description: The resume state file (C(--checkpoint)); a rerun goes on from it.
    type: path
extends_documentation_fragment:
  - keyshift.migrate.keyshift
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
notes:
  - The options are those of keyshift-import(1).
author:
  - keyshift maintainers
"""

EXAMPLES = r"""
- name: Convert Redis 7.4's dump.rdb for valkey-server 8.0
  keyshift.migrate.import:
    source: /var/lib/redis/dump.rdb
    dir: /var/lib/valkey
    dbfilename: dump.rdb
    target: valkey-8.0

- name: Copy a live server into another one by replication
  keyshift.migrate.import:
    source: unix:///run/redis/redis-server.sock
    to: redis://127.0.0.1:6380
    mode: sync
    until: caught-up
"""

RETURN = r"""
msg:
  description: What was (or would be) written, or keyshift's error.
  returned: always
  type: str
keys:
  description: keyshift's key counts (read, written, expired, filtered, ...).
  returned: when keyshift printed its report
  type: dict
report:
  description: keyshift import's whole JSON report.
  returned: when keyshift printed its report
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.keyshift.migrate.plugins.module_utils.keyshift import (
    add_options, common_argument_spec, run_json)

FLAGS = (("to", "--to"), ("dir", "--dir"), ("dbfilename", "--dbfilename"),
         ("target", "--target"), ("mode", "--mode"), ("until", "--until"),
         ("conflict", "--conflict"), ("checkpoint", "--checkpoint"))


def main():
    module = AnsibleModule(
        argument_spec=common_argument_spec(
            source=dict(type="str", required=True),
            to=dict(type="str"),
            dir=dict(type="path"),
            dbfilename=dict(type="str"),
            target=dict(type="str"),
            mode=dict(type="str", choices=["sync", "scan"]),
            until=dict(type="str"),
            conflict=dict(type="str"),
            checkpoint=dict(type="path"),
        ),
        supports_check_mode=True,
    )
    p = module.params
    argv = add_options([p["keyshift"], "import", p["source"]], p, FLAGS)
    argv += list(p["extra_args"]) + ["--format", "json"]
    if module.check_mode:
        argv.append("--dry-run")
    rc, report = run_json(module, argv, ok_status=(0, 1))
    keys = report.get("keys", {})
    count = keys.get("written", 0)
    for w in report.get("warnings", []):
        module.warn(w)
    if not report.get("ok") or rc != 0:
        module.fail_json(msg=report.get("error") or "keyshift import exited with %d" % rc,
                         keys=keys, report=report, exit_status=rc)
    verb = "would write" if module.check_mode else "wrote"
    module.exit_json(changed=count > 0,
                     msg="%s %d keys from %s into %s" % (verb, count, report.get("source", ""),
                                                         report.get("target", "")),
                     keys=keys, report=report, exit_status=rc)


if __name__ == "__main__":
    main()
