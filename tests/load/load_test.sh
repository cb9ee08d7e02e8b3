#!/usr/bin/env bash
# load.mixed: starts ecd on loopback with bounded memory and a flaky last device, runs ecd_load
# (tests/load/load_driver.cc) against it, then checks that ecd is still up and exits cleanly.
# Usage: load_test.sh ECD ECTL ECD_LOAD [ecd_load flags...]   e.g. --seconds=300 --clients=16
set -euo pipefail
ECD=$1 ECTL=$2 LOAD=$3
shift 3
source "$(dirname "$0")/../integration/lib.sh"

# The limits the RSS bound is derived from (they are passed to ecd_load as well).
STRIPE_MIB=8 HOST_MIB=8 WORKERS=2 DEVICES=8
# ECD_LOAD_FAULTS overrides the --fault-inject value (keep the faults on device 7).
FAULTS=${ECD_LOAD_FAULTS:-'7=read:eio:p=0.02;write:eio:p=0.01;read:latency:us=300'}
step "start ecd (8 devices; --fault-inject $FAULTS)"
start_ecd --max-stripe-memory ${STRIPE_MIB}M --nvme-host-memory ${HOST_MIB}M \
  --ec-workers $WORKERS --cxl-poll-interval 0.2 --log-level warn \
  --fault-inject "$FAULTS" --fault-seed 7

step "ecd_load $*"
rc=0
"$LOAD" --addr="$ADDR" --metrics="$METRICS" --pid="$ECD_PID" --devices=$DEVICES \
  --max-stripe-memory-mib=$STRIPE_MIB --nvme-host-memory-mib=$HOST_MIB --ec-workers=$WORKERS \
  "$@" || rc=$?
kill -0 "$ECD_PID" 2>/dev/null || fail "ecd is not running after the load"
[ "$rc" -eq 0 ] || fail "ecd_load failed (exit $rc)"

step "ecd answers and stops cleanly"
ecctl status >/dev/null || fail "ecctl status failed after the load"
stop_ecd
echo "PASS load.mixed"
