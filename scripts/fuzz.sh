#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz, docs/fuzzing.md) in their own build dir with clang,
# ASan and UBSan, and fuzzes each one.
#
#   scripts/fuzz.sh [--time N] [TARGET...]   fuzz each target N seconds (default 300), all by default
#   scripts/fuzz.sh --ctest                  run the bounded ctest suite fuzz.* (20 s per target)
#   scripts/fuzz.sh --make-corpus            regenerate tests/fuzz/corpus/ (regression_* files stay)
#   scripts/fuzz.sh --list                   print the target names
#
# Environment: BUILD_DIR (default build-fuzz), FUZZ_WORK (default $BUILD_DIR/fuzz-work), JOBS
# (build parallelism, default nproc), CC/CXX (default clang/clang++).
#
# Each target fuzzes FUZZ_WORK/<target>/corpus, seeded from tests/fuzz/corpus/<target>/ and kept
# between runs, so new entries accumulate there and the repository's corpus is never modified.
# A finding is written to FUZZ_WORK/<target>/artifacts/ and makes the script exit 1 after the
# summary. docs/fuzzing.md says how to turn one into a regression seed.
set -euo pipefail
cd "$(dirname "$0")/.."

TARGETS=(cxl_record cxl_mailbox cxl_device prp_walk prp_fetch cxl_ingest catalog)
BUILD_DIR=${BUILD_DIR:-build-fuzz}
FUZZ_WORK=${FUZZ_WORK:-$BUILD_DIR/fuzz-work}
JOBS=${JOBS:-$(nproc)}
TIME=300
MODE=fuzz
SELECTED=()

usage() { sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; }

while [ $# -gt 0 ]; do
  case "$1" in
    --time)
      [ $# -ge 2 ] || { echo "fuzz.sh: --time needs a number of seconds" >&2; exit 2; }
      TIME=$2
      shift 2
      ;;
    --time=*) TIME=${1#--time=}; shift ;;
    --ctest) MODE=ctest; shift ;;
    --make-corpus) MODE=corpus; shift ;;
    --list) printf '%s\n' "${TARGETS[@]}"; exit 0 ;;
    -h | --help) usage; exit 0 ;;
    -*) echo "fuzz.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *)
      if ! printf '%s\n' "${TARGETS[@]}" | grep -qx "$1"; then
        echo "fuzz.sh: unknown target $1; targets: ${TARGETS[*]}" >&2
        exit 2
      fi
      SELECTED+=("$1")
      shift
      ;;
  esac
done
case "$TIME" in '' | *[!0-9]*) echo "fuzz.sh: --time must be whole seconds" >&2; exit 2 ;; esac
[ ${#SELECTED[@]} -gt 0 ] || SELECTED=("${TARGETS[@]}")

# Configure (once) and build.
source scripts/ccache.sh
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  if ! command -v "${CXX:-clang++}" >/dev/null; then
    echo "fuzz.sh: ${CXX:-clang++} not found; run scripts/install-deps.sh (clang-14," \
      "libclang-rt-14-dev)" >&2
    exit 1
  fi
  CC=${CC:-clang} CXX=${CXX:-clang++} cmake -S . -B "$BUILD_DIR" -G Ninja \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DECD_FUZZ=ON "${COMPILER_LAUNCHER[@]}"
fi
echo "== building the fuzz targets in $BUILD_DIR"
cmake --build "$BUILD_DIR" -j "$JOBS" --target fuzz_targets fuzz_make_corpus

case "$MODE" in
  ctest)
    exec ctest --test-dir "$BUILD_DIR" -L '^fuzz$' --output-on-failure
    ;;
  corpus)
    "$BUILD_DIR/tests/fuzz/fuzz_make_corpus" tests/fuzz/corpus
    echo "== tests/fuzz/corpus regenerated; review with git status and commit it"
    exit 0
    ;;
esac

# Fuzz each target for TIME seconds.
summary=()
found=0
for t in "${SELECTED[@]}"; do
  dir="$FUZZ_WORK/$t"
  mkdir -p "$dir/corpus" "$dir/artifacts"
  cp -n tests/fuzz/corpus/"$t"/* "$dir/corpus/" 2>/dev/null || true
  before=$(find "$dir/corpus" -type f | wc -l)
  artifacts_before=$(find "$dir/artifacts" -type f | wc -l)
  echo "== $t: ${TIME}s over $dir/corpus ($before inputs)"
  status=0
  "$BUILD_DIR/tests/fuzz/${t}_fuzz" -max_total_time="$TIME" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$dir/artifacts/" "$dir/corpus" >"$dir/log" 2>&1 ||
    status=$?
  after=$(find "$dir/corpus" -type f | wc -l)
  final_stat() { sed -n "s/^stat::$1: *//p" "$dir/log" | tail -1; }
  execs=$(final_stat number_of_executed_units)
  rate=$(final_stat average_exec_per_sec)
  cov=$(grep -oE 'cov: [0-9]+' "$dir/log" | tail -1 | cut -d' ' -f2)
  result=ok
  if [ "$status" -ne 0 ] || [ "$(find "$dir/artifacts" -type f | wc -l)" -gt "$artifacts_before" ]; then
    result="FOUND (exit $status): $(ls -t "$dir/artifacts" | head -1)"
    found=1
    grep -E 'property violated|runtime error|ERROR: (AddressSanitizer|libFuzzer|LeakSanitizer)' \
      "$dir/log" | head -3 | sed 's/^/   /'
  fi
  summary+=("$(printf '%-12s %8ss %12s execs %8s exec/s  cov %-6s corpus %5s (+%s)  %s' "$t" \
    "$TIME" "${execs:-?}" "${rate:-?}" "${cov:-?}" "$after" "$((after - before))" "$result")")
done

echo
echo "== summary (work dir $FUZZ_WORK)"
printf '%s\n' "${summary[@]}"
if [ "$found" -ne 0 ]; then
  echo "A target found a problem: its input is in $FUZZ_WORK/<target>/artifacts/ and its log in" \
    "$FUZZ_WORK/<target>/log. See docs/fuzzing.md, 'A finding'."
  exit 1
fi
