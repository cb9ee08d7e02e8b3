#!/usr/bin/env bash
# The catalog is not a single point of loss (docs/operations.md, "The catalog is lost or
# damaged"): with catalog.db deleted, emptied, cut short or replaced by an older copy, and after
# a flipped byte in its write-ahead log following kill -9, ecd refuses to start and names
# --rebuild-catalog; `ecd --rebuild-catalog` then brings back every acknowledged object
# byte-exact (sha256) at its newest version, and no deleted one. Also `ecctl catalog backup` and
# `ecd --check-catalog`.
# Usage: catalog_test.sh ECD ECTL
set -euo pipefail
ECD=$1
ECTL=$2
source "$(dirname "$0")/lib.sh"
MODEL="$WORK/model"
DATA="$WORK/data"
mkdir -p "$MODEL"

# put NAME SIZE [BLOCK]: stores SIZE random bytes as NAME and keeps them in the model.
put() {
  head -c "$2" /dev/urandom >"$MODEL/$1"
  ecctl encode "$MODEL/$1" --name "$1" --block-size "${3:-64K}" >/dev/null
}

# change NAME OFFSET LEN: overwrites LEN random bytes of NAME at OFFSET, in ecd and the model.
change() {
  head -c "$3" /dev/urandom >"$WORK/patch"
  ecctl update "$1" --offset "$2" --file "$WORK/patch" >/dev/null
  python3 - "$MODEL/$1" "$2" "$WORK/patch" <<'PY'
import sys
path, off, patch = sys.argv[1], int(sys.argv[2]), open(sys.argv[3], "rb").read()
data = bytearray(open(path, "rb").read())
data[off:off + len(patch)] = patch
open(path, "wb").write(bytes(data))
PY
}

# check_all: ecd lists exactly the model's objects, each byte-exact.
check_all() {
  local listed
  listed=$(ecctl --json ls | json '" ".join(sorted(o["name"] for o in d.get("objects", [])))')
  [ "$listed" = "$(ls "$MODEL" | sort | tr '\n' ' ' | sed 's/ $//')" ] ||
    fail "objects differ from the model: $listed"
  for name in $(ls "$MODEL"); do
    ecctl read "$name" -o "$WORK/back" >/dev/null
    [ "$(sha256sum <"$WORK/back")" = "$(sha256sum <"$MODEL/$name")" ] || fail "$name differs"
  done
  echo "   ok: $(ls "$MODEL" | wc -l) objects byte-exact"
}

# refused WHAT: ecd must refuse to start on the data dir, in one line naming WHAT and
# --rebuild-catalog, and change nothing.
refused() {
  local rc=0
  timeout 60 "$ECD" --data-dir "$DATA" --devices 8 --device-size 256M --listen 127.0.0.1:0 \
    --metrics-listen 127.0.0.1:0 >"$WORK/refused.log" 2>&1 || rc=$?
  [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || fail "ecd started (or hung, $rc) on a catalog that $1"
  grep -q -- "$1" "$WORK/refused.log" || fail "refusal does not say '$1': $(cat "$WORK/refused.log")"
  grep -q -- "--rebuild-catalog" "$WORK/refused.log" ||
    fail "refusal does not name --rebuild-catalog: $(cat "$WORK/refused.log")"
  echo "   ok: refused: $(grep -o "the catalog.*" "$WORK/refused.log" | head -c 160)..."
}

rebuild() {
  "$ECD" --data-dir "$DATA" --rebuild-catalog >"$WORK/rebuild.out" 2>"$WORK/rebuild.err" ||
    fail "--rebuild-catalog failed: $(cat "$WORK/rebuild.err")"
  echo "   $(head -n 1 "$WORK/rebuild.out")"
}

step "objects of several shapes, an update and a delete; an online backup"
start_ecd
put small 100
put updated 300000
put big 5000000 1M
put empty 0
put deleted 70000
change updated 1000 5000
ecctl rm deleted >/dev/null
rm "$MODEL/deleted"
ecctl catalog backup "$WORK/backup.db" >/dev/null
[ "$(sqlite3 "$WORK/backup.db" "SELECT COUNT(*) FROM objects WHERE state = 'committed'")" = 4 ] ||
  fail "the backup does not hold the 4 objects"
[ "$(sqlite3 "$WORK/backup.db" "PRAGMA integrity_check")" = ok ] || fail "the backup is damaged"
stop_ecd

step "catalog.db deleted: refused, nothing created; rebuilt byte-exact"
rm -f "$DATA"/catalog.db*
refused "is missing"
[ ! -e "$DATA/catalog.db" ] || fail "the refusal created a catalog"
rebuild
start_ecd
check_all
stop_ecd

step "catalog.db emptied, then cut in half: refused; rebuilt"
: >"$DATA/catalog.db"
rm -f "$DATA/catalog.db-wal" "$DATA/catalog.db-shm"
refused "is empty"
rebuild
start_ecd
check_all
stop_ecd
truncate -s "$(($(stat -c %s "$DATA/catalog.db") / 2))" "$DATA/catalog.db"
refused "catalog"
rebuild
start_ecd
check_all
stop_ecd

step "an older copy of catalog.db put back: behind its devices; --check-catalog lists it"
cp "$DATA/catalog.db" "$WORK/old.db"
start_ecd
put later 123456
change small 10 50
stop_ecd
cp "$WORK/old.db" "$DATA/catalog.db"
rm -f "$DATA/catalog.db-wal" "$DATA/catalog.db-shm"
refused "behind its devices"
rc=0
"$ECD" --data-dir "$DATA" --check-catalog >"$WORK/check.out" 2>/dev/null || rc=$?
[ "$rc" = 3 ] || fail "--check-catalog exited $rc on an old catalog, want 3"
grep -q "later" "$WORK/check.out" || fail "--check-catalog does not name the missing object"
rebuild
start_ecd
check_all
stop_ecd
"$ECD" --data-dir "$DATA" --check-catalog >"$WORK/check.out" 2>/dev/null ||
  fail "--check-catalog after the rebuild: $(cat "$WORK/check.out")"

step "a flipped byte in catalog.db-wal after kill -9: the lost commits are detected"
# A fresh store, so that the write-ahead log holds every commit since it was made.
rm -rf "$DATA" "$MODEL"
mkdir -p "$MODEL"
start_ecd
for i in $(seq 1 12); do put "w$i" $((20000 + i * 1000)); done
kill -9 "$ECD_PID"
wait "$ECD_PID" 2>/dev/null || true
ECD_PID=""
# WAL: a 32-byte header, then frames of a 24-byte header and a 4096-byte page. A byte in the
# page of the middle frame: SQLite replays the frames before it only, so the commits after it
# are lost, and the encodes that followed them recorded on their devices that they committed.
python3 - "$DATA/catalog.db-wal" <<'PY'
import sys
path = sys.argv[1]
data = bytearray(open(path, "rb").read())
frames = (len(data) - 32) // (24 + 4096)
assert frames > 4, frames
at = 32 + (frames // 2) * (24 + 4096) + 24 + 100
data[at] ^= 0xFF
open(path, "wb").write(bytes(data))
PY
refused "behind its devices"
rebuild
start_ecd
check_all
stop_ecd
