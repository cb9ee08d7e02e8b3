// Shell completion from the real command tree: `ecctl __complete -- WORD... CURRENT` prints, one
// a line, what may come in place of CURRENT after the WORDs already typed (client/
// ecctl.bash-completion calls it), so the completion cannot drift from the CLI.
#ifndef ECD_CLIENT_COMPLETE_H_
#define ECD_CLIENT_COMPLETE_H_

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace ecd::client {

// The candidates for the last of `words` (the word being completed, maybe empty) after the
// others: the visible subcommands of the command they name, or, when the last word starts with
// '-', its options and those of the commands above it. Nothing after an option that takes a
// value, or where a positional argument (a file, a name) goes: the shell then completes files.
std::vector<std::string> CompletionCandidates(const CLI::App& app,
                                              const std::vector<std::string>& words);

}  // namespace ecd::client

#endif  // ECD_CLIENT_COMPLETE_H_
