#!/usr/bin/env bash
# Builds and runs the EC benchmarks, then prints engine/raw and 2-worker/1-worker ratios.
# Usage: scripts/bench.sh [extra google-benchmark flags]
#        scripts/bench.sh --nvme [nvme_bench flags]   (NVMe data path beside fio)
#        scripts/bench.sh --update [update_bench flags] (update latency beside a stripe rewrite)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh >/dev/null
bash scripts/build.sh >/dev/null
if [ "${1:-}" = "--nvme" ]; then
  shift
  exec build/bench/nvme_bench "$@"
fi
if [ "${1:-}" = "--update" ]; then
  shift
  exec build/bench/update_bench "$@"
fi
out=$(mktemp)
# Repetitions run interleaved in random order, so a row and its raw ISA-L twin see the same
# machine state (run order and buffer placement alone move a ratio more than the engine does).
build/bench/ec_bench --benchmark_format=json --benchmark_min_time=0.2 --benchmark_repetitions=5 \
  --benchmark_enable_random_interleaving=true "$@" >"$out"
python3 scripts/bench_ratios.py "$out"
