#!/usr/bin/env bash
# CXL events end to end on loopback: a Memory Module "replacement needed" record empties its
# device within 10 s while every object keeps full redundancy and reads stay byte-exact; a
# General Media record at one block's DPA moves exactly that block; the Events mailbox commands
# (Get/Clear Event Records, Get/Set Event Interrupt Policy) behave as the spec says; an ingest
# with a line naming no device, an unknown log or a DPA past the device is refused whole.
# Usage: cxl_test.sh ECD ECTL
set -euo pipefail
ECD=$1
ECTL=$2
source "$(dirname "$0")/lib.sh"

layout() {  # every block of every object: name stripe index device lba
  for o in a b c; do
    ecctl --json stat "$o" --blocks | python3 -c "
import json,sys
d=json.load(sys.stdin)
for s in d['object']['stripes']:
  for b in s['blocks']:
    print('$o', s.get('index',0), b.get('index',0), b.get('device',0), b.get('lba',0))"
  done | sort
}

step "start ecd; encode three objects"
start_ecd --cxl-poll-interval 0
for o in a b c; do
  head -c $((3 << 20)) /dev/urandom >"$WORK/$o.bin"
  ecctl encode "$WORK/$o.bin" --name "$o" --block-size 64K >/dev/null
done

step "General Media uncorrectable error at one block's DPA: only that block moves"
read -r dev lba cnt <<<"$(block_of b 3 1)"
layout >"$WORK/layout.before"
ecctl cxl inject "$dev" --log failure --type general-media --dpa $((lba * 4096 + 64)) \
  --descriptor 1 --transaction-type 1
for _ in $(seq 1 100); do
  state=$(ecctl --json rebuild ls | json 'd["jobs"][0]["state"] if d.get("jobs") else "none"')
  [ "$state" = done ] && break
  sleep 0.1
done
[ "$state" = done ] || fail "media-range job did not finish: $(ecctl --json rebuild ls)"
[ "$(ecctl --json rebuild ls | json 'd["jobs"][0]["kind"]')" = media-range ] || fail "wrong job kind"
[ "$(ecctl --json rebuild ls | json 'd["jobs"][0]["blocks_moved"]')" = 1 ] || fail "expected 1 block moved: $(ecctl --json rebuild ls)"
layout >"$WORK/layout.after"
changes=$(diff "$WORK/layout.before" "$WORK/layout.after" || true)
[ "$(grep -c '^[<>]' <<<"$changes")" = 2 ] || fail "not exactly one block moved: $changes"
grep -qx "< b 3 1 $dev $lba" <<<"$changes" || fail "the wrong block moved: $changes"
for o in a b c; do
  ecctl read "$o" -o "$WORK/$o.out" && cmp "$WORK/$o.bin" "$WORK/$o.out" || fail "$o differs"
done

step "Memory Module replacement needed: the device is emptied within 10 s, reads stay exact"
victim=2
[ "$(ecctl --json device ls | json "d['devices'][$victim]['blocks']")" -gt 0 ] || fail "device $victim holds nothing"
( while true; do
    for o in a b c; do
      "$ECTL" --addr "$ADDR" read "$o" -o "$WORK/$o.loop" >/dev/null 2>&1 || { echo "read $o failed" >"$WORK/loop.err"; exit 1; }
      cmp -s "$WORK/$o.bin" "$WORK/$o.loop" || { echo "$o differs" >"$WORK/loop.err"; exit 1; }
    done
  done ) &
reader=$!
start=$(date +%s.%N)
ecctl cxl inject $victim --log failure --type memory-module --health-status 4 --module-event-type 0
for _ in $(seq 1 100); do
  [ "$(ecctl --json device ls | json "d['devices'][$victim]['state']")" = DEVICE_STATE_FAILED ] && break
  sleep 0.1
done
elapsed=$(python3 -c "import time; print(round(time.time() - $start, 2))")
kill "$reader" 2>/dev/null || true
wait "$reader" 2>/dev/null || true
[ ! -s "$WORK/loop.err" ] || fail "a read during evacuation failed: $(cat "$WORK/loop.err")"
[ "$(ecctl --json device ls | json "d['devices'][$victim]['state']")" = DEVICE_STATE_FAILED ] || fail "device $victim not failed after 10 s"
[ "$(ecctl --json device ls | json "d['devices'][$victim]['blocks']")" = 0 ] || fail "device $victim still holds blocks"
echo "   device $victim emptied and failed in ${elapsed} s"
for o in a b c; do
  ecctl --json stat "$o" --verify | json 'd["object"].get("degraded_stripes", 0)' | grep -qx 0 || fail "$o lost redundancy"
  ecctl read "$o" -o "$WORK/$o.out" && cmp "$WORK/$o.bin" "$WORK/$o.out" || fail "$o differs after evacuation"
done
ecctl rebuild ls

step "Events mailbox: policy read-back, Get, Clear in order"
ecctl cxl policy 0 | grep -qx "informational=msi warning=msi failure=msi fatal=msi" || fail "initial policy: $(ecctl cxl policy 0)"
ecctl cxl policy 0 --set informational=none | grep -q "informational=none warning=msi" || fail "policy set"
h1=$(ecctl --json cxl inject 0 --log informational --type dram --dpa 4096 | json 'd["handle"]')
h2=$(ecctl --json cxl inject 0 --log informational --type dram --dpa 8192 | json 'd["handle"]')
[ "$(ecctl --json cxl events 0 --log informational | json 'len(d["records"])')" = 2 ] || fail "expected 2 records"
ecctl --json cxl events 0 --log informational | json 'json.loads(d["records"][0]["json"])["event"]' | grep -qx cxl_dram || fail "record not decoded as DRAM"
expect_error INVALID_ARGUMENT ecctl cxl clear 0 --log informational --handles "$h2"
expect_error INVALID_ARGUMENT ecctl cxl clear 0 --log informational --all
ecctl cxl clear 0 --log informational --handles "$h1,$h2"
[ "$(ecctl --json cxl events 0 --log informational | json 'len(d.get("records", []))')" = 0 ] || fail "records left after clear"

step "ingest from an outside agent; offline decode"
# Raw records: take the two DRAM records' bytes back out through Get (policy none keeps them).
h3=$(ecctl --json cxl inject 0 --log informational --type memory-module --life-used 10 | json 'd["handle"]')
ecctl --json cxl events 0 --log informational | python3 -c "
import json,sys,base64
d=json.load(sys.stdin)
sys.stdout.buffer.write(b''.join(base64.b64decode(r['raw']) for r in d['records']))" >"$WORK/records.bin"
[ "$(stat -c %s "$WORK/records.bin")" = 128 ] || fail "expected one raw record"
ecctl cxl decode "$WORK/records.bin" --log informational >"$WORK/decoded.jsonl"
json 'd["event"]' <"$WORK/decoded.jsonl" | grep -qx cxl_memory_module || fail "decode: $(cat "$WORK/decoded.jsonl")"
json 'd["life_used"]' <"$WORK/decoded.jsonl" | grep -qx 10 || fail "decode life_used: $(cat "$WORK/decoded.jsonl")"
ecctl cxl clear 0 --log informational --handles "$h3"
[ "$(ecctl --json cxl ingest "$WORK/records.bin" --device 0 --log informational | json 'd["actions"]')" = "['count']" ] || fail "raw ingest"
# ndctl-style JSON lines: a Memory Module replacement on mem5 evacuates device 5.
echo '{"system":"cxl","memdev":"mem5","event":"cxl_memory_module","log":"Failure","hdr_flags":2,"health_status":4,"media_status":0}' >"$WORK/agent.jsonl"
[ "$(ecctl --json cxl ingest "$WORK/agent.jsonl" | json 'd["actions"]')" = "['evacuate']" ] || fail "json ingest"
for _ in $(seq 1 100); do
  [ "$(ecctl --json device ls | json "d['devices'][5]['state']")" = DEVICE_STATE_FAILED ] && break
  sleep 0.1
done
[ "$(ecctl --json device ls | json "d['devices'][5]['blocks']")" = 0 ] || fail "device 5 not emptied by ingest"
expect_error INVALID_ARGUMENT ecctl cxl ingest <(echo '{"event":"not-cxl"}')
# A line that names no device, an unknown log or a DPA past the device (256M) fails the whole
# file, naming the line: the Fatal line for mem0 before it is not acted on either.
fatal0='{"memdev":"mem0","event":"cxl_memory_module","log":3,"hdr_flags":3}'
printf '%s\n%s\n' "$fatal0" '{"memdev":"memX","event":"cxl_memory_module","log":"Fatal"}' >"$WORK/bad-memdev.jsonl"
printf '%s\n%s\n' "$fatal0" '{"memdev":"mem1","event":"cxl_dram","log":"severe"}' >"$WORK/bad-log.jsonl"
printf '%s\n\n%s\n' "$fatal0" \
  '{"memdev":"mem1","event":"cxl_general_media","log":2,"descriptor":1,"dpa":268435456}' >"$WORK/bad-dpa.jsonl"
for bad in memdev log dpa; do
  expect_error INVALID_ARGUMENT ecctl cxl ingest "$WORK/bad-$bad.jsonl"
  case $bad in
    memdev) want='line 2: "memdev" is "memX", not memN (N a device number); nothing ingested' ;;
    log) want='line 2: "log" is "severe", not 0..3 or Informational, Warning, Failure or Fatal (any case); nothing ingested' ;;
    dpa) want='line 3: DPA 0x10000000 is past the end of device 1: its DPAs are below 0x10000000 (268435456 bytes); nothing ingested' ;;
  esac
  grep -qF -- "$want" "$WORK/err" || fail "bad $bad: expected '$want', got: $(cat "$WORK/err")"
  [ "$(ecctl --json device ls | json "d['devices'][0]['state']")" = DEVICE_STATE_ONLINE ] ||
    fail "a refused ingest ($bad) acted on its Fatal line: device 0 is $(ecctl --json device ls | json "d['devices'][0]['state']")"
done
head -c 100 /dev/zero >"$WORK/short.bin"
rc=0; ecctl cxl decode "$WORK/short.bin" 2>"$WORK/err" || rc=$?
[ $rc = 3 ] || fail "decode of a short file exited $rc"

step "a log that overflows: the lost records are counted"
# Policy none on device 1's informational log keeps records there; 64 fill it, 3 more are lost.
ecctl cxl policy 1 --set informational=none >/dev/null
for _ in $(seq 1 67); do
  ecctl cxl inject 1 --log informational --type dram --dpa 4096 >/dev/null
done
ecctl cxl policy 1 --set informational=msi >/dev/null
ecctl cxl inject 1 --log warning --type dram --dpa 4096 >/dev/null  # an interrupt: a drain
for _ in $(seq 1 100); do
  [ "$(metric 'ecd_cxl_overflowed_records_total{device="1"}')" = 3 ] && break
  sleep 0.1
done
[ "$(metric 'ecd_cxl_overflowed_records_total{device="1"}')" = 3 ] || fail "lost records: $(metric 'ecd_cxl_overflowed_records_total{device="1"}')"
[ "$(metric 'ecd_cxl_overflows_total{device="1"}')" = 1 ] || fail "overflows: $(metric 'ecd_cxl_overflows_total{device="1"}')"
[ "$(ecctl --json cxl stats | json 'int(d["counters"]["overflowed_records"])')" = 3 ] || fail "cxl stats overflowed_records"

step "counters"
ecctl cxl stats
[ "$(ecctl --json cxl stats | json 'int(d["counters"]["action_evacuate"])')" -ge 2 ] || fail "evacuations not counted"
[ "$(ecctl --json cxl stats | json 'int(d["counters"]["action_rebuild"])')" = 1 ] || fail "media rebuild not counted"
[ "$(ecctl --json cxl stats | json 'int(d["counters"]["records"])')" -ge 2 ] || fail "records not counted"

step "bad CXL requests"
expect_error INVALID_ARGUMENT ecctl cxl inject 0 --type bogus
expect_error NOT_FOUND ecctl cxl inject 99 --type dram
expect_error INVALID_ARGUMENT ecctl cxl policy 0 --set failure=loud
stop_ecd
echo "cxl e2e: ok"
