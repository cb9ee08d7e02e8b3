#!/usr/bin/env python3
"""Static checks of the files in deploy/ (run by tests/deploy/deploy_test.sh).

  metrics     deploy/metrics.txt is well formed (NAME TYPE LABELS HELP, counters end in _total).
  dashboard   deploy/grafana-dashboard.json: valid JSON, schemaVersion >= 36, the DS_PROMETHEUS
              data source variable and the device variable from label_values(ecd_device_state,
              device); every panel queries ${DS_PROMETHEUS}; every expression names only metrics
              of metrics.txt (or up) and only their labels; device metrics are filtered by
              $device; every metric of metrics.txt is on some panel. --promql-rules FILE also
              writes every expression as a recording rule, for `promtool check rules` to parse.
  alerts      deploy/ecd-alerts.yml: the same name and label checks on every expr; a severity
              label; summary, description and a runbook_url docs/operations.md#ANCHOR whose
              heading exists.
  alert-tests deploy/ecd-alerts.test.yml has, for every alert, a case where it fires and a
              case where it stays quiet.
  unit        deploy/ecd.service, deploy/ecd.sysusers.conf and deploy/ecd.conf agree: user ecd,
              data dir in StateDirectory, socket in RuntimeDirectory, the hardening settings,
              LimitMEMLOCK >= devices x (nvme-host-memory + DMA arena).

Exits 1 and prints one line per problem when anything is wrong.
"""
import argparse
import json
import os
import re
import sys

from ini import read_settings

try:
    import yaml  # python3-yaml; a small fallback reader handles our files without it.
except ImportError:
    yaml = None

PROBLEMS = []


def problem(where, message):
    PROBLEMS.append(f"{where}: {message}")


# --------------------------------------------------------------------------- metrics.txt

STANDARD = {"up": set()}  # Prometheus's own series for each target.
TARGET_LABELS = {"job", "instance"}


def load_metrics(path):
    """Returns {series name: set of labels}, expanding histograms to _bucket/_sum/_count."""
    series = dict(STANDARD)
    declared = {}
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            parts = line.split(None, 3)
            where = f"{path}:{n}"
            if len(parts) < 4:
                problem(where, "want NAME TYPE LABELS HELP")
                continue
            name, kind, labels, _help = parts
            if not re.fullmatch(r"ecd_[a-z0-9_]+", name):
                problem(where, f"metric name {name!r} must be ecd_ and lower case")
            if name in declared:
                problem(where, f"{name} listed twice")
            if kind not in ("counter", "gauge", "histogram"):
                problem(where, f"type {kind!r} is not counter, gauge or histogram")
            if kind == "counter" and not name.endswith("_total"):
                problem(where, f"counter {name} must end in _total")
            label_set = set() if labels == "-" else set(labels.split(","))
            for label in label_set:
                if not re.fullmatch(r"[a-z_][a-z0-9_]*", label) or label in ("le", "job",
                                                                             "instance"):
                    problem(where, f"bad label {label!r}")
            declared[name] = kind
            if kind == "histogram":
                series[name + "_bucket"] = label_set | {"le"}
                series[name + "_sum"] = set(label_set)
                series[name + "_count"] = set(label_set)
            else:
                series[name] = label_set
    if not declared:
        problem(path, "no metrics")
    return series, declared


# --------------------------------------------------------------------------- PromQL names

KEYWORDS = {"and", "or", "unless", "by", "without", "on", "ignoring", "group_left",
            "group_right", "bool", "offset", "inf", "nan", "atan2"}
AGGREGATIONS = {"sum", "min", "max", "avg", "group", "stddev", "stdvar", "count",
                "count_values", "bottomk", "topk", "quantile"}
LABEL_LISTS = {"by", "without", "on", "ignoring", "group_left", "group_right"}
GRAFANA_VARS = {"$__rate_interval": "5m", "$__interval": "1m", "$__range": "1h"}


def grafana_to_promql(expr):
    for var, value in GRAFANA_VARS.items():
        expr = expr.replace(var, value)
    # $var and ${var} only appear inside label matcher strings in our panels.
    return re.sub(r"\$\{?\w+\}?", "x", expr)


def check_promql(expr, where, series, require_device_filter=False):
    """Checks metric and label names of one expression. Returns the metric names it uses."""
    used = []        # (metric, set of matcher labels)
    list_labels = []  # labels of by/without/on/ignoring/group_* lists
    strings = []
    i, n = 0, len(expr)
    pending_list = False
    while i < n:
        c = expr[i]
        if c in "\"'`":
            j = i + 1
            while j < n and expr[j] != c:
                j += 2 if expr[j] == "\\" else 1
            strings.append(expr[i + 1:j])
            i = j + 1
            continue
        if c == "[":  # range or subquery: durations only
            i = expr.index("]", i) + 1 if "]" in expr[i:] else n
            continue
        if c == "#":  # comment to end of line
            while i < n and expr[i] != "\n":
                i += 1
            continue
        if c.isdigit() or (c == "." and i + 1 < n and expr[i + 1].isdigit()):
            while i < n and (expr[i].isalnum() or expr[i] in "._"):
                i += 1
            continue
        if c.isalpha() or c in "_:":
            j = i
            while j < n and (expr[j].isalnum() or expr[j] in "_:"):
                j += 1
            word = expr[i:j]
            k = j
            while k < n and expr[k].isspace():
                k += 1
            nxt = expr[k] if k < n else ""
            if word in LABEL_LISTS:
                pending_list = nxt == "("
                i = j
                continue
            if word in KEYWORDS or word in AGGREGATIONS or nxt == "(":
                i = j
                continue
            # A metric name, maybe followed by {matchers}.
            matchers = set()
            if nxt == "{":
                end = k
                depth_quote = None
                while end < n:
                    ch = expr[end]
                    if depth_quote:
                        if ch == "\\":
                            end += 1
                        elif ch == depth_quote:
                            depth_quote = None
                    elif ch in "\"'`":
                        depth_quote = ch
                    elif ch == "}":
                        break
                    end += 1
                body = expr[k + 1:end]
                body_wo_strings = re.sub(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`', '""',
                                         body)
                for m in re.finditer(r"([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)", body_wo_strings):
                    matchers.add(m.group(1))
                j = end + 1
            used.append((word, matchers))
            i = j
            continue
        if c == "(" and pending_list:
            end = expr.index(")", i)
            list_labels.extend(x.strip() for x in expr[i + 1:end].split(",") if x.strip())
            pending_list = False
            i = end + 1
            continue
        if c == "{":  # a selector without a metric name
            problem(where, f"selector without a metric name in {expr!r}")
            i = expr.index("}", i) + 1 if "}" in expr[i:] else n
            continue
        i += 1

    names = []
    allowed_list_labels = set(TARGET_LABELS) | set(strings)  # label_replace's new labels
    for metric, matchers in used:
        if metric not in series:
            problem(where, f"unknown metric {metric!r} (not in deploy/metrics.txt)")
            continue
        names.append(metric)
        labels = series[metric] | TARGET_LABELS
        allowed_list_labels |= labels
        for label in matchers - {"__name__"}:
            if label not in labels:
                problem(where, f"{metric} has no label {label!r}")
        if require_device_filter and "device" in series[metric] and "device" not in matchers:
            problem(where, f"{metric} is not filtered by device=~\"$device\"")
    for label in list_labels:
        if label not in allowed_list_labels:
            problem(where, f"label {label!r} in a by/on/without list is not a label of the "
                           "metrics in the expression")
    if not used:
        problem(where, f"no metric in {expr!r}")
    return names


# --------------------------------------------------------------------------- dashboard

def walk_panels(panels):
    for p in panels:
        yield p
        yield from walk_panels(p.get("panels", []))


def check_dashboard(path, series, declared, rules_out):
    where = path
    try:
        with open(path) as f:
            dash = json.load(f)
    except (OSError, ValueError) as e:
        problem(where, f"not valid JSON: {e}")
        return
    if not isinstance(dash.get("schemaVersion"), int) or dash["schemaVersion"] < 36:
        problem(where, f"schemaVersion {dash.get('schemaVersion')!r} is below 36")
    for key in ("title", "uid", "panels", "templating"):
        if key not in dash:
            problem(where, f"no {key!r}")
    variables = {v.get("name"): v for v in dash.get("templating", {}).get("list", [])}
    ds_var = variables.get("DS_PROMETHEUS")
    if not ds_var or ds_var.get("type") != "datasource" or ds_var.get("query") != "prometheus":
        problem(where, "no data source variable DS_PROMETHEUS (type datasource, query prometheus)")
    ds_ref = {"type": "prometheus", "uid": "${DS_PROMETHEUS}"}
    dev = variables.get("device")
    dev_query = dev.get("query") if dev else None
    if isinstance(dev_query, dict):
        dev_query = dev_query.get("query")
    if not dev or dev.get("type") != "query" or \
            re.sub(r"\s", "", dev_query or "") != "label_values(ecd_device_state,device)":
        problem(where, "no query variable device = label_values(ecd_device_state, device)")
    for name, v in variables.items():
        if v.get("type") != "query":
            continue
        if v.get("datasource") != ds_ref:
            problem(where, f"variable {name}: datasource must be {ds_ref}")
        q = v.get("query")
        q = q.get("query") if isinstance(q, dict) else q
        m = re.fullmatch(r"\s*label_values\((.*),\s*(\w+)\s*\)\s*", q or "")
        if not m:
            problem(where, f"variable {name}: query {q!r} is not label_values(SELECTOR, LABEL)")
            continue
        for metric in check_promql(m.group(1), f"{where}: variable {name}", series):
            if m.group(2) not in series[metric] | TARGET_LABELS:
                problem(where, f"variable {name}: {metric} has no label {m.group(2)!r}")

    ids = set()
    exprs = []
    used = set()
    for p in walk_panels(dash.get("panels", [])):
        title = p.get("title", "?")
        pw = f"{where}: panel {title!r}"
        if p.get("id") in ids:
            problem(pw, f"duplicate id {p.get('id')}")
        ids.add(p.get("id"))
        g = p.get("gridPos", {})
        if not all(isinstance(g.get(k), int) for k in ("x", "y", "w", "h")) or \
                g.get("x", 0) + g.get("w", 0) > 24:
            problem(pw, f"bad gridPos {g}")
        if p.get("type") == "row":
            continue
        if p.get("datasource") != ds_ref:
            problem(pw, f"datasource must be {ds_ref}")
        targets = p.get("targets") or []
        if not targets:
            problem(pw, "no targets")
        refs = set()
        for t in targets:
            if t.get("datasource") != ds_ref:
                problem(pw, f"target datasource must be {ds_ref}")
            if t.get("refId") in refs:
                problem(pw, f"duplicate refId {t.get('refId')}")
            refs.add(t.get("refId"))
            expr = t.get("expr", "")
            if not expr.strip():
                problem(pw, "empty expr")
                continue
            used.update(check_promql(expr, pw, series, require_device_filter="$device" in
                                     json.dumps(p.get("targets"))))
            exprs.append((title, expr))
    shown = {re.sub(r"_(bucket|sum|count)$", "", u) if re.sub(r"_(bucket|sum|count)$", "", u)
             in declared else u for u in used}
    for name in sorted(set(declared) - shown):
        problem(where, f"metric {name} of deploy/metrics.txt is on no panel")
    if rules_out:
        with open(rules_out, "w") as f:
            f.write("# Generated by tests/deploy/check_deploy.py: the dashboard's expressions.\n")
            f.write("groups:\n  - name: dashboard\n    rules:\n")
            for n, (title, expr) in enumerate(exprs):
                f.write(f"      - record: dashboard:expr{n}\n")
                f.write(f"        expr: {json.dumps(grafana_to_promql(expr))}\n")


# --------------------------------------------------------------------------- alerts

def load_yaml(path):
    with open(path) as f:
        text = f.read()
    if yaml is not None:
        return yaml.safe_load(text)
    return mini_yaml(text)


def mini_yaml(text):
    """Enough of YAML for our rule and test files when python3-yaml is missing: returns
    {"groups": [{"rules": [...]}]} or {"tests": [...]} with the keys the checks read."""
    rules, tests = [], []
    cur = None
    block_key, block_indent, block_lines = None, None, []

    def flush_block():
        nonlocal block_key
        if block_key and cur is not None:
            cur[block_key] = " ".join(s.strip() for s in block_lines)
        block_key = None

    current_test = None
    for raw in text.split("\n"):
        line = raw.split(" #")[0] if not raw.strip().startswith(("description", "summary")) \
            else raw
        if block_key is not None:
            indent = len(raw) - len(raw.lstrip())
            if raw.strip() and indent > block_indent:
                block_lines.append(raw)
                continue
            flush_block()
        s = line.strip()
        m = re.match(r"- alert:\s*(\S+)", s)
        if m:
            cur = {"alert": m.group(1), "labels": {}, "annotations": {}}
            rules.append(cur)
            continue
        m = re.match(r"- interval:", s)
        if m or s == "- input_series:":
            current_test = {"alert_rule_test": []}
            tests.append(current_test)
            continue
        m = re.match(r"- eval_time:", s)
        if m and current_test is not None:
            cur = {}
            current_test["alert_rule_test"].append(cur)
            continue
        m = re.match(r"(\w+):\s*(.*)$", s)
        if not m or cur is None:
            continue
        key, value = m.group(1), m.group(2).strip()
        if key == "alertname":
            cur["alertname"] = value
        elif key == "exp_alerts":
            cur["exp_alerts"] = [] if value == "[]" else [{}]
        elif key == "exp_labels" and "exp_alerts" in cur:
            cur["exp_alerts"] = [{}]
        elif value in (">-", ">", "|", "|-"):
            block_key, block_indent, block_lines = key, len(raw) - len(raw.lstrip()), []
        elif key in ("severity",):
            cur.setdefault("labels", {})[key] = value.strip("\"'")
        elif key in ("summary", "description", "runbook_url"):
            cur.setdefault("annotations", {})[key] = value.strip("\"'")
        elif key == "expr":
            cur["expr"] = value.strip("\"'")
    flush_block()
    for r in rules:  # block scalars landed on the rule itself
        for k in ("summary", "description"):
            if k in r:
                r["annotations"][k] = r.pop(k)
    return {"groups": [{"rules": rules}]} if rules else {"tests": tests}


def heading_anchors(path):
    anchors = set()
    with open(path) as f:
        in_code = False
        for line in f:
            if line.startswith("```"):
                in_code = not in_code
            if in_code:
                continue
            m = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
            if m:  # GitHub's slugs: lower case, punctuation dropped, spaces to dashes.
                slug = re.sub(r"[^\w\- ]", "", m.group(1).lower()).replace(" ", "-")
                anchors.add(slug)
    return anchors


def check_alerts(path, series, docs):
    try:
        doc = load_yaml(path)
    except Exception as e:  # noqa: BLE001 - any parse error is a problem to report
        problem(path, f"cannot parse: {e}")
        return []
    anchors = heading_anchors(docs) if os.path.exists(docs) else set()
    if not anchors:
        problem(docs, "missing or without headings")
    names = []
    for group in doc.get("groups") or []:
        for rule in group.get("rules") or []:
            name = rule.get("alert")
            if not name:
                continue
            where = f"{path}: alert {name}"
            names.append(name)
            check_promql(str(rule.get("expr", "")), where, series)
            severity = (rule.get("labels") or {}).get("severity")
            if severity not in ("critical", "warning", "info"):
                problem(where, f"severity {severity!r} is not critical, warning or info")
            ann = rule.get("annotations") or {}
            for key in ("summary", "description", "runbook_url"):
                if not str(ann.get(key, "")).strip():
                    problem(where, f"no {key} annotation")
            m = re.fullmatch(r"docs/operations\.md#([\w-]+)", str(ann.get("runbook_url", "")))
            if not m:
                problem(where, "runbook_url must be docs/operations.md#ANCHOR")
            elif m.group(1) not in anchors:
                problem(where, f"{docs} has no heading with anchor #{m.group(1)}")
    if len(set(names)) != len(names):
        problem(path, "an alert name is used twice")
    if not names:
        problem(path, "no alerts")
    return names


def check_alert_tests(path, alerts):
    try:
        doc = load_yaml(path)
    except Exception as e:  # noqa: BLE001
        problem(path, f"cannot parse: {e}")
        return
    fires, quiet = set(), set()
    for test in doc.get("tests") or []:
        for case in test.get("alert_rule_test") or []:
            (fires if case.get("exp_alerts") else quiet).add(case.get("alertname"))
    for name in alerts:
        if name not in fires:
            problem(path, f"no case where {name} fires")
        if name not in quiet:
            problem(path, f"no case where {name} stays quiet (exp_alerts: [])")


# --------------------------------------------------------------------------- unit

def parse_size(text):
    if str(text).strip().lower() == "infinity":
        return float("inf")
    m = re.fullmatch(r"\s*(\d+)\s*([KMGT]?)i?B?\s*", str(text), re.I)
    if not m:
        return None
    return int(m.group(1)) * 1024 ** "_KMGT".index(m.group(2).upper() or "_")


def load_unit(path):
    return read_settings(path)


def load_conf(path):
    """ecd.conf: the last value of each key, unquoted."""
    return {k: v[-1].strip('"') for k, v in read_settings(path).items()}


def check_unit(unit_path, sysusers_path, conf_path):
    where = unit_path
    u = load_unit(unit_path)
    conf = load_conf(conf_path)

    def one(key):
        values = u.get(key)
        return values[-1] if values else None

    yes = ("yes", "true", "1", "on")
    want = {
        "ProtectSystem": ("strict",), "ProtectHome": yes, "PrivateTmp": yes,
        "NoNewPrivileges": yes, "PrivateDevices": yes, "LockPersonality": yes,
        "MemoryDenyWriteExecute": yes, "RestrictRealtime": yes, "KillSignal": ("SIGTERM",),
        "User": ("ecd",), "StateDirectory": ("ecd",),
    }
    for key, allowed in want.items():
        if one(key) not in allowed:
            problem(where, f"{key}={one(key)!r}, want {'|'.join(allowed)}")
    if u.get("CapabilityBoundingSet") != [""]:
        problem(where, "CapabilityBoundingSet= must be set once, empty")
    families = set((one("RestrictAddressFamilies") or "").split())
    if families != {"AF_INET", "AF_INET6", "AF_UNIX"}:
        problem(where, f"RestrictAddressFamilies={' '.join(sorted(families))}, want AF_INET "
                       "AF_INET6 AF_UNIX")
    filters = " ".join(u.get("SystemCallFilter", [])).split()
    for name in ("@system-service", "io_uring_setup", "io_uring_enter", "io_uring_register"):
        if name not in filters:
            problem(where, f"SystemCallFilter does not allow {name}")
    for line in u.get("SystemCallFilter", []):
        denied = set(line.lstrip("~").split()) if line.startswith("~") else set()
        if denied & {"io_uring_setup", "io_uring_enter", "io_uring_register", "@aio"}:
            problem(where, f"SystemCallFilter={line} denies io_uring (@aio holds it in systemd 252)")
    stop = one("TimeoutStopSec") or ""
    m = re.fullmatch(r"(\d+)s?", stop)
    if not m or int(m.group(1)) <= 10:
        problem(where, f"TimeoutStopSec={stop!r}: must be more than the 10 s ecd gives in-flight "
                       "requests after SIGTERM")
    exec_start = one("ExecStart") or ""
    if "--config /etc/ecd/ecd.conf" not in exec_start:
        problem(where, "ExecStart must pass --config /etc/ecd/ecd.conf")

    state_dir = "/var/lib/" + (one("StateDirectory") or "")
    data_dir = conf.get("data-dir", "")
    if os.path.normpath(data_dir) != state_dir and not data_dir.startswith(state_dir + "/"):
        problem(conf_path, f"data-dir {data_dir!r} is outside StateDirectory {state_dir}: with "
                           "ProtectSystem=strict ecd could not write it")
    runtime_dir = "/run/" + (one("RuntimeDirectory") or "")
    sock = conf.get("unix-socket")
    if sock and not sock.startswith(runtime_dir + "/"):
        problem(conf_path, f"unix-socket {sock!r} is outside RuntimeDirectory {runtime_dir}")

    memlock = parse_size(one("LimitMEMLOCK") or "")
    devices = int(conf.get("devices", "8"))
    host = parse_size(conf.get("nvme-host-memory", "8M"))
    limit = parse_size(conf.get("memory-limit", "512M"))
    if memlock is None or host is None or limit is None:
        problem(where, f"LimitMEMLOCK={one('LimitMEMLOCK')!r}, nvme-host-memory or memory-limit "
                       "unreadable")
    else:
        # Each device registers its pool and the DMA arena: dma-arena bytes at most of the
        # stripe budget (the memory limit less ecd's fixed 96M and the pools).
        arena = 0
        if limit > 0:
            arena = min(parse_size(conf.get("dma-arena", "512M")) or 0,
                        max(0, limit - (96 << 20) - devices * host))
        if memlock < devices * (host + arena):
            problem(where, f"LimitMEMLOCK={one('LimitMEMLOCK')} is below devices x "
                           f"(nvme-host-memory + DMA arena) = {devices} x ({host} + {arena}): "
                           "io_uring cannot register the DMA buffers")

    user = one("User")
    found = False
    with open(sysusers_path) as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 2 and parts[0] == "u" and parts[1] == user:
                found = True
                if state_dir not in line:
                    problem(sysusers_path, f"home of {user} should be {state_dir}")
    if not found:
        problem(sysusers_path, f"no `u {user}` line for the unit's User={user}")


# --------------------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=os.path.join(os.path.dirname(__file__), "..", ".."),
                    help="repository root")
    ap.add_argument("--dashboard")
    ap.add_argument("--alerts")
    ap.add_argument("--alert-tests")
    ap.add_argument("--metrics")
    ap.add_argument("--docs")
    ap.add_argument("--unit")
    ap.add_argument("--sysusers")
    ap.add_argument("--conf")
    ap.add_argument("--promql-rules", help="write the dashboard's exprs as recording rules here")
    ap.add_argument("checks", nargs="*",
                    default=["metrics", "dashboard", "alerts", "alert-tests", "unit"])
    a = ap.parse_args()
    d = lambda p: os.path.normpath(os.path.join(a.root, p))  # noqa: E731
    metrics = a.metrics or d("deploy/metrics.txt")
    series, declared = load_metrics(metrics)
    alerts = []
    if "dashboard" in a.checks:
        check_dashboard(a.dashboard or d("deploy/grafana-dashboard.json"), series, declared,
                        a.promql_rules)
    if "alerts" in a.checks or "alert-tests" in a.checks:
        alerts = check_alerts(a.alerts or d("deploy/ecd-alerts.yml"), series,
                              a.docs or d("docs/operations.md"))
    if "alert-tests" in a.checks:
        check_alert_tests(a.alert_tests or d("deploy/ecd-alerts.test.yml"), alerts)
    if "unit" in a.checks:
        check_unit(a.unit or d("deploy/ecd.service"), a.sysusers or d("deploy/ecd.sysusers.conf"),
                   a.conf or d("deploy/ecd.conf"))
    for p in PROBLEMS:
        print(p)
    if PROBLEMS:
        print(f"check_deploy: {len(PROBLEMS)} problem(s)")
        return 1
    print(f"check_deploy: {', '.join(a.checks)}: OK ({len(declared)} metrics, "
          f"{len(alerts)} alerts{', yaml' if yaml else ', no python3-yaml: fallback reader'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
