# What the keyshift.migrate modules share: running the binary and reading its one JSON object.

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json


def common_argument_spec(**spec):
    """`spec` with the options every module has (extra_args, keyshift; doc fragment
    keyshift.migrate.keyshift)."""
    spec.update(extra_args=dict(type="list", elements="str", default=[]),
                keyshift=dict(type="path", default="keyshift"))
    return spec


def run_json(module, argv, ok_status=(0,)):
    """Runs keyshift and returns (exit status, its JSON object); fails the task, with
    keyshift's own words, when it printed none or when the exit status is not in ok_status
    and the object says nothing better."""
    rc, out, err = module.run_command(argv)
    try:
        report = json.loads(out)
    except ValueError:
        module.fail_json(msg="keyshift printed no JSON (exit %d): %s" % (rc, (err or out).strip()),
                         exit_status=rc, cmd=argv)
    if not isinstance(report, dict):
        module.fail_json(msg="keyshift printed JSON that is not an object", exit_status=rc,
                         cmd=argv)
    if rc not in ok_status and not report.get("failed") and report.get("ok", True):
        module.fail_json(msg="keyshift exited with %d: %s" % (rc, err.strip()), exit_status=rc,
                         cmd=argv, report=report)
    return rc, report


def add_options(argv, params, flags):
    """Appends `--flag value` for every (option, flag) whose parameter is set; a list parameter
    repeats its flag, a bool one is a flag alone."""
    for option, flag in flags:
        value = params.get(option)
        if value is None or value == "" or value == [] or value is False:
            continue
        if value is True:
            argv.append(flag)
        elif isinstance(value, list):
            for item in value:
                argv += [flag, str(item)]
        else:
            argv += [flag, str(value)]
    return argv
