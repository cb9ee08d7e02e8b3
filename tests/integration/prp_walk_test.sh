#!/usr/bin/env bash
# ecd-nvme prp-walk as operators run it: a JSON command description in, JSON out; bad input gives
# one line on stderr and a non-zero exit.
set -euo pipefail
TOOL=$1
source "$(dirname "$0")/lib.sh"  # WORK, fail, json

# The example of docs/nvme.md: 40 x 512 B = 5 pages; first list mid-page, chained.
cat >"$WORK/cmd.json" <<'JSON'
{"page_size": 4096, "mdts": 8, "lba_size": 512, "nlb": 40,
 "prp1": "0x10000", "prp2": "0x20ff0",
 "lists": [{"addr": "0x20ff0", "entries": ["0x100000", "0x30000"]},
           {"addr": "0x30000", "entries": ["0x101000", "0x102000", "0x103000"]}]}
JSON
out=$("$TOOL" prp-walk "$WORK/cmd.json")
[ "$(echo "$out" | json 'd["status"]["ok"]')" = True ] || fail "walk failed: $out"
[ "$(echo "$out" | json '[s["addr"] for s in d["segments"]]')" = \
  "['0x10000', '0x100000', '0x101000', '0x102000', '0x103000']" ] || fail "segments: $out"
[ "$(echo "$out" | json 'len(d["coalesced"])')" = 2 ] || fail "coalesced: $out"
[ "$(echo "$out" | json 'd["events"][0]["kind"]')" = begin ] || fail "events: $out"

# stdin, and a failing command: list entry with an offset.
out=$(sed 's/0x102000/0x102010/' "$WORK/cmd.json" | "$TOOL" prp-walk -)
[ "$(echo "$out" | json 'd["status"]["sc"]')" = 19 ] || fail "expected SC 0x13: $out"
[ "$(echo "$out" | json 'd["status"]["name"]')" = "PRP Offset Invalid" ] || fail "$out"

# Bad input: one line on stderr, exit 2 (document) or 3 (file).
set +e
echo 'not json' | "$TOOL" prp-walk - 2>"$WORK/err"; rc=$?
set -e
[ $rc = 2 ] || fail "bad document exit $rc"
[ "$(wc -l <"$WORK/err")" = 1 ] || fail "stderr not one line: $(cat "$WORK/err")"
set +e
"$TOOL" prp-walk "$WORK/missing.json" 2>"$WORK/err"; rc=$?
set -e
[ $rc = 3 ] || fail "missing file exit $rc"
echo "prp-walk CLI: ok"
