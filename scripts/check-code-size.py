#!/usr/bin/env python3
"""No function in lib/ over 200 lines and no class over 500.

Reads the C++ sources under lib/ (comments and string literals blanked,
braces matched), finds every function body at namespace or class scope
(lambdas and local classes count toward the function that holds them) and
every class or struct body, and compares the line counts with the limits.
The functions and classes over them today are listed, with their current
size, in scripts/code-size-allowed.txt: each may shrink, none may grow,
and nothing new may pass a limit. A listed one that is back under its
limit must leave the list (the script says so), so the list only shrinks.

  scripts/check-code-size.py            # exit 1 on a violation
  scripts/check-code-size.py --report   # every function and class over the limits
"""
import argparse
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
ALLOWED = ROOT / "scripts" / "code-size-allowed.txt"
FUNCTION_LIMIT, CLASS_LIMIT = 200, 500
CONTROL = {"if", "for", "while", "switch", "catch", "do", "else", "return", "sizeof", "alignof",
           "decltype", "static_assert"}


def blank(text):
    """Comments and string/char literals replaced by spaces (newlines kept),
    so braces inside them do not count."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            end = text.find(")" + m.group(1) + '"', i) if m else -1
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(" " * (j - i))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def header_kind(header):
    """('function', name), ('class', name) or (None, None) for the text
    between the previous ';', '{' or '}' and an opening brace."""
    h = " ".join(header.split())
    if not h or h.startswith("#"):
        return None, None
    h = re.sub(r"^(template\s*<.*?>\s*)+", "", h)
    m = re.match(r"^(?:[\w:]+\s+)*(class|struct|union)\s+(?:alignas\([^)]*\)\s*)?([\w:]+)(?!\s*\()", h)
    if m and "(" not in h.split(m.group(2), 1)[0] and not re.search(r"\)\s*$", h):
        return "class", m.group(2)
    if re.match(r"^(namespace|extern|enum)\b", h) or h.endswith("="):
        return None, None
    # A function: an identifier (or operator) followed by a parameter list,
    # then qualifiers, a trailing return type or a constructor's
    # initializer list.
    depth, first = 0, -1
    for i, c in enumerate(h):
        if c == "(":
            if depth == 0 and first < 0:
                first = i
            depth += 1
        elif c == ")":
            depth -= 1
    if first <= 0:
        return None, None
    name = re.search(r"(operator\s*\S+|~?[\w]+)\s*$", h[:first])
    if not name or name.group(1) in CONTROL or h.rstrip().endswith(("]", ",")):
        return None, None
    if re.search(r"\]\s*(\(.*\))?\s*(mutable\s*)?(->\s*[\w:<>\s*&]+)?$", h[:first].rstrip()):
        return None, None  # a lambda
    return "function", name.group(1)


def scan(path):
    """(kind, qualified name, first line, lines) of every function body at
    namespace or class scope and every class body."""
    text = blank(path.read_text(errors="replace"))
    found, stack, start = [], [], 0
    line_of = [0] * (len(text) + 1)
    line = 1
    for i, c in enumerate(text):
        line_of[i] = line
        if c == "\n":
            line += 1
    for i, c in enumerate(text):
        if c in ";{}":
            if c == "{":
                inside_function = any(kind == "function" for kind, _, _ in stack)
                kind, name = (None, None) if inside_function else header_kind(text[start:i])
                stack.append((kind, name, i))
            elif c == "}" and stack:
                kind, name, open_at = stack.pop()
                if kind:
                    owner = ".".join(n for k, n, _ in stack if k == "class")
                    found.append((kind, (owner + "." if owner else "") + name, line_of[open_at],
                                  line_of[i] - line_of[open_at] + 1))
            start = i + 1
    return found


def measure():
    sizes = {}
    for path in sorted((ROOT / "lib").rglob("*")):
        if path.suffix not in (".cpp", ".h"):
            continue
        rel = path.relative_to(ROOT).as_posix()
        for kind, name, first, lines in scan(path):
            limit = FUNCTION_LIMIT if kind == "function" else CLASS_LIMIT
            if lines > limit:
                key = "%s:%s" % (rel, name)
                sizes[key] = max(sizes.get(key, 0), lines)
    return sizes


def read_allowed():
    allowed = {}
    for line in ALLOWED.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            key, lines = line.rsplit(None, 1)
            allowed[key] = int(lines)
    return allowed


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--report", action="store_true", help="print every function and class over the limits")
    args = ap.parse_args()
    sizes = measure()
    if args.report:
        for key, lines in sorted(sizes.items(), key=lambda kv: -kv[1]):
            print("%s %d" % (key, lines))
        return 0
    allowed, problems = read_allowed(), []
    for key, lines in sorted(sizes.items()):
        if key not in allowed:
            problems.append("%s has %d lines, over the limit (functions %d, classes %d): split it"
                            % (key, lines, FUNCTION_LIMIT, CLASS_LIMIT))
        elif lines > allowed[key]:
            problems.append("%s grew to %d lines (allowed %d while it is split): split it, do not grow it"
                            % (key, lines, allowed[key]))
    for key in sorted(set(allowed) - set(sizes)):
        problems.append("%s is within the limits now: remove it from %s" % (key, ALLOWED.relative_to(ROOT)))
    for key in sorted(set(allowed) & set(sizes)):
        if sizes[key] < allowed[key]:
            problems.append("%s shrank to %d lines: lower its entry in %s (was %d)"
                            % (key, sizes[key], ALLOWED.relative_to(ROOT), allowed[key]))
    for p in problems:
        print("code size: " + p)
    print("code size: %d functions or classes over the limits, %d listed, %d problems"
          % (len(sizes), len(allowed), len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
