#!/usr/bin/env bash
# The par2 projection of bench/e2e.sh (bench/par2_project.awk): its fit through two slices, its
# fallbacks when noise bends the fit the wrong way, and its refusal of impossible input.
set -euo pipefail
AWK_FILE=$(cd "$(dirname "$0")" && pwd)/par2_project.awk
MIB=$((1 << 20))
fails=0
project() { awk -v x1="$1" -v t1="$2" -v x2="$3" -v t2="$4" -v n="$5" -f "$AWK_FILE"; }
expect() {  # expect WANT X1 T1 X2 T2 N
  local want=$1 got
  shift
  got=$(project "$@" 2>&1) || got="exit $?"
  if [ "$got" != "$want" ]; then
    echo "FAIL: par2_project $* printed '$got', want '$want'" >&2
    fails=$((fails + 1))
  fi
}
# Exactly t = a n + b n^2 (n in MiB, a = 0.01 s, b = 0.0001 s): 64 MiB 1.0496 s, 256 MiB 9.1136 s,
# so 1024 MiB is 10.24 + 104.8576 = 115.0976 s.
expect 115.098 $((64 * MIB)) 1.0496 $((256 * MIB)) 9.1136 $((1024 * MIB))
# Slice times par2 took on a file whose whole 1 GiB took 86.4 s: 0.806 s and 6.465 s.
expect 77.716 $((64 * MIB)) 0.806 $((256 * MIB)) 6.465 $((1024 * MIB))
# Linear (b = 0): the larger slice scaled by size.
expect 12.000 $((64 * MIB)) 0.75 $((256 * MIB)) 3.0 $((1024 * MIB))
# Faster per byte on the larger slice (b < 0): the larger slice's time per byte.
expect 12.000 $((64 * MIB)) 0.8 $((256 * MIB)) 3.0 $((1024 * MIB))
# Slower than quadratic (a < 0): the larger slice's time per byte squared.
expect 208.000 $((64 * MIB)) 0.8 $((256 * MIB)) 13.0 $((1024 * MIB))
# Impossible input is refused.
for bad in "0 1 2 1 4" "4 1 2 1 8" "1 0 2 1 4" "1 1 2 1 0"; do
  # shellcheck disable=SC2086
  if project $bad >/dev/null 2>&1; then
    echo "FAIL: par2_project $bad was accepted" >&2
    fails=$((fails + 1))
  fi
done
[ "$fails" -eq 0 ] && echo "par2_project: every case holds"
exit "$fails"
