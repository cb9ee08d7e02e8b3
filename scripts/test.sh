#!/usr/bin/env bash
# Installs the dependencies, builds, and runs every test (unit, integration) with ctest.
# Usage: scripts/test.sh            RelWithDebInfo build in ./build
#        scripts/test.sh --quick    the inner loop: no package install, an incremental build,
#                                   then the tests labelled unit and not slow (ctest -L unit
#                                   -LE slow); the other labels are integration, fault, bench,
#                                   load and fuzz (ctest -L LABEL runs one of them)
#        scripts/test.sh --asan     the same suite built with AddressSanitizer and UBSan, in
#                                   ./build-asan (any report fails the test that caused it)
#        scripts/test.sh --tsan     the same suite built with ThreadSanitizer, in ./build-tsan;
#                                   a report fails the test that caused it. Debian's gRPC,
#                                   protobuf and abseil are not instrumented: tests/tsan.supp
#                                   says which reports that causes and why they are not ecd's
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--asan" ]; then
  export BUILD_DIR=${BUILD_DIR:-build-asan}
  SANITIZE=(-DECD_SANITIZE=address,undefined)
  # Leaks are reported too; abort on the first error so that the test fails where it happened.
  export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
  # Leaks inside uninstrumented system libraries (tests/lsan.supp says which and why).
  export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$PWD/tests/lsan.supp}
elif [ "${1:-}" = "--tsan" ]; then
  export BUILD_DIR=${BUILD_DIR:-build-tsan}
  SANITIZE=(-DECD_SANITIZE=thread)
  # Stop at the first report with exit 66, which fails the test (the shell tests also collect
  # every process's report: tests/integration/lib.sh). The suppressions cover only what the
  # uninstrumented system libraries hide from TSan (tests/tsan.supp).
  export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:exitcode=66:second_deadlock_stack=1:suppressions=$PWD/tests/tsan.supp}
else
  SANITIZE=()
fi
if [ "${1:-}" = "--quick" ]; then
  echo "== building"
  bash scripts/build.sh
  echo "== unit tests"
  cd "${BUILD_DIR:-build}"
  exec ctest --output-on-failure --timeout 300 -j "$(nproc)" -L unit -LE slow
fi
echo "== installing dependencies"
bash scripts/install-deps.sh
echo "== building${SANITIZE:+ (${SANITIZE[*]})}"
bash scripts/build.sh "${SANITIZE[@]}"
echo "== testing"
cd "${BUILD_DIR:-build}"
ctest --output-on-failure --timeout 900 -j "$(nproc)"
