#!/usr/bin/env bash
# bench/repair.sh: the automatic repair beside the manual one, and what a repair costs client
# reads. 12 devices of 4 GiB, objects of 64 MiB at 8+3 with 1 MiB blocks, about 512 MiB of blocks
# on the device that is lost. Rounds alternate (A, B, C, A, B, C, ...), each from a fresh copy of
# one encoded data dir, and the table reports medians:
#   A  automatic: ecd --repair-delay 0; `ecctl device fail N`, then poll until the repair has
#      nothing queued and no object is degraded. Time from the fail to full redundancy.
#   B  manual: the repair paused (`ecctl repair pause`); `ecctl device fail N`, then
#      `ecctl recover --missing-only NAME` for each object in turn. Time from the fail to the
#      last recover. The rate of each is the lost device's bytes over that time; A/B is the
#      ratio of the rates (target: the automatic repair at least 0.9 of the manual one).
#   C  reads: `ecctl read` of READS objects to /dev/null, healthy; then with device N failed and
#      the repair paused (degraded, nothing repairing); then the same reads again while the
#      repair runs. Reported: MB/s of each and the during/paused and during/healthy ratios.
# MB/s is 10^6 bytes/s. Every repaired store is checked: no degraded stripe (ecctl ls) and,
# in A and B, one object read back and compared with the source.
#
# Usage: bash bench/repair.sh
# Env knobs (defaults in brackets):
#   DEVICES [12]  DEVICE_SIZE [4G]  DATA [8]  PARITY [3]  BLOCK_SIZE [1M]
#   OBJECT_SIZE [64M]  OBJECTS [70: about 512 MiB of blocks per device]
#   ROUNDS [3] rounds of each kind   READS [8] objects read per read phase   VICTIM [5] device lost
#   BENCH_DIR [/var/tmp] where the work directory goes (ecd's devices; a real disk)
#   ECD, ECTL: binaries (default: built in BUILD_DIR [build/] with cmake --build)
#   ECD_ARGS: extra ecd flags (word-split)   KEEP=1 keeps the work directory
# A small run: DEVICE_SIZE=1G OBJECTS=12 OBJECT_SIZE=16M ROUNDS=3 READS=4 bash bench/repair.sh
# Exit: 0 done; 1 a check failed (bytes, degraded stripes left, an ecctl error).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
DEVICES=${DEVICES:-12}
DEVICE_SIZE=${DEVICE_SIZE:-4G}
DATA=${DATA:-8}
PARITY=${PARITY:-3}
BLOCK_SIZE=${BLOCK_SIZE:-1M}
OBJECT_SIZE=${OBJECT_SIZE:-64M}
OBJECTS=${OBJECTS:-70}
ROUNDS=${ROUNDS:-3}
READS=${READS:-8}
VICTIM=${VICTIM:-5}
BENCH_DIR=${BENCH_DIR:-/var/tmp}
KEEP=${KEEP:-0}
read -r -a EXTRA_ARGS <<<"${ECD_ARGS:-}"

die() {
  printf 'repair bench: FAIL: %s\n' "$*" >&2
  exit 1
}
note() { printf 'repair bench: %s\n' "$*" >&2; }

OBJECT_BYTES=$(numfmt --from=iec "$OBJECT_SIZE") || die "OBJECT_SIZE $OBJECT_SIZE is not a size"
BLOCK_BYTES=$(numfmt --from=iec "$BLOCK_SIZE") || die "BLOCK_SIZE $BLOCK_SIZE is not a size"
[ "$READS" -le "$OBJECTS" ] || READS=$OBJECTS
[ "$VICTIM" -lt "$DEVICES" ] || die "VICTIM $VICTIM is not one of the $DEVICES devices"

# ---- binaries

if [ -z "${ECD:-}" ] || [ -z "${ECTL:-}" ]; then
  BUILD_DIR=${BUILD_DIR:-$ROOT/build}
  if [ ! -f "$BUILD_DIR/build.ninja" ] && [ ! -f "$BUILD_DIR/Makefile" ]; then
    cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" \
      >/dev/null
  fi
  cmake --build "$BUILD_DIR" -j "${JOBS:-$(nproc)}" --target ecd ecctl >/dev/null ||
    die "build failed (cmake --build $BUILD_DIR --target ecd ecctl)"
  ECD=$BUILD_DIR/daemon/ecd
  ECTL=$BUILD_DIR/client/ecctl
fi
for b in "$ECD" "$ECTL"; do [ -x "$b" ] || die "binary not found: $b"; done
for t in python3 numfmt cmp; do command -v "$t" >/dev/null || die "$t not found"; done

# ---- work directory and ecd

mkdir -p "$BENCH_DIR"
WORK=$(mktemp -d "$BENCH_DIR/ecd-repair-bench.XXXXXX")
ECD_PID=""
cleanup() {
  local rc=$?
  if [ -n "$ECD_PID" ] && kill -0 "$ECD_PID" 2>/dev/null; then kill -9 "$ECD_PID" 2>/dev/null || true; fi
  if [ "$rc" -ne 0 ] && [ -f "$WORK/ecd.log" ]; then
    echo "--- ecd.log (tail)" >&2
    tail -n 20 "$WORK/ecd.log" >&2
  fi
  if [ "$KEEP" = 1 ]; then note "work directory kept: $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

start_ecd() {  # start_ecd DATA_DIR [flags...]
  local dir=$1
  shift
  rm -f "$WORK/ecd.port"
  "$ECD" --data-dir "$dir" --devices "$DEVICES" --device-size "$DEVICE_SIZE" \
    --listen 127.0.0.1:0 --port-file "$WORK/ecd.port" --unix-socket none --metrics-listen "" \
    --scrub-interval-hours 0 --log-level warn "${EXTRA_ARGS[@]}" "$@" >>"$WORK/ecd.log" 2>&1 &
  ECD_PID=$!
  for _ in $(seq 1 300); do
    if [ -s "$WORK/ecd.port" ]; then
      ADDR=127.0.0.1:$(cat "$WORK/ecd.port")
      if "$ECTL" --addr "$ADDR" device ls >/dev/null 2>&1; then return 0; fi
    fi
    kill -0 "$ECD_PID" 2>/dev/null || die "ecd exited during start-up"
    sleep 0.1
  done
  die "ecd did not answer within 30 s"
}
stop_ecd() {
  kill -TERM "$ECD_PID"
  local rc=0
  wait "$ECD_PID" || rc=$?
  ECD_PID=""
  [ "$rc" -eq 0 ] || die "ecd exited with $rc after SIGTERM"
}
ecctl() { "$ECTL" --addr "$ADDR" --quiet "$@"; }
now() { date +%s.%N; }
json() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }
degraded() { ecctl --json ls | json 'sum(int(o["degraded_stripes"]) + int(o["lost_stripes"]) for o in d["objects"])'; }
victim_blocks() {
  ecctl --json device ls | json "[x for x in d['devices'] if int(x.get('id', 0)) == $VICTIM][0]['blocks']"
}
name_of() { printf 'obj%03d' "$1"; }

# ---- the template store, encoded once

note "work directory $WORK; $OBJECTS objects of $OBJECT_SIZE at $DATA+$PARITY, $BLOCK_SIZE blocks, on $DEVICES devices of $DEVICE_SIZE"
head -c "$OBJECT_BYTES" /dev/urandom >"$WORK/src.bin"
start_ecd "$WORK/template"
t0=$(now)
for i in $(seq 0 $((OBJECTS - 1))); do
  ecctl encode "$WORK/src.bin" --name "$(name_of "$i")" --data "$DATA" --parity "$PARITY" \
    --block-size "$BLOCK_SIZE" >/dev/null || die "encode $(name_of "$i") failed"
done
t1=$(now)
LOST_BLOCKS=$(victim_blocks)
LOST_BYTES=$((LOST_BLOCKS * BLOCK_BYTES))
TOTAL_BLOCKS=$(ecctl --json device ls | json 'sum(int(x["blocks"]) for x in d["devices"])')
stop_ecd
note "encoded $OBJECTS objects in $(python3 -c "print(round($t1 - $t0, 1))") s: $TOTAL_BLOCKS blocks, $LOST_BLOCKS ($((LOST_BYTES >> 20)) MiB) on device $VICTIM"

fresh() {  # a fresh copy of the template store in $WORK/data
  rm -rf "$WORK/data"
  cp -a "$WORK/template" "$WORK/data"
  sync
}

# ---- rounds

A_TIMES=()
B_TIMES=()
A_BYTES=()
R_HEALTHY=()
R_PAUSED=()
R_DURING=()
R_OVERLAP=()

check_repaired() {  # after a repair: nothing degraded, the victim empty, one object byte-exact
  [ "$(degraded)" = 0 ] || die "$1: degraded stripes left: $(ecctl --json ls | head -c 300)"
  [ "$(victim_blocks)" = 0 ] || die "$1: device $VICTIM still holds blocks"
  ecctl read "$(name_of $((OBJECTS - 1)))" -o "$WORK/check.bin" >/dev/null
  cmp -s "$WORK/src.bin" "$WORK/check.bin" || die "$1: read back differs from the source"
}

round_a() {
  fresh
  start_ecd "$WORK/data" --repair-delay 0
  local t0 t1 queued
  t0=$(now)
  ecctl device fail "$VICTIM" >/dev/null
  while :; do
    queued=$(ecctl --json repair status | json 'd["stripes_queued"]')
    if [ "$queued" = 0 ] && [ "$(degraded)" = 0 ]; then break; fi
    kill -0 "$ECD_PID" 2>/dev/null || die "ecd died during the repair"
    sleep 0.1
  done
  t1=$(now)
  local bytes
  bytes=$(ecctl --json repair status | json 'd["bytes_repaired"]')
  check_repaired "automatic round"
  stop_ecd
  A_TIMES+=("$(python3 -c "print($t1 - $t0)")")
  A_BYTES+=("$bytes")
  note "A: automatic repair of $((LOST_BYTES >> 20)) MiB in $(python3 -c "print(round($t1 - $t0, 2))") s (status: $bytes bytes repaired)"
}

round_b() {
  fresh
  start_ecd "$WORK/data" --repair-delay 0
  ecctl repair pause >/dev/null
  local t0 t1 i
  t0=$(now)
  ecctl device fail "$VICTIM" >/dev/null
  for i in $(seq 0 $((OBJECTS - 1))); do
    ecctl recover --missing-only "$(name_of "$i")" >/dev/null || die "recover $(name_of "$i") failed"
  done
  t1=$(now)
  check_repaired "manual round"
  stop_ecd
  B_TIMES+=("$(python3 -c "print($t1 - $t0)")")
  note "B: manual recover --missing-only of $((LOST_BYTES >> 20)) MiB in $(python3 -c "print(round($t1 - $t0, 2))") s"
}

# read_set FIRST COUNT: reads objects FIRST.. (wrapping) to /dev/null; prints the seconds.
read_set() {
  local t0 t1 i
  t0=$(now)
  for i in $(seq "$1" $(($1 + $2 - 1))); do
    ecctl read "$(name_of $((i % OBJECTS)))" -o /dev/null >/dev/null || die "read failed"
  done
  t1=$(now)
  python3 -c "print($t1 - $t0)"
}

round_c() {
  fresh
  start_ecd "$WORK/data" --repair-delay 0
  local healthy paused during queued_after bytes=$((READS * OBJECT_BYTES))
  healthy=$(read_set 0 "$READS")
  ecctl repair pause >/dev/null
  ecctl device fail "$VICTIM" >/dev/null
  paused=$(read_set 0 "$READS")
  ecctl repair resume >/dev/null
  during=$(read_set 0 "$READS")
  queued_after=$(ecctl --json repair status | json 'd["stripes_queued"]')
  while [ "$(ecctl --json repair status | json 'd["stripes_queued"]')" != 0 ]; do sleep 0.2; done
  [ "$(degraded)" = 0 ] || die "read round: degraded stripes left"
  stop_ecd
  R_HEALTHY+=("$(python3 -c "print($bytes / $healthy / 1e6)")")
  R_PAUSED+=("$(python3 -c "print($bytes / $paused / 1e6)")")
  R_DURING+=("$(python3 -c "print($bytes / $during / 1e6)")")
  R_OVERLAP+=("$queued_after")
  note "C: reads healthy $(python3 -c "print(round($bytes / $healthy / 1e6))") MB/s, degraded paused $(python3 -c "print(round($bytes / $paused / 1e6))") MB/s, during the repair $(python3 -c "print(round($bytes / $during / 1e6))") MB/s ($queued_after stripes still queued when the reads ended)"
}

for r in $(seq 1 "$ROUNDS"); do
  note "round $r of $ROUNDS"
  round_a
  round_b
  round_c
done

# ---- the table

python3 - "$LOST_BYTES" "$LOST_BLOCKS" "$TOTAL_BLOCKS" "$BLOCK_BYTES" \
  "${A_TIMES[*]}" "${B_TIMES[*]}" "${R_HEALTHY[*]}" "${R_PAUSED[*]}" "${R_DURING[*]}" \
  "${R_OVERLAP[*]}" "$DEVICES" "$DEVICE_SIZE" "$DATA" "$PARITY" "$BLOCK_SIZE" "$OBJECTS" \
  "$OBJECT_SIZE" "$READS" <<'PY'
import statistics, sys
(lost, lost_blocks, total_blocks, block, a, b, rh, rp, rd, overlap, devices, dev_size, m, k,
 bs, objects, obj_size, reads) = sys.argv[1:]
lost = int(lost)
fl = lambda s: [float(x) for x in s.split()]
a, b, rh, rp, rd = fl(a), fl(b), fl(rh), fl(rp), fl(rd)
med = statistics.median
rate = lambda t: lost / t / 1e6
ra, rb = [rate(t) for t in a], [rate(t) for t in b]
f = lambda xs, n=1: ", ".join(f"{x:.{n}f}" for x in xs)
print()
print(f"Repair of one lost device: {devices} devices of {dev_size}, {objects} objects of {obj_size} "
      f"at {m}+{k}, {bs} blocks; {lost_blocks} blocks ({lost / 2**20:.0f} MiB) of {total_blocks} "
      f"on the lost device. Medians of {len(a)} alternating rounds; MB/s = 10^6 bytes/s.")
print()
print("| measure | rounds | median |")
print("|---|---|---|")
print(f"| A: automatic repair, fail to full redundancy (s) | {f(a, 2)} | {med(a):.2f} |")
print(f"| A: automatic repair rate (MB/s) | {f(ra)} | {med(ra):.1f} |")
print(f"| B: manual `recover --missing-only` per object (s) | {f(b, 2)} | {med(b):.2f} |")
print(f"| B: manual repair rate (MB/s) | {f(rb)} | {med(rb):.1f} |")
ratio = med(ra) / med(rb)
print(f"| A/B rate (target >= 0.9) | {f([x / y for x, y in zip(ra, rb)], 2)} | "
      f"**{ratio:.2f}** {'met' if ratio >= 0.9 else 'MISSED'} |")
print(f"| C: reads, healthy (MB/s, {reads} objects) | {f(rh)} | {med(rh):.1f} |")
print(f"| C: reads, device failed, repair paused (MB/s) | {f(rp)} | {med(rp):.1f} |")
print(f"| C: reads during the repair (MB/s) | {f(rd)} | {med(rd):.1f} |")
print(f"| C: during / paused | {f([x / y for x, y in zip(rd, rp)], 2)} | **{med(rd) / med(rp):.2f}** |")
print(f"| C: during / healthy | {f([x / y for x, y in zip(rd, rh)], 2)} | **{med(rd) / med(rh):.2f}** |")
print(f"| C: stripes still queued when the reads ended | {overlap.replace(' ', ', ')} | |")
PY
