#!/usr/bin/env bash
# Configures and builds ecd into ./build (or $BUILD_DIR), through ccache when it is installed.
# Usage: scripts/build.sh [cmake args...]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
JOBS=${JOBS:-$(nproc)}
source scripts/ccache.sh
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" \
    "${COMPILER_LAUNCHER[@]}" "$@"
fi
cmake --build "$BUILD_DIR" -j "$JOBS"
