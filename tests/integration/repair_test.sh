#!/usr/bin/env bash
# Self-healing repair on loopback, with no `recover` anywhere: 40 objects (4+2 and 3+3, a few
# bytes to 3 MiB) on 10 devices come back to full redundancy, byte-exact, after
#   a. `ecctl device fail` (repair delay 0);
#   b. two more failures while the repair is paused: after `repair resume` every stripe with no
#      redundancy left is repaired before any stripe with one left (repaired_by_redundancy);
#      then `device replace` and `device online` bring the three devices back;
#   c. a namespace missing at start-up with a 10 minute delay: the device is down, nothing is
#      rebuilt, and once the file is back it is online with the catalog unchanged; more devices
#      missing than the smallest K: ecd refuses to start, names them and the flag, marks nothing;
#      with --start-with-missing-devices they are down, and back online with `device online`
#      or a restart once their files are back;
#   d. kill -9 in the middle of a slow (rate-limited) repair: the restart resumes and finishes,
#      and no extent is shared or leaked (sqlite3 and `device ls`);
#   e. a bit flipped on disk and found by one `stat --verify`: the block is rewritten elsewhere;
#   f. a namespace truncated while ecd is stopped: the device goes down, is failed, repaired;
#   g. a Fatal CXL record: the device is failed and its stripes repaired.
# After each repair: every stripe of every object at M+K healthy blocks (stat --blocks), every
# object byte-exact, no extent shared, overlapping a label or leaked. Metrics checked on the way:
# ecd_repair_queue_stripes, ecd_repair_stripes_total, ecd_repair_paused, ecd_stripes by
# redundancy left, ecd_repair_waiting_stripes, ecd_repair_rate_limit_bytes_per_second.
# Usage: repair_test.sh ECD ECTL
set -euo pipefail
ECD=$1
ECTL=$2
. "$(dirname "$0")/lib.sh"

DEVICES=10
LBA=4096

# start_repair [flags...]: lib.sh's start_ecd on $DEVICES devices, no background scrub (so that
# only the repair planner repairs), the CXL log polled every 0.2 s.
start_repair() {
  ECD_DEVICES=$DEVICES start_ecd --scrub-interval-hours 0 --cxl-poll-interval 0.2 "$@"
}

sql() { sqlite3 -readonly "$WORK/data/catalog.db" "$1"; }
repair_status() { ecctl --json repair status; }
rs() { repair_status | json "$1"; }
dev_field() { ecctl --json device ls | json "[x for x in d['devices'] if int(x.get('id', 0)) == $1][0]['$2']"; }
layout() {  # every block row, as the catalog has it
  sql "SELECT object_id, stripe, idx, device_id, lba, lba_count, crc32c, corrupt FROM blocks ORDER BY 1, 2, 3"
}

# wait_full SECONDS: until the repair has nothing queued or waiting and no object is degraded.
wait_full() {
  local limit=$1 start=$SECONDS queued waiting degraded
  while :; do
    kill -0 "$ECD_PID" 2>/dev/null || fail "ecd died while repairing"
    queued=$(rs 'd["stripes_queued"]')
    waiting=$(rs 'd["stripes_waiting"]')
    degraded=$(ecctl --json ls | json 'sum(int(o["degraded_stripes"]) + int(o["lost_stripes"]) for o in d["objects"])')
    if [ "$queued" = 0 ] && [ "$waiting" = 0 ] && [ "$degraded" = 0 ]; then
      echo "   full redundancy after $((SECONDS - start)) s"
      return 0
    fi
    [ $((SECONDS - start)) -lt "$limit" ] ||
      fail "not back to full redundancy within $limit s (queued $queued, waiting $waiting, degraded $degraded): $(repair_status)"
    sleep 0.5
  done
}

# each_object FN: runs `FN NAME M K` for every object, 4 at a time; fails if one does.
each_object() {
  local name m k pids=()
  while read -r name m k; do
    "$1" "$name" "$m" "$k" &
    pids+=($!)
    if [ ${#pids[@]} -ge 4 ]; then
      wait "${pids[0]}" || fail "$1 $(cat "$WORK/each.err" 2>/dev/null)"
      pids=("${pids[@]:1}")
    fi
  done <"$WORK/objects"
  for p in "${pids[@]}"; do wait "$p" || fail "$1 $(cat "$WORK/each.err" 2>/dev/null)"; done
}
full_one() {  # full_one NAME M K: every stripe at M+K healthy blocks
  local bad
  bad=$(ecctl --json stat "$1" --blocks | json "[int(s['index']) for s in d['object']['stripes'] if int(s['healthy_blocks']) != $2 + $3 or not all(b['healthy'] for b in s['blocks'])]")
  [ "$bad" = "[]" ] || { echo "$1: stripes $bad are not at $2+$3 healthy blocks" >"$WORK/each.err"; return 1; }
}
bytes_one() {  # bytes_one NAME: reads back byte-exact
  ecctl read "$1" -o "$WORK/out.$1" >/dev/null && cmp -s "$WORK/in/$1" "$WORK/out.$1" ||
    { echo "$1 differs from its input" >"$WORK/each.err"; return 1; }
  rm -f "$WORK/out.$1"
}

# check_full: every stripe of every object has M+K healthy blocks, none on a failed or down
# device, and the repair status agrees (every stripe at its K).
check_full() {
  each_object full_one
  local sum
  # 3+3 objects are at redundancy 3 (the last entry), 4+2 at 2 (the one before): nothing lower.
  sum=$(rs 'sum(int(x) for x in d["stripes_by_redundancy"][:2])')
  [ "$sum" = 0 ] || fail "repair status counts $sum stripes with less than 2 blocks to spare: $(repair_status)"
}

# check_bytes: every object reads back byte-exact.
check_bytes() { each_object bytes_one; }

# check_extents: no two blocks share an extent or overlap, none covers a device label, and each
# online device's used bytes are its blocks' LBAs plus its label's one LBA (nothing leaked).
check_extents() {
  local rows
  rows=$(sql "SELECT device_id, lba, COUNT(*) FROM blocks GROUP BY device_id, lba HAVING COUNT(*) > 1")
  [ -z "$rows" ] || fail "blocks share an extent (device|lba|count): $rows"
  rows=$(sql "SELECT device_id, lba, nxt FROM (SELECT device_id, lba, lba_count,
      LEAD(lba) OVER (PARTITION BY device_id ORDER BY lba) AS nxt FROM blocks)
      WHERE nxt IS NOT NULL AND nxt < lba + lba_count LIMIT 5")
  [ -z "$rows" ] || fail "overlapping extents (device|lba|next lba): $rows"
  rows=$(sql "SELECT b.device_id, b.lba FROM blocks b JOIN meta m
      ON m.key = 'device_label/' || b.device_id
      WHERE CAST(m.value AS INTEGER) >= b.lba AND CAST(m.value AS INTEGER) < b.lba + b.lba_count")
  [ -z "$rows" ] || fail "a block covers its device's label (device|lba): $rows"
  sql "SELECT device_id, SUM(lba_count) FROM blocks GROUP BY device_id" >"$WORK/lbas"
  ecctl --json device ls >"$WORK/devices.json"
  python3 - "$WORK/devices.json" "$WORK/lbas" "$LBA" <<'PY' || fail "device use does not match the catalog"
import json, sys
devices = json.load(open(sys.argv[1]))["devices"]
lbas = {int(a): int(b) for a, b in (l.split("|") for l in open(sys.argv[2]) if l.strip())}
lba = int(sys.argv[3])
ok = True
for d in devices:
    i = int(d.get("id", 0))
    used, blocks = int(d["used_bytes"]), lbas.get(i, 0)
    if d["state"] in ("DEVICE_STATE_ONLINE", "DEVICE_STATE_FAILING"):
        want = blocks * lba + int(d.get("metadata_bytes", 0))  # + its label and record log
        if used != want:
            print(f"device {i}: used_bytes {used}, catalog blocks + metadata {want}", file=sys.stderr)
            ok = False
sys.exit(0 if ok else 1)
PY
}

step "start ecd on 10 devices (repair delay 0); encode 40 objects, 4+2 and 3+3, 64 KiB blocks"
start_repair --repair-delay 0
mkdir -p "$WORK/in"
: >"$WORK/objects"
sizes=(3 100 4095 4096 65535 65536 65537 196608 200003 262144 500000 786432 1000000 1048576
  1048577 1500000 2000000 2500000 3000000 3145735)
for i in $(seq 0 39); do
  name=$(printf 'o%02d' "$i")
  if [ $((i % 4)) = 3 ]; then m=3 k=3; else m=4 k=2; fi
  head -c "${sizes[$((i % 20))]}" /dev/urandom >"$WORK/in/$name"
  echo "$name $m $k" >>"$WORK/objects"
done
encode_one() {
  ecctl encode "$WORK/in/$1" --name "$1" --data "$2" --parity "$3" --block-size 64K >/dev/null ||
    { echo "encode $1 failed" >"$WORK/each.err"; return 1; }
}
each_object encode_one
check_full
check_extents
[ "$(rs 'd["stripes_repaired"]')" = 0 ] || fail "something was repaired before any failure"

step "a. device fail 3, no other command: every object back to full redundancy, byte-exact"
[ "$(dev_field 3 blocks)" -gt 0 ] || fail "device 3 holds no block"
ecctl device fail 3
wait_full 120
check_full
check_bytes
check_extents
[ "$(dev_field 3 blocks)" = 0 ] || fail "device 3 still holds blocks"
[ "$(rs 'd["stripes_repaired"]')" -gt 0 ] || fail "repair status counts no repaired stripe"
[ "$(rs 'd["stalled"]')" = "" ] || fail "repair reports stalled: $(repair_status)"
[ "$(metric ecd_repair_queue_stripes)" = 0 ] || fail "ecd_repair_queue_stripes: $(metric ecd_repair_queue_stripes)"
[ "$(metric ecd_repair_stripes_total)" -gt 0 ] || fail "ecd_repair_stripes_total did not move"
ecctl rebuild ls

step "b. pause, fail 5 and 7, resume: stripes with no redundancy left are repaired first"
# A fresh ecd, so that repaired_by_redundancy holds only this step's work.
stop_ecd
start_repair --repair-delay 0
ecctl repair pause
[ "$(rs 'd["paused"]')" = True ] || fail "not paused: $(repair_status)"
ecctl device fail 5
ecctl device fail 7
# Planned (while paused the planner still counts): both losses in the census.
start=$SECONDS
until [ "$(rs 'int(d["stripes_queued"]) > 0 and int(d["stripes_by_redundancy"][0]) > 0')" = True ]; do
  [ $((SECONDS - start)) -lt 30 ] || fail "the paused repair did not plan the losses: $(repair_status)"
  sleep 0.2
done
sleep 1  # and nothing starts while paused
repair_status >"$WORK/paused.json"
[ "$(json 'd["stripes_repaired"]' <"$WORK/paused.json")" = 0 ] || fail "repaired while paused: $(cat "$WORK/paused.json")"
at0=$(json 'd["stripes_by_redundancy"][0]' <"$WORK/paused.json")
at1=$(json 'd["stripes_by_redundancy"][1]' <"$WORK/paused.json")
echo "   paused: $at0 stripes with no redundancy left, $at1 with one"
[ "$at0" -gt 0 ] && [ "$at1" -gt 0 ] || fail "expected stripes at redundancy 0 and 1: $(cat "$WORK/paused.json")"
[ "$(json 'd["stripes_queued"]' <"$WORK/paused.json")" -gt 0 ] || fail "nothing queued while paused"
[ "$(metric ecd_repair_paused)" = 1 ] || fail "ecd_repair_paused: $(metric ecd_repair_paused)"
[ "$(metric 'ecd_stripes{redundancy_left="0"}')" = "$at0" ] ||
  fail "ecd_stripes{redundancy_left=\"0\"} is $(metric 'ecd_stripes{redundancy_left="0"}'), status says $at0"
ecctl repair resume
wait_full 120
check_full
check_bytes
check_extents
repair_status >"$WORK/resumed.json"
python3 - "$WORK/resumed.json" <<'PY' || fail "repair order: $(cat "$WORK/resumed.json")"
import json, sys
d = json.load(open(sys.argv[1]))
levels = {int(l.get("redundancy_left", 0)): l for l in d["repaired_by_redundancy"]}
for r, l in sorted(levels.items()):
    print(f"   redundancy left {r}: {l['stripes']} stripes, batches {l['first_batch']}..{l['last_batch']}")
assert 0 in levels and 1 in levels, "both levels must have been repaired"
assert int(levels[0]["last_batch"]) < int(levels[1]["first_batch"]), \
    "a stripe with one block to spare was repaired before the last one with none"
PY
echo "   bring 3, 5 and 7 back: replace 3 (blank namespace), online 5 and 7"
ecctl device replace 3
ecctl device online 5
ecctl device online 7
for d in 3 5 7; do
  [ "$(dev_field $d state)" = DEVICE_STATE_ONLINE ] || fail "device $d: $(dev_field $d state)"
  [ "$(dev_field $d blocks)" = 0 ] || fail "device $d holds blocks after its repair"
done
check_extents

step "c. restart with --repair-delay 10m and device 4's namespace gone: down, nothing rebuilt"
stop_ecd
layout >"$WORK/layout.before"
counts_before=$(sql "SELECT device_id, COUNT(*) FROM blocks GROUP BY device_id")
[ "$(sql "SELECT COUNT(*) FROM blocks WHERE device_id = 4")" -gt 0 ] || fail "device 4 holds no block"
mv "$WORK/data/devices/nvme4.ns" "$WORK/nvme4.away"
start_repair --repair-delay 10m
[ "$(dev_field 4 state)" = DEVICE_STATE_DOWN ] || fail "device 4 is $(dev_field 4 state), expected DOWN"
echo "   device 4 down: $(dev_field 4 down_reason)"
[ "$(dev_field 4 down_since_unix_ms)" -gt 0 ] || fail "device 4 has no down time"
[ ! -e "$WORK/data/devices/nvme4.ns" ] || fail "ecd created a namespace file for the missing device 4"
[ "$(rs 'd["delay_seconds"]')" = 600 ] || fail "delay: $(repair_status)"
check_bytes  # degraded reads around the down device
start=$SECONDS
until [ "$(rs 'd["stripes_waiting"]')" -gt 0 ]; do
  [ $((SECONDS - start)) -lt 30 ] || fail "no stripe waits for device 4: $(repair_status)"
  sleep 0.2
done
[ "$(rs 'd["stripes_queued"]')" = 0 ] || fail "stripes queued for a down device: $(repair_status)"
[ "$(rs 'd["stripes_repaired"]')" = 0 ] || fail "repaired while device 4 is down: $(repair_status)"
[ "$(metric ecd_repair_waiting_stripes)" -gt 0 ] || fail "ecd_repair_waiting_stripes: $(metric ecd_repair_waiting_stripes)"
[ "$(sql "SELECT device_id, COUNT(*) FROM blocks GROUP BY device_id")" = "$counts_before" ] ||
  fail "block counts changed while device 4 is down"
[ -n "$(sql "SELECT value FROM meta WHERE key = 'device_down/4'")" ] || fail "no device_down/4 in the catalog"
stop_ecd
mv "$WORK/nvme4.away" "$WORK/data/devices/nvme4.ns"
start_repair --repair-delay 10m
[ "$(dev_field 4 state)" = DEVICE_STATE_ONLINE ] || fail "device 4 is $(dev_field 4 state) with its file back"
sleep 1
[ "$(rs 'd["stripes_repaired"]')" = 0 ] || fail "something was rebuilt: $(repair_status)"
[ "$(rs 'd["stripes_waiting"]')" = 0 ] || fail "stripes still waiting: $(repair_status)"
[ -z "$(sql "SELECT value FROM meta WHERE key = 'device_down/4'")" ] || fail "device_down/4 is still in the catalog"
layout >"$WORK/layout.after"
cmp -s "$WORK/layout.before" "$WORK/layout.after" || fail "the catalog's blocks changed: $(diff "$WORK/layout.before" "$WORK/layout.after" | head)"
check_full
check_bytes

echo "   more devices missing than the smallest K (2): ecd refuses to start and marks nothing"
stop_ecd
states_before=$(sql "SELECT id, state FROM devices ORDER BY id")
for d in 0 1 2; do mv "$WORK/data/devices/nvme$d.ns" "$WORK/nvme$d.away"; done
rc=0
timeout 60 "$ECD" --data-dir "$WORK/data" --devices "$DEVICES" --device-size 256M \
  --listen 127.0.0.1:0 --metrics-listen "" --scrub-interval-hours 0 --repair-delay 10m \
  >"$WORK/guard.out" 2>"$WORK/guard.err" || rc=$?
cat "$WORK/guard.err" >>"$WORK/ecd.log"
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || fail "ecd with 3 devices missing exited $rc: $(cat "$WORK/guard.err")"
grep -q -- --start-with-missing-devices "$WORK/guard.err" || fail "stderr does not name the flag: $(cat "$WORK/guard.err")"
for d in 0 1 2; do
  grep -Eq "nvme$d\.ns|device $d\b|devices? [0-9, and]*\b$d\b" "$WORK/guard.err" ||
    fail "stderr does not name device $d: $(cat "$WORK/guard.err")"
done
echo "   ecd exited $rc: $(grep -- --start-with-missing-devices "$WORK/guard.err" | head -n 1)"
[ "$(sql "SELECT id, state FROM devices ORDER BY id")" = "$states_before" ] || fail "device states changed"
[ -z "$(sql "SELECT key FROM meta WHERE key LIKE 'device_down/%'")" ] || fail "devices marked down: $(sql "SELECT * FROM meta WHERE key LIKE 'device_down/%'")"
for d in 0 1 2; do [ ! -e "$WORK/data/devices/nvme$d.ns" ] || fail "ecd created nvme$d.ns"; done
echo "   with --start-with-missing-devices it starts, the three down; back with their files: online"
start_repair --repair-delay 10m --start-with-missing-devices
for d in 0 1 2; do [ "$(dev_field $d state)" = DEVICE_STATE_DOWN ] || fail "device $d: $(dev_field $d state)"; done
[ "$(rs 'd["stripes_queued"]')" = 0 ] || fail "stripes queued with three devices down: $(repair_status)"
echo "   device 0 back while ecd runs: ecctl device online 0"
mv "$WORK/nvme0.away" "$WORK/data/devices/nvme0.ns"
ecctl device online 0
[ "$(dev_field 0 state)" = DEVICE_STATE_ONLINE ] || fail "device 0: $(dev_field 0 state)"
[ -z "$(sql "SELECT key FROM meta WHERE key = 'device_down/0'")" ] || fail "device_down/0 left"
stop_ecd
for d in 1 2; do mv "$WORK/nvme$d.away" "$WORK/data/devices/nvme$d.ns"; done
start_repair --repair-delay 10m
ecctl --json device ls | json '[x["state"] for x in d["devices"]]' | grep -Eq 'FAILED|DOWN' &&
  fail "devices not back online: $(ecctl device ls)"
[ -z "$(sql "SELECT key FROM meta WHERE key LIKE 'device_down/%'")" ] || fail "device_down rows left"
layout >"$WORK/layout.after"
cmp -s "$WORK/layout.before" "$WORK/layout.after" || fail "the catalog's blocks changed"
check_bytes
stop_ecd

step "d. kill -9 during a repair limited to 2M/s; the restart resumes it; no extent shared or leaked"
start_repair --repair-delay 0
ecctl repair rate 2M
[ "$(rs 'd["rate_bytes_per_sec"]')" = $((2 << 20)) ] || fail "rate: $(repair_status)"
[ "$(dev_field 6 blocks)" -gt 0 ] || fail "device 6 holds no block"
ecctl device fail 6
start=$SECONDS
while [ "$(rs 'd["stripes_repaired"]')" -lt 2 ]; do
  [ $((SECONDS - start)) -lt 60 ] || fail "no progress at 2M/s: $(repair_status)"
  sleep 0.2
done
repair_status >"$WORK/before-kill.json"
[ "$(json 'd["stripes_queued"]' <"$WORK/before-kill.json")" -gt 0 ] || fail "repair finished before the kill: too fast for this test"
echo "   kill -9 after $(json 'd["stripes_repaired"]' <"$WORK/before-kill.json") stripes repaired, $(json 'd["stripes_queued"]' <"$WORK/before-kill.json") queued"
kill -9 "$ECD_PID"
wait "$ECD_PID" 2>/dev/null || true
ECD_PID=""
[ "$(sql "SELECT value FROM meta WHERE key = 'repair/rate_bytes_per_sec'")" = $((2 << 20)) ] ||
  fail "the rate is not kept in the catalog"
start_repair --repair-delay 0
[ "$(rs 'd["rate_bytes_per_sec"]')" = $((2 << 20)) ] || fail "the rate was not kept across the restart: $(repair_status)"
[ "$(metric ecd_repair_rate_limit_bytes_per_second)" = $((2 << 20)) ] || fail "ecd_repair_rate_limit_bytes_per_second: $(metric ecd_repair_rate_limit_bytes_per_second)"
[ "$(rs 'd["stripes_queued"]')" -gt 0 ] || fail "the restart found nothing left to repair"
ecctl repair rate 0
wait_full 120
check_full
check_bytes
check_extents
[ "$(dev_field 6 blocks)" = 0 ] || fail "device 6 still holds blocks"

step "e. a flipped bit found by one stat --verify is repaired with no other command"
read -r dev lba _ < <(block_of o19 5 1)
python3 - "$WORK/data/devices/nvme$dev.ns" "$lba" <<'PY'
import sys
path, lba = sys.argv[1], int(sys.argv[2])
with open(path, "r+b") as f:
    f.seek(lba * 4096 + 1234)
    b = f.read(1)[0]
    f.seek(lba * 4096 + 1234)
    f.write(bytes([b ^ 0x10]))
PY
[ "$(ecctl --json stat o19 --verify | json 'd["object"]["degraded_stripes"]')" = 1 ] || fail "stat --verify did not find the flipped bit"
start=$SECONDS
while :; do
  read -r ndev nlba _ < <(block_of o19 5 1)
  healthy=$(ecctl --json stat o19 | json 'd["object"]["degraded_stripes"]')
  [ "$healthy" = 0 ] && [ "$ndev:$nlba" != "$dev:$lba" ] && break
  [ $((SECONDS - start)) -lt 60 ] || fail "block not repaired within 60 s: $(repair_status)"
  sleep 0.2
done
echo "   block o19/5/1 moved from device $dev LBA $lba to device $ndev LBA $nlba in $((SECONDS - start)) s"
[ "$(sql "SELECT COUNT(*) FROM blocks WHERE corrupt = 1")" = 0 ] || fail "corrupt blocks left in the catalog"
wait_full 60
check_full
check_bytes
check_extents

step "f. a namespace truncated while ecd is stopped: down, failed (delay 0), repaired"
victim=8
[ "$(dev_field $victim blocks)" -gt 0 ] || fail "device $victim holds no block"
stop_ecd
truncate -s 100M "$WORK/data/devices/nvme$victim.ns"
log_lines=$(wc -l <"$WORK/ecd.log")
start_repair --repair-delay 0
start=$SECONDS
while [ "$(dev_field $victim state)" != DEVICE_STATE_FAILED ]; do
  [ $((SECONDS - start)) -lt 30 ] || fail "device $victim is $(dev_field $victim state), not failed"
  sleep 0.2
done
tail -n +"$((log_lines + 1))" "$WORK/ecd.log" | grep -E "device $victim\b" | head -n 3 | sed 's/^/   log: /'
tail -n +"$((log_lines + 1))" "$WORK/ecd.log" | grep -Eq "device $victim\b.*down|down.*device $victim\b" ||
  fail "the log does not say device $victim went down"
[ "$(stat -c %s "$WORK/data/devices/nvme$victim.ns")" = $((100 << 20)) ] || fail "the short namespace was changed"
wait_full 120
check_full
check_bytes
check_extents
[ "$(dev_field $victim blocks)" = 0 ] || fail "device $victim still holds blocks"

step "g. a Fatal CXL record fails device 9; its stripes are repaired with no other command"
[ "$(dev_field 9 blocks)" -gt 0 ] || fail "device 9 holds no block"
ecctl cxl inject 9 --log fatal --type memory-module --module-event-type 0 >/dev/null
start=$SECONDS
while [ "$(dev_field 9 state)" != DEVICE_STATE_FAILED ]; do
  [ $((SECONDS - start)) -lt 30 ] || fail "device 9 is $(dev_field 9 state) after the Fatal record"
  sleep 0.2
done
wait_full 120
check_full
check_bytes
check_extents
[ "$(dev_field 9 blocks)" = 0 ] || fail "device 9 still holds blocks"
ecctl repair status
stop_ecd
echo "repair_test: all passed"
