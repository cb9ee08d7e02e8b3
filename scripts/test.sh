#!/usr/bin/env bash
# Installs the dependencies, builds, and runs every test (unit, integration) with ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "== installing dependencies"
bash scripts/install-deps.sh
echo "== building"
bash scripts/build.sh
echo "== testing"
cd "${BUILD_DIR:-build}"
ctest --output-on-failure --timeout 900 -j "$(nproc)"
