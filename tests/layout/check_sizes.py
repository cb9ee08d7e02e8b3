#!/usr/bin/env python3
"""Fails when a source file in lib/, wire/, client/ or daemon/ is over 800 lines or a function in it is
over 100 lines.

Usage: check_sizes.py SOURCE_DIR [--list]

Tests (*_test.cc, *_test_util.h) are not checked. A function's length counts the lines from
its signature's first line to its closing brace; lambdas and local classes count as part of the
function that holds them. --list prints every function over 60 lines as well, longest first.
"""

import pathlib
import re
import sys

CHECKED = ("lib", "wire", "client", "daemon")
MAX_FILE_LINES = 800
MAX_FUNCTION_LINES = 100
CONTROL = re.compile(r"\b(if|for|while|switch|catch|do|else|try)\s*(\(|$)")
AGGREGATE = re.compile(r"^(template\s*<.*>\s*)?(class|struct|union|enum|namespace|extern)\b")


def strip(text):
    """Blanks comments, string and character literals, keeping newlines and offsets."""
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
        elif c == 'R' and text.startswith('R"', i):
            m = re.match(r'R"([^(]*)\(', text[i:])
            end = text.find(")" + m.group(1) + '"', i) if m else -1
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + " " * (j - i - 1) + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def without_preprocessor(code):
    """Blanks preprocessor lines (and their continuations)."""
    out, continued = [], False
    for line in code.split("\n"):
        directive = continued or line.lstrip().startswith("#")
        continued = directive and line.endswith("\\")
        out.append(" " * len(line) if directive else line)
    return "\n".join(out)


def functions(text):
    """Yields (first_line, last_line, head) of each outermost function body in `text`."""
    code = without_preprocessor(strip(text))
    stack = []  # per open brace: ("function", start), "scope" (namespace/class) or "block"
    head_start = 0
    for i, c in enumerate(code):
        if c in ";":
            if not stack or stack[-1] == "scope":
                head_start = i + 1
        elif c == "{":
            head = code[head_start:i].strip()
            if any(isinstance(t, tuple) for t in stack) or "block" in stack:
                stack.append("block")
            elif AGGREGATE.match(head) or not head or head.endswith("=") or "(" not in head:
                stack.append("scope" if AGGREGATE.match(head) else "block")
            elif CONTROL.search(head.split("(")[0]):
                stack.append("block")
            else:
                start = head_start + (len(code[head_start:i]) - len(code[head_start:i].lstrip()))
                stack.append(("function", start))
            head_start = i + 1
        elif c == "}":
            top = stack.pop() if stack else None
            if isinstance(top, tuple):
                first = code.count("\n", 0, top[1]) + 1
                last = code.count("\n", 0, i) + 1
                yield first, last, " ".join(code[top[1]:top[1] + 120].split())
            if not stack or stack[-1] == "scope":
                head_start = i + 1
    return


def main():
    root = pathlib.Path(sys.argv[1])
    listing = "--list" in sys.argv[2:]
    errors, long_ones = [], []
    paths = [p for top in CHECKED for p in (root / top).rglob("*")]
    for path in sorted(paths):
        if path.suffix not in (".h", ".cc") or path.name.endswith(("_test.cc", "_test_util.h")):
            continue
        text = path.read_text()
        rel = path.relative_to(root)
        lines = text.count("\n")
        if path.suffix == ".cc" and lines > MAX_FILE_LINES:
            errors.append("%s: %d lines (at most %d)" % (rel, lines, MAX_FILE_LINES))
        for first, last, head in functions(text):
            length = last - first + 1
            if length > MAX_FUNCTION_LINES:
                errors.append("%s:%d: a function of %d lines (at most %d): %s" %
                              (rel, first, length, MAX_FUNCTION_LINES, head))
            if length > 60:
                long_ones.append((length, "%s:%d" % (rel, first), head))
    if listing:
        for length, where, head in sorted(long_ones, reverse=True):
            print("%4d %s %s" % (length, where, head[:80]))
    for e in errors:
        print(e, file=sys.stderr)
    if errors:
        sys.exit(1)
    print("ok: no file over %d lines, no function over %d" % (MAX_FILE_LINES, MAX_FUNCTION_LINES))


if __name__ == "__main__":
    main()
