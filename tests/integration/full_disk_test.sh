#!/usr/bin/env bash
# A full file system is survivable. On a small file system (a loop-mounted ext4 image, then a
# size-limited tmpfs; each that can be mounted here) whose data dir's 8 devices promise 2 GiB:
#   - encodes go until one is refused with RESOURCE_EXHAUSTED naming the file system and
#     --fs-reserve, before the disk is full; the refused encode leaves nothing on disk;
#   - the file system's free bytes show in `ecctl device ls --json`, `ecctl status` and the
#     ecd_filesystem_* metrics;
#   - `ecctl rm` works and gives the space back; ecd restarts;
#   - filled to the last byte by another process, ecd still restarts and `ecctl rm` still works;
#   - every acknowledged object reads back byte-exact (sha256) after each restart.
# Everything it mounts is unmounted on exit, failed or not. Needs root (mount); exits 77 (SKIP)
# when neither file system can be mounted.
# Usage: full_disk_test.sh ECD ECTL
set -euo pipefail
ECD=$1
ECTL=$2
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/lib.sh"
MNT="$WORK/mnt"
RESERVE=$((16 << 20))
mkdir -p "$MNT" "$WORK/objects"

# unmount: the kernel lets go of an exited process's io_uring files a moment later, so a busy
# file system is retried for up to 10 s before it is detached lazily.
unmount() {
  local i
  mountpoint -q "$MNT" || return 0
  for i in $(seq 1 100); do
    umount "$MNT" 2>/dev/null && return 0
    sleep 0.1
  done
  umount -l "$MNT"
}

# Stops ecd and unmounts before lib.sh's cleanup removes $WORK, keeping the exit status.
on_exit() {
  local rc=$?
  if [ -n "$ECD_PID" ]; then
    kill -9 "$ECD_PID" 2>/dev/null || true
    wait "$ECD_PID" 2>/dev/null || true
    ECD_PID=""
  fi
  unmount || true
  (exit "$rc")
  cleanup
}
trap on_exit EXIT

avail() { df -B1 --output=avail "$MNT" | tail -n 1 | tr -d ' '; }
sha() { sha256sum "$1" | cut -d' ' -f1; }

# mount_fs KIND: a 192 MiB file system (64 MiB of it the 8 block-record logs) at $MNT; fails when it cannot be mounted here.
mount_fs() {
  case "$1" in
    ext4)
      rm -f "$WORK/fs.img"
      truncate -s 192M "$WORK/fs.img"
      mkfs.ext4 -q -F -m 0 "$WORK/fs.img" >/dev/null 2>&1 &&
        mount -o loop "$WORK/fs.img" "$MNT" 2>/dev/null
      ;;
    tmpfs) mount -t tmpfs -o size=192m tmpfs "$MNT" 2>/dev/null ;;
  esac
}

# encode_until_full: encodes objects of 1-3 MiB until one is refused; checks the refusal and that
# the refused encode left nothing behind.
encode_until_full() {
  local i before after size
  for i in $(seq 1 300); do
    NEXT=$((NEXT + 1))
    size=$(((1 << 20) + RANDOM * 64))
    head -c "$size" /dev/urandom >"$WORK/objects/o$NEXT"
    sync -f "$MNT"
    before=$(avail)
    if "$ECTL" --addr "$ADDR" encode "$WORK/objects/o$NEXT" --name "o$NEXT" --block-size 64K \
      >/dev/null 2>"$WORK/err"; then
      sha "$WORK/objects/o$NEXT" >"$WORK/objects/o$NEXT.sha"
      continue
    fi
    grep -q "RESOURCE_EXHAUSTED" "$WORK/err" || fail "encode o$NEXT failed otherwise: $(cat "$WORK/err")"
    grep -q "the file system under the data dir .* is nearly full" "$WORK/err" ||
      fail "the refusal does not name the file system: $(cat "$WORK/err")"
    grep -q -- "--fs-reserve" "$WORK/err" || fail "the refusal does not name --fs-reserve: $(cat "$WORK/err")"
    grep -q "ecctl rm" "$WORK/err" || fail "the refusal does not say what to do: $(cat "$WORK/err")"
    echo "   refused: $(cat "$WORK/err")"
    rm -f "$WORK/objects/o$NEXT"
    "$ECTL" --addr "$ADDR" stat "o$NEXT" >/dev/null 2>&1 && fail "the refused o$NEXT exists"
    # What it wrote before it was refused was punched: the free space is back (the catalog may
    # have grown a little).
    sync -f "$MNT"
    after=$(avail)
    [ "$after" -ge $((before - (2 << 20))) ] ||
      fail "the refused encode kept $(((before - after) >> 10)) KiB on disk"
    # Refused before the disk was full: the reserve is still free.
    [ "$after" -ge $((RESERVE - (2 << 20))) ] || fail "only $after bytes free after the refusal"
    return 0
  done
  fail "300 encodes and the file system never filled"
}

# verify_all: every acknowledged object reads back byte-exact.
verify_all() {
  local f name n=0
  for f in "$WORK"/objects/*.sha; do
    [ -e "$f" ] || continue
    name=$(basename "$f" .sha)
    "$ECTL" --addr "$ADDR" read "$name" -o "$WORK/check" >/dev/null 2>"$WORK/err" ||
      fail "acknowledged object $name unreadable: $(cat "$WORK/err")"
    [ "$(sha "$WORK/check")" = "$(cat "$f")" ] || fail "acknowledged object $name differs"
    n=$((n + 1))
  done
  echo "   $n acknowledged objects byte-exact"
}

# remove NAME: ecctl rm, and the model forgets it.
remove() {
  "$ECTL" --addr "$ADDR" rm "$1" >/dev/null 2>"$WORK/err" || fail "ecctl rm $1: $(cat "$WORK/err")"
  rm -f "$WORK/objects/$1" "$WORK/objects/$1.sha"
}

scenario() {
  local kind=$1
  step "$kind: 8 devices of 256 MiB on a 192 MiB $kind, --fs-reserve 16M"
  rm -rf "$WORK/data" "$WORK"/objects/*
  mkdir -p "$MNT/data"
  ln -s "$MNT/data" "$WORK/data"
  NEXT=0
  start_ecd --fs-reserve 16M --scrub-interval-hours 0
  local direct
  direct=$("$ECTL" --addr "$ADDR" --json device ls | json 'd["devices"][0]["counters"].get("nvme_direct_io", "0")')
  echo "   namespaces opened with O_DIRECT: $([ "$direct" = 1 ] && echo yes || echo "no (page cache)")"

  step "$kind: encode until refused"
  encode_until_full
  local objects
  objects=$(ls "$WORK"/objects/*.sha | wc -l)
  [ "$objects" -ge 15 ] || fail "only $objects objects fit in the 112 MiB left by the record logs and the reserve"
  echo "   $objects objects stored, $(($(avail) >> 20)) MiB free"

  step "$kind: the file system's free space is shown"
  "$ECTL" --addr "$ADDR" --json device ls >"$WORK/devices.json"
  local fs_free fs_reserve df_free
  fs_free=$(json 'int(d["file_systems"][0]["free_bytes"])' <"$WORK/devices.json")
  fs_reserve=$(json 'int(d["file_systems"][0]["reserve_bytes"])' <"$WORK/devices.json")
  json 'd["file_systems"][0]["catalog"] and d["file_systems"][0]["devices"] == list(range(8))' \
    <"$WORK/devices.json" | grep -qx True || fail "the file system does not hold the catalog and devices 0-7"
  df_free=$(avail)
  [ "$fs_reserve" = "$RESERVE" ] || fail "reserve $fs_reserve, not $RESERVE"
  [ $((fs_free - df_free)) -le $((1 << 20)) ] && [ $((df_free - fs_free)) -le $((1 << 20)) ] ||
    fail "ecctl device ls says $fs_free bytes free, df $df_free"
  "$ECTL" --addr "$ADDR" device ls | grep -q "^file system $WORK/data (catalog, devices 0-7): .* free of .*, 16.0 MiB kept free (--fs-reserve)" ||
    fail "device ls has no file system line: $("$ECTL" --addr "$ADDR" device ls | tail -n 1)"
  "$ECTL" --addr "$ADDR" status | grep -q "^file system $WORK/data" || fail "status has no file system line"
  local gauge
  gauge=$(metric "ecd_filesystem_free_bytes{path=\"$WORK/data\"}")
  [ -n "$gauge" ] && [ $((${gauge%.*} - df_free)) -le $((1 << 20)) ] && [ $((df_free - ${gauge%.*})) -le $((1 << 20)) ] ||
    fail "ecd_filesystem_free_bytes is '$gauge', df says $df_free"
  [ "$(metric "ecd_filesystem_reserve_bytes{path=\"$WORK/data\"}")" = "$RESERVE" ] || fail "ecd_filesystem_reserve_bytes"
  echo "   device ls, status and metrics: $((fs_free >> 20)) MiB free, reserve $((fs_reserve >> 20)) MiB"

  step "$kind: ecctl rm gives the space back; encodes go on"
  local before freed victims
  sync -f "$MNT"
  before=$(avail)
  victims=$(ls "$WORK"/objects/*.sha | head -n 2 | xargs -n 1 basename | sed 's/\.sha$//')
  local bytes=0 v
  for v in $victims; do
    bytes=$((bytes + $(stat -c %s "$WORK/objects/$v")))
    remove "$v"
  done
  sync -f "$MNT"
  freed=$(($(avail) - before))
  [ "$freed" -ge "$bytes" ] || fail "rm of $bytes bytes of objects freed only $freed bytes"
  echo "   rm of $((bytes >> 10)) KiB of objects freed $((freed >> 10)) KiB"
  encode_until_full

  step "$kind: restart, then every object"
  stop_ecd
  start_ecd --fs-reserve 16M --scrub-interval-hours 0
  verify_all

  step "$kind: another process fills the file system to the last byte"
  dd if=/dev/zero of="$MNT/filler" bs=64K status=none 2>/dev/null || true
  while head -c 4096 /dev/zero >>"$MNT/filler" 2>/dev/null; do :; done
  sync -f "$MNT"
  echo "   $(avail) bytes free"
  [ "$(avail)" -lt $((1 << 20)) ] || fail "the filler left $(avail) bytes"
  head -c 5000 /dev/urandom >"$WORK/tiny"
  expect_error RESOURCE_EXHAUSTED "$ECTL" --addr "$ADDR" encode "$WORK/tiny" --name tiny
  victims=$(ls "$WORK"/objects/*.sha | head -n 1 | xargs -n 1 basename | sed 's/\.sha$//')
  remove "$victims"
  echo "   ecctl rm $victims on the full file system: ok"
  stop_ecd
  # Full again (the rm gave space back), then a restart on it.
  while head -c 4096 /dev/zero >>"$MNT/filler" 2>/dev/null; do :; done
  sync -f "$MNT"
  echo "   $(avail) bytes free at the restart"
  start_ecd --fs-reserve 16M --scrub-interval-hours 0
  verify_all
  victims=$(ls "$WORK"/objects/*.sha | head -n 1 | xargs -n 1 basename | sed 's/\.sha$//')
  remove "$victims"
  rm -f "$MNT/filler"
  head -c 100000 /dev/urandom >"$WORK/objects/last"
  "$ECTL" --addr "$ADDR" encode "$WORK/objects/last" --name last --block-size 64K >/dev/null || fail "encode after the filler went"
  sha "$WORK/objects/last" >"$WORK/objects/last.sha"
  stop_ecd
  start_ecd --fs-reserve 16M --scrub-interval-hours 0
  verify_all
  stop_ecd
  rm -f "$WORK/data"
  unmount
}

ran=0
for kind in ext4 tmpfs; do
  if ! mount_fs "$kind"; then
    echo "   cannot mount a $kind here: skipped"
    continue
  fi
  scenario "$kind"
  ran=$((ran + 1))
done
if [ "$ran" = 0 ]; then
  echo "SKIP: neither a loop-mounted ext4 image nor a tmpfs can be mounted here (needs root)"
  exit 77
fi
echo "full disk test: ok"
