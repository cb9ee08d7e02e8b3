#!/usr/bin/env bash
# Hostile clients (docs/limits.md "Connections and stalled calls", docs/operations.md "Out of
# file descriptors"): ecd keeps serving whatever clients do with their connections and streams.
#  - Under an open-files limit of 256 (soft and hard: `prlimit --nofile=256:256`, so that ecd
#    cannot raise it), 300 idle TCP connections run ecd out of descriptors; ecd closes them
#    itself after --max-connection-idle, and a fresh call succeeds. Then the same on the Unix
#    socket, whose accept loop is gRPC's: it dies, and ecd restarts its gRPC server. With TLS,
#    gRPC runs the TCP listener too: it dies the same way and ecd restarts on the same port.
#  - With the default --max-connections under that limit, the connections past it are closed at
#    once, /readyz says why, the Unix socket still serves.
#  - ecd raises its soft limit to the hard one (`--nofile=256:1024`, when the test's own hard
#    limit allows 1024) and logs it.
#  - Under a small --memory-limit and --stream-idle-timeout 2s: encodes that send a header and
#    nothing hold no memory; 16 that send some data and stall, and a read that takes nothing,
#    are cancelled and give their memory back; another client's encode succeeds.
#  - 40 calls waiting for an object's lock with a 0.2 s deadline end at once and leave
#    ecd_inflight_requests at its idle value; ecctl ls still works.
# The test needs a hard open-files limit of at least 256 (lowering it for ecd is always
# allowed). Usage: hostile_clients_test.sh ECD ECTL
set -euo pipefail
ECD_BIN=$1
ECD=$1
ECTL=$2
. "$(dirname "$0")/lib.sh"

HERE=$(cd "$(dirname "$0")" && pwd)
HARD=$(ulimit -Hn)
[ "$HARD" = unlimited ] || [ "$HARD" -ge 256 ] ||
  fail "the hard open-files limit is $HARD; this test needs at least 256"

step "generate the Python stubs"
python_stubs
hostile() {
  "$PY" "$HERE/hostile_client.py" "$WORK/stubs" "$ADDR" "$WORK/ecd.sock" "$METRICS" \
    "$WORK/ecd.log" "$@"
}
# with_nofile SOFT HARD: makes $ECD run the real ecd under that open-files limit.
with_nofile() {
  printf '#!/bin/sh\nexec prlimit --nofile=%s:%s %q "$@"\n' "$1" "$2" "$ECD_BIN" >"$WORK/ecd-$1-$2"
  chmod +x "$WORK/ecd-$1-$2"
  ECD="$WORK/ecd-$1-$2"
}
# limit_of PID: the soft open-files limit of a process.
limit_of() { awk '/^Max open files/ { print $4 }' "/proc/$1/limits"; }

step "256 descriptors, 300 idle TCP connections: ecd closes them itself and serves again"
with_nofile 256 256
start_ecd --unix-socket "$WORK/ecd.sock" --max-connections 1000 --max-connection-idle 3s
[ "$(limit_of "$ECD_PID")" = 256 ] || fail "ecd's open-files limit is $(limit_of "$ECD_PID")"
grep -q "open files limit (RLIMIT_NOFILE): 256" "$WORK/ecd.log" || fail "the limit is not logged"
hostile descriptors 300 3

step "then gRPC's own listener (the Unix socket) dies of it: ecd restarts its gRPC server"
hostile unix-listener 300
ecctl ls >/dev/null
"$ECTL" --addr "unix:$WORK/ecd.sock" device ls >/dev/null
echo "   ok: ecctl ls and device ls over the Unix socket"
stop_ecd

step "TLS: gRPC's own TCP listener dies of 300 idle connections; ecd restarts on the same port"
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=localhost \
  -addext "subjectAltName=IP:127.0.0.1" -keyout "$WORK/tls.key" -out "$WORK/tls.pem" 2>/dev/null
rm -f "$WORK/port" "$WORK/metrics_port"
# Not start_ecd: its readiness probe speaks plaintext.
"$ECD" --data-dir "$WORK/data" --devices 8 --device-size 256M --listen 127.0.0.1:0 \
  --port-file "$WORK/port" --metrics-listen 127.0.0.1:0 --metrics-port-file "$WORK/metrics_port" \
  --unix-socket none --tls-cert "$WORK/tls.pem" --tls-key "$WORK/tls.key" \
  --max-connection-idle 3s >>"$WORK/ecd.log" 2>&1 &
ECD_PID=$!
for _ in $(seq 1 150); do
  [ -s "$WORK/port" ] && [ -s "$WORK/metrics_port" ] && break
  kill -0 "$ECD_PID" 2>/dev/null || fail "ecd exited during start-up"
  sleep 0.1
done
ADDR="127.0.0.1:$(cat "$WORK/port")"
METRICS="127.0.0.1:$(cat "$WORK/metrics_port")"
tls() { "$ECTL" --addr "$ADDR" --tls-ca "$WORK/tls.pem" --timeout 10 "$@"; }
tls device ls >/dev/null
hostile tls-listener 300
tls device ls >/dev/null
echo "   ok: ecctl over TLS on port $(cat "$WORK/port") again"
stop_ecd

step "256 descriptors and the default --max-connections: the connections past it are refused"
start_ecd --unix-socket "$WORK/ecd.sock"
grep -q "TCP connections: at most [0-9]* (--max-connections)" "$WORK/ecd.log" ||
  fail "the connection limit is not logged"
echo "   ok: $(grep -o "at most [0-9]* (--max-connections)" "$WORK/ecd.log" | tail -n1)"
hostile connection-limit 300
stop_ecd

if [ "$HARD" = unlimited ] || [ "$HARD" -ge 1024 ]; then
  step "a soft limit of 256 under a hard one of 1024: ecd raises it to 1024"
  with_nofile 256 1024
else
  step "the hard limit is $HARD: ecd runs under it (the raise is not checked)"
  ECD=$ECD_BIN
fi
: >"$WORK/ecd.log"
# Budget: 152M - 96M fixed - 8 x 1M DMA pools = 48 MiB, eight 4+2 x 1 MiB stripes.
start_ecd --unix-socket "$WORK/ecd.sock" --memory-limit 152M --nvme-host-memory 1M \
  --dma-arena 0 --stream-idle-timeout 2s
if [ "$ECD" != "$ECD_BIN" ]; then
  grep -q "raised the open files limit (RLIMIT_NOFILE) from 256 to 1024" "$WORK/ecd.log" ||
    fail "ecd did not log raising its limit"
  [ "$(limit_of "$ECD_PID")" = 1024 ] || fail "ecd's open-files limit is $(limit_of "$ECD_PID")"
  echo "   ok: raised the open files limit (RLIMIT_NOFILE) from 256 to 1024"
fi

step "stalled streams are cancelled after --stream-idle-timeout and give their memory back"
head -c 1048576 /dev/urandom >"$WORK/kept.bin"
ecctl encode "$WORK/kept.bin" --name kept >/dev/null
hostile stalled 2
grep -q "ecd cancelled the encode: the client sent nothing for 2s (--stream-idle-timeout)" \
  "$WORK/ecd.log" || fail "the cancellation is not logged"
echo "   ok: logged: $(grep -m1 -o "ecd cancelled the encode.*" "$WORK/ecd.log")"

step "40 calls waiting for an object's lock give up at their 0.2 s deadline"
ECTL=$ECTL hostile lock-waiters 40
ecctl ls >/dev/null
echo "   ok: ecctl ls"
stop_ecd
