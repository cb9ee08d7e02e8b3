#!/usr/bin/env bash
# Metrics on loopback: ecd's /metrics passes `promtool check metrics` (at start, after an encode,
# after a device failure); deploy/metrics.txt lists exactly the families served, with their types
# and labels; samples are read by name and label set (prom_text.py); /healthz and /readyz
# answer; the values move as they should (an encode of a known size moves the object, byte,
# RPC, EC-task and NVMe counters by exactly what it wrote; a read of a missing object counts as
# NOT_FOUND; failing a device flips its state gauge and makes stripes degraded); and a real
# Prometheus server, run with deploy/prometheus.yml and deploy/ecd-alerts.yml pointed at this
# ecd, scrapes it, answers ecd_objects through its HTTP query API, and fires EcdDeviceFailed.
# Usage: metrics_test.sh ECD ECTL
set -euo pipefail
ECD=$1
ECTL=$2
. "$(dirname "$0")/lib.sh"
DEPLOY="$(cd "$(dirname "$0")/../../deploy" && pwd)"
PROM_PID=""
trap 'if [ -n "$PROM_PID" ]; then kill "$PROM_PID" 2>/dev/null || true; fi; cleanup' EXIT

# expect_metric SERIES WANT: the series' value in a fresh scrape equals WANT (numerically).
expect_metric() {
  local got
  got=$(metric "$1")
  [ -n "$got" ] || fail "series $1 is missing from /metrics"
  python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) == float(sys.argv[2]) else 1)' \
    "$got" "$2" || fail "$1 = $got, want $2"
}

# sum_metric NAME [LABEL="VALUE"]: the sum of every series of NAME with that label (all of them
# without one).
sum_metric() {
  curl -sf "http://$METRICS/metrics" | /usr/bin/python3 "$PROM_TEXT" sum "$1" ${2:+"$2"}
}

# promtool_clean FILE WHAT: `promtool check metrics` accepts the scrape in FILE without a word.
promtool_clean() {
  promtool check metrics <"$1" >"$WORK/promtool" 2>&1 || fail "promtool ($2): $(cat "$WORK/promtool")"
  [ ! -s "$WORK/promtool" ] || fail "promtool check metrics complained ($2): $(cat "$WORK/promtool")"
}

step "endpoints and exposition format"
start_ecd --data-blocks 4 --parity-blocks 2 --block-size 1M
[ "$(curl -s -o /dev/null -w '%{http_code}' "http://$METRICS/healthz")" = 200 ] || fail "/healthz"
[ "$(curl -s -o /dev/null -w '%{http_code}' "http://$METRICS/readyz")" = 200 ] || fail "/readyz"
[ "$(curl -s -o /dev/null -w '%{http_code}' "http://$METRICS/nope")" = 404 ] || fail "/nope is not 404"
curl -sf -D "$WORK/headers" "http://$METRICS/metrics" >"$WORK/scrape0"
grep -qi '^content-type: text/plain; version=0.0.4' "$WORK/headers" || fail "content type: $(cat "$WORK/headers")"
promtool_clean "$WORK/scrape0" "after start"
expect_metric ecd_objects 0
expect_metric ecd_object_bytes 0
# One ecd_build_info series, exactly these three labels (in any order), value 1.
/usr/bin/python3 - "$PROM_TEXT" "$WORK/scrape0" <<'PY' || fail "ecd_build_info: $(grep build_info "$WORK/scrape0")"
import os, re, sys
sys.path.insert(0, os.path.dirname(sys.argv[1]))
import prom_text
found = [(l, v) for n, l, v in prom_text.parse(open(sys.argv[2]).read())[1] if n == "ecd_build_info"]
assert len(found) == 1, found
labels, value = found[0]
assert set(labels) == {"version", "isal", "cpu_features"}, labels
assert re.fullmatch(r"[0-9.]*", labels["version"]), labels
assert re.fullmatch(r"2\.[0-9.]*", labels["isal"]), labels
assert re.fullmatch(r"[a-z0-9_,]*", labels["cpu_features"]), labels
assert value == 1, value
PY
for fam in ecd_device_state ecd_nvme_commands_total ecd_cxl_policy_actions_total \
  ecd_rebuild_jobs ecd_scrub_findings_total ecd_catalog_commit_duration_seconds \
  ecd_ec_task_duration_seconds ecd_nvme_prp_fetches_total ecd_nvme_in_flight; do
  grep -q "^# TYPE $fam " "$WORK/scrape0" || fail "family $fam missing"
done

step "an encode of 3000001 bytes moves the counters by what it wrote"
head -c 3000001 /dev/urandom >"$WORK/obj"
written0=$(sum_metric ecd_nvme_bytes_total 'direction="write"')
ecctl encode "$WORK/obj" --name obj >/dev/null
expect_metric ecd_objects 1
expect_metric ecd_object_bytes 3000001
expect_metric 'ecd_stripes{redundancy_left="2"}' 1
expect_metric 'ecd_rpc_requests_total{method="ecd.v1.Objects/Encode",code="OK"}' 1
expect_metric 'ecd_ec_task_duration_seconds_count{kind="create"}' 1
curl -sf "http://$METRICS/metrics" >"$WORK/scrape1"
promtool_clean "$WORK/scrape1" "after an encode"
received=$(metric 'ecd_rpc_received_bytes_total{method="ecd.v1.Objects/Encode"}')
# The file's bytes plus the protobuf framing of its chunks and the header message.
python3 -c 'import sys; r=int(sys.argv[1]); sys.exit(0 if 3000001 <= r < 3000001 + 4096 else 1)' \
  "$received" || fail "received bytes $received for a 3000001-byte encode"
written=$(($(sum_metric ecd_nvme_bytes_total 'direction="write"') - written0))
# One stripe of 4 + 2 blocks of 1 MiB, each written once, and one 4 KiB page of block records on
# each of the 6 devices written.
[ "$written" = $((6 * 1048576 + 6 * 4096)) ] ||
  fail "NVMe bytes written $written, want $((6 * 1048576 + 6 * 4096))"
# Each of the 8 devices also holds its label and its block-record log.
[ "$(sum_metric ecd_device_used_bytes '')" = $((6 * 1048576 + $(sum_metric ecd_device_metadata_bytes ''))) ] ||
  fail "used bytes"
[ "$(sum_metric ecd_device_blocks '')" = 6 ] || fail "blocks: $(sum_metric ecd_device_blocks '')"
commits=$(metric ecd_catalog_commit_duration_seconds_count)
[ "${commits:-0}" -ge 2 ] || fail "catalog commits: $commits"

step "reads count their sent bytes; errors count by code"
ecctl read obj -o "$WORK/back" >/dev/null
cmp -s "$WORK/obj" "$WORK/back" || fail "read back differs"
sent=$(metric 'ecd_rpc_sent_bytes_total{method="ecd.v1.Objects/Read"}')
[ "$sent" -ge 3000001 ] || fail "sent bytes $sent"
expect_metric 'ecd_rpc_requests_total{method="ecd.v1.Objects/Read",code="OK"}' 1
ecctl read missing -o "$WORK/x" >/dev/null 2>&1 && fail "read of a missing object succeeded"
expect_metric 'ecd_rpc_requests_total{method="ecd.v1.Objects/Read",code="NOT_FOUND"}' 1

step "health checks and unknown methods are counted without reading their messages"
/usr/bin/python3 - "$ADDR" <<'PY' || fail "health check or unknown method through gRPC"
import sys, grpc
channel = grpc.insecure_channel(sys.argv[1])
# grpc.health.v1.Health/Check with an empty request (service ""): SERVING is field 1 = 1.
reply = channel.unary_unary("/grpc.health.v1.Health/Check")(b"", timeout=10)
assert reply == b"\x08\x01", reply
try:
    channel.unary_unary("/no.such.Service/Method")(b"", timeout=10)
    sys.exit("an unknown method answered")
except grpc.RpcError as e:
    assert e.code() == grpc.StatusCode.UNIMPLEMENTED, e.code()
PY
kill -0 "$ECD_PID" || fail "ecd died on a health check"
expect_metric 'ecd_rpc_requests_total{method="grpc.health.v1.Health/Check",code="OK"}' 1
expect_metric 'ecd_rpc_sent_bytes_total{method="grpc.health.v1.Health/Check"}' 2
expect_metric 'ecd_rpc_requests_total{method="unknown",code="UNIMPLEMENTED"}' 1
curl -sf "http://$METRICS/metrics" | grep -q 'no.such' && fail "a client-chosen method name became a label"

step "failing a device flips its state gauge and degrades the stripe"
dev=$(ecctl --json stat obj --blocks | python3 -c 'import json,sys; print(json.load(sys.stdin)["object"]["stripes"][0]["blocks"][0]["device"])')
expect_metric "ecd_device_state{device=\"$dev\",state=\"online\"}" 1
ecctl repair pause >/dev/null  # so that the degraded stripe stays for the gauges below
expect_metric ecd_repair_paused 1
ecctl device fail "$dev" >/dev/null
expect_metric "ecd_device_state{device=\"$dev\",state=\"failed\"}" 1
expect_metric "ecd_device_state{device=\"$dev\",state=\"online\"}" 0
expect_metric ecd_degraded_stripes 1
expect_metric 'ecd_stripes{redundancy_left="1"}' 1
expect_metric ecd_lost_stripes 0
curl -sf "http://$METRICS/metrics" >"$WORK/scrape2"
promtool_clean "$WORK/scrape2" "after a device failure"

step "deploy/metrics.txt lists exactly the families served, with their types and labels"
/usr/bin/python3 "$PROM_TEXT" contract "$DEPLOY/metrics.txt" <"$WORK/scrape2" >"$WORK/contract" ||
  fail "deploy/metrics.txt and /metrics disagree: $(cat "$WORK/contract")"

step "a real Prometheus scrapes ecd with deploy/prometheus.yml and fires EcdDeviceFailed"
PROM_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
/usr/bin/python3 - "$DEPLOY/prometheus.yml" "$DEPLOY" "$METRICS" "$WORK/prometheus.yml" <<'PY'
import sys, yaml
src, deploy, target, out = sys.argv[1:]
c = yaml.safe_load(open(src))
c["global"]["scrape_interval"] = "1s"
c["global"]["evaluation_interval"] = "1s"
c["global"]["scrape_timeout"] = "1s"
c["rule_files"] = [deploy + "/" + f for f in c["rule_files"]]
c.pop("alerting", None)  # No Alertmanager here: alerts are read from Prometheus itself.
jobs = [j for j in c["scrape_configs"] if j["job_name"] == "ecd"]
assert len(jobs) == 1, "deploy/prometheus.yml has no job ecd"
jobs[0]["static_configs"] = [{"targets": [target]}]
c["scrape_configs"] = jobs
yaml.safe_dump(c, open(out, "w"))
PY
prometheus --config.file="$WORK/prometheus.yml" --storage.tsdb.path="$WORK/tsdb" \
  --web.listen-address="127.0.0.1:$PROM_PORT" >"$WORK/prometheus.log" 2>&1 &
PROM_PID=$!
# query EXPR: the first sample's value of an instant query, empty when there is none.
query() {
  curl -sf "http://127.0.0.1:$PROM_PORT/api/v1/query" --data-urlencode "query=$1" |
    python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else "")'
}
objects=""
for _ in $(seq 1 150); do
  objects=$(query ecd_objects 2>/dev/null || true)
  [ -n "$objects" ] && break
  kill -0 "$PROM_PID" 2>/dev/null || { cat "$WORK/prometheus.log" >&2; fail "prometheus exited"; }
  sleep 0.2
done
[ "$objects" = 1 ] || { tail -5 "$WORK/prometheus.log" >&2; fail "Prometheus says ecd_objects = '$objects', want 1"; }
[ "$(query 'up{job="ecd"}')" = 1 ] || fail "up{job=\"ecd\"} is not 1"
# The alert's own expression, as Prometheus evaluates it, names the failed device...
expr=$(/usr/bin/python3 - "$DEPLOY/ecd-alerts.yml" <<'PY'
import sys, yaml
for g in yaml.safe_load(open(sys.argv[1]))["groups"]:
    for r in g["rules"]:
        if r.get("alert") == "EcdDeviceFailed":
            print(r["expr"].strip())
PY
)
[ -n "$expr" ] || fail "deploy/ecd-alerts.yml has no EcdDeviceFailed"
devices=$(curl -sf "http://127.0.0.1:$PROM_PORT/api/v1/query" --data-urlencode "query=$expr" |
  python3 -c 'import json,sys; print(",".join(sorted(r["metric"]["device"] for r in json.load(sys.stdin)["data"]["result"])))')
[ "$devices" = "$dev" ] || fail "EcdDeviceFailed expression gives devices '$devices', want '$dev'"
# ...and the rule is active (pending or firing) in Prometheus for that device.
state=""
for _ in $(seq 1 100); do
  state=$(curl -sf "http://127.0.0.1:$PROM_PORT/api/v1/alerts" |
    python3 -c 'import json,sys
a=[x for x in json.load(sys.stdin)["data"]["alerts"] if x["labels"]["alertname"]=="EcdDeviceFailed" and x["labels"].get("device")==sys.argv[1]]
print(a[0]["state"] if a else "")' "$dev")
  [ -n "$state" ] && break
  sleep 0.2
done
case "$state" in pending | firing) ;; *) fail "EcdDeviceFailed is not active (state '$state')" ;; esac
# A healthy device does not fire it.
[ -z "$(query "ecd_device_state{state=\"failed\",device=\"$(((dev + 1) % 8))\"} == 1")" ] ||
  fail "a healthy device reads as failed"

stop_ecd
echo "PASS"
