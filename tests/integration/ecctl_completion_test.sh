#!/usr/bin/env bash
# Bash completion of ecctl: every subcommand `ecctl --help` lists (and every nested one) is
# offered, flags come with the command they belong to (global ones everywhere), values and files
# fall back to file completion, and the hidden __complete is never offered.
# Usage: ecctl_completion_test.sh COMPLETION_FILE ECTL
set -euo pipefail
COMPLETION=$1
ECTL=$2
. "$(dirname "$0")/ecctl_commands.sh"
. "$COMPLETION"

fail() {
  printf 'FAIL: %s\n' "$*" >&2
  exit 1
}

# offered WORD...: runs the completion with the cursor on the last WORD; prints COMPREPLY.
offered() {
  COMP_WORDS=("$ECTL" "$@")
  COMP_CWORD=$#
  COMPREPLY=()
  _ecctl
  printf '%s\n' "${COMPREPLY[@]}"
}

expect_offered() {  # expect_offered CANDIDATE WORD...
  local want=$1
  shift
  local got
  got=$(offered "$@")
  grep -qx -- "$want" <<<"$got" || fail "'ecctl $*<TAB>' does not offer $want: $(tr '\n' ' ' <<<"$got")"
}

# The subcommands of a help text: the lines under "Subcommands:".
help_subcommands() { sed -n '/^Subcommands:/,/^$/p' | awk 'NR > 1 && NF {print $1}'; }

complete -p ecctl | grep -q _ecctl || fail "the completion is not registered for ecctl"
top=$("$ECTL" --help | help_subcommands)
[ "$(wc -l <<<"$top")" -ge 10 ] || fail "ecctl --help lists too few subcommands: $top"
for sub in $top; do
  expect_offered "$sub" ""
  expect_offered "$sub" "${sub:0:2}"
  for nested in $("$ECTL" "$sub" --help | help_subcommands); do
    expect_offered "$nested" "$sub" ""
  done
done
echo "   every subcommand of ecctl --help (and every nested one) is offered"
[ "$(command_paths | wc -l)" -ge 20 ] || fail "too few command paths"

expect_offered --name encode --
expect_offered --block-size encode --b
expect_offered --json encode --
expect_offered --quiet device evacuate --
expect_offered --wait device evacuate --
expect_offered --check-only --json scrub --
expect_offered --health-status cxl inject 3 --
[ -z "$(offered encode --matrix "")" ] || fail "a value of --matrix offers flags or commands"
[ -z "$(offered encode "")" ] || fail "where the FILE goes, commands are offered: $(offered encode "")"
[ -z "$(offered --addr "")" ] || fail "a value of --addr offers commands"
expect_offered status --addr 127.0.0.1:1 st
if grep -q __complete <<<"$(offered "")"; then fail "the hidden __complete is offered"; fi
if grep -qx -- --type <<<"$(offered device --)"; then fail "a cxl inject flag is offered for device"; fi
echo "completion: ok"
