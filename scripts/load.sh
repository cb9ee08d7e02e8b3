#!/usr/bin/env bash
# A longer load test (docs/load.md): ecd_load against a fresh ecd for --seconds (default 300),
# with device failures and CXL events injected. Builds first unless --no-build.
# Usage: scripts/load.sh [--asan] [--no-build] [ecd_load flags, e.g. --seconds=600 --clients=16]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=build SAN=0 NOBUILD=0 ARGS=()
for a in "$@"; do
  case "$a" in
    --asan) BUILD=build-asan SAN=1 ;;
    --no-build) NOBUILD=1 ;;
    *) ARGS+=("$a") ;;
  esac
done
if [ "$NOBUILD" = 0 ]; then
  if [ "$SAN" = 1 ]; then EXTRA=(-DECD_SANITIZE=address,undefined); else EXTRA=(); fi
  nice -n 19 cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${EXTRA[@]}" >/dev/null
  nice -n 19 ninja -C "$BUILD" -j1 ecd ecctl ecd_load
fi
HAS_SECONDS=0
for a in "${ARGS[@]}"; do case "$a" in --seconds=*) HAS_SECONDS=1 ;; esac; done
[ "$HAS_SECONDS" = 1 ] || ARGS+=(--seconds=300)
exec bash tests/load/load_test.sh "$BUILD/daemon/ecd" "$BUILD/client/ecctl" "$BUILD/tests/load/ecd_load" \
  --sanitized=$SAN "${ARGS[@]}"
