#!/usr/bin/env python3
"""Reads a Prometheus text exposition (format 0.0.4) the way Prometheus does: samples by name and
label set, whatever the order of the labels and however the value is spelled.

Usage (the exposition on stdin):
  prom_text.py get 'NAME{a="x",b="y"}'   the value of the sample with exactly that name and those
                                         labels (integers without a fraction); nothing if absent
  prom_text.py sum NAME ['a="x"' ...]    the sum of NAME's samples that have all those labels
  prom_text.py contract METRICS_TXT      checks the families served against deploy/metrics.txt
                                         both ways: the same names and types, and each served
                                         sample with exactly the listed labels
As a module: parse(text) -> (families {name: type}, samples [(name, {label: value}, float)]),
and value(text, series) as `get`. Exits 2 on a malformed exposition or series.
"""

import re
import sys

NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*(,|$)')
SAMPLE = re.compile(r"^(" + NAME + r")(\{.*\})?\s+(\S+)(\s+-?\d+)?$")
UNESCAPE = {"\\\\": "\\", '\\"': '"', "\\n": "\n"}


class Malformed(Exception):
    pass


def parse_labels(text):
    """'a="x",b="y"' (without braces) -> {"a": "x", "b": "y"}."""
    labels, pos = {}, 0
    while pos < len(text):
        m = LABEL.match(text, pos)
        if not m:
            raise Malformed("bad labels: {%s}" % text)
        if m.group(1) in labels:
            raise Malformed("label %s twice in {%s}" % (m.group(1), text))
        labels[m.group(1)] = re.sub(r"\\[\\\"n]", lambda e: UNESCAPE[e.group(0)], m.group(2))
        pos = m.end()
    return labels


def parse_series(series):
    """'name{a="x"}' -> ("name", {"a": "x"})."""
    m = re.fullmatch(r"(" + NAME + r")(?:\{(.*)\})?", series.strip())
    if not m:
        raise Malformed("bad series: %s" % series)
    return m.group(1), parse_labels(m.group(2) or "")


def parse(text):
    families, samples = {}, []
    for line in text.splitlines():
        if not line.strip():
            continue
        if line.startswith("#"):
            parts = line.split(None, 3)
            if len(parts) >= 4 and parts[1] == "TYPE":
                families[parts[2]] = parts[3].strip()
            continue
        m = SAMPLE.match(line)
        if not m:
            raise Malformed("bad sample line: %s" % line)
        labels = parse_labels(m.group(2)[1:-1]) if m.group(2) else {}
        samples.append((m.group(1), labels, float(m.group(3))))
    return families, samples


def number(v):
    """An integral value as an integer, else as Python prints floats."""
    return str(int(v)) if v == int(v) and abs(v) < 2**63 else repr(v)


def value(text, series):
    """The value of the one sample with exactly that name and label set, or None."""
    name, labels = parse_series(series)
    found = [v for n, l, v in parse(text)[1] if n == name and l == labels]
    if len(found) > 1:
        raise Malformed("%s appears %d times" % (series, len(found)))
    return found[0] if found else None


def contract(text, metrics_txt):
    """Problems between the served families and metrics.txt (empty when they agree)."""
    listed = {}
    for line in open(metrics_txt):
        if line.strip() and not line.lstrip().startswith("#"):
            name, kind, labels, _ = line.split(None, 3)
            listed[name] = (kind, set() if labels == "-" else set(labels.split(",")))
    families, samples = parse(text)
    problems = []
    for name in sorted(set(listed) - set(families)):
        problems.append("%s is in %s but not served" % (name, metrics_txt))
    for name in sorted(set(families) - set(listed)):
        problems.append("%s is served but not in %s" % (name, metrics_txt))
    for name in sorted(set(listed) & set(families)):
        if families[name] != listed[name][0]:
            problems.append("%s is served as a %s, listed as a %s" %
                            (name, families[name], listed[name][0]))
    seen = set()
    for sample, labels, _ in samples:
        name = sample
        if sample not in listed:
            name = re.sub(r"_(bucket|sum|count)$", "", sample)
        if name not in listed:
            problems.append("sample %s of no listed family" % sample)
            continue
        want = set(listed[name][1]) | ({"le"} if sample.endswith("_bucket") and
                                       listed[name][0] == "histogram" else set())
        if set(labels) != want and (sample, tuple(sorted(labels))) not in seen:
            seen.add((sample, tuple(sorted(labels))))
            problems.append("%s is served with labels (%s), listed with (%s)" %
                            (sample, ",".join(sorted(labels)), ",".join(sorted(want))))
    return problems


def main(argv):
    text = sys.stdin.read()
    try:
        if len(argv) == 3 and argv[1] == "get":
            v = value(text, argv[2])
            if v is not None:
                print(number(v))
        elif len(argv) >= 3 and argv[1] == "sum":
            want = parse_labels(",".join(argv[3:]))
            total = sum(v for n, l, v in parse(text)[1]
                        if n == argv[2] and all(l.get(k) == x for k, x in want.items()))
            print(number(total))
        elif len(argv) == 3 and argv[1] == "contract":
            problems = contract(text, argv[2])
            for p in problems:
                print(p)
            return 1 if problems else 0
        else:
            print(__doc__, file=sys.stderr)
            return 2
    except Malformed as e:
        print("prom_text.py: %s" % e, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
