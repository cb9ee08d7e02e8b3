#!/usr/bin/env bash
# bench/ab.sh: two ecd builds side by side, alternating, on the same machine and file. Each
# round starts each build on a fresh data dir (12 devices), encodes the file (8+3, 1 MiB
# blocks), reads it twice to /dev/null (the second read is timed, after dropping the page
# cache as root), reads it once more with 3 devices failed, brings them back and times a rebuild
# (`ecctl recover --missing-only`, the automatic repair paused) after failing one other device, encodes SMALL (default 200)
# files of 4 KiB (4+2, 4 KiB blocks, 4 clients at once) and times them, then stops it. Rounds alternate A
# and B, so that the machine's drift falls on both. It prints MB/s per round and the ratio of
# B's median to A's for each phase. For a change to ecd's data path, before and after.
#
# Usage: bench/ab.sh A_ECD B_ECD [--ecctl BIN] [--b-ecctl BIN] [--rounds 3] [--size 1G]
#                    [--dir DIR] [--ecd-arg ARG]...
#   A_ECD, B_ECD  the two ecd binaries (e.g. a build of the previous commit, then build/); the
#                 same binary twice with two clients compares the clients
#   --ecctl       the client (default build/client/ecctl)
#   --b-ecctl     the client of B's rounds (default: --ecctl)
#   --rounds      rounds of A then B (default 3)
#   --size        bytes of the generated file (default 1G; a multiple of 1 MiB)
#   --dir         where the data dirs go (default /var/tmp); the file goes to /dev/shm
#   --ecd-arg     an extra flag for both builds (repeatable)
#   --small       small objects encoded per round (default 200; 0: none)
# Exit: 0 done; 1 a command failed or the bytes read back differ.
set -euo pipefail
shopt -s inherit_errexit  # A failed command inside $(run ...) ends the round too.

die() {
  echo "ab: $*" >&2
  exit 1
}
[ $# -ge 2 ] || die "usage: bench/ab.sh A_ECD B_ECD [--ecctl BIN] [--b-ecctl BIN] [--rounds N] [--size S] [--dir D] [--ecd-arg ARG]..."
A_ECD=$1
B_ECD=$2
shift 2
ROOT=$(cd "$(dirname "$0")/.." && pwd)
ECTL=$ROOT/build/client/ecctl
ROUNDS=3
SIZE_TEXT=1G
BASE=/var/tmp
ECD_ARGS=()
SMALL=200
while [ $# -gt 0 ]; do
  case $1 in
  --ecctl) ECTL=$2; shift 2 ;;
  --b-ecctl) B_ECTL=$2; shift 2 ;;
  --rounds) ROUNDS=$2; shift 2 ;;
  --size) SIZE_TEXT=$2; shift 2 ;;
  --dir) BASE=$2; shift 2 ;;
  --ecd-arg) ECD_ARGS+=("$2"); shift 2 ;;
  --small) SMALL=$2; shift 2 ;;
  *) die "unknown option $1" ;;
  esac
done
B_ECTL=${B_ECTL:-$ECTL}
for b in "$A_ECD" "$B_ECD" "$ECTL" "$B_ECTL"; do [ -x "$b" ] || die "$b is not an executable"; done
SIZE=$(numfmt --from=iec "$SIZE_TEXT") || die "cannot read --size $SIZE_TEXT"
[ $((SIZE % 1048576)) -eq 0 ] && [ "$SIZE" -gt 0 ] || die "--size must be a multiple of 1 MiB"

WORK=$(mktemp -d "$BASE/ecd-ab.XXXXXX")
SRC=$(mktemp /dev/shm/ecd-ab-source.XXXXXX)
PID=""
cleanup() {
  if [ -n "$PID" ]; then kill -TERM "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; fi
  rm -rf "$WORK" "$SRC"
}
trap cleanup EXIT
head -c "$SIZE" /dev/urandom >"$SRC"
SUM=$(cksum <"$SRC")
DEVICE_MB=$(((SIZE * 11 / 8 / 12 >> 20) + 64))

drop_caches() {
  sync
  if [ "$(id -u)" -eq 0 ]; then echo 3 >/proc/sys/vm/drop_caches; fi
}
now() { date +%s.%N; }
mbps() { python3 -c "import sys; print('%.0f' % ($SIZE / 1e6 / (float(sys.argv[2]) - float(sys.argv[1]))))" "$1" "$2"; }

# rebuild_mbps T0 T1 JSON: bytes rebuilt x 8 (the data blocks read for each) in MB/s.
rebuild_mbps() {
  python3 -c "import json, sys; d = json.load(open(sys.argv[3]))
print('%.0f' % (int(d['bytes_rebuilt']) * 8 / 1e6 / (float(sys.argv[2]) - float(sys.argv[1]))))" "$@"
}

# small ECCTL...: encodes $SMALL files of 4 KiB, 4 clients at once; prints objects/s.
small() {
  [ "$SMALL" -gt 0 ] || { echo 0; return; }
  head -c 4096 /dev/urandom >"$WORK/small"
  local t0 t1
  t0=$(now)
  seq 1 "$SMALL" | xargs -P 4 -I{} "$@" encode "$WORK/small" --name "small{}" --data 4 --parity 2 \
    --block-size 4K >/dev/null
  t1=$(now)
  python3 -c "import sys; print('%.0f' % ($SMALL / (float(sys.argv[2]) - float(sys.argv[1]))))" "$t0" "$t1"
}

# run BIN ECCTL: prints "encode read degraded rebuild small" MB/s (small: objects/s) of one round.
run() {
  local dir=$WORK/data addr t0 t1 t2 t3 t4 t5 t6 t7 ECTL=$2
  rm -rf "$dir" "$WORK/port"
  "$1" --data-dir "$dir" --devices 12 --device-size "${DEVICE_MB}M" --listen 127.0.0.1:0 \
    --port-file "$WORK/port" --unix-socket none --metrics-listen "" --scrub-interval-hours 0 \
    --log-level warn "${ECD_ARGS[@]}" >>"$WORK/ecd.log" 2>&1 &
  PID=$!
  # This runs in a subshell ($(run ...)): whatever ends it early stops its ecd too.
  ROUND_OF=$1
  trap 'rc=$?; if [ -n "$PID" ]; then kill -TERM "$PID" 2>/dev/null || true; fi
    [ "$rc" -eq 0 ] || echo "ab: a round of $ROUND_OF failed (exit $rc)" >&2' EXIT
  for _ in $(seq 1 300); do
    if [ -s "$WORK/port" ] && "$ECTL" --addr "127.0.0.1:$(cat "$WORK/port")" device ls >/dev/null 2>&1; then
      break
    fi
    kill -0 "$PID" 2>/dev/null || die "$1 exited during start-up (see $WORK/ecd.log)"
    sleep 0.1
  done
  addr=127.0.0.1:$(cat "$WORK/port")
  local ecctl=("$ECTL" --addr "$addr" --quiet)
  # The timed rebuild is the manual one: the automatic repair would race it for the same blocks.
  "${ecctl[@]}" repair pause >/dev/null
  drop_caches
  t0=$(now)
  "${ecctl[@]}" encode "$SRC" --name ab --data 8 --parity 3 --block-size 1M >/dev/null
  t1=$(now)
  [ "$("${ecctl[@]}" read ab -o - 2>/dev/null | cksum)" = "$SUM" ] || die "$1: the bytes read back differ"
  drop_caches
  t2=$(now)
  "${ecctl[@]}" read ab -o /dev/null >/dev/null
  t3=$(now)
  for d in 0 1 2; do "${ecctl[@]}" device fail "$d" >/dev/null; done
  drop_caches
  t4=$(now)
  "${ecctl[@]}" read ab -o /dev/null >/dev/null
  t5=$(now)
  for d in 0 1 2; do "${ecctl[@]}" device online "$d" >/dev/null; done
  "${ecctl[@]}" device fail 5 >/dev/null
  drop_caches
  t6=$(now)
  "${ecctl[@]}" --json recover --missing-only ab >"$WORK/recover.json"
  t7=$(now)
  python3 -c "import json, sys; sys.exit(int(json.load(open(sys.argv[1]))['blocks_rebuilt']) == 0)" \
    "$WORK/recover.json" || die "$1: the rebuild rebuilt nothing"
  [ "$("${ecctl[@]}" read ab -o - 2>/dev/null | cksum)" = "$SUM" ] || die "$1: the bytes read back after the rebuild differ"
  local objects
  objects=$(small "${ecctl[@]}")
  kill -TERM "$PID"
  wait "$PID" || die "$1 did not stop cleanly"
  PID=""
  echo "$(mbps "$t0" "$t1") $(mbps "$t2" "$t3") $(mbps "$t4" "$t5") $(rebuild_mbps "$t6" "$t7" "$WORK/recover.json") $objects"
}

echo "ab: A = $A_ECD, client $ECTL"
echo "ab: B = $B_ECD, client $B_ECTL"
echo "ab: $SIZE_TEXT file, 8+3 x 1 MiB, 12 devices, $ROUNDS rounds of A then B"
echo
echo "| round | build | encode MB/s | read MB/s | read, 3 devices failed, MB/s | rebuild of 1 device, MB/s x 8 | 4 KiB encodes/s |"
echo "|---:|---|---:|---:|---:|---:|---:|"
A_ROWS=()
B_ROWS=()
for r in $(seq 1 "$ROUNDS"); do
  row=$(run "$A_ECD" "$ECTL")
  A_ROWS+=("$row")
  echo "| $r | A | ${row// / | } |"
  row=$(run "$B_ECD" "$B_ECTL")
  B_ROWS+=("$row")
  echo "| $r | B | ${row// / | } |"
done
python3 - "${#A_ROWS[@]}" "${A_ROWS[@]}" "${B_ROWS[@]}" <<'PY'
import statistics, sys
n = int(sys.argv[1])
rows = [list(map(float, r.split())) for r in sys.argv[2:]]
a, b = rows[:n], rows[n:]
print()
for i, phase in enumerate(["encode", "read", "degraded read", "rebuild x 8", "4 KiB encodes"]):
    ma = statistics.median(r[i] for r in a)
    mb = statistics.median(r[i] for r in b)
    unit = "objects/s" if i == 4 else "MB/s"
    if ma > 0:
        print(f"{phase}: median A {ma:.0f}, B {mb:.0f} {unit}, B/A {mb / ma:.2f}")
PY
