#!/usr/bin/env bash
# Compiles one source with clang -fsyntax-only -Wthread-safety -Werror=thread-safety.
# Usage: check.sh CLANGXX SOURCE_ROOT FILE pass|fail [MEMBER]
#   pass: the file must compile cleanly.
#   fail: the file must fail to compile with a thread-safety error naming MEMBER.
set -uo pipefail
cxx=$1 root=$2 file=$3 expect=$4 member=${5:-}
out=$("$cxx" -std=c++20 -fsyntax-only -Wthread-safety -Werror=thread-safety -I"$root" "$file" 2>&1)
status=$?
printf '%s\n' "$out"
if [ "$expect" = pass ]; then
  [ "$status" -eq 0 ] || { echo "FAIL: $file should compile"; exit 1; }
  exit 0
fi
[ "$status" -ne 0 ] || { echo "FAIL: $file compiled; the unguarded access was not caught"; exit 1; }
printf '%s\n' "$out" | grep -q "error: .*'$member' requires holding mutex" ||
  { echo "FAIL: $file failed, but not with a thread-safety error naming '$member'"; exit 1; }
echo "ok: $file refused for '$member'"
