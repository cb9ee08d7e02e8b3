# Shared by the ecctl man page and completion tests: the command tree, as ecctl itself walks it
# (`ecctl __complete`), one command path a line ("encode", "device ls", ...).
# Usage: source after setting ECTL; then `command_paths`.

# subcommands_of [WORD...]: the subcommands ecctl offers after `ecctl WORD...`.
subcommands_of() { "$ECTL" __complete -- "$@" ""; }

command_paths() {
  local top sub subs
  for top in $(subcommands_of); do
    subs=$(subcommands_of "$top")
    if [ -z "$subs" ]; then
      echo "$top"
    else
      for sub in $subs; do echo "$top $sub"; done
    fi
  done
}
