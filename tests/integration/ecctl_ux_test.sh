#!/usr/bin/env bash
# ecctl as an operator meets it, on loopback against a real ecd whose devices answer slowly
# (--fault-inject latency, so transfers last long enough to draw): on a pseudo-terminal (script)
# encode, read, recover, scrub and an evacuation wait draw a progress line with a percent, a
# rate and an ETA, and clear it; with stderr piped, or with --quiet, they draw nothing. `status`
# and `status --json` show the devices, the objects, degraded stripes, rebuild jobs and CXL
# actions; --json output parses for every command, before or after the subcommand; errors are one
# stderr line with the exit code `ecctl --help` documents.
# Usage: ecctl_ux_test.sh ECD ECTL
set -euo pipefail
ECD=$1
ECTL=$2
. "$(dirname "$0")/lib.sh"

# A progress line: "... [####----]  42% 16.0 MiB/32.0 MiB 8.0 MiB/s ETA 0:02".
PROGRESS='\] +[0-9]+% .+ [0-9.]+ [A-Za-z]+/s ETA ([0-9]+:)?[0-9]+:[0-9]{2}'

# on_tty OUT CMD...: runs CMD with stdin, stdout and stderr on a pseudo-terminal; what the
# terminal was sent goes to OUT. Returns CMD's exit status.
on_tty() {
  local out=$1
  shift
  local cmd
  printf -v cmd '%q ' "$@"
  SHELL=/bin/bash script -qec "$cmd" /dev/null </dev/null >"$out"
}

# on_tty_stderr_to FILE OUT CMD...: as on_tty, but CMD's stderr goes to FILE.
on_tty_stderr_to() {
  local file=$1 out=$2
  shift 2
  local cmd
  printf -v cmd '%q ' "$@"
  SHELL=/bin/bash script -qec "$cmd 2>$(printf '%q' "$file")" /dev/null </dev/null >"$out"
}

# expect_progress OUT LABEL: OUT shows a progress line for LABEL and clears it at the end.
expect_progress() {
  local lines
  lines=$(tr '\r' '\n' <"$1" | grep -E "^$2 .*$PROGRESS" || true)
  [ -n "$lines" ] || fail "no progress line for '$2' on the terminal: $(cat -v "$1")"
  grep -q $'\r\033\[K' "$1" || fail "the progress line of '$2' was not cleared: $(cat -v "$1")"
  echo "   $2: $(tail -n 1 <<<"$lines" | sed 's/\x1b\[K//')"
}

# expect_no_progress FILE...: nothing in the FILEs looks like a progress line.
expect_no_progress() {
  for f in "$@"; do
    if grep -qE "ETA|$(printf '\033')\[K" "$f"; then fail "a progress line in $f: $(cat -v "$f")"; fi
  done
}

# json_ok CMD...: CMD succeeds and prints one JSON document on stdout.
json_ok() {
  "$@" >"$WORK/json.out" || fail "failed: $*"
  python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$WORK/json.out" \
    || fail "not JSON from: $*: $(cat "$WORK/json.out")"
}

# expect_exit CODE CMD...: CMD exits with CODE and prints exactly one line on stderr, and
# nothing on stdout (but a scrub's report, exit 4).
expect_exit() {
  local want=$1
  shift
  local rc=0
  "$@" >"$WORK/out" 2>"$WORK/err" || rc=$?
  [ "$rc" -eq "$want" ] || fail "expected exit $want from: $*; got $rc: $(cat "$WORK/err")"
  [ "$(wc -l <"$WORK/err")" -eq 1 ] || fail "expected one stderr line from: $*; got: $(cat "$WORK/err")"
  grep -q '^ecctl: ' "$WORK/err" || fail "the error line does not start with 'ecctl: ': $(cat "$WORK/err")"
  [ "$want" -eq 4 ] || [ ! -s "$WORK/out" ] || fail "unexpected stdout from failing: $*: $(cat "$WORK/out")"
  echo "   exit $want: $(cat "$WORK/err")"
}

# wait_for EXPR: waits up to 10 s until the Python EXPR on `ecctl --json status` (as d) is true.
wait_for() {
  for _ in $(seq 1 100); do
    [ "$(ecctl --json status | json "$1")" = True ] && return 0
    sleep 0.1
  done
  fail "status never showed $1: $(ecctl --json status)"
}

latency=$(for d in $(seq 0 7); do printf '%d=any:latency:ms=10,' "$d"; done)
# --rebuild-rate keeps each evacuation (about 14 MiB) running for three seconds or so, so that
# status and `rebuild wait` see it running.
# No CXL polling: records stay in the logs until a command (or an interrupt) drains them, so the
# cxl events -> cxl clear check below cannot race the monitor.
start_ecd --fault-inject "${latency%,}" --rebuild-rate 4M --cxl-poll-interval 0

step "on a terminal: encode, read, recover and scrub draw progress (percent, rate, ETA)"
head -c $((32 << 20)) /dev/urandom >"$WORK/big.bin"
on_tty "$WORK/tty.encode" "$ECTL" --addr "$ADDR" encode "$WORK/big.bin" --name big --block-size 256K
expect_progress "$WORK/tty.encode" "encode big"
grep -q "encoded big: 32.0 MiB" "$WORK/tty.encode" || fail "no result line: $(cat -v "$WORK/tty.encode")"
on_tty "$WORK/tty.read" "$ECTL" --addr "$ADDR" read big -o "$WORK/big.out"
expect_progress "$WORK/tty.read" "read big"
cmp "$WORK/big.bin" "$WORK/big.out" || fail "read back different bytes"
ecctl device fail 3
on_tty "$WORK/tty.recover" "$ECTL" --addr "$ADDR" recover big
expect_progress "$WORK/tty.recover" "recover big"
ecctl device online 3
on_tty "$WORK/tty.scrub" "$ECTL" --addr "$ADDR" scrub big
expect_progress "$WORK/tty.scrub" "scrub big"

step "no progress when stderr is not a terminal, or with --quiet"
on_tty_stderr_to "$WORK/err.encode" "$WORK/tty.encode2" "$ECTL" --addr "$ADDR" encode "$WORK/big.bin" --name big2 --block-size 256K
expect_no_progress "$WORK/err.encode" "$WORK/tty.encode2"
grep -q "encoded big2" "$WORK/tty.encode2" || fail "no result line with stderr piped"
on_tty_stderr_to "$WORK/err.read" "$WORK/tty.read2" "$ECTL" --addr "$ADDR" read big -o "$WORK/big.out2"
expect_no_progress "$WORK/err.read" "$WORK/tty.read2"
on_tty "$WORK/tty.quiet" "$ECTL" --addr "$ADDR" --quiet read big -o "$WORK/big.out3"
expect_no_progress "$WORK/tty.quiet"
on_tty "$WORK/tty.quiet2" "$ECTL" --addr "$ADDR" scrub big -q
expect_no_progress "$WORK/tty.quiet2"
ecctl recover big 2>"$WORK/err.pipe" >/dev/null
expect_no_progress "$WORK/err.pipe"
[ ! -s "$WORK/err.pipe" ] || fail "stderr not empty without a terminal: $(cat "$WORK/err.pipe")"
echo "   none drawn"

step "status and status --json: devices, objects, degraded stripes"
ecctl status >"$WORK/status.txt"
cat "$WORK/status.txt"
grep -q '^devices: 8 (8 online, 0 failing, 0 failed)' "$WORK/status.txt" || fail "status: devices"
grep -q '^objects: 2 ' "$WORK/status.txt" || fail "status: objects"
[ "$(grep -cE '^  [0-7] +online' "$WORK/status.txt")" = 8 ] || fail "status: not 8 device rows"
ecctl status --json >"$WORK/status.json"
[ "$(json 'len(d["devices"])' <"$WORK/status.json")" = 8 ] || fail "status --json: device count"
[ "$(json 'd["objects"]' <"$WORK/status.json")" = 2 ] || fail "status --json: object count"
[ "$(json 'd["degraded_stripes"]' <"$WORK/status.json")" = 0 ] || fail "status --json: degraded"
json 'int(d["capacity_bytes"]) == sum(int(x["size_bytes"]) for x in d["devices"])' <"$WORK/status.json" \
  | grep -qx True || fail "status --json: capacity is not the sum of the devices"
ecctl device fail 1
[ "$(ecctl --json status | json 'd["devices_failed"]')" = 1 ] || fail "status --json: failed device"
[ "$(ecctl --json status | json 'int(d["degraded_stripes"]) > 0')" = True ] || fail "no degraded stripes"
ecctl status >"$WORK/status.txt"
grep -q '^objects: 2 (64.0 MiB); 2 degraded' "$WORK/status.txt" || fail "status text: degraded"
ecctl recover big >/dev/null
ecctl recover big2 >/dev/null
ecctl device online 1

step "rebuild jobs and CXL actions in status; waiting on an evacuation draws progress"
ecctl device evacuate 4 >/dev/null
wait_for 'len(d["rebuilds"]) == 1 and d["rebuilds"][0]["kind"] == "evacuate-device"'
ecctl status >"$WORK/status.txt"
grep -qE '^rebuild jobs: [01] running, [01] queued' "$WORK/status.txt" || fail "status text: rebuild jobs: $(cat "$WORK/status.txt")"
grep -qE '^  [0-9]+ +evacuate-device +(running|queued) +dev 4 ' "$WORK/status.txt" || fail "status text: job line: $(cat "$WORK/status.txt")"
ecctl rebuild wait >/dev/null
ecctl device online 4
ecctl cxl inject 6 --log failure --type memory-module --health-status 4 >/dev/null
wait_for 'len(d["recent_cxl_jobs"]) == 1 and int(d["cxl_counters"]["action_evacuate"]) == 1'
job=$(ecctl --json status | json 'd["recent_cxl_jobs"][0]["id"]')
on_tty "$WORK/tty.wait" "$ECTL" --addr "$ADDR" rebuild wait "$job"
expect_progress "$WORK/tty.wait" "rebuild job $job"
grep -q "rebuild job $job (evacuate-device): done" "$WORK/tty.wait" || fail "rebuild wait: $(cat -v "$WORK/tty.wait")"
ecctl --json status >"$WORK/status.cxl.json"
[ "$(json 'd["recent_cxl_jobs"][0]["reason"].startswith("CXL: ")' <"$WORK/status.cxl.json")" = True ] \
  || fail "no recent CXL job: $(cat "$WORK/status.cxl.json")"
[ "$(json 'int(d["cxl_counters"]["action_evacuate"])' <"$WORK/status.cxl.json")" = 1 ] || fail "CXL action not counted"
ecctl status >"$WORK/status.txt"
cat "$WORK/status.txt"
grep -q '^CXL: 1 records; policy actions: 0 fail 1 evacuate' "$WORK/status.txt" || fail "status text: CXL"
grep -A1 '^recent CXL jobs:' "$WORK/status.txt" >"$WORK/status.recent"
grep -qE '^  [0-9]+ +evacuate-device +done +dev 6 +CXL: ' "$WORK/status.recent" || fail "status text: recent CXL jobs"
ecctl device online 6
on_tty "$WORK/tty.evacuate" "$ECTL" --addr "$ADDR" device evacuate 7 --wait
expect_progress "$WORK/tty.evacuate" "evacuate device 7"
grep -q "device 7: evacuated, now failed with 0 blocks" "$WORK/tty.evacuate" || fail "evacuate --wait: $(cat -v "$WORK/tty.evacuate")"
ecctl device online 7

step "--json parses for every command (before or after the subcommand)"
printf 'hello' >"$WORK/patch.bin"
json_ok ecctl --json encode "$WORK/patch.bin" --name small
json_ok ecctl encode "$WORK/patch.bin" --name small2 --json
json_ok ecctl --json read big -o "$WORK/big.json.out"
[ "$(ecctl --json read small -o "$WORK/small.out" | json 'd["bytes"]')" = 5 ] || fail "read --json: bytes"
ecctl --json read small -o - 2>"$WORK/read.stderr" >"$WORK/read.stdout"
[ "$(cat "$WORK/read.stdout")" = hello ] || fail "read -o - --json: the bytes are not on stdout"
json 'd["name"]' <"$WORK/read.stderr" | grep -qx small || fail "read -o - --json: no JSON on stderr"

# A pipe of the default 64 KiB takes 16 wake-ups per 1 MiB message; ecctl grows it to 1 MiB.
step "read -o - into a pipe: the pipe is grown to 1 MiB and every byte arrives"
python3 - "$ECTL" --addr "$ADDR" --quiet read big -o - >"$WORK/pipe.txt" <<'PY' || fail "read into a pipe failed"
import fcntl, hashlib, os, subprocess, sys
F_SETPIPE_SZ, F_GETPIPE_SZ = 1031, 1032
r, w = os.pipe()
fcntl.fcntl(w, F_SETPIPE_SZ, 65536)  # the default size, whatever this system's default is
child = subprocess.Popen(sys.argv[1:], stdout=w, stdin=subprocess.DEVNULL)
os.close(w)
digest, count = hashlib.sha256(), 0
while chunk := os.read(r, 1 << 20):
    digest.update(chunk)
    count += len(chunk)
print(child.wait(), fcntl.fcntl(r, F_GETPIPE_SZ), count, digest.hexdigest())
PY
ecctl --quiet read big -o "$WORK/big.copy"
read -r pipe_rc pipe_size pipe_bytes pipe_sum <"$WORK/pipe.txt"
[ "$pipe_rc" = 0 ] || fail "read -o - into a pipe exited $pipe_rc"
[ "$pipe_size" = 1048576 ] || fail "read -o - left the pipe at $pipe_size bytes, not 1 MiB"
[ "$pipe_bytes" = "$(stat -c %s "$WORK/big.copy")" ] || fail "read -o - into a pipe: $pipe_bytes bytes"
[ "$pipe_sum" = "$(sha256sum "$WORK/big.copy" | cut -d' ' -f1)" ] || fail "read -o - into a pipe: other bytes"
# ecctl builds each Encode/Update message itself, reading the data in place (StreamFile).
step "encode and update from an empty file and from a pipe of short reads: the bytes round-trip"
: >"$WORK/empty.bin"
ecctl --quiet encode "$WORK/empty.bin" --name empty >/dev/null
[ "$(ecctl --json stat empty | json 'd["object"]["size"]')" = 0 ] || fail "empty encode: size"
[ "$(ecctl read empty -o - | wc -c)" = 0 ] || fail "empty encode: bytes read back"
# Writes FILE to stdout in pieces cut at the given offsets, pausing between them (short reads).
pieces() {
  python3 -c 'import sys, time
data = open(sys.argv[1], "rb").read()
cuts = [0] + [int(c) for c in sys.argv[2:]] + [len(data)]
for a, b in zip(cuts, cuts[1:]):
    sys.stdout.buffer.write(data[a:b]); sys.stdout.flush(); time.sleep(0.2)' "$@"
}
head -c 1500000 /dev/urandom >"$WORK/piped.src"
pieces "$WORK/piped.src" 70001 1070001 | ecctl --quiet encode - --name piped >/dev/null
ecctl read piped -o - | cmp -s - "$WORK/piped.src" || fail "encode from a pipe: other bytes"
head -c 200003 /dev/urandom >"$WORK/piped.patch"
pieces "$WORK/piped.patch" 3 | ecctl --quiet update piped --offset 777 --file - >/dev/null
python3 -c 'import sys
src, patch = open(sys.argv[1], "rb").read(), open(sys.argv[2], "rb").read()
sys.stdout.buffer.write(src[:777] + patch + src[777 + len(patch):])' \
  "$WORK/piped.src" "$WORK/piped.patch" >"$WORK/piped.want"
ecctl read piped -o - | cmp -s - "$WORK/piped.want" || fail "update from a pipe: other bytes"
# stdin a regular file whose offset an earlier reader moved: the rest of it, declared as such.
{ python3 -c 'import os; os.lseek(0, 5000, os.SEEK_SET)'; ecctl --quiet encode - --name rest >/dev/null; } <"$WORK/piped.src"
tail -c +5001 "$WORK/piped.src" >"$WORK/rest.want"
ecctl read rest -o - | cmp -s - "$WORK/rest.want" || fail "encode from stdin at an offset: other bytes"
ecctl rm rest >/dev/null
ecctl --quiet update empty --offset 0 --append --file "$WORK/empty.bin" >/dev/null
[ "$(ecctl --json stat empty | json 'd["object"]["size"]')" = 0 ] || fail "empty update: size"
ecctl rm empty >/dev/null
ecctl rm piped >/dev/null
json_ok ecctl --json update small --offset 0 --data-hex 4a
json_ok ecctl --json update small --offset 0 --file "$WORK/patch.bin"
json_ok ecctl --json recover small
json_ok ecctl --json scrub small
json_ok ecctl --json scrub --status
json_ok ecctl --json stat big --blocks
json_ok ecctl --json ls
json_ok ecctl ls --json
json_ok ecctl --json block get big --stripe 0 --index 4 -o "$WORK/p.bin"
[ "$(ecctl --json block get big --stripe 0 --index 4 -o "$WORK/p.bin" | json 'd["reconstructed"]')" = False ] \
  || fail "block get --json: reconstructed"
json_ok ecctl --json device ls
json_ok ecctl --json device fail 2
json_ok ecctl --json device online 2
json_ok ecctl --json rebuild ls
job=$(ecctl --json rebuild ls | json 'd["jobs"][0]["id"]')
json_ok ecctl --json rebuild get "$job"
json_ok ecctl rebuild get "$job"
json_ok ecctl --json rebuild wait "$job"
json_ok ecctl --json rebuild wait
json_ok ecctl --json cxl stats
json_ok ecctl --json cxl policy 0
json_ok ecctl --json cxl policy 0 --set informational=none
json_ok ecctl --json cxl inject 0 --log informational --type dram --dpa 4096
json_ok ecctl --json cxl events 0 --log informational
handle=$(ecctl --json cxl events 0 --log informational | json 'd["records"][0]["handle"]' 2>/dev/null || true)
if [ -n "$handle" ]; then json_ok ecctl --json cxl clear 0 --log informational --handles "$handle"; fi
echo '{"memdev":"mem0","event":"cxl_dram","log":"Informational","hdr_flags":0}' >"$WORK/agent.jsonl"
json_ok ecctl --json cxl ingest "$WORK/agent.jsonl"
json_ok ecctl --json status
json_ok ecctl status --json
json_ok ecctl --json device evacuate 5 --wait
[ "$(ecctl --json device ls | json 'd["devices"][5]["state"]')" = DEVICE_STATE_FAILED ] || fail "evacuate --wait --json: not failed"
json_ok ecctl --json device online 5
json_ok ecctl --json rm small2
echo "   every --json document parsed"

step "errors: one stderr line and the documented exit code"
"$ECTL" --help >"$WORK/help.txt"
grep -qE '^  1  ecd answered with an error' "$WORK/help.txt" || fail "--help does not document exit 1"
grep -qE '^  2  usage error' "$WORK/help.txt" || fail "--help does not document exit 2"
grep -qE '^  3  a local file' "$WORK/help.txt" || fail "--help does not document exit 3"
grep -qE '^  4  scrub left damage' "$WORK/help.txt" || fail "--help does not document exit 4"
grep -q 'docs/errors.md' "$WORK/help.txt" || fail "--help does not point at docs/errors.md"
expect_exit 1 ecctl read nothing-here -o "$WORK/none"
grep -q NOT_FOUND "$WORK/err" || fail "no NOT_FOUND"
expect_exit 1 ecctl --json stat nothing-here
expect_exit 1 ecctl rebuild wait 9999
expect_exit 1 "$ECTL" --addr 127.0.0.1:1 status
grep -q 'is ecd running' "$WORK/err" || fail "no hint for a daemon that is not running"
expect_exit 2 ecctl encode
expect_exit 2 ecctl --no-such-flag ls
expect_exit 2 ecctl
expect_exit 2 ecctl encode "$WORK/patch.bin" --name x --matrix bogus
expect_exit 2 ecctl read big -o "$WORK/x" --offset 12Q
expect_exit 3 ecctl encode "$WORK/does-not-exist" --name x
expect_exit 3 ecctl read big -o "$WORK/no/such/dir/out"
read -r dev lba cnt <<<"$(block_of small 0 0)"
clobber "$dev" "$lba" 1 0x5A
expect_exit 4 ecctl scrub small --check-only -q
on_tty "$WORK/tty.error" "$ECTL" --addr "$ADDR" read nothing-here -o "$WORK/none" || true
[ "$(tr -d '\r' <"$WORK/tty.error" | grep -c .)" = 1 ] || fail "on a terminal an error is not one line: $(cat -v "$WORK/tty.error")"
expect_no_progress "$WORK/tty.error"
"$ECTL" --version | grep -qE '^ecctl [0-9]+\.[0-9]+\.[0-9]+$' || fail "--version: $("$ECTL" --version)"

step "read into a FIFO or a device writes it in place (never renames a file over it)"
mkfifo "$WORK/fifo"
timeout 60 cat "$WORK/fifo" >"$WORK/from-fifo" &
reader=$!
ecctl read big -o "$WORK/fifo" -q
wait "$reader" || fail "nothing read from the FIFO (did ecctl replace it with a file?)"
[ -p "$WORK/fifo" ] || fail "the FIFO is no longer a FIFO"
cmp "$WORK/big.bin" "$WORK/from-fifo" || fail "the bytes through the FIFO differ"
ls -la "$WORK" | grep -q partial && fail "a partial file was left beside the FIFO"
ecctl read big -o /dev/null -q
[ -c /dev/null ] || fail "/dev/null is no longer a character device"
echo "   ok: FIFO and /dev/null written in place, byte-exact"

stop_ecd
echo
echo "ecctl ux: all checks passed"
