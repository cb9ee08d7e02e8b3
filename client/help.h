// The help text of ecctl. `--help-all` prints the top-level help and then one block per command,
// nested ones included, each under a line "ecctl PATH ARGS:" with its description, positionals
// and options. The blocks read well on a terminal and are what help2man turns into the man page
// (one subsection per command).
#ifndef ECD_CLIENT_HELP_H_
#define ECD_CLIENT_HELP_H_

#include <CLI/CLI.hpp>
#include <string>

namespace ecd::client {

class ExpandingFormatter : public CLI::Formatter {
 public:
  // The subcommand list, and in AppFormatMode::All the blocks of every command below `app`.
  std::string make_subcommands(const CLI::App* app, CLI::AppFormatMode mode) const override;

 private:
  // The block of `command` and then those of its subcommands.
  std::string MakeCommandBlocks(const CLI::App* command) const;
};

// "cxl inject" for the inject subcommand of cxl (the program's own name left out).
std::string CommandPath(const CLI::App* command);

// "ecctl cxl inject DEV [OPTIONS]": the path with the arguments the command takes.
std::string CommandUsage(const CLI::App* command);

}  // namespace ecd::client

#endif  // ECD_CLIENT_HELP_H_
