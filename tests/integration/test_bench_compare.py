#!/usr/bin/python3
"""`keyshift bench compare` on two saved runs (tests/data/bench: redis-server 7.0 before,
keyshift serve after, same settings): every format against its golden file, the refusal of
runs with different settings, damaged files, and the HTML report rendered by Debian's
headless chromium (a screenshot that shows the table and the bar charts).

Run: KEYSHIFT_BIN=build/keyshift /usr/bin/python3 tests/integration/test_bench_compare.py
Regenerate the golden files after a deliberate change: KEYSHIFT_UPDATE_GOLDEN=1 (and review
the diff).
"""

import json
import os
import struct
import subprocess
import sys
import zlib

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import REPO, chromium, eq, keyshift_bin, ok, run_tests, test  # noqa: E402

DATA = os.path.join(REPO, "tests", "data", "bench")
BEFORE = "before-redis.json"
AFTER = "after-keyshift.json"
FORMATS = {"text": "txt", "markdown": "md", "csv": "csv", "json": "json", "html": "html"}


def compare(*args, cwd=DATA):
    p = subprocess.run([keyshift_bin(), "bench", "compare"] + list(args), cwd=cwd,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    return p.returncode, p.stdout.decode("utf-8"), p.stderr.decode("utf-8")


@test
def every_format_matches_its_golden_file(h):
    for fmt, ext in FORMATS.items():
        rc, out, err = compare(BEFORE, AFTER, "--format", fmt)
        eq(rc, 0, fmt + ": " + err)
        golden = os.path.join(DATA, "compare." + ext)
        if os.environ.get("KEYSHIFT_UPDATE_GOLDEN") == "1":
            with open(golden, "w", encoding="utf-8") as f:
                f.write(out)
        with open(golden, encoding="utf-8") as f:
            eq(out, f.read(), "compare --format %s against %s" % (fmt, golden))
    rc, out, _ = compare(BEFORE, AFTER)
    with open(os.path.join(DATA, "compare.txt"), encoding="utf-8") as f:
        eq(out, f.read(), "text is the default format")


@test
def golden_numbers_come_from_the_saved_runs(h):
    # The golden JSON is checked against the fixtures themselves, so a golden file that
    # drifted from its inputs cannot pass.
    with open(os.path.join(DATA, BEFORE)) as f:
        before = {t["name"]: t for t in json.load(f)["tests"]}
    with open(os.path.join(DATA, AFTER)) as f:
        after = {t["name"]: t for t in json.load(f)["tests"]}
    _, out, _ = compare(BEFORE, AFTER, "--format", "json")
    rows = json.loads(out)["tests"]
    eq([r["name"] for r in rows], list(before))
    for r in rows:
        b, a = before[r["name"]], after[r["name"]]
        eq(r["rps_before"], round(b["rps"], 2))
        eq(r["p99_after_ms"], a["latency_ms"]["p99"])
        change = (a["rps"] - b["rps"]) / b["rps"] * 100
        ok(abs(r["rps_change_pct"] - change) < 0.006, r)
        want = "faster" if change > 2 else "slower" if change < -2 else "same"
        eq(r["verdict"], want, r["name"])


@test
def out_writes_the_same_report_to_a_file(h):
    path = h.path("report.md")
    rc, out, _ = compare(BEFORE, AFTER, "--format", "markdown", "--out", path)
    eq((rc, out), (0, ""))
    with open(path, encoding="utf-8") as f, open(os.path.join(DATA, "compare.md")) as g:
        eq(f.read(), g.read())


@test
def runs_with_different_settings_are_refused_or_flagged(h):
    with open(os.path.join(DATA, AFTER)) as f:
        doc = json.load(f)
    doc["options"]["clients"] = 50
    doc["options"]["pipeline"] = 16
    other = h.path("other.json")
    with open(other, "w") as f:
        json.dump(doc, f)
    rc, out, err = compare(BEFORE, other)
    eq(rc, 1, err)
    eq(out, "")
    ok("clients: 10 -> 50" in err and "pipeline: 1 -> 16" in err, err)
    ok("--allow-different" in err, err)
    rc, out, err = compare(BEFORE, other, "--allow-different")
    eq(rc, 0, err)
    ok("WARNING: settings differ: clients: 10 -> 50" in out, out)
    _, out, _ = compare(BEFORE, other, "--allow-different", "--format", "json")
    eq(json.loads(out)["settings_differ"], ["clients: 10 -> 50", "pipeline: 1 -> 16"])
    _, out, _ = compare(BEFORE, other, "--allow-different", "--format", "csv")
    ok(all(line.endswith(",no") for line in out.splitlines()[1:]), out)
    _, out, _ = compare(BEFORE, other, "--allow-different", "--format", "html")
    ok('id="settings-differ"' in out, "html banner")


@test
def damaged_or_foreign_files_are_named_with_the_offset(h):
    with open(os.path.join(DATA, AFTER)) as f:
        text = f.read()
    cut = h.path("cut.json")
    with open(cut, "w") as f:
        f.write(text[:500])
    rc, _, err = compare(BEFORE, cut)
    eq(rc, 1)
    ok(cut + ": error at byte 500" in err, err)
    foreign = h.path("foreign.json")
    with open(foreign, "w") as f:
        f.write('{"hello": 1}')
    rc, _, err = compare(foreign, AFTER)
    eq(rc, 1)
    ok("not a keyshift bench --json file" in err, err)
    rc, _, err = compare(BEFORE, h.path("missing.json"))
    eq(rc, 1)
    ok("cannot read" in err, err)


# ---- the HTML report in a real browser --------------------------------------------------

def read_png(path):
    """(width, height, rows of RGB(A) tuples) of an 8-bit RGB/RGBA PNG, non-interlaced."""
    with open(path, "rb") as f:
        data = f.read()
    ok(data[:8] == b"\x89PNG\r\n\x1a\n", "a PNG file")
    pos, idat, width, height, ctype = 8, b"", 0, 0, 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            ok(depth == 8 and ctype in (2, 6) and interlace == 0, "8-bit RGB(A) PNG")
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    bpp = 4 if ctype == 6 else 3
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, prev = [], bytearray(stride)
    for y in range(height):
        ftype = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            left = line[i - bpp] if i >= bpp else 0
            up = prev[i]
            ul = prev[i - bpp] if i >= bpp else 0
            if ftype == 1:
                line[i] = (line[i] + left) & 255
            elif ftype == 2:
                line[i] = (line[i] + up) & 255
            elif ftype == 3:
                line[i] = (line[i] + (left + up) // 2) & 255
            elif ftype == 4:
                p = left + up - ul
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - ul)
                pred = left if pa <= pb and pa <= pc else up if pb <= pc else ul
                line[i] = (line[i] + pred) & 255
        rows.append([tuple(line[i:i + 3]) for i in range(0, stride, bpp)])
        prev = line
    return width, height, rows


@test
def html_report_renders_in_headless_chromium_with_table_and_charts(h):
    browser = chromium()
    page = h.path("report.html")
    rc, _, err = compare(BEFORE, AFTER, "--format", "html", "--out", page)
    eq(rc, 0, err)
    with open(page, encoding="utf-8") as f:
        html = f.read()
    ok("http://" not in html.replace('xmlns="http://www.w3.org/2000/svg"', "") and
       "https://" not in html and "<script" not in html, "self-contained: no network, no script")
    base = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
            "--no-first-run", "--user-data-dir=" + h.path("chromium-profile")]
    dom = subprocess.run(base + ["--dump-dom", "file://" + page], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, timeout=120).stdout.decode()
    ok('<table id="comparison">' in dom, "the table is in the rendered DOM")
    eq(dom.count("<tr>"), 1 + 5, "header + one row per test")
    eq(dom.count('<svg class="bars"'), 3, "three charts")
    eq(dom.count('class="bar"'), 3 * 2 * 5, "a before and an after bar per test and chart")
    shot = h.path("shot.png")
    subprocess.run(base + ["--window-size=412,1600", "--screenshot=" + shot, "file://" + page],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
    ok(os.path.exists(shot), "chromium wrote a screenshot")
    width, height, rows = read_png(shot)
    eq((width, height), (412, 1600))
    pixels = [p for row in rows for p in row]
    white = sum(1 for p in pixels if p == (255, 255, 255))
    ok(white < 0.97 * len(pixels), "the page is not blank (%d of %d white)" %
       (white, len(pixels)))
    # The bars' colours (after #1f6feb, before #9aa5b1) show that the SVG charts were drawn,
    # and the table's borders (#d0d7de) that the table was.
    def near(p, rgb):
        return all(abs(a - b) <= 6 for a, b in zip(p, rgb))
    after_px = sum(1 for p in pixels if near(p, (0x1f, 0x6f, 0xeb)))
    before_px = sum(1 for p in pixels if near(p, (0x9a, 0xa5, 0xb1)))
    border_px = sum(1 for p in pixels if near(p, (0xd0, 0xd7, 0xde)))
    ok(after_px > 500 and before_px > 500, "bars drawn: %d after, %d before pixels" %
       (after_px, before_px))
    ok(border_px > 200, "table borders drawn: %d pixels" % border_px)
    first_bar_row = next(y for y, row in enumerate(rows)
                         if any(near(p, (0x1f, 0x6f, 0xeb)) for p in row))
    first_border_row = next(y for y, row in enumerate(rows)
                            if any(near(p, (0xd0, 0xd7, 0xde)) for p in row))
    ok(first_border_row < first_bar_row, "the table comes before the charts")


if __name__ == "__main__":
    run_tests()
