#!/usr/bin/env bash
# ctest driver of one fuzz target (tests/fuzz/CMakeLists.txt registers fuzz.<name>):
#   run_fuzz_test.sh FUZZER CORPUS_DIR SECONDS
# Fuzzes for SECONDS over a temporary copy of CORPUS_DIR, so the repository's corpus is never
# modified, and fails on any finding (crash, property violation, sanitizer report, leak, timeout,
# out-of-memory). A finding's input is kept in the temporary directory, whose path is printed.
set -euo pipefail
fuzzer=$1 corpus=$2 seconds=$3
work=$(mktemp -d "${TMPDIR:-/tmp}/ecd-fuzz.XXXXXX")
mkdir -p "$work/corpus" "$work/artifacts"
cp -r "$corpus"/. "$work/corpus/"
status=0
"$fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
  -artifact_prefix="$work/artifacts/" "$work/corpus" >"$work/log" 2>&1 || status=$?
tail -n 25 "$work/log"
if [ "$status" -ne 0 ] || [ -n "$(ls -A "$work/artifacts")" ]; then
  echo "FAIL: $(basename "$fuzzer") found a problem (exit $status); inputs in $work/artifacts," \
    "log in $work/log. See docs/fuzzing.md, 'A finding'."
  exit 1
fi
rm -rf "$work"
