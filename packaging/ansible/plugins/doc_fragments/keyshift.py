# The options every keyshift.migrate module has: the binary and arguments passed through.

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    DOCUMENTATION = r"""
options:
  extra_args:
    description: More arguments for the keyshift subcommand, as a list.
    type: list
    elements: str
    default: []
  keyshift:
    description: The keyshift binary.
    type: path
    default: keyshift
"""
