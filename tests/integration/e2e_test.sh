#!/usr/bin/env bash
# End to end on loopback: encode a 64 MiB file 4+2, corrupt one block and delete another, read it
# back byte-exact, recover, see every stripe whole again; fail two devices and recover; restart
# and find everything (and the same free space); K+1 losses give DATA_LOSS and never bytes; bad
# requests get their status codes and the daemon stays up.
set -euo pipefail
ECD=$1
ECTL=$2
. "$(dirname "$0")/lib.sh"

start_ecd
# These steps damage objects and repair them by hand; the automatic repair (repair_test.sh)
# stays paused in this data dir so that the damage is still there when they look.
ecctl repair pause >/dev/null

step "encode a 64 MiB random file with 4+2 and a small Vandermonde object"
head -c $((64 << 20)) /dev/urandom >"$WORK/big.bin"
head -c 300000 /dev/urandom >"$WORK/small.bin"
ecctl encode "$WORK/big.bin" --name big --data 4 --parity 2
ecctl encode "$WORK/small.bin" --name small --data 3 --parity 2 --matrix vandermonde --block-size 64K
ecctl ls
[ "$(ecctl --json stat big | json 'd["object"]["stripe_count"]')" = 16 ] || fail "expected 16 stripes"

step "corrupt stripe 3 block 1 and delete (zero) stripe 9 block 4"
read -r dev lba cnt <<<"$(block_of big 3 1)"
clobber "$dev" "$lba" 1 0xAB
read -r dev lba cnt <<<"$(block_of big 9 4)"
clobber "$dev" "$lba" "$cnt" 0
ecctl read big -o "$WORK/big.out"
cmp "$WORK/big.bin" "$WORK/big.out" || fail "degraded read returned different bytes"
echo "   read back byte-identical"
# The read met the corrupt data block; the zeroed parity block is found by a verifying stat.
degraded=$(ecctl --json stat big | json 'd["object"]["degraded_stripes"]')
[ "$degraded" = 1 ] || fail "expected 1 degraded stripe after the read, got $degraded"
degraded=$(ecctl --json stat big --verify | json 'd["object"]["degraded_stripes"]')
[ "$degraded" = 2 ] || fail "expected 2 degraded stripes after stat --verify, got $degraded"

step "recover rebuilds both blocks"
ecctl --json recover big >"$WORK/recover.json"
[ "$(json 'd["blocks_rebuilt"]' <"$WORK/recover.json")" = 2 ] || fail "expected 2 blocks rebuilt: $(cat "$WORK/recover.json")"
ecctl --json stat big --verify >"$WORK/stat.json"
json 'all(int(s["healthy_blocks"]) == 6 for s in d["object"]["stripes"]) and len(d["object"]["stripes"]) == 16' \
  <"$WORK/stat.json" | grep -qx True || fail "not every stripe is whole after recover"
echo "   every stripe has 6 healthy blocks"

step "block get exports stored blocks; a bad one is rebuilt, never served"
ecctl block get big --stripe 2 --index 1 -o "$WORK/blk.data"
cmp "$WORK/blk.data" <(tail -c +$(((2 * 4 + 1) * (1 << 20) + 1)) "$WORK/big.bin" | head -c $((1 << 20))) \
  || fail "exported data block differs from the file's bytes"
ecctl block get big --stripe 2 --index 5 -o "$WORK/blk.parity"
[ "$(stat -c %s "$WORK/blk.parity")" = $((1 << 20)) ] || fail "exported parity block has the wrong size"
read -r dev lba cnt <<<"$(block_of big 2 5)"
clobber "$dev" "$lba" 1 0x11
ecctl --json block get big --stripe 2 --index 5 -o "$WORK/blk.parity2" | json 'd["reconstructed"]' | grep -qx True \
  || fail "a corrupt block was not reported as rebuilt"
cmp "$WORK/blk.parity" "$WORK/blk.parity2" || fail "rebuilt parity block differs"
expect_error OUT_OF_RANGE ecctl block get big --stripe 16 --index 0 -o "$WORK/none"
ecctl recover big >/dev/null

step "fail two devices: degraded read, then recover onto the other six"
ecctl device fail 0
ecctl device fail 5
ecctl read big -o "$WORK/big.out2"
cmp "$WORK/big.bin" "$WORK/big.out2" || fail "read with two failed devices returned different bytes"
# A rebuild reads M = 4 blocks of each stripe with a block on a failed device, not all 6.
ecctl --json recover --missing-only big >"$WORK/rebuild.json"
json 'int(d["blocks_rebuilt"]) > 0 and int(d["blocks_checked"]) % 4 == 0 and int(d["blocks_checked"]) < 6 * 16' \
  <"$WORK/rebuild.json" | grep -qx True || fail "a missing-only recover read more than M blocks a stripe: $(cat "$WORK/rebuild.json")"
ecctl recover small
ecctl --json stat big --verify | json 'd["object"]["degraded_stripes"]' | grep -qx 0 || fail "big still degraded"
ecctl --json stat small --verify | json 'd["object"]["degraded_stripes"]' | grep -qx 0 || fail "small still degraded"
[ "$(ecctl --json device ls | json 'd["devices"][0]["blocks"]')" = 0 ] || fail "device 0 still holds blocks"
ecctl device ls
# Every block moved as NVMe commands: the device counters say so, with no error statuses.
ecctl --json device ls | json 'sum(int(x["counters"]["nvme_write_commands"]) for x in d["devices"] if x["state"] == "DEVICE_STATE_ONLINE")' >"$WORK/nvme.writes"
[ "$(cat "$WORK/nvme.writes")" -gt 100 ] || fail "NVMe write commands not counted: $(cat "$WORK/nvme.writes")"

step "restart: every object reads back and free space is unchanged"
ecctl --json device ls | json '[(x["id"], x["free_bytes"], x["state"]) for x in d["devices"]]' >"$WORK/free.before"
stop_ecd
start_ecd
ecctl --json device ls | json '[(x["id"], x["free_bytes"], x["state"]) for x in d["devices"]]' >"$WORK/free.after"
cmp "$WORK/free.before" "$WORK/free.after" || fail "free space changed over a restart: $(cat "$WORK/free.before") vs $(cat "$WORK/free.after")"
ecctl read big -o "$WORK/big.out3"
cmp "$WORK/big.bin" "$WORK/big.out3" || fail "big differs after restart"
ecctl read small -o "$WORK/small.out"
cmp "$WORK/small.bin" "$WORK/small.out" || fail "small differs after restart"
ecctl read small -o "$WORK/small.part" --offset 65530 --length 20
cmp <(tail -c +65531 "$WORK/small.bin" | head -c 20) "$WORK/small.part" || fail "ranged read differs"
ecctl device online 0
ecctl device online 5

step "kill -9: an acknowledged encode survives; an interrupted one leaves nothing behind"
head -c $((5 << 20)) /dev/urandom >"$WORK/acked.bin"
ecctl encode "$WORK/acked.bin" --name acked --block-size 64K
ecctl --json device ls | json 'sum(int(x["free_bytes"]) for x in d["devices"])' >"$WORK/free.acked"
head -c $((200 << 20)) /dev/urandom >"$WORK/huge.bin"
( ecctl encode "$WORK/huge.bin" --name interrupted >/dev/null 2>&1 || true ) &
encoder=$!
sleep 0.3
kill -9 "$ECD_PID"
wait "$ECD_PID" 2>/dev/null || true
wait "$encoder" || true
ECD_PID=""
start_ecd
ecctl read acked -o "$WORK/acked.out"
cmp "$WORK/acked.bin" "$WORK/acked.out" || fail "an acknowledged object changed over kill -9"
if ecctl stat interrupted >/dev/null 2>&1; then
  ecctl read interrupted -o "$WORK/huge.out"  # It finished before the kill: it must be whole.
  cmp "$WORK/huge.bin" "$WORK/huge.out" || fail "an object acknowledged before kill -9 differs"
  ecctl rm interrupted
else
  if grep -q "dropped 1 object" "$WORK/ecd.log"; then echo "   the interrupted encode was dropped at restart"; else echo "   (the encode had not started)"; fi
fi
free_now=$(ecctl --json device ls | json 'sum(int(x["free_bytes"]) for x in d["devices"])')
[ "$free_now" = "$(cat "$WORK/free.acked")" ] || fail "kill -9 mid-encode leaked space: $free_now vs $(cat "$WORK/free.acked")"
echo "   acknowledged bytes intact, no space leaked"
ecctl rm acked

step "evacuate a device: its blocks move off, reads stay byte-exact, then it is failed"
ecctl repair resume >/dev/null  # an evacuation is the repair's work
ecctl device evacuate 7
for _ in $(seq 1 200); do
  state=$(ecctl --json rebuild ls | json 'd["jobs"][0]["state"]')
  [ "$state" = done ] && break
  [ "$state" = failed ] && fail "evacuation failed: $(ecctl --json rebuild ls)"
  sleep 0.1
done
[ "$state" = done ] || fail "evacuation did not finish: $(ecctl --json rebuild ls)"
ecctl rebuild ls
[ "$(ecctl --json device ls | json 'd["devices"][7]["state"]')" = DEVICE_STATE_FAILED ] || fail "device 7 not failed"
[ "$(ecctl --json device ls | json 'd["devices"][7]["blocks"]')" = 0 ] || fail "device 7 still holds blocks"
ecctl --json stat big --verify | json 'd["object"]["degraded_stripes"]' | grep -qx 0 || fail "big degraded after evacuation"
ecctl read big -o "$WORK/big.evac"
cmp "$WORK/big.bin" "$WORK/big.evac" || fail "big differs after evacuation"
expect_error NOT_FOUND ecctl rebuild get 999
expect_error FAILED_PRECONDITION ecctl device evacuate 7
ecctl device online 7

step "K+1 lost blocks: DATA_LOSS, never wrong bytes"
head -c $((3 << 20)) /dev/urandom >"$WORK/fragile.bin"
ecctl encode "$WORK/fragile.bin" --name fragile --data 2 --parity 1 --block-size 1M
for idx in 0 2; do
  read -r dev lba cnt <<<"$(block_of fragile 0 $idx)"
  clobber "$dev" "$lba" 1 0x5A
done
expect_error DATA_LOSS ecctl read fragile -o "$WORK/fragile.out"
[ ! -e "$WORK/fragile.out" ] || fail "a failed read left an output file"
ls "$WORK" | grep -q partial && fail "a failed read left a partial file"
[ "$(ecctl --json stat fragile | json 'd["object"]["lost_stripes"]')" = 1 ] || fail "expected 1 lost stripe"
expect_error DATA_LOSS ecctl recover fragile
ecctl read fragile -o "$WORK/fragile.tail" --offset $((2 << 20))
cmp <(tail -c +$(((2 << 20) + 1)) "$WORK/fragile.bin") "$WORK/fragile.tail" || fail "intact stripe of fragile differs"
ecctl rm fragile

step "bad requests get clear errors and change nothing"
expect_error ALREADY_EXISTS ecctl encode "$WORK/small.bin" --name big
expect_error INVALID_ARGUMENT ecctl encode "$WORK/small.bin" --name x --data 129
expect_error INVALID_ARGUMENT ecctl encode "$WORK/small.bin" --name x --parity 33
expect_error INVALID_ARGUMENT ecctl encode "$WORK/small.bin" --name x --block-size 100
expect_error INVALID_ARGUMENT ecctl encode "$WORK/small.bin" --name x --data 7 --parity 2
expect_error NOT_FOUND ecctl stat nothing-here
expect_error NOT_FOUND ecctl read nothing-here -o "$WORK/none"
expect_error NOT_FOUND ecctl device fail 99
ecctl --json ls | json 'sorted(o["name"] for o in d["objects"])' | grep -qx "\['big', 'small'\]" || fail "object list changed"
ecctl read big -o "$WORK/big.out4"
cmp "$WORK/big.bin" "$WORK/big.out4" || fail "big differs after the bad requests"

step "SIGTERM stops ecd cleanly"
stop_ecd
echo
echo "e2e: all checks passed"
