#!/usr/bin/env python3
"""Fails when a file in lib/ includes a header of a folder above its own (docs/architecture.md).

Usage: check_layers.py SOURCE_DIR

Each folder of lib/ may include only the folders listed for it below (and itself). Tests
(*_test.cc, *_test_util.h) may also include lib/fault, whose failing namespaces they drive. A
folder that is not listed is an error too: a new folder takes its place in the table first.
"""

import pathlib
import re
import sys

# Bottom up. Every arrow points down.
ALLOWED = {
    "util": set(),
    "ec": {"util"},
    "nvme": {"util"},
    "cxl": {"util"},
    "metrics": {"util"},
    "catalog": {"util", "ec"},
    "devices": {"util", "nvme"},
    "fault": {"util", "nvme", "devices"},
    "records": {"util", "ec", "nvme", "catalog", "devices"},
    "store": {"util", "ec", "nvme", "cxl", "catalog", "devices", "records"},
    "repair": {"util", "ec", "nvme", "cxl", "catalog", "devices", "records", "store"},
}
TEST_EXTRA = {"fault"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"lib/([a-z_]+)/', re.MULTILINE)


def is_test(path):
    return path.name.endswith("_test.cc") or path.name.endswith("_test_util.h")


def main():
    lib = pathlib.Path(sys.argv[1]) / "lib"
    errors = []
    for path in sorted(lib.rglob("*")):
        if path.suffix not in (".h", ".cc") or not path.is_file():
            continue
        folder = path.relative_to(lib).parts[0]
        if folder not in ALLOWED:
            errors.append("%s: lib/%s is not in the layer table of %s" % (path, folder, __file__))
            continue
        allowed = ALLOWED[folder] | {folder} | (TEST_EXTRA if is_test(path) else set())
        for used in INCLUDE.findall(path.read_text()):
            if used not in allowed:
                errors.append("%s includes lib/%s/, which lib/%s may not use (allowed: %s)" %
                              (path.relative_to(lib.parent), used, folder,
                               ", ".join(sorted(allowed - {folder})) or "nothing"))
    for e in errors:
        print(e, file=sys.stderr)
    if errors:
        sys.exit(1)
    print("ok: %d folders, every include points down" % len(ALLOWED))


if __name__ == "__main__":
    main()
