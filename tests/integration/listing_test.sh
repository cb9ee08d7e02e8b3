#!/usr/bin/env bash
# Paged listing (docs/api.md, Objects.List and Count): 25,000 objects with 1,000-byte names,
# listed through pages against a model with and without prefix and delimiter, completely and
# once while other clients encode and delete (tests/integration/listing_client.py); then
# `ecctl ls` with folders, a prefix and --recursive, and --json over several pages.
# Usage: listing_test.sh ECD ECTL   (ECD_LISTING_COUNT objects, default 25000)
set -euo pipefail
ECD=$1
ECTL=$2
COUNT=${ECD_LISTING_COUNT:-25000}
. "$(dirname "$0")/lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)

step "generate the Python stubs"
python_stubs

step "start ecd"
# Each device's block-record log (1/32 of it) holds a snapshot of its blocks' records, and every
# record carries its object's name: 2 GiB devices (sparse) leave room for 25,000 long names.
ECD_DEVICE_SIZE=2G start_ecd --block-size 4K

step "listing $COUNT objects against a model"
"$PY" "$HERE/listing_client.py" "$WORK/stubs" "$ADDR" "$COUNT" || fail "listing_client.py failed"

step "ecctl ls: folders, a prefix, --recursive, --json over pages"
ecctl ls >"$WORK/ls"
[ "$(grep -c ' PRE$' "$WORK/ls")" = 40 ] || fail "ecctl ls shows $(grep -c ' PRE$' "$WORK/ls") folders, not 40"
ecctl ls d07/ >"$WORK/ls"
[ "$(grep -c ' PRE$' "$WORK/ls")" = 7 ] || fail "ecctl ls d07/ shows $(grep -c ' PRE$' "$WORK/ls") subfolders, not 7"
want=$(/usr/bin/python3 -c "print(sum(1 for i in range($COUNT) if i % 40 == 7))")
ecctl ls d07/ --recursive --page-size 100 >"$WORK/ls"
[ "$(($(wc -l <"$WORK/ls") - 1))" = "$want" ] || fail "ecctl ls d07/ --recursive lists $(($(wc -l <"$WORK/ls") - 1)) objects, not $want"
got=$(ecctl --json ls d07/ --recursive --page-size 100 | json 'len(d["objects"])')
[ "$got" = "$want" ] || fail "ecctl --json ls d07/ --recursive has $got objects, not $want"
echo "   ok: 40 folders, 7 subfolders, $want objects under d07/ in pages of 100, text and JSON"
rc=0
ecctl ls --page-size 0 >/dev/null 2>"$WORK/err" || rc=$?
[ "$rc" = 2 ] && [ "$(wc -l <"$WORK/err")" = 1 ] || fail "ecctl ls --page-size 0: exit $rc, $(cat "$WORK/err")"
stop_ecd
echo "listing test: ok"
