#!/usr/bin/env bash
# Crash safety, proven by killing the daemon and by cutting its power: ecd runs under load
# (encodes and, when the CLI has `update`, updates of random ranges, from several clients) and is
# stopped at random moments, then restarted with no operator action. Two kinds of stop take
# turns:
#   - kill: SIGKILL. Every write ecd issued survives (the page cache and the disk keep it).
#   - cut: a power cut at the namespace seam. ecd runs with --fault-power-cut-journal, which
#     appends the old bytes of every device write to an undo journal before issuing it and
#     empties the journal at each successful flush. After the SIGKILL, `ecd-nvme power-cut`
#     replays the journals with a random seed (printed): each write not covered by a flush
#     vanishes, survives, or is torn at 512-byte sectors, as a drive's volatile cache could
#     leave it. The catalog (SQLite, fsynced at every commit) is not touched: only data no flush
#     covered is lost, and ecd flushes a request's blocks before its catalog commit.
# After every restart:
#   - every acknowledged write is there, and every object reads back byte-exact against the
#     model this script keeps (an operation whose acknowledgement was lost may show old or new);
#   - no stripe is degraded and, at the end, every stripe's parity of a sample of objects is
#     recomputed independently (parity_check.py) and matches;
#   - no extent is leaked or shared: the bytes the devices report used equal the blocks the
#     objects hold.
#   - the cuts had unflushed writes to work on, and each fate happened (else the test proves
#     nothing about them).
# Usage: crash_test.sh ECD ECTL [--long]   (30 kills and 30 cuts by default, 300 of each with
# --long). ECD_NVME names ecd-nvme (default: next to ECTL).
set -euo pipefail
ECD=$1
ECTL=$2
ECD_NVME=${ECD_NVME:-$(dirname "$ECTL")/ecd-nvme}
STOPS=30
[ "${3:-}" = "--long" ] && STOPS=300
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../integration/lib.sh"
MODEL="$WORK/model"
JOURNAL="$WORK/journal"
mkdir -p "$MODEL" "$WORK/pending"
[ -x "$ECD_NVME" ] || fail "no ecd-nvme at $ECD_NVME (set ECD_NVME)"
CLIENTS=3
HAVE_UPDATE=0
"$ECTL" --help | grep -qE "^  update( |$)" && HAVE_UPDATE=1

# refused ID: whether client ID's failed operation was refused by ecd before anything changed
# (ecctl's error line names such a code). Any other failure (the connection lost when ecd was
# stopped, a call cut short) leaves the outcome unknown: ecd may have committed the operation
# just before it stopped. The client then keeps its pending note for verify to settle (old or
# new both pass) and issues nothing more.
refused() {
  grep -qE "ALREADY_EXISTS|NOT_FOUND|INVALID_ARGUMENT|OUT_OF_RANGE|FAILED_PRECONDITION" "$WORK/pending/$1.err"
}

# client ID: encodes new objects and updates its own; records each acknowledged operation.
client() {
  trap - ERR  # A client stopped mid-operation is expected; only the main shell reports failures.
  local id=$1 n=0
  while true; do
    n=$((n + 1))
    if [ $HAVE_UPDATE = 1 ] && [ $((RANDOM % 2)) = 0 ] && ls "$MODEL" | grep -q "^c$id-"; then
      local name size off len
      name=$(ls "$MODEL" | grep "^c$id-" | shuf -n 1)
      size=$(stat -c %s "$MODEL/$name")
      [ "$size" -gt 0 ] || continue
      off=$((RANDOM * 32768 % size))
      len=$((1 + RANDOM % 40000))
      [ $((off + len)) -le "$size" ] || len=$((size - off))
      head -c "$len" /dev/urandom >"$WORK/pending/$id.patch"
      # The new content, should the update commit.
      python3 - "$MODEL/$name" "$WORK/pending/$id.patch" "$off" "$WORK/pending/$id.new" <<'PY'
import sys
data = bytearray(open(sys.argv[1], "rb").read())
patch = open(sys.argv[2], "rb").read()
off = int(sys.argv[3])
data[off:off + len(patch)] = patch
open(sys.argv[4], "wb").write(data)
PY
      echo "update $name" >"$WORK/pending/$id.op"
      if "$ECTL" --addr "$ADDR" update "$name" --offset "$off" --file "$WORK/pending/$id.patch" >/dev/null 2>"$WORK/pending/$id.err"; then
        mv "$WORK/pending/$id.new" "$MODEL/$name"
        echo >>"$WORK/updates.acked"
      else
        refused "$id" || return 0
      fi
      rm -f "$WORK/pending/$id.op"
    else
      local name="c$id-$n-$RANDOM"
      head -c $((1 + RANDOM * 10 % 120000)) /dev/urandom >"$WORK/pending/$id.new"
      echo "encode $name" >"$WORK/pending/$id.op"
      if "$ECTL" --addr "$ADDR" encode "$WORK/pending/$id.new" --name "$name" --block-size 4K >/dev/null 2>"$WORK/pending/$id.err"; then
        mv "$WORK/pending/$id.new" "$MODEL/$name"
        echo >>"$WORK/encodes.acked"
      else
        refused "$id" || return 0
      fi
      rm -f "$WORK/pending/$id.op"
    fi
  done
}

# After a restart: settle the operations that were in flight, then check everything.
verify() {
  for f in "$WORK"/pending/*.op; do
    [ -e "$f" ] || continue
    # An empty note: the client was stopped while writing it, before its operation started.
    op="" name=""
    read -r op name <"$f" || true
    if [ -z "$op" ]; then
      rm -f "$f"
      continue
    fi
    local id
    id=$(basename "$f" .op)
    if "$ECTL" --addr "$ADDR" read "$name" -o "$WORK/check" >/dev/null 2>&1; then
      if [ "$op" = encode ]; then
        # The client may have been stopped after it recorded the acknowledgement (moved the
        # file into the model) but before it cleared its pending note.
        local expect="$WORK/pending/$id.new"
        [ -e "$expect" ] || expect="$MODEL/$name"
        cmp -s "$WORK/check" "$expect" || fail "unacknowledged encode of $name committed with wrong bytes"
        [ "$expect" = "$MODEL/$name" ] || mv "$expect" "$MODEL/$name"
      elif [ -e "$WORK/pending/$id.new" ] && cmp -s "$WORK/check" "$WORK/pending/$id.new"; then
        mv "$WORK/pending/$id.new" "$MODEL/$name"  # the update committed before the kill
      else
        cmp -s "$WORK/check" "$MODEL/$name" || fail "$name is neither its old nor its new version after a kill mid-update"
      fi
    else
      [ "$op" = encode ] || fail "$name unreadable after a kill mid-update"
    fi
    rm -f "$f"
  done
  local objects
  objects=$("$ECTL" --addr "$ADDR" --json ls | json '" ".join(sorted(o["name"] for o in d.get("objects", [])))')
  for name in $(ls "$MODEL"); do
    "$ECTL" --addr "$ADDR" read "$name" -o "$WORK/check" >/dev/null 2>&1 || fail "acknowledged object $name lost"
    cmp -s "$WORK/check" "$MODEL/$name" || fail "acknowledged object $name differs from the model"
  done
  [ "$objects" = "$(ls "$MODEL" | sort | tr '\n' ' ' | sed 's/ $//')" ] || fail "objects differ from the model: $objects"
  # Every block passes its CRC.
  "$ECTL" --addr "$ADDR" --json ls | json 'sum(int(o.get("object", o).get("degraded_stripes", 0)) for o in d.get("objects", []))' | grep -qx 0 || fail "degraded stripes after restart"
  # No leaked or shared extent: used bytes == blocks held x block bytes (4 KiB blocks, 4 KiB LBAs)
  # plus each device's label and block-record log.
  local used blocks meta
  used=$("$ECTL" --addr "$ADDR" --json device ls | json 'sum(int(x.get("used_bytes", 0)) for x in d["devices"])')
  blocks=$("$ECTL" --addr "$ADDR" --json device ls | json 'sum(int(x.get("blocks", 0)) for x in d["devices"])')
  meta=$("$ECTL" --addr "$ADDR" --json device ls | json 'sum(int(x.get("metadata_bytes", 0)) for x in d["devices"])')
  [ "$used" = $((blocks * 4096 + meta)) ] ||
    fail "used bytes $used != $blocks blocks x 4096 + $meta of labels and record logs: space leaked"
}

# Any other failing command in the main shell says where it failed, not just that it did.
set -E
trap 'fail "line $LINENO: \"$BASH_COMMAND\" failed"' ERR

# unflushed: some device has a write no flush covered yet (its journal is longer than its header:
# "ECDUNDO1", version, LBA size, path length, then the namespace file's path).
NS0="$WORK/data/devices/nvme0.ns"
HEADER=$((20 + ${#NS0}))
unflushed() {
  local f
  for f in "$JOURNAL"/*.undo; do
    [ -e "$f" ] && [ "$(stat -c %s "$f")" -gt "$HEADER" ] && return 0
  done
  return 1
}

# start_for N: starts ecd for stop N: odd stops are kills, even ones power cuts (journaled).
start_for() {
  if [ $(($1 % 2)) = 0 ]; then
    start_ecd --fault-power-cut-journal "$JOURNAL"
  else
    start_ecd
  fi
}

step "crash test: $STOPS kills and $STOPS power cuts under load (updates: $HAVE_UPDATE)"
cut_writes=0
cut_vanished=0
cut_survived=0
cut_torn=0
start_for 1
for stop in $(seq 1 $((2 * STOPS))); do
  pids=()
  for c in $(seq 1 $CLIENTS); do
    client "$c" &
    pids+=($!)
  done
  sleep "$(python3 -c "import random; print(round(random.uniform(0.2, 1.2), 2))")"
  # A cut is made while some write is unflushed (checked just before, so a flush may still get
  # in first); waiting at most 2 s.
  if [ $((stop % 2)) = 0 ]; then
    for _ in $(seq 1 400); do
      unflushed && break
      sleep 0.005
    done
  fi
  kill -9 "$ECD_PID"
  wait "$ECD_PID" 2>/dev/null || true
  ECD_PID=""
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  what="kill $((stop / 2 + 1))"
  if [ $((stop % 2)) = 0 ]; then
    seed=$((RANDOM * 32768 + RANDOM))
    "$ECD_NVME" power-cut "$JOURNAL" --seed "$seed" >"$WORK/cut" 2>&1 ||
      fail "ecd-nvme power-cut --seed $seed: $(cat "$WORK/cut")"
    # "nvme3.ns.undo: 12 unflushed writes: 4 vanished, 5 survived, 3 torn; ..."
    read -r w v s t < <(awk '{w += $2; v += $5; s += $7; t += $9} END {print w + 0, v + 0, s + 0, t + 0}' "$WORK/cut")
    cut_writes=$((cut_writes + w))
    cut_vanished=$((cut_vanished + v))
    cut_survived=$((cut_survived + s))
    cut_torn=$((cut_torn + t))
    what="cut $((stop / 2)) (seed $seed: $w unflushed writes, $v vanished, $s survived, $t torn)"
  fi
  start_for $((stop + 1))
  verify
  # Keep the data set small (verification reads everything): at most 24 objects.
  count=$(ls "$MODEL" | wc -l)
  if [ "$count" -gt 24 ]; then
    for name in $(ls "$MODEL" | shuf -n $((count - 24))); do
      "$ECTL" --addr "$ADDR" rm "$name" >/dev/null && rm "$MODEL/$name"
    done
  fi
  printf '   %s: %d objects verified\n' "$what" "$(ls "$MODEL" | wc -l)"
done
echo "   power cuts: $cut_writes unflushed writes, $cut_vanished vanished, $cut_survived survived, $cut_torn torn"
[ "$cut_writes" -gt 0 ] && [ "$cut_vanished" -gt 0 ] && [ "$cut_survived" -gt 0 ] && [ "$cut_torn" -gt 0 ] ||
  fail "the power cuts had no unflushed writes of every fate to work on"
encodes=$(cat "$WORK/encodes.acked" 2>/dev/null | wc -l)
updates=$(cat "$WORK/updates.acked" 2>/dev/null | wc -l)
echo "   acknowledged: $encodes encodes, $updates updates"
[ "$encodes" -gt 0 ] || fail "no encode was acknowledged: the load did not run"
[ $HAVE_UPDATE = 0 ] || [ "$updates" -gt 0 ] || fail "no update was acknowledged: the load did not run"
step "independent parity check of every stripe of 8 objects"
python3 "$HERE/parity_check.py" "$ECTL" "$ADDR" $(ls "$MODEL" | shuf -n 8) || fail "parity does not match data"
stop_ecd
echo "crash test: ok"
