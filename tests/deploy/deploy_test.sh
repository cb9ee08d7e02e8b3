#!/usr/bin/env bash
# ctest deploy.check: checks every file in deploy/ and fails if any is broken.
#   1. promtool check config deploy/prometheus.yml (also checks the rule files it loads)
#   2. promtool check rules deploy/ecd-alerts.yml
#   3. promtool test rules deploy/ecd-alerts.test.yml (each alert fires and stays quiet)
#   4. tests/deploy/check_deploy.py: metrics.txt well formed; the Grafana dashboard's JSON,
#      variables, data sources, metric and label names; the alert rules' names, severities and
#      runbook links into docs/operations.md; a firing and a quiet test per alert; the unit,
#      sysusers file and ecd.conf agree (user, directories, hardening, LimitMEMLOCK)
#   5. promtool check rules on every dashboard expression (PromQL syntax)
#   6. systemd-analyze verify of the unit with ExecStart pointing at the built ecd, with any
#      warning about the unit counted as a failure; systemd-analyze security --offline (exposure
#      at most 2.5); systemd-sysusers into a scratch root
#   7. tests/deploy/sandbox_run.py: the built ecd under the unit's system-call filter, limits and
#      an unprivileged user, encoding, reading, scrubbing, evacuating, stopping on SIGTERM
# Parts whose tool is missing (systemd-analyze, systemd-sysusers, libseccomp) print SKIP.
# Usage: tests/deploy/deploy_test.sh [ECD [ECCTL]]   (ctest passes the built binaries)
set -uo pipefail

ECD=${1:+$(realpath "$1")}
ECCTL=${2:+$(realpath "$2")}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DEPLOY=$ROOT/deploy
TMP=$(mktemp -d)
chmod 755 "$TMP"  # the sandboxed ecd runs as nobody under it
trap 'rm -rf "$TMP"' EXIT
failures=0

pass() { echo "PASS $1"; }
skip() { echo "SKIP $1: $2"; }
failed() {
  echo "FAIL $1"
  sed 's/^/    /' "$TMP/out"
  failures=$((failures + 1))
}
# run NAME CMD...: PASS when CMD exits 0, else FAIL with its output.
run() {
  local name=$1
  shift
  if "$@" >"$TMP/out" 2>&1; then pass "$name"; else failed "$name"; fi
}

if ! command -v promtool >/dev/null; then
  echo "FAIL promtool not found (scripts/install-deps.sh installs prometheus)"
  exit 1
fi

run "promtool check config deploy/prometheus.yml" promtool check config "$DEPLOY/prometheus.yml"
run "promtool check rules deploy/ecd-alerts.yml" promtool check rules "$DEPLOY/ecd-alerts.yml"
run "promtool test rules deploy/ecd-alerts.test.yml" promtool test rules "$DEPLOY/ecd-alerts.test.yml"
run "check_deploy.py (metrics.txt, dashboard, alerts, alert tests, unit/config)" \
  python3 "$ROOT/tests/deploy/check_deploy.py" --root "$ROOT" --promql-rules "$TMP/dashboard-rules.yml"
if [ -s "$TMP/dashboard-rules.yml" ]; then
  run "promtool parses every dashboard expression" promtool check rules "$TMP/dashboard-rules.yml"
else
  echo "FAIL dashboard expressions: check_deploy.py wrote none"
  failures=$((failures + 1))
fi

# systemd: verify the unit with ExecStart rewritten to the built binary.
if ! command -v systemd-analyze >/dev/null; then
  skip "systemd-analyze verify" "systemd-analyze not installed"
else
  exe=${ECD:-/bin/true}
  [ -n "$ECD" ] || echo "note: no ecd binary given; verifying with ExecStart=/bin/true"
  mkdir -p "$TMP/unit"
  sed "s#^ExecStart=/usr/local/bin/ecd #ExecStart=$exe #" "$DEPLOY/ecd.service" >"$TMP/unit/ecd.service"
  printf '[Unit]\nDescription=probe\n[Service]\nExecStart=/bin/true\n' >"$TMP/unit/probe.service"
  if ! grep -q "^ExecStart=$exe " "$TMP/unit/ecd.service"; then
    echo "FAIL systemd-analyze verify: ExecStart=/usr/local/bin/ecd ... not found in deploy/ecd.service"
    failures=$((failures + 1))
  elif ! systemd-analyze verify "$TMP/unit/probe.service" >"$TMP/probe" 2>&1; then
    skip "systemd-analyze verify" "cannot verify even a trivial unit here: $(head -1 "$TMP/probe")"
  else
    # verify exits 0 on unknown keys and bad values (it only warns), so any line naming the
    # unit file is a failure.
    systemd-analyze verify "$TMP/unit/ecd.service" >"$TMP/out" 2>&1
    rc=$?
    if [ $rc -ne 0 ] || grep -q "ecd.service" "$TMP/out"; then
      failed "systemd-analyze verify deploy/ecd.service"
    else
      pass "systemd-analyze verify deploy/ecd.service (ExecStart=$exe)"
    fi
    if systemd-analyze security --help 2>/dev/null | grep -q -- --offline; then
      # --threshold is in tenths: 25 = exposure 2.5 (the unit scores 1.6 "OK" with systemd 252).
      run "systemd-analyze security --offline: exposure at most 2.5" \
        systemd-analyze security --offline=yes --threshold=25 --no-pager "$TMP/unit/ecd.service"
      grep -o "Overall exposure level.*" "$TMP/out" | sed 's/^/    /'
    else
      skip "systemd-analyze security" "no --offline in this systemd"
    fi
  fi
fi

if command -v systemd-sysusers >/dev/null; then
  mkdir -p "$TMP/sysroot/etc"
  if systemd-sysusers --root="$TMP/sysroot" "$DEPLOY/ecd.sysusers.conf" >"$TMP/out" 2>&1 &&
    grep -q '^ecd:x:[0-9]*:[0-9]*:[^:]*:/var/lib/ecd:/usr/sbin/nologin$' "$TMP/sysroot/etc/passwd" &&
    grep -q '^ecd:x:' "$TMP/sysroot/etc/group"; then
    pass "systemd-sysusers deploy/ecd.sysusers.conf creates user and group ecd"
  else
    cat "$TMP/sysroot/etc/passwd" >>"$TMP/out" 2>/dev/null
    failed "systemd-sysusers deploy/ecd.sysusers.conf"
  fi
else
  skip "systemd-sysusers" "not installed"
fi

if [ -z "$ECD" ] || [ -z "$ECCTL" ]; then
  skip "sandboxed ecd run" "needs the ecd and ecctl binaries as arguments"
else
  python3 "$ROOT/tests/deploy/sandbox_run.py" "$DEPLOY/ecd.service" "$DEPLOY/ecd.conf" \
    "$ECD" "$ECCTL" "$TMP/sandbox" >"$TMP/out" 2>&1
  case $? in
    0) pass "sandboxed ecd run"; sed 's/^/    /' "$TMP/out" ;;
    77) skip "sandboxed ecd run" "$(tail -1 "$TMP/out")" ;;
    *) failed "sandboxed ecd run under the unit's filter and limits" ;;
  esac
fi

if [ $failures -ne 0 ]; then
  echo "deploy_test: $failures check(s) failed"
  exit 1
fi
echo "deploy_test: all checks passed"
