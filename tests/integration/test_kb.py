#!/usr/bin/python3
"""The version knowledge base (`keyshift kb`) against the servers that can run here: every
command Debian's redis-server 7.0 lists in COMMAND must equal the redis-7.0 table (arity,
flags, key range, ACL categories, key specs), and keyshift serve's COMMAND must equal the
valkey-8.0 table for each command it has. The commands of Valkey 8.0.1 that keyshift still
lacks are listed here by name, so the list can only shrink on purpose.

Run: KEYSHIFT_BIN=build/keyshift /usr/bin/python3 tests/integration/test_kb.py [NAME...]
"""

import json
import os
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import eq, keyshift_bin, ok, run_tests, test  # noqa: E402

# Valkey 8.0.1 commands keyshift serve does not register yet (issue 16 closes these).
KEYSHIFT_LACKS = set()
# Commands keyshift serve has beyond Valkey 8.0: the hash field expiry family, which holds the
# field TTLs of Redis 7.4 data it loads (Redis 7.4's and Valkey 9.0's syntax and replies).
KEYSHIFT_EXTRAS = {"hexpire", "hexpireat", "hexpiretime", "hpersist", "hpexpire", "hpexpireat",
                   "hpexpiretime", "hpttl", "httl"}


def kb_table(profile):
    out = subprocess.run([keyshift_bin(), "kb", "commands", profile, "--format", "json"],
                         check=True, capture_output=True, text=True).stdout
    doc = json.loads(out)
    return {c["name"]: c for c in doc["commands"]}


def text(b):
    return b.decode() if isinstance(b, bytes) else str(b)


def key_spec_text(spec):
    """COMMAND's key spec map in the knowledge base's FLAGS/begin/find form."""
    m = {text(spec[i]): spec[i + 1] for i in range(0, len(spec), 2)}
    flags = ",".join(text(f) for f in m["flags"])
    bs = {text(m["begin_search"][i]): m["begin_search"][i + 1]
          for i in range(0, len(m["begin_search"]), 2)}
    bspec = {text(bs["spec"][i]): bs["spec"][i + 1] for i in range(0, len(bs["spec"]), 2)}
    kind = text(bs["type"])
    if kind == "index":
        begin = "index:%d" % bspec["index"]
    elif kind == "keyword":
        begin = "keyword:%s:%d" % (text(bspec["keyword"]), bspec["startfrom"])
    else:
        begin = "unknown"
    fk = {text(m["find_keys"][i]): m["find_keys"][i + 1] for i in range(0, len(m["find_keys"]), 2)}
    fspec = {text(fk["spec"][i]): fk["spec"][i + 1] for i in range(0, len(fk["spec"]), 2)}
    kind = text(fk["type"])
    if kind == "range":
        find = "range:%d:%d:%d" % (fspec["lastkey"], fspec["keystep"], fspec["limit"])
    elif kind == "keynum":
        find = "keynum:%d:%d:%d" % (fspec["keynumidx"], fspec["firstkey"], fspec["keystep"])
    else:
        find = "unknown"
    return "%s/%s/%s" % (flags, begin, find)


def server_table(srv):
    """COMMAND of a live server, subcommands flattened as container|sub."""
    with srv.conn() as c:
        _, reply = c.command("COMMAND")
    out = {}

    def add(entry):
        name = text(entry[0]).lower()
        out[name] = {
            "arity": entry[1],
            "flags": sorted(text(f) for f in entry[2]),
            "first_key": entry[3], "last_key": entry[4], "step": entry[5],
            "acl": sorted(text(a) for a in entry[6]),
            "key_specs": " ".join(key_spec_text(s) for s in entry[8]),
        }
        for sub in entry[9]:
            add(sub)

    for entry in reply:
        add(entry)
    return out


def compare(kb, live, names):
    """Differences between the knowledge base's rows and a server's, for `names`."""
    diffs = []
    for name in sorted(names):
        k, s = kb[name], live[name]
        mine = {
            "arity": k["arity"], "flags": sorted(k["flags"].split()),
            "first_key": k["first_key"], "last_key": k["last_key"], "step": k["step"],
            "acl": sorted(k["acl"].split()), "key_specs": k["key_specs"],
        }
        for field in mine:
            if mine[field] != s[field]:
                diffs.append("%s %s: kb %r, server %r" % (name, field, mine[field], s[field]))
    return diffs


@test
def redis_7_0_command_table_equals_the_knowledge_base(h):
    srv = h.redis_server()
    kb = kb_table("redis-7.0")
    live = server_table(srv)
    eq(sorted(set(live) - set(kb)), [], "commands redis-server 7.0 has and the table lacks")
    eq(sorted(set(kb) - set(live)), [], "commands the table has and redis-server 7.0 lacks")
    eq(compare(kb, live, set(kb) & set(live)), [], "rows that differ")
    ok(len(kb) > 300, "the redis-7.0 table has %d rows" % len(kb))


@test
def keyshift_serve_command_table_equals_the_valkey_8_0_rows(h):
    srv = h.keyshift()
    kb = kb_table("valkey-8.0")
    live = server_table(srv)
    eq(sorted(set(live) - set(kb)), sorted(KEYSHIFT_EXTRAS),
       "commands keyshift has that Valkey 8.0 lacks")
    eq(sorted(set(kb) - set(live)), sorted(KEYSHIFT_LACKS),
       "Valkey 8.0 commands keyshift lacks (update KEYSHIFT_LACKS when one lands)")
    eq(compare(kb, live, set(kb) & set(live)), [], "rows that differ")


@test
def diff_names_what_a_redis_7_4_client_misses_on_valkey_8_0(h):
    out = subprocess.run([keyshift_bin(), "kb", "diff", "redis-7.4", "valkey-8.0", "--format",
                          "json"], check=True, capture_output=True, text=True).stdout
    d = json.loads(out)
    missing = {m["name"] for m in d["missing"]}
    ok("hexpire" in missing and "httl" in missing, "hash field expiry is missing: %s" % missing)
    ok("get" not in missing, "GET is not missing")
    ok("script|show" in d["target_only"], "SCRIPT SHOW is Valkey-only")
    ok(any(n["id"] == "info.redis_version-frozen" for n in d["notes"]), "the frozen version")


@test
def unknown_profiles_are_usage_errors(h):
    p = subprocess.run([keyshift_bin(), "kb", "commands", "valkey-5.0"], capture_output=True,
                       text=True)
    eq(p.returncode, 2, "exit status")
    ok("unknown server line 'valkey-5.0'" in p.stderr, p.stderr)


if __name__ == "__main__":
    run_tests()
