#!/usr/bin/env bash
# The quick start: installs, builds, starts ecd on 127.0.0.1 with the embedded default (data dir
# ./var/ecd, 8 sparse namespace files, SQLite catalog), encodes a generated 64 MiB file with 4+2,
# fails two devices with the repair paused and reads the file back byte-identical, resumes the
# repair and watches it restore full redundancy with no recover command, shows a few of the
# metrics Prometheus would scrape and stops the daemon.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

say "installing dependencies (Debian packages)"
bash scripts/install-deps.sh
say "building"
bash scripts/build.sh >/dev/null
ECD=$ROOT/build/daemon/ecd
ECTL=$ROOT/build/client/ecctl
ADDR=127.0.0.1:7400
ecctl() { "$ECTL" --addr "$ADDR" "$@"; }

DATA=$ROOT/var/ecd
WORK=$ROOT/var/demo
say "starting ecd (fresh data dir $DATA)"
rm -rf "$DATA" "$WORK"
mkdir -p "$WORK"
"$ECD" --data-dir "$DATA" --listen "$ADDR" --metrics-listen 127.0.0.1:0 \
  --metrics-port-file "$WORK/metrics_port" >"$WORK/ecd.log" 2>&1 &
PID=$!
trap 'kill $PID 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do
  ecctl device ls >/dev/null 2>&1 && break
  kill -0 $PID 2>/dev/null || { cat "$WORK/ecd.log"; exit 1; }
  sleep 0.1
done
ecctl device ls

say "generating a 64 MiB file and encoding it with 4+2 (Cauchy, 1 MiB blocks)"
head -c $((64 << 20)) /dev/urandom >"$WORK/demo.bin"
sha256sum "$WORK/demo.bin" | cut -c1-16 | sed 's/^/sha256: /'
ecctl encode "$WORK/demo.bin" --name demo.bin --data 4 --parity 2
ecctl stat demo.bin

say "pausing the automatic repair (as for maintenance), then failing devices 1 and 6"
ecctl repair pause
ecctl device fail 1
ecctl device fail 6
ecctl device ls
ecctl stat demo.bin

say "reading the file back with two devices down (degraded read)"
ecctl read demo.bin -o "$WORK/demo.out"
cmp "$WORK/demo.bin" "$WORK/demo.out"
echo "byte-identical: yes"

say "resuming the repair: it rebuilds the lost blocks onto the healthy devices by itself"
ecctl repair resume
for _ in $(seq 1 600); do
  [ "$(ecctl --json stat demo.bin | python3 -c 'import json,sys; print(json.load(sys.stdin)["object"].get("degraded_stripes", "0"))')" = 0 ] && break
  sleep 0.1
done
ecctl repair status
ecctl stat demo.bin --verify
ecctl device ls

say "what Prometheus scrapes from /metrics (a few of the ecd_* series)"
curl -sf "http://127.0.0.1:$(cat "$WORK/metrics_port")/metrics" |
  grep -E '^ecd_(objects|object_bytes|stripes|degraded_stripes|lost_stripes|repair_(stripes|bytes)_total|device_state\{device="1"|rpc_requests_total\{.*method="ecd.v1.Objects/(Encode|Read)")'

say "stopping ecd"
kill -TERM $PID
wait $PID
trap - EXIT
tail -n 2 "$WORK/ecd.log"
say "done: the data dir is $DATA; start ecd again with build/daemon/ecd --data-dir $DATA"
