#!/usr/bin/python3
"""Fails when an if, else, for or while body is not a braced block.

The tree was braced once by tools/apply_braces.sh (clang-tidy's
readability-braces-around-statements; clang-format 14 has no InsertBraces); this keeps it
so. It reads C++ as tokens (comments, string, character and raw string literals removed,
preprocessor lines skipped), so a keyword inside text or a comment never counts.

Usage: tests/check_braces.py [FILE_OR_DIR...]   (default: engine compat migrate cli tests)
       tests/check_braces.py --self-test
"""
import os
import re
import sys

SOURCE_SUFFIXES = (".cpp", ".hpp", ".h", ".cc")
TOKEN = re.compile(r"[A-Za-z_][A-Za-z_0-9]*|\S")


def strip(text):
    """The text with comments and literals blanked (newlines kept) and # lines removed."""
    out = []
    i, n = 0, len(text)
    line_start = True
    while i < n:
        c = text[i]
        if line_start and c in " \t":
            out.append(c)
            i += 1
            continue
        if line_start and c == "#":
            # A preprocessor directive, with its continuation lines.
            while i < n and text[i] != "\n":
                if text[i] == "\\" and i + 1 < n and text[i + 1] == "\n":
                    out.append("\n")
                    i += 2
                    continue
                i += 1
            continue
        line_start = False
        if c == "\n":
            line_start = True
            out.append(c)
            i += 1
        elif text.startswith("//", i):
            while i < n and text[i] != "\n":
                i += 1
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append("\n" * text.count("\n", i, end))
            i = end
        elif c == "R" and i + 1 < n and text[i + 1] == '"' and not (
                i > 0 and (text[i - 1].isalnum() or text[i - 1] == "_")):
            open_paren = text.find("(", i + 2)
            delimiter = text[i + 2:open_paren]
            end = text.find(")" + delimiter + '"', open_paren)
            end = n if end < 0 else end + len(delimiter) + 2
            out.append(' "" ' + "\n" * text.count("\n", i, end))
            i = end
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(' "" ' if c == '"' else " 0 ")
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def tokens(text):
    """(token, line) pairs."""
    result = []
    for number, line in enumerate(strip(text).split("\n"), 1):
        for m in TOKEN.finditer(line):
            result.append((m.group(0), number))
    return result


def after_parens(toks, i):
    """Index just past the parenthesised group starting at toks[i] == '(' (or None)."""
    if i >= len(toks) or toks[i][0] != "(":
        return None
    depth = 0
    while i < len(toks):
        if toks[i][0] == "(":
            depth += 1
        elif toks[i][0] == ")":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return None


def violations(text):
    """(line, keyword) of each body that is not a braced block."""
    toks = tokens(text)
    found = []
    for i, (tok, line) in enumerate(toks):
        if tok in ("if", "for", "while", "switch"):
            j = i + 1
            if tok == "if" and j < len(toks) and toks[j][0] == "constexpr":
                j += 1
            end = after_parens(toks, j)
            if end is None or end >= len(toks):
                continue
            nxt = toks[end][0]
            # `} while (x);` ends a do loop; `while (x);` alone is an empty loop either way.
            if tok == "while" and nxt == ";":
                continue
            if nxt != "{":
                found.append((line, tok))
        elif tok == "else":
            if i + 1 < len(toks) and toks[i + 1][0] not in ("{", "if"):
                found.append((line, "else"))
        elif tok == "do":
            if i + 1 < len(toks) and toks[i + 1][0] != "{":
                found.append((line, "do"))
    return found


def files_under(paths):
    for path in paths:
        if os.path.isdir(path):
            for root, dirs, names in os.walk(path):
                dirs[:] = sorted(d for d in dirs if not d.startswith("build"))
                for name in sorted(names):
                    if name.endswith(SOURCE_SUFFIXES):
                        yield os.path.join(root, name)
        elif os.path.exists(path):
            yield path


def self_test():
    bad = {
        "if (a)\n  b();\n": [(1, "if")],
        "if (a) {\n} else\n  c();\n": [(2, "else")],
        "for (int i = 0; i < n; ++i)\n  f(i);\n": [(1, "for")],
        "while (f(g(x)))\n  ++x;\n": [(1, "while")],
        "if constexpr (k)\n  x();\n": [(1, "if")],
        "if (a &&\n    b)\n  return;\n": [(1, "if")],
    }
    good = [
        "if (a) {\n  b();\n} else if (c) {\n} else {\n}\n",
        "do {\n  x();\n} while (y);\n",
        'auto s = "if (x) y;"; // for (;;) z;\n',
        "auto r = R\"re(if (a) b; else c)re\";\n",
        "char c = '(';\nif (c == ')') {\n}\n",
        "#define CHECK(x) if (x) fail()\n",
        "/* while (1) spin(); */\nint x;\n",
        "std::vector<int> v{[] { if (a) { return 1; } return 2; }()};\n",
    ]
    failures = 0
    for text, want in bad.items():
        if violations(text) != want:
            print(f"self-test: {text!r}: got {violations(text)}, wanted {want}")
            failures += 1
    for text in good:
        if violations(text):
            print(f"self-test: {text!r}: false positive {violations(text)}")
            failures += 1
    print("braces self-test: " + ("ok" if failures == 0 else f"{failures} failed"))
    return 1 if failures else 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    paths = argv[1:] or ["engine", "compat", "migrate", "cli", "tests"]
    bad = 0
    for path in files_under(paths):
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        for line, keyword in violations(text):
            print(f"{path}:{line}: the {keyword} body has no braces (tools/apply_braces.sh adds them)")
            bad += 1
    if bad == 0:
        print("braces: every if/else/for/while/do body is a braced block")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
