#!/usr/bin/env python3
"""A copy-paste detector for the project's own code: the C++ of lib/,
include/, tools/ and runtime/, and the Python of python/. It reports every
run of MIN_LINES or more lines that appears twice (in one file or two),
compared after dropping what does not carry logic: blank lines, comments,
include and import lines, and lines of punctuation alone (closing braces and
brackets). Runs that overlap or touch are merged into one clone.

Each pair of files may keep the duplicated lines listed for it in
scripts/duplicates-allowed.txt; the count may shrink, never grow, and a
pair without an entry may have none (the list is empty today).
Exit status 1 on any clone beyond that, or an entry that should shrink.

  scripts/check-duplicates.py [--list]     (--list: every clone found)
"""
import argparse
import hashlib
import pathlib
import re
import sys
from collections import defaultdict

ROOT = pathlib.Path(__file__).resolve().parents[1]
ALLOWED = ROOT / "scripts" / "duplicates-allowed.txt"
MIN_LINES = 8
SOURCES = [("lib", (".cpp", ".h")), ("include", (".h", ".td")), ("tools", (".cpp", ".h")),
           ("runtime", (".cpp", ".h", ".c")), ("python", (".py",))]
PUNCTUATION = re.compile(r"^[\s{}()\[\];,]*$")


def logical_lines(path):
    """(line number, normalized text) of the lines that carry logic."""
    python = path.suffix == ".py"
    out, in_block = [], False
    for number, raw in enumerate(path.read_text(errors="replace").splitlines(), 1):
        line = raw.strip()
        if not python:
            if in_block:
                if "*/" in line:
                    in_block = False
                    line = line.split("*/", 1)[1].strip()
                else:
                    continue
            if line.startswith("/*") and "*/" not in line:
                in_block = True
                continue
            line = re.sub(r"//.*$", "", line).strip()
            if line.startswith("#include") or line.startswith("#pragma"):
                continue
        else:
            if line.startswith("#") or line.startswith("import ") or line.startswith("from "):
                continue
        if not line or PUNCTUATION.match(line):
            continue
        out.append((number, re.sub(r"\s+", " ", line)))
    return out


def files():
    for folder, suffixes in SOURCES:
        base = ROOT / folder
        if base.is_dir():
            for path in sorted(base.rglob("*")):
                if path.suffix in suffixes and path.is_file() and "__pycache__" not in path.parts:
                    yield path


def clones():
    """Every clone: (file a, first line, last line, file b, first, last,
    logical lines), a before b."""
    texts = {p: logical_lines(p) for p in files()}
    windows = defaultdict(list)
    for path, lines in texts.items():
        for i in range(len(lines) - MIN_LINES + 1):
            key = hashlib.blake2b("\n".join(t for _, t in lines[i:i + MIN_LINES]).encode(),
                                  digest_size=12).digest()
            windows[key].append((path, i))
    # Matching window starts, per pair of files, as (i in a, j in b).
    pairs = defaultdict(set)
    for places in windows.values():
        if len(places) < 2 or len(places) > 20:  # boilerplate repeated everywhere
            continue
        for x in range(len(places)):
            for y in range(x + 1, len(places)):
                (pa, i), (pb, j) = sorted([places[x], places[y]], key=lambda q: (str(q[0]), q[1]))
                if pa == pb and abs(i - j) < MIN_LINES:
                    continue
                pairs[(pa, pb)].add((i, j))
    found = []
    for (pa, pb), starts in pairs.items():
        starts = sorted(starts)
        used = set()
        for i, j in starts:
            if (i, j) in used:
                continue
            n = 0
            while (i + n, j + n) in starts:
                used.add((i + n, j + n))
                n += 1
            la, lb = texts[pa], texts[pb]
            length = n + MIN_LINES - 1
            found.append((pa, la[i][0], la[i + length - 1][0], pb, lb[j][0], lb[j + length - 1][0], length))
    return found


def rel(path):
    return str(path.relative_to(ROOT))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--list", action="store_true", help="print every clone")
    args = ap.parse_args()
    found = clones()
    per_pair = defaultdict(int)
    for pa, a0, a1, pb, b0, b1, n in found:
        per_pair["%s %s" % (rel(pa), rel(pb))] += n
        if args.list:
            print("%s:%d-%d ~ %s:%d-%d (%d lines)" % (rel(pa), a0, a1, rel(pb), b0, b1, n))
    allowed = {}
    for line in ALLOWED.read_text().splitlines() if ALLOWED.exists() else []:
        if line.strip() and not line.startswith("#"):
            a, b, n = line.split()
            allowed["%s %s" % (a, b)] = int(n)
    problems = 0
    for pair, n in sorted(per_pair.items()):
        limit = allowed.get(pair, 0)
        if n > limit:
            problems += 1
            print("duplicates: %s share %d lines (allowed %d): make one piece of code serve both "
                  "(scripts/check-duplicates.py --list shows where)" % (pair, n, limit))
    for pair, limit in sorted(allowed.items()):
        if per_pair.get(pair, 0) < limit:
            problems += 1
            print("duplicates: %s share %d lines now: lower its entry in %s (was %d)" % (
                pair, per_pair.get(pair, 0), rel(ALLOWED), limit))
    print("duplicates: %d clones of %d+ lines in %d pairs of files, %d problems" % (
        len(found), MIN_LINES, len(per_pair), problems))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
