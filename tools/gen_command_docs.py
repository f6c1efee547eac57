#!/usr/bin/env python3
"""Generates engine/commands/command_docs.inc from Valkey's src/commands.def.

commands.def is Valkey's command table (interface data: names, arity, flags, key specs,
ACL categories, documentation). This script reads it as data -- a small reader for the C
initialiser syntax it uses -- and writes a compact C++ table that COMMAND INFO/DOCS/GETKEYS
and the registry checks read. It never copies code; only the metadata values.

Usage: tools/gen_command_docs.py /work/valkey-src/src/commands.def engine/commands/command_docs.inc
"""

import re
import sys

# ---------------------------------------------------------------------------------------
# Tokenizer for the subset of C that commands.def uses.

TOKEN_RE = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<comment>/\*.*?\*/|//[^\n]*)
  | (?P<pre>^\#[^\n]*)
  | (?P<string>"(?:[^"\\]|\\.)*")
  | (?P<number>-?\d+)
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<punct>[{}()\[\],;=|.*-])
    """,
    re.VERBOSE | re.DOTALL | re.MULTILINE,
)

ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\", "'": "'", "0": "\0"}


def unescape(body):
    out = []
    i = 0
    while i < len(body):
        c = body[i]
        if c == "\\":
            nxt = body[i + 1]
            if nxt not in ESCAPES:
                raise ValueError("unsupported escape \\" + nxt)
            out.append(ESCAPES[nxt])
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def tokenize(text):
    tokens = []
    defines = {}
    pos = 0
    while pos < len(text):
        m = TOKEN_RE.match(text, pos)
        if not m:
            raise ValueError("cannot tokenize at: " + text[pos : pos + 60])
        pos = m.end()
        kind = m.lastgroup
        value = m.group(kind)
        if kind in ("ws", "comment"):
            continue
        if kind == "pre":
            d = re.match(r"#define\s+(\w+)\s+NULL\s*$", value)
            if d:
                defines[d.group(1)] = None
            continue
        if kind == "string":
            s = unescape(value[1:-1])
            # Adjacent literals concatenate.
            if tokens and tokens[-1][0] == "string":
                tokens[-1] = ("string", tokens[-1][1] + s)
                continue
            tokens.append(("string", s))
        elif kind == "number":
            tokens.append(("number", int(value)))
        else:
            tokens.append((kind, value))
    return tokens, defines


# ---------------------------------------------------------------------------------------
# Parser: top-level array definitions `TYPE [*]NAME[N] = { ... };`, skipping anything else.


class Desig:
    """A designated initialiser `.a.b = value`."""

    def __init__(self, path, value):
        self.path = path
        self.value = value


class Call:
    """A macro call `NAME(args...)`."""

    def __init__(self, name, args):
        self.name = name
        self.args = args


class Parser:
    def __init__(self, tokens):
        self.t = tokens
        self.i = 0

    def peek(self, k=0):
        return self.t[self.i + k] if self.i + k < len(self.t) else (None, None)

    def take(self, kind=None, value=None):
        tok = self.t[self.i]
        if kind and tok[0] != kind:
            raise ValueError("expected %s got %r at %d" % (kind, tok, self.i))
        if value is not None and tok[1] != value:
            raise ValueError("expected %r got %r at %d" % (value, tok, self.i))
        self.i += 1
        return tok

    def value(self):
        kind, v = self.peek()
        if kind == "punct" and v == "{":
            self.take()
            items = []
            while not (self.peek()[0] == "punct" and self.peek()[1] == "}"):
                items.append(self.value())
                if self.peek() == ("punct", ","):
                    self.take()
            self.take("punct", "}")
            return items
        if kind == "punct" and v == ".":
            path = []
            while self.peek() == ("punct", "."):
                self.take()
                path.append(self.take("ident")[1])
            self.take("punct", "=")
            return Desig(".".join(path), self.value())
        if kind == "string":
            self.take()
            return v
        if kind == "number":
            self.take()
            return v
        if kind == "ident":
            self.take()
            if self.peek() == ("punct", "("):
                self.take()
                args = []
                while self.peek() != ("punct", ")"):
                    args.append(self.value())
                    if self.peek() == ("punct", ","):
                        self.take()
                self.take("punct", ")")
                return Call(v, args)
            names = [v]
            while self.peek() == ("punct", "|"):
                self.take()
                names.append(self.take("ident")[1])
            if len(names) == 1 and v == "NULL":
                return None
            return ("flags", names)
        raise ValueError("unexpected token %r at %d" % (self.peek(), self.i))

    def definitions(self):
        """Yields (name, value) for every `... NAME[...] = {...};`."""
        out = {}
        while self.i < len(self.t):
            # Find the next '=' preceded by NAME [ N? ].
            kind, v = self.peek()
            if kind == "punct" and v == "[":
                name = self.t[self.i - 1][1]
                self.take()
                if self.peek()[0] == "number":
                    self.take()
                self.take("punct", "]")
                if self.peek() == ("punct", "="):
                    self.take()
                    out[name] = self.value()
                    self.take("punct", ";")
                continue
            if kind == "punct" and v == "{":
                # A function body (commandGroupStr): skip to its closing brace.
                depth = 0
                while True:
                    k2, v2 = self.take()
                    if k2 == "punct" and v2 == "{":
                        depth += 1
                    elif k2 == "punct" and v2 == "}":
                        depth -= 1
                        if depth == 0:
                            break
                continue
            self.i += 1
        return out


# ---------------------------------------------------------------------------------------
# Model.

CMD_FLAGS = {
    "CMD_WRITE": "write",
    "CMD_READONLY": "readonly",
    "CMD_DENYOOM": "denyoom",
    "CMD_MODULE": "module",
    "CMD_ADMIN": "admin",
    "CMD_PUBSUB": "pubsub",
    "CMD_NOSCRIPT": "noscript",
    "CMD_BLOCKING": "blocking",
    "CMD_LOADING": "loading",
    "CMD_STALE": "stale",
    "CMD_SKIP_MONITOR": "skip_monitor",
    "CMD_SKIP_SLOWLOG": "skip_slowlog",
    "CMD_ASKING": "asking",
    "CMD_FAST": "fast",
    "CMD_NO_AUTH": "no_auth",
    "CMD_MAY_REPLICATE": "may_replicate",
    "CMD_SENTINEL": "sentinel",
    "CMD_ONLY_SENTINEL": "only_sentinel",
    "CMD_NO_MANDATORY_KEYS": "no_mandatory_keys",
    "CMD_PROTECTED": "protected",
    "CMD_NO_ASYNC_LOADING": "no_async_loading",
    "CMD_NO_MULTI": "no_multi",
    "CMD_MOVABLE_KEYS": "movablekeys",
    "CMD_ALLOW_BUSY": "allow_busy",
    "CMD_TOUCHES_ARBITRARY_KEYS": "touches_arbitrary_keys",
}

ACL_CATS = [
    "keyspace", "read", "write", "set", "sortedset", "list", "hash", "string", "bitmap",
    "hyperloglog", "geo", "stream", "pubsub", "admin", "fast", "slow", "blocking",
    "dangerous", "connection", "transaction", "scripting",
]

KEY_FLAGS = {
    "CMD_KEY_RO": "ro",
    "CMD_KEY_RW": "rw",
    "CMD_KEY_OW": "ow",
    "CMD_KEY_RM": "rm",
    "CMD_KEY_ACCESS": "access",
    "CMD_KEY_UPDATE": "update",
    "CMD_KEY_INSERT": "insert",
    "CMD_KEY_DELETE": "delete_",
    "CMD_KEY_NOT_KEY": "not_key",
    "CMD_KEY_INCOMPLETE": "incomplete",
    "CMD_KEY_VARIABLE_FLAGS": "variable_flags",
}

ARG_FLAGS = {
    "CMD_ARG_NONE": None,
    "CMD_ARG_OPTIONAL": "optional",
    "CMD_ARG_MULTIPLE": "multiple",
    "CMD_ARG_MULTIPLE_TOKEN": "multiple_token",
}

ARG_TYPES = {
    "ARG_TYPE_STRING": "string",
    "ARG_TYPE_INTEGER": "integer",
    "ARG_TYPE_DOUBLE": "double_",
    "ARG_TYPE_KEY": "key",
    "ARG_TYPE_PATTERN": "pattern",
    "ARG_TYPE_UNIX_TIME": "unix_time",
    "ARG_TYPE_PURE_TOKEN": "pure_token",
    "ARG_TYPE_ONEOF": "oneof",
    "ARG_TYPE_BLOCK": "block",
}

DOC_FLAGS = {"CMD_DOC_NONE": None, "CMD_DOC_DEPRECATED": "deprecated", "CMD_DOC_SYSCMD": "syscmd"}


def flag_names(expr, table):
    if expr is None or expr == 0:
        return []
    if isinstance(expr, tuple) and expr[0] == "flags":
        out = []
        for n in expr[1]:
            if n not in table:
                raise ValueError("unknown flag " + n)
            if table[n]:
                out.append(table[n])
        return out
    raise ValueError("bad flag expression %r" % (expr,))


def acl_names(expr):
    if expr is None or expr == 0:
        return set()
    out = set()
    for n in expr[1]:
        assert n.startswith("ACL_CATEGORY_"), n
        out.add(n[len("ACL_CATEGORY_") :].lower())
    return out


def resolve(defs, defines, ref):
    """A table reference: a ('flags', [NAME]) ident, None, or NULL by #define."""
    if ref is None:
        return None
    if isinstance(ref, tuple):
        name = ref[1][0]
        if name in defines:
            return None
        return defs[name]
    raise ValueError("bad reference %r" % (ref,))


class KeySpec:
    def __init__(self, raw):
        notes, flags, bs_type, bs, fk_type, fk = raw
        self.notes = notes
        self.flags = flag_names(flags, KEY_FLAGS)
        self.bs_type = bs_type[1][0]
        self.fk_type = fk_type[1][0]
        self.bs_index = 0
        self.bs_keyword = None
        self.bs_startfrom = 0
        if self.bs_type == "KSPEC_BS_INDEX":
            assert bs.path == "bs.index"
            self.bs_index = bs.value[0]
        elif self.bs_type == "KSPEC_BS_KEYWORD":
            assert bs.path == "bs.keyword"
            self.bs_keyword, self.bs_startfrom = bs.value
        self.fk = (0, 0, 0)
        if self.fk_type == "KSPEC_FK_RANGE":
            assert fk.path == "fk.range"
            self.fk = tuple(fk.value)
        elif self.fk_type == "KSPEC_FK_KEYNUM":
            assert fk.path == "fk.keynum"
            self.fk = tuple(fk.value)


class Arg:
    def __init__(self, defs, defines, raw):
        call = raw[0]
        assert isinstance(call, Call) and call.name == "MAKE_ARG"
        name, atype, ks_index, token, summary, since, flags, numsub, deprecated = call.args
        self.name = name
        self.type = ARG_TYPES[atype[1][0]]
        self.key_spec_index = ks_index
        self.token = token
        self.summary = summary
        self.since = since
        self.deprecated_since = deprecated
        self.flags = flag_names(flags, ARG_FLAGS)
        self.display_text = None
        self.subargs = []
        for extra in raw[1:]:
            if extra.path == "subargs":
                self.subargs = [Arg(defs, defines, a) for a in resolve(defs, defines, extra.value)]
            elif extra.path == "display_text":
                self.display_text = extra.value
            else:
                raise ValueError("unknown arg field " + extra.path)
        assert len(self.subargs) == numsub, name


class Command:
    def __init__(self, defs, defines, raw, parent=None):
        call = raw[0]
        assert isinstance(call, Call) and call.name == "MAKE_CMD"
        (name, summary, complexity, since, doc_flags, replaced, deprecated, group, _group_enum,
         history, num_history, tips, num_tips, _function, arity, flags, acl, key_specs,
         key_specs_num, _get_keys, numargs) = call.args
        self.name = name if parent is None else parent.name + "|" + name
        self.summary = summary
        self.complexity = complexity
        self.since = since
        self.doc_flags = flag_names(doc_flags, DOC_FLAGS)
        self.replaced_by = replaced
        self.deprecated_since = deprecated
        self.group = group
        h = resolve(defs, defines, history) or []
        self.history = [(a, b) for a, b in h]
        assert len(self.history) == num_history
        self.tips = resolve(defs, defines, tips) or []
        assert len(self.tips) == num_tips
        self.arity = arity
        self.flags = flag_names(flags, CMD_FLAGS)
        self.acl = acl_names(acl)
        ks = resolve(defs, defines, key_specs) or []
        self.key_specs = [KeySpec(k) for k in ks]
        assert len(self.key_specs) == key_specs_num
        self.args = []
        self.subcommands = []
        for extra in raw[1:]:
            if extra.path == "args":
                self.args = [Arg(defs, defines, a) for a in resolve(defs, defines, extra.value)]
            elif extra.path == "subcommands":
                for sub in resolve(defs, defines, extra.value):
                    if sub == [0]:
                        continue
                    self.subcommands.append(Command(defs, defines, sub, self))
            else:
                raise ValueError("unknown command field " + extra.path)
        assert len(self.args) == numargs, self.name
        self.derive()

    def derive(self):
        """What Valkey computes at startup: implicit ACL categories, the legacy key range
        and the movablekeys flag."""
        f = set(self.flags)
        if "write" in f:
            self.acl.add("write")
        if "readonly" in f and "scripting" not in self.acl:
            self.acl.add("read")
        if "admin" in f:
            self.acl |= {"admin", "dangerous"}
        if "pubsub" in f:
            self.acl.add("pubsub")
        if "fast" in f:
            self.acl.add("fast")
        if "blocking" in f:
            self.acl.add("blocking")
        if "fast" not in self.acl:
            self.acl.add("slow")

        self.first = self.last = self.step = 0
        movable = False
        specs = self.key_specs
        if len(specs) == 1 and specs[0].bs_type == "KSPEC_BS_INDEX" and specs[0].fk_type == "KSPEC_FK_RANGE":
            s = specs[0]
            self.first = s.bs_index
            self.last = s.fk[0] + s.bs_index if s.fk[0] >= 0 else s.fk[0]
            self.step = s.fk[1]
            movable = "incomplete" in s.flags
        elif specs:
            first = None
            last = 0
            prev_last = 0
            for s in specs:
                if s.bs_type != "KSPEC_BS_INDEX" or s.fk_type != "KSPEC_FK_RANGE":
                    movable = True
                    continue
                if s.fk[1] != 1 or (prev_last and prev_last != s.bs_index - 1):
                    movable = True
                    continue
                if "incomplete" in s.flags:
                    movable = True
                first = s.bs_index if first is None else min(first, s.bs_index)
                abs_last = s.fk[0] + s.bs_index if s.fk[0] >= 0 else s.fk[0]
                # Unsigned comparison, as Valkey does: -1 beats any index.
                last = max(last & 0xFFFFFFFF, abs_last & 0xFFFFFFFF)
                if last >= 0x80000000:
                    last -= 0x100000000
                prev_last = last
            if first is None:
                movable = True
            else:
                self.first = first
                self.last = last
                self.step = 1
        if movable:
            self.flags.append("movablekeys")


# ---------------------------------------------------------------------------------------
# Output.


def c_str(s):
    if s is None:
        return "nullptr"
    out = ['"']
    for ch in s:
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 0x20 or ord(ch) >= 0x7F:
            out.append("\\x%02x\"\"" % ord(ch))
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def bits(names, prefix):
    if not names:
        return "0"
    return " | ".join(prefix + n for n in names)


def main():
    src, dst = sys.argv[1], sys.argv[2]
    with open(src, encoding="utf-8") as f:
        text = f.read()
    tokens, defines = tokenize(text)
    defs = Parser(tokens).definitions()
    table = defs["serverCommandTable"]
    commands = []
    for raw in table:
        if raw == [0]:
            continue
        cmd = Command(defs, defines, raw)
        if "only_sentinel" in cmd.flags:
            continue
        commands.append(cmd)
        for sub in cmd.subcommands:
            if "only_sentinel" in sub.flags:
                continue
            commands.append(sub)
    commands.sort(key=lambda c: c.name)

    history_rows, tips_rows, spec_rows, arg_rows, cmd_rows = [], [], [], [], []

    def emit_args(args):
        """Appends `args` contiguously (children after), returns the first index."""
        begin = len(arg_rows)
        slots = []
        for a in args:
            slots.append(len(arg_rows))
            arg_rows.append(None)
        for slot, a in zip(slots, args):
            sub_begin = emit_args(a.subargs) if a.subargs else 0
            arg_rows[slot] = "    {%s, ArgType::%s, %s, %d, %s, %s, %s, %s, %s, %d, %d}," % (
                c_str(a.name), a.type, c_str(a.display_text), a.key_spec_index, c_str(a.token),
                c_str(a.summary), c_str(a.since), c_str(a.deprecated_since),
                bits(a.flags, "k_arg_"), sub_begin, len(a.subargs))
        return begin

    for c in commands:
        h_begin = len(history_rows)
        for since, changes in c.history:
            history_rows.append("    {%s, %s}," % (c_str(since), c_str(changes)))
        t_begin = len(tips_rows)
        for tip in c.tips:
            tips_rows.append("    %s," % c_str(tip))
        s_begin = len(spec_rows)
        for s in c.key_specs:
            bs = {"KSPEC_BS_INDEX": "index", "KSPEC_BS_KEYWORD": "keyword", "KSPEC_BS_UNKNOWN": "unknown"}[s.bs_type]
            fk = {"KSPEC_FK_RANGE": "range", "KSPEC_FK_KEYNUM": "keynum", "KSPEC_FK_UNKNOWN": "unknown"}[s.fk_type]
            spec_rows.append("    {%s, %s, BeginSearch::%s, %d, %s, %d, FindKeys::%s, %d, %d, %d}," % (
                c_str(s.notes), bits(s.flags, "k_key_"), bs, s.bs_index, c_str(s.bs_keyword),
                s.bs_startfrom, fk, s.fk[0], s.fk[1], s.fk[2]))
        a_begin = emit_args(c.args) if c.args else 0
        acl = [cat for cat in ACL_CATS if cat in c.acl]
        cmd_rows.append(
            "    {%s, %s, %s, %s, %s, %s, %s, %s,\n     %d, %d, %d, %d, %d, %d, %d, %d,\n"
            "     %d, %s,\n     %s,\n     %d, %d, %d}," % (
                c_str(c.name), c_str(c.summary), c_str(c.complexity), c_str(c.since),
                c_str(c.group), bits(c.doc_flags, "k_doc_"), c_str(c.replaced_by),
                c_str(c.deprecated_since), h_begin, len(c.history), t_begin, len(c.tips),
                s_begin, len(c.key_specs), a_begin, len(c.args), c.arity,
                bits(c.flags, "k_vf_"), bits(acl, "k_acl_"), c.first, c.last, c.step))

    with open(dst, "w", encoding="utf-8") as out:
        out.write("// Generated by tools/gen_command_docs.py from Valkey 8.0.1's src/commands.def.\n")
        out.write("// Do not edit; re-run the generator instead.\n// clang-format off\n\n")
        out.write("inline constexpr HistoryDoc k_history_docs[] = {\n")
        out.write("\n".join(history_rows) + "\n    {nullptr, nullptr},\n};\n\n")
        out.write("inline constexpr const char* k_tip_docs[] = {\n")
        out.write("\n".join(tips_rows) + "\n    nullptr,\n};\n\n")
        out.write("inline constexpr KeySpecDoc k_key_spec_docs[] = {\n")
        out.write("\n".join(spec_rows) + "\n};\n\n")
        out.write("inline constexpr ArgDoc k_arg_docs[] = {\n")
        out.write("\n".join(arg_rows) + "\n};\n\n")
        out.write("// Sorted by full name (\"config|get\") for binary search.\n")
        out.write("inline constexpr CommandDoc k_command_docs[] = {\n")
        out.write("\n".join(cmd_rows) + "\n};\n")
        out.write("// clang-format on\n")


if __name__ == "__main__":
    main()
