#!/usr/bin/env bash
# One ecd per data dir, and a --unix-socket path that is not a stale socket is left alone. A
# second ecd on a running ecd's data dir (on another port) exits 1 with one line naming the
# first's PID and DATA_DIR/ecd.lock, and the first keeps serving on TCP and its Unix socket; the
# lock file holds the PID while ecd runs and is empty after a clean stop; after kill -9 the lock
# is free and the dead ecd's socket is replaced. A regular file, a directory or a symbolic link
# at --unix-socket, or a socket another process serves, stops ecd at start (exit 1, one line)
# and is left as it was. A TCP port another program holds is named as such.
# Usage: data_dir_test.sh ECD ECTL
set -euo pipefail
ECD=$1
ECTL=$2
source "$(dirname "$0")/lib.sh"
export ECD_DEVICES=6

# refused_start TEXT [ecd flags...]: ecd with these flags must exit 1 with exactly one stderr
# line that contains TEXT.
refused_start() {
  local text=$1 rc=0
  shift
  "$ECD" --devices 6 --device-size 256M --listen 127.0.0.1:0 --metrics-listen "" "$@" \
    >"$WORK/out" 2>"$WORK/err" || rc=$?
  [ "$rc" -eq 1 ] || fail "expected exit 1 from ecd $*; got $rc: $(cat "$WORK/err")"
  [ "$(wc -l <"$WORK/err")" -eq 1 ] || fail "expected one stderr line from ecd $*; got: $(cat "$WORK/err")"
  grep -qF -- "$text" "$WORK/err" || fail "expected '$text' from ecd $*; got: $(cat "$WORK/err")"
  echo "   refused: $(cat "$WORK/err")"
}

step "a second ecd on the same data dir is refused, naming the first; the first keeps serving"
start_ecd
head -c 100000 /dev/urandom >"$WORK/model.bin"
ecctl encode "$WORK/model.bin" --name obj --data 4 --parity 2 --block-size 4K >/dev/null
[ "$(cat "$WORK/data/ecd.lock")" = "$ECD_PID" ] || fail "lock file holds '$(cat "$WORK/data/ecd.lock")', not $ECD_PID"
refused_start "ERROR data dir $WORK/data is in use by ecd PID $ECD_PID (lock file $WORK/data/ecd.lock); stop it first, or give another --data-dir" \
  --data-dir "$WORK/data"
# The same with the first's own unix socket given explicitly: still refused before it is touched.
refused_start "is in use by ecd PID $ECD_PID" --data-dir "$WORK/data" --unix-socket "$WORK/data/ecd.sock"
kill -0 "$ECD_PID" || fail "the first ecd died"
ecctl read obj -o "$WORK/obj.out" && cmp "$WORK/model.bin" "$WORK/obj.out" || fail "read over TCP"
"$ECTL" --addr "unix:$WORK/data/ecd.sock" read obj -o "$WORK/obj.out" &&
  cmp "$WORK/model.bin" "$WORK/obj.out" || fail "the first ecd's unix socket no longer serves"
[ "$(cat "$WORK/data/ecd.lock")" = "$ECD_PID" ] || fail "the refused ecd changed the lock file"

step "kill -9: the lock goes with the process; the dead ecd's socket is replaced"
kill -9 "$ECD_PID"
wait "$ECD_PID" 2>/dev/null || true
[ -S "$WORK/data/ecd.sock" ] || fail "no stale socket left to replace"
start_ecd
"$ECTL" --addr "unix:$WORK/data/ecd.sock" read obj -o "$WORK/obj.out" &&
  cmp "$WORK/model.bin" "$WORK/obj.out" || fail "read over the replaced unix socket"
[ "$(cat "$WORK/data/ecd.lock")" = "$ECD_PID" ] || fail "lock file does not name the new ecd"
stop_ecd
[ ! -s "$WORK/data/ecd.lock" ] || fail "lock file still holds '$(cat "$WORK/data/ecd.lock")' after a stop"

step "--unix-socket at a path that is not a socket: ecd stops at start and leaves it alone"
echo "keep me" >"$WORK/notes.txt"
refused_start "--unix-socket $WORK/notes.txt exists and is not a socket (a regular file); give another path or remove it" \
  --data-dir "$WORK/data" --unix-socket "$WORK/notes.txt"
[ "$(cat "$WORK/notes.txt")" = "keep me" ] || fail "the regular file was changed"
mkdir "$WORK/adir"
refused_start "--unix-socket $WORK/adir exists and is not a socket (a directory)" \
  --data-dir "$WORK/data" --unix-socket "$WORK/adir"
[ -d "$WORK/adir" ] || fail "the directory was removed"
ln -s "$WORK/data/ecd.sock" "$WORK/alink"
refused_start "--unix-socket $WORK/alink exists and is not a socket (a symbolic link)" \
  --data-dir "$WORK/data" --unix-socket "$WORK/alink"
[ -L "$WORK/alink" ] || fail "the symbolic link was removed"

step "a socket another ecd (another data dir) serves is not taken over"
start_ecd --unix-socket "$WORK/shared.sock"
refused_start "--unix-socket $WORK/shared.sock is served by another process; give another path, or stop that process" \
  --data-dir "$WORK/data2" --unix-socket "$WORK/shared.sock"
"$ECTL" --addr "unix:$WORK/shared.sock" read obj -o "$WORK/obj.out" &&
  cmp "$WORK/model.bin" "$WORK/obj.out" || fail "the first ecd's socket was taken over"
stop_ecd

step "a port another program holds: the line names the address, not another ecd"
python3 -c "
import socket, sys, time
s = socket.socket()
s.bind(('127.0.0.1', 0))
s.listen()
print(s.getsockname()[1], flush=True)
time.sleep(60)" >"$WORK/held_port" &
holder=$!
for _ in $(seq 1 50); do [ -s "$WORK/held_port" ] && break; sleep 0.1; done
port=$(cat "$WORK/held_port")
rc=0
"$ECD" --data-dir "$WORK/data" --devices 6 --device-size 256M --listen "127.0.0.1:$port" \
  --metrics-listen "" >"$WORK/out" 2>"$WORK/err" || rc=$?
kill "$holder"
wait "$holder" 2>/dev/null || true
[ "$rc" -eq 1 ] || fail "ecd on a taken port exited $rc: $(cat "$WORK/err")"
grep -qF "ERROR cannot listen on 127.0.0.1:$port: Address already in use; is the port taken by another program" "$WORK/err" ||
  fail "unclear message: $(cat "$WORK/err")"
echo "   refused: $(grep -F "cannot listen" "$WORK/err")"
echo
echo "PASS: data dir"
