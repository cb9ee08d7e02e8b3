#!/usr/bin/env bash
# Scrub and suspect devices on loopback: bits flipped behind ecd's back in a data block and a
# parity block are found by `ecctl scrub --check-only` (exit 4, nothing repaired) and repaired
# byte-exact by `ecctl scrub`; lost stripes leave exit 4 with one stderr line; the background
# scrubber repairs on its own schedule and `ecctl scrub --status` reports it; a device whose
# flush fails (--fault-inject) fails the encode, becomes FAILING and is evacuated, and the retry
# lands on the other devices.
set -euo pipefail
ECD=$1
ECTL=$2
. "$(dirname "$0")/lib.sh"

# flip DEVICE LBA BYTE: flips the low bit of one byte of a block on its namespace file.
flip() {
  python3 - "$WORK/data/devices/nvme$1.ns" "$2" "$3" <<'PY'
import sys
path, lba, at = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
with open(path, "r+b") as f:
    f.seek(lba * 4096 + at)
    b = f.read(1)[0]
    f.seek(lba * 4096 + at)
    f.write(bytes([b ^ 1]))
PY
}

start_ecd --scrub-interval-hours 0
# Scrub is what finds and repairs the damage here: the automatic repair stays paused.
ecctl repair pause >/dev/null
step "encode 3 MiB + 5 bytes, 4+2, 64 KiB blocks"
head -c $((3 * 1048576 + 5)) /dev/urandom >"$WORK/in.bin"
ecctl encode "$WORK/in.bin" --name obj --block-size 64K >/dev/null
ecctl block get obj --stripe 3 --index 5 -o "$WORK/parity.orig" >/dev/null
ecctl block get obj --stripe 7 --index 2 -o "$WORK/data.orig" >/dev/null

step "flip one bit in a parity block and one in a data block"
read -r dev lba _ < <(block_of obj 3 5)
flip "$dev" "$lba" 60000
read -r dev lba _ < <(block_of obj 7 2)
flip "$dev" "$lba" 3

step "scrub --check-only finds both, repairs nothing, exits 4"
rc=0
ecctl --json scrub obj --check-only >"$WORK/check.json" 2>"$WORK/err" || rc=$?
[ "$rc" = 4 ] || fail "scrub --check-only exited $rc, expected 4"
[ "$(wc -l <"$WORK/err")" = 1 ] || fail "expected one stderr line: $(cat "$WORK/err")"
grep -q "repaired nothing" "$WORK/err" || fail "unexpected message: $(cat "$WORK/err")"
[ "$(json 'd["found"]["blocks_corrupt"]' <"$WORK/check.json")" = 2 ] || fail "check-only: $(cat "$WORK/check.json")"
[ "$(json 'd["found"]["blocks_repaired"]' <"$WORK/check.json")" = 0 ] || fail "check-only repaired"
[ "$(json 'd["done"]' <"$WORK/check.json")" = True ] || fail "last message not done"

step "scrub repairs both byte-exact"
ecctl --json scrub obj >"$WORK/scrub.json"
[ "$(json 'd["found"]["blocks_corrupt"]' <"$WORK/scrub.json")" = 2 ] || fail "scrub: $(cat "$WORK/scrub.json")"
[ "$(json 'd["found"]["blocks_repaired"]' <"$WORK/scrub.json")" = 2 ] || fail "scrub did not repair"
[ "$(json 'd["found"]["stripes_checked"]' <"$WORK/scrub.json")" = 13 ] || fail "expected 13 stripes"
ecctl block get obj --stripe 3 --index 5 -o "$WORK/parity.now" >/dev/null
cmp "$WORK/parity.orig" "$WORK/parity.now" || fail "repaired parity differs"
ecctl block get obj --stripe 7 --index 2 -o "$WORK/data.now" >/dev/null
cmp "$WORK/data.orig" "$WORK/data.now" || fail "repaired data differs"
ecctl read obj -o "$WORK/out.bin" >/dev/null
cmp "$WORK/in.bin" "$WORK/out.bin" || fail "read back differs"
out=$(ecctl scrub)
echo "   $out"
case "$out" in "scrubbed 1 objects: "*" 0 corrupt, 0 unreadable, 0 parity mismatches; 0 blocks repaired, 0 stripes lost") ;;
  *) fail "second scrub not clean: $out" ;; esac
[ "$(ecctl --json scrub --status | json 'd["found_total"]["blocks_repaired"]')" = 2 ] || fail "status totals"
ecctl scrub --status

step "lost stripe: scrub exits 4 with one line, the rest is repaired"
ecctl encode "$WORK/in.bin" --name fragile --block-size 64K >/dev/null
for i in 0 1 2; do read -r dev lba _ < <(block_of fragile 0 $i); flip "$dev" "$lba" 10; done
read -r dev lba _ < <(block_of fragile 5 1)
flip "$dev" "$lba" 10
rc=0
ecctl scrub fragile >"$WORK/out" 2>"$WORK/err" || rc=$?
[ "$rc" = 4 ] || fail "scrub of a lost stripe exited $rc"
[ "$(wc -l <"$WORK/err")" = 1 ] || fail "expected one stderr line: $(cat "$WORK/err")"
grep -q "still damaged" "$WORK/err" || fail "message: $(cat "$WORK/err")"
grep -q "1 blocks repaired, 1 stripes lost" "$WORK/out" || fail "summary: $(cat "$WORK/out")"
expect_error NOT_FOUND ecctl scrub nosuch
rc=0
ecctl scrub --rate 12Q obj 2>"$WORK/err" || rc=$?
[ "$rc" = 2 ] || fail "a bad --rate exited $rc, expected 2 (usage)"
ecctl rm fragile >/dev/null
stop_ecd

step "background scrubber repairs on its own (interval 0.001 h) and reports"
start_ecd --scrub-interval-hours 0
read -r dev lba _ < <(block_of obj 10 0)
stop_ecd
flip "$dev" "$lba" 99
start_ecd --scrub-interval-hours 0.001 --scrub-rate 0
for _ in $(seq 1 100); do
  passes=$(ecctl --json scrub --status | json 'd["passes"]')
  [ "$passes" -ge 1 ] && break
  sleep 0.2
done
[ "$passes" -ge 1 ] || fail "no background pass within 20 s"
ecctl --json scrub --status >"$WORK/status.json"
[ "$(json 'd["background"]' <"$WORK/status.json")" = True ] || fail "background off"
[ "$(json 'd["last"]["found"]["blocks_repaired"]' <"$WORK/status.json")" = 1 ] || fail "background did not repair: $(cat "$WORK/status.json")"
[ "$(ecctl --json stat obj --verify | json 'd["object"]["degraded_stripes"]')" = 0 ] || fail "still degraded"
ecctl read obj -o "$WORK/out.bin" >/dev/null
cmp "$WORK/in.bin" "$WORK/out.bin" || fail "read back differs after background repair"
stop_ecd

step "a device whose flush fails at start is suspect: encodes go elsewhere, it is evacuated"
# (A flush that fails under an encode fails that encode: FaultStoreTest covers it.)
start_ecd --scrub-interval-hours 0 --fault-inject "2=flush:eio"
ecctl repair resume >/dev/null  # the evacuation of the suspect device is the repair's work
grep -q "device 2 is suspect and now failing: .*block-record log" "$WORK/ecd.log" ||
  fail "the log does not say why device 2 is suspect"
state=$(ecctl --json device ls | json '[x for x in d["devices"] if int(x.get("id",0))==2][0]["state"]')
[ "$state" = DEVICE_STATE_FAILING ] || [ "$state" = DEVICE_STATE_FAILED ] || fail "device 2 is $state"
ecctl encode "$WORK/in.bin" --name flushy --block-size 64K >/dev/null
ecctl read flushy -o "$WORK/out.bin" >/dev/null
cmp "$WORK/in.bin" "$WORK/out.bin" || fail "retry read back differs"
for _ in $(seq 1 100); do
  state=$(ecctl --json device ls | json '[x for x in d["devices"] if int(x.get("id",0))==2][0]["state"]')
  [ "$state" = DEVICE_STATE_FAILED ] && break
  sleep 0.2
done
[ "$state" = DEVICE_STATE_FAILED ] || fail "device 2 was not evacuated (state $state)"
ecctl --json rebuild ls >"$WORK/jobs.json"
[ "$(json 'int(d["repair"]["blocks_repaired"])' <"$WORK/jobs.json")" -gt 0 ] ||
  fail "the repair moved no block off device 2: $(cat "$WORK/jobs.json")"
ecctl read obj -o "$WORK/out.bin" >/dev/null
cmp "$WORK/in.bin" "$WORK/out.bin" || fail "obj differs after the evacuation"
stop_ecd
echo "scrub_test: all passed"
