#!/usr/bin/env bash
# bench/e2e.sh: ecd end to end beside its peers. On one generated file, in one run, it
# times `ecctl encode` (8+3, 1 MiB blocks), a clean `ecctl read`, a read with 3 devices failed
# and a rebuild (`ecctl recover --missing-only`) after failing 1 device, then a full `ecctl recover`
# after failing another. Beside them, on the same file system, it runs fio O_DIRECT sequential
# write and read of the same bytes, before and after every timed ecd phase (each ratio is to the
# fio passes around its phase, as the disk's speed wanders), fio's read again with 1/8 as many
# bytes written beside it (the disk traffic of a rebuild), the same `ecctl encode` and `ecctl
# read` against a gRPC null sink (bench/grpc_null_sink: the transport's ceiling both ways), zfec
# and pyeclib encoding the file 8+3 (in memory, and again writing their 11 shares to the disk),
# and par2 creating 37.5% redundancy (on a file over 256 MiB, its time projected from 64 and 256
# MiB slices unless the whole file would take under a minute). It prints a table of MB/s (10^6
# bytes/s), ratios and their targets, and ecd's peak RSS. Every read is timed to /dev/null
# (fio's read also discards its bytes), then repeated into a pipe to cksum and checked against
# the source file (CRC and length); the piped reads have their own row.
# The source file is kept in memory (tmpfs) when there is room, so that encode's disk traffic is
# its writes alone, as the encode target (fio write x 8/11) counts it; one more encode reads a
# copy on the disk, and its row says what reading the source from the same disk costs.
#
# Usage: bench/e2e.sh [--size 1G] [--json FILE] [--quick] [--dir DIR] [--source-dir DIR] [--keep]
#                     [--ecd BIN --ecctl BIN --null-sink BIN] [--memory-limit 512M]
#                     [--ecd-arg ARG]...
#   --size          bytes of the file (K/M/G suffixes, a multiple of 1 MiB; default 1G)
#   --json FILE     also write the results as JSON
#   --quick         smoke mode: checks every byte and prints the table, but a MISS does not fail
#   --dir DIR       where the work directory goes (default $E2E_DIR or /var/tmp); fio's file and
#                   ecd's devices share it
#   --source-dir DIR  where the source file goes (default /dev/shm when it is tmpfs with room
#                   for it, else the work directory)
#   --ecd/--ecctl/--null-sink  binaries to use; without them, the targets are built in
#                   $BUILD_DIR (default build/) after scripts/install-deps.sh
#   --memory-limit  ecd's --memory-limit, which its peak RSS is checked against (default 512M)
#   --ecd-arg ARG   an extra flag for ecd (repeatable)
#   --keep          keep the work directory
# Exit: 0 done (and, without --quick, every target met); 1 a check failed (bytes, an ecctl
# error, a tool missing); 4 every check passed but some target was missed (without --quick).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
SIZE_TEXT=1G
JSON_OUT=""
QUICK=0
KEEP=0
BASE=${E2E_DIR:-/var/tmp}
SOURCE_BASE=""
ECD=""
ECTL=""
SINK=""
MEMORY_LIMIT_TEXT=512M
ECD_ARGS=()
PY=${E2E_PYTHON:-/usr/bin/python3}  # Debian's python3: zfec and pyeclib are Debian packages.
M=8
K=3
BLOCK=$((1 << 20))
DEVICES=12

die() {
  printf 'e2e: FAIL: %s\n' "$*" >&2
  exit 1
}
usage() {
  sed -n '/^# Usage:/,/^# Exit:/p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

while [ $# -gt 0 ]; do
  case "$1" in
  --size) SIZE_TEXT=$2; shift 2 ;;
  --json) JSON_OUT=$2; shift 2 ;;
  --quick) QUICK=1; shift ;;
  --dir) BASE=$2; shift 2 ;;
  --source-dir) SOURCE_BASE=$2; shift 2 ;;
  --keep) KEEP=1; shift ;;
  --ecd) ECD=$2; shift 2 ;;
  --ecctl) ECTL=$2; shift 2 ;;
  --null-sink) SINK=$2; shift 2 ;;
  --memory-limit) MEMORY_LIMIT_TEXT=$2; shift 2 ;;
  --ecd-arg) ECD_ARGS+=("$2"); shift 2 ;;
  -h | --help) usage ;;
  *) printf 'e2e: unknown argument %s\n' "$1" >&2; usage ;;
  esac
done

SIZE=$(numfmt --from=iec "$SIZE_TEXT" 2>/dev/null) || die "--size $SIZE_TEXT is not a size"
MEMORY_LIMIT=$(numfmt --from=iec "$MEMORY_LIMIT_TEXT" 2>/dev/null) ||
  die "--memory-limit $MEMORY_LIMIT_TEXT is not a size"
if [ "$SIZE" -lt "$BLOCK" ] || [ $((SIZE % BLOCK)) -ne 0 ]; then
  die "--size must be a positive multiple of 1 MiB (fio and par2 use 1 MiB blocks)"
fi
if [ -n "$JSON_OUT" ]; then JSON_OUT=$(realpath -m "$JSON_OUT"); fi

# ---- binaries and tools

if [ -z "$ECD$ECTL$SINK" ]; then
  BUILD_DIR=${BUILD_DIR:-$ROOT/build}
  bash "$ROOT/scripts/install-deps.sh" >/dev/null
  if [ ! -f "$BUILD_DIR/build.ninja" ]; then
    cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" \
      >/dev/null
  fi
  cmake --build "$BUILD_DIR" -j "${JOBS:-$(nproc)}" --target ecd ecctl grpc_null_sink >/dev/null
  ECD=$BUILD_DIR/daemon/ecd
  ECTL=$BUILD_DIR/client/ecctl
  SINK=$BUILD_DIR/bench/grpc_null_sink
fi
for b in "$ECD" "$ECTL" "$SINK"; do
  [ -x "$b" ] || die "binary not found: '$b' (give all of --ecd, --ecctl and --null-sink, or none)"
done
for t in fio par2 cksum findmnt; do
  command -v "$t" >/dev/null || die "$t not found (scripts/install-deps.sh installs it)"
done
"$PY" -c 'import zfec, pyeclib.ec_iface' 2>/dev/null ||
  die "$PY cannot import zfec and pyeclib (apt-get install python3-zfec python3-pyeclib)"

# ---- work directory, file system, page cache

mkdir -p "$BASE"
WORK=$(mktemp -d "$BASE/ecd-e2e.XXXXXX")
SOURCE_DIR=""
ECD_PID=""
SINK_PID=""
cleanup() {
  local rc=$?
  for pid in "$ECD_PID" "$SINK_PID"; do
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then kill -9 "$pid" 2>/dev/null || true; fi
  done
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 4 ] && [ -f "$WORK/ecd.log" ]; then
    echo "--- ecd.log (tail)" >&2
    tail -n 20 "$WORK/ecd.log" >&2
  fi
  if [ -n "$SOURCE_DIR" ] && [ "$SOURCE_DIR" != "$WORK" ]; then rm -rf "$SOURCE_DIR"; fi
  if [ "$KEEP" -eq 1 ]; then echo "e2e: work directory kept: $WORK" >&2; else rm -rf "$WORK"; fi
}
trap cleanup EXIT

FS_TYPE=$(findmnt -n -o FSTYPE -T "$WORK")
FS_SOURCE=$(findmnt -n -o SOURCE -T "$WORK")
FS_TARGET=$(findmnt -n -o TARGET -T "$WORK")
case "$FS_TYPE" in
tmpfs | ramfs) echo "e2e: warning: $WORK is on $FS_TYPE (memory): use --dir on a real disk" >&2 ;;
esac

# Dropping needs root, and a container may refuse it even then: try once.
DROP=no
if [ "$(id -u)" -eq 0 ] && sync && (echo 3 >/proc/sys/vm/drop_caches) 2>/dev/null; then DROP=yes; fi
drop_caches() {
  sync
  if [ "$DROP" = yes ]; then echo 3 >/proc/sys/vm/drop_caches; fi
}

now_ns() { date +%s%N; }
# secs T0 T1: seconds between two now_ns stamps.
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.6f", (b - a) / 1e9 }'; }
# mbps BYTES SECONDS: 10^6 bytes per second.
mbps() { awk -v n="$1" -v s="$2" 'BEGIN { printf "%.1f", n / s / 1e6 }'; }

echo "e2e: $(numfmt --to=iec "$SIZE") file, ${M}+${K}, $((BLOCK >> 20)) MiB blocks, $DEVICES devices"
echo "e2e: work dir $WORK on $FS_TYPE ($FS_SOURCE mounted at $FS_TARGET)"
if [ "$DROP" = yes ]; then
  echo "e2e: page cache dropped between phases: yes"
else
  echo "e2e: page cache dropped between phases: no (not root, or refused: reads may come from memory)"
fi
CPU=$(lscpu | sed -n 's/^Model name: *//p' | head -1)
echo "e2e: cpu: $CPU, $(nproc) cores; load: $(cut -d' ' -f1-3 /proc/loadavg)"
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)

# ---- the source file

# In memory when /dev/shm is tmpfs with room for it and 1 GiB more, so that encodes read no disk.
if [ -z "$SOURCE_BASE" ]; then
  SOURCE_BASE=$WORK
  if [ "$(stat -f -c %T /dev/shm 2>/dev/null)" = tmpfs ] &&
    [ "$(df -B1 --output=avail /dev/shm | tail -1)" -gt $((SIZE + (1 << 30))) ]; then
    SOURCE_BASE=/dev/shm
  fi
fi
if [ "$SOURCE_BASE" = "$WORK" ]; then
  SOURCE_DIR=$WORK
else
  SOURCE_DIR=$(mktemp -d "$SOURCE_BASE/ecd-e2e-source.XXXXXX")
fi
SRC=$SOURCE_DIR/source.bin
SRC_FS=$(stat -f -c %T "$SOURCE_DIR")
echo "e2e: source file in $SOURCE_DIR ($SRC_FS)"
head -c "$SIZE" /dev/urandom | tee "$SRC" | cksum | awk '{ print $1, $2 }' >"$WORK/source.cksum"
[ "$(stat -c %s "$SRC")" -eq "$SIZE" ] || die "could not write $SIZE bytes to $SRC"
# The same bytes on the disk (the work directory), for the encode that reads its source there.
SRC_ON_DISK=$SRC
if [ "$SOURCE_DIR" != "$WORK" ]; then
  SRC_ON_DISK=$WORK/source.bin
  cp "$SRC" "$SRC_ON_DISK"
fi
SRC_SUM=$(cat "$WORK/source.cksum")

# ---- fio

FIO_ENGINE=io_uring
# fio_json TAG JOB...: drops the page cache and runs fio's JOB options, O_DIRECT in 1 MiB blocks,
# its JSON report in $WORK/fio-TAG.json; a failed fio ends the run.
fio_json() {
  local tag=$1
  shift
  drop_caches
  fio --ioengine="$FIO_ENGINE" --direct=1 --bs=1M --output-format=json "$@" \
    >"$WORK/fio-$tag.json" 2>"$WORK/fio-$tag.err" || {
    cat "$WORK/fio-$tag.err" >&2
    die "fio $tag failed"
  }
}
# fio_run write|read: one sequential pass of $SIZE bytes over $WORK/fio.bin at iodepth 16;
# prints fio's own bandwidth in MB/s. A write starts from a fresh file (allocating writes, as
# ecd's sparse namespaces are) and ends with an fsync.
fio_run() {
  local rw=$1 extra=()
  if [ "$rw" = write ]; then
    rm -f "$WORK/fio.bin"
    extra=(--end_fsync=1)
  fi
  fio_json "$rw" --name="e2e-$rw" --filename="$WORK/fio.bin" --rw="$rw" --iodepth=16 \
    --size="$SIZE" "${extra[@]}"
  "$PY" -c 'import json,sys; j=json.load(open(sys.argv[1]))["jobs"][0][sys.argv[2]]
print("%.1f" % (j["bw_bytes"] / 1e6))' "$WORK/fio-$rw.json" "$rw"
}
# fio_mix: the rebuild's own mix of disk traffic. Reads $SIZE bytes of $WORK/fio.bin (as fio_run
# read) while a second job writes 1/M as many to a fresh file (allocating, as a rebuild's new
# blocks are, with an fsync at the end), at once; prints the read bytes over the time until
# both are done, in MB/s: what the disk gives a rebuild that reads M blocks for each one it
# writes, counted as the rebuild's `bytes rebuilt x M` is.
fio_mix() {
  rm -f "$WORK/fio-mix.bin"
  fio_json mix --name=e2e-mix-read --filename="$WORK/fio.bin" --rw=read --iodepth=16 \
    --size="$SIZE" --name=e2e-mix-write --filename="$WORK/fio-mix.bin" --rw=write --iodepth=2 \
    --size=$((SIZE / M)) --end_fsync=1
  rm -f "$WORK/fio-mix.bin"
  "$PY" -c 'import json,sys; jobs=json.load(open(sys.argv[1]))["jobs"]
ms = max(j["job_runtime"] for j in jobs)
print("%.1f" % (jobs[0]["read"]["io_bytes"] / (ms / 1e3) / 1e6))' "$WORK/fio-mix.json"
}
if ! fio --name=probe --filename="$WORK/probe" --size=1M --bs=1M --ioengine=io_uring --direct=1 \
  --rw=write >/dev/null 2>&1; then
  FIO_ENGINE=libaio
fi
rm -f "$WORK/probe"

# ---- ecd and the null sink

# Room for 11/8 of the file twice over (recover writes copies), at least 64 MiB a device.
DEVICE_MB=$(((SIZE * 11 * 2 / 8 / DEVICES >> 20) + 64))

start_ecd() {
  "$ECD" --data-dir "$WORK/ecd" --devices "$DEVICES" --device-size "${DEVICE_MB}M" \
    --listen 127.0.0.1:0 --port-file "$WORK/ecd.port" --unix-socket none --metrics-listen "" \
    --scrub-interval-hours 0 --log-level warn --memory-limit "$MEMORY_LIMIT_TEXT" \
    "${ECD_ARGS[@]}" >>"$WORK/ecd.log" 2>&1 &
  ECD_PID=$!
  for _ in $(seq 1 200); do
    if [ -s "$WORK/ecd.port" ]; then
      ADDR=127.0.0.1:$(cat "$WORK/ecd.port")
      # The rebuild rows time `recover --missing-only`: the automatic repair stays paused.
      if "$ECTL" --addr "$ADDR" repair pause >/dev/null 2>&1; then return 0; fi
    fi
    kill -0 "$ECD_PID" 2>/dev/null || die "ecd exited during start-up"
    sleep 0.1
  done
  die "ecd did not answer within 20 s"
}
stop_ecd() {
  kill -TERM "$ECD_PID"
  local rc=0
  wait "$ECD_PID" || rc=$?
  ECD_PID=""
  [ "$rc" -eq 0 ] || die "ecd exited with $rc after SIGTERM"
}
ecctl() { "$ECTL" --addr "$ADDR" --quiet "$@"; }
# jget FILE EXPR: a Python expression on the JSON document in FILE (as d).
jget() { "$PY" -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }

start_sink() {
  "$SINK" --listen 127.0.0.1:0 --port-file "$WORK/sink.port" 2>>"$WORK/sink.log" &
  SINK_PID=$!
  for _ in $(seq 1 100); do
    if [ -s "$WORK/sink.port" ]; then
      SINK_ADDR=127.0.0.1:$(cat "$WORK/sink.port")
      return 0
    fi
    kill -0 "$SINK_PID" 2>/dev/null || die "grpc_null_sink exited during start-up"
    sleep 0.1
  done
  die "grpc_null_sink did not start within 10 s"
}

# timed_encode ADDR NAME TAG [FILE]: encodes FILE (default the source file) as NAME; prints the
# seconds; checks the size committed (the response is kept in encode-TAG.json).
timed_encode() {
  local addr=$1 name=$2 out=$WORK/encode-$3.json file=${4:-$SRC} t0 t1
  drop_caches
  t0=$(now_ns)
  "$ECTL" --addr "$addr" --quiet --json encode "$file" --name "$name" --data "$M" --parity "$K" \
    --block-size 1M >"$out" || die "encode $name at $addr failed"
  t1=$(now_ns)
  [ "$(jget "$out" "d['object']['size']")" = "$SIZE" ] ||
    die "encode $name at $addr committed a size other than $SIZE"
  secs "$t0" "$t1"
}

# timed_read TAG: reads the object to /dev/null, as fio's read discards what it reads, then
# once more into a pipe to cksum, checking the bytes against the source's; prints "seconds
# reconstructed_blocks piped_seconds" (the second read's time, which counts the pipe and cksum).
timed_read() {
  local tag=$1 t0 t1 t2 t3 sum
  drop_caches
  t0=$(now_ns)
  ecctl --json read e2e -o /dev/null >"$WORK/read-$tag.json" ||
    die "read ($tag) failed: $(cat "$WORK/read-$tag.json")"
  t1=$(now_ns)
  [ "$(jget "$WORK/read-$tag.json" "d['bytes']")" = "$SIZE" ] ||
    die "read ($tag) returned a byte count other than $SIZE"
  drop_caches
  t2=$(now_ns)
  sum=$(ecctl --json read e2e -o - 2>"$WORK/read-$tag-piped.json" | cksum | awk '{ print $1, $2 }') ||
    die "read ($tag, piped) failed: $(cat "$WORK/read-$tag-piped.json")"
  t3=$(now_ns)
  [ "$sum" = "$SRC_SUM" ] || die "read ($tag): cksum '$sum' is not the source's '$SRC_SUM'"
  echo "$(secs "$t0" "$t1") $(jget "$WORK/read-$tag.json" "d['reconstructed_blocks']")" \
    "$(secs "$t2" "$t3")"
}

# timed_sink_read TAG: reads the object the null sink was sent (its bytes are zeros) to
# /dev/null; prints seconds.
timed_sink_read() {
  local tag=$1 t0 t1
  drop_caches
  t0=$(now_ns)
  "$ECTL" --addr "$SINK_ADDR" --quiet --json read e2e -o /dev/null >"$WORK/sink-read-$tag.json" ||
    die "read from the null sink ($tag) failed: $(cat "$WORK/sink-read-$tag.json")"
  t1=$(now_ns)
  [ "$(jget "$WORK/sink-read-$tag.json" "d['bytes']")" = "$SIZE" ] ||
    die "read from the null sink ($tag) returned a byte count other than $SIZE"
  secs "$t0" "$t1"
}

# The devices that hold data blocks INDEX... of stripe 0.
devices_of() {
  ecctl --json stat e2e --blocks >"$WORK/stat.json"
  "$PY" - "$WORK/stat.json" "$@" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
s = [s for s in d["object"]["stripes"] if int(s["index"]) == 0][0]
want = [int(i) for i in sys.argv[2:]]
print(" ".join(str(b["device"]) for b in s["blocks"] if int(b["index"]) in want))
PY
}

# ---- the run: fio and ecd phases interleaved

# Every ecd phase with a target runs between two fio passes of its kind, and its reference is
# the mean of those two: a disk's speed can wander by the minute, and a ratio to passes taken
# far from the phase would measure the wandering.
echo "e2e: fio write (1/4)"
FIO_W1=$(fio_run write)
start_ecd
# Encode and the null sink run twice each, alternating; the second object is deleted at once.
start_sink
echo "e2e: ecd encode (1/2)"
T_ENCODE1=$(timed_encode "$ADDR" e2e ecd1)
echo "e2e: null sink encode (1/2)"
T_SINK1=$(timed_encode "$SINK_ADDR" e2e sink1)
echo "e2e: fio write (2/4)"
FIO_W2=$(fio_run write)
echo "e2e: ecd encode (2/2)"
T_ENCODE2=$(timed_encode "$ADDR" e2e-2 ecd2)
ecctl rm e2e-2 >/dev/null
echo "e2e: null sink encode (2/2)"
T_SINK2=$(timed_encode "$SINK_ADDR" e2e sink2)
echo "e2e: fio write (3/4)"
FIO_W3=$(fio_run write)
echo "e2e: ecd encode, the source read from the disk ($SRC_ON_DISK)"
T_ENCODE_DISK=$(timed_encode "$ADDR" e2e-3 disk "$SRC_ON_DISK")
ecctl rm e2e-3 >/dev/null
echo "e2e: fio write (4/4)"
FIO_W4=$(fio_run write)
echo "e2e: fio read (1/5)"
FIO_R1=$(fio_run read)

# Clean and degraded reads run twice each, alternating (clean, degraded, clean, degraded), and
# their rows are the mean of the two passes, as fio's are.
R=$(devices_of 0 1 2)
read -r -a FAILED3 <<<"$R"
[ "${#FAILED3[@]}" -eq 3 ] || die "could not find the devices of stripe 0's data blocks 0-2"
T_READS=()
T_DEGRADEDS=()
T_PIPED=()
T_SINK_READS=()
FIO_RS=("$FIO_R1")
for pass in 1 2; do
  echo "e2e: ecd read ($pass/2)"
  R=$(timed_read "clean$pass")
  read -r t recon piped <<<"$R"
  [ "$recon" -eq 0 ] || die "a clean read reconstructed $recon blocks"
  T_READS+=("$t")
  T_PIPED+=("$piped")
  for dev in "${FAILED3[@]}"; do ecctl device fail "$dev" >/dev/null; done
  echo "e2e: ecd degraded read ($pass/2, devices ${FAILED3[*]} failed)"
  R=$(timed_read "degraded$pass")
  read -r t RECON_DEGRADED _ <<<"$R"
  [ "$RECON_DEGRADED" -gt 0 ] || die "the degraded read reconstructed no block"
  T_DEGRADEDS+=("$t")
  for dev in "${FAILED3[@]}"; do ecctl device online "$dev" >/dev/null; done
  echo "e2e: null sink read ($pass/2)"
  T_SINK_READS+=("$(timed_sink_read "$pass")")
  echo "e2e: fio read ($((pass + 1))/5)"
  FIO_RS+=("$(fio_run read)")
done
FIO_R2=${FIO_RS[1]}
FIO_R3=${FIO_RS[2]}
kill -TERM "$SINK_PID"
wait "$SINK_PID" || die "grpc_null_sink did not stop cleanly"
SINK_PID=""

FAILED1=$(devices_of 0)
ecctl device fail "$FAILED1" >/dev/null
# timed_recover TAG [FLAG]: runs `ecctl recover [FLAG] e2e`; prints seconds, blocks rebuilt,
# bytes rebuilt and blocks read.
timed_recover() {
  local tag=$1 t0 t1
  shift
  drop_caches
  t0=$(now_ns)
  ecctl --json recover "$@" e2e >"$WORK/recover-$tag.json" || die "recover ($tag) failed"
  t1=$(now_ns)
  echo "$(secs "$t0" "$t1") $(jget "$WORK/recover-$tag.json" "d['blocks_rebuilt']")" \
    "$(jget "$WORK/recover-$tag.json" "d['bytes_rebuilt']")" \
    "$(jget "$WORK/recover-$tag.json" "d['blocks_checked']")"
}
echo "e2e: ecd rebuild, recover --missing-only (device $FAILED1 failed)"
read -r T_RECOVER BLOCKS_REBUILT BYTES_REBUILT BLOCKS_READ <<<"$(timed_recover rebuild --missing-only)"
[ "$BYTES_REBUILT" -gt 0 ] || die "the rebuild rebuilt nothing"
echo "e2e: fio read (4/5)"
FIO_R4=$(fio_run read)
echo "e2e: ecd read after the rebuild (device $FAILED1 still failed)"
R=$(timed_read recovered)
read -r T_AFTER RECON_AFTER _ <<<"$R"
[ "$RECON_AFTER" -eq 0 ] || die "after the rebuild, a read still reconstructed $RECON_AFTER blocks"
# The same with a recover that reads and checks every block (the operator's default). The
# rebuilt device comes back empty, as a spare: 8+3 on 12 devices needs 11 online.
ecctl device online "$FAILED1" >/dev/null
FAILED2=$(devices_of 1)
ecctl device fail "$FAILED2" >/dev/null
echo "e2e: ecd recover, checking every block (device $FAILED2 failed)"
read -r T_CHECKED BLOCKS_CHECKED_REBUILT BYTES_CHECKED_REBUILT BLOCKS_CHECKED <<<"$(timed_recover full)"
[ "$BYTES_CHECKED_REBUILT" -gt 0 ] || die "the full recover rebuilt nothing"

echo "e2e: fio read with writes beside it (the rebuild's mix)"
FIO_MIX=$(fio_mix)
echo "e2e: fio read (5/5)"
FIO_R5=$(fio_run read)

RSS_KB=$(awk '/^VmHWM:/ { print $2 }' "/proc/$ECD_PID/status")
stop_ecd
rm -rf "$WORK/ecd" "$WORK/fio.bin"

# ---- peers: zfec and pyeclib (file read and encoded in one process; parity discarded), and the
# same with their shares written to the disk and fsynced, as ecd's are

# peer zfec|pyeclib: prints "MB/s backend".
# With a DIR, the peer also does the rest of ecd's job: it writes its M+K shares to M+K files in
# DIR (share i of every stripe appended to file i, as zfec's own command writes .fec files) and
# fsyncs them before the clock stops; the files are removed afterwards.
peer() {
  drop_caches
  "$PY" - "$1" "$SRC" "$M" "$K" "$BLOCK" "${2:-}" <<'PY'
import os, sys, time
which, path, m, k, block = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
share_dir = sys.argv[6]
stripe = m * block
if which == "zfec":
    import zfec
    enc = zfec.Encoder(m, m + k)
    backend = "zfec %s" % zfec.__version__
    def encode(buf):
        if len(buf) < stripe:
            buf = buf + b"\0" * (stripe - len(buf))
        view = memoryview(buf)
        data = [view[i * block:(i + 1) * block] for i in range(m)]
        return data + enc.encode(data, list(range(m, m + k)))
else:
    from pyeclib.ec_iface import ECDriver
    try:
        enc = ECDriver(k=m, m=k, ec_type="isa_l_rs_cauchy")
        backend = "isa_l_rs_cauchy"
    except Exception:
        enc = ECDriver(k=m, m=k, ec_type="liberasurecode_rs_vand")
        backend = "liberasurecode_rs_vand (isa_l_rs_cauchy unavailable)"
    def encode(buf):
        return enc.encode(buf)
names = [os.path.join(share_dir, "share.%d" % i) for i in range(m + k)] if share_dir else []
total = 0
t0 = time.perf_counter()
shares = [open(n, "wb") for n in names]
with open(path, "rb", buffering=0) as f:
    while True:
        buf = f.read(stripe)
        if not buf:
            break
        out = encode(buf)
        assert len(out) == m + k
        for share, piece in zip(shares, out):
            share.write(piece)
        total += len(buf)
for share in shares:
    share.flush()
    os.fsync(share.fileno())
    share.close()
elapsed = time.perf_counter() - t0
for n in names:
    os.remove(n)
print("%.1f %s" % (total / elapsed / 1e6, backend))
PY
}
ZFECS=()
PYECLIBS=()
ZFECS_W=()
PYECLIBS_W=()
mkdir -p "$WORK/shares"
for pass in 1 2; do
  echo "e2e: zfec ($pass/2)"
  R=$(peer zfec)
  read -r rate ZFEC_BACKEND <<<"$R"
  ZFECS+=("$rate")
  echo "e2e: pyeclib ($pass/2)"
  R=$(peer pyeclib)
  read -r rate PYECLIB_BACKEND <<<"$R"
  PYECLIBS+=("$rate")
  echo "e2e: zfec writing its shares ($pass/2)"
  R=$(peer zfec "$WORK/shares")
  ZFECS_W+=("${R%% *}")
  echo "e2e: pyeclib writing its shares ($pass/2)"
  R=$(peer pyeclib "$WORK/shares")
  PYECLIBS_W+=("${R%% *}")
done

# ---- par2: 3/8 redundancy (37.5%), 1 MiB blocks. Every par2 recovery block depends on every
# source block, so at a fixed block size its time grows with bytes x recovery blocks, the square
# of the size, as the work per byte fades beside it.
# A file of up to 256 MiB is run whole. For a larger one, par2 runs on two slices, 64 and 256
# MiB, and its time for the whole file is projected by fitting t = a n + b n^2 through them (a:
# the work per byte, reading, hashing and writing; b: the products); the whole file is run
# instead when that projection is under a minute (never with --quick). The fit errs on par2's
# side (it projects par2 faster than it runs), so ecd's ratio to it is on the strict side.
# Dividing the slice's time by its size instead (MB/s of the slice) would make par2 several
# times faster on a large file than it is.

# par2_run FILE: prints the seconds par2 takes to create the recovery files of FILE.
par2_run() {
  local file=$1 bytes blocks t0 t1
  bytes=$(stat -c %s "$file")
  blocks=$(((bytes + BLOCK - 1) / BLOCK))
  drop_caches
  t0=$(now_ns)
  par2 create -q -q -s"$BLOCK" -c$(((blocks * 3 + 7) / 8)) -n1 "$file" >"$WORK/par2.log" 2>&1 ||
    die "par2 create failed: $(cat "$WORK/par2.log")"
  t1=$(now_ns)
  rm -f "$file".par2 "$file".vol*.par2
  secs "$t0" "$t1"
}
# par2_project SMALL_BYTES SMALL_SECONDS LARGE_BYTES LARGE_SECONDS BYTES: par2's seconds on
# BYTES, fitted through the two slices' times (bench/par2_project.awk).
par2_project() {
  awk -v x1="$1" -v t1="$2" -v x2="$3" -v t2="$4" -v n="$5" -f "$ROOT/bench/par2_project.awk"
}
PAR2_SMALL=$((64 << 20))
PAR2_LARGE=$((256 << 20))
PAR2_SLICE_SECONDS=()
echo "e2e: par2"
if [ "$SIZE" -le "$PAR2_LARGE" ]; then
  T_PAR2=$(par2_run "$SRC")
  PAR2_METHOD="whole file"
else
  for slice in "$PAR2_SMALL" "$PAR2_LARGE"; do
    head -c "$slice" "$SRC" >"$WORK/slice.bin"
    PAR2_SLICE_SECONDS+=("$(par2_run "$WORK/slice.bin")")
  done
  rm -f "$WORK/slice.bin"
  T_PAR2=$(par2_project "$PAR2_SMALL" "${PAR2_SLICE_SECONDS[0]}" "$PAR2_LARGE" \
    "${PAR2_SLICE_SECONDS[1]}" "$SIZE")
  PAR2_METHOD="projected from 64 and 256 MiB slices"
  if [ "$QUICK" -eq 0 ] && awk -v t="$T_PAR2" 'BEGIN { exit !(t <= 60) }'; then
    T_PAR2=$(par2_run "$SRC")
    PAR2_METHOD="whole file"
  fi
fi
PAR2_BYTES=$SIZE
PAR2=$(mbps "$PAR2_BYTES" "$T_PAR2")

# ---- results

mean() { awk 'BEGIN { for (i = 1; i < ARGC; i++) s += ARGV[i]; printf "%.1f", s / (ARGC - 1) }' "$@"; }
ENCODE1=$(mbps "$SIZE" "$T_ENCODE1")
ENCODE2=$(mbps "$SIZE" "$T_ENCODE2")
ENCODE=$(mean "$ENCODE1" "$ENCODE2")
ENCODE_DISK=$(mbps "$SIZE" "$T_ENCODE_DISK")
SINK1=$(mbps "$SIZE" "$T_SINK1")
SINK2=$(mbps "$SIZE" "$T_SINK2")
SINKRATE=$(mean "$SINK1" "$SINK2")
SINK_READ1=$(mbps "$SIZE" "${T_SINK_READS[0]}")
SINK_READ2=$(mbps "$SIZE" "${T_SINK_READS[1]}")
SINK_READ=$(mean "$SINK_READ1" "$SINK_READ2")
READ1=$(mbps "$SIZE" "${T_READS[0]}")
READ2=$(mbps "$SIZE" "${T_READS[1]}")
READ=$(mean "$READ1" "$READ2")
PIPED=$(mean "$(mbps "$SIZE" "${T_PIPED[0]}")" "$(mbps "$SIZE" "${T_PIPED[1]}")")
DEGRADED1=$(mbps "$SIZE" "${T_DEGRADEDS[0]}")
DEGRADED2=$(mbps "$SIZE" "${T_DEGRADEDS[1]}")
DEGRADED=$(mean "$DEGRADED1" "$DEGRADED2")
ZFEC=$(mean "${ZFECS[@]}")
PYECLIB=$(mean "${PYECLIBS[@]}")
ZFEC_W=$(mean "${ZFECS_W[@]}")
PYECLIB_W=$(mean "${PYECLIBS_W[@]}")
AFTER=$(mbps "$SIZE" "$T_AFTER")
REBUILD=$(mbps $((BYTES_REBUILT * M)) "$T_RECOVER")
CHECKED=$(mbps $((BYTES_CHECKED_REBUILT * M)) "$T_CHECKED")
ec_share() { awk -v w="$1" -v m="$M" -v k="$K" 'BEGIN { printf "%.1f", w * m / (m + k) }'; }
FIO_W=$(mean "$FIO_W1" "$FIO_W2" "$FIO_W3" "$FIO_W4")
FIO_R=$(mean "$FIO_R1" "$FIO_R2" "$FIO_R3" "$FIO_R4" "$FIO_R5")
# The references: fio around each pass (two passes: the mean of both pairs).
FIO_W_EC=$(ec_share "$(mean "$FIO_W1" "$FIO_W2" "$FIO_W2" "$FIO_W3")")
FIO_W_EC_DISK=$(ec_share "$(mean "$FIO_W3" "$FIO_W4")")
FIO_R_READS=$(mean "$FIO_R1" "$FIO_R2" "$FIO_R2" "$FIO_R3")
FIO_R_REBUILD=$(mean "$FIO_R3" "$FIO_R4")
FIO_R_AFTER=$(mean "$FIO_R4" "$FIO_R5")
RSS_MB=$(awk -v kb="$RSS_KB" 'BEGIN { printf "%.1f", kb / 1024 }')
LIMIT_MB=$(awk -v b="$MEMORY_LIMIT" 'BEGIN { printf "%.1f", b / 1048576 }')
LOAD_END=$(cut -d' ' -f1-3 /proc/loadavg)

MISSES=0
ROWS=$WORK/rows.tsv
: >"$ROWS"
# row NAME VALUE UNIT REFERENCE_NAME REFERENCE_VALUE OP TARGET: one line of the table; OP is >=
# or <, and "-" for a row with no target.
row() {
  local name=$1 value=$2 unit=$3 ref_name=$4 ref=$5 op=$6 target=$7 ratio result
  ratio="-"
  if [ "$ref" != "-" ]; then
    ratio=$(awk -v v="$value" -v r="$ref" 'BEGIN { printf "%.3f", v / r }')
  fi
  if [ "$op" = "-" ]; then
    result="-"
  elif awk -v x="$ratio" -v t="$target" -v op="$op" 'BEGIN { exit !((op == ">=") ? x >= t : x < t) }'; then
    result=PASS
  else
    result=MISS
    MISSES=$((MISSES + 1))
  fi
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$value" "$unit" "$ref_name" "$ref" \
    "$ratio" "$op" "$target" "$result" >>"$ROWS"
}
row "fio write (O_DIRECT, 1M, QD16, $FIO_ENGINE), mean of 4 passes" "$FIO_W" MB/s - - - - -
row "fio read (O_DIRECT, 1M, QD16, $FIO_ENGINE), mean of 5 passes" "$FIO_R" MB/s - - - - -
row "fio read, 1/8 as many bytes written beside it" "$FIO_MIX" MB/s - - - - -
row "grpc null sink (ecctl encode)" "$SINKRATE" MB/s - - - - -
row "grpc null sink (ecctl read)" "$SINK_READ" MB/s - - - - -
row "zfec 8+3 ($ZFEC_BACKEND)" "$ZFEC" MB/s - - - - -
row "pyeclib 8+3 ($PYECLIB_BACKEND)" "$PYECLIB" MB/s - - - - -
row "zfec 8+3, writing its 11 shares to the disk (fsync)" "$ZFEC_W" MB/s - - - - -
row "pyeclib 8+3, writing its 11 shares to the disk (fsync)" "$PYECLIB_W" MB/s - - - - -
if [ "${#PAR2_SLICE_SECONDS[@]}" -eq 2 ]; then
  row "par2 create 37.5%, 64 MiB slice" "$(mbps "$PAR2_SMALL" "${PAR2_SLICE_SECONDS[0]}")" MB/s - - - - -
  row "par2 create 37.5%, 256 MiB slice" "$(mbps "$PAR2_LARGE" "${PAR2_SLICE_SECONDS[1]}")" MB/s - - - - -
fi
row "par2 create 37.5% ($PAR2_METHOD)" "$PAR2" MB/s - - - - -
row "ecd encode" "$ENCODE" MB/s "fio write around it x 8/11" "$FIO_W_EC" ">=" 0.8
row "ecd encode" "$ENCODE" MB/s "grpc null sink" "$SINKRATE" - -
row "ecd encode" "$ENCODE" MB/s "zfec" "$ZFEC" ">=" 3
row "ecd encode" "$ENCODE" MB/s "pyeclib" "$PYECLIB" ">=" 3
row "ecd encode" "$ENCODE" MB/s "par2" "$PAR2" ">=" 100
row "ecd encode" "$ENCODE" MB/s "zfec writing its shares" "$ZFEC_W" - -
row "ecd encode" "$ENCODE" MB/s "pyeclib writing its shares" "$PYECLIB_W" - -
row "ecd encode, source read from the same disk" "$ENCODE_DISK" MB/s "fio write around it x 8/11" "$FIO_W_EC_DISK" - -
row "ecd read (to /dev/null, as fio's)" "$READ" MB/s "fio read around it" "$FIO_R_READS" ">=" 0.8
row "ecd read (to /dev/null, as fio's)" "$READ" MB/s "grpc null sink" "$SINK_READ" - -
row "ecd read into a pipe to cksum" "$PIPED" MB/s "fio read around it" "$FIO_R_READS" - -
row "ecd read, 3 devices failed" "$DEGRADED" MB/s "fio read around it" "$FIO_R_READS" ">=" 0.6
row "ecd rebuild (recover --missing-only), 1 device failed (rebuilt x 8)" "$REBUILD" MB/s "fio read around it" "$FIO_R_REBUILD" ">=" 0.6
row "ecd rebuild, against the rebuild's mix on fio" "$REBUILD" MB/s "fio read with writes" "$FIO_MIX" - -
row "ecd read after the rebuild" "$AFTER" MB/s "fio read around it" "$FIO_R_AFTER" - -
row "ecd recover checking every block, 1 device failed (rebuilt x 8)" "$CHECKED" MB/s "fio read around it" "$FIO_R_AFTER" - -
row "ecd peak RSS (VmHWM)" "$RSS_MB" MiB "memory limit" "$LIMIT_MB" "<" 1

echo
echo "ecd end to end, $(numfmt --to=iec "$SIZE") file, ${M}+${K} x 1 MiB, $(date -u +%Y-%m-%dT%H:%MZ)"
echo "$CPU, $(nproc) cores; file system: $FS_TYPE ($FS_SOURCE); source file on $SRC_FS;" \
  "page cache dropped between phases: $DROP; load $LOAD_START -> $LOAD_END"
echo
printf '| %s | %s | %s | %s | %s |\n' row value reference ratio target
printf '|---|---:|---|---:|---|\n'
while IFS=$'\t' read -r name value unit ref_name ref ratio op target result; do
  if [ "$ref" = "-" ]; then refcol="-"; else refcol="$ref_name ($ref)"; fi
  if [ "$op" = "-" ]; then tcol="-"; else tcol="$op $target: $result"; fi
  printf '| %s | %s %s | %s | %s | %s |\n' "$name" "$value" "$unit" "$refcol" "$ratio" "$tcol"
done <"$ROWS"
echo
echo "passes (MB/s, in run order; each row is their mean): fio write $FIO_W1, $FIO_W2, $FIO_W3," \
  "$FIO_W4; fio read $FIO_R1, $FIO_R2, $FIO_R3, $FIO_R4, $FIO_R5;" \
  "encode $ENCODE1, $ENCODE2; null sink $SINK1, $SINK2; null sink read $SINK_READ1," \
  "$SINK_READ2; read $READ1, $READ2;" \
  "degraded $DEGRADED1, $DEGRADED2; zfec ${ZFECS[*]}; pyeclib ${PYECLIBS[*]}; writing their" \
  "shares: zfec ${ZFECS_W[*]}; pyeclib ${PYECLIBS_W[*]}"
echo "degraded read: $RECON_DEGRADED blocks reconstructed (devices ${FAILED3[*]} failed);" \
  "rebuild: $BLOCKS_REBUILT blocks, $(numfmt --to=iec "$BYTES_REBUILT") rebuilt in" \
  "${T_RECOVER} s reading $BLOCKS_READ blocks (device $FAILED1 failed); full recover:" \
  "$BLOCKS_CHECKED_REBUILT blocks rebuilt in ${T_CHECKED} s reading $BLOCKS_CHECKED blocks" \
  "(device $FAILED2 failed)"
echo "every read matched the source (cksum $SRC_SUM); MB/s is 10^6 bytes/s of the file;" \
  "peak RSS is against $(numfmt --to=iec "$MEMORY_LIMIT") (ecd --memory-limit)"

if [ -n "$JSON_OUT" ]; then
  "$PY" - "$ROWS" "$JSON_OUT" <<PY
import json, sys
rows = []
for line in open(sys.argv[1]):
    name, value, unit, ref_name, ref, ratio, op, target, result = line.rstrip("\n").split("\t")
    num = lambda s: None if s == "-" else float(s)
    rows.append({"row": name, "value": float(value), "unit": unit,
                 "reference": None if ref == "-" else ref_name, "reference_value": num(ref),
                 "ratio": num(ratio), "target": None if op == "-" else "%s %s" % (op, target),
                 "result": None if result == "-" else result})
doc = {
    "size_bytes": $SIZE, "data_blocks": $M, "parity_blocks": $K, "block_size": $BLOCK,
    "devices": $DEVICES, "filesystem": "$FS_TYPE", "filesystem_source": "$FS_SOURCE",
    "cpu": "$CPU", "cores": $(nproc),
    "page_cache_dropped": "$DROP" == "yes", "quick": $QUICK == 1,
    "load_start": "$LOAD_START", "load_end": "$LOAD_END",
    "source_filesystem": "$SRC_FS",
    "seconds": {"encode": [$T_ENCODE1, $T_ENCODE2], "null_sink_encode": [$T_SINK1, $T_SINK2],
                "null_sink_read": [${T_SINK_READS[0]}, ${T_SINK_READS[1]}],
                "encode_source_on_disk": $T_ENCODE_DISK,
                "read": [${T_READS[0]}, ${T_READS[1]}],
                "read_piped": [${T_PIPED[0]}, ${T_PIPED[1]}],
                "degraded_read": [${T_DEGRADEDS[0]}, ${T_DEGRADEDS[1]}], "recover": $T_RECOVER,
                "read_after_recover": $T_AFTER, "recover_check_all": $T_CHECKED,
                "par2": $T_PAR2},
    "peer_mbps": {"zfec": [${ZFECS[0]}, ${ZFECS[1]}], "pyeclib": [${PYECLIBS[0]}, ${PYECLIBS[1]}],
                  "zfec_writing_shares": [${ZFECS_W[0]}, ${ZFECS_W[1]}],
                  "pyeclib_writing_shares": [${PYECLIBS_W[0]}, ${PYECLIBS_W[1]}]},
    "fio_mbps": {"write": [$FIO_W1, $FIO_W2, $FIO_W3, $FIO_W4],
                 "read": [$FIO_R1, $FIO_R2, $FIO_R3, $FIO_R4, $FIO_R5],
                 "read_with_writes": $FIO_MIX, "ioengine": "$FIO_ENGINE"},
    "degraded_failed_devices": [int(x) for x in "${FAILED3[*]}".split()],
    "degraded_reconstructed_blocks": $RECON_DEGRADED,
    "recover_failed_device": $FAILED1, "recover_blocks_rebuilt": $BLOCKS_REBUILT,
    "recover_bytes_rebuilt": $BYTES_REBUILT, "recover_blocks_read": $BLOCKS_READ,
    "recover_check_all_failed_device": $FAILED2,
    "recover_check_all_blocks_rebuilt": $BLOCKS_CHECKED_REBUILT,
    "recover_check_all_blocks_read": $BLOCKS_CHECKED, "par2_bytes": $PAR2_BYTES,
    "par2_method": "$PAR2_METHOD",
    "par2_slice_seconds": [float(x) for x in "${PAR2_SLICE_SECONDS[*]}".split()],
    "par2_slice_bytes": [$PAR2_SMALL, $PAR2_LARGE] if "${PAR2_SLICE_SECONDS[*]}" else [],
    "peak_rss_bytes": $RSS_KB * 1024, "memory_limit_bytes": $MEMORY_LIMIT,
    "misses": $MISSES, "rows": rows,
}
json.dump(doc, open(sys.argv[2], "w"), indent=2)
PY
  echo "e2e: results written to $JSON_OUT"
fi

if [ "$MISSES" -gt 0 ]; then
  if [ "$QUICK" -eq 1 ]; then
    echo "e2e: $MISSES targets missed (quick mode: not a failure; the targets are for the full run)"
  else
    echo "e2e: $MISSES targets missed"
    exit 4
  fi
fi
