#!/usr/bin/env python3
"""Fails when a file in lib/ includes a header of a folder above its own (docs/architecture.md).

Usage: check_layers.py SOURCE_DIR

Each folder of lib/ may include only the folders listed for it below (and itself). Tests
(*_test.cc, *_test_util.h) may also include lib/fault, whose failing namespaces they drive. A
folder that is not listed is an error too: a new folder takes its place in the table first.
Top-level folders (TOP) may include only the folders listed for them: lib/ nothing above it, the
client nothing of the daemon. A folder's internal headers (INTERNAL) are included only from within that folder, anywhere in
the tree.
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
    "catalog": {"util", "ec"},
    "devices": {"util", "nvme"},
    "fault": {"util", "nvme", "devices"},
    "records": {"util", "ec", "nvme", "catalog", "devices"},
    "store": {"util", "ec", "nvme", "cxl", "catalog", "devices", "records"},
    "repair": {"util", "ec", "nvme", "cxl", "catalog", "devices", "records", "store"},
}
TEST_EXTRA = {"fault"}
# Headers private to their folder: the store's core and the pieces its flows share, and the
# catalog's SQLite statements.
INTERNAL = {
    "lib/store/store_core.h", "lib/store/store_flows.h", "lib/store/store_device.h",
    "lib/store/stripe_buffer.h", "lib/store/object_locks.h", "lib/catalog/sqlite_statement.h",
}
# The top-level folders and the project folders each may include ("lib" is any lib/ folder).
TOP = {
    "lib": {"lib"},
    "wire": set(),
    "daemon": {"lib", "wire", "daemon"},
    "client": {"lib", "wire", "client"},
    "bench": {"lib", "wire", "bench"},
}
TOP_INCLUDE = re.compile(r'^\s*#\s*include\s+"(lib|wire|daemon|client|bench|tests)/', re.MULTILINE)
ANY_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)
INCLUDE = re.compile(r'^\s*#\s*include\s+"lib/([a-z_]+)/', re.MULTILINE)


def is_test(path):
    return path.name.endswith("_test.cc") or path.name.endswith("_test_util.h")


def top_errors(root):
    """Includes of a top-level folder that its folder may not use (TOP)."""
    errors = []
    for top, allowed in TOP.items():
        for path in sorted((root / top).rglob("*")):
            if path.suffix not in (".h", ".cc") or not path.is_file():
                continue
            for used in TOP_INCLUDE.findall(path.read_text()):
                if used not in allowed | {top}:
                    errors.append("%s includes %s/, which %s/ may not use (allowed: %s)" %
                                  (path.relative_to(root), used, top,
                                   ", ".join(sorted(allowed - {top})) or "nothing"))
    return errors


def internal_errors(root):
    """Includes of a folder's internal header from outside that folder."""
    errors = []
    for top in ("lib", "daemon", "client", "tests", "bench"):
        for path in sorted((root / top).rglob("*")):
            if path.suffix not in (".h", ".cc") or not path.is_file():
                continue
            here = str(path.relative_to(root).parent)
            for header in ANY_INCLUDE.findall(path.read_text()):
                if header in INTERNAL and not here == header.rsplit("/", 1)[0]:
                    errors.append("%s includes %s, internal to %s/" %
                                  (path.relative_to(root), header, header.rsplit("/", 1)[0]))
    return errors


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
    errors += top_errors(lib.parent)
    errors += internal_errors(lib.parent)
    for e in errors:
        print(e, file=sys.stderr)
    if errors:
        sys.exit(1)
    print("ok: %d folders, every include points down" % len(ALLOWED))


if __name__ == "__main__":
    main()
