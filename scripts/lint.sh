#!/usr/bin/env bash
# Lint: clang-format over every C++ file in the repository (any difference fails), then
# clang-tidy (.clang-tidy, warnings as errors) over the C++ sources changed since the commit in
# scripts/lint-base, their headers included. Moving lint-base forward, once the files changed
# since it are clean, is how the checked part of the tree grows.
# Usage: scripts/lint.sh [--format-only]
# Environment: BUILD_DIR (default build; its compile_commands.json is used, and the build must
# have generated the protobuf headers: run scripts/build.sh first), JOBS (default nproc).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
JOBS=${JOBS:-$(nproc)}

echo "== clang-format (every C++ file)"
mapfile -t all < <(git ls-files '*.h' '*.cc')
if ! clang-format --dry-run --Werror "${all[@]}"; then
  echo "lint.sh: files above differ from .clang-format; run clang-format -i on them" >&2
  exit 1
fi
echo "   ${#all[@]} files formatted as .clang-format says"
[ "${1:-}" = "--format-only" ] && exit 0

base=$(tr -d '[:space:]' < scripts/lint-base)
if ! git cat-file -e "$base^{commit}" 2>/dev/null; then
  echo "lint.sh: scripts/lint-base names $base, which is not a commit of this clone" >&2
  exit 1
fi
if [ ! -f "$BUILD_DIR/compile_commands.json" ]; then
  echo "lint.sh: no $BUILD_DIR/compile_commands.json; run scripts/build.sh first" >&2
  exit 1
fi
# Sources (not tests) of the project's own folders changed since the base, as they are now.
mapfile -t changed < <(git diff --name-only --diff-filter=d "$base" -- \
  'lib/*' 'daemon/*' 'client/*' 'wire/*' | grep -E '\.(h|cc)$' | grep -vE '_test(_util)?\.(h|cc)$' || true)
sources=() headers=()
for f in "${changed[@]}"; do
  case "$f" in
    *.cc) sources+=("$f") ;;
    *.h) headers+=("$f") ;;
  esac
done
echo "== clang-tidy (${#sources[@]} sources and ${#headers[@]} headers changed since ${base:0:12})"
[ ${#sources[@]} -eq 0 ] && exit 0
# Warnings in a header count only for the headers changed since the base.
filter='^$'
if [ ${#headers[@]} -gt 0 ]; then
  filter="$(printf '%s|' "${headers[@]}" | sed 's/[.]/[.]/g; s/|$//')"
  filter="(${filter})\$"
fi
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! printf '%s\n' "${sources[@]}" |
  xargs -P "$JOBS" -n 1 clang-tidy -p "$BUILD_DIR" --quiet --warnings-as-errors='*' \
    --header-filter="$filter" >"$log" 2>&1; then
  grep -E '(warning|error):' "$log" | sort -u >&2 || cat "$log" >&2
  echo "lint.sh: clang-tidy found the above in files changed since ${base:0:12}" >&2
  exit 1
fi
echo "   clean"
