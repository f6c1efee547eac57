#!/usr/bin/python3
# keyshift.migrate.verify: `keyshift verify data ... --format json` as an Ansible module.

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: verify
short_description: Prove two datasets equal (keys, types, TTLs and values)
version_added: "0.1.0"
description:
  - Runs C(keyshift verify data SOURCE TARGET --format json). Either side is a server URL or a
    file (RDB, AOF, JSON Lines). It only reads, so it runs the same in check mode and never
    reports changed.
  - Fails the task with the first differences keyshift found (key, database and reason) unless
    O(fail_on_difference) is false.
options:
  source:
    description: The dataset to compare from (a URL or a file).
    type: str
    required: true
  target:
    description: The dataset to compare with (a URL or a file).
    type: str
    required: true
  sample:
    description: Compare only this percentage of the keys (C(--sample)).
    type: float
  ttl_tolerance:
    description: TTL difference allowed, in ms (C(--ttl-tolerance)).
    type: int
  rounds:
    description: Rounds for keys that differ while writers run (C(--rounds)).
    type: int
  db:
    description: Only this database.
    type: int
  match:
    description: Only keys matching this glob pattern.
    type: str
  fail_on_difference:
    description: Fail the task when the datasets differ.
    type: bool
    default: true
extends_documentation_fragment:
  - keyshift.migrate.keyshift
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
notes:
  - The options are those of keyshift-verify(1).
author:
  - keyshift maintainers
"""

EXAMPLES = r"""
- name: The migrated target holds what the source saved
  keyshift.migrate.verify:
    source: /var/lib/redis/dump.rdb
    target: unix:///run/valkey/valkey.sock
"""

RETURN = r"""
msg:
  description: C(EQUAL) with the count, or the differences.
  returned: always
  type: str
equal:
  description: Whether the datasets are equal.
  returned: when keyshift printed its report
  type: bool
keys_compared:
  description: Keys compared.
  returned: when keyshift printed its report
  type: int
differences:
  description: The differences keyshift lists (db, key, reason, both sides' type and TTL).
  returned: when keyshift printed its report
  type: list
  elements: dict
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.keyshift.migrate.plugins.module_utils.keyshift import (
    add_options, common_argument_spec, run_json)

FLAGS = (("sample", "--sample"), ("ttl_tolerance", "--ttl-tolerance"), ("rounds", "--rounds"),
         ("db", "--db"), ("match", "--match"))


def main():
    module = AnsibleModule(
        argument_spec=common_argument_spec(
            source=dict(type="str", required=True),
            target=dict(type="str", required=True),
            sample=dict(type="float"),
            ttl_tolerance=dict(type="int"),
            rounds=dict(type="int"),
            db=dict(type="int"),
            match=dict(type="str"),
            fail_on_difference=dict(type="bool", default=True),
        ),
        supports_check_mode=True,
    )
    p = module.params
    argv = add_options([p["keyshift"], "verify", "data", p["source"], p["target"]], p, FLAGS)
    argv += list(p["extra_args"]) + ["--format", "json", "--no-progress"]
    rc, report = run_json(module, argv, ok_status=(0, 1))
    differences = report.get("differences", [])
    result = dict(changed=False, equal=bool(report.get("equal")),
                  keys_compared=report.get("keys_compared", 0), differences=differences,
                  exit_status=rc)
    if result["equal"]:
        module.exit_json(msg="EQUAL: %d keys compared" % result["keys_compared"], **result)
    shown = ", ".join("db %s key %s: %s" % (d.get("db"), d.get("key"), d.get("reason"))
                      for d in differences[:5])
    msg = "%s and %s differ in %d keys: %s" % (p["source"], p["target"],
                                               report.get("differences_total", len(differences)),
                                               shown)
    if p["fail_on_difference"]:
        module.fail_json(msg=msg, **result)
    module.exit_json(msg=msg, **result)


if __name__ == "__main__":
    main()
