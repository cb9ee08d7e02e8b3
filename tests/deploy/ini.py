"""Reads key = value files (systemd units, ecd.conf) for the deploy checks: every value of every
key, in order, ignoring blank lines, comments (# ;) and [section] headers."""


def read_settings(path):
    settings = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith(("#", ";", "[")):
                continue
            key, _, value = line.partition("=")
            settings.setdefault(key.strip(), []).append(value.strip())
    return settings
