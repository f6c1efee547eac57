#!/usr/bin/env python3
"""Generates compat/kb/command_tables.inc: the command tables of the server versions keyshift
knows, from each project's src/commands/*.json at a release tag (facts only: names, arity,
flags, ACL categories, key specs, `since` of commands and of their arguments, history notes).

Exact tables come from a release tag's JSON files. Versions without JSON files (Redis 6.2) or
whose tags are not in the mirror at hand are *derived*: a base version's table, filtered by
`since` or extended by tools/kb/later_versions.tsv (hand-kept facts, each row with its source).
Every profile says which it is.

Usage: tools/kb/gen_command_tables.py --redis GITDIR --valkey GITDIR [--out FILE]
  GITDIR: a clone (bare or not) of redis/redis or valkey-io/valkey that has the release tags.
"""

import argparse
import json
import os
import subprocess
import sys

# (profile, project, tag or None, how): "exact" reads the tag; "since:BASE" keeps BASE's rows
# whose command `since` is not after the profile's version; "plus:BASE" is BASE plus the rows of
# later_versions.tsv for this profile (and for the profiles before it in the same project).
PROFILES = [
    ("redis-6.2", "redis", None, "since:redis-7.0"),
    ("redis-7.0", "redis", "7.0.15", "exact"),
    ("redis-7.2", "redis", "7.2.6", "exact"),
    ("redis-7.4", "redis", "7.4.1", "exact"),
    ("redis-8.0", "redis", None, "plus:redis-7.4"),
    ("redis-8.2", "redis", None, "plus:redis-8.0"),
    ("redis-8.4", "redis", None, "plus:redis-8.2"),
    ("valkey-7.2", "valkey", "7.2.7", "exact"),
    ("valkey-8.0", "valkey", "8.0.1", "exact"),
    ("valkey-8.1", "valkey", None, "plus:valkey-8.0"),
    ("valkey-9.0", "valkey", None, "plus:valkey-8.1"),
    ("valkey-9.1", "valkey", None, "plus:valkey-9.0"),
]

# The implicit ACL categories a server adds from the command flags (setImplicitACLCategories).
def implicit_acl(flags, cats):
    out = list(cats)
    def add(c):
        if c not in out:
            out.append(c)
    if "WRITE" in flags:
        add("WRITE")
    if "READONLY" in flags and "SCRIPTING" not in cats:
        add("READ")
    if "ADMIN" in flags:
        add("ADMIN")
        add("DANGEROUS")
    if "PUBSUB" in flags:
        add("PUBSUB")
    if "FAST" in flags:
        add("FAST")
    if "BLOCKING" in flags:
        add("BLOCKING")
    if "FAST" not in out:
        add("SLOW")
    return out


def version_key(v):
    parts = []
    for p in v.split("."):
        try:
            parts.append(int(p))
        except ValueError:
            parts.append(0)
    while len(parts) < 3:
        parts.append(0)
    return tuple(parts)


# Key spec flags in the order COMMAND prints them; the access kinds upper case, the rest lower.
KEY_SPEC_FLAGS = ["RO", "RW", "OW", "RM", "ACCESS", "UPDATE", "INSERT", "DELETE", "NOT_KEY",
                  "INCOMPLETE", "VARIABLE_FLAGS"]


def normalise_spec_text(text):
    """A hand-written key spec text (later_versions.tsv) in key_spec_text()'s flag case and
    order."""
    out = []
    for spec in text.split():
        flags, rest = spec.split("/", 1)
        given = [f.upper() for f in flags.split(",") if f]
        for f in given:
            if f not in KEY_SPEC_FLAGS:
                raise SystemExit("unknown key spec flag %s in %s" % (f, text))
        out.append(",".join(f if f in ("RO", "RW", "OW", "RM") else f.lower()
                            for f in KEY_SPEC_FLAGS if f in given) + "/" + rest)
    return " ".join(out)


def key_spec_text(spec):
    """One key spec as `FLAGS/begin/find`: RW,access/index:1/range:0:1:0."""
    given = spec.get("flags", [])
    for f in given:
        if f not in KEY_SPEC_FLAGS:
            raise SystemExit("unknown key spec flag %s" % f)
    flags = ",".join(f if f in ("RO", "RW", "OW", "RM") else f.lower()
                     for f in KEY_SPEC_FLAGS if f in given)
    bs = spec.get("begin_search", {})
    if "index" in bs:
        begin = "index:%d" % bs["index"]["pos"]
    elif "keyword" in bs:
        begin = "keyword:%s:%d" % (bs["keyword"]["keyword"], bs["keyword"]["startfrom"])
    else:
        begin = "unknown"
    fk = spec.get("find_keys", {})
    if "range" in fk:
        r = fk["range"]
        find = "range:%d:%d:%d" % (r["lastkey"], r["step"], r["limit"])
    elif "keynum" in fk:
        k = fk["keynum"]
        find = "keynum:%d:%d:%d" % (k["keynumidx"], k["firstkey"], k["step"])
    else:
        find = "unknown"
    return "%s/%s/%s" % (flags, begin, find)


def legacy_range(specs, flags):
    """first, last, step as COMMAND INFO shows them, and whether keys are movable
    (populateCommandLegacyRangeSpec's rules)."""
    movable = "MODULE_GETKEYS" in flags
    if not specs:
        return 0, 0, 0, movable
    def is_range(s):
        return "index" in s.get("begin_search", {}) and "range" in s.get("find_keys", {})
    if len(specs) == 1 and is_range(specs[0]):
        s = specs[0]
        if "INCOMPLETE" in s.get("flags", []):
            movable = True
        pos = s["begin_search"]["index"]["pos"]
        r = s["find_keys"]["range"]
        last = r["lastkey"]
        return pos, (last + pos if last >= 0 else last), r["step"], movable
    first = None
    last = 0
    prev_last = 0
    for s in specs:
        if not is_range(s):
            movable = True
            continue
        pos = s["begin_search"]["index"]["pos"]
        r = s["find_keys"]["range"]
        if r["step"] != 1 or (prev_last and prev_last != pos - 1):
            movable = True
            continue
        if "INCOMPLETE" in s.get("flags", []):
            movable = True
        first = pos if first is None else min(first, pos)
        abs_last = r["lastkey"]
        if abs_last >= 0:
            abs_last += pos
        # unsigned comparison, as the server does: -1 is larger than any index
        if (abs_last & 0xFFFFFFFF) > (last & 0xFFFFFFFF):
            last = abs_last
        prev_last = last
    if first is None:
        return 0, 0, 0, True
    return first, last, 1, movable


def arg_tokens(args, out):
    """The option words of a command's argument tree, each as TOKEN or TOKEN@since when the
    JSON says it came after the command; unique, in tree order."""
    for a in args:
        token = a.get("token")
        if token:
            item = token.upper() + ("@" + a["since"] if a.get("since") else "")
            if not any(x == item or x.split("@")[0] == token.upper() for x in out):
                out.append(item)
        arg_tokens(a.get("arguments", []), out)
    return out


TYPE_LETTERS = {"key": "k", "string": "s", "integer": "i", "double": "d", "pattern": "p",
                "unix-time": "t"}


def syntax_of(args):
    """The argument tree in keyshift's compact form (see compat/kb/knowledge_base.hpp):
    k s i d p t typed values, =TOKEN words, [..] optional, (a|b) one of, {..} a group, ...
    repeatable."""
    def item(a):
        t = a["type"]
        token = a.get("token")
        if t == "pure-token":
            body = "=" + token
        elif t == "oneof":
            body = "(" + "|".join(seq([x]) for x in a["arguments"]) + ")"
        elif t == "block":
            body = "{" + seq(a["arguments"]) + "}"
        else:
            body = TYPE_LETTERS[t]
        if token and t != "pure-token":
            body = "{=%s %s}" % (token, body)
        if a.get("multiple"):
            body += "..."
        if a.get("optional"):
            body = "[" + body + "]"
        return body

    def seq(items):
        return " ".join(item(x) for x in items)

    for a in args:
        for bad in " |[](){}":
            if bad in (a.get("token") or ""):
                raise SystemExit("token %r cannot be written in the syntax" % a["token"])
    return seq(args)


COMMAND_FLAG_NAMES = {
    "WRITE": "write", "READONLY": "readonly", "DENYOOM": "denyoom", "MODULE": "module",
    "ADMIN": "admin", "PUBSUB": "pubsub", "NOSCRIPT": "noscript", "BLOCKING": "blocking",
    "LOADING": "loading", "STALE": "stale", "SKIP_MONITOR": "skip_monitor",
    "SKIP_SLOWLOG": "skip_slowlog", "ASKING": "asking", "FAST": "fast", "NO_AUTH": "no_auth",
    "MAY_REPLICATE": "may_replicate", "NO_MANDATORY_KEYS": "no_mandatory_keys",
    "NO_ASYNC_LOADING": "no_async_loading", "NO_MULTI": "no_multi",
    "ALLOW_BUSY": "allow_busy",
}
# Flags a server keeps internally and COMMAND INFO does not print.
HIDDEN_FLAGS = {"SENTINEL", "ONLY_SENTINEL", "PROTECTED", "TOUCHES_ARBITRARY_KEYS", "MAY_REPLICATE"}
# COMMAND's order (addReplyFlagsForCommand).
FLAG_ORDER = ["write", "readonly", "denyoom", "module", "admin", "pubsub", "noscript", "blocking",
              "loading", "stale", "skip_monitor", "skip_slowlog", "asking", "fast", "no_auth",
              "no_mandatory_keys", "no_async_loading", "no_multi", "movablekeys", "allow_busy"]


def ordered_flags(names):
    for n in names:
        if n not in FLAG_ORDER and n != "may_replicate":
            raise SystemExit("unknown flag name %s" % n)
    return " ".join(f for f in FLAG_ORDER if f in names)


def row_from_json(name, body, source):
    flags = body.get("command_flags", [])
    if "ONLY_SENTINEL" in flags:
        return None
    specs = body.get("key_specs", [])
    first, last, step, movable = legacy_range(specs, flags)
    shown = []
    for f in flags:
        if f in HIDDEN_FLAGS:
            continue
        if f not in COMMAND_FLAG_NAMES:
            raise SystemExit("%s: unknown command flag %s" % (source, f))
        shown.append(COMMAND_FLAG_NAMES[f])
    if movable:
        shown.append("movablekeys")
    cats = implicit_acl(flags, body.get("acl_categories", []))
    history = [h[0] + ": " + h[1] for h in body.get("history", []) or []]
    return {
        "name": name,
        "arity": body["arity"],
        "flags": ordered_flags(shown),
        "acl": " ".join("@" + c.lower() for c in cats),
        "first": first,
        "last": last,
        "step": step,
        "key_specs": " ".join(key_spec_text(s) for s in specs),
        "since": body.get("since", ""),
        "group": body.get("group", ""),
        "tips": " ".join(t.lower() for t in body.get("command_tips", []) or []),
        "args_since": " ".join(arg_tokens(body.get("arguments", []), [])),
        "doc_flags": " ".join(f.lower() for f in body.get("doc_flags", []) or []),
        "replaced_by": body.get("replaced_by", ""),
        "history": "|".join(history),
        "syntax": syntax_of(body.get("arguments", [])),
    }


def read_tag(gitdir, tag):
    names = subprocess.run(["git", "-C", gitdir, "ls-tree", "--name-only", tag + ":src/commands/"],
                           check=True, capture_output=True, text=True).stdout.split()
    rows = {}
    for n in names:
        if not n.endswith(".json"):
            continue
        text = subprocess.run(["git", "-C", gitdir, "show", "%s:src/commands/%s" % (tag, n)],
                              check=True, capture_output=True, text=True).stdout
        doc = json.loads(text)
        for cmd, body in doc.items():
            name = cmd.lower()
            if body.get("container"):
                name = body["container"].lower() + "|" + name
            row = row_from_json(name, body, "%s:%s" % (tag, n))
            if row is not None:
                rows[name] = row
    return rows


def read_later(path):
    """later_versions.tsv: profile, name, arity, flags, acl, first, last, step, key_specs,
    since, group, source. `-` for an empty field."""
    out = {}
    with open(path) as f:
        for lineno, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            cols = line.split("\t")
            if len(cols) != 12:
                raise SystemExit("%s:%d: %d columns, expected 12" % (path, lineno, len(cols)))
            cols = ["" if c == "-" else c for c in cols]
            profile, name = cols[0], cols[1]
            if cols[2] == "+arg":  # an argument added to a command the base already has
                out.setdefault(profile, []).append(
                    {"name": name, "added_arg": cols[3], "since": cols[9], "source": cols[11]})
                continue
            row = {
                "name": name, "arity": int(cols[2]), "flags": ordered_flags(cols[3].split()),
                "acl": cols[4],
                "first": int(cols[5]), "last": int(cols[6]), "step": int(cols[7]),
                "key_specs": normalise_spec_text(cols[8]), "since": cols[9], "group": cols[10],
                "tips": "",
                # The facts file does not record argument trees: "?" is "not known".
                "args_since": "?", "syntax": "?", "doc_flags": "", "replaced_by": "", "history": "",
                "source": cols[11],
            }
            out.setdefault(profile, []).append(row)
    return out


FIELDS = ["arity", "flags", "acl", "first", "last", "step", "key_specs", "since", "group", "tips",
          "args_since", "doc_flags", "replaced_by", "history", "syntax"]


def cxx(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--redis", required=True)
    ap.add_argument("--valkey", required=True)
    ap.add_argument("--later", default=os.path.join(os.path.dirname(__file__), "later_versions.tsv"))
    ap.add_argument("--out", default="compat/kb/command_tables.inc")
    a = ap.parse_args()
    later = read_later(a.later)
    tables = {}
    how_of = {}
    # Exact tables first: derived ones are built on them (redis-6.2 on redis-7.0).
    order = sorted(PROFILES, key=lambda p: p[3] != "exact")
    for profile, project, tag, how in order:
        version = profile.split("-")[1]
        if how == "exact":
            tables[profile] = read_tag(a.redis if project == "redis" else a.valkey, tag)
            how_of[profile] = "exact: %s %s src/commands/*.json" % (project, tag)
        elif how.startswith("since:"):
            base = tables[how[6:]]
            cut = version_key(version + ".999")
            tables[profile] = {n: r for n, r in base.items() if version_key(r["since"]) <= cut}
            how_of[profile] = "derived: %s rows whose since is <= %s" % (how[6:], version)
        else:
            base = dict(tables[how[5:]])
            for r in later.get(profile, []):
                if "added_arg" in r:
                    if r["name"] not in base:
                        raise SystemExit("%s: +arg %s for %s, which %s lacks" % (
                            a.later, r["added_arg"], r["name"], profile))
                    old = dict(base[r["name"]])
                    tag = "%s@%s" % (r["added_arg"], r["since"])
                    old["args_since"] = (old["args_since"] + " " + tag).strip()
                    base[r["name"]] = old
                else:
                    base[r["name"]] = r
            tables[profile] = base
            how_of[profile] = "derived: %s plus tools/kb/later_versions.tsv" % how[5:]
    # One row per distinct content; each with the set of profiles that have it.
    distinct = {}
    for idx, (profile, _, _, _) in enumerate(PROFILES):
        for name, r in tables[profile].items():
            key = (name,) + tuple(r[f] for f in FIELDS)
            distinct.setdefault(key, 0)
            distinct[key] |= 1 << idx
    lines = ["// Generated by tools/kb/gen_command_tables.py: do not edit.",
             "// Sources: " + "; ".join("%s %s" % (p, how_of[p]) for p, _, _, _ in PROFILES), ""]
    lines.append("inline constexpr KbProfileInfo k_profile_infos[] = {")
    for p, project, tag, how in PROFILES:
        lines.append("    {%s, %s, %s, %s}," % (cxx(p), cxx(project), "true" if how == "exact" else "false",
                                              cxx(how_of[p])))
    lines.append("};")
    lines.append("")
    lines.append("inline constexpr KbCommand k_command_rows[] = {")
    for key in sorted(distinct):
        name = key[0]
        r = dict(zip(FIELDS, key[1:]))
        lines.append("    {%s, %d, %s, %s, %d, %d, %d, %s, %s, %s, %s, %s, %s, %s, %s, %s, 0x%x}," % (
            cxx(name), r["arity"], cxx(r["flags"]), cxx(r["acl"]), r["first"], r["last"], r["step"],
            cxx(r["key_specs"]), cxx(r["since"]), cxx(r["group"]), cxx(r["tips"]),
            cxx(r["args_since"]), cxx(r["doc_flags"]), cxx(r["replaced_by"]), cxx(r["history"]),
            cxx(r["syntax"]), distinct[key]))
    lines.append("};")
    with open(a.out + ".tmp", "w") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(a.out + ".tmp", a.out)
    print("%s: %d rows for %d profiles" % (a.out, len(distinct), len(PROFILES)), file=sys.stderr)


if __name__ == "__main__":
    main()
