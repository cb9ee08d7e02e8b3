# Shared helpers for the shell integration tests: start/stop ecd on a temp dir, run ecctl,
# read JSON fields, and fail loudly.
# Usage: source lib.sh after setting ECD and ECTL to the binaries.

WORK=$(mktemp -d /tmp/ecd-it.XXXXXX)
# Reads /metrics by sample name and label set (metric, below; metrics_test.sh).
PROM_TEXT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/prom_text.py"
# ThreadSanitizer (scripts/test.sh --tsan): every process the test starts (ecd, ecctl, helpers)
# writes its report to $WORK/tsan.<pid>, not to a stderr that the test may discard (ecctl ...
# 2>/dev/null), and cleanup fails the test if any report exists. Harmless in other builds.
export TSAN_OPTIONS="${TSAN_OPTIONS:+$TSAN_OPTIONS:}log_path=$WORK/tsan"
ECD_PID=""
ADDR=""
METRICS=""

# On failure, the logs and every file under 1 MiB (models, outputs) are kept for a post-mortem;
# namespace files are not.
cleanup() {
  local rc=$?
  if [ -n "$ECD_PID" ] && kill -0 "$ECD_PID" 2>/dev/null; then kill -9 "$ECD_PID" 2>/dev/null || true; fi
  local report tsan_failed=0
  for report in "$WORK"/tsan.*; do
    [ -e "$report" ] || continue
    echo "FAIL: ThreadSanitizer report in $(basename "$report"):" >&2
    cat "$report" >&2
    tsan_failed=1
    [ "$rc" -ne 0 ] || rc=1
  done
  if [ "$rc" -ne 0 ]; then
    local kept
    kept=$(mktemp -d /tmp/ecd-failed.XXXXXX)
    (cd "$WORK" && find . -type f -size -1024k -exec cp --parents {} "$kept" \;) 2>/dev/null || true
    echo "test failed (exit $rc): logs and small files kept in $kept" >&2
  fi
  rm -rf "$WORK"
  if [ "$tsan_failed" -ne 0 ]; then exit "$rc"; fi
}
trap cleanup EXIT

step() { printf '\n== %s\n' "$*"; }
fail() {
  printf 'FAIL: %s\n' "$*" >&2
  if [ -f "$WORK/ecd.log" ]; then echo "--- ecd.log (tail)" >&2; tail -n 30 "$WORK/ecd.log" >&2; fi
  exit 1
}

# start_ecd [extra flags...]: starts ecd on $ECD_DEVICES (default 8) devices of $ECD_DEVICE_SIZE
# (default 256M, sparse files) on a free loopback port (and its metrics HTTP endpoint on another,
# in $WORK/metrics_port) and waits until it answers.
start_ecd() {
  rm -f "$WORK/port" "$WORK/metrics_port"
  "$ECD" --data-dir "$WORK/data" --devices "${ECD_DEVICES:-8}" --device-size "${ECD_DEVICE_SIZE:-256M}" --listen 127.0.0.1:0 \
    --port-file "$WORK/port" --metrics-listen 127.0.0.1:0 --metrics-port-file "$WORK/metrics_port" \
    "$@" >>"$WORK/ecd.log" 2>&1 &
  ECD_PID=$!
  for _ in $(seq 1 150); do
    if [ -s "$WORK/port" ]; then
      ADDR="127.0.0.1:$(cat "$WORK/port")"
      METRICS="127.0.0.1:$(cat "$WORK/metrics_port" 2>/dev/null)"
      if "$ECTL" --addr "$ADDR" device ls >/dev/null 2>&1; then return 0; fi
    fi
    kill -0 "$ECD_PID" 2>/dev/null || fail "ecd exited during start-up"
    sleep 0.1
  done
  fail "ecd did not answer within 15 s"
}

# stop_ecd: SIGTERM, and expects a clean exit 0.
stop_ecd() {
  kill -TERM "$ECD_PID"
  local rc=0
  wait "$ECD_PID" || rc=$?
  ECD_PID=""
  [ "$rc" -eq 0 ] || fail "ecd exited with $rc after SIGTERM"
}

ecctl() { "$ECTL" --addr "$ADDR" "$@"; }

# patch_model OFFSET FILE: writes FILE's bytes into the test's model copy $WORK/model.bin at
# OFFSET, growing it with zeros as an append would.
patch_model() {
  python3 - "$WORK/model.bin" "$1" "$2" <<'PY'
import sys
path, offset, src = sys.argv[1], int(sys.argv[2]), sys.argv[3]
data = bytearray(open(path, "rb").read())
new = open(src, "rb").read()
if len(data) < offset + len(new):
    data.extend(b"\0" * (offset + len(new) - len(data)))
data[offset:offset + len(new)] = new
open(path, "wb").write(bytes(data))
PY
}

# metric 'name{label="v",...}': the value of that series in a fresh scrape of /metrics, found by
# its name and exact label set in any order (prom_text.py get; integral values print as
# integers); empty when the series is absent. A malformed exposition fails the pipeline.
metric() {
  curl -sf "http://$METRICS/metrics" | /usr/bin/python3 "$PROM_TEXT" get "$1"
}

# expect_error CODE CMD...: the command must fail, print exactly one line on stderr that names
# the gRPC CODE, and print nothing on stdout.
expect_error() {
  local code=$1
  shift
  local rc=0
  "$@" >"$WORK/out" 2>"$WORK/err" || rc=$?
  [ "$rc" -ne 0 ] || fail "expected $code from: $* (it succeeded)"
  [ "$(wc -l <"$WORK/err")" -eq 1 ] || fail "expected one stderr line from: $*; got: $(cat "$WORK/err")"
  grep -q "$code" "$WORK/err" || fail "expected $code from: $*; got: $(cat "$WORK/err")"
  [ ! -s "$WORK/out" ] || fail "unexpected stdout from failing: $*"
  echo "   ok: $code: $(cat "$WORK/err")"
}

# json EXPR: evaluates a Python expression on the JSON document read from stdin (as `d`).
json() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }

# clobber DEVICE LBA COUNT BYTE: overwrites a block's extent on its namespace file.
clobber() {
  python3 - "$WORK/data/devices/nvme$1.ns" "$2" "$3" "$4" <<'PY'
import sys
path, lba, count, byte = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4], 0)
with open(path, "r+b") as f:
    f.seek(lba * 4096)
    f.write(bytes([byte]) * (count * 4096))
PY
}

# block_of NAME STRIPE INDEX: prints "device lba lba_count" of one block.
block_of() {
  ecctl --json stat "$1" --blocks | python3 -c "
import json,sys
d=json.load(sys.stdin)
s=[s for s in d['object']['stripes'] if int(s['index'])==$2][0]
b=[b for b in s['blocks'] if int(b['index'])==$3][0]
print(b['device'], b['lba'], b['lba_count'])"
}

# python_stubs [PROTO...]: checks Debian's python3 (ECD_PYTHON overrides; not a pyenv python3
# from PATH, which may lack grpc), protoc and grpc_python_plugin, and generates the ecd.v1
# Python stubs (plus the extra PROTO files, from this directory) into $WORK/stubs. Sets PY.
python_stubs() {
  PY=${ECD_PYTHON:-/usr/bin/python3}
  local protoc=${PROTOC:-protoc} plugin=${GRPC_PYTHON_PLUGIN:-/usr/bin/grpc_python_plugin}
  local here root
  here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
  root=$(cd "$here/../.." && pwd)
  export PYTHONDONTWRITEBYTECODE=1  # The stubs are imported from $WORK; keep the tree clean.
  [ -x "$PY" ] && "$PY" -c "import grpc, google.protobuf" ||
    fail "$PY cannot import grpc and google.protobuf (apt-get install python3-grpcio python3-protobuf)"
  command -v "$protoc" >/dev/null || fail "protoc not found (apt-get install protobuf-compiler)"
  [ -x "$plugin" ] || fail "$plugin not found (apt-get install protobuf-compiler-grpc)"
  mkdir -p "$WORK/stubs"
  "$protoc" --python_out="$WORK/stubs" --grpc_out="$WORK/stubs" --plugin=protoc-gen-grpc="$plugin" \
    -I "$root/proto" "$root"/proto/ecd/v1/*.proto
  local proto
  for proto in "$@"; do
    "$protoc" --python_out="$WORK/stubs" --grpc_out="$WORK/stubs" --plugin=protoc-gen-grpc="$plugin" \
      -I "$here" "$here/$proto"
  done
}
