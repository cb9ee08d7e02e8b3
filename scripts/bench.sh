#!/usr/bin/env bash
# Builds and runs the EC benchmarks, then prints engine/raw and 2-worker/1-worker ratios.
# Usage: scripts/bench.sh [extra google-benchmark flags]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh >/dev/null
bash scripts/build.sh >/dev/null
out=$(mktemp)
build/bench/ec_bench --benchmark_format=json --benchmark_min_time=0.2 "$@" >"$out"
python3 scripts/bench_ratios.py "$out"
