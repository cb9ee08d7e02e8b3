#!/usr/bin/env bash
# Update on loopback: ecctl update of ranges (1 byte, block- and stripe-crossing, an append that
# grows the object) read back byte-exact against a copy patched by Python; the version shown by
# `ecctl --json stat` and `ecctl --json read` goes up by one per update and survives a restart,
# under the same object id; the name deleted and encoded again is at version 1 under a new id;
# bad updates get OUT_OF_RANGE / NOT_FOUND / INVALID_ARGUMENT and change nothing.
set -euo pipefail
ECD=$1
ECTL=$2
. "$(dirname "$0")/lib.sh"

start_ecd

# check_object VERSION: the object reads back equal to the model; Stat and Read show VERSION and
# the id $ID.
check_object() {
  ecctl read obj -o "$WORK/obj.out" >/dev/null
  cmp "$WORK/model.bin" "$WORK/obj.out" || fail "read after update differs from the patched copy"
  local v
  v=$(ecctl --json stat obj | json 'd["object"]["version"], d["object"]["id"]')
  [ "$v" = "$1 $ID" ] || fail "expected version and id $1 $ID, stat shows $v"
  v=$(ecctl --json read obj -o "$WORK/obj.out" | json 'd["version"], d["id"]')
  [ "$v" = "$1 $ID" ] || fail "expected version and id $1 $ID, read shows $v"
  local size
  size=$(ecctl --json stat obj | json 'd["object"]["size"]')
  [ "$size" = "$(stat -c %s "$WORK/model.bin")" ] || fail "stat size $size != model size"
  echo "   version $1, $size bytes, byte-exact"
}

step "encode 1 MiB + 1000 bytes as 4+2 with 64 KiB blocks (4 stripes + a partial one)"
head -c $(((1 << 20) + 1000)) /dev/urandom >"$WORK/model.bin"
ecctl --json encode "$WORK/model.bin" --name obj --data 4 --parity 2 --block-size 64K \
  >"$WORK/enc.json"
ID=$(json 'd["object"]["id"]' <"$WORK/enc.json")
[ "$ID" -gt 0 ] || fail "encode --json: no object id: $(cat "$WORK/enc.json")"
check_object 1

step "update one byte (hex), a block-crossing range and a stripe-crossing range"
ecctl update obj --offset 12345 --data-hex a5
python3 -c "open('$WORK/p1','wb').write(bytes([0xa5]))"
patch_model 12345 "$WORK/p1"
check_object 2
head -c 5000 /dev/urandom >"$WORK/p2"
ecctl update obj --offset $((65536 - 2500)) --file "$WORK/p2"
patch_model $((65536 - 2500)) "$WORK/p2"
check_object 3
head -c 300000 /dev/urandom >"$WORK/p3"
ecctl --json update obj --offset $((262144 - 1000)) --file "$WORK/p3" >"$WORK/up.json"
patch_model $((262144 - 1000)) "$WORK/p3"
[ "$(json 'd["object"]["version"]' <"$WORK/up.json")" = 3 ] && fail "json shows the old version"
[ "$(json 'd["object"]["version"]' <"$WORK/up.json")" = 4 ] || fail "update --json: $(cat "$WORK/up.json")"
[ "$(json 'd["bytes_written"]' <"$WORK/up.json")" = 300000 ] || fail "bytes_written: $(cat "$WORK/up.json")"
check_object 4

step "append 400 KiB from stdin at the end (the partial stripe, then new stripes)"
size=$(stat -c %s "$WORK/model.bin")
head -c 409600 /dev/urandom >"$WORK/p4"
ecctl update obj --offset "$size" --append --file - <"$WORK/p4"
patch_model "$size" "$WORK/p4"
check_object 5
stripes=$(ecctl --json stat obj | json 'd["object"]["stripe_count"]')
[ "$stripes" = 6 ] || fail "expected 6 stripes after the append, got $stripes"

step "bad updates fail with their codes and change nothing"
size=$(stat -c %s "$WORK/model.bin")
expect_error OUT_OF_RANGE ecctl update obj --offset $((size - 1)) --data-hex 0102
expect_error OUT_OF_RANGE ecctl update obj --offset $((size + 1)) --append --data-hex 01
expect_error NOT_FOUND ecctl update nope --offset 0 --data-hex 01
expect_error "hex digit" ecctl update obj --offset 0 --data-hex zz
check_object 5

step "restart: the new version and its bytes are there"
stop_ecd
start_ecd
check_object 5
ecctl --json stat obj --verify | json 'd["object"]["degraded_stripes"]' | grep -qx 0 ||
  fail "a stripe does not verify after restart"

step "the name deleted and encoded again: version 1 under a new id, also after a restart"
old_id=$ID
ecctl rm obj >/dev/null
ID=$(ecctl --json encode "$WORK/model.bin" --name obj --data 4 --parity 2 --block-size 64K |
  json 'd["object"]["id"]')
[ "$ID" -gt "$old_id" ] || fail "re-encoded obj got id $ID, not above the old $old_id"
check_object 1
old_id=$ID
ecctl rm obj >/dev/null
stop_ecd
start_ecd
ID=$(ecctl --json encode "$WORK/model.bin" --name obj --data 4 --parity 2 --block-size 64K |
  json 'd["object"]["id"]')
[ "$ID" -gt "$old_id" ] || fail "after a restart, obj got id $ID, not above the old $old_id"
check_object 1
stop_ecd
echo "PASS"
