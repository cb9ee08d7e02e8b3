#!/usr/bin/env bash
# The man page help2man made at build time renders, names every ecctl command (as ecctl's own
# command tree has them) with its flags, and carries the version and the exit status.
# Usage: ecctl_man_test.sh MANPAGE ECTL
set -euo pipefail
MAN=$1
ECTL=$2
. "$(dirname "$0")/ecctl_commands.sh"

fail() {
  printf 'FAIL: %s\n' "$*" >&2
  exit 1
}

[ -s "$MAN" ] || fail "$MAN is missing or empty"
text=$(groff -man -Tutf8 -P-c -P-b -P-u "$MAN" 2>&1) || fail "groff cannot render $MAN: $text"
grep -q '^NAME' <<<"$text" || fail "no NAME section"
grep -q "ecctl $("$ECTL" --version | awk '{print $2}')" <<<"$text" || fail "the version is not named"

paths=$(command_paths)
[ "$(wc -l <<<"$paths")" -ge 20 ] || fail "too few commands found: $paths"
while read -r path; do
  grep -q "ecctl $path\b" <<<"$text" || fail "the man page does not name 'ecctl $path'"
done <<<"$paths"
echo "   names all $(wc -l <<<"$paths") commands"

for flag in --json --quiet --timeout --addr --version --check-only --wait --block-size; do
  grep -q -- "$flag" <<<"$text" || fail "the man page does not name $flag"
done
grep -q 'Exit status' <<<"$text" || fail "no exit status"
for code in 0 1 2 3 4; do
  grep -qE "^ +$code +[a-z]" <<<"$text" || fail "exit code $code not listed"
done
if grep -q '__complete' <<<"$text"; then fail "the hidden __complete is in the man page"; fi
echo "man page: ok"
